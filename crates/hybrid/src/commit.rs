//! The all-or-nothing commit across two engines.
//!
//! 1. Stamp the commit's sequence into both transactions (and, in the primary, the sequence of
//!    the last commit that reached the follower).
//! 2. If the follower has writes: export them and make them durable in the intent log.
//! 3. Commit the primary: **the decision**. From here the commit happened.
//! 4. Apply the exported writes to the follower (one atomic, synced batch).
//! 5. Clear the intent.
//!
//! Recovery (`recovery.rs`) finishes step 4 from the intent when MDBX has decided and RocksDB has
//! not, and discards an intent MDBX never decided. Readers cannot observe the gap between 3 and
//! 4: both happen under the visibility lock that snapshot creation takes shared.

use crate::{
    control::{FOLLOWER_SEQ_KEY, SEQ_KEY, put_u64},
    crash::crash_point,
    error::{HybridError, injected},
    fault::fault_point,
    intent_log::Intent,
    metrics::{self, Phase},
    router::HybridTxMut,
};
use reth_hybrid_api::raw::{RawEngine, RawReplay, RawTx};
use std::{sync::atomic::Ordering, time::Instant};

pub(crate) fn commit<P: RawEngine, F: RawReplay>(tx: HybridTxMut<P, F>) -> Result<(), HybridError> {
    let HybridTxMut {
        primary,
        follower,
        db,
        _writer,
        ..
    } = tx;
    let mut state = db.state.lock();
    match db.poisoned.load(Ordering::Acquire) {
        0 => {}
        seq => return Err(HybridError::Poisoned { seq }),
    }
    let seq = state.seq + 1;
    put_u64(&primary, SEQ_KEY, seq)?;
    let intent = if F::is_dirty(&follower) {
        put_u64(&follower, SEQ_KEY, seq)?;
        put_u64(&primary, FOLLOWER_SEQ_KEY, seq)?;
        let intent = Intent {
            seq,
            prev_follower_seq: state.follower_seq,
            payload: F::export_writes(&follower)?,
        };
        // ORDER: the intent is durable before the decision. A crash here leaves an intent whose
        // sequence MDBX never recorded; recovery discards it.
        let started = Instant::now();
        db.intent.write(&intent)?;
        metrics::phase(Phase::Intent, started.elapsed());
        crash_point!(AfterIntentWrite);
        Some(intent)
    } else {
        None
    };
    follower.abort();
    {
        let _exclusive = db.visibility.write();
        // ORDER: MDBX's commit is the decision. A crash right after it leaves RocksDB behind by
        // exactly this intent; recovery replays it.
        let started = Instant::now();
        let decided = primary.commit().and_then(|()| {
            fault_point!(PrimaryCommit, &db.datadir).map_err(|e| injected("mdbx", e))
        });
        metrics::phase(Phase::Primary, started.elapsed());
        if let Err(source) = decided {
            // An error from the decision commit does not prove MDBX did not decide (its final
            // sync can fail after the data reached the disk). The intent is kept and this handle
            // refuses further use; recovery on reopen replays the commit if MDBX holds it and
            // discards it if not. Clearing the intent here could lose a decided commit.
            db.poisoned.store(seq, Ordering::Release);
            return Err(HybridError::PrimaryCommit { seq, source });
        }
        crash_point!(AfterPrimaryCommit);
        if let Some(intent) = &intent {
            let started = Instant::now();
            let applied = fault_point!(FollowerApply, &db.datadir)
                .map_err(|e| injected("rocksdb", e))
                .and_then(|()| db.follower.apply_exported(&intent.payload));
            metrics::phase(Phase::Follower, started.elapsed());
            if let Err(source) = applied {
                // ORDER: poisoned before the visibility lock is released, so no reader opens a
                // snapshot with MDBX's half of this commit and not RocksDB's. Only recovery (on
                // reopen) may finish it, from the intent, which stays in place.
                db.poisoned.store(seq, Ordering::Release);
                return Err(HybridError::FollowerApply { seq, source });
            }
            crash_point!(AfterFollowerApply);
        }
    }
    state.seq = seq;
    metrics::commit(intent.is_some());
    if let Some(intent) = intent {
        state.follower_seq = intent.seq;
        // ORDER: clearing last. A crash before it leaves an intent both engines already hold;
        // recovery sees the follower at the intent's sequence and just clears it.
        let started = Instant::now();
        // The commit is durable in both engines; a failed clear only leaves a stale intent,
        // which the next commit overwrites or recovery recognises and clears.
        if let Err(e) = db.intent.clear() {
            tracing::warn!(seq, error = %e, "could not clear the intent log after a complete commit");
        }
        metrics::phase(Phase::ClearIntent, started.elapsed());
        crash_point!(AfterIntentClear);
    }
    Ok(())
}
