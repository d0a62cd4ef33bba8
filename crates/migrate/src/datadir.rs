//! What the tools know about a datadir's files: where each engine lives, the recorded layout,
//! reth's own RocksDB, free space, and durable file writes.

use crate::error::{MigrateError, io};
use reth_hybrid_api::{
    EngineKind, Tables,
    models::{STORAGE_SETTINGS_KEY, StorageSettings},
    raw::RawEngine,
};
use reth_hybrid_hybrid::{
    HybridError, INTENT_LOG_FILE, Layout,
    control::{get_bytes, has_user_rows},
    durable,
    intent_log::IntentLog,
    layout::{LAYOUT_KEY, MIGRATION_STATE_FILE},
    preflight::check_sequences,
    recovery,
};
use reth_hybrid_mdbx::{MdbxEngine, MdbxTx};
use reth_hybrid_rocksdb::{HYBRID_ROCKSDB_DIR, RocksEngine, inspect_upstream_rocksdb};
use std::path::{Path, PathBuf};

/// reth's own RocksDB folder (storage v2; reth creates it, empty, even in its v1 layout).
pub const UPSTREAM_ROCKSDB_DIR: &str = "rocksdb";
/// Staging folder for SST files of a migration in progress.
pub const STAGING_DIR: &str = "hybrid-migration-sst";

/// The paths of one datadir.
#[derive(Debug, Clone)]
pub struct Datadir {
    pub root: PathBuf,
}

impl Datadir {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
        }
    }
    pub fn mdbx_file(&self) -> PathBuf {
        self.root.join("db").join("mdbx.dat")
    }
    pub fn rocksdb(&self) -> PathBuf {
        self.root.join(HYBRID_ROCKSDB_DIR)
    }
    pub fn upstream_rocksdb(&self) -> PathBuf {
        self.root.join(UPSTREAM_ROCKSDB_DIR)
    }
    pub fn state_file(&self) -> PathBuf {
        self.root.join(MIGRATION_STATE_FILE)
    }
    pub fn staging(&self) -> PathBuf {
        self.root.join(STAGING_DIR)
    }
    pub fn intent_log(&self) -> PathBuf {
        self.root.join(INTENT_LOG_FILE)
    }
    /// Whether reth-hybrid's RocksDB exists (complete: one interrupted while being created holds
    /// no rows and is completed by the next read-write open).
    pub fn has_rocksdb(&self) -> bool {
        reth_hybrid_rocksdb::is_initialized(&self.rocksdb())
    }
    /// Whether the intent log holds a commit for recovery to settle.
    pub fn intent_pending(&self) -> bool {
        std::fs::metadata(self.intent_log()).is_ok_and(|m| m.len() > 0)
    }

    /// Opens reth-hybrid's RocksDB read-only, if the datadir has one.
    pub fn open_rocksdb_read_only(&self) -> Result<Option<RocksEngine>, MigrateError> {
        if !self.has_rocksdb() {
            return Ok(None);
        }
        Ok(Some(RocksEngine::open_read_only(&self.rocksdb())?))
    }

    /// Refuses a datadir whose reth-managed RocksDB holds rows (an upstream storage-v2 datadir).
    pub fn refuse_upstream_rows(&self) -> Result<(), MigrateError> {
        let path = self.upstream_rocksdb();
        let Some(cfs) = inspect_upstream_rocksdb(&path)? else {
            return Ok(());
        };
        let with_rows: Vec<String> = cfs
            .iter()
            .filter(|cf| cf.has_rows)
            .map(|cf| format!("{} ~{} rows", cf.name, cf.estimated_rows))
            .collect();
        if with_rows.is_empty() {
            Ok(())
        } else {
            Err(MigrateError::UpstreamRocksDbRows {
                path,
                tables: with_rows.join(", "),
            })
        }
    }
}

/// Refuses a datadir reth marked as storage v2 in `Metadata`.
pub fn refuse_storage_v2(tx: &MdbxTx) -> Result<(), MigrateError> {
    if let Some(settings) = get_bytes(tx, STORAGE_SETTINGS_KEY)?
        && StorageSettings::from_json_bytes(&settings).is_ok_and(|s| s.storage_v2)
    {
        return Err(MigrateError::UpstreamStorageV2(
            HybridError::UpstreamStorageV2.to_string(),
        ));
    }
    Ok(())
}

