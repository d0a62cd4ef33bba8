//! The pieces of adopting a storage-v2 datadir, each on real MDBX and RocksDB: a generated v1
//! datadir is the expected result, and its v2 form (tables moved to a reth-style RocksDB, plain
//! state removed, tries packed) is what the pieces must turn back into it.

#[path = "../../migrate/tests/common/mod.rs"]
mod common;

use alloy_primitives::{Address, B256, keccak256};
use alloy_trie::Nibbles;
use common::{Rows, all_rows, generated};
use reth_hybrid_adopt::{
    ADOPT_STAGING_DIR, ADOPT_STATE_FILE, AdoptError, AdoptTarget, MdbxOpener, NoProgress,
    OpenError,
    plain_state::{PlainRows, rebuild_plain_state},
    static_files::{SourceError, V2StaticFiles},
    trie::{TrieRows, convert_tries},
    upstream_copy::{HeadLimits, UPSTREAM_TABLES, copy_upstream_table},
    verify::{TrieNode, state_trie_of_hashed_state},
};
use reth_hybrid_api::{
    Encode, Tables,
    models::{PackedStoredNibbles, StoredNibbles, StoredNibblesSubKey},
    raw::{RawCursor, RawCursorMut, RawEngine, RawTx, RawTxMut},
    table::compress_to_vec,
    typed::TypedTx,
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

fn adopt(
    datadir: &Path,
    source: &dyn V2StaticFiles,
    target: AdoptTarget,
) -> Result<reth_hybrid_adopt::AdoptReport, AdoptError> {
    reth_hybrid_adopt::adopt(datadir, &OurMdbx, source, target, &NoProgress)
}

fn open(datadir: &Path) -> MdbxEngine {
    MdbxEngine::open(datadir, MdbxOptions::read_write()).expect("mdbx")
}

/// Whether the datadir's stored storage settings still say v2 (no adoption switched it).
fn settings_say_v2(datadir: &Path) -> bool {
    let engine = MdbxEngine::open_read_only(datadir).expect("mdbx");
    let tx = engine.begin_ro().expect("ro");
    let bytes =
        reth_hybrid_hybrid::control::get_bytes(&tx, reth_hybrid_api::models::STORAGE_SETTINGS_KEY)
            .expect("get")
            .expect("settings");
    reth_hybrid_api::models::StorageSettings::from_json_bytes(&bytes)
        .expect("json")
        .storage_v2
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
    let rows = rebuild_plain_state(&engine, &engine, &NoProgress).expect("rebuild");
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
    rebuild_plain_state(&engine, &engine, &NoProgress).expect("resume");
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

    let err = rebuild_plain_state(&engine, &engine, &NoProgress).expect_err("a hole is refused");
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
    let err = rebuild_plain_state(&engine, &engine, &NoProgress).expect_err("the slot's hole");
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

/// No head to stay below (the copy alone is under test).
const NO_LIMITS: HeadLimits = HeadLimits {
    head: u64::MAX,
    last_tx: Some(u64::MAX),
};

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
        let rows =
            copy_upstream_table(&upstream, &engine, table, NO_LIMITS, &NoProgress).expect("copy");
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
    let err = copy_upstream_table(
        &upstream,
        &engine,
        Tables::AccountsHistory,
        NO_LIMITS,
        &NoProgress,
    )
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
    /// The head header's state root.
    state_root: B256,
    /// The offsets index records one account change too many for this block.
    count_skew: Option<u64>,
    /// The offsets index records one storage change too few for this block.
    storage_count_skew: Option<u64>,
    removed: std::sync::atomic::AtomicBool,
    /// Where a removal is recorded for another process (the kill test's children).
    removed_marker: Option<std::path::PathBuf>,
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
    fn senders_end(&self) -> Option<u64> {
        self.senders.keys().next_back().copied()
    }
    fn changeset_counts(&self, block: u64) -> Result<(u64, u64), SourceError> {
        let n = |rows: Option<usize>| rows.unwrap_or(0) as u64;
        Ok((
            n(self.accounts.get(&block).map(Vec::len)) + u64::from(self.count_skew == Some(block)),
            n(self.storage.get(&block).map(Vec::len))
                - u64::from(self.storage_count_skew == Some(block)),
        ))
    }
    fn state_root(&self, _block: u64) -> Result<B256, SourceError> {
        Ok(self.state_root)
    }
    fn bytes(&self) -> u64 {
        0
    }
    fn remove(&self) -> Result<(), SourceError> {
        self.removed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(marker) = &self.removed_marker {
            std::fs::write(marker, b"removed")?;
        }
        Ok(())
    }
}

/// The static files a v2 node would have written for the v1 datadir at `v1` (its changesets
/// and senders), and its head's state root computed by alloy-trie from the plain state: a
/// computation independent of adoption's own, which works from the hashed state.
fn static_files_of(v1: &Path, head: u64) -> MemoryStaticFiles {
    use reth_hybrid_api::{Database, DbCursorRO, DbTx, tables, typed::TypedDatabase};
    let mut files = MemoryStaticFiles {
        end: Some(head),
        ..Default::default()
    };
    let engine = MdbxEngine::open_read_only(v1).expect("mdbx");
    let db = TypedDatabase::new(engine);
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
    let mut storage: std::collections::BTreeMap<Address, Vec<(B256, alloy_primitives::U256)>> =
        Default::default();
    for row in tx
        .cursor_read::<tables::PlainStorageState>()
        .expect("c")
        .walk(None)
        .expect("walk")
    {
        let (address, entry) = row.expect("row");
        storage
            .entry(address)
            .or_default()
            .push((entry.key, entry.value));
    }
    let accounts: Vec<(Address, alloy_trie::TrieAccount)> = tx
        .cursor_read::<tables::PlainAccountState>()
        .expect("c")
        .walk(None)
        .expect("walk")
        .map(|row| {
            let (address, account) = row.expect("row");
            let slots = storage.remove(&address).unwrap_or_default();
            (
                address,
                alloy_trie::TrieAccount {
                    nonce: account.nonce,
                    balance: account.balance,
                    storage_root: alloy_trie::root::storage_root_unhashed(slots),
                    code_hash: account.bytecode_hash.unwrap_or(alloy_trie::KECCAK_EMPTY),
                },
            )
        })
        .collect();
    files.state_root = alloy_trie::root::state_root_unhashed(accounts);
    files
}

/// The branch nodes a full rebuild derives from a datadir's hashed state (adoption's own
/// derivation; its root is checked against `alloy_trie::root::state_root_unhashed` of the plain
/// state by every adoption below).
fn derived_tries(engine: &MdbxEngine) -> Vec<TrieNode> {
    let nodes = derived_tries_of(engine);
    assert!(
        nodes.iter().any(|n| matches!(n, TrieNode::Storage { .. })),
        "the generated state has storage tries"
    );
    nodes
}

fn derived_tries_of(engine: &MdbxEngine) -> Vec<TrieNode> {
    let mut nodes = Vec::new();
    state_trie_of_hashed_state(
        &TypedTx::new(engine.begin_ro().expect("ro")),
        &NoProgress,
        &mut |node| {
            nodes.push(node);
            Ok(())
        },
    )
    .expect("derive");
    nodes
}

/// Replaces both tries with `nodes`, under v2's packed keys or v1's.
fn write_tries(engine: &MdbxEngine, nodes: &[TrieNode], packed: bool) {
    clear(engine, &[Tables::AccountsTrie, Tables::StoragesTrie]);
    let tx = engine.begin_rw().expect("rw");
    for node in nodes {
        match node {
            TrieNode::Account { path, node } => {
                let key = if packed {
                    PackedStoredNibbles(*path).to_array().to_vec()
                } else {
                    StoredNibbles(*path).encode().to_vec()
                };
                tx.put(Tables::AccountsTrie, &key, &compress_to_vec(node))
                    .expect("put");
            }
            TrieNode::Storage {
                hashed_address,
                path,
                node,
            } => {
                let subkey = if packed {
                    PackedStoredNibbles(*path).to_array().to_vec()
                } else {
                    StoredNibblesSubKey(*path).encode().to_vec()
                };
                let value = [&subkey[..], &compress_to_vec(node)].concat();
                tx.put(Tables::StoragesTrie, hashed_address.as_slice(), &value)
                    .expect("put");
            }
        }
    }
    tx.commit().expect("commit");
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
    use reth_hybrid_api::models::StorageSettings;
    let v1 = generated(scale, seed);
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
    let tries = derived_tries(&open(v1.path()));
    write_tries(&open(v1.path()), &tries, false);
    let expected = all_rows(v1.path());

    let v2 = tempfile::tempdir().expect("tmp");
    common::copy_tree(v1.path(), v2.path());
    upstream_rocksdb(&v2.path().join("rocksdb"), &expected);
    let files = static_files_of(v1.path(), 100 * scale);
    let engine = open(v2.path());
    set_progress(&engine, true);
    clear(&engine, &reth_hybrid_adopt::STAGED_TABLES);
    write_tries(&engine, &tries, true);
    let tx = engine.begin_rw().expect("rw");
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
            accounts_trie: expected[&Tables::AccountsTrie].len() as u64,
            storages_trie: expected[&Tables::StoragesTrie].len() as u64,
        }
    );
    assert!(report.tries.accounts_trie > 16 && report.tries.storages_trie > 0);
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

