//! A storage-v2 twin of a generated v1 datadir, for adoption's benchmark (`benches/adopt.rs`)
//! and its test: what reth's v2 layout holds, built from the v1 rows.
//!
//! - `db/`: a fresh MDBX with every table but the eight v2 leaves empty (history, tx hashes,
//!   changesets, senders, plain state), and the tries under v2's packed keys, derived from the
//!   hashed state by adoption's own check (`state_trie_of_hashed_state`: branch nodes as reth
//!   stores them, roots excluded); `storage_settings` says v2. Written table by table, so the file holds no free pages a real
//!   v2 datadir would not have.
//! - `rocksdb/`: reth's column families for the three tables, filled by SST ingestion.
//! - `static/`: a flat stand-in for reth's static files (only reth reads its NippyJar format, and
//!   reth cannot open a generated datadir): each block's account and storage changes as the MDBX
//!   rows' bytes, an index of offsets and counts per block, senders by tx number, and the head's
//!   state root. Read from disk through [`FlatStaticFiles`], block by block, as adoption reads
//!   reth's files.

use alloy_primitives::{Address, B256};
use reth_hybrid_adopt::{
    MdbxOpener, NoProgress, OpenError, STAGED_TABLES,
    static_files::{SourceError, V2StaticFiles},
    upstream_copy::UPSTREAM_TABLES,
    verify::{TrieNode, state_trie_of_hashed_state},
};
use reth_hybrid_api::{
    Decompress, Tables,
    models::{
        AccountBeforeTx, PackedStoredNibbles, STORAGE_SETTINGS_KEY, StorageEntry, StorageSettings,
    },
    raw::{RawCursor, RawCursorMut, RawEngine, RawTx, RawTxMut},
    table::compress_to_vec,
    typed::TypedTx,
};
use reth_hybrid_mdbx::{MdbxEngine, MdbxOptions};
use std::{
    collections::BTreeMap,
    fs::File,
    io::{BufWriter, Write},
    os::unix::fs::FileExt,
    path::{Path, PathBuf},
};

/// reth-hybrid's own MDBX engine as adoption's opener (the node binary uses reth's).
#[derive(Debug)]
pub struct OurMdbx;

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

/// What [`make_v2_twin`] wrote.
#[derive(Debug, Clone, Default)]
pub struct TwinReport {
    pub head: u64,
    pub state_root: B256,
    pub accounts_trie: u64,
    pub storages_trie: u64,
    pub upstream_rows: u64,
    pub account_changes: u64,
    pub storage_changes: u64,
    pub senders: u64,
}

const INDEX_ENTRY: usize = 32;
const SENDER: usize = 20;

/// Builds the v2 twin of the v1 datadir `v1` in the new folder `out`.
pub fn make_v2_twin(v1: &Path, out: &Path) -> Result<TwinReport, Box<dyn std::error::Error>> {
    let source = MdbxEngine::open_read_only(v1)?;
    let tx = source.begin_ro()?;
    let mut report = TwinReport {
        head: head_block(&tx)?,
        ..Default::default()
    };
    std::fs::create_dir_all(out)?;

    // MDBX: every table v2 keeps, then the packed tries and the v2 settings.
    let twin = MdbxEngine::open(
        out,
        MdbxOptions::create().with_geometry(reth_hybrid_mdbx::Geometry::SMALL),
    )?;
    for table in Tables::ALL {
        if STAGED_TABLES.contains(&table)
            || matches!(table, Tables::AccountsTrie | Tables::StoragesTrie)
        {
            continue;
        }
        let rw = twin.begin_rw()?;
        {
            let mut to = rw.cursor_mut(table)?;
            let mut from = tx.cursor(table)?;
            let mut next = from.first()?;
            while let Some((k, v)) = next {
                if table.is_dupsort() {
                    to.append_dup(&k, &v)?;
                } else {
                    to.append(&k, &v)?;
                }
                next = from.next()?;
            }
        }
        rw.commit()?;
    }
    let (root, accounts_trie, storages_trie) = write_packed_tries(&source, &twin)?;
    report.state_root = root;
    report.accounts_trie = accounts_trie;
    report.storages_trie = storages_trie;
    let rw = twin.begin_rw()?;
    reth_hybrid_hybrid::control::put_bytes(
        &rw,
        STORAGE_SETTINGS_KEY,
        StorageSettings { storage_v2: true }.to_json_bytes(),
    )?;
    rw.commit()?;
    drop(twin);

    report.upstream_rows = write_upstream_rocksdb(&tx, &out.join("rocksdb"))?;
    let (accounts, storage, senders) =
        write_flat_static_files(&tx, &out.join("static"), report.head, report.state_root)?;
    report.account_changes = accounts;
    report.storage_changes = storage;
    report.senders = senders;
    Ok(report)
}

