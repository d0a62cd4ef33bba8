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
