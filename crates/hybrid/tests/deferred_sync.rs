//! Deferred RocksDB syncs (`FollowerSync::Deferred`): a commit's RocksDB writes ride in MDBX's
//! commit as a pending row and reach RocksDB without an fsync. A process crash keeps them (the
//! crash suites kill at every point); these tests stand for power loss, which takes RocksDB's
//! unsynced WAL tail: RocksDB is put back to a checkpoint taken at its last sync, which is the
//! state point-in-time WAL recovery opens after such a loss.

mod common;

use common::{Db, deferred, open_with, visible, write_commit};
use reth_hybrid_api::{
    Tables,
    raw::{RawEngine, RawReplay, RawTx, RawTxMut},
};
use reth_hybrid_hybrid::{
    DEFAULT_MAX_DEFERRED_BYTES, FollowerSync, HybridError, INTENT_LOG_FILE, RecoveryAction,
    control::{SEQ_KEY, get_u64, pending_key, pending_rows, pending_seqs},
    fault::{self, Fault, FaultPoint},
    intent_log::{self, Decoded},
};
use reth_hybrid_mdbx::{MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::path::{Path, PathBuf};

fn commit(db: &Db, i: u64) {
    let tx = db.begin_rw().expect("rw");
    write_commit(&tx, i);
    tx.commit().expect("commit");
}

/// The pending rows MDBX holds now.
fn pending(db: &Db) -> Vec<u64> {
    let tx = db.primary().begin_ro().expect("ro");
    pending_seqs(&tx).expect("pending rows")
}

/// RocksDB's durable state now, as a checkpoint beside the datadir.
fn checkpoint(db: &Db, dir: &Path) -> PathBuf {
    let path = dir.join("rocksdb-at-last-sync");
    rocksdb::checkpoint::Checkpoint::new(db.follower().db())
        .expect("checkpoint")
        .create_checkpoint(&path)
        .expect("create checkpoint");
    path
}

/// Power loss: RocksDB opens at `image`, what it had at its last WAL sync.
fn lose_unsynced_rocksdb(datadir: &Path, image: &Path) {
    let rocks = datadir.join("hybrid-rocksdb");
    std::fs::remove_dir_all(&rocks).expect("remove rocksdb");
    std::fs::rename(image, &rocks).expect("restore the image");
}

fn rocksdb_seq(datadir: &Path) -> u64 {
    let rocks = RocksEngine::open_read_only(&datadir.join("hybrid-rocksdb")).expect("rocksdb");
    let tx = rocks.begin_ro().expect("ro");
    get_u64(&tx, SEQ_KEY).expect("seq")
}

/// Commits 1..=3 with a sync at 3 (the checkpoint), then 4 and 5 unsynced.
fn synced_at_3_then_two_more(data: &Path, scratch: &Path) -> PathBuf {
    let db = open_with(data, None, deferred(3)).expect("open");
    for i in 1..=3 {
        commit(&db, i);
    }
    let image = checkpoint(&db, scratch);
    commit(&db, 4);
    commit(&db, 5);
    // Commit 4 deleted the rows RocksDB's sync at commit 3 made needless.
    assert_eq!(pending(&db), vec![4, 5]);
    image
}

/// One bit of pending row `seq` flips on disk (MDBX opened on its own, the hybrid closed);
/// returns the row as it was.
fn damage_pending_row(datadir: &Path, seq: u64) -> Vec<u8> {
    let key = pending_key(seq);
    let mdbx = MdbxEngine::open(datadir, MdbxOptions::create()).expect("mdbx");
    let tx = mdbx.begin_rw().expect("rw");
    let row = tx
        .get(Tables::Metadata, key.as_bytes())
        .expect("get")
        .unwrap_or_else(|| panic!("row {seq}"));
    let mut damaged = row.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x10;
    tx.put(Tables::Metadata, key.as_bytes(), &damaged)
        .expect("put");
    tx.commit().expect("commit");
    row
}

#[test]
fn commits_rocksdb_lost_are_replayed_from_mdbx() {
    let (data, scratch) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let image = synced_at_3_then_two_more(data.path(), scratch.path());
    lose_unsynced_rocksdb(data.path(), &image);
    assert_eq!(rocksdb_seq(data.path()), 3, "RocksDB lost commits 4 and 5");

    let db = open_with(data.path(), None, deferred(3)).expect("recovers");
    assert_eq!(
        db.recovered().action,
        RecoveryAction::ReplayedDeferred {
            commits: 2,
            last: 5
        }
    );
    let (blocks, txs) = visible(&db);
    assert_eq!(blocks, (1..=5).collect(), "MDBX");
    assert_eq!(txs, (1..=5).collect(), "RocksDB has every commit again");
    // The replay was synced: the next commit deletes the rows it came from.
    commit(&db, 6);
    assert_eq!(pending(&db), vec![6]);
    drop(db);
    let db = open_with(data.path(), None, deferred(3)).expect("reopen");
    assert_eq!(db.recovered().action, RecoveryAction::Clean);
    assert_eq!(visible(&db).1, (1..=6).collect());
}

#[test]
fn a_damaged_row_a_lost_commit_needs_is_refused_and_nothing_changes() {
    let (data, scratch) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let image = synced_at_3_then_two_more(data.path(), scratch.path());
    lose_unsynced_rocksdb(data.path(), &image);
    // One bit of commit 5's row flips on disk.
    let key = pending_key(5);
    let original = damage_pending_row(data.path(), 5);

    match open_with(data.path(), None, deferred(3)) {
        Err(e @ HybridError::PendingRowDamaged { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&key)
                    && msg.contains("checksum")
                    && msg.contains("Nothing was changed"),
                "{msg}"
            );
        }
        other => panic!("expected PendingRowDamaged, got {other:?}"),
    }
    assert_eq!(
        rocksdb_seq(data.path()),
        3,
        "RocksDB untouched (not even commit 4)"
    );

    // With the row restored (from a backup) the open replays both commits.
    {
        let mdbx = MdbxEngine::open(data.path(), MdbxOptions::create()).expect("mdbx");
        let tx = mdbx.begin_rw().expect("rw");
        tx.put(Tables::Metadata, key.as_bytes(), &original)
            .expect("put");
        tx.commit().expect("commit");
    }
    let db = open_with(data.path(), None, deferred(3)).expect("recovers");
    assert_eq!(visible(&db).1, (1..=5).collect());
}

