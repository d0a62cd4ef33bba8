//! The RocksDB engine's own promises: reth's column family names, durability across reopen,
//! the datadir location, and byte-identical rows.

use reth_hybrid_api::{
    DbCursorRO, DbDupCursorRO, DbTx, DbTxMut, Tables,
    models::{Address, B256, IntegerList, ShardedKey, StorageEntry, U256},
    raw::{RawEngine, RawTx, RawTxMut},
    tables::{AccountsHistory, HashedStorages},
    typed::{Database, TypedDatabase},
};
use reth_hybrid_rocksdb::{HYBRID_ROCKSDB_DIR, RocksEngine, RocksOptions};

#[test]
fn every_table_is_a_column_family_named_like_the_table() {
    let dir = tempfile::tempdir().expect("tmp");
    drop(RocksEngine::open_in_datadir(dir.path()).expect("open"));
    let path = dir.path().join(HYBRID_ROCKSDB_DIR);
    assert_eq!(
        HYBRID_ROCKSDB_DIR, "hybrid-rocksdb",
        "never reth's own <datadir>/rocksdb"
    );
    let mut cfs =
        rocksdb::DB::list_cf(&rocksdb::Options::default(), &path).expect("list column families");
    cfs.sort();
    let mut expected: Vec<String> = Tables::ALL.iter().map(|t| t.name().to_string()).collect();
    expected.push("default".into());
    expected.sort();
    assert_eq!(cfs, expected);
}

#[test]
fn committed_rows_survive_reopen_with_identical_bytes() {
    let dir = tempfile::tempdir().expect("tmp");
    let addr = Address::repeat_byte(0x55);
    {
        let db = TypedDatabase::new(RocksEngine::open_in_datadir(dir.path()).expect("open"));
        db.update(|tx| {
            tx.put::<AccountsHistory>(
                ShardedKey::last(addr),
                IntegerList::new([1, 2, 3]).expect("sorted"),
            )?;
            tx.put::<HashedStorages>(
                B256::repeat_byte(1),
                StorageEntry {
                    key: B256::repeat_byte(2),
                    value: U256::from(5),
                },
            )?;
            tx.put::<HashedStorages>(
                B256::repeat_byte(1),
                StorageEntry {
                    key: B256::repeat_byte(3),
                    value: U256::from(6),
                },
            )
        })
        .expect("update")
        .expect("writes");
    }
    let engine = RocksEngine::open_in_datadir(dir.path()).expect("reopen");
    // Raw bytes in RocksDB are reth's bytes: ShardedKey = address ++ u64::MAX BE, and the
    // roaring list as in MDBX.
    let raw = engine
        .db()
        .get_cf(
            engine.column_family(Tables::AccountsHistory),
            [[0x55u8; 20].as_slice(), &[0xff; 8]].concat(),
        )
        .expect("get")
        .expect("row present");
    assert_eq!(
        hex::encode(raw),
        "010000000000000000000000".to_string()
            + "3a30000001000000000002001000000001000200"
            + "0300"
    );
    // Dupsort rows are key ++ value with an empty RocksDB value.
    let dup_key = [vec![1u8; 32], vec![2u8; 32], vec![5u8]].concat();
    let dup = engine
        .db()
        .get_cf(engine.column_family(Tables::HashedStorages), &dup_key)
        .expect("get");
    assert_eq!(dup, Some(Vec::new()));
    let db = TypedDatabase::new(engine);
    let tx = db.tx().expect("ro");
    let mut c = tx.cursor_dup_read::<HashedStorages>().expect("cursor");
    let values: Vec<u64> = c
        .walk_dup(Some(B256::repeat_byte(1)), None)
        .expect("walk")
        .map(|r| r.expect("row").1.value.to::<u64>())
        .collect();
    assert_eq!(values, vec![5, 6]);
    assert_eq!(tx.entries::<HashedStorages>().expect("entries"), 2);
}

