//! The shared conformance suite on real RocksDB.

use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};

reth_hybrid_api::conformance_suite!(rocksdb, |dir: &std::path::Path| {
    // Small cache and unsynced WAL keep hundreds of test instances cheap; durability is the
    // crash tests' subject, not this suite's.
    let options = RocksOptions {
        block_cache_bytes: 8 << 20,
        sync_writes: false,
        create_if_missing: true,
        read_only: false,
        ..RocksOptions::default()
    };
    RocksEngine::open(dir, &options).expect("open RocksDB")
});

// The same suite with write transactions spilling to disk every ~5 writes (each write counts
// 128 bytes plus its key and value), so every merge path meets in-memory, spilled and committed
// rows together, and commits go through exported SST files.
reth_hybrid_api::conformance_suite!(rocksdb_spilling, |dir: &std::path::Path| {
    let options = RocksOptions {
        block_cache_bytes: 8 << 20,
        sync_writes: false,
        spill_bytes: 700,
        ..RocksOptions::default()
    };
    RocksEngine::open(dir, &options).expect("open RocksDB")
});