/// The hybrid target: history and tx hashes ingested straight into reth-hybrid's RocksDB give
/// the datadir `migrate` makes of the v1 twin, every row and the recorded layout byte for byte;
/// `verify` passes, and `migrate --to mdbx` takes it back to the v1 twin.
#[test]
fn a_v2_datadir_adopted_to_the_hybrid_equals_its_v1_twin_migrated() {
    let (v1, expected, v2, files) = v1_and_v2_twin(3, 5);
    let report = adopt(v2.path(), &files, AdoptTarget::Hybrid).expect("adopt");
    assert_eq!(report.head, 300);
    for (table, rows) in &report.upstream_rows {
        assert_eq!(*rows as usize, expected[table].len(), "{table}");
        assert_eq!(
            common::counts(v2.path(), *table),
            (0, expected[table].len()),
            "{table}: in hybrid-rocksdb only"
        );
    }
    assert!(!v2.path().join(ADOPT_STATE_FILE).exists());
    assert!(!v2.path().join(ADOPT_STAGING_DIR).exists());
    assert!(files.removed.load(std::sync::atomic::Ordering::SeqCst));
    assert_same_rows(&all_rows(v2.path()), &expected, "every row, byte for byte");

    reth_hybrid_migrate::migrate(
        v1.path(),
        &reth_hybrid_migrate::MigrateRequest::new(reth_hybrid_api::EngineKind::RocksDb),
        &NoProgress,
    )
    .expect("migrate the twin");
    let layout = |dir: &Path| {
        let engine = MdbxEngine::open_read_only(dir).expect("mdbx");
        reth_hybrid_hybrid::control::get_bytes(
            &engine.begin_ro().expect("ro"),
            reth_hybrid_hybrid::layout::LAYOUT_KEY,
        )
        .expect("get")
        .expect("a recorded layout")
    };
    assert_eq!(
        layout(v2.path()),
        layout(v1.path()),
        "the layout migrate records"
    );
    let verified = reth_hybrid_migrate::verify::verify(v2.path(), &NoProgress).expect("verify");
    assert!(verified.passed(), "{verified:?}");

    // The way back: a stock v1 datadir, the twin's rows.
    reth_hybrid_migrate::migrate(
        v2.path(),
        &reth_hybrid_migrate::MigrateRequest::new(reth_hybrid_api::EngineKind::Mdbx),
        &NoProgress,
    )
    .expect("back to mdbx");
    assert_same_rows(&all_rows(v2.path()), &expected, "rolled back to v1");
    assert_eq!(
        common::counts(v2.path(), Tables::TransactionHashNumbers).1,
        0
    );
}

