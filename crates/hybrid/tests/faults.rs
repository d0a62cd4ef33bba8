//! Fault tests: an I/O step of a commit fails with EIO or ENOSPC (feature `fault-injection`,
//! `crates/hybrid/src/fault.rs`) while the process lives on. For every fault point and errno the
//! commit must return an error naming the step and the errno, leave no torn commit (each commit
//! in both engines or in neither), refuse reads and writes when MDBX may have decided, and the
//! reopened datadir must hold every acknowledged commit, and the failed one exactly when MDBX
//! decided it. Both ways RocksDB's writes become durable are tested: `EveryCommit` (the
//! intent log and a synced RocksDB write) and `Deferred` (the pending row in MDBX's commit, an
//! unsynced RocksDB write, a WAL sync after every commit here).

mod common;

use common::{Db, open, open_with, visible, write_commit};
use reth_hybrid_api::raw::{RawEngine, RawTx, RawTxMut};
use reth_hybrid_hybrid::{
    FollowerSync, HybridError, INTENT_LOG_FILE, RecoveryAction,
    fault::{self, Fault, FaultPoint},
};
use std::{fs, path::Path};

fn commit(db: &Db, i: u64) -> Result<(), reth_hybrid_api::DatabaseError> {
    let tx = db.begin_rw()?;
    write_commit(&tx, i);
    tx.commit()
}

/// The pending rows (deferred commits' RocksDB writes) MDBX holds now.
fn pending(db: &Db) -> Vec<u64> {
    let tx = db.primary().begin_ro().expect("ro");
    reth_hybrid_hybrid::control::pending_seqs(&tx).expect("pending rows")
}

fn commits(db: &Db) -> Vec<u64> {
    let (blocks, txs) = visible(db);
    assert_eq!(
        blocks, txs,
        "a commit is in one engine only (torn commit): MDBX {blocks:?}, RocksDB {txs:?}"
    );
    blocks.into_iter().collect()
}

/// What the failed commit's error must say, besides the errno.
fn step_named(point: FaultPoint) -> &'static str {
    match point {
        FaultPoint::IntentWrite => "could not write intent log",
        FaultPoint::IntentFsync => "could not fsync intent log",
        FaultPoint::PrimaryCommit => "MDBX's commit of sequence 3 reported an error",
        FaultPoint::FollowerApply => "RocksDB could not apply commit 3 after MDBX decided it",
        FaultPoint::FollowerSync => "RocksDB could not sync its WAL after commit 3",
        FaultPoint::BeforeDecision | FaultPoint::AfterCleanCheck => {
            unreachable!("a stall point only, not in FaultPoint::ALL")
        }
    }
}

/// Whether MDBX decided the commit when the fault hit (so recovery must finish it).
fn decided(point: FaultPoint) -> bool {
    matches!(
        point,
        FaultPoint::PrimaryCommit | FaultPoint::FollowerApply | FaultPoint::FollowerSync
    )
}

/// The fault points a commit passes in each mode.
fn points(sync: FollowerSync) -> Vec<FaultPoint> {
    match sync {
        FollowerSync::EveryCommit => vec![
            FaultPoint::IntentWrite,
            FaultPoint::IntentFsync,
            FaultPoint::PrimaryCommit,
            FaultPoint::FollowerApply,
        ],
        FollowerSync::Deferred { .. } => vec![
            FaultPoint::PrimaryCommit,
            FaultPoint::FollowerApply,
            FaultPoint::FollowerSync,
        ],
    }
}

