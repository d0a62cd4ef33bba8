//! Recovery on open: finish or discard the commit that was in flight, and refuse a follower that
//! is behind or ahead, or an intent log that a decided commit needs but that is damaged.
//! Everything is decided first (`plan`, read-only), so a refusal changes nothing. Idempotent: a
//! second run finds nothing to do.

use crate::{
    control::{
        APPLIED_RING, FOLLOWER_SEQ_KEY, PendingRow, SEQ_KEY, applied_key, get_u64, pending_rows,
    },
    crash::crash_point,
    error::{HybridError, injected},
    fault::fault_point,
    intent_log::{Damage, Decoded, Intent, IntentLog},
};
use reth_hybrid_api::{
    Tables,
    raw::{RawEngine, RawReplay, RawTx},
};

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
    /// RocksDB had lost deferred commits (power loss before its WAL sync): `commits` of them,
    /// up to `last`, were replayed from MDBX's pending rows.
    ReplayedDeferred { commits: u64, last: u64 },
}

/// Sequences after recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub seq: u64,
    pub follower_seq: u64,
    pub action: RecoveryAction,
}

/// What recovery will do, decided before anything changes: replay the deferred commits RocksDB
/// lost (in order), then settle the intent log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryPlan {
    /// Decided commits whose RocksDB writes are only in MDBX's pending rows.
    pub deferred: Vec<Intent>,
    pub intent: Plan,
}

/// What recovery does with the intent log.
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

/// Decides what recovery does, reading only: `decided` is MDBX's `follower_seq` (the last commit
/// MDBX decided that wrote to RocksDB), `applied` RocksDB's `commit_seq`, `pending` MDBX's pending
/// rows. Every refusal is returned from here, so a refused open changes nothing.
///
/// First the deferred commits RocksDB lacks: from `applied` on, each pending
/// row (`control::pending_rows`) that continues the chain (its `prev_follower_seq` is where
/// RocksDB stands) is replayed. A damaged row that a decided commit needs is refused, as a
/// damaged intent is. A row at or below `applied` is one RocksDB holds, unless its slot of the
/// applied ring (`applied_slot(seq)`, see `control::APPLIED_KEY_PREFIX`) names another commit:
/// then RocksDB lost it in a hole of its WAL, and the chain is replayed from that row on (every
/// later follower commit is a pending row too, since the hole means no sync came after it).
/// Then [`plan_intent`] from where that chain ends.
pub fn plan(
    decided: u64,
    applied: u64,
    pending: &[PendingRow],
    applied_slot: &dyn Fn(u64) -> Result<u64, HybridError>,
    intent: &IntentLog,
) -> Result<RecoveryPlan, HybridError> {
    let mut deferred = Vec::new();
    let mut at = applied;
    for PendingRow { seq, key, record } in pending {
        let Some(seq) = *seq else { continue };
        if seq > applied || applied - seq >= APPLIED_RING || applied_slot(seq)? == seq {
            continue;
        }
        // RocksDB's ring does not show this commit: the row is the only copy of its writes, so
        // a row that does not decode to it is refused, like a damaged row the chain needs.
        match crate::intent_log::decode(record) {
            Decoded::Record(i) if i.seq == seq => {
                tracing::warn!(
                    seq,
                    applied,
                    "RocksDB holds later commits but not this one (a hole in its WAL after power loss); replaying from it"
                );
                at = i.prev_follower_seq;
                break;
            }
            decoded => return Err(damaged_row(key, decoded, decided, applied)),
        }
    }
    for PendingRow { seq, key, record } in pending {
        let Some(seq) = *seq else { continue };
        if seq <= at || at >= decided {
            continue;
        }
        match crate::intent_log::decode(record) {
            Decoded::Record(i) if i.seq == seq && i.prev_follower_seq == at => {
                at = i.seq;
                deferred.push(i);
            }
            Decoded::Record(i) if i.seq == seq && i.prev_follower_seq > at => {
                return Err(HybridError::FollowerBehind {
                    primary: decided,
                    follower: applied,
                });
            }
            Decoded::Record(i) if i.seq == seq => {
                return Err(HybridError::FollowerAhead {
                    primary: decided,
                    follower: applied,
                });
            }
            decoded => return Err(damaged_row(key, decoded, decided, applied)),
        }
    }
    Ok(RecoveryPlan {
        deferred,
        intent: plan_intent(decided, at, intent)?,
    })
}

