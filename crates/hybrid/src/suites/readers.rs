//! Readers never wait for a commit and never see half of one. A commit is held at each I/O step
//! of the protocol (the intent's write and fsync and right before MDBX's decision, with its
//! RocksDB writes already published as pending; right after the decision; before RocksDB's
//! apply) while a new read transaction opens: it must open without waiting, and see one whole
//! commit in both engines: the previous one before the decision, the held one after it.

use super::{
    Open,
    workload::{commit, hash, visible},
};
use crate::fault::{self, FaultPoint};
use reth_hybrid_api::{
    Tables,
    raw::{RawCursorMut, RawEngine, RawReplay, RawTx, RawTxMut},
};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    thread,
    time::Duration,
};

/// Long enough that only a reader waiting for the held commit runs into it.
const READER_DEADLINE: Duration = Duration::from_secs(20);

fn reader_during_held_commit<P: RawEngine, F: RawReplay>(
    open: Open<P, F>,
    point: FaultPoint,
    expect_last: u64,
) {
    let dir = tempfile::tempdir().expect("tmp");
    let db = open(dir.path()).expect("open");
    commit(&db, 1).expect("commit 1");
    commit(&db, 2).expect("commit 2");

    let stall = fault::arm_stall(dir.path(), point);
    let writer = {
        let db = db.clone();
        thread::spawn(move || commit(&db, 3))
    };
    if !stall.wait_until_held(READER_DEADLINE) {
        stall.release();
        let result = writer.join();
        panic!(
            "{}: the commit never reached the point: {result:?}",
            point.name()
        );
    }
    let (sent, received) = mpsc::channel();
    let reader = {
        let db = db.clone();
        thread::spawn(move || {
            let _ = sent.send(visible(&db));
        })
    };
    let seen = received.recv_timeout(READER_DEADLINE);
    // Released before any assertion, so a failing case ends instead of hanging.
    stall.release();
    writer
        .join()
        .expect("writer thread")
        .expect("the held commit completes once released");
    reader.join().expect("reader thread");

    let (blocks, txs) = seen.unwrap_or_else(|_| {
        panic!(
            "{}: a new reader waited more than {READER_DEADLINE:?} for a commit held there",
            point.name()
        )
    });
    assert_eq!(
        blocks,
        txs,
        "{}: the reader saw MDBX and RocksDB at different commits",
        point.name()
    );
    assert_eq!(
        blocks.into_iter().collect::<Vec<_>>(),
        (1..=expect_last).collect::<Vec<_>>(),
        "{}: the reader must see commit {expect_last} whole",
        point.name()
    );
    // After the commit: everything, in both engines.
    let (blocks, txs) = visible(&db);
    assert_eq!((blocks.len(), txs.len()), (3, 3), "{}", point.name());
}

/// Held before MDBX's decision: the reader opens at once and sees the previous commit, although
/// the held commit's frozen RocksDB writes are already published as pending.
pub fn a_reader_opens_while_a_commit_is_held_before_the_decision<P: RawEngine, F: RawReplay>(
    open: Open<P, F>,
) {
    if !super::deferred(open) {
        reader_during_held_commit(open, FaultPoint::IntentWrite, 2);
        reader_during_held_commit(open, FaultPoint::IntentFsync, 2);
    }
    reader_during_held_commit(open, FaultPoint::BeforeDecision, 2);
}

/// Held after MDBX decided and before RocksDB applied (or, deferred, while RocksDB syncs its
/// WAL): the reader gets the commit's RocksDB writes.
pub fn a_reader_opens_while_a_commit_is_held_after_the_decision<P: RawEngine, F: RawReplay>(
    open: Open<P, F>,
) {
    reader_during_held_commit(open, FaultPoint::PrimaryCommit, 3);
    reader_during_held_commit(open, FaultPoint::FollowerApply, 3);
    if super::deferred(open) {
        reader_during_held_commit(open, FaultPoint::FollowerSync, 3);
    }
}

