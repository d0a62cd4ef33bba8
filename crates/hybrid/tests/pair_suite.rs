//! The crash and concurrency suite (`reth_hybrid_hybrid::suites`) on our own engine pair (our
//! MDBX and our RocksDB), with deferred RocksDB syncs (the default): each commit's RocksDB
//! writes ride in MDBX's commit as a pending row. RocksDB syncs after every commit here, so the
//! suite's kill after the intent is retired lands in every commit.
//! `integration/adapter/tests/pair_suite.rs` runs the same suite on the pair a node runs
//! (reth's MDBX and our RocksDB).

mod common;

use reth_hybrid_hybrid::suites::OpenError;
use std::path::Path;

fn open(dir: &Path) -> Result<common::Db, OpenError> {
    Ok(common::open_with(dir, None, common::deferred(1))?)
}

reth_hybrid_hybrid::pair_suite!(open);
