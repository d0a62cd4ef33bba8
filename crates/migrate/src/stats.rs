//! `stats`: per table its engine, entries and bytes on disk, totals per engine. Read-only.

use crate::{
    datadir::{Datadir, effective_layout, open_mdbx_read_only},
    error::MigrateError,
};
use reth_hybrid_api::{
    EngineKind, Tables,
    raw::{RawEngine, RawTx},
};
use reth_hybrid_rocksdb::inspect_upstream_rocksdb;
use serde::Serialize;
use std::path::Path;

/// One table's figures in both engines.
#[derive(Debug, Clone, Serialize)]
pub struct TableStats {
    pub table: Tables,
    /// The engine the layout routes it to.
    pub engine: EngineKind,
    pub mdbx_entries: u64,
    pub mdbx_bytes: u64,
    /// RocksDB's key estimate, or the exact count with `exact`.
    pub rocksdb_entries: u64,
    pub rocksdb_entries_exact: bool,
    /// SST files plus memtables.
    pub rocksdb_bytes: u64,
}

/// A column family of reth's own RocksDB.
#[derive(Debug, Clone, Serialize)]
pub struct UpstreamTable {
    pub name: String,
    pub has_rows: bool,
    pub estimated_rows: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct EngineTotals {
    pub entries: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DatadirStats {
    pub tables: Vec<TableStats>,
    pub layout_recorded: bool,
    pub mdbx: EngineTotals,
    pub rocksdb: EngineTotals,
    /// Size of `mdbx.dat` (free pages included).
    pub mdbx_file_bytes: u64,
    /// Size of every file under `<datadir>/hybrid-rocksdb`.
    pub rocksdb_dir_bytes: u64,
    /// Of which the live write-ahead log (`*.log`): RocksDB replays it at the next open.
    pub rocksdb_wal_bytes: u64,
    /// reth's own `<datadir>/rocksdb` (storage v2), if present.
    pub upstream_rocksdb: Option<Vec<UpstreamTable>>,
    pub migration_in_progress: bool,
}

/// Collects the figures. `exact` counts RocksDB rows by scanning instead of estimating.
pub fn stats(datadir: &Path, exact: bool) -> Result<DatadirStats, MigrateError> {
    let dd = Datadir::new(datadir);
    let mdbx = open_mdbx_read_only(datadir)?;
    let rocks = dd.open_rocksdb_read_only()?;
    let tx = mdbx.begin_ro()?;
    let (layout, layout_recorded) = effective_layout(&tx, rocks.as_ref())?;
    let rocks_tx = rocks.as_ref().map(|r| r.begin_ro()).transpose()?;
    let mut tables = Vec::new();
    let (mut mdbx_totals, mut rocks_totals) = (EngineTotals::default(), EngineTotals::default());
    for table in Tables::ALL {
        let m = tx.table_stat(table)?;
        let (mut r_entries, r_bytes) = match &rocks {
            Some(r) => {
                let size = r.table_size(table);
                (size.estimated_rows, size.sst_bytes + size.memtable_bytes)
            }
            None => (0, 0),
        };
        if exact && let Some(rtx) = &rocks_tx {
            r_entries = rtx.entries(table)? as u64;
        }
        mdbx_totals.entries += m.entries;
        mdbx_totals.bytes += m.bytes();
        rocks_totals.entries += r_entries;
        rocks_totals.bytes += r_bytes;
        tables.push(TableStats {
            table,
            engine: layout.engine_of(table),
            mdbx_entries: m.entries,
            mdbx_bytes: m.bytes(),
            rocksdb_entries: r_entries,
            rocksdb_entries_exact: exact || rocks.is_none(),
            rocksdb_bytes: r_bytes,
        });
    }
    Ok(DatadirStats {
        tables,
        layout_recorded,
        mdbx: mdbx_totals,
        rocksdb: rocks_totals,
        mdbx_file_bytes: std::fs::metadata(dd.mdbx_file())
            .map(|m| m.len())
            .unwrap_or(0),
        rocksdb_dir_bytes: dir_bytes(&dd.rocksdb()),
        rocksdb_wal_bytes: rocks.as_ref().map_or(0, |r| r.wal_bytes()),
        upstream_rocksdb: inspect_upstream_rocksdb(&dd.upstream_rocksdb())?.map(|cfs| {
            cfs.into_iter()
                .map(|cf| UpstreamTable {
                    name: cf.name,
                    has_rows: cf.has_rows,
                    estimated_rows: cf.estimated_rows,
                })
                .collect()
        }),
        migration_in_progress: dd.state_file().exists(),
    })
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
