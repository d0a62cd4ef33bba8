//! `layout set`: route an empty table to another engine. A table with rows must be moved with
//! `migrate` instead (its rows would otherwise be stranded in the old engine).

use crate::{
    datadir::{
        Datadir, effective_layout, mdbx_has_rows, open_mdbx_read_only, refuse_follower_mismatch,
        refuse_storage_v2,
    },
    error::MigrateError,
    state::MigrationState,
};
use reth_hybrid_api::{
    EngineKind, Tables,
    raw::{RawEngine, RawTx},
};
use reth_hybrid_hybrid::{Layout, control::put_bytes, layout::LAYOUT_KEY};
use reth_hybrid_mdbx::{MdbxEngine, MdbxOptions};
use std::path::Path;

/// Records `table` in `engine`; returns the new layout. Checks everything read-only first.
pub fn set_table_engine(
    datadir: &Path,
    table: Tables,
    engine: EngineKind,
) -> Result<Layout, MigrateError> {
    if table == Tables::Metadata && engine != EngineKind::Mdbx {
        return Err(MigrateError::MetadataStaysInMdbx);
    }
    let dd = Datadir::new(datadir);
    let mut layout = {
        // It will write: a read-only datadir is refused before anything is attempted.
        reth_hybrid_hybrid::preflight::check_writable(
            datadir,
            &[datadir.join("db"), dd.rocksdb()],
        )?;
        let mdbx = open_mdbx_read_only(datadir)?;
        dd.refuse_upstream_rows()?;
        if let Some(state) = MigrationState::read(&dd)? {
            return Err(MigrateError::OtherMigrationInProgress {
                state: dd.state_file(),
                recorded: state.describe(),
                resume: state.command,
            });
        }
        let tx = mdbx.begin_ro()?;
        refuse_storage_v2(&tx)?;
        let rocks = dd.open_rocksdb_read_only()?;
        refuse_follower_mismatch(&dd, &tx, rocks.as_ref())?;
        if crate::datadir::deferred_replay_pending(&dd, &tx, rocks.as_ref())? {
            // A table RocksDB lost rows of would look emptier than it is.
            return Err(MigrateError::RecoveryPending {
                datadir: datadir.to_path_buf(),
            });
        }
        let (layout, _) = effective_layout(&tx, rocks.as_ref())?;
        let mdbx_rows = if mdbx_has_rows(&tx, table)? {
            tx.table_stat(table)?.entries
        } else {
            0
        };
        let rocks_rows = match &rocks {
            Some(r) if r.table_has_rows(table)? => r.begin_ro()?.entries(table)? as u64,
            _ => 0,
        };
        for (rows, in_engine) in [
            (mdbx_rows, EngineKind::Mdbx),
            (rocks_rows, EngineKind::RocksDb),
        ] {
            if rows > 0 {
                return Err(MigrateError::NotEmpty {
                    table,
                    rows,
                    engine: in_engine,
                    target: engine,
                });
            }
        }
        layout
    };
    layout.set(table, engine);
    let mdbx = MdbxEngine::open(datadir, MdbxOptions::read_write())?;
    let wtx = mdbx.begin_rw()?;
    put_bytes(&wtx, LAYOUT_KEY, layout.to_json())?;
    wtx.commit()?;
    Ok(layout)
}