#[test]
fn uncommitted_writes_are_invisible_to_readers_and_lost_on_drop() {
    let dir = tempfile::tempdir().expect("tmp");
    let engine = RocksEngine::open(dir.path(), &RocksOptions::default()).expect("open");
    let tx = engine.begin_rw().expect("rw");
    tx.put(
        Tables::TransactionHashNumbers,
        &[7; 32],
        &[1, 0, 0, 0, 0, 0, 0, 0],
    )
    .expect("put");
    assert_eq!(
        engine
            .begin_ro()
            .expect("ro")
            .get(Tables::TransactionHashNumbers, &[7; 32])
            .expect("get"),
        None
    );
    drop(tx);
    let tx = engine
        .begin_rw()
        .expect("a dropped writer releases the lock");
    assert_eq!(
        tx.get(Tables::TransactionHashNumbers, &[7; 32])
            .expect("get"),
        None
    );
}

/// Rows served from the row cache (SST files only) must still be each snapshot's own: a reader
/// that cached a row keeps seeing its version after later commits and flushes, and a new
/// reader sees the newest, deletions included.
#[test]
fn row_cache_reads_stay_at_each_snapshot_across_flushes() {
    let dir = tempfile::tempdir().expect("tmp");
    let engine = RocksEngine::open(dir.path(), &RocksOptions::default()).expect("open");
    let table = Tables::TransactionHashNumbers;
    let commit = |value: Option<u8>| {
        let tx = engine.begin_rw().expect("rw");
        match value {
            Some(v) => tx.put(table, &[9; 32], &[v; 8]).expect("put"),
            None => tx.delete(table, &[9; 32], None).map(drop).expect("delete"),
        }
        tx.commit().expect("commit");
        engine.flush().expect("flush");
    };
    let get = |tx: &reth_hybrid_rocksdb::RocksTx| tx.get(table, &[9; 32]).expect("get");
    commit(Some(1));
    let old = engine.begin_ro().expect("ro");
    assert_eq!(get(&old), Some(vec![1; 8]));
    assert_eq!(
        get(&old),
        Some(vec![1; 8]),
        "second read: from the row cache"
    );
    commit(Some(2));
    let mid = engine.begin_ro().expect("ro");
    assert_eq!(get(&mid), Some(vec![2; 8]));
    assert_eq!(get(&old), Some(vec![1; 8]));
    commit(None);
    let new = engine.begin_ro().expect("ro");
    assert_eq!(get(&new), None);
    assert_eq!(get(&mid), Some(vec![2; 8]));
    assert_eq!(get(&old), Some(vec![1; 8]));
    let hits = engine
        .gauges()
        .into_iter()
        .find(|g| g.name == "rocksdb_row_cache_hit_ratio")
        .expect("row cache gauge");
    assert!(
        hits.value > 0.0,
        "repeated gets were served by the row cache"
    );
}

/// RocksDB refuses range deletions on a database with a row cache; clearing says so, names the
/// way out and changes nothing, and the datadir tools' options clear.
#[test]
fn clearing_a_table_needs_an_engine_without_a_row_cache() {
    let dir = tempfile::tempdir().expect("tmp");
    let table = Tables::TransactionHashNumbers;
    {
        let engine = RocksEngine::open_in_datadir(dir.path()).expect("open");
        let tx = engine.begin_rw().expect("rw");
        tx.put(table, &[3; 32], &[1; 8]).expect("put");
        tx.commit().expect("commit");
        let err = engine.clear_table(table).expect_err("refused").to_string();
        assert!(err.contains("for_bulk_tools"), "{err}");
        assert!(
            engine.table_has_rows(table).expect("scan"),
            "nothing removed"
        );
    }
    let engine = RocksEngine::open_in_datadir_for_bulk(dir.path()).expect("open for bulk");
    engine.clear_table(table).expect("clear");
    assert!(!engine.table_has_rows(table).expect("scan"));
}

#[test]
fn dupsort_keys_of_the_wrong_length_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let engine = RocksEngine::open(dir.path(), &RocksOptions::default()).expect("open");
    let tx = engine.begin_rw().expect("rw");
    let err = tx
        .put(Tables::PlainStorageState, &[1; 19], &[0; 33])
        .expect_err("19-byte address");
    assert!(
        err.to_string().contains("PlainStorageState") && err.to_string().contains("20-byte"),
        "{err}"
    );
}