fn head_block<T: RawTx>(tx: &T) -> Result<u64, Box<dyn std::error::Error>> {
    use reth_hybrid_api::models::StageCheckpoint;
    Ok(match tx.get(Tables::StageCheckpoints, b"Finish")? {
        Some(v) => StageCheckpoint::decompress(&v)?.block_number,
        None => 0,
    })
}

/// The state root and the tries' branch nodes from the hashed state (adoption's own derivation,
/// whose root adoption then checks against the head's), written under v2's packed keys. Returns
/// the root and the rows of each trie table.
fn write_packed_tries(
    source: &MdbxEngine,
    twin: &MdbxEngine,
) -> Result<(B256, u64, u64), Box<dyn std::error::Error>> {
    // Derived in batches of no particular order: sorted here, so the rows go in by append.
    let mut accounts: BTreeMap<[u8; PackedStoredNibbles::LEN], Vec<u8>> = BTreeMap::new();
    let mut storages: BTreeMap<(B256, [u8; PackedStoredNibbles::LEN]), Vec<u8>> = BTreeMap::new();
    let root = state_trie_of_hashed_state(
        &TypedTx::new(source.begin_ro()?),
        &NoProgress,
        &mut |node| {
            match node {
                TrieNode::Account { path, node } => {
                    accounts.insert(PackedStoredNibbles(path).to_array(), compress_to_vec(&node));
                }
                TrieNode::Storage {
                    hashed_address,
                    path,
                    node,
                } => {
                    storages.insert(
                        (hashed_address, PackedStoredNibbles(path).to_array()),
                        compress_to_vec(&node),
                    );
                }
            }
            Ok(())
        },
    )?;
    let rw = twin.begin_rw()?;
    {
        let mut rows = rw.cursor_mut(Tables::AccountsTrie)?;
        for (key, node) in &accounts {
            rows.append(key, node)?;
        }
        let mut rows = rw.cursor_mut(Tables::StoragesTrie)?;
        for ((hashed_address, subkey), node) in &storages {
            rows.append_dup(hashed_address.as_slice(), &[&subkey[..], node].concat())?;
        }
    }
    rw.commit()?;
    Ok((root, accounts.len() as u64, storages.len() as u64))
}

/// reth's column families for the three tables, each filled by one ingested SST file.
fn write_upstream_rocksdb<T: RawTx>(
    tx: &T,
    path: &Path,
) -> Result<u64, Box<dyn std::error::Error>> {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let names: Vec<&str> = UPSTREAM_TABLES.iter().map(|t| t.name()).collect();
    let db = rocksdb::DB::open_cf(&opts, path, &names)?;
    let mut rows = 0;
    for table in UPSTREAM_TABLES {
        let sst = path.join(format!("{}.sst.tmp", table.name()));
        let sst_opts = rocksdb::Options::default();
        let mut writer = rocksdb::SstFileWriter::create(&sst_opts);
        writer.open(&sst)?;
        let mut cursor = tx.cursor(table)?;
        let mut next = cursor.first()?;
        let mut any = false;
        while let Some((k, v)) = next {
            writer.put(&k, &v)?;
            rows += 1;
            any = true;
            next = cursor.next()?;
        }
        if any {
            writer.finish()?;
            let cf = db.cf_handle(table.name()).ok_or("column family")?;
            db.ingest_external_file_cf(cf, vec![&sst])?;
        }
        let _ = std::fs::remove_file(&sst);
    }
    db.flush_wal(true)?;
    Ok(rows)
}

