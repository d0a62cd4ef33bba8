//! The shared conformance suite on the hybrid, under four layouts: all-MDBX, all-RocksDB, the
//! default split, and a random split (fixed seed). The suite's tables (CanonicalHeaders,
//! PlainStorageState, Metadata) land in different engines across these layouts.

mod common;

use reth_hybrid_api::{EngineKind, Tables};
use reth_hybrid_hybrid::{HybridDb, HybridOptions, Layout};
use std::path::Path;

fn open(dir: &Path, layout: Layout) -> common::Db {
    let (mdbx, rocks) = common::engines_with(dir, false);
    HybridDb::open(
        mdbx,
        rocks,
        dir,
        HybridOptions {
            layout: Some(layout),
            ..HybridOptions::default()
        },
    )
    .expect("hybrid")
}

fn random_layout() -> Layout {
    let mut layout = Layout::default();
    let mut x: u64 = 0x5eed;
    for t in Tables::ALL {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        layout.set(
            t,
            if x >> 63 == 0 {
                EngineKind::Mdbx
            } else {
                EngineKind::RocksDb
            },
        );
    }
    // Pin the suite's two tables to opposite engines so both routes run.
    layout
        .set(Tables::CanonicalHeaders, EngineKind::RocksDb)
        .set(Tables::PlainStorageState, EngineKind::Mdbx);
    layout
}

reth_hybrid_api::conformance_suite!(hybrid_all_mdbx, |dir: &Path| open(
    dir,
    Layout::all(EngineKind::Mdbx)
));
reth_hybrid_api::conformance_suite!(hybrid_all_rocksdb, |dir: &Path| open(
    dir,
    Layout::all(EngineKind::RocksDb)
));
reth_hybrid_api::conformance_suite!(hybrid_default_layout, |dir: &Path| {
    let mut layout = Layout::default();
    // The default keeps both suite tables in MDBX; route the dupsort one to RocksDB as reth v2
    // would for its RocksDB tables, so the default split is exercised across engines.
    layout.set(Tables::PlainStorageState, EngineKind::RocksDb);
    open(dir, layout)
});
reth_hybrid_api::conformance_suite!(hybrid_random_layout, |dir: &Path| open(
    dir,
    random_layout()
));

/// reth-hybrid's control rows through the router, with `Metadata` in MDBX and in RocksDB.
mod control_rows {
    use super::*;
    use reth_hybrid_hybrid::suites::{OpenError, control_rows};

    fn in_mdbx(dir: &Path) -> Result<common::Db, OpenError> {
        Ok(open(dir, Layout::all(EngineKind::Mdbx)))
    }

    fn in_rocksdb(dir: &Path) -> Result<common::Db, OpenError> {
        Ok(open(dir, Layout::all(EngineKind::RocksDb)))
    }

    fn default_layout(dir: &Path) -> Result<common::Db, OpenError> {
        Ok(open(dir, Layout::default()))
    }

    #[test]
    fn metadata_in_mdbx() {
        control_rows::survive_a_metadata_clear_and_refuse_writes(in_mdbx);
    }

    #[test]
    fn metadata_in_rocksdb() {
        control_rows::survive_a_metadata_clear_and_refuse_writes(in_rocksdb);
    }

    #[test]
    fn default_layout_with_deferred_syncs() {
        control_rows::survive_a_metadata_clear_and_refuse_writes(default_layout);
    }
}