#[test]
fn rocksdb_behind_the_oldest_pending_row_is_refused() {
    let (data, scratch) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let image = {
        let db = open_with(data.path(), None, deferred(3)).expect("open");
        commit(&db, 1);
        let image = checkpoint(&db, scratch.path());
        for i in 2..=5 {
            commit(&db, i);
        }
        // Rows 1-3 are gone (synced at 3, deleted by 4): nothing can bring RocksDB from 1 to 4.
        assert_eq!(pending(&db), vec![4, 5]);
        image
    };
    lose_unsynced_rocksdb(data.path(), &image);
    match open_with(data.path(), None, deferred(3)) {
        Err(HybridError::FollowerBehind {
            primary: 5,
            follower: 1,
        }) => {}
        other => panic!("expected FollowerBehind, got {other:?}"),
    }
    assert_eq!(rocksdb_seq(data.path()), 1, "nothing replayed");
}

#[test]
fn pending_rows_stay_bounded_by_the_sync_interval() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = open_with(dir.path(), None, deferred(4)).expect("open");
    let mut most = 0;
    for i in 1..=40 {
        commit(&db, i);
        most = most.max(pending(&db).len());
    }
    // At most the commits since the last sync plus the synced ones the next commit deletes.
    assert!(most <= 5, "{most} pending rows");
    assert!(
        most >= 4,
        "the rows were kept until RocksDB synced ({most})"
    );
    drop(db);
    let db = open_with(dir.path(), None, deferred(4)).expect("reopen");
    assert_eq!(db.recovered().action, RecoveryAction::Clean);
    commit(&db, 41);
    assert_eq!(
        pending(&db),
        vec![41],
        "the first commit after the open retires the rest"
    );
}