/// The refusal of a pending row a decided commit needs that does not hold that commit's record.
fn damaged_row(key: &str, decoded: Decoded, decided: u64, applied: u64) -> HybridError {
    let detail = match decoded {
        Decoded::Record(i) => format!("it holds the record of commit {}", i.seq),
        Decoded::Empty => "it is empty".into(),
        Decoded::Damaged { offset, damage, .. } => format!("{damage}; byte {offset}"),
    };
    HybridError::PendingRowDamaged {
        key: key.to_string(),
        detail,
        decided,
        applied,
    }
}

/// [`plan`] for read transactions of the primary (its `follower_seq` and pending rows) and of
/// the follower (`None`: not created yet, at sequence 0).
pub fn plan_for<X: RawTx, Y: RawTx>(
    primary: &X,
    follower: Option<&Y>,
    intent: &IntentLog,
) -> Result<RecoveryPlan, HybridError> {
    let decided = get_u64(primary, FOLLOWER_SEQ_KEY)?;
    let applied = match follower {
        Some(tx) => get_u64(tx, SEQ_KEY)?,
        None => 0,
    };
    let slot = |seq| match follower {
        Some(tx) => Ok(get_u64(tx, &applied_key(seq))?),
        None => Ok(0),
    };
    plan(decided, applied, &pending_rows(primary)?, &slot, intent)
}

/// What to do with the intent log once RocksDB holds follower commit `applied`; `decided` is
/// MDBX's `follower_seq`. Every refusal is returned from here, so a refused open leaves the
/// intent log byte-identical.
///
/// A record that does not decode is dropped as a torn tail only if no decided commit needs it:
/// RocksDB already holds commit `decided`, so whatever the bytes were (the torn write of a
/// commit MDBX never decided, or a finished commit's record not yet cleared), dropping them
/// loses nothing. If RocksDB is behind `decided`, the damaged record is the only copy of the
/// missing writes and recovery refuses (`DecidedIntentDamaged`). A checksum mismatch in a
/// complete record is refused even when nothing needs it: that is the disk changing bytes, which
/// the operator must hear about.
pub fn plan_intent(decided: u64, applied: u64, intent: &IntentLog) -> Result<Plan, HybridError> {
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
    let applied = get_follower_seq(follower)?;
    let pending = match primary.has_table(Tables::Metadata) {
        true => pending_rows(&ptx)?,
        false => Vec::new(),
    };
    let ftx = follower.begin_ro()?;
    let slot = |seq| Ok(get_u64(&ftx, &applied_key(seq))?);
    let planned = plan(follower_seq, applied, &pending, &slot, intent)?;
    ftx.abort();
    ptx.abort();
    let replayed_deferred = replay_deferred(follower, &planned.deferred, intent.dir())?;
    let action = match planned.intent {
        Plan::Clean if replayed_deferred > 0 => RecoveryAction::ReplayedDeferred {
            commits: replayed_deferred,
            last: planned.deferred.last().map_or(0, |i| i.seq),
        },
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
/// Replays deferred commits from MDBX's pending rows, in order, each synced. A crash in between
/// resumes from the commit RocksDB reached (the rows stay until a later commit finds them
/// durable); a failed replay changes nothing in MDBX.
fn replay_deferred<F: RawReplay>(
    follower: &F,
    deferred: &[Intent],
    datadir: &std::path::Path,
) -> Result<u64, HybridError> {
    for record in deferred {
        fault_point!(FollowerApply, datadir)
            .map_err(|e| injected("rocksdb", e))
            .and_then(|()| follower.apply_exported(&record.payload))
            .map_err(|source| HybridError::ReplayDeferred {
                seq: record.seq,
                source,
            })?;
        crash_point!(RecoveryAfterReplay);
        let now = get_follower_seq(follower)?;
        if now != record.seq {
            return Err(HybridError::FollowerBehind {
                primary: record.seq,
                follower: now,
            });
        }
    }
    if !deferred.is_empty() {
        tracing::warn!(
            commits = deferred.len(),
            last = deferred.last().map_or(0, |i| i.seq),
            "RocksDB had lost deferred commits (power loss before its WAL sync?); replayed them from MDBX"
        );
    }
    Ok(deferred.len() as u64)
}

fn get_follower_seq<F: RawEngine>(follower: &F) -> Result<u64, HybridError> {
    let ftx = follower.begin_ro()?;
    let s = get_u64(&ftx, SEQ_KEY)?;
    ftx.abort();
    Ok(s)
}