/// An adoption is finished with the target it started with: a rerun asking for the other one
/// is refused and changes nothing. A hybrid adoption interrupted and restaged (a v2 node ran in
/// between) copies into a fresh hybrid-rocksdb, without the stale copy.
#[test]
fn a_hybrid_adoption_keeps_its_target_and_restages_its_rocksdb() {
    let (_v1, expected, v2, mut files) = v1_and_v2_twin(2, 8);
    files.fail_at = Some(150);
    // The static files fail while reth's RocksDB tables are ingested beside them: their error is
    // the one reported, and the ingestion stops at its next file (how far it got is a race).
    let err = adopt(v2.path(), &files, AdoptTarget::Hybrid).expect_err("interrupted");
    assert!(matches!(err, AdoptError::StaticFiles { .. }), "{err}");
    assert!(
        reth_hybrid_rocksdb::is_initialized(
            &v2.path().join(reth_hybrid_rocksdb::HYBRID_ROCKSDB_DIR)
        ),
        "hybrid-rocksdb made"
    );
    files.fail_at = None;
    let before = common::files(v2.path());
    let err = adopt(v2.path(), &files, AdoptTarget::V1).expect_err("other target");
    assert!(
        matches!(err, AdoptError::Refused { .. }) && err.to_string().contains("--to hybrid"),
        "{err}"
    );
    assert_eq!(
        common::files(v2.path()),
        before,
        "the refusal changed nothing"
    );

    // A stale staged row in hybrid-rocksdb: gone with the restage.
    {
        let rocks =
            reth_hybrid_rocksdb::RocksEngine::open_in_datadir_for_bulk(v2.path()).expect("rocksdb");
        let tx = rocks.begin_rw().expect("rw");
        tx.put(Tables::TransactionHashNumbers, &[0xee; 32], &[7])
            .expect("stale row");
        tx.commit().expect("commit");
    }
    a_v2_node_ran(v2.path());
    adopt(v2.path(), &files, AdoptTarget::Hybrid).expect("restaged");
    let mut adopted = all_rows(v2.path());
    adopted
        .get_mut(&Tables::StageCheckpoints)
        .expect("table")
        .retain(|(k, _)| k != b"SomeStage");
    assert_same_rows(&adopted, &expected, "restaged without the stale rows");
}

/// What a v2 node run between two adoption attempts leaves: a moved checkpoint (a new source
/// identity), and a staged row the older head's staging would not have (`SomeStage` is dropped
/// from the comparison afterwards).
fn a_v2_node_ran(datadir: &Path) {
    let engine = open(datadir);
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
    a_v2_node_ran(v2.path());
    files.fail_at = None;
    adopt_to_v1(v2.path(), &files, &NoProgress).expect("restart");
    let mut adopted = all_rows(v2.path());
    adopted
        .get_mut(&Tables::StageCheckpoints)
        .expect("table")
        .retain(|(k, _)| k != b"SomeStage");
    assert_same_rows(&adopted, &expected, "the stale row went with the restart");
}

/// Changes one row of a v2 twin's tries with `change` (a read-write transaction on MDBX).
fn damage_tries(datadir: &Path, change: impl FnOnce(&<MdbxEngine as RawEngine>::TxMut)) {
    let engine = open(datadir);
    let tx = engine.begin_rw().expect("rw");
    change(&tx);
    tx.commit().expect("commit");
}

#[test]
fn a_stored_trie_that_differs_from_the_state_is_refused_before_anything_is_written() {
    let refused = |datadir: &Path, files: &MemoryStaticFiles, table: Tables, says: &str| {
        let before = common::files(datadir);
        let err = adopt_to_v1(datadir, files, &NoProgress).expect_err("damaged trie");
        match &err {
            AdoptError::Trie {
                table: t, problem, ..
            } => {
                assert_eq!(*t, table, "{err}");
                assert!(problem.contains(says), "{err}");
            }
            other => panic!("expected a trie refusal, got: {other}"),
        }
        assert!(err.to_string().contains("Nothing was changed"), "{err}");
        assert!(err.to_string().contains("stage drop"), "{err}");
        assert_eq!(common::files(datadir), before, "nothing written");
    };

    // A storage trie node with one hash byte flipped: the state root (from the hashed state) is
    // still right, only the stored node is wrong.
    let (_v1, _, v2, files) = v1_and_v2_twin(1, 14);
    damage_tries(v2.path(), |tx| {
        let mut cursor = tx.cursor_mut(Tables::StoragesTrie).expect("cursor");
        let (key, mut value) = cursor.last().expect("last").expect("a storage node");
        *value.last_mut().expect("byte") ^= 0x01;
        cursor.delete_current().expect("delete");
        drop(cursor);
        tx.put(Tables::StoragesTrie, &key, &value).expect("put");
    });
    refused(
        v2.path(),
        &files,
        Tables::StoragesTrie,
        "where the state gives",
    );

    // An account trie node missing.
    let (_v1, _, v2, files) = v1_and_v2_twin(1, 14);
    damage_tries(v2.path(), |tx| {
        let mut cursor = tx.cursor_mut(Tables::AccountsTrie).expect("cursor");
        cursor.first().expect("first").expect("an account node");
        cursor.delete_current().expect("delete");
    });
    refused(v2.path(), &files, Tables::AccountsTrie, "no node at path");

    // A stale node the state does not derive (every derived one is right).
    let (_v1, _, v2, files) = v1_and_v2_twin(1, 14);
    damage_tries(v2.path(), |tx| {
        let path = Nibbles::from_nibbles([0xf; 40]);
        tx.put(
            Tables::AccountsTrie,
            &PackedStoredNibbles(path).to_array(),
            &[0x00, 0x03, 0x00, 0x00, 0x00, 0x00],
        )
        .expect("put");
    });
    refused(v2.path(), &files, Tables::AccountsTrie, "stale");
}

