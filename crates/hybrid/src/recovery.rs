//! Recovery on open: finish or discard the commit that was in flight, and refuse a follower that
//! is behind or ahead. Idempotent: a second run finds nothing to do.

use crate::{
    control::{FOLLOWER_SEQ_KEY, SEQ_KEY, get_u64},
    crash::crash_point,
    error::HybridError,
    intent_log::{IntentLog, IntentRead},
};
use reth_hybrid_api::raw::{RawEngine, RawReplay, RawTx};

/// What recovery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryAction {
    /// Nothing was in flight.
    Clean,
    /// A torn intent record (crash while writing it) was dropped: no engine had committed.
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

pub fn recover<P: RawEngine, F: RawReplay>(
    primary: &P,
    follower: &F,
    intent: &IntentLog,
) -> Result<Recovered, HybridError> {
    let ptx = primary.begin_ro()?;
    let (seq, follower_seq) = (get_u64(&ptx, SEQ_KEY)?, get_u64(&ptx, FOLLOWER_SEQ_KEY)?);
    ptx.abort();
    let mut actual = get_follower_seq(follower)?;
    let action = match intent.read()? {
        IntentRead::Empty => RecoveryAction::Clean,
        IntentRead::TornTail { bytes } => {
            tracing::warn!(path = %intent.path().display(), bytes, "dropping torn intent record");
            intent.clear()?;
            RecoveryAction::DroppedTornTail { bytes }
        }
        IntentRead::Record(i) if i.seq == follower_seq && follower_seq > 0 => {
            if actual == i.seq {
                intent.clear()?;
                RecoveryAction::ClearedApplied { seq: i.seq }
            } else if actual == i.prev_follower_seq {
                // ORDER: replay, then clear. A crash in between replays again on the next open
                // (the writes are absolute puts and deletes, so replaying twice is harmless).
                follower.apply_exported(&i.payload)?;
                crash_point!(RecoveryAfterReplay);
                actual = get_follower_seq(follower)?;
                intent.clear()?;
                RecoveryAction::Replayed { seq: i.seq }
            } else if actual < i.prev_follower_seq {
                return Err(HybridError::FollowerBehind {
                    primary: follower_seq,
                    follower: actual,
                });
            } else {
                return Err(HybridError::FollowerAhead {
                    primary: follower_seq,
                    follower: actual,
                });
            }
        }
        IntentRead::Record(i) => {
            // Not the last decided follower commit: either undecided (seq > primary's) or stale.
            intent.clear()?;
            RecoveryAction::DiscardedUndecided { seq: i.seq }
        }
    };
    if actual < follower_seq {
        return Err(HybridError::FollowerBehind {
            primary: follower_seq,
            follower: actual,
        });
    }
    if actual > follower_seq {
        return Err(HybridError::FollowerAhead {
            primary: follower_seq,
            follower: actual,
        });
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
