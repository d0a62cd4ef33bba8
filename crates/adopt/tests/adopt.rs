//! The pieces of adopting a storage-v2 datadir, each on real MDBX and RocksDB: a generated v1
//! datadir is the expected result, and its v2 form (tables moved to a reth-style RocksDB, plain
//! state removed, tries packed) is what the pieces must turn back into it.

#[path = "../../migrate/tests/common/mod.rs"]
mod common;

use alloy_primitives::{Address, keccak256};
use alloy_trie::Nibbles;
use common::{Rows, all_rows, generated};
use reth_hybrid_adopt::{
    ADOPT_STATE_FILE, AdoptError, MdbxOpener, NoProgress, OpenError,
    plain_state::{PlainRows, rebuild_plain_state},
    static_files::{SourceError, V2StaticFiles},
    trie::{TrieRows, convert_tries},
    upstream_copy::{UPSTREAM_TABLES, copy_upstream_table},
};
use reth_hybrid_api::{
    Encode, Tables,
    models::{PackedStoredNibbles, StoredNibbles, StoredNibblesSubKey},
    raw::{RawCursorMut, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_mdbx::{MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::UpstreamRocksDb;
use std::path::Path;

/// Equal rows, or a panic naming each table that differs, its row counts and first difference.
fn assert_same_rows(actual: &Rows, expected: &Rows, what: &str) {
    let mut diffs = Vec::new();
    for (table, want) in expected {
        let got = &actual[table];
        if got != want {
            let first = got
                .iter()
                .zip(want)
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(want.len()));
            diffs.push(format!(
                "{table}: {} rows, expected {}; first difference at row {first}: got {:?}, expected {:?}",
                got.len(),
                want.len(),
                got.get(first).map(|(k, v)| (hex::encode(k), hex::encode(v))),
                want.get(first).map(|(k, v)| (hex::encode(k), hex::encode(v))),
            ));
        }
    }
    assert!(diffs.is_empty(), "{what}:\n{}", diffs.join("\n"));
}

/// reth-hybrid's own MDBX engine, as the tools open it.
struct OurMdbx;

impl MdbxOpener for OurMdbx {
    type Engine = MdbxEngine;
    fn read_only(&self, datadir: &Path) -> Result<MdbxEngine, OpenError> {
        Ok(MdbxEngine::open_read_only(datadir)?)
    }
    fn read_write(&self, datadir: &Path) -> Result<MdbxEngine, OpenError> {
        Ok(MdbxEngine::open(datadir, MdbxOptions::read_write())?)
    }
    fn table_bytes(&self, engine: &MdbxEngine, table: Tables) -> Result<u64, OpenError> {
        Ok(engine.begin_ro()?.table_stat(table)?.bytes())
    }
}

fn adopt_to_v1(
    datadir: &Path,
    source: &dyn V2StaticFiles,
    progress: &dyn reth_hybrid_adopt::Progress,
) -> Result<reth_hybrid_adopt::AdoptReport, AdoptError> {
    reth_hybrid_adopt::adopt_to_v1(datadir, &OurMdbx, source, progress)
}

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
    let AdoptError::MissingPreimages {
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
    let AdoptError::MissingPreimages { table, example, .. } = &err else {
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
        let rows = copy_upstream_table(&upstream, &engine, table, &NoProgress).expect("copy");
        assert_eq!(rows, expected[&table].len() as u64, "{table}");
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
            AdoptError::CopyMismatch {
                table: Tables::AccountsHistory,
                ..
            }
        ),
        "{err}"
    );
}

/// A v2 datadir's static files, from memory: the test's stand-in for reth's segments.
#[derive(Default)]
struct MemoryStaticFiles {
    accounts: std::collections::BTreeMap<u64, Vec<reth_hybrid_api::models::AccountBeforeTx>>,
    storage: std::collections::BTreeMap<u64, Vec<(Address, reth_hybrid_api::models::StorageEntry)>>,
    senders: std::collections::BTreeMap<u64, Address>,
    /// Fails reading this block's account changesets (an interrupted run).
    fail_at: Option<u64>,
    /// The last block of changesets the files hold.
    end: Option<u64>,
    removed: std::sync::atomic::AtomicBool,
}

impl V2StaticFiles for MemoryStaticFiles {
    fn account_changesets(
        &self,
        block: u64,
    ) -> Result<Vec<reth_hybrid_api::models::AccountBeforeTx>, SourceError> {
        if self.fail_at == Some(block) {
            return Err("injected read failure".into());
        }
        Ok(self.accounts.get(&block).cloned().unwrap_or_default())
    }
    fn storage_changesets(
        &self,
        block: u64,
    ) -> Result<Vec<(Address, reth_hybrid_api::models::StorageEntry)>, SourceError> {
        Ok(self.storage.get(&block).cloned().unwrap_or_default())
    }
    fn senders(&self, first: u64, count: u64) -> Result<Vec<Address>, SourceError> {
        Ok(self
            .senders
            .range(first..first + count)
            .map(|(_, a)| *a)
            .collect())
    }
    fn changesets_end(&self) -> Option<u64> {
        self.end
    }
    fn bytes(&self) -> u64 {
        0
    }
    fn remove(&self) -> Result<(), SourceError> {
        self.removed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// A generated v1 datadir with tries (v1 keys), its rows, and its v2 twin in another folder:
/// the three tables in a reth-style `rocksdb/`, changesets and senders in memory, no plain
/// state, packed tries, storage_v2 = true.
fn v1_and_v2_twin(
    scale: u64,
    seed: u64,
) -> (
    tempfile::TempDir,
    Rows,
    tempfile::TempDir,
    MemoryStaticFiles,
) {
    use reth_hybrid_api::{
        Database, DbCursorRO, DbTx, models::StorageSettings, tables, typed::TypedDatabase,
    };
    let v1 = generated(scale, seed);
    let owner = keccak256([9u8]);
    // Stage progress as each layout's pipeline leaves it (block numbers equal): v1 counts every
    // row processed, v2 no senders or tx hashes of its own and no hashing progress.
    let progress = |v2: bool, accounts: u64, slots: u64, txs: u64| {
        use reth_hybrid_api::models::{
            AccountHashingCheckpoint, EntitiesCheckpoint, StageUnitCheckpoint as U,
            StorageHashingCheckpoint,
        };
        let done = |n: u64| EntitiesCheckpoint {
            processed: if v2 { 0 } else { n },
            total: n,
        };
        let full = |n: u64| EntitiesCheckpoint {
            processed: n,
            total: n,
        };
        vec![
            ("SenderRecovery", Some(U::Entities(done(txs)))),
            ("TransactionLookup", Some(U::Entities(done(txs)))),
            (
                "AccountHashing",
                (!v2).then(|| {
                    U::Account(AccountHashingCheckpoint {
                        address: None,
                        block_range: Default::default(),
                        progress: full(accounts),
                    })
                }),
            ),
            (
                "StorageHashing",
                (!v2).then(|| {
                    U::Storage(StorageHashingCheckpoint {
                        address: None,
                        storage: None,
                        block_range: Default::default(),
                        progress: full(slots),
                    })
                }),
            ),
        ]
    };
    let set_progress = |engine: &MdbxEngine, v2: bool| {
        let tx = engine.begin_rw().expect("rw");
        let n = |t: Tables| tx.entries(t).expect("entries") as u64;
        let (accounts, slots, txs) = (
            n(Tables::PlainAccountState),
            n(Tables::PlainStorageState),
            n(Tables::TransactionHashNumbers),
        );
        for (stage, unit) in progress(v2, accounts, slots, txs) {
            let head = reth_hybrid_api::models::StageCheckpoint {
                block_number: 100 * scale,
                stage_checkpoint: unit,
            };
            tx.put(
                Tables::StageCheckpoints,
                stage.as_bytes(),
                &reth_hybrid_api::table::compress_to_vec(&head),
            )
            .expect("put");
        }
        tx.commit().expect("commit");
    };
    set_progress(&open(v1.path()), false);
    {
        let engine = open(v1.path());
        let tx = engine.begin_rw().expect("rw");
        for (i, path) in paths().into_iter().enumerate() {
            let node = vec![0x00, 0x03, 0x00, 0x00, 0x00, 0x00, i as u8];
            tx.put(Tables::AccountsTrie, &StoredNibbles(path).encode(), &node)
                .expect("put");
            let value = [&StoredNibblesSubKey(path).encode()[..], &node].concat();
            tx.put(Tables::StoragesTrie, owner.as_slice(), &value)
                .expect("put");
        }
        tx.commit().expect("commit");
    }
    let expected = all_rows(v1.path());

    let v2 = tempfile::tempdir().expect("tmp");
    common::copy_tree(v1.path(), v2.path());
    upstream_rocksdb(&v2.path().join("rocksdb"), &expected);
    let mut files = MemoryStaticFiles {
        end: Some(100 * scale),
        ..Default::default()
    };
    let engine = open(v2.path());
    {
        let db = TypedDatabase::new(engine.clone());
        let tx = db.tx().expect("ro");
        for row in tx
            .cursor_read::<tables::AccountChangeSets>()
            .expect("c")
            .walk(None)
            .expect("walk")
        {
            let (block, entry) = row.expect("row");
            files.accounts.entry(block).or_default().push(entry);
        }
        for row in tx
            .cursor_read::<tables::StorageChangeSets>()
            .expect("c")
            .walk(None)
            .expect("walk")
        {
            let (key, entry) = row.expect("row");
            files
                .storage
                .entry(key.block_number())
                .or_default()
                .push((key.address(), entry));
        }
        for row in tx
            .cursor_read::<tables::TransactionSenders>()
            .expect("c")
            .walk(None)
            .expect("walk")
        {
            let (tx_num, sender) = row.expect("row");
            files.senders.insert(tx_num, sender);
        }
    }
    set_progress(&engine, true);
    clear(&engine, &reth_hybrid_adopt::STAGED_TABLES);
    clear(&engine, &[Tables::AccountsTrie, Tables::StoragesTrie]);
    let tx = engine.begin_rw().expect("rw");
    for (i, path) in paths().into_iter().enumerate() {
        let node = vec![0x00, 0x03, 0x00, 0x00, 0x00, 0x00, i as u8];
        tx.put(
            Tables::AccountsTrie,
            &PackedStoredNibbles(path).to_array(),
            &node,
        )
        .expect("put");
        let value = [&PackedStoredNibbles(path).to_array()[..], &node].concat();
        tx.put(Tables::StoragesTrie, owner.as_slice(), &value)
            .expect("put");
    }
    reth_hybrid_hybrid::control::put_bytes(
        &tx,
        reth_hybrid_api::models::STORAGE_SETTINGS_KEY,
        StorageSettings { storage_v2: true }.to_json_bytes(),
    )
    .expect("put");
    tx.commit().expect("commit");
    (v1, expected, v2, files)
}

#[test]
fn a_v2_datadir_adopted_equals_its_v1_twin_table_by_table_then_migrates() {
    let (_v1, expected, v2, files) = v1_and_v2_twin(3, 5);
    assert!(!expected[&Tables::AccountChangeSets].is_empty());
    let report = adopt_to_v1(v2.path(), &files, &NoProgress).expect("adopt");
    assert_eq!(report.head, 300);
    assert_eq!(
        report.tries,
        TrieRows {
            accounts_trie: 8,
            storages_trie: 8
        }
    );
    assert!(files.removed.load(std::sync::atomic::Ordering::SeqCst));
    assert!(!v2.path().join(ADOPT_STATE_FILE).exists());
    assert_same_rows(
        &all_rows(v2.path()),
        &expected,
        "every table, byte for byte",
    );
    let upstream = reth_hybrid_rocksdb::inspect_upstream_rocksdb(&v2.path().join("rocksdb"))
        .expect("inspect")
        .expect("still there, for reth's other families");
    assert!(
        upstream.iter().all(|f| !f.has_rows),
        "reth's copies are cleared"
    );

    // Now a stock v1 datadir: the usual migration takes it to the hybrid layout.
    reth_hybrid_migrate::migrate(
        v2.path(),
        &reth_hybrid_migrate::MigrateRequest::new(reth_hybrid_api::EngineKind::RocksDb),
        &NoProgress,
    )
    .expect("migrate");
    assert_eq!(all_rows(v2.path()), expected);
    assert!(
        common::counts(v2.path(), Tables::AccountsHistory).1 > 0,
        "in hybrid-rocksdb"
    );
}

#[test]
fn an_interrupted_adoption_resumes_and_restarts_when_the_v2_node_ran_in_between() {
    let (_v1, expected, v2, mut files) = v1_and_v2_twin(2, 8);
    files.fail_at = Some(150);
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("interrupted");
    assert!(err.to_string().contains("block 150"), "{err}");
    assert!(v2.path().join(ADOPT_STATE_FILE).exists());
    {
        let engine = open(v2.path());
        let tx = engine.begin_ro().expect("ro");
        // reth's RocksDB tables come first; the failure was in the static files' first commit.
        assert!(
            tx.entries(Tables::TransactionHashNumbers).expect("n") > 0,
            "part was copied"
        );
        assert_eq!(tx.entries(Tables::AccountChangeSets).expect("n"), 0);
        assert_eq!(tx.entries(Tables::PlainAccountState).expect("n"), 0);
    }

    // Resumed as it was.
    files.fail_at = None;
    adopt_to_v1(v2.path(), &files, &NoProgress).expect("resume");
    assert_same_rows(&all_rows(v2.path()), &expected, "resumed");

    // Interrupted again on a fresh twin, then a v2 node moved a checkpoint: staged anew.
    let (_v1, expected, v2, mut files) = v1_and_v2_twin(2, 8);
    files.fail_at = Some(150);
    adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("interrupted");
    {
        let engine = open(v2.path());
        let tx = engine.begin_rw().expect("rw");
        tx.put(Tables::StageCheckpoints, b"SomeStage", &[0x01, 0x00])
            .expect("put");
        tx.put(
            Tables::AccountChangeSets,
            &u64::MAX.to_be_bytes(),
            &[0u8; 20],
        )
        .expect("stale row");
        tx.commit().expect("commit");
    }
    files.fail_at = None;
    adopt_to_v1(v2.path(), &files, &NoProgress).expect("restart");
    let mut adopted = all_rows(v2.path());
    adopted
        .get_mut(&Tables::StageCheckpoints)
        .expect("table")
        .retain(|(k, _)| k != b"SomeStage");
    assert_same_rows(&adopted, &expected, "the stale row went with the restart");
}

#[test]
fn adoption_refusals_change_nothing() {
    // A pruned node.
    let (_v1, _, v2, files) = v1_and_v2_twin(1, 2);
    {
        let engine = open(v2.path());
        let tx = engine.begin_rw().expect("rw");
        // PruneSegment::AccountHistory is byte 4; the checkpoint's bytes do not matter here.
        tx.put(Tables::PruneCheckpoints, &[4], &[0x00])
            .expect("put");
        tx.commit().expect("commit");
    }
    let before = common::files(v2.path());
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("pruned");
    assert!(err.to_string().contains("AccountHistory"), "{err}");
    assert!(err.to_string().contains("--storage.v2=false"), "{err}");
    assert_eq!(common::files(v2.path()), before);

    // Static files that end below the head (reth would unwind it).
    let (_v1, _, v2, mut files) = v1_and_v2_twin(1, 2);
    files.end = Some(99);
    let before = common::files(v2.path());
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("files behind");
    assert!(
        err.to_string()
            .contains("up to block 99, below its head 100"),
        "{err}"
    );
    assert_eq!(common::files(v2.path()), before);

    // A v1 datadir.
    let v1 = generated(1, 2);
    let before = common::files(v1.path());
    let err = adopt_to_v1(v1.path(), &files, &NoProgress).expect_err("v1");
    assert!(matches!(err, AdoptError::NotStorageV2 { .. }), "{err}");
    assert!(err.to_string().contains("reth-hybrid migrate"), "{err}");
    assert_eq!(common::files(v1.path()), before);

    // Rows where v2 keeps none.
    let (_v1, _, v2, files) = v1_and_v2_twin(1, 3);
    put_rows(
        &open(v2.path()),
        Tables::PlainAccountState,
        &[(vec![1; 20], vec![0])],
    );
    let before = common::files(v2.path());
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("not empty");
    assert!(err.to_string().contains("PlainAccountState"), "{err}");
    assert_eq!(common::files(v2.path()), before);

    // An unknown column family with rows in reth's RocksDB.
    let (_v1, _, v2, files) = v1_and_v2_twin(1, 4);
    {
        let mut opts = rocksdb::Options::default();
        opts.create_missing_column_families(true);
        let path = v2.path().join("rocksdb");
        let mut names = rocksdb::DB::list_cf(&opts, &path).expect("list");
        names.push("SomethingNew".into());
        let db = rocksdb::DB::open_cf(&opts, &path, &names).expect("open");
        db.put_cf(db.cf_handle("SomethingNew").expect("cf"), b"k", b"v")
            .expect("put");
        db.flush_cf(db.cf_handle("SomethingNew").expect("cf"))
            .expect("flush");
    }
    let before = common::files(v2.path());
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("unknown family");
    assert!(err.to_string().contains("SomethingNew"), "{err}");
    assert_eq!(common::files(v2.path()), before);
}