#[test]
fn read_transactions_work_from_other_threads() {
    let dir = tempfile::tempdir().expect("tmp");
    let db =
        TypedDatabase::new(RocksEngine::open(dir.path(), &RocksOptions::default()).expect("open"));
    db.update(|tx| {
        tx.put::<AccountsHistory>(
            ShardedKey::new(Address::ZERO, 9),
            IntegerList::new([9]).expect("list"),
        )
    })
    .expect("update")
    .expect("put");
    let tx = db.tx().expect("ro");
    let handle = std::thread::spawn(move || {
        let mut c = tx.cursor_read::<AccountsHistory>().expect("cursor");
        c.seek(ShardedKey::new(Address::ZERO, 0))
            .expect("seek")
            .map(|(k, _)| k.highest_block_number)
    });
    assert_eq!(handle.join().expect("join"), Some(9));
}

/// A frozen write transaction (what the hybrid hands readers while a commit is made durable)
/// reads its snapshot with its writes on top, from many threads, refuses writes, and no longer
/// holds the writer lock; the engine itself is unchanged until the batch is applied.
#[test]
fn a_frozen_write_transaction_reads_its_writes_refuses_writes_and_frees_the_writer() {
    use reth_hybrid_api::raw::{RawCursor, RawCursorMut, RawReplay};
    let dir = tempfile::tempdir().expect("tmp");
    let engine = RocksEngine::open_in_datadir(dir.path()).expect("open");
    let table = Tables::TransactionHashNumbers;
    let seed = engine.begin_rw().expect("rw");
    for i in 0u8..4 {
        seed.put(table, &[i; 32], &[i]).expect("put");
    }
    seed.commit().expect("commit");

    let tx = engine.begin_rw().expect("rw");
    tx.put(table, &[9; 32], &[9]).expect("put");
    tx.delete(table, &[1; 32], None).expect("delete");
    let frozen = RocksEngine::freeze(tx);
    let payload = RocksEngine::export_writes(&frozen).expect("export");

    // The writer lock is free: a new write transaction begins (it would block forever if not).
    let (sent, received) = std::sync::mpsc::channel();
    let other = engine.clone();
    std::thread::spawn(move || {
        let rw = other.begin_rw().expect("rw");
        rw.abort();
        let _ = sent.send(());
    });
    received
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("a frozen transaction still holds the writer lock");

    fn keys(tx: &reth_hybrid_rocksdb::RocksTx) -> Vec<u8> {
        let mut c = tx.cursor(Tables::TransactionHashNumbers).expect("cursor");
        let mut out = Vec::new();
        let mut next = c.first().expect("first");
        while let Some((k, _)) = next {
            out.push(k[0]);
            next = c.next().expect("next");
        }
        out
    }
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let view = frozen.clone();
            std::thread::spawn(move || keys(&view))
        })
        .collect();
    for r in readers {
        assert_eq!(r.join().expect("reader"), vec![0, 2, 3, 9]);
    }
    // Not applied yet: a fresh snapshot still has the old rows.
    assert_eq!(keys(&engine.begin_ro().expect("ro")), vec![0, 1, 2, 3]);

    let mut c = frozen.cursor(table).expect("cursor");
    assert!(
        c.upsert(&[7; 32], &[7]).is_err(),
        "a frozen transaction must refuse writes"
    );
    assert_eq!(
        keys(&frozen),
        vec![0, 2, 3, 9],
        "the refused write left no trace"
    );

    engine.apply_exported(&payload).expect("apply");
    assert_eq!(keys(&engine.begin_ro().expect("ro")), vec![0, 2, 3, 9]);
}

/// An engine whose write transactions spill past a few KiB, so a few hundred rows exercise the
/// on-disk path.
fn spilling_engine(dir: &std::path::Path) -> RocksEngine {
    RocksEngine::open(
        &dir.join(HYBRID_ROCKSDB_DIR),
        &RocksOptions {
            block_cache_bytes: 8 << 20,
            spill_bytes: 4 << 10,
            ..RocksOptions::default()
        },
    )
    .expect("open")
}

