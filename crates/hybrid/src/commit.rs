//! The all-or-nothing commit across two engines.
//!
//! 1. Stamp the commit's sequence into both transactions (and, in the primary, the sequence of
//!    the last commit that reached the follower).
//! 2. If the follower has writes: export them and record them as the intent, either as a
//!    pending row inside the primary's transaction (deferred: it becomes durable with step 3,
//!    no fsync of its own) or in the intent log, fsynced (large commits, SST exports, or
//!    `FollowerSync::EveryCommit`).
//! 3. Commit the primary: **the decision**. From here the commit happened.
//! 4. Apply the exported writes to the follower (one atomic batch: unsynced when deferred,
//!    synced otherwise).
//! 5. Retire the intent: clear the intent log; a pending row once the follower synced its WAL
//!    (every few commits or about a second), deleted by the next commit's primary transaction.
//!
//! Recovery (`recovery.rs`) finishes step 4 from the intent when MDBX has decided and RocksDB has
//! not (after a crash, or after power loss took RocksDB's unsynced WAL tail), and discards an
//! intent MDBX never decided.
//!
//! Readers never wait for steps 2-5 and never see the gap between 3 and 4: before step 3 the
//! commit publishes its follower writes frozen (the follower snapshot with the writes on top)
//! as the pending view, and a reader whose MDBX snapshot shows this commit gets that view; after
//! step 4 a fresh follower snapshot replaces it. Only those two publications take the views'
//! write lock, and neither does I/O (`router::FollowerViews`).

use crate::{
    control::{
        APPLIED_RING, FOLLOWER_SEQ_KEY, SEQ_KEY, applied_key, pending_key, put_bytes, put_u64,
    },
    crash::crash_point,
    error::{HybridError, injected},
    fault::{fault_point, stall_point},
    intent_log::{self, Intent},
    metrics::{self, CommitRoute, Phase},
    router::{CommitState, FollowerSync, FollowerViews, HybridInner, HybridTxMut},
};
use parking_lot::RwLock;
use reth_hybrid_api::{
    Tables,
    raw::{RawEngine, RawReplay, RawTx, RawTxMut},
};
use std::{sync::atomic::Ordering, time::Instant};

/// Poisons the handle if the commit unwinds (a panic) between publishing its pending view and
/// retiring it: the views and the commit state would no longer agree, so no reader or writer may
/// go on without recovery.
struct PoisonOnUnwind<'a> {
    poisoned: &'a std::sync::atomic::AtomicU64,
    seq: u64,
    /// A commit run while the thread already unwinds (from a `Drop`) is not itself panicking.
    was_panicking: bool,
}

impl<'a> PoisonOnUnwind<'a> {
    fn new(poisoned: &'a std::sync::atomic::AtomicU64, seq: u64) -> Self {
        Self {
            poisoned,
            seq,
            was_panicking: std::thread::panicking(),
        }
    }
}