/// Refuses a datadir whose RocksDB is ahead of or behind MDBX, as the hybrid's open does (an
/// intent the next open replays is fine): moving tables between engines that disagree would
/// spread stale history.
pub fn refuse_follower_mismatch(
    dd: &Datadir,
    mdbx_tx: &MdbxTx,
    rocks: Option<&RocksEngine>,
) -> Result<(), MigrateError> {
    let rocks_tx = rocks.map(|r| r.begin_ro()).transpose()?;
    check_sequences(
        Some(mdbx_tx),
        rocks_tx.as_ref(),
        &IntentLog::new(dd.intent_log()),
    )?;
    Ok(())
}

/// Whether RocksDB lacks deferred commits that MDBX holds as pending rows (RocksDB lost its
/// unsynced WAL tail, as on power loss): the hybrid's next open replays them, and until then
/// RocksDB's tables are missing those commits' rows.
pub fn deferred_replay_pending(
    dd: &Datadir,
    mdbx_tx: &MdbxTx,
    rocks: Option<&RocksEngine>,
) -> Result<bool, MigrateError> {
    let rocks_tx = rocks.map(|r| r.begin_ro()).transpose()?;
    let planned = recovery::plan_for(mdbx_tx, rocks_tx.as_ref(), &IntentLog::new(dd.intent_log()))?;
    Ok(!planned.deferred.is_empty())
}

/// The layout recorded in MDBX, if any.
pub fn recorded_layout(tx: &MdbxTx) -> Result<Option<Layout>, MigrateError> {
    Ok(get_bytes(tx, LAYOUT_KEY)?
        .map(|b| Layout::from_json(&b))
        .transpose()?)
}

/// The layout in force: the recorded one, or for a datadir reth-hybrid never opened, where the
/// rows are (a reth v1 datadir: every table with rows is in MDBX), defaults for empty tables.
pub fn effective_layout(
    mdbx_tx: &MdbxTx,
    rocks: Option<&RocksEngine>,
) -> Result<(Layout, bool), MigrateError> {
    if let Some(layout) = recorded_layout(mdbx_tx)? {
        return Ok((layout, true));
    }
    let rocks_tx = rocks.map(|r| r.begin_ro()).transpose()?;
    let mut layout = Layout::default();
    for table in Tables::ALL {
        if mdbx_has_rows(mdbx_tx, table)? {
            layout.set(table, EngineKind::Mdbx);
        } else if let Some(rtx) = &rocks_tx
            && has_user_rows(rtx, table)?
        {
            layout.set(table, EngineKind::RocksDb);
        }
    }
    Ok((layout, false))
}

/// Whether MDBX holds user rows of `table` (a table the datadir lacks has none).
pub fn mdbx_has_rows(tx: &MdbxTx, table: Tables) -> Result<bool, MigrateError> {
    if tx.table_stat(table)?.entries == 0 {
        return Ok(false);
    }
    Ok(has_user_rows(tx, table)?)
}

/// Opens MDBX read-only, checking the datadir first (live lock, version), with a clear error.
pub fn open_mdbx_read_only(datadir: &Path) -> Result<MdbxEngine, MigrateError> {
    Ok(MdbxEngine::open_read_only(datadir)?)
}

/// Bytes free for an unprivileged writer on the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> Result<u64, MigrateError> {
    durable::free_bytes(path).map_err(io(path))
}

/// Writes `bytes` to `path` so that after a crash the file holds either its old or its new
/// content (see [`durable::write_atomically`]).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), MigrateError> {
    durable::write_atomically(path, bytes).map_err(io(path))
}

/// Removes a file durably (no-op if absent).
pub fn remove_durably(path: &Path) -> Result<(), MigrateError> {
    durable::remove_durably(path).map_err(io(path))
}

pub fn sync_parent(path: &Path) -> Result<(), MigrateError> {
    durable::sync_parent(path).map_err(io(path))
}
