//! The pieces of adopting a storage-v2 datadir, each on real MDBX and RocksDB: a generated v1
//! datadir is the expected result, and its v2 form (tables moved to a reth-style RocksDB, plain
//! state removed, tries packed) is what the pieces must turn back into it.

mod common;

use alloy_primitives::{Address, keccak256};
use alloy_trie::Nibbles;
use common::{Rows, all_rows, generated};
use reth_hybrid_api::{
    Encode, Tables,
    models::{PackedStoredNibbles, StoredNibbles, StoredNibblesSubKey},
    raw::{RawCursorMut, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_mdbx::{MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{
    MigrateError, NoProgress,
    adopt::{
        plain_state::{PlainRows, rebuild_plain_state},
        trie::{TrieRows, convert_tries},
        upstream_copy::{UPSTREAM_TABLES, copy_upstream_table},
    },
};
use reth_hybrid_rocksdb::UpstreamRocksDb;
use std::path::Path;

fn open(datadir: &Path) -> MdbxEngine {
    MdbxEngine::open(datadir, MdbxOptions::read_write()).expect("mdbx")
}

fn clear(engine: &MdbxEngine, tables: &[Tables]) {
    let tx = engine.begin_rw().expect("rw");
    for table in tables {
        tx.clear(*table).expect("clear");
    }
    tx.commit().expect("commit");
}

/// Writes `rows` back with plain puts (a previous run's committed part).
fn put_rows(engine: &MdbxEngine, table: Tables, rows: &[(Vec<u8>, Vec<u8>)]) {
    let tx = engine.begin_rw().expect("rw");
    for (k, v) in rows {
        tx.put(table, k, v).expect("put");
    }
    tx.commit().expect("commit");
}

#[test]
fn plain_state_is_rebuilt_from_hashed_state_and_history_keys_and_resumes() {
    let dir = generated(3, 7);
    let expected = all_rows(dir.path());
    let plain = [Tables::PlainAccountState, Tables::PlainStorageState];
    assert!(
        expected[&Tables::PlainStorageState].len() > 100,
        "the fixture has storage"
    );
    let engine = open(dir.path());

    clear(&engine, &plain);
    let rows = rebuild_plain_state(&engine, &NoProgress).expect("rebuild");
    assert_eq!(
        rows,
        PlainRows {
            accounts: expected[&Tables::PlainAccountState].len() as u64,
            storage: expected[&Tables::PlainStorageState].len() as u64,
        }
    );
    drop(engine);
    assert_eq!(all_rows(dir.path()), expected);

    // Interrupted after committing part of each table: the rerun continues after it.
    let engine = open(dir.path());
    clear(&engine, &plain);
    for table in plain {
        let half = expected[&table].len() / 2;
        put_rows(&engine, table, &expected[&table][..half]);
    }
    rebuild_plain_state(&engine, &NoProgress).expect("resume");
    drop(engine);
    assert_eq!(all_rows(dir.path()), expected);
}

#[test]
fn a_hashed_account_or_slot_without_history_is_refused_by_name() {
    let dir = generated(2, 3);
    let expected = all_rows(dir.path());
    let engine = open(dir.path());
    // A pruned node: one account's and one slot's history is gone.
    let (account_key, _) = expected[&Tables::AccountsHistory][5].clone();
    let address = Address::from_slice(&account_key[..20]);
    let (storage_key, _) = expected[&Tables::StoragesHistory][3].clone();
    let tx = engine.begin_rw().expect("rw");
    for (table, prefix) in [
        (Tables::AccountsHistory, &account_key[..20]),
        (Tables::StoragesHistory, &storage_key[..52]),
    ] {
        for (k, _) in &expected[&table] {
            if k.starts_with(prefix) {
                tx.delete(table, k, None).expect("delete");
            }
        }
    }
    tx.commit().expect("commit");
    clear(
        &engine,
        &[Tables::PlainAccountState, Tables::PlainStorageState],
    );

    let err = rebuild_plain_state(&engine, &NoProgress).expect_err("a hole is refused");
    let MigrateError::MissingPreimages {
        table,
        missing,
        example,
    } = &err
    else {
        panic!("wrong error: {err}");
    };
    assert_eq!((*table, *missing), (Tables::HashedAccounts, 1));
    assert_eq!(example, &hex::encode(keccak256(address)));
    assert!(err.to_string().contains("pruned"), "{err}");

    // With the account's history back, the slot is the one refused.
    put_rows(
        &engine,
        Tables::AccountsHistory,
        &expected[&Tables::AccountsHistory],
    );
    clear(&engine, &[Tables::PlainAccountState]);
    let err = rebuild_plain_state(&engine, &NoProgress).expect_err("the slot's hole");
    let MigrateError::MissingPreimages { table, example, .. } = &err else {
        panic!("wrong error: {err}");
    };
    assert_eq!(*table, Tables::HashedStorages);
    let hashed_address = keccak256(&storage_key[..20]);
    assert!(
        example.starts_with(&hex::encode(hashed_address)),
        "{example}"
    );
    assert!(
        example.ends_with(&hex::encode(keccak256(&storage_key[20..52]))),
        "{example}"
    );
}

/// Paths a real trie holds: the root (no nibbles), short ones, an odd and a full-length one.
fn paths() -> Vec<Nibbles> {
    let mut paths: Vec<Nibbles> = [
        vec![],
        vec![0x0],
        vec![0x0, 0x0],
        vec![0x1],
        vec![0x1, 0x0],
        vec![0xa, 0xb, 0xc],
        vec![0xf; 7],
        (0..64).map(|i| (i % 16) as u8).collect(),
    ]
    .into_iter()
    .map(|v| Nibbles::from_nibbles(&v))
    .collect();
    paths.sort_by_key(|p| PackedStoredNibbles(*p).to_array());
    paths
}

#[test]
fn tries_are_rewritten_under_v1_keys_in_one_transaction() {
    let dir = tempfile::tempdir().expect("tmp");
    let engine = MdbxEngine::open(dir.path(), MdbxOptions::create()).expect("mdbx");
    let node = |i: usize| vec![0x00, 0x0b, 0x00, 0x01, 0x00, 0x01, i as u8];
    let owners = [keccak256([1u8]), keccak256([2u8])];
    let mut expected_accounts = Vec::new();
    let mut expected_storages = Vec::new();
    {
        let tx = engine.begin_rw().expect("rw");
        let mut accounts = tx.cursor_mut(Tables::AccountsTrie).expect("cursor");
        for (i, path) in paths().into_iter().enumerate() {
            accounts
                .append(&PackedStoredNibbles(path).to_array(), &node(i))
                .expect("append");
            expected_accounts.push((StoredNibbles(path).encode().to_vec(), node(i)));
        }
        drop(accounts);
        let mut owners_sorted = owners;
        owners_sorted.sort();
        for owner in owners_sorted {
            for (i, path) in paths().into_iter().enumerate() {
                let packed = [&PackedStoredNibbles(path).to_array()[..], &node(i)].concat();
                tx.put(Tables::StoragesTrie, owner.as_slice(), &packed)
                    .expect("put");
                let v1 = [&StoredNibblesSubKey(path).encode()[..], &node(i)].concat();
                expected_storages.push((owner.to_vec(), v1));
            }
        }
        tx.commit().expect("commit");
    }
    expected_accounts.sort();
    expected_storages.sort();

    let snapshot = engine.begin_ro().expect("ro");
    let tx = engine.begin_rw().expect("rw");
    let rows = convert_tries(&snapshot, &tx).expect("convert");
    assert_eq!(
        rows,
        TrieRows {
            accounts_trie: 8,
            storages_trie: 16
        }
    );
    tx.commit().expect("commit");
    drop(snapshot);
    drop(engine);
    let after = all_rows(dir.path());
    assert_eq!(after[&Tables::AccountsTrie], expected_accounts);
    assert_eq!(after[&Tables::StoragesTrie], expected_storages);

    // A row that is not a packed path (here: a v1 row) fails the conversion, which the caller
    // then aborts: the tries stay as they were.
    let engine = open(dir.path());
    let snapshot = engine.begin_ro().expect("ro");
    let tx = engine.begin_rw().expect("rw");
    let err = convert_tries(&snapshot, &tx).expect_err("v1 rows are not packed");
    assert!(err.to_string().contains("AccountsTrie"), "{err}");
    tx.abort();
    drop(snapshot);
    drop(engine);
    assert_eq!(
        all_rows(dir.path())[&Tables::AccountsTrie],
        expected_accounts
    );
}

/// reth's RocksDB of a v2 datadir made from `rows`: the three tables as column families.
fn upstream_rocksdb(path: &Path, rows: &Rows) {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let names: Vec<&str> = UPSTREAM_TABLES.iter().map(|t| t.name()).collect();
    let db = rocksdb::DB::open_cf(&opts, path, names).expect("open");
    for table in UPSTREAM_TABLES {
        let cf = db.cf_handle(table.name()).expect("cf");
        for (k, v) in &rows[&table] {
            db.put_cf(cf, k, v).expect("put");
        }
    }
}

#[test]
fn reth_rocksdb_tables_are_copied_into_mdbx_resumed_and_compared() {
    let dir = generated(2, 11);
    let expected = all_rows(dir.path());
    upstream_rocksdb(&dir.path().join("rocksdb"), &expected);
    let engine = open(dir.path());
    clear(&engine, &UPSTREAM_TABLES);
    // Interrupted after committing the first part of one table.
    let hashes = &expected[&Tables::TransactionHashNumbers];
    put_rows(
        &engine,
        Tables::TransactionHashNumbers,
        &hashes[..hashes.len() / 3],
    );

    let upstream = UpstreamRocksDb::open_read_only(&dir.path().join("rocksdb"))
        .expect("open")
        .expect("exists");
    for table in UPSTREAM_TABLES {
        let digest = copy_upstream_table(&upstream, &engine, table, &NoProgress).expect("copy");
        assert_eq!(digest.rows, expected[&table].len() as u64, "{table}");
    }
    drop(engine);
    assert_eq!(all_rows(dir.path()), expected);

    // A row MDBX holds that reth's RocksDB does not: the comparison fails, naming the table.
    let engine = open(dir.path());
    put_rows(
        &engine,
        Tables::AccountsHistory,
        &[(vec![0xff; 28], vec![0])],
    );
    let err = copy_upstream_table(&upstream, &engine, Tables::AccountsHistory, &NoProgress)
        .expect_err("an extra row");
    assert!(
        matches!(
            err,
            MigrateError::VerifyFailed {
                table: Tables::AccountsHistory,
                ..
            }
        ),
        "{err}"
    );
}