#[test]
fn a_resumed_adoption_checks_the_tries_again_unless_its_state_file_says_it_did() {
    let (_v1, expected, v2, mut files) = v1_and_v2_twin(2, 15);
    files.fail_at = Some(150);
    adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("interrupted");
    files.fail_at = None;
    let state_path = v2.path().join(ADOPT_STATE_FILE);
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&state_path).expect("state")).expect("json");
    assert_eq!(state["version"], 3, "{state}");
    assert_eq!(state["target"], "v1", "{state}");
    let with_version = |version: u64| {
        let mut state = state.clone();
        state["version"] = version.into();
        std::fs::write(&state_path, serde_json::to_vec(&state).expect("json")).expect("write");
    };

    // A state file from a newer build is not guessed at.
    with_version(4);
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("newer state");
    assert!(
        matches!(err, AdoptError::UnreadableState { .. }) && err.to_string().contains("newer"),
        "{err}"
    );

    // Version 1 predates the trie check: the resumed run checks (and here refuses a damaged
    // node), where a version 2 state's run would trust its first run's check.
    with_version(1);
    let (key, value) = {
        let engine = open(v2.path());
        let tx = engine.begin_ro().expect("ro");
        let mut cursor = tx.cursor(Tables::AccountsTrie).expect("cursor");
        cursor.last().expect("last").expect("an account node")
    };
    let mut damaged = value.clone();
    *damaged.last_mut().expect("byte") ^= 0x01;
    damage_tries(v2.path(), |tx| {
        tx.put(Tables::AccountsTrie, &key, &damaged).expect("put")
    });
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("checked again");
    assert!(matches!(err, AdoptError::Trie { .. }), "{err}");

    damage_tries(v2.path(), |tx| {
        tx.put(Tables::AccountsTrie, &key, &value).expect("put")
    });
    adopt_to_v1(v2.path(), &files, &NoProgress).expect("resume");
    assert_same_rows(&all_rows(v2.path()), &expected, "resumed");
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

    // A senders segment that ends before the head's last transaction.
    let (_v1, _, v2, mut files) = v1_and_v2_twin(1, 3);
    let (last_tx, _) = files.senders.pop_last().expect("senders");
    let before = common::files(v2.path());
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("senders behind");
    assert!(
        err.to_string().contains(&format!(
            "senders up to transaction {}, below its head's last transaction {last_tx}",
            last_tx - 1
        )),
        "{err}"
    );
    assert_eq!(common::files(v2.path()), before);

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

