//! The crash and concurrency suite (`reth_hybrid_hybrid::suites`) on our own engine pair (our
//! MDBX and our RocksDB). `integration/adapter/tests/pair_suite.rs` runs the same suite on the
//! pair a node runs (reth's MDBX and our RocksDB).

mod common;

use reth_hybrid_hybrid::suites::OpenError;
use std::path::Path;

fn open(dir: &Path) -> Result<common::Db, OpenError> {
    Ok(common::open(dir, None)?)
}

reth_hybrid_hybrid::pair_suite!(open);