/// Every row of `table` as `(key, value)`, walked with a cursor.
fn rows<T: RawTx>(tx: &T, table: Tables) -> Vec<(Vec<u8>, Vec<u8>)> {
    use reth_hybrid_api::raw::RawCursor;
    let mut c = tx.cursor(table).expect("cursor");
    let mut out = Vec::new();
    let mut next = c.first().expect("first");
    while let Some(row) = next {
        out.push(row);
        next = c.next().expect("next");
    }
    out
}

/// Subfolders of `<db>/spill` whose names start with `prefix`.
fn spill_entries(dir: &std::path::Path, prefix: &str) -> usize {
    std::fs::read_dir(dir.join(HYBRID_ROCKSDB_DIR).join("spill"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .count()
        })
        .unwrap_or(0)
}

/// The hash table plus a dupsort table, written past the budget in several spills: puts,
/// overwrites, deletes of committed and of spilled rows. Returns the expected rows.
type Model = std::collections::BTreeMap<(Tables, Vec<u8>, Vec<u8>), ()>;

fn write_past_budget(tx: &reth_hybrid_rocksdb::RocksTxMut, model: &mut Model) {
    let hashes = Tables::TransactionHashNumbers;
    for i in 0u32..600 {
        let key = [&i.to_be_bytes()[..], &[7u8; 28]].concat();
        tx.put(hashes, &key, &u64::from(i).to_be_bytes())
            .expect("put");
        model.retain(|(t, k, _), _| !(*t == hashes && *k == key));
        model.insert((hashes, key, u64::from(i).to_be_bytes().to_vec()), ());
    }
    // Overwrite and delete rows that are spilled by now.
    for i in (0u32..600).step_by(7) {
        let key = [&i.to_be_bytes()[..], &[7u8; 28]].concat();
        model.retain(|(t, k, _), _| !(*t == hashes && *k == key));
        if i % 2 == 0 {
            tx.put(hashes, &key, &[0xee]).expect("overwrite");
            model.insert((hashes, key, vec![0xee]), ());
        } else {
            assert!(tx.delete(hashes, &key, None).expect("delete"));
        }
    }
    // Dupsort rows: 20-byte key, several values each; remove one duplicate of each key.
    let storage = Tables::PlainStorageState;
    for a in 0u8..20 {
        for s in 0u8..5 {
            let value = [[s; 32].as_slice(), &[a, s]].concat();
            tx.put(storage, &[a; 20], &value).expect("put dup");
            model.insert((storage, vec![a; 20], value), ());
        }
        let gone = [[2u8; 32].as_slice(), &[a, 2]].concat();
        assert!(
            tx.delete(storage, &[a; 20], Some(&gone))
                .expect("delete dup")
        );
        model.remove(&(storage, vec![a; 20], gone));
    }
}