#[test]
fn a_state_root_that_does_not_match_the_head_is_refused_before_anything_is_written() {
    let (_v1, _, v2, mut files) = v1_and_v2_twin(1, 6);
    // The twin's root is right (alloy-trie's, from the plain state): a dry run passes.
    let plan = reth_hybrid_adopt::check_adoption(
        v2.path(),
        &OurMdbx,
        &files,
        AdoptTarget::V1,
        &NoProgress,
    )
    .expect("plan");
    assert_eq!(plan.state_root, files.state_root);
    assert_eq!(plan.start, reth_hybrid_adopt::AdoptStart::Fresh);
    assert!(plan.needed_bytes > 0 && plan.available_bytes > 0);

    files.state_root = keccak256(b"another chain");
    let before = common::files(v2.path());
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("wrong root");
    assert!(
        matches!(err, AdoptError::StateRoot { block: 100, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("Nothing was changed"), "{err}");
    assert_eq!(common::files(v2.path()), before);

    // One changed hashed slot changes the recomputed root: the check reads every row.
    files.state_root = plan.state_root;
    {
        let engine = open(v2.path());
        let tx = engine.begin_rw().expect("rw");
        let mut cursor = tx.cursor_mut(Tables::HashedStorages).expect("cursor");
        let (key, mut value) = cursor.last().expect("last").expect("a slot");
        *value.last_mut().expect("value byte") ^= 1;
        cursor.delete_current().expect("delete");
        drop(cursor);
        tx.put(Tables::HashedStorages, &key, &value).expect("put");
        tx.commit().expect("commit");
    }
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("changed slot");
    assert!(matches!(err, AdoptError::StateRoot { .. }), "{err}");
}

#[test]
fn changesets_that_differ_from_the_static_files_counts_stop_before_the_switch() {
    let (_v1, _, v2, mut files) = v1_and_v2_twin(1, 7);
    let block = *files.accounts.keys().nth(3).expect("a block with changes");
    files.count_skew = Some(block);
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("count");
    assert!(
        matches!(
            err,
            AdoptError::ChangesetCount {
                table: Tables::AccountChangeSets,
                block: b,
                ..
            } if b == block
        ),
        "{err}"
    );
    // The storage side, where a block's rows are counted per changed address.
    files.count_skew = None;
    let block = *files
        .storage
        .iter()
        .find(|(_, rows)| {
            let addresses: std::collections::BTreeSet<_> = rows.iter().map(|(a, _)| a).collect();
            addresses.len() > 1 && rows.len() > addresses.len()
        })
        .expect("a block changing several slots of several addresses")
        .0;
    files.storage_count_skew = Some(block);
    let err = adopt_to_v1(v2.path(), &files, &NoProgress).expect_err("count");
    assert!(
        matches!(
            err,
            AdoptError::ChangesetCount {
                table: Tables::StorageChangeSets,
                block: b,
                mdbx,
                files,
            } if b == block && mdbx == files + 1
        ),
        "{err}"
    );
    // Still the v2 datadir it was: the switch did not happen.
    assert!(settings_say_v2(v2.path()));
    assert_eq!(common::counts(v2.path(), Tables::PlainAccountState), (0, 0));
}

#[test]
fn static_file_rows_out_of_reths_order_are_refused_naming_the_block() {
    // To the hybrid too, where the RocksDB tables are ingested beside the copy that fails.
    for target in [AdoptTarget::V1, AdoptTarget::Hybrid] {
        let (_v1, _, v2, mut files) = v1_and_v2_twin(1, 7);
        let block = *files
            .storage
            .iter()
            .find(|(_, rows)| rows.len() > 1)
            .expect("a block changing two slots")
            .0;
        files.storage.get_mut(&block).expect("rows").reverse();
        let err = adopt(v2.path(), &files, target).expect_err("out of order");
        // The error and its causes, as the command prints them.
        let mut message = err.to_string();
        let mut cause = std::error::Error::source(&err);
        while let Some(c) = cause {
            message += &format!(": {c}");
            cause = c.source();
        }
        assert!(
            matches!(&err, AdoptError::StaticFiles { what, .. } if what.ends_with(&format!("of block {block}"))),
            "{target:?}: {message}"
        );
        assert!(message.contains("out of reth's order"), "{message}");
        assert!(message.contains("still a working v2 datadir"), "{message}");
        // Nothing was switched: still a v2 datadir.
        assert!(settings_say_v2(v2.path()), "{target:?}");
    }
}

const CHILD_V2: &str = "RETH_HYBRID_ADOPT_CHILD_V2";
const CHILD_V1: &str = "RETH_HYBRID_ADOPT_CHILD_V1";
const CHILD_HEAD: &str = "RETH_HYBRID_ADOPT_CHILD_HEAD";
const CHILD_TARGET: &str = "RETH_HYBRID_ADOPT_CHILD_TARGET";
/// Set: the child abandons the adoption instead of running it.
const CHILD_ABANDON: &str = "RETH_HYBRID_ADOPT_CHILD_ABANDON";

/// Where the kill test's children record the static files' removal.
fn removed_marker(v2: &Path) -> std::path::PathBuf {
    v2.with_extension("static-files-removed")
}

#[test]
#[ignore = "entry point of the kill test's child process; run by it"]
fn adoption_child() {
    let v2 = std::path::PathBuf::from(std::env::var(CHILD_V2).expect("run by the kill test"));
    let v1 = std::path::PathBuf::from(std::env::var(CHILD_V1).expect("v1 twin"));
    let head: u64 = std::env::var(CHILD_HEAD)
        .expect("head")
        .parse()
        .expect("number");
    let target = match std::env::var(CHILD_TARGET).as_deref() {
        Ok("hybrid") => AdoptTarget::Hybrid,
        _ => AdoptTarget::V1,
    };
    if std::env::var_os(CHILD_ABANDON).is_some() {
        reth_hybrid_adopt::abandon(&v2, &OurMdbx).expect("abandon finishes");
        return;
    }
    let mut files = static_files_of(&v1, head);
    files.removed_marker = Some(removed_marker(&v2));
    adopt(&v2, &files, target).expect("adoption finishes");
}

/// Crash points in the order adoption reaches them, with how many times each is passed on a
/// twin of scale 2 (the copies commit every 200,000 / 1,000 blocks / 100,000 rows: once here).
/// The hybrid target passes `AdoptIngestAfterFile` (one file per table here) instead of
/// `AdoptCopyAfterCommit`, on a thread of its own beside `AdoptStaticAfterCommit`.
const ADOPT_POINTS: [(&str, u64); 7] = [
    ("AdoptAfterStateWrite", 1),
    ("AdoptCopyAfterCommit", 3),
    ("AdoptStaticAfterCommit", 1),
    ("AdoptPlainAfterCommit", 2),
    ("AdoptAfterSwitch", 1),
    ("AdoptAfterUpstreamClear", 1),
    ("AdoptAfterSourceRemove", 1),
];

fn run_adoption_child(v2: &Path, v1: &Path, head: u64, crash_at: Option<String>) -> bool {
    run_adoption_child_to(AdoptTarget::V1, v2, v1, head, crash_at)
}

fn run_adoption_child_to(
    target: AdoptTarget,
    v2: &Path,
    v1: &Path,
    head: u64,
    crash_at: Option<String>,
) -> bool {
    run_child(target, v2, v1, head, crash_at, false)
}

/// The child abandoning the adoption in `v2`; true when it was killed at `crash_at`.
fn run_abandon_child(v2: &Path, v1: &Path, crash_at: String) -> bool {
    run_child(AdoptTarget::V1, v2, v1, 0, Some(crash_at), true)
}

fn run_child(
    target: AdoptTarget,
    v2: &Path,
    v1: &Path,
    head: u64,
    crash_at: Option<String>,
    abandon: bool,
) -> bool {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("test binary"));
    if abandon {
        cmd.env(CHILD_ABANDON, "1");
    } else {
        cmd.env_remove(CHILD_ABANDON);
    }
    cmd.args([
        "--ignored",
        "--exact",
        "adoption_child",
        "--test-threads=1",
        "--nocapture",
    ])
    .env(CHILD_V2, v2)
    .env(CHILD_V1, v1)
    .env(CHILD_HEAD, head.to_string())
    .env(CHILD_TARGET, target.as_str())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped());
    match &crash_at {
        Some(spec) => cmd.env("RETH_HYBRID_CRASH_AT", spec),
        None => cmd.env_remove("RETH_HYBRID_CRASH_AT"),
    };
    let out = cmd.output().expect("child");
    if out.status.signal() == Some(9) {
        return true;
    }
    assert!(
        out.status.success(),
        "child failed ({}, crash_at {crash_at:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// An adoption killed with SIGKILL at each of its crash points, one after another on the same
/// datadir (each kill lands ahead of the resumed run), then let finish: every table equals the
/// v1 twin's, reth's copies are cleared and the static files removed, with no state file left.
/// And at each point alone: the killed datadir is v2 as stock reth reads it (before the switch)
/// or v1 (after it), and a rerun finishes it.
#[test]
fn an_adoption_killed_at_every_step_resumes_to_the_v1_twins_tables() {
    killed_at_every_step(AdoptTarget::V1);
}

/// The same for the hybrid target: the rows end up where the hybrid layout keeps them, and the
/// staged SST files are gone.
#[test]
fn a_hybrid_adoption_killed_at_every_step_resumes_to_the_v1_twins_rows() {
    killed_at_every_step(AdoptTarget::Hybrid);
}

fn killed_at_every_step(target: AdoptTarget) {
    let (v1, expected, template, _) = v1_and_v2_twin(2, 9);
    let head = 200;
    let run = |dir: &Path, spec: Option<String>| {
        run_adoption_child_to(target, dir, v1.path(), head, spec)
    };
    let points = ADOPT_POINTS.map(|(point, passes)| match (target, point) {
        (AdoptTarget::Hybrid, "AdoptCopyAfterCommit") => ("AdoptIngestAfterFile", passes),
        _ => (point, passes),
    });
    let finished = |dir: &Path, what: &str| {
        assert_same_rows(&all_rows(dir), &expected, what);
        let in_rocksdb = common::counts(dir, Tables::TransactionHashNumbers).1 > 0;
        assert_eq!(in_rocksdb, target == AdoptTarget::Hybrid, "{what}: where");
        assert!(!dir.join(ADOPT_STAGING_DIR).exists(), "{what}: staging");
        assert!(!dir.join(ADOPT_STATE_FILE).exists(), "{what}: state file");
        assert!(removed_marker(dir).exists(), "{what}: static files removed");
        let families = reth_hybrid_rocksdb::inspect_upstream_rocksdb(&dir.join("rocksdb"))
            .expect("inspect")
            .expect("rocksdb");
        assert!(
            families.iter().all(|f| !f.has_rows),
            "{what}: reth's copies"
        );
    };

    // Every point on one datadir, in order. The hybrid target ingests reth's RocksDB tables
    // while it copies the static files, so those two copies' points come in no fixed order:
    // this run is killed at the ingestion's last one only (the static copy may be done by
    // then, or not); each point alone is covered below.
    let in_turn: Vec<(&str, u64)> = points
        .into_iter()
        .filter(|(point, _)| target == AdoptTarget::V1 || *point != "AdoptStaticAfterCommit")
        .collect();
    let work = tempfile::tempdir().expect("tmp");
    let dir = work.path().join("all");
    common::copy_tree(template.path(), &dir);
    let mut kills = 0;
    for (point, passes) in &in_turn {
        if run(&dir, Some(format!("{point}:{passes}"))) {
            kills += 1;
        }
    }
    assert!(!run(&dir, None), "the last run finishes");
    finished(&dir, "killed at every point in turn");
    assert_eq!(kills, in_turn.len(), "every point was reached and killed");

    // Each point alone, on a fresh copy: what stock reth would find, then the rerun.
    for (point, passes) in points {
        for pass in 1..=passes {
            let dir = work.path().join(format!("{point}-{pass}"));
            common::copy_tree(template.path(), &dir);
            assert!(
                run(&dir, Some(format!("{point}:{pass}"))),
                "{point}:{pass} reached"
            );
            let switched = points
                .iter()
                .position(|(p, _)| *p == point)
                .expect("listed")
                >= points
                    .iter()
                    .position(|(p, _)| *p == "AdoptAfterSwitch")
                    .expect("listed");
            assert_eq!(
                settings_say_v2(&dir),
                !switched,
                "{point}:{pass}: v2 until the switch, v1 after it"
            );
            if !switched {
                // What a v2 node reads is as it was: its tries and hashed state untouched.
                let rows = all_rows(&dir);
                let before = all_rows(template.path());
                for table in [
                    Tables::AccountsTrie,
                    Tables::StoragesTrie,
                    Tables::HashedAccounts,
                    Tables::HashedStorages,
                    Tables::StageCheckpoints,
                ] {
                    assert_eq!(rows[&table], before[&table], "{point}:{pass} {table}");
                }
            }
            assert!(!run(&dir, None), "{point}:{pass}: the rerun finishes");
            finished(&dir, &format!("killed at {point}:{pass}"));
        }
    }
}

/// An adoption abandoned before its switch leaves the v2 datadir as reth left it. For both
/// targets, an adoption killed at each of its points before the switch, then abandoned (the
/// abandon itself killed at one of its own points and rerun, in turn): MDBX and reth-hybrid's
/// RocksDB hold exactly the v2 datadir's rows, reth's RocksDB files are byte for byte what they
/// were, and nothing of ours is left; a second abandon finds nothing to do, and an adoption
/// started afresh on the abandoned datadir finishes.
#[test]
fn an_adoption_abandoned_before_its_switch_leaves_the_v2_datadir_as_it_was() {
    let (v1, expected, template, _) = v1_and_v2_twin(2, 9);
    let head = 200;
    let v2_rows = all_rows(template.path());
    let reths_files = common::files(&template.path().join("rocksdb"));
    let work = tempfile::tempdir().expect("tmp");
    for target in [AdoptTarget::V1, AdoptTarget::Hybrid] {
        let copy_point = match target {
            AdoptTarget::V1 => "AdoptCopyAfterCommit",
            AdoptTarget::Hybrid => "AdoptIngestAfterFile",
        };
        // Where the abandon itself is killed, per adoption point: a hybrid adoption's RocksDB
        // exists from its first ingested file on, and is renamed aside before it is removed.
        let abandon_kills = match target {
            AdoptTarget::V1 => [
                Some("AbandonAfterClear"),
                Some("AbandonAfterRemove"),
                None,
                Some("AbandonAfterClear"),
            ],
            AdoptTarget::Hybrid => [
                Some("AbandonAfterClear"),
                Some("AdoptDirRenamedForRemoval"),
                Some("AbandonAfterRemove"),
                Some("AdoptDirRenamedForRemoval"),
            ],
        };
        for (point, abandon_kill) in [
            "AdoptAfterStateWrite",
            copy_point,
            "AdoptStaticAfterCommit",
            "AdoptPlainAfterCommit",
        ]
        .into_iter()
        .zip(abandon_kills)
        {
            let what = format!("{} killed at {point}", target.as_str());
            let dir = work.path().join(format!("{}-{point}", target.as_str()));
            common::copy_tree(template.path(), &dir);
            assert!(
                run_adoption_child_to(target, &dir, v1.path(), head, Some(format!("{point}:1"))),
                "{what}: reached"
            );
            if let Some(kill) = abandon_kill {
                assert!(
                    run_abandon_child(&dir, v1.path(), format!("{kill}:1")),
                    "{what}: abandon killed at {kill}"
                );
                // Killed with the RocksDB renamed aside: an adoption rerun instead of the
                // abandon resumes on a clean name (no half-removed RocksDB) and finishes.
                if kill == "AdoptDirRenamedForRemoval" {
                    let rerun = work
                        .path()
                        .join(format!("{}-{point}-adopted", target.as_str()));
                    common::copy_tree(&dir, &rerun);
                    assert!(
                        !run_adoption_child_to(target, &rerun, v1.path(), head, None),
                        "{what}: the adoption rerun after the killed abandon finishes"
                    );
                    assert_same_rows(&all_rows(&rerun), &expected, &format!("{what}, readopted"));
                    assert!(
                        !rerun.join("hybrid-rocksdb.removing").exists(),
                        "{what}: what was set aside is removed by the adoption"
                    );
                }
            }
            let report = reth_hybrid_adopt::abandon(&dir, &OurMdbx).expect("abandon");
            assert_eq!(report.target, target, "{what}");
            assert!(
                report.removed.contains(&dir.join(ADOPT_STATE_FILE)),
                "{what}: {report:?}"
            );
            assert_same_rows(&all_rows(&dir), &v2_rows, &format!("{what}, abandoned"));
            assert_eq!(
                common::files(&dir.join("rocksdb")),
                reths_files,
                "{what}: reth's RocksDB untouched"
            );
            for ours in [
                ADOPT_STATE_FILE,
                ADOPT_STAGING_DIR,
                reth_hybrid_rocksdb::HYBRID_ROCKSDB_DIR,
            ] {
                assert!(!dir.join(ours).exists(), "{what}: {ours} left");
            }
            let err = reth_hybrid_adopt::abandon(&dir, &OurMdbx).expect_err("nothing left");
            assert!(
                err.to_string().contains("no adoption was started here"),
                "{what}: {err}"
            );
        }
    }
    let dir = work.path().join("hybrid-AdoptStaticAfterCommit");
    assert!(!run_adoption_child_to(
        AdoptTarget::Hybrid,
        &dir,
        v1.path(),
        head,
        None
    ));
    assert_same_rows(&all_rows(&dir), &expected, "adopted after an abandon");
}

/// Abandoning is refused, changing nothing, where there is nothing of an adoption's to undo
/// before its switch: no adoption started, a datadir the adoption has switched, and a
/// `hybrid-rocksdb/` beside an adoption to v1 (not its own).
#[test]
fn abandoning_is_refused_where_it_would_undo_more_than_an_unswitched_adoption() {
    let (v1, _, template, _) = v1_and_v2_twin(1, 5);
    let head = 100;
    let work = tempfile::tempdir().expect("tmp");

    let fresh = work.path().join("fresh");
    common::copy_tree(template.path(), &fresh);
    let before = common::files(&fresh);
    let err = reth_hybrid_adopt::abandon(&fresh, &OurMdbx).expect_err("no adoption");
    assert!(matches!(err, AdoptError::AbandonRefused { .. }), "{err}");
    assert!(
        err.to_string().contains("no adoption was started here"),
        "{err}"
    );
    assert_eq!(common::files(&fresh), before);

    for target in [AdoptTarget::V1, AdoptTarget::Hybrid] {
        let switched = work.path().join(format!("switched-{}", target.as_str()));
        common::copy_tree(template.path(), &switched);
        assert!(run_adoption_child_to(
            target,
            &switched,
            v1.path(),
            head,
            Some("AdoptAfterSwitch:1".into())
        ));
        let before = common::files(&switched);
        let err = reth_hybrid_adopt::abandon(&switched, &OurMdbx).expect_err("switched");
        assert!(
            err.to_string().contains("has switched the datadir"),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains(&format!("--to {}", target.as_str())),
            "{err}"
        );
        assert_eq!(common::files(&switched), before, "{}", target.as_str());
    }

    let foreign = work.path().join("foreign");
    common::copy_tree(template.path(), &foreign);
    assert!(run_adoption_child_to(
        AdoptTarget::V1,
        &foreign,
        v1.path(),
        head,
        Some("AdoptAfterStateWrite:1".into())
    ));
    drop(
        reth_hybrid_rocksdb::RocksEngine::open_in_datadir_for_bulk(&foreign)
            .expect("a RocksDB the adoption did not write"),
    );
    let before = common::files(&foreign);
    let err = reth_hybrid_adopt::abandon(&foreign, &OurMdbx).expect_err("foreign rocksdb");
    assert!(err.to_string().contains("did not write"), "{err}");
    assert_eq!(common::files(&foreign), before);
}

/// A run killed inside an ingestion can leave the staged file's name beside its hard link in
/// the table: the rerun must not write through that name (RocksDB truncates what it opens),
/// which would empty a live SST file of the table.
#[test]
fn a_staged_name_left_linked_to_a_live_sst_file_does_not_damage_it() {
    let (v1, expected, template, _) = v1_and_v2_twin(1, 16);
    let head = 100;
    let work = tempfile::tempdir().expect("tmp");
    let dir = work.path().join("v2");
    common::copy_tree(template.path(), &dir);
    assert!(run_adoption_child_to(
        AdoptTarget::Hybrid,
        &dir,
        v1.path(),
        head,
        Some("AdoptIngestAfterFile:1".into())
    ));
    // The largest live SST file is the tx-hash table's one ingested file.
    let live = std::fs::read_dir(dir.join(reth_hybrid_rocksdb::HYBRID_ROCKSDB_DIR))
        .expect("read_dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .max_by_key(|p| std::fs::metadata(p).expect("meta").len())
        .expect("an ingested file");
    let bytes = std::fs::read(&live).expect("read");
    let staging = dir.join(ADOPT_STAGING_DIR);
    std::fs::hard_link(&live, staging.join("TransactionHashNumbers-000000.sst")).expect("link");
    assert!(
        !run_adoption_child_to(AdoptTarget::Hybrid, &dir, v1.path(), head, None),
        "the rerun finishes"
    );
    assert_eq!(
        std::fs::read(&live).expect("read"),
        bytes,
        "the live file is intact"
    );
    assert_same_rows(&all_rows(&dir), &expected, "after the rerun");
}

/// A restage (a v2 node ran since staging began) killed right after its clear or right after
/// its new state file: the rerun must not resume on the stale rows of the older head.
#[test]
fn a_restaged_adoption_killed_at_its_clear_or_state_file_restages_to_equal_tables() {
    let (v1, expected, template, _) = v1_and_v2_twin(2, 10);
    let head = 200;
    let cases = [AdoptTarget::V1, AdoptTarget::Hybrid]
        .into_iter()
        .flat_map(|target| {
            ["AdoptAfterRestageClear", "AdoptAfterStateWrite"].map(|point| (target, point))
        });
    for (target, point) in cases {
        let first_copy = match target {
            AdoptTarget::V1 => "AdoptCopyAfterCommit:2",
            AdoptTarget::Hybrid => "AdoptIngestAfterFile:2",
        };
        let work = tempfile::tempdir().expect("tmp");
        let dir = work.path().join("v2");
        common::copy_tree(template.path(), &dir);
        // Staging began, then stopped part way.
        assert!(run_adoption_child_to(
            target,
            &dir,
            v1.path(),
            head,
            Some(first_copy.into())
        ));
        // A v2 node ran: a checkpoint moved, and a row the older head's staging would not have.
        a_v2_node_ran(&dir);
        // The restage, killed (the state file's pass is the restage's own: the first run's
        // was in another process).
        assert!(
            run_adoption_child_to(target, &dir, v1.path(), head, Some(format!("{point}:1"))),
            "{target:?} {point} reached"
        );
        assert!(
            !run_adoption_child_to(target, &dir, v1.path(), head, None),
            "{target:?} {point}: rerun finishes"
        );
        let mut adopted = all_rows(&dir);
        adopted
            .get_mut(&Tables::StageCheckpoints)
            .expect("table")
            .retain(|(k, _)| k != b"SomeStage");
        assert_same_rows(
            &adopted,
            &expected,
            &format!("{target:?}: killed at {point} in a restage"),
        );
        assert_eq!(
            common::counts(&dir, Tables::TransactionHashNumbers).1 > 0,
            target == AdoptTarget::Hybrid,
            "{target:?}: where the tx hashes are"
        );
    }
}

/// Killed after the switch and the clear of reth's copies, then migrated by an operator before
/// rerunning: the rerun still finishes the clean-up (the static files and the state file), as
/// the hybrid's own RocksDB is no reason to refuse an adoption that is past its switch.
#[test]
fn an_adoption_killed_in_its_clean_up_and_migrated_meanwhile_still_finishes() {
    let (v1, expected, template, _) = v1_and_v2_twin(1, 12);
    let head = 100;
    let work = tempfile::tempdir().expect("tmp");
    let dir = work.path().join("v2");
    common::copy_tree(template.path(), &dir);
    assert!(run_adoption_child(
        &dir,
        v1.path(),
        head,
        Some("AdoptAfterUpstreamClear:1".into())
    ));
    reth_hybrid_migrate::migrate(
        &dir,
        &reth_hybrid_migrate::MigrateRequest::new(reth_hybrid_api::EngineKind::RocksDb),
        &NoProgress,
    )
    .expect("migrate");
    assert!(dir.join(ADOPT_STATE_FILE).exists());
    assert!(
        !run_adoption_child(&dir, v1.path(), head, None),
        "the rerun finishes"
    );
    assert!(!dir.join(ADOPT_STATE_FILE).exists());
    assert!(removed_marker(&dir).exists(), "static files removed");
    assert_eq!(all_rows(&dir), expected);
}

/// A v2 node killed in the middle of saving blocks leaves rows past its head in reth's RocksDB
/// (written before MDBX); adoption refuses to carry them into v1, and the datadir stays v2.
#[test]
fn rows_past_the_head_in_reths_rocksdb_are_refused_before_the_switch() {
    for target in [AdoptTarget::V1, AdoptTarget::Hybrid] {
        rows_past_the_head_are_refused(target);
    }
}

fn rows_past_the_head_are_refused(target: AdoptTarget) {
    for (table, key, value) in [
        // A tx hash pointing past the last transaction.
        (
            Tables::TransactionHashNumbers,
            vec![0xee; 32],
            reth_hybrid_api::table::compress_to_vec(&u64::MAX),
        ),
        // An open shard listing a block past the head.
        (
            Tables::AccountsHistory,
            [&[0xee; 20][..], &u64::MAX.to_be_bytes()].concat(),
            reth_hybrid_api::table::compress_to_vec(
                &reth_hybrid_api::models::IntegerList::new([5, 101]).expect("list"),
            ),
        ),
    ] {
        let (_v1, _, v2, files) = v1_and_v2_twin(1, 13);
        {
            let names: Vec<&str> = UPSTREAM_TABLES.iter().map(|t| t.name()).collect();
            let db = rocksdb::DB::open_cf(
                &rocksdb::Options::default(),
                v2.path().join("rocksdb"),
                names,
            )
            .expect("open");
            db.put_cf(db.cf_handle(table.name()).expect("cf"), &key, &value)
                .expect("put");
        }
        let err = adopt(v2.path(), &files, target).expect_err("past the head");
        assert!(
            matches!(err, AdoptError::RowsPastHead { table: t, head: 100, .. } if t == table),
            "{err}"
        );
        assert!(err.to_string().contains("Start the v2 node once"), "{err}");
        assert_eq!(
            common::counts(v2.path(), table),
            (0, 0),
            "{target:?}: nothing of {table} landed"
        );
        assert!(settings_say_v2(v2.path()), "still v2");
    }
}

/// The derivation behind the trie check gives exactly the branch nodes real reth stored: on the
/// datadirs reth v2.2 wrote (v1 keys; the dev chain's tries were updated block by block over
/// 2602 blocks, not built once), every stored node is derived with the same bytes and no other
/// node is. A check that refused such a datadir would block every real adoption.
#[test]
fn the_derived_tries_are_the_ones_real_reth_stored() {
    let fixtures = reth_hybrid_api::test_support::fixture_datadirs(
        "the_derived_tries_are_the_ones_real_reth_stored",
        Path::new(env!("CARGO_MANIFEST_DIR")),
    )
    .unwrap_or_default();
    for fixture in fixtures {
        let work = tempfile::tempdir().expect("tmp");
        common::copy_tree(&fixture, work.path());
        let engine = open(work.path());
        let mut derived = Vec::new();
        for node in derived_tries_of(&engine) {
            match node {
                TrieNode::Account { path, node } => derived.push((
                    Tables::AccountsTrie,
                    StoredNibbles(path).encode().to_vec(),
                    compress_to_vec(&node),
                )),
                TrieNode::Storage {
                    hashed_address,
                    path,
                    node,
                } => derived.push((
                    Tables::StoragesTrie,
                    hashed_address.to_vec(),
                    [
                        &StoredNibblesSubKey(path).encode()[..],
                        &compress_to_vec(&node),
                    ]
                    .concat(),
                )),
            }
        }
        derived.sort();
        drop(engine);
        let rows = all_rows(work.path());
        let mut stored: Vec<_> = [Tables::AccountsTrie, Tables::StoragesTrie]
            .into_iter()
            .flat_map(|t| rows[&t].iter().map(move |(k, v)| (t, k.clone(), v.clone())))
            .collect();
        stored.sort();
        assert!(
            !stored.is_empty(),
            "{}: reth stored tries",
            fixture.display()
        );
        assert_eq!(
            derived.len(),
            stored.len(),
            "{}: as many nodes",
            fixture.display()
        );
        for (d, s) in derived.iter().zip(&stored) {
            assert_eq!(
                (d.0, hex::encode(&d.1), hex::encode(&d.2)),
                (s.0, hex::encode(&s.1), hex::encode(&s.2)),
                "{}: first differing node",
                fixture.display()
            );
        }
    }
}
