//! The hybrid's crash and concurrency suite (`reth_hybrid_hybrid::suites`) on the pair the node
//! runs: reth v2.5.1's MDBX (opened by reth's `init_db`, as `open_hybrid` does for the node) and
//! our RocksDB. The same suite runs on our own pair in `crates/hybrid/tests/pair_suite.rs`:
//! SIGKILL at every crash point and at random times, readers opening while a commit is held at
//! each I/O step, a write racing a clean commit, readers across many commits. With deferred
//! RocksDB syncs (the node's default), synced after every commit so that each commit passes
//! every point; `pair_suite_every_commit.rs` runs it with `FollowerSync::EveryCommit`.

use reth_db::mdbx::DatabaseArguments;
use reth_db_api::models::ClientVersion;
use reth_hybrid_adapter::{RethMdbx, open_hybrid_with};
use reth_hybrid_hybrid::{FollowerSync, HybridDb, HybridOptions, suites::OpenError};
use reth_hybrid_rocksdb::RocksEngine;
use std::{path::Path, time::Duration};

fn open(dir: &Path) -> Result<HybridDb<RethMdbx, RocksEngine>, OpenError> {
    let options = HybridOptions {
        follower_sync: FollowerSync::Deferred {
            max_commits: 1,
            max_delay: Duration::from_secs(1),
            max_row_bytes: 16 << 20,
        },
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
