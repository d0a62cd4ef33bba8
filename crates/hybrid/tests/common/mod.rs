//! Shared constructors for the hybrid's tests: real MDBX and real RocksDB in one datadir.

#![allow(dead_code)]

use reth_hybrid_hybrid::{FollowerSync, HybridDb, HybridError, HybridOptions, Layout};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::path::Path;

pub type Db = HybridDb<MdbxEngine, RocksEngine>;

pub fn engines(dir: &Path) -> (MdbxEngine, RocksEngine) {
    engines_with(dir, true)
}

/// Synced engines whose RocksDB write transactions spill to disk past `spill_bytes` (1: at
/// every write, so every commit exports SST files).
pub fn spilling_engines(dir: &Path, spill_bytes: usize) -> (MdbxEngine, RocksEngine) {
    open_engines(dir, true, spill_bytes)
}

/// `sync_writes: false` is for suites about semantics, not durability (many short-lived datadirs).
pub fn engines_with(dir: &Path, sync_writes: bool) -> (MdbxEngine, RocksEngine) {
    open_engines(dir, sync_writes, RocksOptions::default().spill_bytes)
}

fn open_engines(dir: &Path, sync_writes: bool, spill_bytes: usize) -> (MdbxEngine, RocksEngine) {
    let mdbx =
        MdbxEngine::open(dir, MdbxOptions::create().with_geometry(Geometry::SMALL)).expect("mdbx");
    let rocks = RocksEngine::open(
        &dir.join("hybrid-rocksdb"),
        &RocksOptions {
            block_cache_bytes: 8 << 20,
            sync_writes,
            spill_bytes,
            ..RocksOptions::default()
        },
    )
    .expect("rocksdb");
    (mdbx, rocks)
}

/// The hybrid with every commit's RocksDB writes synced before it returns (the intent log's
/// protocol, which most tests here put into each state by hand).
pub fn open(dir: &Path, layout: Option<Layout>) -> Result<Db, HybridError> {
    open_with(dir, layout, FollowerSync::EveryCommit)
}

/// Deferred RocksDB syncs, every `max_commits` commits (and no later than after an hour, so a
/// test decides when).
pub fn deferred(max_commits: u32) -> FollowerSync {
    FollowerSync::Deferred {
        max_commits,
        max_delay: std::time::Duration::from_secs(3600),
        max_row_bytes: 16 << 20,
    }
}

pub fn open_with(
    dir: &Path,
    layout: Option<Layout>,
    follower_sync: FollowerSync,
) -> Result<Db, HybridError> {
    let (mdbx, rocks) = engines(dir);
    HybridDb::open(
        mdbx,
        rocks,
        dir,
        HybridOptions {
            layout,
            follower_sync,
        },
    )
}

/// The workload the crash and recovery tests share with the pair suite (each test binary uses
/// some of it).
#[allow(unused_imports)]
pub use reth_hybrid_hybrid::suites::workload::{commit, hash, visible, write_commit};
