//! The RocksDB engine: one column family per table, named like the table (reth v2's naming),
//! keys and values in the same bytes as in MDBX, bytewise comparator only. Dupsort tables are
//! stored as `key ++ value` (every reth dupsort table has a fixed-size key) with an empty value,
//! so every reth table can live here. Cursors have MDBX's semantics, from
//! `reth_hybrid_api::sorted`.

mod bulk;
#[cfg(feature = "crash-points")]
pub mod crash;
#[cfg(not(feature = "crash-points"))]
mod crash;
mod env;
mod error;
mod export;
mod options;
mod spill;
mod tx;
mod upstream;
mod view;

pub use bulk::{SstFile, SstSink, TableSize, TableSstFile, is_initialized};
pub use env::{HYBRID_ROCKSDB_DIR, RocksEngine, open_engines, wait_for_engines_closed};
pub use error::RocksError;
pub use options::{
    BLOCK_CACHE_MIB_ENV, HISTORY_L0_TRIGGER_ENV, RocksOptions, SPILL_BYTES_ENV,
    block_cache_for_ram, default_block_cache_bytes,
};
pub use tx::{RocksCursor, RocksStore, RocksTx, RocksTxMut};
pub use upstream::{
    UpstreamColumnFamily, UpstreamRocksDb, clear_upstream_tables, inspect_upstream_rocksdb,
};