/// A commit larger than a row may be takes the intent log; recovery follows one chain through
/// both: MDBX's rows, then the intent log.
#[test]
fn a_large_commit_takes_the_intent_log_and_recovery_follows_the_chain() {
    let (data, scratch) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let small_rows = FollowerSync::Deferred {
        max_commits: 100,
        max_delay: std::time::Duration::from_secs(3600),
        max_row_bytes: 400,
    };
    let image = {
        let db = open_with(data.path(), None, small_rows).expect("open");
        let image = checkpoint(&db, scratch.path());
        commit(&db, 1);
        commit(&db, 2);
        // Commit 3 is larger than a row may be, and power fails after MDBX decided it and
        // before RocksDB applied it (here: RocksDB's apply fails, and RocksDB then goes back to
        // its state before commit 1).
        fault::arm(data.path(), FaultPoint::FollowerApply, Fault::Eio);
        let tx = db.begin_rw().expect("rw");
        write_commit(&tx, 3);
        for k in 0..20u64 {
            let mut key = [7u8; 28];
            key[20..].copy_from_slice(&k.to_be_bytes());
            tx.put(Tables::AccountsHistory, &key, &[1; 40])
                .expect("put");
        }
        assert!(matches!(
            tx.commit().map_err(|e| e.to_string()),
            Err(msg) if msg.contains("RocksDB could not apply commit 3")
        ));
        assert_eq!(pending(&db), vec![1, 2], "commit 3 left no row");
        image
    };
    assert!(
        std::fs::metadata(data.path().join(INTENT_LOG_FILE))
            .expect("intent log")
            .len()
            > 400,
        "commit 3 is in the intent log"
    );
    lose_unsynced_rocksdb(data.path(), &image);
    assert_eq!(rocksdb_seq(data.path()), 0);

    let db = open_with(data.path(), None, small_rows).expect("recovers");
    assert_eq!(db.recovered().action, RecoveryAction::Replayed { seq: 3 });
    let (blocks, txs) = visible(&db);
    assert_eq!(blocks, (1..=3).collect());
    assert_eq!(txs, (1..=3).collect());
    assert_eq!(rocksdb_seq_of(&db), 3);
    let tx = db.follower().begin_ro().expect("ro");
    assert_eq!(tx.entries(Tables::AccountsHistory).expect("entries"), 20);
}

/// The default defers a small commit (a pending row, no intent log) and sends a commit of more
/// than `DEFAULT_MAX_DEFERRED_BYTES` of RocksDB writes, a reth persistence commit's size, through
/// the intent log and a synced write (no pending row, RocksDB durable at once).
#[test]
fn the_default_defers_small_commits_and_logs_large_ones() {
    let data = tempfile::tempdir().expect("tmp");
    let db = open_with(data.path(), None, FollowerSync::default()).expect("open");
    let intent_len = || std::fs::metadata(data.path().join(INTENT_LOG_FILE)).map_or(0, |m| m.len());
    commit(&db, 1);
    assert_eq!(pending(&db), vec![1], "a small commit rides in MDBX");
    assert_eq!(intent_len(), 0, "and writes no intent");

    let tx = db.begin_rw().expect("rw");
    write_commit(&tx, 2);
    let value = [3u8; 100];
    let rows = DEFAULT_MAX_DEFERRED_BYTES / value.len() + 1;
    for k in 0..rows as u64 {
        let mut key = [9u8; 28];
        key[20..].copy_from_slice(&k.to_be_bytes());
        tx.put(Tables::AccountsHistory, &key, &value).expect("put");
    }
    tx.commit().expect("commit");
    assert_eq!(
        pending(&db),
        vec![1],
        "a commit over the bound leaves no pending row"
    );
    // The large commit's synced write made RocksDB durable through commit 2, so commit 1's row
    // is no longer needed: the next commit deletes it.
    commit(&db, 3);
    assert_eq!(pending(&db), vec![3]);
    let (blocks, _) = visible(&db);
    assert_eq!(blocks, (1..=3).collect());
    let tx = db.follower().begin_ro().expect("ro");
    assert_eq!(tx.entries(Tables::AccountsHistory).expect("entries"), rows);
}

fn rocksdb_seq_of(db: &Db) -> u64 {
    let tx = db.follower().begin_ro().expect("ro");
    get_u64(&tx, SEQ_KEY).expect("seq")
}

