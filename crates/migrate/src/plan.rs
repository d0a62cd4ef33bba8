//! Preflight: everything checked before a migration changes anything, read-only. The plan it
//! returns is what `--dry-run` prints.

use crate::{
    datadir::{
        Datadir, effective_layout, free_bytes, open_mdbx_read_only, refuse_follower_mismatch,
        refuse_storage_v2,
    },
    error::MigrateError,
    state::{MigrationState, Phase},
};
use reth_hybrid_api::{EngineKind, Tables, raw::RawEngine};
use reth_hybrid_hybrid::control::has_user_rows;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Planning figures for the estimated duration: sustained throughput of the copy on a modest
/// machine (docs/migration.md has measured numbers; NVMe servers are faster).
const FORWARD_BYTES_PER_SEC: f64 = 150e6;
const ROLLBACK_BYTES_PER_SEC: f64 = 60e6;
/// Headroom kept free on the filesystem beyond what the migration writes.
const DISK_MARGIN_BYTES: u64 = 256 << 20;

/// What to migrate.
#[derive(Debug, Clone)]
pub struct MigrateRequest {
    /// Tables to move; `None` means the default layout's RocksDB tables (those not yet there).
    pub tables: Option<Vec<Tables>>,
    pub to: EngineKind,
    /// Afterwards, rewrite `mdbx.dat` compacted so freed pages return to the filesystem.
    pub compact: bool,
    /// Target size of each SST file.
    pub sst_file_bytes: u64,
    /// Rows per MDBX transaction on a rollback.
    pub batch_rows: u64,
    /// Plan as if the filesystem had this many bytes free (what-if planning and tests of the
    /// disk check); `None` asks the filesystem.
    pub assume_free_bytes: Option<u64>,
}

impl MigrateRequest {
    pub fn new(to: EngineKind) -> Self {
        Self {
            tables: None,
            to,
            compact: false,
            sst_file_bytes: 256 << 20,
            batch_rows: 500_000,
            assume_free_bytes: None,
        }
    }

    pub fn with_tables(mut self, tables: Vec<Tables>) -> Self {
        self.tables = Some(tables);
        self
    }

    /// The command line that runs (or resumes) this migration.
    pub fn command_line(&self, datadir: &Path, tables: &[Tables]) -> String {
        let names: Vec<&str> = tables.iter().map(|t| t.name()).collect();
        format!(
            "reth-hybrid migrate --datadir {} --tables {} --to {}{}",
            datadir.display(),
            names.join(","),
            self.to,
            if self.compact { " --compact" } else { "" }
        )
    }
}

/// One table in the plan.
#[derive(Debug, Clone, Serialize)]
pub struct TablePlan {
    pub table: Tables,
    pub from: EngineKind,
    /// Rows in the source (exact in MDBX; RocksDB's estimate on a rollback).
    pub rows: u64,
    pub rows_exact: bool,
    /// Bytes the table occupies in the source.
    pub bytes: u64,
    /// Finished by an earlier, interrupted run.
    pub done: bool,
}

/// What a migration will do.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub datadir: PathBuf,
    pub to: EngineKind,
    pub tables: Vec<TablePlan>,
    /// Default-set tables left out because they already are in the target engine.
    pub skipped: Vec<Tables>,
    /// An interrupted migration of the same tables is resumed.
    pub resume: bool,
    pub compact: bool,
    pub bytes_to_write: u64,
    pub free_bytes: u64,
    pub estimated_seconds: f64,
    pub layout_recorded: bool,
    /// The command that runs or resumes exactly this migration.
    pub command: String,
}