/// The flat stand-in for reth's changeset and sender segments; returns the rows written.
fn write_flat_static_files<T: RawTx>(
    tx: &T,
    dir: &Path,
    head: u64,
    state_root: B256,
) -> Result<(u64, u64, u64), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let mut index = vec![[0u64; 4]; head as usize + 1];
    let account_rows = write_changes(tx, dir, Tables::AccountChangeSets, &mut index, 0)?;
    let storage_rows = write_changes(tx, dir, Tables::StorageChangeSets, &mut index, 2)?;
    let mut file = BufWriter::new(File::create(dir.join("index"))?);
    for entry in &index {
        for word in entry {
            file.write_all(&word.to_le_bytes())?;
        }
    }
    file.into_inner()?.sync_all()?;

    let mut file = BufWriter::new(File::create(dir.join("senders"))?);
    let mut cursor = tx.cursor(Tables::TransactionSenders)?;
    let mut next = cursor.first()?;
    let mut senders = 0u64;
    while let Some((k, v)) = next {
        let tx_num = u64::from_be_bytes(k[..8].try_into()?);
        if tx_num != senders || v.len() != SENDER {
            return Err(format!("senders are not dense at tx {tx_num}").into());
        }
        file.write_all(&v)?;
        senders += 1;
        next = cursor.next()?;
    }
    file.into_inner()?.sync_all()?;
    std::fs::write(
        dir.join("head"),
        format!("{head} {}", alloy_primitives::hex::encode(state_root)),
    )?;
    Ok((account_rows, storage_rows, senders))
}

/// Writes `table`'s rows, grouped by block and length-prefixed, into `<dir>/<table>`: account
/// changes as the MDBX value's bytes (address and account), storage changes as the address then
/// the entry's bytes. Records per block where its rows start (`index[block][column]`; an empty
/// block where the next one starts) and how many there are (`index[block][column + 1]`).
fn write_changes<T: RawTx>(
    tx: &T,
    dir: &Path,
    table: Tables,
    index: &mut [[u64; 4]],
    column: usize,
) -> Result<u64, Box<dyn std::error::Error>> {
    let mut file = BufWriter::new(File::create(dir.join(table.name()))?);
    let mut cursor = tx.cursor(table)?;
    let mut next = cursor.first()?;
    let (mut offset, mut rows, mut placed) = (0u64, 0u64, 0usize);
    while let Some((k, v)) = next {
        let block = u64::from_be_bytes(k[..8].try_into()?) as usize;
        if block >= index.len() {
            return Err(format!("{table} has block {block}, past the head").into());
        }
        while placed <= block {
            index[placed][column] = offset;
            placed += 1;
        }
        index[block][column + 1] += 1;
        let bytes = match table {
            Tables::AccountChangeSets => v,
            _ => [&k[8..28], &v[..]].concat(),
        };
        file.write_all(&u16::try_from(bytes.len())?.to_le_bytes())?;
        file.write_all(&bytes)?;
        offset += 2 + bytes.len() as u64;
        rows += 1;
        next = cursor.next()?;
    }
    for entry in &mut index[placed..] {
        entry[column] = offset;
    }
    file.into_inner()?.sync_all()?;
    Ok(rows)
}

/// The flat stand-in of [`make_v2_twin`], read from disk.
#[derive(Debug)]
pub struct FlatStaticFiles {
    dir: PathBuf,
    /// Per block: where its account changes start and how many, then the same for storage.
    index: Vec<[u64; 4]>,
    accounts: File,
    storage: File,
    senders: File,
    head: u64,
    state_root: B256,
}