/// Power loss right after RocksDB switched WAL files can keep the newer file and lose the older
/// one's unsynced tail: RocksDB then opens holding commit 6 but not 4 and 5, a hole its
/// point-in-time recovery does not see. The applied ring finds it, and the commits from the
/// hole on are replayed.
#[test]
fn a_hole_in_rocksdbs_wal_is_found_and_replayed() {
    let (data, scratch) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let (image, row_6) = {
        let db = open_with(data.path(), None, deferred(10)).expect("open");
        for i in 1..=3 {
            commit(&db, i);
        }
        db.follower().sync_applied().expect("sync");
        let image = checkpoint(&db, scratch.path());
        for i in 4..=6 {
            commit(&db, i);
        }
        let tx = db.primary().begin_ro().expect("ro");
        let rows = pending_rows(&tx).expect("rows");
        let row_6 = rows
            .iter()
            .find(|r| r.seq == Some(6))
            .expect("row 6")
            .record
            .clone();
        (image, row_6)
    };
    // The image holds commits 1-3; commit 6's batch reaches it, 4 and 5 do not.
    {
        let Decoded::Record(record) = intent_log::decode(&row_6) else {
            panic!("row 6 decodes")
        };
        let rocks = RocksEngine::open(&image, &RocksOptions::default()).expect("image");
        rocks.apply_exported(&record.payload).expect("apply 6");
    }
    lose_unsynced_rocksdb(data.path(), &image);
    assert_eq!(rocksdb_seq(data.path()), 6, "RocksDB claims commit 6");

    let db = open_with(data.path(), None, deferred(10)).expect("recovers");
    assert_eq!(
        db.recovered().action,
        RecoveryAction::ReplayedDeferred {
            commits: 3,
            last: 6
        }
    );
    let (blocks, txs) = visible(&db);
    assert_eq!(blocks, (1..=6).collect());
    assert_eq!(
        txs,
        (1..=6).collect(),
        "commits 4 and 5 are back in RocksDB"
    );
}

/// Commit `i`'s MDBX row only (a commit that leaves RocksDB alone, as most of reth's are not but
/// some are): the sequence moves on, RocksDB's applied ring does not.
fn mdbx_only_commit(db: &Db, i: u64) {
    let tx = db.begin_rw().expect("rw");
    tx.put(Tables::HeaderNumbers, &common::hash(i), &i.to_be_bytes())
        .expect("mdbx row");
    tx.commit().expect("commit");
}

/// The record of pending row `seq`, as MDBX holds it now.
fn pending_record(db: &Db, seq: u64) -> Vec<u8> {
    let tx = db.primary().begin_ro().expect("ro");
    pending_rows(&tx)
        .expect("rows")
        .into_iter()
        .find(|r| r.seq == Some(seq))
        .unwrap_or_else(|| panic!("pending row {seq}"))
        .record
}

fn apply_record(rocks: &RocksEngine, record: &[u8]) {
    let Decoded::Record(record) = intent_log::decode(record) else {
        panic!("the row decodes")
    };
    rocks.apply_exported(&record.payload).expect("apply");
}

/// The applied ring has 1,024 slots, indexed by sequence number. 1,100 commits that write only
/// to MDBX between two deferred commits once put them ~1,100 sequence numbers apart with no sync
/// between (the sync interval counted deferred commits only): past the ring's reach, so a power
/// loss that kept the later commit's WAL and lost the earlier one's left a hole recovery did not
/// look for, and the next commit deleted the lost commit's row. Now a sync comes before the
/// distance reaches half the ring, so every commit a power loss can take is within the ring.
///
/// Power loss is modelled by its rule: RocksDB keeps what it synced (the commits whose pending
/// rows MDBX has retired) and may keep any later commit while losing an earlier one (the hole);
/// here it keeps the newest commit and loses every other unsynced one.
#[test]
fn mdbx_only_commits_cannot_carry_a_lost_commit_past_the_applied_ring() {
    let (data, scratch) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let (image, kept, newest) = {
        let db = open_with(data.path(), None, deferred(10)).expect("open");
        for i in 1..=3 {
            commit(&db, i);
        }
        db.follower().sync_applied().expect("sync");
        let image = checkpoint(&db, scratch.path());
        commit(&db, 4);
        let row_4 = pending_record(&db, 4);
        for i in 0..1_100 {
            mdbx_only_commit(&db, i);
        }
        commit(&db, 5);
        let newest = db.last_seq();
        assert_eq!(newest, 4 + 1_100 + 1);
        let rows = pending(&db);
        assert!(
            !rows.contains(&4),
            "commit 4 was synced before the sequence moved half the ring past it (rows {rows:?})"
        );
        // Synced commits survive the power loss.
        let kept: Vec<Vec<u8>> = [(4, row_4)]
            .into_iter()
            .filter(|(seq, _)| !rows.contains(seq))
            .map(|(_, row)| row)
            .collect();
        (image, kept, pending_record(&db, newest))
    };
    {
        let rocks = RocksEngine::open(&image, &RocksOptions::default()).expect("image");
        for row in kept.iter().chain([&newest]) {
            apply_record(&rocks, row);
        }
    }
    lose_unsynced_rocksdb(data.path(), &image);

    let db = open_with(data.path(), None, deferred(10)).expect("recovers");
    let (blocks, txs) = visible(&db);
    assert_eq!(blocks, (1..=5).collect());
    assert_eq!(txs, (1..=5).collect(), "no RocksDB commit was lost");
}

