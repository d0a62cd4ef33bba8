//! The crash and concurrency suite on our engine pair with RocksDB spilling at every write: each
//! commit's follower half is exported as SST files and the intent names them, so kills at every
//! step (and in recovery's replay) run through the large-transaction path.

mod common;

use reth_hybrid_hybrid::{HybridDb, HybridOptions, suites::OpenError};
use std::path::Path;

fn open(dir: &Path) -> Result<common::Db, OpenError> {
    let (mdbx, rocks) = common::spilling_engines(dir, 1);
    Ok(HybridDb::open(
        mdbx,
        rocks,
        dir,
        HybridOptions { layout: None },
    )?)
}

reth_hybrid_hybrid::pair_suite!(open);