/// Checks everything and returns the plan; changes nothing in the datadir.
pub fn plan(datadir: &Path, request: &MigrateRequest) -> Result<Plan, MigrateError> {
    let dd = Datadir::new(datadir);
    reth_hybrid_rocksdb::RocksOptions::check_environment()?;
    // It will write: a read-only datadir is refused before anything is attempted.
    reth_hybrid_hybrid::preflight::check_writable(datadir, &[datadir.join("db"), dd.rocksdb()])?;
    // Refuses a missing datadir, a live lock and an unsupported database.version.
    let mdbx = open_mdbx_read_only(datadir)?;
    dd.refuse_upstream_rows()?;
    let tx = mdbx.begin_ro()?;
    refuse_storage_v2(&tx)?;
    let rocks = dd.open_rocksdb_read_only()?;
    refuse_follower_mismatch(&dd, &tx, rocks.as_ref())?;
    let (layout, layout_recorded) = effective_layout(&tx, rocks.as_ref())?;
    let state = MigrationState::read(&dd)?;
    let to = request.to;
    let from = match to {
        EngineKind::RocksDb => EngineKind::Mdbx,
        EngineKind::Mdbx => EngineKind::RocksDb,
    };

    let (tables, skipped, explicit) = match (&request.tables, &state) {
        (Some(t), _) => (t.clone(), Vec::new(), true),
        // Resuming without --tables: the recorded migration's tables.
        (None, Some(s)) if s.to == to => (
            s.tables.iter().map(|t| t.table).collect(),
            Vec::new(),
            false,
        ),
        (None, _) => {
            let defaults = Tables::ALL
                .into_iter()
                .filter(|t| t.default_engine() == EngineKind::RocksDb);
            let (skip, keep): (Vec<Tables>, Vec<Tables>) =
                defaults.partition(|t| layout.engine_of(*t) == to);
            (keep, skip, false)
        }
    };
    if tables.contains(&Tables::Metadata) {
        return Err(MigrateError::MetadataStaysInMdbx);
    }
    let resume = match &state {
        Some(s) if s.is_for(to, &tables) => true,
        Some(s) => {
            return Err(MigrateError::OtherMigrationInProgress {
                state: dd.state_file(),
                recorded: s.describe(),
                resume: s.command.clone(),
            });
        }
        None => false,
    };

    let rocks_tx = rocks.as_ref().map(|r| r.begin_ro()).transpose()?;
    let mut plans = Vec::new();
    for &table in &tables {
        let done = state.as_ref().is_some_and(|s| {
            s.tables
                .iter()
                .any(|t| t.table == table && t.phase == Phase::Done)
        });
        if !resume {
            if layout.engine_of(table) == to {
                debug_assert!(explicit, "default tables already in the target are skipped");
                return Err(MigrateError::AlreadyInTarget { table, engine: to });
            }
            let target_has_rows = match to {
                EngineKind::RocksDb => match &rocks_tx {
                    Some(rtx) => has_user_rows(rtx, table)?,
                    None => false,
                },
                EngineKind::Mdbx => crate::datadir::mdbx_has_rows(&tx, table)?,
            };
            if target_has_rows {
                return Err(MigrateError::RowsInTarget { table, engine: to });
            }
        }
        let (rows, rows_exact, bytes) = match from {
            EngineKind::Mdbx => {
                let stat = tx.table_stat(table)?;
                (stat.entries, true, stat.bytes())
            }
            EngineKind::RocksDb => {
                let size = rocks
                    .as_ref()
                    .map(|r| r.table_size(table))
                    .unwrap_or_default();
                (
                    size.estimated_rows,
                    false,
                    size.sst_bytes + size.memtable_bytes,
                )
            }
        };
        plans.push(TablePlan {
            table,
            from,
            rows,
            rows_exact,
            bytes,
            done,
        });
    }
    let bytes_to_write: u64 = plans.iter().filter(|p| !p.done).map(|p| p.bytes).sum();
    let compact_bytes = if request.compact {
        mdbx.env_stat()?.used_bytes
    } else {
        0
    };
    let free = match request.assume_free_bytes {
        Some(b) => b,
        None => free_bytes(datadir)?,
    };
    let needed = bytes_to_write + compact_bytes + DISK_MARGIN_BYTES;
    if free < needed {
        return Err(MigrateError::DiskSpace {
            path: datadir.to_path_buf(),
            needed,
            available: free,
        });
    }
    let rate = match to {
        EngineKind::RocksDb => FORWARD_BYTES_PER_SEC,
        EngineKind::Mdbx => ROLLBACK_BYTES_PER_SEC,
    };
    let estimated_seconds =
        bytes_to_write as f64 / rate + compact_bytes as f64 / FORWARD_BYTES_PER_SEC;
    let command = request.command_line(datadir, &tables);
    Ok(Plan {
        datadir: datadir.to_path_buf(),
        to,
        tables: plans,
        skipped,
        resume,
        compact: request.compact,
        bytes_to_write,
        free_bytes: free,
        estimated_seconds,
        layout_recorded,
        command,
    })
}