fn fault_case(dir: &Path, sync: FollowerSync, point: FaultPoint, fault: Fault) {
    let deferred = matches!(sync, FollowerSync::Deferred { .. });
    let context = format!("{}/{fault:?} deferred={deferred}", point.name());
    let open = |dir: &Path, layout| open_with(dir, layout, sync);
    let db = open(dir, None).expect("open");
    commit(&db, 1).expect("commit 1");
    commit(&db, 2).expect("commit 2");

    fault::arm(dir, point, fault);
    let err = commit(&db, 3).expect_err("the faulted commit must fail");
    let msg = err.to_string();
    assert!(
        msg.contains(&fault.io_error().to_string()),
        "{context}: the errno is not named: {msg}"
    );
    assert!(
        msg.contains(step_named(point)),
        "{context}: the step is not named: {msg}"
    );
    assert!(
        msg.starts_with("failed to commit transaction changes"),
        "{context}: not reported as a commit error: {msg}"
    );

    if decided(point) {
        // MDBX may hold commit 3 and RocksDB does not: nobody may read or write until reopened.
        let read = db.begin_ro().expect_err("reads refused after the fault");
        let read = read.to_string();
        assert!(
            read.contains("commit 3 failed") && read.contains("reopen the database"),
            "{context}: {read}"
        );
        let write = db.begin_rw().expect_err("writes refused after the fault");
        assert!(
            write.to_string().contains("reopen the database"),
            "{context}: {write}"
        );
    } else {
        // Nothing was decided: the handle stays usable and shows commits 1 and 2 only.
        assert_eq!(commits(&db), vec![1, 2], "{context}: in-process view");
    }
    drop(db);

    let db = open(dir, None).unwrap_or_else(|e| panic!("{context}: reopen failed: {e}"));
    match (deferred, point, &db.recovered().action) {
        (false, FaultPoint::IntentWrite, RecoveryAction::DroppedTornTail { bytes })
            if *bytes > 0 => {}
        (false, FaultPoint::IntentFsync, RecoveryAction::DiscardedUndecided { seq: 3 }) => {}
        (
            false,
            FaultPoint::PrimaryCommit | FaultPoint::FollowerApply,
            RecoveryAction::Replayed { seq: 3 },
        ) => {}
        // RocksDB never got commit 3: replayed from MDBX's pending row.
        (
            true,
            FaultPoint::PrimaryCommit | FaultPoint::FollowerApply,
            RecoveryAction::ReplayedDeferred {
                commits: 1,
                last: 3,
            },
        ) => {}
        // RocksDB applied commit 3 (its WAL survived the process); only the sync failed.
        (true, FaultPoint::FollowerSync, RecoveryAction::Clean) => {}
        (_, _, other) => panic!("{context}: unexpected recovery {other:?}"),
    }
    let expected: Vec<u64> = if decided(point) {
        vec![1, 2, 3]
    } else {
        vec![1, 2]
    };
    assert_eq!(commits(&db), expected, "{context}: after recovery");
    let next = expected.len() as u64 + 1;
    commit(&db, next).unwrap_or_else(|e| panic!("{context}: commit after recovery: {e}"));
    drop(db);
    let db = open(dir, None).expect("second reopen");
    assert_eq!(db.recovered().action, RecoveryAction::Clean, "{context}");
    assert_eq!(commits(&db).len() as u64, next, "{context}");
}

#[test]
fn every_fault_point_fails_the_commit_and_recovery_settles_it() {
    for sync in [FollowerSync::EveryCommit, common::deferred(1)] {
        for point in points(sync) {
            for fault in Fault::ALL {
                let dir = tempfile::tempdir().expect("tmp");
                fault_case(dir.path(), sync, point, fault);
                fault::disarm(dir.path());
            }
        }
    }
    let covered: Vec<FaultPoint> = [FollowerSync::EveryCommit, common::deferred(1)]
        .into_iter()
        .flat_map(points)
        .collect();
    assert!(
        FaultPoint::ALL.iter().all(|p| covered.contains(p)),
        "a fault point no mode passes"
    );
}