fn model_rows(model: &Model, table: Tables) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .keys()
        .filter(|(t, _, _)| *t == table)
        .map(|(_, k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Past its budget a write transaction moves its writes to disk, still reads its own writes
/// exactly (cursor walks over snapshot, spilled and in-memory rows), commits all of them, and
/// leaves no spill store behind.
#[test]
fn a_write_transaction_past_its_budget_spills_reads_its_writes_and_commits_them() {
    let dir = tempfile::tempdir().expect("tmp");
    let engine = spilling_engine(dir.path());
    let hashes = Tables::TransactionHashNumbers;
    let mut model = Model::new();
    let seed = engine.begin_rw().expect("rw");
    for i in 0u32..50 {
        // Committed rows, some of which the big transaction deletes (every 7th from 0).
        let key = [&i.to_be_bytes()[..], &[7u8; 28]].concat();
        seed.put(hashes, &key, &[1]).expect("put");
        model.insert((hashes, key, vec![1]), ());
    }
    seed.commit().expect("seed");

    let tx = engine.begin_rw().expect("rw");
    write_past_budget(&tx, &mut model);
    assert!(
        tx.has_spilled(),
        "4 KiB budget, ~100 KiB written: must spill"
    );
    assert_eq!(spill_entries(dir.path(), "tx-"), 1, "one spill store");
    for table in [hashes, Tables::PlainStorageState] {
        assert_eq!(
            rows(&tx, table),
            model_rows(&model, table),
            "{table} read back"
        );
        assert_eq!(
            tx.entries(table).expect("entries"),
            model_rows(&model, table).len()
        );
    }
    let key = [&14u32.to_be_bytes()[..], &[7u8; 28]].concat();
    assert_eq!(tx.get(hashes, &key).expect("get"), Some(vec![0xee]));
    let key = [&7u32.to_be_bytes()[..], &[7u8; 28]].concat();
    assert_eq!(
        tx.get(hashes, &key).expect("get"),
        None,
        "deleted after spilling"
    );
    tx.commit().expect("commit");

    let ro = engine.begin_ro().expect("ro");
    for table in [hashes, Tables::PlainStorageState] {
        assert_eq!(
            rows(&ro, table),
            model_rows(&model, table),
            "{table} committed"
        );
    }
    assert_eq!(spill_entries(dir.path(), "tx-"), 0, "spill store removed");
    assert_eq!(
        spill_entries(dir.path(), "commit-"),
        0,
        "commit files removed"
    );
}

/// A spilled commit exports a manifest of SST files, not its rows: the payload stays small,
/// frozen readers see the writes, applying twice gives the same state (a replay after a crash
/// part way through ingestion), a missing file is refused with its path and changes nothing, and
/// `discard_exports` removes the files.
#[test]
fn a_spilled_commit_exports_files_applies_idempotently_and_refuses_missing_files() {
    use reth_hybrid_api::raw::RawReplay;
    let dir = tempfile::tempdir().expect("tmp");
    let engine = spilling_engine(dir.path());
    let mut model = Model::new();
    let tx = engine.begin_rw().expect("rw");
    write_past_budget(&tx, &mut model);
    let frozen = RocksEngine::freeze(tx);
    let payload = RocksEngine::export_writes(&frozen).expect("export");
    assert!(
        payload.len() < 1024,
        "the payload names files ({} bytes), it does not carry ~700 rows",
        payload.len()
    );
    assert_eq!(spill_entries(dir.path(), "commit-"), 1);
    for table in [Tables::TransactionHashNumbers, Tables::PlainStorageState] {
        assert_eq!(
            rows(&frozen, table),
            model_rows(&model, table),
            "frozen {table}"
        );
        assert!(
            rows(&engine.begin_ro().expect("ro"), table).is_empty(),
            "not applied yet"
        );
    }

    // A file gone: refused before anything is ingested.
    let commit_dir = std::fs::read_dir(dir.path().join(HYBRID_ROCKSDB_DIR).join("spill"))
        .expect("spill dir")
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("commit-"))
        .expect("commit folder")
        .path();
    let victim = commit_dir.join("PlainStorageState.sst");
    let saved = std::fs::read(&victim).expect("exported file");
    std::fs::remove_file(&victim).expect("remove");
    let err = engine
        .apply_exported(&payload)
        .expect_err("a missing file must be refused");
    let message = format!("{err}");
    assert!(
        message.contains("PlainStorageState.sst") && message.contains("restore"),
        "names the file and the fix: {message}"
    );
    assert!(
        rows(
            &engine.begin_ro().expect("ro"),
            Tables::TransactionHashNumbers
        )
        .is_empty(),
        "a refused apply ingests nothing"
    );
    std::fs::write(&victim, saved).expect("restore");

    engine.apply_exported(&payload).expect("apply");
    engine.apply_exported(&payload).expect("apply again");
    for table in [Tables::TransactionHashNumbers, Tables::PlainStorageState] {
        assert_eq!(
            rows(&engine.begin_ro().expect("ro"), table),
            model_rows(&model, table),
            "applied twice: {table}"
        );
    }
    drop(frozen);
    assert_eq!(
        spill_entries(dir.path(), "tx-"),
        0,
        "the frozen view's spill store is gone with it"
    );
    engine.discard_exports().expect("discard");
    assert_eq!(spill_entries(dir.path(), "commit-"), 0);
}

/// `clear` after spilling hides the spilled writes and the snapshot alike; the commit removes
/// every committed row but what was written after the clear.
#[test]
fn clearing_a_table_after_spilling_leaves_only_later_writes() {
    let dir = tempfile::tempdir().expect("tmp");
    let engine = spilling_engine(dir.path());
    let hashes = Tables::TransactionHashNumbers;
    let seed = engine.begin_rw().expect("rw");
    seed.put(hashes, &[1; 32], &[1]).expect("put");
    seed.commit().expect("seed");
    let tx = engine.begin_rw().expect("rw");
    let mut model = Model::new();
    write_past_budget(&tx, &mut model);
    assert!(tx.has_spilled());
    tx.clear(hashes).expect("clear");
    tx.put(hashes, &[9; 32], &[9]).expect("put");
    assert_eq!(rows(&tx, hashes), vec![(vec![9; 32], vec![9])]);
    tx.commit().expect("commit");
    let ro = engine.begin_ro().expect("ro");
    assert_eq!(rows(&ro, hashes), vec![(vec![9; 32], vec![9])]);
    assert_eq!(
        rows(&ro, Tables::PlainStorageState),
        model_rows(&model, Tables::PlainStorageState),
        "the other table keeps its spilled writes"
    );
}

/// A killed process's spill store is removed by the next read-write open, never by a
/// read-only one; exported commit files are left for the intent's owner to resolve.
#[test]
fn a_read_write_open_removes_a_killed_process_spill_stores_but_not_commit_files() {
    let dir = tempfile::tempdir().expect("tmp");
    drop(spilling_engine(dir.path()));
    let spill = dir.path().join(HYBRID_ROCKSDB_DIR).join("spill");
    std::fs::create_dir_all(spill.join("tx-1-2-3")).expect("scratch");
    std::fs::write(
        spill.join("tx-1-2-3").join("run-1.sst"),
        b"left by a killed process",
    )
    .expect("write");
    std::fs::create_dir_all(spill.join("commit-1-2-3")).expect("commit");
    drop(RocksEngine::open_read_only(&dir.path().join(HYBRID_ROCKSDB_DIR)).expect("ro open"));
    assert_eq!(
        spill_entries(dir.path(), "tx-"),
        1,
        "a read-only open changes nothing"
    );
    drop(spilling_engine(dir.path()));
    assert_eq!(
        spill_entries(dir.path(), "tx-"),
        0,
        "removed at read-write open"
    );
    assert_eq!(
        spill_entries(dir.path(), "commit-"),
        1,
        "an intent may still need it"
    );
}

/// A clear is one delete per row. Committed as a write batch it once held every row's delete in
/// memory, copied again into the hybrid's intent: tens of GB for a synced node's tx-hash table,
/// and a commit that could never be applied. With rows in the table, the commit is now a small
/// manifest of SST files streamed from the snapshot (memory at the overlay's, whatever the
/// table's size), and it leaves exactly the rows written after the clear.
#[test]
fn clearing_a_table_with_rows_commits_a_manifest_not_a_batch_of_every_row() {
    use reth_hybrid_api::raw::RawReplay;
    let dir = tempfile::tempdir().expect("tmp");
    let engine = RocksEngine::open_in_datadir(dir.path()).expect("open");
    let table = Tables::TransactionHashNumbers;
    let hash = |i: u64| {
        let mut h = [0x5a; 32];
        h[..8].copy_from_slice(&i.to_be_bytes());
        h
    };
    let tx = engine.begin_rw().expect("rw");
    for i in 0..50_000u64 {
        tx.put(table, &hash(i), &i.to_le_bytes()).expect("put");
    }
    tx.commit().expect("fill");

    let tx = engine.begin_rw().expect("rw");
    tx.put(table, &hash(1_000_000), &[9; 8])
        .expect("a row the clear removes");
    tx.clear(table).expect("clear");
    for i in 10..20u64 {
        tx.put(table, &hash(i), &(i + 1).to_le_bytes())
            .expect("a row after the clear");
    }
    tx.put(Tables::AccountsHistory, &[7; 28], &[1; 16])
        .expect("another table beside it");
    let frozen = RocksEngine::freeze(tx);
    let payload = RocksEngine::export_writes(&frozen).expect("export");
    assert!(
        payload.len() < 4096 && !RocksEngine::can_defer(&payload),
        "a manifest of files, not a batch of 50,000 deletes ({} bytes)",
        payload.len()
    );
    drop(frozen);
    engine.apply_exported(&payload).expect("apply");
    // Applying it again (a replay after a crash) leaves the same rows.
    engine.apply_exported(&payload).expect("replay");
    engine.discard_exports().expect("discard");

    let tx = engine.begin_ro().expect("ro");
    let expected: Vec<(Vec<u8>, Vec<u8>)> = (10..20u64)
        .map(|i| (hash(i).to_vec(), (i + 1).to_le_bytes().to_vec()))
        .collect();
    assert_eq!(rows(&tx, table), expected);
    assert_eq!(rows(&tx, Tables::AccountsHistory).len(), 1);
}

/// A clear of an empty table stays a write batch (nothing to delete).
#[test]
fn clearing_an_empty_table_commits_a_write_batch() {
    use reth_hybrid_api::raw::RawReplay;
    let dir = tempfile::tempdir().expect("tmp");
    let engine = RocksEngine::open_in_datadir(dir.path()).expect("open");
    let tx = engine.begin_rw().expect("rw");
    tx.clear(Tables::TransactionHashNumbers).expect("clear");
    tx.put(Tables::TransactionHashNumbers, &[1; 32], &[2; 8])
        .expect("put");
    let frozen = RocksEngine::freeze(tx);
    let payload = RocksEngine::export_writes(&frozen).expect("export");
    assert!(RocksEngine::can_defer(&payload), "a write batch");
}

/// reth's own `<datadir>/rocksdb`, as a stopped v2 node leaves it: sizes split into flushed SST
/// bytes and rows only in the WAL, and an empty family counts nothing (not its memtable arena).
#[test]
fn an_upstream_rocksdb_reports_flushed_and_unflushed_bytes_apart() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("rocksdb");
    let families = ["TransactionHashNumbers", "AccountsHistory"];
    let write = |flush: bool| {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&opts, &path, families).expect("open upstream rocksdb");
        let cf = db.cf_handle("TransactionHashNumbers").expect("cf");
        for i in 0u64..1000 {
            db.put_cf(
                cf,
                B256::repeat_byte((i % 251) as u8)
                    .0
                    .iter()
                    .chain(&i.to_be_bytes())
                    .copied()
                    .collect::<Vec<u8>>(),
                i.to_be_bytes(),
            )
            .expect("put");
        }
        if flush {
            db.flush_cf(cf).expect("flush");
        }
    };
    let family = |name: &str| {
        reth_hybrid_rocksdb::inspect_upstream_rocksdb(&path)
            .expect("inspect")
            .expect("exists")
            .into_iter()
            .find(|cf| cf.name == name)
            .expect("family listed")
    };
    assert!(
        reth_hybrid_rocksdb::inspect_upstream_rocksdb(&path)
            .expect("inspect")
            .is_none(),
        "no rocksdb yet"
    );

    write(false);
    let killed = family("TransactionHashNumbers");
    assert!(killed.has_rows);
    assert_eq!(killed.sst_bytes, 0, "nothing flushed yet");
    assert!(killed.unflushed_bytes > 0, "the WAL's rows, replayed");
    let empty = family("AccountsHistory");
    assert!(!empty.has_rows);
    assert_eq!((empty.sst_bytes, empty.unflushed_bytes), (0, 0));

    write(true);
    let stopped = family("TransactionHashNumbers");
    assert!(stopped.sst_bytes > 0);
    assert_eq!(
        stopped.unflushed_bytes, 0,
        "a flushed family has no WAL rows"
    );
    assert_eq!(family("AccountsHistory").unflushed_bytes, 0);
}

