//! Is this pair of datadirs a valid comparison? Both on the same chain (genesis hash) and at the
//! same head, and each one's history really where the run claims: read from the datadir itself
//! (row counts per engine), never from its label or reth's `storage_v2` flag. A "RocksDB"
//! datadir whose history still lives in MDBX is the invalid hybrid our reth RocksDB-vs-MDBX seed
//! measured by mistake; it is refused with the way out. Three layouts are told apart: stock v1
//! (all in MDBX), reth-hybrid (`hybrid-rocksdb/`) and reth's storage v2 (reth's `rocksdb/`).

use reth_hybrid_api::{
    DbCursorRO, DbTx, Tables,
    raw::RawEngine,
    tables::{HeaderNumbers, StageCheckpoints},
    typed::{Database, TypedDatabase},
};
use reth_hybrid_mdbx::MdbxEngine;
use reth_hybrid_migrate::datadir::Datadir;
use reth_hybrid_rocksdb::inspect_upstream_rocksdb;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Where a side's history and tx-hash index live: what a comparison claims for each side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// reth's storage v1 (`--storage.v2=false`): every table in MDBX.
    Mdbx,
    /// reth-hybrid: the moved tables in `<datadir>/hybrid-rocksdb`.
    RocksDb,
    /// reth's storage v2: history and tx hashes in reth's own `<datadir>/rocksdb` (changesets
    /// and senders in static files, which this check does not read).
    V2,
}

impl Layout {
    /// The storage a reth-hybrid-node build names in its startup line to run this layout (the
    /// stock build runs both of reth's).
    pub fn node_storage(self) -> &'static str {
        match self {
            Layout::Mdbx | Layout::V2 => "mdbx",
            Layout::RocksDb => "hybrid",
        }
    }

    /// reth's `storage_v2` setting on a datadir of this layout.
    pub fn reth_storage_v2(self) -> bool {
        self == Layout::V2
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Layout::Mdbx => "mdbx",
            Layout::RocksDb => "rocksdb",
            Layout::V2 => "v2",
        })
    }
}

impl std::str::FromStr for Layout {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "mdbx" | "v1" => Ok(Layout::Mdbx),
            "rocksdb" | "hybrid" => Ok(Layout::RocksDb),
            "v2" => Ok(Layout::V2),
            other => Err(format!(
                "unknown layout {other:?}: mdbx (reth's storage v1, all in MDBX), rocksdb \
                 (reth-hybrid) or v2 (reth's storage v2)"
            )),
        }
    }
}

/// The tables whose placement decides what a run compares.
pub const HISTORY_TABLES: [Tables; 3] = [
    Tables::AccountsHistory,
    Tables::StoragesHistory,
    Tables::TransactionHashNumbers,
];

/// Where one table's rows are, in a datadir.
#[derive(Debug, Clone, Serialize)]
pub struct Placement {
    pub table: Tables,
    pub mdbx_rows: u64,
    /// reth-hybrid's `<datadir>/hybrid-rocksdb` (estimate).
    pub hybrid_rocksdb_rows: u64,
    /// reth's own `<datadir>/rocksdb`, storage v2 (estimate; 1 when it has rows but estimates 0).
    pub upstream_rocksdb_rows: u64,
}

impl Placement {
    pub fn rocksdb_rows(&self) -> u64 {
        self.hybrid_rocksdb_rows + self.upstream_rocksdb_rows
    }
}

/// What a datadir is, read from its files.
#[derive(Debug, Clone, Serialize)]
pub struct DatadirFacts {
    pub datadir: PathBuf,
    /// Hash of block 0 (from `HeaderNumbers`).
    pub genesis_hash: Option<String>,
    /// The `Finish` stage checkpoint: the block the node is at.
    pub head: Option<u64>,
    pub head_hash: Option<String>,
    pub placement: Vec<Placement>,
}