/// A fault that fires before MDBX's decision leaves the handle usable: the same commit succeeds
/// when retried, and the half-written intent it left is replaced.
#[test]
fn commit_retried_after_a_failed_intent_write_succeeds() {
    for point in [FaultPoint::IntentWrite, FaultPoint::IntentFsync] {
        let dir = tempfile::tempdir().expect("tmp");
        let db = open(dir.path(), None).expect("open");
        commit(&db, 1).expect("commit 1");
        fault::arm(dir.path(), point, Fault::Enospc);
        commit(&db, 2).expect_err("faulted");
        commit(&db, 2).expect("retry");
        assert_eq!(commits(&db), vec![1, 2], "{}", point.name());
        assert_eq!(db.last_seq(), 2);
        drop(db);
        let db = open(dir.path(), None).expect("reopen");
        assert_eq!(
            db.recovered().action,
            RecoveryAction::Clean,
            "{}",
            point.name()
        );
        assert_eq!(commits(&db), vec![1, 2], "{}", point.name());
    }
}

/// The disk is still full when the node restarts: recovery's replay fails too. The open is
/// refused with the errno and the intent log is kept byte for byte, so the open after the cause
/// is fixed replays the commit.
#[test]
fn failed_replay_keeps_the_intent_for_the_next_open() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join(INTENT_LOG_FILE);
    let db = open(dir.path(), None).expect("open");
    commit(&db, 1).expect("commit 1");
    fault::arm(dir.path(), FaultPoint::FollowerApply, Fault::Enospc);
    commit(&db, 2).expect_err("faulted apply");
    drop(db);
    let intent = fs::read(&log).expect("log");
    assert!(!intent.is_empty(), "the decided commit's intent is kept");

    fault::arm(dir.path(), FaultPoint::FollowerApply, Fault::Enospc);
    match open(dir.path(), None) {
        Err(e @ HybridError::Replay { seq: 2, .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&Fault::Enospc.io_error().to_string())
                    && msg.contains(INTENT_LOG_FILE)
                    && msg.contains("open the database again"),
                "{msg}"
            );
        }
        other => panic!("expected Replay, got {other:?}"),
    }
    assert!(
        fs::read(&log).expect("log") == intent,
        "the intent log changed"
    );

    let db = open(dir.path(), None).expect("open once the disk has room");
    assert_eq!(db.recovered().action, RecoveryAction::Replayed { seq: 2 });
    assert_eq!(commits(&db), vec![1, 2]);
}

/// A read transaction opened before the faulted commit keeps its consistent snapshot; one
/// opened after it is refused.
#[test]
fn reader_opened_before_a_failed_apply_keeps_its_snapshot() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = open(dir.path(), None).expect("open");
    commit(&db, 1).expect("commit 1");
    let before = db.begin_ro().expect("ro");
    fault::arm(dir.path(), FaultPoint::FollowerApply, Fault::Eio);
    commit(&db, 2).expect_err("faulted apply");
    assert_eq!(
        before
            .entries(reth_hybrid_api::Tables::CanonicalHeaders)
            .expect("entries"),
        1
    );
    assert_eq!(
        before
            .entries(reth_hybrid_api::Tables::TransactionHashNumbers)
            .expect("entries"),
        1
    );
    before.abort();
    assert!(db.begin_ro().is_err(), "a new reader is refused");
}

/// Deferred syncs with the default 64 KiB bound, synced only when a test's commit does it.
fn deferred_with_default_bound() -> FollowerSync {
    FollowerSync::Deferred {
        max_commits: 100,
        max_delay: std::time::Duration::from_secs(3600),
        max_row_bytes: reth_hybrid_hybrid::DEFAULT_MAX_DEFERRED_BYTES,
    }
}

/// Checks that commits 1 and 2 were deferred and are unsynced, arms a failing WAL sync, and
/// begins commit 3 with its usual rows.
fn commit_3_with_the_wal_sync_failing(db: &Db, dir: &Path) -> <Db as RawEngine>::TxMut {
    assert_eq!(
        pending(db),
        vec![1, 2],
        "two deferred commits, not yet synced"
    );
    fault::arm(dir, FaultPoint::FollowerSync, Fault::Eio);
    let tx = db.begin_rw().expect("rw");
    write_commit(&tx, 3);
    tx
}