/// A reader opened during a held commit keeps exactly that commit's view after later commits.
pub fn readers_opened_during_a_held_commit_keep_their_snapshot<P: RawEngine, F: RawReplay>(
    open: Open<P, F>,
) {
    let dir = tempfile::tempdir().expect("tmp");
    let db = open(dir.path()).expect("open");
    commit(&db, 1).expect("commit 1");
    let stall = fault::arm_stall(dir.path(), FaultPoint::FollowerApply);
    let writer = {
        let db = db.clone();
        thread::spawn(move || commit(&db, 2))
    };
    assert!(
        stall.wait_until_held(READER_DEADLINE),
        "the commit never reached the point"
    );
    let (sent, received) = mpsc::channel();
    let reader = {
        let db = db.clone();
        thread::spawn(move || {
            let tx = db.begin_ro().expect("ro");
            let _ = sent.send(());
            tx
        })
    };
    let opened = received.recv_timeout(READER_DEADLINE);
    stall.release();
    writer.join().expect("writer").expect("commit 2");
    let tx = reader.join().expect("reader");
    assert!(opened.is_ok(), "the reader waited for the held commit");
    // Commits after the held one must stay invisible to the reader opened during it.
    commit(&db, 3).expect("commit 3");
    commit(&db, 4).expect("commit 4");
    let rows = |t| tx.entries(t).expect("entries");
    assert_eq!(
        (
            rows(Tables::CanonicalHeaders),
            rows(Tables::TransactionHashNumbers)
        ),
        (2, 2),
        "a reader opened during commit 2 sees exactly commits 1 and 2, in both engines"
    );
    tx.abort();
}

/// A write into the RocksDB half from another thread's cursor, landing after the commit found
/// that half clean, fails the commit (nothing is made) instead of being silently dropped.
pub fn a_write_racing_a_clean_commit_fails_it<P: RawEngine, F: RawReplay>(open: Open<P, F>) {
    let dir = tempfile::tempdir().expect("tmp");
    let db = open(dir.path()).expect("open");
    commit(&db, 1).expect("commit 1");
    let stall = fault::arm_stall(dir.path(), FaultPoint::AfterCleanCheck);
    // The transaction lives on its own thread (MDBX ends a write transaction on the thread that
    // began it); its RocksDB cursor comes here, to write while the commit is held.
    let (sent, cursor) = mpsc::channel();
    let committing = {
        let db = db.clone();
        thread::spawn(move || {
            let tx = db.begin_rw().expect("rw");
            tx.put(Tables::CanonicalHeaders, &2u64.to_be_bytes(), &[2; 32])
                .expect("an MDBX row only: the RocksDB half is clean");
            let cursor = tx
                .cursor_mut(Tables::TransactionHashNumbers)
                .expect("a RocksDB cursor of the transaction");
            sent.send(cursor).expect("send the cursor");
            tx.commit()
        })
    };
    let mut cursor = cursor.recv().expect("the transaction's cursor");
    if !stall.wait_until_held(READER_DEADLINE) {
        stall.release();
        panic!(
            "the commit never reached the point: {:?}",
            committing.join()
        );
    }
    cursor
        .upsert(&hash(2), &2u64.to_le_bytes())
        .expect("the write lands before the freeze");
    stall.release();
    let err = committing
        .join()
        .expect("committing thread")
        .expect_err("the commit must fail rather than drop the racing write");
    assert!(
        err.to_string().contains("from another thread"),
        "the error names the cause: {err}"
    );
    drop(cursor);
    let (blocks, txs) = visible(&db);
    assert_eq!(
        (
            blocks.into_iter().collect::<Vec<_>>(),
            txs.into_iter().collect::<Vec<_>>()
        ),
        (vec![1], vec![1]),
        "nothing of the failed commit is visible, in either engine"
    );
}

/// Three reader threads open transactions in a loop while 150 commits are made: each counts the
/// rows of one MDBX and one RocksDB table, which every commit grows together.
pub fn readers_never_see_a_commit_in_one_engine_only<P: RawEngine, F: RawReplay>(open: Open<P, F>) {
    let dir = tempfile::tempdir().expect("tmp");
    let db = open(dir.path()).expect("open");
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (db, stop) = (db.clone(), stop.clone());
            thread::spawn(move || {
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let tx = db.begin_ro().expect("ro");
                    let in_mdbx = tx.entries(Tables::CanonicalHeaders).expect("entries");
                    let in_rocksdb = tx.entries(Tables::TransactionHashNumbers).expect("entries");
                    assert_eq!(
                        in_mdbx, in_rocksdb,
                        "a reader saw one engine's commit without the other's"
                    );
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    for i in 1..=150u64 {
        commit(&db, i).expect("commit");
    }
    stop.store(true, Ordering::Relaxed);
    let checks: u64 = readers.into_iter().map(|r| r.join().expect("reader")).sum();
    assert!(checks > 0);
}
