//! Opening a datadir as the hybrid node database.

use crate::{reth_mdbx::RethMdbx, upstream::UpstreamDatabase};
use reth_db::{DatabaseEnv, mdbx::DatabaseArguments};
use reth_hybrid_hybrid::{HybridDb, HybridOptions};
use reth_hybrid_rocksdb::RocksEngine;
use std::{path::Path, sync::Arc};

/// The database a hybrid node runs on.
pub type HybridNodeDb = UpstreamDatabase<HybridDb<RethMdbx, RocksEngine>>;

/// Opens (creating if needed) `<datadir>/db` with reth's settings and `<datadir>/hybrid-rocksdb`,
/// recovers a commit in flight, and checks the layout against the rows (a storage-v2 datadir,
/// or one with history rows in the wrong engine, is refused with the way out).
pub fn open_hybrid(datadir: &Path, args: DatabaseArguments) -> eyre::Result<HybridNodeDb> {
    // reth's own RocksDB (storage v2) holding rows means history already lives there.
    if let Some(cfs) = reth_hybrid_rocksdb::inspect_upstream_rocksdb(&datadir.join("rocksdb"))? {
        let with_rows: Vec<String> = cfs
            .into_iter()
            .filter(|c| c.has_rows)
            .map(|c| c.name)
            .collect();
        if !with_rows.is_empty() {
            eyre::bail!(
                "{} holds rows of reth's storage v2 ({}): this datadir keeps its history in reth's \
                 own RocksDB, which reth-hybrid does not mix with its layout; use a datadir written \
                 with --storage.v2=false",
                datadir.join("rocksdb").display(),
                with_rows.join(", ")
            );
        }
    }
    let env: DatabaseEnv = reth_db::init_db(datadir.join("db"), args)?;
    let mdbx = RethMdbx::new(Arc::new(env)).map_err(|e| eyre::eyre!(e))?;
    let rocks = RocksEngine::open_in_datadir(datadir)?;
    let hybrid = HybridDb::open(mdbx, rocks, datadir, HybridOptions::default())?;
    tracing::info!(
        target: "reth_hybrid",
        recovery = ?hybrid.recovered().action,
        rocksdb_tables = ?hybrid.layout().tables_in(reth_hybrid_api::EngineKind::RocksDb).collect::<Vec<_>>(),
        "opened the hybrid database"
    );
    Ok(UpstreamDatabase::new(hybrid))
}
