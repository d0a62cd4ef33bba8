//! Bounded memory for large write transactions.
//!
//! A write transaction keeps its writes in memory until they pass the engine's spill budget
//! ([`crate::RocksOptions::spill_bytes`]); then it moves them, one sorted SST file per table,
//! into a scratch RocksDB of its own under `<db>/spill/tx-*` (ingested: no WAL, no memtable),
//! each value tagged put or delete. Reads merge three layers, newest first: the in-memory writes,
//! the scratch store, the snapshot (`view.rs`). Committing such a transaction writes one SST file
//! per table under `<db>/spill/commit-*` and ingests those (`export.rs`), so neither the commit
//! nor the hybrid's intent log ever holds the rows in memory.
//!
//! Scratch stores belong to one process's transactions: a read-write open removes any left by a
//! killed process. Commit folders belong to the intent log and are removed only by
//! [`crate::RocksEngine`]'s `discard_exports`, once no intent can need them.

use crate::{
    bulk::delete_everything,
    crash::crash_point,
    error::{RocksError, read_err},
};
use reth_hybrid_api::{Tables, raw::RawResult};
use rocksdb::{
    DB, DBRawIteratorWithThreadMode, IngestExternalFileOptions, Options, ReadOptions,
    SstFileWriter, WriteOptions,
};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

/// Folder inside the engine's RocksDB folder holding scratch stores and exported commits.
/// RocksDB ignores entries whose names it does not know.
pub(crate) const SPILL_DIR: &str = "spill";
const SCRATCH_PREFIX: &str = "tx-";
pub(crate) const EXPORT_PREFIX: &str = "commit-";

const DELETE: u8 = 0;
const PUT: u8 = 1;

/// A name no other folder of this process (or a killed earlier one) has.
pub(crate) fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}{}-{nanos}-{n}", std::process::id())
}

/// What a scratch-store value means: `Some(value)` for a put, `None` for a tombstone.
pub(crate) fn decode_entry(stored: &[u8]) -> Option<&[u8]> {
    match stored.split_first() {
        Some((&PUT, value)) => Some(value),
        _ => None,
    }
}

/// One write transaction's spilled writes.
pub(crate) struct SpillStore {
    /// `Option` so `Drop` can close the database before removing its folder.
    db: Option<DB>,
    dir: PathBuf,
    runs: u64,
}

impl SpillStore {
    /// Creates an empty scratch store under `<engine_path>/spill`.
    pub(crate) fn create(engine_path: &Path) -> Result<Self, RocksError> {
        let dir = engine_path
            .join(SPILL_DIR)
            .join(unique_name(SCRATCH_PREFIX));
        std::fs::create_dir_all(&dir).map_err(|source| RocksError::Io {
            path: dir.clone(),
            source,
        })?;
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        // Runs arrive as ingested files; many of them in level 0 must not stall ingestion.
        opts.set_level_zero_slowdown_writes_trigger(1 << 20);
        opts.set_level_zero_stop_writes_trigger(1 << 20);
        opts.set_max_open_files(256);
        opts.set_keep_log_file_num(1);
        // Column families are created as tables first spill: creating all 31 up front made
        // every spilling transaction pay ~100 ms of file creation and syncs.
        let db = DB::open(&opts, &dir).map_err(|source| {
            let _ = std::fs::remove_dir_all(&dir);
            RocksError::Open {
                path: dir.clone(),
                source,
            }
        })?;
        Ok(Self {
            db: Some(db),
            dir,
            runs: 0,
        })
    }

    fn db(&self) -> &DB {
        self.db.as_ref().expect("open until dropped")
    }

    /// `table`'s column family, if the table has spilled.
    fn cf(&self, table: Tables) -> Option<&rocksdb::ColumnFamily> {
        self.db().cf_handle(table.name())
    }