/// With the default bound, a commit too large to defer follows deferred ones whose RocksDB
/// writes are not yet synced. Its synced write batch syncs RocksDB's whole WAL, theirs
/// included, so no separate WAL sync follows it: a sync that would fail cannot fail (and
/// poison) a commit already durable in both engines, and the deferred commits' pending rows
/// are retired all the same.
#[test]
fn a_logged_commit_after_deferred_ones_needs_no_separate_wal_sync() {
    let dir = tempfile::tempdir().expect("tmp");
    let sync = deferred_with_default_bound();
    let db = open_with(dir.path(), None, sync).expect("open");
    commit(&db, 1).expect("commit 1 (deferred)");
    commit(&db, 2).expect("commit 2 (deferred)");
    let tx = commit_3_with_the_wal_sync_failing(&db, dir.path());
    // ~150 KB of history rows (a table routed to RocksDB that `visible` does not read): over
    // the 64 KiB bound, so commit 3 takes the intent log and a synced write.
    for i in 0..1_500u32 {
        let mut key = [0x5au8; 28];
        key[..4].copy_from_slice(&i.to_be_bytes());
        tx.put(reth_hybrid_api::Tables::AccountsHistory, &key, &[7u8; 64])
            .expect("history row");
    }
    tx.commit()
        .expect("the large commit needs no WAL sync after its synced write");
    fault::disarm(dir.path());
    assert_eq!(commits(&db), vec![1, 2, 3]);
    commit(&db, 4).expect("the handle is not poisoned");
    assert_eq!(
        pending(&db),
        vec![4],
        "commit 4 deleted the rows of 1 and 2, retired by commit 3's synced write"
    );
    drop(db);

    let db = open_with(dir.path(), None, sync).expect("reopen");
    assert_eq!(db.recovered().action, RecoveryAction::Clean);
    assert_eq!(commits(&db), vec![1, 2, 3, 4]);
}

/// The twin of the test above: a commit made of SST files (here a clear of a table with rows)
/// writes no WAL, so after deferred commits it still syncs RocksDB's WAL on its own, and a
/// failing sync fails it (the commit is decided; reopening finishes it).
#[test]
fn a_commit_of_sst_files_after_deferred_ones_still_syncs_the_wal() {
    let dir = tempfile::tempdir().expect("tmp");
    let sync = deferred_with_default_bound();
    let history_row = [0x5au8; 28];
    let db = open_with(dir.path(), None, sync).expect("open");
    commit(&db, 1).expect("commit 1 (deferred)");
    let tx = db.begin_rw().expect("rw");
    write_commit(&tx, 2);
    tx.put(
        reth_hybrid_api::Tables::AccountsHistory,
        &history_row,
        &[7u8; 8],
    )
    .expect("history row");
    tx.commit().expect("commit 2 (deferred)");
    let tx = commit_3_with_the_wal_sync_failing(&db, dir.path());
    tx.clear(reth_hybrid_api::Tables::AccountsHistory)
        .expect("clear a table with rows: the commit is made of SST files");
    let err = tx
        .commit()
        .expect_err("the WAL sync after the ingestion fails the commit");
    assert!(
        err.to_string()
            .contains("RocksDB could not sync its WAL after commit 3"),
        "{err}"
    );
    fault::disarm(dir.path());
    drop(db);

    let db = open_with(dir.path(), None, sync).expect("reopen");
    assert_eq!(commits(&db), vec![1, 2, 3], "the decided commit is kept");
    let ro = db.begin_ro().expect("ro");
    assert_eq!(
        ro.entries(reth_hybrid_api::Tables::AccountsHistory)
            .expect("entries"),
        0,
        "commit 3's clear is applied"
    );
    drop(ro);
    drop(db);
    let db = open_with(dir.path(), None, sync).expect("second reopen");
    assert_eq!(db.recovered().action, RecoveryAction::Clean);
}