impl Drop for PoisonOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() && !self.was_panicking {
            self.poisoned.store(self.seq, Ordering::Release);
        }
    }
}

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
    // Pending rows of commits RocksDB has synced are needed by nothing: this commit deletes them.
    let retired = state
        .pending_rows
        .iter()
        .take_while(|s| **s <= state.durable_follower_seq)
        .count();
    for s in &state.pending_rows[..retired] {
        primary.delete(Tables::Metadata, pending_key(*s).as_bytes(), None)?;
    }
    // Rows under the pending prefix whose key names no sequence: recovery found every commit
    // it needed without them (a needed one would have been a gap, refused), so nothing needs them.
    for key in &state.unreadable_pending {
        primary.delete(Tables::Metadata, key.as_bytes(), None)?;
    }
    // Once dirty, a transaction stays dirty, and after `freeze` every write is refused: a write
    // racing the commit from another thread's cursor is in the frozen view (and so in the
    // payload), refused, or (into a transaction found clean) makes the commit fail below.
    let (intent, frozen, deferred) = if F::is_dirty(&follower) {
        put_u64(&follower, SEQ_KEY, seq)?;
        // Only deferred commits leave pending rows, which recovery checks against the ring.
        if matches!(db.follower_sync, FollowerSync::Deferred { .. }) {
            put_u64(&follower, &applied_key(seq), seq)?;
        }
        put_u64(&primary, FOLLOWER_SEQ_KEY, seq)?;
        // ORDER: frozen before the export, so the view readers get and the payload RocksDB
        // applies are the same writes.
        let frozen = F::freeze(follower);
        let intent = Intent {
            seq,
            prev_follower_seq: state.follower_seq,
            payload: F::export_writes(&frozen)?,
        };
        let deferred = match db.follower_sync {
            FollowerSync::Deferred { max_row_bytes, .. } => {
                intent.payload.len() <= max_row_bytes && F::can_defer(&intent.payload)
            }
            FollowerSync::EveryCommit => false,
        };
        if deferred {
            // ORDER: the intent rides in the decision commit, so it is durable exactly when
            // MDBX decides; a crash before leaves neither.
            put_bytes(&primary, &pending_key(seq), intent_log::encode(&intent)?)?;
        } else {
            // ORDER: the intent is durable before the decision. A crash here leaves an intent
            // whose sequence MDBX never recorded; recovery discards it.
            let started = Instant::now();
            db.intent.write(&intent)?;
            metrics::phase(Phase::Intent, started.elapsed());
        }
        crash_point!(AfterIntentWrite);
        (Some(intent), Some(frozen), deferred)
    } else {
        stall_point!(AfterCleanCheck, &db.datadir);
        // Frozen rather than aborted: this releases RocksDB's writer lock even if a cursor of
        // the transaction lives on, and shows a write that slipped in after the check above.
        let frozen = F::freeze(follower);
        if F::holds_writes(&frozen) {
            return Err(HybridError::RacingWrite { seq });
        }
        (None, None, false)
    };
    // From the publication of the pending view to its retirement, a panic must poison.
    let _unwind = PoisonOnUnwind::new(&db.poisoned, seq);
    if let Some(frozen) = frozen {
        // ORDER: published before the decision, so a reader whose MDBX snapshot shows this
        // commit always finds its follower half; until then readers are given `current`.
        db.views.write().pending = Some((seq, frozen));
    }
    stall_point!(BeforeDecision, &db.datadir);
    {
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
            poison(&db.poisoned, &db.views, seq);
            return Err(HybridError::PrimaryCommit { seq, source });
        }
        crash_point!(AfterPrimaryCommit);
        if let Some(intent) = &intent {
            let started = Instant::now();
            let applied = fault_point!(FollowerApply, &db.datadir)
                .map_err(|e| injected("rocksdb", e))
                .and_then(|()| match deferred {
                    true => db.follower.apply_exported_deferred(&intent.payload),
                    false => db.follower.apply_exported(&intent.payload),
                });
            metrics::phase(Phase::Follower, started.elapsed());
            if let Err(source) = applied {
                // Readers already open keep their consistent views (the pending one included);
                // new ones are refused. Only recovery (on reopen) may finish the commit, from
                // the intent, which stays in place.
                poison(&db.poisoned, &db.views, seq);
                return Err(HybridError::FollowerApply { seq, source });
            }
            crash_point!(AfterFollowerApply);
            // The follower now holds the commit: a fresh snapshot replaces the frozen writes
            // (readers holding those keep them until they end). Should no snapshot open, the
            // frozen view (exactly the committed state) stays the current one.
            let fresh = db
                .follower
                .begin_ro()
                .inspect_err(|e| {
                    tracing::warn!(seq, error = %e, "no RocksDB snapshot after a commit; readers keep its frozen view")
                })
                .ok();
            let retired = {
                let mut views = db.views.write();
                let pending = views.pending.take();
                let (view, leftover) = match fresh {
                    Some(fresh) => (Some(fresh), pending),
                    None => (pending.map(|(_, frozen)| frozen), None),
                };
                let old = view.map(|view| std::mem::replace(&mut views.current, (seq, view)));
                (old, leftover)
            };
            // ORDER: dropped after the lock is released: freeing a large overlay and releasing
            // a RocksDB snapshot take time no reader should wait for.
            drop(retired);
        }
    }
    state.seq = seq;
    state.pending_rows.drain(..retired);
    state.unreadable_pending.clear();
    metrics::commit(
        match (&intent, deferred) {
            (None, _) => CommitRoute::Untouched,
            (Some(_), true) => CommitRoute::Deferred,
            (Some(_), false) => CommitRoute::Logged,
        },
        intent.as_ref().map_or(0, |i| i.payload.len()),
    );
    if deferred {
        state.follower_seq = seq;
        state.pending_rows.push(seq);
        state.unsynced += 1;
        state.unsynced_since.get_or_insert_with(Instant::now);
        state.oldest_unsynced.get_or_insert(seq);
    } else if let Some(intent) = intent {
        state.follower_seq = intent.seq;
        if state.unsynced > 0 {
            if db.follower.apply_syncs_earlier(&intent.payload) {
                // The synced batch also synced the WAL that earlier deferred commits wrote.
                mark_follower_synced(&mut state);
            } else {
                // An SST ingestion does not sync the WAL that earlier deferred commits wrote. A
                // failure here poisons the handle although this commit is durable in both.
                sync_follower(&db, &mut state, seq)?;
            }
        }
        state.durable_follower_seq = seq;
        // ORDER: clearing last. A crash before it leaves an intent both engines already hold;
        // recovery sees the follower at the intent's sequence and just clears it.
        let started = Instant::now();
        // The commit is durable in both engines; a failed clear only leaves a stale intent,
        // which the next commit overwrites or recovery recognises and clears.
        match db.intent.clear() {
            // No intent names the commit's exported files any more (a spilled commit's SSTs).
            Ok(()) => {
                if let Err(e) = db.follower.discard_exports() {
                    tracing::warn!(seq, error = %e, "could not remove a commit's exported files; the next commit or open retries");
                }
            }
            Err(e) => {
                tracing::warn!(seq, error = %e, "could not clear the intent log after a complete commit");
            }
        }
        metrics::phase(Phase::ClearIntent, started.elapsed());
        crash_point!(AfterIntentClear);
    }
    if let FollowerSync::Deferred {
        max_commits,
        max_delay,
        ..
    } = db.follower_sync
        && state.unsynced > 0
        && (u64::from(state.unsynced) >= u64::from(max_commits).min(APPLIED_RING / 2)
            || ring_bound_reached(&state, seq)
            || state
                .unsynced_since
                .is_some_and(|t| t.elapsed() >= max_delay))
    {
        sync_follower(&db, &mut state, seq)?;
        // The deferred commits' pending rows are retired (the next commit deletes them).
        crash_point!(AfterIntentClear);
    }
    Ok(())
}

