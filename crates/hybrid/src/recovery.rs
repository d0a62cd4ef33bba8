//! Recovery on open: finish or discard the commit that was in flight, and refuse a follower that
//! is behind or ahead, or an intent log that a decided commit needs but that is damaged.
//! Everything is decided first (`plan`, read-only), so a refusal changes nothing. Idempotent: a
//! second run finds nothing to do.

use crate::{
    control::{FOLLOWER_SEQ_KEY, SEQ_KEY, get_u64},
    crash::crash_point,
    error::{HybridError, injected},
    fault::fault_point,
    intent_log::{Damage, Decoded, IntentLog},
};
use reth_hybrid_api::raw::{RawEngine, RawReplay, RawTx};

/// What recovery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryAction {
    /// Nothing was in flight.
    Clean,
    /// An intent record that did not decode (a torn write, or a finished commit's record) was
    /// dropped: RocksDB already held every commit MDBX had decided, so nothing needed it.
    DroppedTornTail { bytes: u64 },
    /// The intent's commit was never decided (MDBX did not commit it): discarded.
    DiscardedUndecided { seq: u64 },
    /// The intent's commit had reached both engines: the intent was cleared.
    ClearedApplied { seq: u64 },
    /// MDBX had committed, RocksDB had not: the intent was replayed into RocksDB.
    Replayed { seq: u64 },
}

/// Sequences after recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub seq: u64,
    pub follower_seq: u64,
    pub action: RecoveryAction,
}

/// What recovery will do, decided before anything changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Nothing to do.
    Clean,
    /// Empty the log, then report `action` (a torn tail, a stale or undecided record, or the
    /// record of a commit both engines hold).
    Clear(RecoveryAction),
    /// Apply this decided commit's payload to the follower, then empty the log.
    Replay { seq: u64, payload: Vec<u8> },
}

/// Decides what recovery does, reading only. `decided` is MDBX's `follower_seq` (the last commit
/// MDBX decided that wrote to RocksDB), `applied` RocksDB's `commit_seq`. Every refusal is
/// returned from here, so a refused open leaves the intent log byte-identical.
///
/// A record that does not decode is dropped as a torn tail only if no decided commit needs it:
/// RocksDB already holds commit `decided`, so whatever the bytes were (the torn write of a
/// commit MDBX never decided, or a finished commit's record not yet cleared), dropping them
/// loses nothing. If RocksDB is behind `decided`, the damaged record is the only copy of the
/// missing writes and recovery refuses (`DecidedIntentDamaged`). A checksum mismatch in a
/// complete record is refused even when nothing needs it: that is the disk changing bytes, which
/// the operator must hear about.
pub fn plan(decided: u64, applied: u64, intent: &IntentLog) -> Result<Plan, HybridError> {
    let in_step = || {
        if applied < decided {
            Err(HybridError::FollowerBehind {
                primary: decided,
                follower: applied,
            })
        } else if applied > decided {
            Err(HybridError::FollowerAhead {
                primary: decided,
                follower: applied,
            })
        } else {
            Ok(())
        }
    };
    match intent.decode()? {
        Decoded::Empty => in_step().map(|()| Plan::Clean),
        Decoded::Damaged {
            file_bytes,
            offset,
            damage,
        } => {
            if applied < decided {
                return Err(HybridError::DecidedIntentDamaged {
                    path: intent.path().to_path_buf(),
                    offset,
                    damage,
                    decided,
                    applied,
                });
            }
            in_step()?;
            if damage == Damage::Checksum {
                return Err(HybridError::CorruptIntentNotNeeded {
                    path: intent.path().to_path_buf(),
                    offset,
                    seq: decided,
                });
            }
            Ok(Plan::Clear(RecoveryAction::DroppedTornTail {
                bytes: file_bytes,
            }))
        }
        Decoded::Record(i) if i.seq == decided && decided > 0 => {
            if applied == i.seq {
                Ok(Plan::Clear(RecoveryAction::ClearedApplied { seq: i.seq }))
            } else if applied == i.prev_follower_seq {
                Ok(Plan::Replay {
                    seq: i.seq,
                    payload: i.payload,
                })
            } else if applied < i.prev_follower_seq {
                Err(HybridError::FollowerBehind {
                    primary: decided,
                    follower: applied,
                })
            } else {
                Err(HybridError::FollowerAhead {
                    primary: decided,
                    follower: applied,
                })
            }
        }
        // Not the last decided follower commit: undecided (seq above MDBX's) or stale.
        Decoded::Record(i) => {
            in_step().map(|()| Plan::Clear(RecoveryAction::DiscardedUndecided { seq: i.seq }))
        }
    }
}

pub fn recover<P: RawEngine, F: RawReplay>(
    primary: &P,
    follower: &F,
    intent: &IntentLog,
) -> Result<Recovered, HybridError> {
    let ptx = primary.begin_ro()?;
    let (seq, follower_seq) = (get_u64(&ptx, SEQ_KEY)?, get_u64(&ptx, FOLLOWER_SEQ_KEY)?);
    ptx.abort();
    let applied = get_follower_seq(follower)?;
    let action = match plan(follower_seq, applied, intent)? {
        Plan::Clean => RecoveryAction::Clean,
        Plan::Clear(action) => {
            if let RecoveryAction::DroppedTornTail { bytes } = action {
                tracing::warn!(path = %intent.path().display(), bytes, "dropping torn intent record");
            }
            intent.clear()?;
            action
        }
        Plan::Replay { seq, payload } => {
            // ORDER: replay, then clear. A crash in between replays again on the next open
            // (the writes are absolute puts and deletes, so replaying twice is harmless). A
            // failed replay keeps the log, so the next open tries again.
            fault_point!(FollowerApply, intent.dir())
                .map_err(|e| injected("rocksdb", e))
                .and_then(|()| follower.apply_exported(&payload))
                .map_err(|source| HybridError::Replay {
                    seq,
                    path: intent.path().to_path_buf(),
                    source,
                })?;
            crash_point!(RecoveryAfterReplay);
            let now = get_follower_seq(follower)?;
            if now != follower_seq {
                // The payload did not carry the sequence it was recorded with: keep the log.
                return Err(HybridError::FollowerBehind {
                    primary: follower_seq,
                    follower: now,
                });
            }
            intent.clear()?;
            RecoveryAction::Replayed { seq }
        }
    };
    // The intent is resolved: files a commit exported for it (or a commit interrupted before
    // its intent was written) are needed by nothing.
    if let Err(e) = follower.discard_exports() {
        tracing::warn!(error = %e, "could not remove exported commit files left by an interrupted run");
    }
    Ok(Recovered {
        seq,
        follower_seq,
        action,
    })
}
fn get_follower_seq<F: RawEngine>(follower: &F) -> Result<u64, HybridError> {
    let ftx = follower.begin_ro()?;
    let s = get_u64(&ftx, SEQ_KEY)?;
    ftx.abort();
    Ok(s)
}