/// A node between bursts of blocks commits nothing: its last deferred commits are synced by the
/// handle's idle sync within about the delay, not at the next commit or close.
#[test]
fn an_idle_handle_syncs_its_deferred_commits() {
    let dir = tempfile::tempdir().expect("tmp");
    let sync = FollowerSync::Deferred {
        max_commits: 64,
        max_delay: std::time::Duration::from_millis(100),
        max_row_bytes: 16 << 20,
    };
    let db = open_with(dir.path(), None, sync).expect("open");
    commit(&db, 1);
    commit(&db, 2);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while db.unsynced_commits() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "RocksDB's WAL was not synced while the handle sat idle ({} commits unsynced)",
            db.unsynced_commits()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The sync made rows 1 and 2 needless: the next commit deletes them.
    commit(&db, 3);
    assert_eq!(pending(&db), vec![3]);
}

/// A damaged pending row at or below RocksDB's sequence whose ring slot does not show its
/// commit is the only copy of a lost commit's writes: refused, not skipped (skipping it once
/// made recovery replay the hole from the next row on and lose this commit silently).
#[test]
fn a_damaged_row_inside_a_hole_is_refused_and_nothing_changes() {
    let (data, scratch) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let image = {
        let db = open_with(data.path(), None, deferred(10)).expect("open");
        for i in 1..=3 {
            commit(&db, i);
        }
        db.follower().sync_applied().expect("sync");
        let image = checkpoint(&db, scratch.path());
        for i in 4..=6 {
            commit(&db, i);
        }
        let row_6 = pending_record(&db, 6);
        let rocks = RocksEngine::open(&image, &RocksOptions::default()).expect("image");
        apply_record(&rocks, &row_6);
        image
    };
    lose_unsynced_rocksdb(data.path(), &image);
    let key = pending_key(4);
    damage_pending_row(data.path(), 4);
    match open_with(data.path(), None, deferred(10)) {
        Err(e @ HybridError::PendingRowDamaged { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&key) && msg.contains("Nothing was changed"),
                "{msg}"
            );
        }
        other => panic!("expected PendingRowDamaged for row 4, got {other:?}"),
    }
    assert_eq!(rocksdb_seq(data.path()), 6, "RocksDB untouched");
}

/// A row under the pending prefix whose key names no sequence cannot be a commit recovery
/// needs (it would have refused the gap): the first commit after the open deletes it.
#[test]
fn a_pending_row_with_an_unreadable_key_is_deleted_by_the_next_commit() {
    let dir = tempfile::tempdir().expect("tmp");
    drop(open_with(dir.path(), None, deferred(10)).expect("create"));
    let junk = format!(
        "{}not-a-sequence",
        reth_hybrid_hybrid::control::PENDING_KEY_PREFIX
    );
    {
        let mdbx = MdbxEngine::open(dir.path(), MdbxOptions::create()).expect("mdbx");
        let tx = mdbx.begin_rw().expect("rw");
        reth_hybrid_hybrid::control::put_bytes(&tx, &junk, vec![1, 2, 3]).expect("put");
        tx.commit().expect("commit");
    }
    let db = open_with(dir.path(), None, deferred(10)).expect("opens");
    commit(&db, 1);
    let tx = db.primary().begin_ro().expect("ro");
    let keys: Vec<String> = pending_rows(&tx)
        .expect("rows")
        .into_iter()
        .map(|r| r.key)
        .collect();
    assert!(
        !keys.contains(&junk),
        "the unreadable row is gone: {keys:?}"
    );
    assert_eq!(keys, vec![pending_key(1)]);
}