    fn create_cf(&mut self, table: Tables) -> RawResult<()> {
        if self.cf(table).is_some() {
            return Ok(());
        }
        let mut o = Options::default();
        o.set_level_zero_slowdown_writes_trigger(1 << 20);
        o.set_level_zero_stop_writes_trigger(1 << 20);
        self.db
            .as_mut()
            .expect("open until dropped")
            .create_cf(table.name(), &o)
            .map_err(|e| read_err("spill", table, e))
    }

    /// Moves `writes` (RocksDB keys, `None` = tombstone) into the store as one sorted run; newer
    /// than every earlier run, so a key written again replaces its older entry.
    pub(crate) fn write_run(
        &mut self,
        table: Tables,
        writes: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    ) -> RawResult<()> {
        if writes.is_empty() {
            return Ok(());
        }
        self.create_cf(table)?;
        self.runs += 1;
        let path = self.dir.join(format!("run-{}.sst", self.runs));
        let opts = Options::default();
        let mut writer = SstFileWriter::create(&opts);
        let io = |e| read_err("spill", table, e);
        writer.open(&path).map_err(io)?;
        let mut stored = Vec::new();
        for (key, value) in writes {
            stored.clear();
            match value {
                Some(v) => {
                    stored.push(PUT);
                    stored.extend_from_slice(v);
                }
                None => stored.push(DELETE),
            }
            writer.put(key, &stored).map_err(io)?;
        }
        writer.finish().map_err(io)?;
        drop(writer);
        let mut ingest = IngestExternalFileOptions::default();
        ingest.set_move_files(true);
        let cf = self.cf(table).expect("created above");
        self.db()
            .ingest_external_file_cf_opts(cf, &ingest, vec![path])
            .map_err(io)?;
        crash_point!(SpillAfterRun);
        Ok(())
    }

    /// Forgets every spilled write of `table` (the transaction cleared it).
    pub(crate) fn clear_table(&self, table: Tables) -> RawResult<()> {
        let Some(cf) = self.cf(table) else {
            return Ok(());
        };
        let Some(batch) = delete_everything(self.db(), cf, table)? else {
            return Ok(());
        };
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        self.db()
            .write_opt(batch, &wo)
            .map_err(|e| read_err("spill clear", table, e))
    }

    /// `table`'s spilled entry at `key` (tagged; see [`decode_entry`]).
    pub(crate) fn get(&self, table: Tables, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
        let Some(cf) = self.cf(table) else {
            return Ok(None);
        };
        self.db()
            .get_cf(cf, key)
            .map_err(|e| read_err("spill get", table, e))
    }

    /// An iterator over `table`'s spilled entries (values tagged; see [`decode_entry`]); `None`
    /// if the table never spilled. The store changes only under the transaction's overlay write
    /// lock, which readers exclude.
    pub(crate) fn iter(&self, table: Tables) -> Option<DBRawIteratorWithThreadMode<'_, DB>> {
        let mut ro = ReadOptions::default();
        ro.set_total_order_seek(true);
        Some(self.db().raw_iterator_cf_opt(self.cf(table)?, ro))
    }
}

impl Drop for SpillStore {
    fn drop(&mut self) {
        drop(self.db.take());
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!(path = %self.dir.display(), error = %e, "could not remove a spill store");
        }
    }
}

/// Removes what killed processes left under `<engine_path>/spill` with names starting with
/// `prefix`. Scratch stores are never needed after their process; exported commits only until
/// the intent naming them is resolved (the caller knows).
pub(crate) fn remove_leftovers(engine_path: &Path, prefix: &str) -> Result<usize, RocksError> {
    let root = engine_path.join(SPILL_DIR);
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => return Err(RocksError::Io { path: root, source }),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(|source| RocksError::Io {
            path: root.clone(),
            source,
        })?;
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            let path = entry.path();
            std::fs::remove_dir_all(&path).map_err(|source| RocksError::Io { path, source })?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Removes every scratch store (see [`remove_leftovers`]).
pub(crate) fn remove_scratch_stores(engine_path: &Path) -> Result<usize, RocksError> {
    remove_leftovers(engine_path, SCRATCH_PREFIX)
}
