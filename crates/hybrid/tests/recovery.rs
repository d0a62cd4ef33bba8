//! Recovery and layout validation, with the engines put into each state by hand.

mod common;

use common::{Db, engines, open, visible, write_commit};
use reth_hybrid_api::{
    EngineKind, Tables,
    raw::{RawEngine, RawReplay, RawTx, RawTxMut},
};
use reth_hybrid_hybrid::{
    HybridError, INTENT_LOG_FILE, Layout, RecoveryAction,
    control::{FOLLOWER_SEQ_KEY, SEQ_KEY, get_u64, put_u64},
    intent_log::{Intent, IntentLog, encode},
};
use reth_hybrid_rocksdb::RocksEngine;
use std::{fs, path::Path};

/// Performs commit `seq` the way the protocol does, but stops after MDBX's decision commit
/// (`apply = false`) or before it (`decide = false`).
fn half_commit(dir: &Path, seq: u64, decide: bool, apply: bool) {
    let (mdbx, rocks) = engines(dir);
    let prev = {
        let t = rocks.begin_ro().expect("ro");
        get_u64(&t, SEQ_KEY).expect("seq")
    };
    let ptx = mdbx.begin_rw().expect("rw");
    let ftx = rocks.begin_rw().expect("rw");
    ptx.put(
        Tables::CanonicalHeaders,
        &seq.to_be_bytes(),
        &[seq as u8; 32],
    )
    .expect("put");
    ftx.put(
        Tables::TransactionHashNumbers,
        &common::hash(seq),
        &seq.to_le_bytes(),
    )
    .expect("put");
    put_u64(&ptx, SEQ_KEY, seq).expect("seq");
    put_u64(&ptx, FOLLOWER_SEQ_KEY, seq).expect("seq");
    put_u64(&ftx, SEQ_KEY, seq).expect("seq");
    let payload = RocksEngine::export_writes(&ftx).expect("export");
    ftx.abort();
    IntentLog::new(dir.join(INTENT_LOG_FILE))
        .write(&Intent {
            seq,
            prev_follower_seq: prev,
            payload: payload.clone(),
        })
        .expect("intent");
    if decide {
        ptx.commit().expect("decision");
        if apply {
            rocks.apply_exported(&payload).expect("apply");
        }
    } else {
        ptx.abort();
    }
}

fn committed(dir: &Path, n: u64) -> Db {
    let db = open(dir, None).expect("open");
    for i in 1..=n {
        let tx = db.begin_rw().expect("rw");
        write_commit(&tx, i);
        tx.commit().expect("commit");
    }
    db
}

#[test]
fn recovery_reapplies_to_engine_behind() {
    let dir = tempfile::tempdir().expect("tmp");
    drop(committed(dir.path(), 1));
    half_commit(dir.path(), 2, true, false);
    let db = open(dir.path(), None).expect("recovers");
    assert_eq!(db.recovered().action, RecoveryAction::Replayed { seq: 2 });
    let (blocks, txs) = visible(&db);
    assert_eq!(blocks, txs);
    assert_eq!(blocks.into_iter().collect::<Vec<_>>(), vec![1, 2]);
    drop(db);
    let again = open(dir.path(), None).expect("reopen");
    assert_eq!(
        again.recovered().action,
        RecoveryAction::Clean,
        "recovery is idempotent"
    );
    assert_eq!(again.last_seq(), 2);
}

#[test]
fn recovery_discards_undecided_intent() {
    let dir = tempfile::tempdir().expect("tmp");
    drop(committed(dir.path(), 1));
    half_commit(dir.path(), 2, false, false);
    let db = open(dir.path(), None).expect("recovers");
    assert_eq!(
        db.recovered().action,
        RecoveryAction::DiscardedUndecided { seq: 2 }
    );
    let (blocks, txs) = visible(&db);
    assert_eq!((blocks.len(), txs.len()), (1, 1));
    assert_eq!(
        fs::metadata(dir.path().join(INTENT_LOG_FILE))
            .expect("log")
            .len(),
        0
    );
}

#[test]
fn recovery_clears_intent_of_a_finished_commit() {
    let dir = tempfile::tempdir().expect("tmp");
    drop(committed(dir.path(), 1));
    half_commit(dir.path(), 2, true, true);
    let db = open(dir.path(), None).expect("recovers");
    assert_eq!(
        db.recovered().action,
        RecoveryAction::ClearedApplied { seq: 2 }
    );
    let (blocks, txs) = visible(&db);
    assert_eq!(blocks, txs);
}

#[test]
fn torn_intent_tail_is_dropped() {
    let dir = tempfile::tempdir().expect("tmp");
    drop(committed(dir.path(), 1));
    let full = encode(&Intent {
        seq: 2,
        prev_follower_seq: 1,
        payload: vec![7; 100],
    });
    fs::write(dir.path().join(INTENT_LOG_FILE), &full[..full.len() - 3]).expect("write torn");
    let db = open(dir.path(), None).expect("recovers");
    assert_eq!(
        db.recovered().action,
        RecoveryAction::DroppedTornTail {
            bytes: full.len() as u64 - 3
        }
    );
}

