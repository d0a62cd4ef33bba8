//! reth-hybrid inside reth v2.5.1.
//!
//! - [`RethMdbx`]: reth's own MDBX environment as a reth-hybrid raw engine (the hybrid's primary
//!   inside a reth process, so only one libmdbx is linked).
//! - [`UpstreamDatabase`]: any raw engine behind reth's `Database`, `DbTx`, `DbTxMut`,
//!   `TableImporter`, cursor traits and `DatabaseMetrics`, generically over reth's tables.
//! - [`open_hybrid`]: the node's database: reth's MDBX for hot state, RocksDB for the history
//!   indices and the tx-hash index, one commit across both.
//! - [`RethDbMetrics`]: reth's own `reth_database_*` metrics, recorded at reth's trait calls.

mod open;
mod reth_db_metrics;
mod reth_mdbx;
mod upstream;

pub use open::{
    HybridNodeDb, enable_metrics, open_hybrid, open_hybrid_read_only, open_hybrid_with,
};
pub use reth_db_metrics::RethDbMetrics;
pub use reth_mdbx::{RethCursor, RethMdbx, RethTx};
pub use upstream::{RethGauges, UpstreamCursor, UpstreamDatabase, UpstreamTx, to_reth};
