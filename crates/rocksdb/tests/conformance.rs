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
    };
    RocksEngine::open(dir, &options).expect("open RocksDB")
});