#[test]
fn corrupt_intent_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    drop(committed(dir.path(), 1));
    let mut full = encode(&Intent {
        seq: 2,
        prev_follower_seq: 1,
        payload: vec![7; 100],
    });
    full[40] ^= 0xff;
    fs::write(dir.path().join(INTENT_LOG_FILE), &full).expect("write corrupt");
    match open(dir.path(), None) {
        Err(e @ HybridError::CorruptIntent { .. }) => {
            assert!(e.to_string().contains(INTENT_LOG_FILE), "{e}")
        }
        other => panic!("expected CorruptIntent, got {other:?}"),
    }
    assert!(
        fs::read(dir.path().join(INTENT_LOG_FILE)).expect("log") == full,
        "the log is kept for inspection"
    );
}

#[test]
fn rocksdb_behind_mdbx_is_refused_with_both_sequences() {
    let dir = tempfile::tempdir().expect("tmp");
    drop(committed(dir.path(), 1));
    let backup = tempfile::tempdir().expect("tmp");
    copy_dir(&dir.path().join("hybrid-rocksdb"), backup.path());
    drop(committed_more(dir.path(), 2));
    fs::remove_dir_all(dir.path().join("hybrid-rocksdb")).expect("rm");
    copy_dir(backup.path(), &dir.path().join("hybrid-rocksdb"));
    match open(dir.path(), None) {
        Err(HybridError::FollowerBehind { primary, follower }) => {
            assert_eq!((primary, follower), (2, 1))
        }
        other => panic!("expected FollowerBehind, got {other:?}"),
    }
}

fn committed_more(dir: &Path, i: u64) -> Db {
    let db = open(dir, None).expect("open");
    let tx = db.begin_rw().expect("rw");
    write_commit(&tx, i);
    tx.commit().expect("commit");
    db
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for e in fs::read_dir(from).expect("read dir") {
        let e = e.expect("entry");
        fs::copy(e.path(), to.join(e.file_name())).expect("copy");
    }
}

#[test]
fn rows_in_the_other_engine_refuse_open_and_change_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    {
        // A v1-style datadir: history in MDBX.
        let (mdbx, _rocks) = engines(dir.path());
        let tx = mdbx.begin_rw().expect("rw");
        tx.put(Tables::AccountsHistory, &[1; 28], &[0; 8])
            .expect("put");
        tx.commit().expect("commit");
    }
    match open(dir.path(), None) {
        Err(
            e @ HybridError::RowsInOtherEngine {
                table: Tables::AccountsHistory,
                routed: EngineKind::RocksDb,
                found: EngineKind::Mdbx,
            },
        ) => {
            let msg = e.to_string();
            assert!(
                msg.contains("AccountsHistory") && msg.contains("reth-hybrid migrate"),
                "{msg}"
            );
        }
        other => panic!("expected RowsInOtherEngine, got {other:?}"),
    }
    // Nothing recorded: no layout, the rows where they were.
    let (mdbx, _rocks) = engines(dir.path());
    let tx = mdbx.begin_ro().expect("ro");
    assert!(
        reth_hybrid_hybrid::control::get_bytes(&tx, reth_hybrid_hybrid::layout::LAYOUT_KEY)
            .expect("get")
            .is_none()
    );
    assert_eq!(tx.entries(Tables::AccountsHistory).expect("entries"), 1);
}

#[test]
fn layout_is_persisted_and_a_different_one_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut custom = Layout::default();
    custom.set(Tables::Receipts, EngineKind::RocksDb);
    drop(open(dir.path(), Some(custom.clone())).expect("first open records the layout"));
    let db = open(dir.path(), None).expect("reopen");
    assert_eq!(db.layout(), &custom);
    drop(db);
    match open(dir.path(), Some(Layout::default())) {
        Err(
            e @ HybridError::LayoutMismatch {
                table: Tables::Receipts,
                ..
            },
        ) => {
            assert!(e.to_string().contains("reth-hybrid migrate"), "{e}")
        }
        other => panic!("expected LayoutMismatch, got {other:?}"),
    }
}

#[test]
fn mdbx_only_commits_do_not_touch_rocksdb() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = committed(dir.path(), 1);
    let tx = db.begin_rw().expect("rw");
    tx.put(Tables::CanonicalHeaders, &9u64.to_be_bytes(), &[9; 32])
        .expect("put");
    tx.commit().expect("commit");
    assert_eq!(db.last_seq(), 2);
    let ftx = db.follower().begin_ro().expect("ro");
    assert_eq!(
        get_u64(&ftx, SEQ_KEY).expect("seq"),
        1,
        "RocksDB keeps the last commit that wrote to it"
    );
    drop((ftx, db));
    assert_eq!(
        open(dir.path(), None).expect("reopen").recovered().action,
        RecoveryAction::Clean
    );
}

#[test]
fn reth_storage_v2_datadir_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    {
        let (mdbx, _rocks) = engines(dir.path());
        let tx = mdbx.begin_rw().expect("rw");
        let settings =
            reth_hybrid_api::models::StorageSettings { storage_v2: true }.to_json_bytes();
        reth_hybrid_hybrid::control::put_bytes(
            &tx,
            reth_hybrid_api::models::STORAGE_SETTINGS_KEY,
            settings,
        )
        .expect("put");
        tx.commit().expect("commit");
    }
    match open(dir.path(), None) {
        Err(e @ HybridError::UpstreamStorageV2) => {
            assert!(e.to_string().contains("--storage.v2=false"), "{e}")
        }
        other => panic!("expected UpstreamStorageV2, got {other:?}"),
    }
}