/// Whether the next commit's sequence would lie half the applied ring or more past the oldest
/// unsynced deferred commit. Syncing then keeps every unsynced deferred commit (the only ones a
/// power loss can take, and so the only ones recovery checks against the ring) within
/// `APPLIED_RING / 2` sequence numbers of each other, so no two of them share a slot. Counted in
/// sequence numbers, not deferred commits: commits that write only to MDBX advance the sequence
/// too.
fn ring_bound_reached(state: &CommitState, seq: u64) -> bool {
    state
        .oldest_unsynced
        .is_some_and(|oldest| seq + 1 - oldest >= APPLIED_RING / 2)
}

/// The idle sync: deferred commits applied `max_delay` ago or more, with no commit since to
/// sync them, are synced now (a node between bursts of blocks). Skips a tick while a commit is
/// running (that commit syncs when due) and on a poisoned handle (recovery decides).
pub(crate) fn sync_if_idle<P: RawEngine, F: RawReplay>(db: &HybridInner<P, F>) {
    let FollowerSync::Deferred { max_delay, .. } = db.follower_sync else {
        return;
    };
    let Some(mut state) = db.state.try_lock() else {
        return;
    };
    if db.poisoned.load(Ordering::Acquire) != 0
        || state.unsynced == 0
        || state.unsynced_since.is_none_or(|t| t.elapsed() < max_delay)
    {
        return;
    }
    let seq = state.seq;
    if let Err(e) = sync_follower(db, &mut state, seq) {
        tracing::warn!(seq, error = %e, "the idle sync of RocksDB's WAL failed; its commits stay in MDBX, reopen the database to recover");
    }
}

/// Syncs RocksDB's WAL: every deferred commit so far becomes durable there. A failure poisons
/// the handle: the rows stay in MDBX, and the next open replays whatever RocksDB lost.
fn sync_follower<P: RawEngine, F: RawReplay>(
    db: &HybridInner<P, F>,
    state: &mut CommitState,
    seq: u64,
) -> Result<(), HybridError> {
    let started = Instant::now();
    let synced = fault_point!(FollowerSync, &db.datadir)
        .map_err(|e| injected("rocksdb", e))
        .and_then(|()| db.follower.sync_applied());
    metrics::phase(Phase::FollowerSync, started.elapsed());
    if let Err(source) = synced {
        poison(&db.poisoned, &db.views, seq);
        return Err(HybridError::FollowerSync { seq, source });
    }
    mark_follower_synced(state);
    Ok(())
}

/// Every commit applied to the follower so far is durable there.
fn mark_follower_synced(state: &mut CommitState) {
    state.durable_follower_seq = state.follower_seq;
    state.unsynced = 0;
    state.unsynced_since = None;
    state.oldest_unsynced = None;
}

/// Marks the handle unusable after a commit failed once MDBX may have decided it, and drops the
/// pending view (no reader can open after this; readers holding it keep their copy).
fn poison<T>(poisoned: &std::sync::atomic::AtomicU64, views: &RwLock<FollowerViews<T>>, seq: u64) {
    poisoned.store(seq, Ordering::Release);
    let retired = views.write().pending.take();
    drop(retired);
}