/// Adopting a v2 datadir reads reth's tables whole, resumes after the last row it copied, and
/// then clears only those tables: reth keeps other families there (its block access lists).
#[test]
fn an_upstream_rocksdb_is_read_in_order_resumed_and_cleared_table_by_table() {
    use reth_hybrid_rocksdb::{UpstreamRocksDb, clear_upstream_tables};
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("rocksdb");
    let key = |i: u64| {
        let mut k = B256::repeat_byte((i * 7 % 251) as u8).to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        k
    };
    {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&opts, &path, ["TransactionHashNumbers", "OtherFamily"])
            .expect("open upstream rocksdb");
        let cf = db.cf_handle("TransactionHashNumbers").expect("cf");
        for i in 0u64..500 {
            db.put_cf(cf, key(i), i.to_be_bytes()).expect("put");
        }
        db.flush_cf(cf).expect("flush");
        // A killed node: these rows are only in the WAL.
        for i in 500u64..800 {
            db.put_cf(cf, key(i), i.to_be_bytes()).expect("put");
        }
        let other = db.cf_handle("OtherFamily").expect("cf");
        db.put_cf(other, b"kept", b"1").expect("put");
    }
    let mut expected: Vec<(Vec<u8>, Vec<u8>)> = (0u64..800)
        .map(|i| (key(i), i.to_be_bytes().to_vec()))
        .collect();
    expected.sort();

    let upstream = UpstreamRocksDb::open_read_only(&path)
        .expect("open")
        .expect("exists");
    assert!(upstream.has_table(Tables::TransactionHashNumbers));
    assert!(!upstream.has_table(Tables::AccountsHistory));
    let read = |after: Option<&[u8]>, limit: usize| {
        let mut rows = Vec::new();
        upstream
            .for_each_row::<reth_hybrid_rocksdb::RocksError>(
                Tables::TransactionHashNumbers,
                after,
                |k, v| {
                    rows.push((k.to_vec(), v.to_vec()));
                    Ok(rows.len() < limit)
                },
            )
            .expect("scan");
        rows
    };
    assert_eq!(
        read(None, usize::MAX),
        expected,
        "flushed and WAL rows, in key order"
    );
    let first = read(None, 100);
    assert_eq!(first, expected[..100]);
    let last_copied = first.last().expect("rows").0.clone();
    assert_eq!(
        read(Some(&last_copied), usize::MAX),
        expected[100..],
        "resumes after the key"
    );
    // A resume key that is not a row (a shorter prefix of the next one) starts at the next row.
    let between = expected[100].0[..20].to_vec();
    assert_eq!(read(Some(&between), 1), expected[100..101]);
    let mut none = 0;
    upstream
        .for_each_row::<reth_hybrid_rocksdb::RocksError>(Tables::AccountsHistory, None, |_, _| {
            none += 1;
            Ok(true)
        })
        .expect("a missing family has no rows");
    assert_eq!(none, 0);
    drop(upstream);

    for _ in 0..2 {
        clear_upstream_tables(
            &path,
            &[Tables::TransactionHashNumbers, Tables::AccountsHistory],
        )
        .expect("clear (twice: idempotent)");
        let families = reth_hybrid_rocksdb::inspect_upstream_rocksdb(&path)
            .expect("inspect")
            .expect("exists");
        let has_rows = |name: &str| {
            families
                .iter()
                .find(|f| f.name == name)
                .expect(name)
                .has_rows
        };
        assert!(!has_rows("TransactionHashNumbers"));
        assert!(has_rows("OtherFamily"), "other families are not touched");
        // The cleared family's files are gone (its space is back), not merely shadowed.
        let db = rocksdb::DB::open_cf_for_read_only(
            &rocksdb::Options::default(),
            &path,
            rocksdb::DB::list_cf(&rocksdb::Options::default(), &path).expect("list"),
            false,
        )
        .expect("open");
        let live = db.live_files().expect("live files");
        assert!(
            live.iter()
                .all(|f| f.column_family_name != "TransactionHashNumbers"),
            "{live:?}"
        );
    }
}