#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    #[error("reading {datadir}: {reason}")]
    Unreadable { datadir: PathBuf, reason: String },
    #[error(
        "the datadirs are on different chains: {a} has genesis {ga}, {b} has genesis {gb}; compare \
         two datadirs of the same chain"
    )]
    DifferentChains {
        a: PathBuf,
        ga: String,
        b: PathBuf,
        gb: String,
    },
    #[error(
        "the datadirs are at different heads: {a} at block {ha}, {b} at block {hb}. Bring both to \
         the same block first, e.g. `reth stage unwind --datadir <datadir> to-block {min}` on the \
         one ahead (the block given is kept)"
    )]
    DifferentHeads {
        a: PathBuf,
        ha: u64,
        b: PathBuf,
        hb: u64,
        min: u64,
    },
    #[error(
        "{datadir} is labelled `{claimed}` but its {table} rows are still in MDBX ({mdbx_rows} rows; \
         {rocks_rows} in RocksDB). A run on it measures MDBX history with RocksDB writes on top: \
         the invalid hybrid that made an earlier RocksDB-vs-MDBX comparison meaningless. Move the \
         history first: `reth-hybrid migrate --datadir {datadir}` (reth-hybrid's layout), or use a \
         datadir synced by reth with storage v2 from genesis"
    )]
    InvalidHybrid {
        datadir: PathBuf,
        claimed: Layout,
        table: Tables,
        mdbx_rows: u64,
        rocks_rows: u64,
    },
    #[error(
        "{datadir} is labelled `mdbx` but its {table} rows are in RocksDB ({rocks_rows} rows): \
         label it `rocksdb` (reth-hybrid) or `v2` (reth's storage v2), or move them back with \
         `reth-hybrid migrate --datadir {datadir} --to mdbx`"
    )]
    NotMdbx {
        datadir: PathBuf,
        table: Tables,
        rocks_rows: u64,
    },
    #[error(
        "{datadir} is labelled `rocksdb` (reth-hybrid) but its {table} rows are in reth's own \
         storage-v2 RocksDB ({rows} rows in {datadir}/rocksdb): label it `v2`, the layout it is"
    )]
    NotHybrid {
        datadir: PathBuf,
        table: Tables,
        rows: u64,
    },
    #[error(
        "{datadir} is labelled `v2` (reth's storage v2) but its {table} rows are in {engine} \
         ({rows} rows): label it `{label}`, the layout it is"
    )]
    NotV2 {
        datadir: PathBuf,
        table: Tables,
        engine: &'static str,
        rows: u64,
        label: Layout,
    },
    #[error(
        "{datadir} has no {table} rows in any engine, so the run cannot show where history lives \
         (a pruned or empty datadir?); use a datadir with history"
    )]
    NoHistory { datadir: PathBuf, table: Tables },
}

/// Reads a datadir's chain identity, head and history placement (read-only; refuses a datadir a
/// running node holds).
pub fn inspect(datadir: &Path) -> Result<DatadirFacts, PreflightError> {
    let unreadable = |reason: String| PreflightError::Unreadable {
        datadir: datadir.to_path_buf(),
        reason,
    };
    let mdbx = MdbxEngine::open_read_only(datadir).map_err(|e| unreadable(e.to_string()))?;
    let db = TypedDatabase::new(mdbx.clone());
    let tx = db.tx().map_err(|e| unreadable(e.to_string()))?;
    let head = tx
        .get::<StageCheckpoints>("Finish".to_string())
        .map_err(|e| unreadable(e.to_string()))?
        .map(|c| c.block_number);
    let (mut genesis_hash, mut head_hash) = (None, None);
    let mut cursor = tx
        .cursor_read::<HeaderNumbers>()
        .map_err(|e| unreadable(e.to_string()))?;
    let mut next = cursor.first().map_err(|e| unreadable(e.to_string()))?;
    while let Some((hash, number)) = next {
        if number == 0 {
            genesis_hash = Some(hash.to_string());
        }
        if Some(number) == head {
            head_hash = Some(hash.to_string());
        }
        if genesis_hash.is_some() && (head_hash.is_some() || head.is_none()) {
            break;
        }
        next = cursor.next().map_err(|e| unreadable(e.to_string()))?;
    }
    let raw = mdbx.begin_ro().map_err(|e| unreadable(e.to_string()))?;
    let dd = Datadir::new(datadir);
    let hybrid = dd
        .open_rocksdb_read_only()
        .map_err(|e| unreadable(e.to_string()))?;
    let upstream = inspect_upstream_rocksdb(&dd.upstream_rocksdb())
        .map_err(|e| unreadable(e.to_string()))?
        .unwrap_or_default();
    let mut placement = Vec::new();
    for table in HISTORY_TABLES {
        let mdbx_rows = raw
            .table_stat(table)
            .map_err(|e| unreadable(e.to_string()))?
            .entries;
        let hybrid_rocksdb_rows = match &hybrid {
            Some(r)
                if r.table_has_rows(table)
                    .map_err(|e| unreadable(e.to_string()))? =>
            {
                r.table_size(table).estimated_rows.max(1)
            }
            _ => 0,
        };
        let upstream_rocksdb_rows = upstream
            .iter()
            .find(|cf| cf.name == table.name() && cf.has_rows)
            .map_or(0, |cf| cf.estimated_rows.max(1));
        placement.push(Placement {
            table,
            mdbx_rows,
            hybrid_rocksdb_rows,
            upstream_rocksdb_rows,
        });
    }
    Ok(DatadirFacts {
        datadir: datadir.to_path_buf(),
        genesis_hash,
        head,
        head_hash,
        placement,
    })
}