impl FlatStaticFiles {
    pub fn open(dir: &Path) -> Result<Self, Box<dyn std::error::Error>> {
        let raw = std::fs::read(dir.join("index"))?;
        let index = raw
            .chunks_exact(INDEX_ENTRY)
            .map(|e| {
                let word = |i: usize| {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&e[i * 8..i * 8 + 8]);
                    u64::from_le_bytes(w)
                };
                [word(0), word(1), word(2), word(3)]
            })
            .collect();
        let head_line = std::fs::read_to_string(dir.join("head"))?;
        let (head, root) = head_line.split_once(' ').ok_or("head file")?;
        Ok(Self {
            dir: dir.to_path_buf(),
            index,
            accounts: File::open(dir.join(Tables::AccountChangeSets.name()))?,
            storage: File::open(dir.join(Tables::StorageChangeSets.name()))?,
            senders: File::open(dir.join("senders"))?,
            head: head.parse()?,
            state_root: root.parse()?,
        })
    }

    /// The block's rows of one file (`column` 0: accounts, 2: storage), as stored.
    fn rows(&self, block: u64, column: usize) -> Result<Vec<Vec<u8>>, SourceError> {
        let Some(entry) = self.index.get(block as usize) else {
            return Ok(Vec::new());
        };
        let (offset, count) = (entry[column], entry[column + 1]);
        if count == 0 {
            return Ok(Vec::new());
        }
        let file = if column == 0 {
            &self.accounts
        } else {
            &self.storage
        };
        let end = match self.index.get(block as usize + 1) {
            Some(next) => next[column],
            None => file.metadata()?.len(),
        };
        let mut buf = vec![0u8; (end - offset) as usize];
        file.read_exact_at(&mut buf, offset)?;
        let mut out = Vec::with_capacity(count as usize);
        let mut at = 0;
        for _ in 0..count {
            let len = u16::from_le_bytes([buf[at], buf[at + 1]]) as usize;
            out.push(buf[at + 2..at + 2 + len].to_vec());
            at += 2 + len;
        }
        Ok(out)
    }
}

impl V2StaticFiles for FlatStaticFiles {
    fn account_changesets(&self, block: u64) -> Result<Vec<AccountBeforeTx>, SourceError> {
        self.rows(block, 0)?
            .iter()
            .map(|row| Ok(AccountBeforeTx::decompress(row)?))
            .collect()
    }
    fn storage_changesets(&self, block: u64) -> Result<Vec<(Address, StorageEntry)>, SourceError> {
        self.rows(block, 2)?
            .iter()
            .map(|row| {
                Ok((
                    Address::from_slice(&row[..20]),
                    StorageEntry::decompress(&row[20..])?,
                ))
            })
            .collect()
    }
    fn senders(&self, first: u64, count: u64) -> Result<Vec<Address>, SourceError> {
        let mut buf = vec![0u8; count as usize * SENDER];
        self.senders
            .read_exact_at(&mut buf, first * SENDER as u64)?;
        Ok(buf.chunks_exact(SENDER).map(Address::from_slice).collect())
    }
    fn changesets_end(&self) -> Option<u64> {
        Some(self.head)
    }
    fn senders_end(&self) -> Option<u64> {
        let senders = self.senders.metadata().ok()?.len() / SENDER as u64;
        senders.checked_sub(1)
    }
    fn changeset_counts(&self, block: u64) -> Result<(u64, u64), SourceError> {
        Ok(self
            .index
            .get(block as usize)
            .map_or((0, 0), |e| (e[1], e[3])))
    }
    fn state_root(&self, _block: u64) -> Result<B256, SourceError> {
        Ok(self.state_root)
    }
    fn bytes(&self) -> u64 {
        crate::dir_bytes(&self.dir)
    }
    fn remove(&self) -> Result<(), SourceError> {
        match std::fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}
