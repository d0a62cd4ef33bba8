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