/// Checks that a datadir's history is where `claimed` says.
pub fn check_layout(facts: &DatadirFacts, claimed: Layout) -> Result<(), PreflightError> {
    for p in &facts.placement {
        let datadir = facts.datadir.clone();
        let table = p.table;
        match claimed {
            Layout::RocksDb | Layout::V2 if p.mdbx_rows > 0 => {
                return Err(PreflightError::InvalidHybrid {
                    datadir,
                    claimed,
                    table,
                    mdbx_rows: p.mdbx_rows,
                    rocks_rows: p.rocksdb_rows(),
                });
            }
            Layout::RocksDb if p.upstream_rocksdb_rows > 0 => {
                return Err(PreflightError::NotHybrid {
                    datadir,
                    table,
                    rows: p.upstream_rocksdb_rows,
                });
            }
            Layout::V2 if p.hybrid_rocksdb_rows > 0 => {
                return Err(PreflightError::NotV2 {
                    datadir,
                    table,
                    engine: "reth-hybrid's hybrid-rocksdb",
                    rows: p.hybrid_rocksdb_rows,
                    label: Layout::RocksDb,
                });
            }
            Layout::Mdbx if p.rocksdb_rows() > 0 => {
                return Err(PreflightError::NotMdbx {
                    datadir,
                    table,
                    rocks_rows: p.rocksdb_rows(),
                });
            }
            _ => {}
        }
    }
    // History must exist somewhere, or the label cannot be checked at all.
    for table in [Tables::AccountsHistory, Tables::TransactionHashNumbers] {
        let p = facts
            .placement
            .iter()
            .find(|p| p.table == table)
            .expect("inspected");
        if p.mdbx_rows == 0 && p.rocksdb_rows() == 0 {
            return Err(PreflightError::NoHistory {
                datadir: facts.datadir.clone(),
                table,
            });
        }
    }
    Ok(())
}

/// The whole preflight of a comparison: each side's layout, same chain, same head.
pub fn check_pair(
    baseline: (&Path, Layout),
    candidate: (&Path, Layout),
) -> Result<(DatadirFacts, DatadirFacts), PreflightError> {
    let (a, b) = (inspect(baseline.0)?, inspect(candidate.0)?);
    check_layout(&a, baseline.1)?;
    check_layout(&b, candidate.1)?;
    if a.genesis_hash != b.genesis_hash {
        return Err(PreflightError::DifferentChains {
            a: a.datadir.clone(),
            ga: a.genesis_hash.clone().unwrap_or_else(|| "unknown".into()),
            b: b.datadir.clone(),
            gb: b.genesis_hash.clone().unwrap_or_else(|| "unknown".into()),
        });
    }
    let (ha, hb) = (a.head.unwrap_or(0), b.head.unwrap_or(0));
    if ha != hb || a.head_hash != b.head_hash {
        return Err(PreflightError::DifferentHeads {
            a: a.datadir.clone(),
            ha,
            b: b.datadir.clone(),
            hb,
            min: ha.min(hb),
        });
    }
    Ok((a, b))
}
