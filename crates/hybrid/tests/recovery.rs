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
    let frozen = RocksEngine::freeze(ftx);
    let payload = RocksEngine::export_writes(&frozen).expect("export");
    drop(frozen);
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
    })
    .expect("frames");
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
    })
    .expect("frames");
    full[40] ^= 0xff;
    fs::write(dir.path().join(INTENT_LOG_FILE), &full).expect("write corrupt");
    match open(dir.path(), None) {
        Err(e @ HybridError::CorruptIntentNotNeeded { seq: 1, .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains(INTENT_LOG_FILE) && msg.contains("move the file aside"),
                "{msg}"
            )
        }
        other => panic!("expected CorruptIntentNotNeeded, got {other:?}"),
    }
    assert!(
        fs::read(dir.path().join(INTENT_LOG_FILE)).expect("log") == full,
        "the log is kept for inspection"
    );
}

/// The fields of an intent record, as byte ranges of its encoding (`payload_len` bytes of payload).
#[derive(Debug, Clone, Copy)]
enum Field {
    Length,
    Seq,
    PrevFollowerSeq,
    Payload,
    Crc,
    Magic,
}

impl Field {
    fn range(self, payload_len: usize) -> std::ops::Range<usize> {
        let crc = 20 + payload_len;
        match self {
            Field::Length => 0..4,
            Field::Seq => 4..12,
            Field::PrevFollowerSeq => 12..20,
            Field::Payload => 20..crc,
            Field::Crc => crc..crc + 4,
            Field::Magic => crc + 4..crc + 12,
        }
    }
}

/// A datadir whose commit 2 MDBX decided and RocksDB never applied: its intent record is the
/// only copy of RocksDB's writes. Returns the record's bytes and its payload length.
fn decided_not_applied(dir: &Path) -> (Vec<u8>, usize) {
    drop(committed(dir, 1));
    half_commit(dir, 2, true, false);
    let bytes = fs::read(dir.join(INTENT_LOG_FILE)).expect("log");
    let payload_len = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    assert_eq!(bytes.len(), 20 + payload_len + 12, "one whole record");
    (bytes, payload_len)
}

/// Damages the decided record with `damage`, then requires: the open is refused with
/// `DecidedIntentDamaged` naming the file, both sequences and the way out; the log is
/// byte-identical afterwards (and after a second attempt); with the original bytes back, the
/// next open replays commit 2 into RocksDB, so the refusal changed nothing in either engine.
fn decided_record_damage_is_refused(damage: impl FnOnce(&mut Vec<u8>, usize)) {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join(INTENT_LOG_FILE);
    let (original, payload_len) = decided_not_applied(dir.path());
    let mut damaged = original.clone();
    damage(&mut damaged, payload_len);
    assert_ne!(damaged, original, "the test damaged nothing");
    fs::write(&log, &damaged).expect("write damaged");
    for attempt in 1..=2 {
        match open(dir.path(), None) {
            Err(
                e @ HybridError::DecidedIntentDamaged {
                    decided: 2,
                    applied: 1,
                    ..
                },
            ) => {
                let msg = e.to_string();
                for needle in [
                    log.display().to_string().as_str(),
                    "commit 2, which MDBX decided",
                    "RocksDB holds commit 1",
                    "Nothing was changed",
                    "Do not delete",
                    "from one backup",
                ] {
                    assert!(
                        msg.contains(needle),
                        "attempt {attempt}: {needle:?} missing: {msg}"
                    );
                }
            }
            other => panic!("attempt {attempt}: expected DecidedIntentDamaged, got {other:?}"),
        }
        assert!(
            fs::read(&log).expect("log") == damaged,
            "attempt {attempt}: the intent log changed"
        );
    }
    fs::write(&log, &original).expect("restore the record");
    let db = open(dir.path(), None).expect("the undamaged record recovers");
    assert_eq!(db.recovered().action, RecoveryAction::Replayed { seq: 2 });
    let (blocks, txs) = visible(&db);
    assert_eq!(blocks, txs);
    assert_eq!(blocks.into_iter().collect::<Vec<_>>(), vec![1, 2]);
}

