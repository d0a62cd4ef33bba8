//! Giving an interrupted migration up (`reth-hybrid migrate --abandon`), for when it cannot be
//! resumed: its state file is unreadable or inconsistent, or the operator wants out.
//!
//! The state file is not trusted: what is where is worked out from the rows. The layout in MDBX
//! `Metadata` is the truth (the switch records it in the same transaction that clears the
//! source), and the engine it names for a table always holds a complete copy: before a table's
//! switch that is the source, after it the verified copy. Rows of the table in the other engine
//! are the partial copy of the interrupted migration, which no reader sees; abandoning removes
//! them, the staging files and the state file. A table recorded in one engine whose rows are
//! only in the other is no migration's leftover: that is refused, before anything changes.

use crate::{
    datadir::{Datadir, effective_layout, mdbx_has_rows, open_mdbx_read_only, refuse_storage_v2},
    datadir::{remove_durably, sync_parent},
    error::{MigrateError, io},
    state::{MigrationState, rollback_key},
};
use reth_hybrid_api::{
    EngineKind, Tables,
    raw::{RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_hybrid::control::{get_bytes, has_user_rows};
use reth_hybrid_mdbx::{MdbxEngine, MdbxOptions, MdbxTx};
use reth_hybrid_rocksdb::RocksEngine;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One table's partial copy that abandoning removes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartialCopy {
    pub table: Tables,
    /// Where the layout records the table (and its complete copy stays).
    pub kept_in: EngineKind,
    /// The engine whose rows of the table are removed.
    pub removed_from: EngineKind,
}

/// What abandoning does (or did).
#[derive(Debug, Clone, Serialize)]
pub struct AbandonPlan {
    pub datadir: PathBuf,
    /// The migration the state file records, or why it could not be read; `None` when there is
    /// no state file (nothing is in progress, and abandoning changes nothing).
    pub state: Option<String>,
    pub partial_copies: Vec<PartialCopy>,
    /// Tables with a rollback position in `Metadata` (removed with the partial copies).
    pub rollback_positions: Vec<Tables>,
    /// Files and folders of the migration that are removed (staging, temporary files).
    pub files: Vec<PathBuf>,
    /// Every table and the engine the layout records it in, which abandoning keeps.
    pub layout: Vec<(Tables, EngineKind)>,
}

fn state_summary(dd: &Datadir) -> Option<String> {
    match MigrationState::read(dd) {
        Ok(None) => None,
        Ok(Some(s)) => Some(format!("migration of {}", s.describe())),
        Err(e) => Some(e.to_string()),
    }
}

/// The files a migration leaves besides its state file, those that exist.
fn leftover_files(dd: &Datadir) -> Vec<PathBuf> {
    [
        dd.staging(),
        dd.state_file().with_extension("tmp"),
        dd.root.join("db").join("mdbx.dat.compacting"),
    ]
    .into_iter()
    .filter(|p| p.exists())
    .collect()
}

fn plan_with(
    dd: &Datadir,
    tx: &MdbxTx,
    rocks: Option<&RocksEngine>,
) -> Result<AbandonPlan, MigrateError> {
    let (layout, _) = effective_layout(tx, rocks)?;
    let rocks_tx = rocks.map(|r| r.begin_ro()).transpose()?;
    let mut partial_copies = Vec::new();
    let mut rollback_positions = Vec::new();
    for table in Tables::ALL {
        if table == Tables::Metadata {
            continue;
        }
        if get_bytes(tx, &rollback_key(table))?.is_some() {
            rollback_positions.push(table);
        }
        let in_mdbx = mdbx_has_rows(tx, table)?;
        let in_rocks = match &rocks_tx {
            Some(rtx) => has_user_rows(rtx, table)?,
            None => false,
        };
        let kept_in = layout.engine_of(table);
        let (in_layout, in_other, other) = match kept_in {
            EngineKind::Mdbx => (in_mdbx, in_rocks, EngineKind::RocksDb),
            EngineKind::RocksDb => (in_rocks, in_mdbx, EngineKind::Mdbx),
        };
        if !in_other {
            continue;
        }
        if !in_layout {
            return Err(MigrateError::AbandonRefused {
                table,
                layout: kept_in,
                other,
            });
        }
        partial_copies.push(PartialCopy {
            table,
            kept_in,
            removed_from: other,
        });
    }
    Ok(AbandonPlan {
        datadir: dd.root.clone(),
        state: state_summary(dd),
        partial_copies,
        rollback_positions,
        files: leftover_files(dd),
        layout: Tables::ALL
            .into_iter()
            .map(|t| (t, layout.engine_of(t)))
            .collect(),
    })
}

/// What `abandon` would do; read-only, and refuses exactly when `abandon` would.
pub fn abandon_plan(datadir: &Path) -> Result<AbandonPlan, MigrateError> {
    let dd = Datadir::new(datadir);
    // Refuses a missing datadir, a live lock and an unsupported database.version.
    let mdbx = open_mdbx_read_only(datadir)?;
    dd.refuse_upstream_rows()?;
    let tx = mdbx.begin_ro()?;
    refuse_storage_v2(&tx)?;
    let rocks = dd.open_rocksdb_read_only()?;
    plan_with(&dd, &tx, rocks.as_ref())
}

/// Gives up the migration in progress: removes the partial copy of every table from the engine
/// its layout does not name, the rollback positions, the staging files and, last, the state
/// file. Idempotent: interrupted, it is run again. With no state file it changes nothing.
pub fn abandon(datadir: &Path) -> Result<AbandonPlan, MigrateError> {
    let dd = Datadir::new(datadir);
    // Every refusal happens here, read-only, before anything changes.
    let plan = abandon_plan(datadir)?;
    if plan.state.is_none() {
        return Ok(plan);
    }
    // Under the storage lock from here on; plan again with what is now on disk.
    let mdbx = MdbxEngine::open(datadir, MdbxOptions::read_write())?;
    let rocks = dd
        .has_rocksdb()
        .then(|| RocksEngine::open_in_datadir_for_bulk(datadir))
        .transpose()?;
    let plan = plan_with(&dd, &mdbx.begin_ro()?, rocks.as_ref())?;
    // ORDER: the partial copies go first and the state file last, so a crash in between
    // leaves the datadir marked as mid-migration (the hybrid still refuses it) and running
    // `--abandon` again finishes the job; the complete copies are never touched.
    for copy in &plan.partial_copies {
        if copy.removed_from == EngineKind::RocksDb
            && let Some(r) = &rocks
        {
            r.clear_table(copy.table)?;
        }
    }
    let wtx = mdbx.begin_rw()?;
    for copy in &plan.partial_copies {
        if copy.removed_from == EngineKind::Mdbx {
            wtx.clear(copy.table)?;
        }
    }
    for table in &plan.rollback_positions {
        wtx.delete(Tables::Metadata, rollback_key(*table).as_bytes(), None)?;
    }
    wtx.commit()?;
    drop(rocks);
    drop(mdbx);
    for path in &plan.files {
        if path.is_dir() {
            std::fs::remove_dir_all(path).map_err(io(path))?;
        } else {
            std::fs::remove_file(path).map_err(io(path))?;
        }
        sync_parent(path)?;
    }
    remove_durably(&dd.state_file())?;
    Ok(plan)
}
