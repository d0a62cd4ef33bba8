//! Datadir tools: table migration between MDBX and RocksDB (SST files + ingestion, verified,
//! resumable, reversible), `stats`, `verify`, `layout set`, and the synthetic reth datadir
//! generator. Built on the concrete engines: migration is MDBX <-> RocksDB by nature.

pub mod abandon;
mod copy_feed;
pub mod crash;
pub mod datadir;
pub mod error;
pub mod fault;
mod file_check;
pub mod generate;
pub mod layout_set;
pub mod migrate;
pub mod plan;
pub mod state;
pub mod stats;
pub mod verify;

pub use error::MigrateError;
pub use generate::{GenerateReport, GenerateSpec, generate, generate_with_progress};
pub use migrate::{MigrateReport, TableReport, migrate};
pub use plan::{MigrateRequest, Plan, TablePlan, plan};
pub use reth_hybrid_hybrid::digest::{self, TableDigest};
pub use reth_hybrid_hybrid::progress::{self, NoProgress, Progress};
