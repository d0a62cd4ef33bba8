//! The crash and concurrency suite on our own engine pair with `FollowerSync::EveryCommit`:
//! each commit's RocksDB writes go through the intent log and a synced RocksDB write.

mod common;

use reth_hybrid_hybrid::suites::OpenError;
use std::path::Path;

fn open(dir: &Path) -> Result<common::Db, OpenError> {
    Ok(common::open(dir, None)?)
}

reth_hybrid_hybrid::pair_suite!(open);
