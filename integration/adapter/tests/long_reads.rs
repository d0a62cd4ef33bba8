//! reth's long-read rules on the hybrid node database. reth's MDBX aborts read transactions
//! open longer than `max_read_transaction_duration` (5 minutes in a node), and reth lifts that
//! with `disable_long_read_transaction_safety` for its long scans (the startup consistency
//! check, the static-file producer, unwinds: without it they fail). Before unwinding static
//! files reth waits for readers older than its commit (`oldest_reader_txnid`/`last_txnid`).

use alloy_primitives::B256;
use reth_db::mdbx::{DatabaseArguments, MaxReadTransactionDuration};
use reth_db_api::{
    cursor::DbCursorRO,
    database::{Database, ReaderTxnTracker},
    models::ClientVersion,
    tables::{CanonicalHeaders, TransactionHashNumbers},
    transaction::{DbTx, DbTxMut},
};
use reth_hybrid_adapter::{HybridNodeDb, open_hybrid};
use std::{sync::mpsc, time::Duration};

/// reth's monitor checks read transactions at most this often (`READ_TRANSACTIONS_CHECK_INTERVAL`).
const MONITOR_INTERVAL: Duration = Duration::from_secs(5);
const MAX_READ: Duration = Duration::from_secs(1);

fn open(dir: &std::path::Path, max_read: Option<MaxReadTransactionDuration>) -> HybridNodeDb {
    let args = DatabaseArguments::new(ClientVersion::default())
        .with_max_read_transaction_duration(max_read);
    open_hybrid(dir, args).expect("open")
}

fn commit_block(db: &HybridNodeDb, n: u64) {
    let tx = db.tx_mut().expect("rw");
    tx.put::<CanonicalHeaders>(n, B256::repeat_byte(n as u8))
        .expect("mdbx row");
    tx.put::<TransactionHashNumbers>(B256::repeat_byte(n as u8), n)
        .expect("rocksdb row");
    tx.commit().expect("commit");
}

#[test]
fn a_long_read_is_aborted_unless_its_safety_is_disabled() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = open(dir.path(), Some(MaxReadTransactionDuration::Set(MAX_READ)));
    commit_block(&db, 1);

    commit_block(&db, 2);
    let timed = db.tx().expect("ro");
    // Cursors opened before the timeout, one per engine, each with a move left to make.
    let mut mdbx_cursor = timed.cursor_read::<CanonicalHeaders>().expect("cursor");
    let mut rocksdb_cursor = timed
        .cursor_read::<TransactionHashNumbers>()
        .expect("cursor");
    assert!(mdbx_cursor.first().expect("first").is_some());
    assert!(rocksdb_cursor.first().expect("first").is_some());
    let mut exempt = db.tx().expect("ro");
    exempt.disable_long_read_transaction_safety();
    let mut exempt_cursor = exempt
        .cursor_read::<TransactionHashNumbers>()
        .expect("cursor");
    assert!(exempt_cursor.first().expect("first").is_some());
    std::thread::sleep(MAX_READ + MONITOR_INTERVAL + Duration::from_secs(1));

    let err = timed
        .get::<CanonicalHeaders>(1)
        .expect_err("reth's MDBX aborts a read transaction older than its limit");
    assert!(
        err.to_string().contains("timed out"),
        "the timeout is reported as reth reports it: {err}"
    );
    // The RocksDB half ends with it: reth no longer counts this reader (its MDBX reader slot is
    // gone), so reading on in RocksDB could pair old history with a newer static file.
    let err = timed
        .get::<TransactionHashNumbers>(B256::repeat_byte(1))
        .expect_err("a timed-out hybrid reader fails whole, RocksDB reads included");
    assert!(err.to_string().contains("timed out"), "{err}");
    // Cursors too: reth's MDBX cursor of the timed-out reader fails on its next move, and so
    // does its RocksDB cursor, which would otherwise step on through its snapshot.
    let err = mdbx_cursor
        .next()
        .expect_err("reth's MDBX cursor of a timed-out reader fails");
    assert!(err.to_string().contains("timed out"), "{err}");
    let err = rocksdb_cursor
        .next()
        .expect_err("the RocksDB cursor of a timed-out hybrid reader fails too");
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(
        exempt_cursor.next().expect("exempt cursor").is_some(),
        "a cursor of an exempt reader moves on"
    );
    assert_eq!(
        exempt.get::<CanonicalHeaders>(1).expect("mdbx read"),
        Some(B256::repeat_byte(1)),
        "a transaction with its long-read safety disabled outlives the limit"
    );
    assert_eq!(
        exempt
            .get::<TransactionHashNumbers>(B256::repeat_byte(1))
            .expect("rocksdb read"),
        Some(1)
    );
}

#[test]
fn reader_txnids_are_mdbx_s_and_reth_waits_for_older_hybrid_readers() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = open(dir.path(), Some(MaxReadTransactionDuration::Unbounded));
    commit_block(&db, 1);
    let before = db.last_txnid().expect("a committed transaction has an id");
    let reader = db.tx().expect("ro");
    commit_block(&db, 2);
    let committed = db.last_txnid().expect("txnid");
    assert!(committed > before, "commits advance last_txnid");
    let oldest = db
        .oldest_reader_txnid()
        .expect("a hybrid reader is in MDBX's reader table");
    assert!(
        oldest < committed,
        "the reader opened before the commit is older ({oldest} vs {committed})"
    );

    // reth's wait before unwinding static files: blocks while that reader lives.
    let (sent, done) = mpsc::channel();
    let waiter = {
        let db = db.clone();
        std::thread::spawn(move || {
            db.wait_for_pre_commit_readers();
            let _ = sent.send(());
        })
    };
    assert!(
        done.recv_timeout(Duration::from_millis(500)).is_err(),
        "reth must wait for a hybrid reader older than its commit"
    );
    assert_eq!(
        reader
            .get::<TransactionHashNumbers>(B256::repeat_byte(2))
            .expect("read"),
        None,
        "the old reader does not see the later commit in RocksDB either"
    );
    drop(reader);
    done.recv_timeout(Duration::from_secs(20))
        .expect("the wait ends once the old reader is gone");
    waiter.join().expect("waiter");
}
