//! The crash and concurrency suite on the pair the node runs (reth v2.5.1's MDBX and our
//! RocksDB) with `FollowerSync::EveryCommit`: every commit's RocksDB writes go through the
//! intent log and a synced RocksDB write (`RETH_HYBRID_ROCKSDB_SYNC=every-commit`).

use reth_db::mdbx::DatabaseArguments;
use reth_db_api::models::ClientVersion;
use reth_hybrid_adapter::{RethMdbx, open_hybrid_with};
use reth_hybrid_hybrid::{FollowerSync, HybridDb, HybridOptions, suites::OpenError};
use reth_hybrid_rocksdb::RocksEngine;
use std::path::Path;

fn open(dir: &Path) -> Result<HybridDb<RethMdbx, RocksEngine>, OpenError> {
    let options = HybridOptions {
        follower_sync: FollowerSync::EveryCommit,
        ..HybridOptions::default()
    };
    let db = open_hybrid_with(
        dir,
        DatabaseArguments::new(ClientVersion::default()),
        options,
    )?;
    Ok(db.engine().clone())
}

reth_hybrid_hybrid::pair_suite!(open);
