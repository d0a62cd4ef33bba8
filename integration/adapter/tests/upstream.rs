//! reth's own table types through reth's own traits, on the hybrid over reth's MDBX and our
//! RocksDB: rows land in the engine the layout routes them to, come back identical, commits are
//! all-or-nothing, and the walkers behave as on reth's MDBX.

use alloy_primitives::{Address, B256};
use reth_db::mdbx::DatabaseArguments;
use reth_db_api::{
    cursor::{DbCursorRO, DbCursorRW},
    database::Database,
    models::{ClientVersion, IntegerList, ShardedKey},
    tables::{AccountsHistory, CanonicalHeaders, HeaderNumbers, TransactionHashNumbers},
    transaction::{DbTx, DbTxMut},
};
use reth_hybrid_adapter::open_hybrid;
use reth_hybrid_api::{
    Tables,
    raw::{RawEngine, RawTx},
};

fn hash(i: u64) -> B256 {
    B256::left_padding_from(&i.to_be_bytes())
}

#[test]
fn reth_tables_route_to_their_engines_and_round_trip() {
    let dir = tempfile::tempdir().expect("tmp");
    let db =
        open_hybrid(dir.path(), DatabaseArguments::new(ClientVersion::default())).expect("open");
    let tx = db.tx_mut().expect("rw");
    for i in 0..100u64 {
        tx.put::<TransactionHashNumbers>(hash(i), i).expect("put");
        tx.put::<HeaderNumbers>(hash(1000 + i), i).expect("put");
        tx.put::<CanonicalHeaders>(i, hash(1000 + i)).expect("put");
    }
    let addr = Address::repeat_byte(7);
    let shard = IntegerList::new([1u64, 5, 9]).expect("sorted");
    tx.put::<AccountsHistory>(ShardedKey::new(addr, u64::MAX), shard.clone())
        .expect("put");
    tx.commit().expect("commit");

    // Where the rows are: the engines themselves, not the routing layer.
    let hybrid = db.engine();
    let (m, r) = (
        hybrid.primary().begin_ro().expect("ro"),
        hybrid.follower().begin_ro().expect("ro"),
    );
    assert_eq!(r.entries(Tables::TransactionHashNumbers).expect("n"), 100);
    assert_eq!(m.entries(Tables::TransactionHashNumbers).expect("n"), 0);
    assert_eq!(r.entries(Tables::AccountsHistory).expect("n"), 1);
    assert_eq!(m.entries(Tables::HeaderNumbers).expect("n"), 100);
    assert_eq!(r.entries(Tables::HeaderNumbers).expect("n"), 0);

    let tx = db.tx().expect("ro");
    assert_eq!(
        tx.get::<TransactionHashNumbers>(hash(42)).expect("get"),
        Some(42)
    );
    assert_eq!(tx.entries::<TransactionHashNumbers>().expect("n"), 100);
    let mut c = tx.cursor_read::<AccountsHistory>().expect("cursor");
    let (k, v) = c
        .seek(ShardedKey::new(addr, 3))
        .expect("seek")
        .expect("found");
    assert_eq!((k.key, k.highest_block_number), (addr, u64::MAX));
    assert_eq!(v, shard);
    let walked: Vec<u64> = tx
        .cursor_read::<CanonicalHeaders>()
        .expect("cursor")
        .walk_range(10..20)
        .expect("walk")
        .map(|r| r.expect("row").0)
        .collect();
    assert_eq!(walked, (10..20).collect::<Vec<_>>());
    let back: Vec<u64> = tx
        .cursor_read::<TransactionHashNumbers>()
        .expect("cursor")
        .walk_back(None)
        .expect("walk")
        .take(3)
        .map(|r| r.expect("row").1)
        .collect();
    assert_eq!(back, [99, 98, 97]);
    drop(tx);

    // An aborted write transaction leaves both engines as they were.
    let tx = db.tx_mut().expect("rw");
    tx.put::<TransactionHashNumbers>(hash(500), 500)
        .expect("put");
    tx.put::<HeaderNumbers>(hash(1500), 500).expect("put");
    let mut cursor = tx.cursor_write::<CanonicalHeaders>().expect("cursor");
    cursor.append(100, &hash(1100)).expect("append");
    drop(cursor);
    tx.abort();
    let tx = db.tx().expect("ro");
    assert_eq!(
        tx.get::<TransactionHashNumbers>(hash(500)).expect("get"),
        None
    );
    assert_eq!(tx.get::<HeaderNumbers>(hash(1500)).expect("get"), None);
    assert_eq!(tx.entries::<CanonicalHeaders>().expect("n"), 100);
}

#[test]
fn a_storage_v2_datadir_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    {
        let db = open_hybrid(dir.path(), DatabaseArguments::new(ClientVersion::default()))
            .expect("open");
        let tx = db.tx_mut().expect("rw");
        tx.put::<reth_db_api::tables::Metadata>(
            "storage_settings".to_string(),
            br#"{"storage_v2":true}"#.to_vec(),
        )
        .expect("put");
        tx.commit().expect("commit");
    }
    let err = open_hybrid(dir.path(), DatabaseArguments::new(ClientVersion::default()))
        .expect_err("refused");
    assert!(format!("{err:#}").contains("storage v2"), "{err:#}");
}

#[test]
fn dupsort_insert_refuses_an_existing_key_as_reths_mdbx_does() {
    use reth_db_api::{table::Table, tables::PlainStorageState};
    type StorageEntry = <PlainStorageState as Table>::Value;
    let dir = tempfile::tempdir().expect("tmp");
    let db =
        open_hybrid(dir.path(), DatabaseArguments::new(ClientVersion::default())).expect("open");
    let tx = db.tx_mut().expect("rw");
    let mut c = tx.cursor_dup_write::<PlainStorageState>().expect("cursor");
    let addr = Address::repeat_byte(1);
    let entry = |k: u8| StorageEntry {
        key: B256::repeat_byte(k),
        value: alloy_primitives::U256::from(k),
    };
    c.insert(addr, &entry(1)).expect("first");
    assert!(
        c.insert(addr, &entry(2)).is_err(),
        "reth's db_cursor_insert_dup: a second duplicate is refused"
    );
    drop(c);
    assert_eq!(tx.entries::<PlainStorageState>().expect("n"), 1);
}
