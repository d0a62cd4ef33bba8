//! The crash and concurrency suite on our engine pair with RocksDB spilling at every write: each
//! commit's follower half is exported as SST files and the intent names them, so kills at every
//! step (and in recovery's replay) run through the large-transaction path.

mod common;

use reth_hybrid_hybrid::{FollowerSync, HybridDb, HybridOptions, suites::OpenError};
use std::path::Path;

fn open(dir: &Path) -> Result<common::Db, OpenError> {
    let (mdbx, rocks) = common::spilling_engines(dir, 1);
    Ok(HybridDb::open(
        mdbx,
        rocks,
        dir,
        // Every commit exports SST files, which always take the intent log's path.
        HybridOptions {
            follower_sync: FollowerSync::EveryCommit,
            ..HybridOptions::default()
        },
    )?)
}

reth_hybrid_hybrid::pair_suite!(open);

/// Kills inside the large-transaction path itself: after a spill run reached the scratch store,
/// after one table's commit file was exported (before the intent names it), and after one
/// table's file was ingested and the next not (in a commit's apply or in recovery's replay).
#[test]
fn kills_inside_spilling_exporting_and_ingesting_leave_no_torn_commit() {
    let names = reth_hybrid_rocksdb::crash::CrashPoint::ALL.map(|p| p.name());
    reth_hybrid_hybrid::suites::crash::kills_at_named_points(open, &names);
}