fn flip(field: Field) -> impl FnOnce(&mut Vec<u8>, usize) {
    move |bytes, payload_len| {
        let at = field.range(payload_len).start;
        bytes[at] ^= 0x01;
    }
}

#[test]
fn decided_intent_with_damaged_length_is_refused_and_kept() {
    decided_record_damage_is_refused(flip(Field::Length));
}

#[test]
fn decided_intent_with_damaged_seq_is_refused_and_kept() {
    decided_record_damage_is_refused(flip(Field::Seq));
}

#[test]
fn decided_intent_with_damaged_prev_follower_seq_is_refused_and_kept() {
    decided_record_damage_is_refused(flip(Field::PrevFollowerSeq));
}

#[test]
fn decided_intent_with_damaged_payload_is_refused_and_kept() {
    decided_record_damage_is_refused(|bytes, payload_len| {
        let mid = Field::Payload.range(payload_len).start + payload_len / 2;
        bytes[mid] ^= 0xff;
    });
}

#[test]
fn decided_intent_with_damaged_crc_is_refused_and_kept() {
    decided_record_damage_is_refused(flip(Field::Crc));
}

#[test]
fn decided_intent_with_damaged_magic_is_refused_and_kept() {
    decided_record_damage_is_refused(|bytes, payload_len| {
        // A zeroed end, as a lost last sector leaves it.
        bytes[Field::Magic.range(payload_len)].fill(0);
    });
}

#[test]
fn decided_intent_cut_short_is_refused_and_kept() {
    decided_record_damage_is_refused(|bytes, _| bytes.truncate(bytes.len() - 3));
}

#[test]
fn decided_intent_with_trailing_bytes_is_refused_and_kept() {
    decided_record_damage_is_refused(|bytes, _| bytes.extend_from_slice(&[0; 16]));
}

/// The legitimate torn tail: MDBX never decided commit 2, so wherever its record was cut (or its
/// end zeroed), the record is dropped and the datadir holds commit 1 in both engines.
#[test]
fn torn_tail_of_undecided_intent_is_dropped_wherever_it_is_cut() {
    let probe = tempfile::tempdir().expect("tmp");
    drop(committed(probe.path(), 1));
    half_commit(probe.path(), 2, false, false);
    let full = fs::read(probe.path().join(INTENT_LOG_FILE)).expect("log");
    let payload_len = full.len() - 32;
    drop(probe);
    let cuts: Vec<(&str, Vec<u8>)> = vec![
        ("inside the length", full[..2].to_vec()),
        (
            "inside seq",
            full[..Field::Seq.range(payload_len).start + 3].to_vec(),
        ),
        (
            "inside the payload",
            full[..Field::Payload.range(payload_len).start + payload_len / 2].to_vec(),
        ),
        (
            "inside the crc",
            full[..Field::Crc.range(payload_len).start + 2].to_vec(),
        ),
        ("inside the magic", full[..full.len() - 1].to_vec()),
        ("magic never written", {
            let mut b = full.clone();
            b[Field::Magic.range(payload_len)].fill(0);
            b
        }),
    ];
    for (case, bytes) in cuts {
        let dir = tempfile::tempdir().expect("tmp");
        drop(committed(dir.path(), 1));
        half_commit(dir.path(), 2, false, false);
        let log = dir.path().join(INTENT_LOG_FILE);
        assert_eq!(fs::read(&log).expect("log"), full, "{case}: same record");
        fs::write(&log, &bytes).expect("write torn");
        let db = open(dir.path(), None).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(
            db.recovered().action,
            RecoveryAction::DroppedTornTail {
                bytes: bytes.len() as u64
            },
            "{case}"
        );
        let (blocks, txs) = visible(&db);
        assert_eq!(blocks, txs, "{case}");
        assert_eq!(blocks.into_iter().collect::<Vec<_>>(), vec![1], "{case}");
        assert_eq!(fs::metadata(&log).expect("log").len(), 0, "{case}: dropped");
        drop(db);
        assert_eq!(
            open(dir.path(), None).expect("reopen").recovered().action,
            RecoveryAction::Clean,
            "{case}"
        );
    }
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
