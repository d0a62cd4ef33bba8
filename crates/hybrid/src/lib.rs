//! The hybrid router: each reth table routed to MDBX or RocksDB by a persisted layout, one write
//! transaction committed all-or-nothing across both engines, recovery on open.
//!
//! Generic over the raw engine traits: the primary engine (the layout's `mdbx`) holds the commit
//! decision, the follower (`rocksdb`) must support replay (`RawReplay`). Only constructors name
//! concrete engines.

mod commit;
pub mod control;
pub mod crash;
pub mod digest;
pub mod durable;
pub mod error;
pub mod fault;
pub mod intent_log;
pub mod layout;
pub mod metrics;
pub mod preflight;
pub mod progress;
pub mod recovery;
mod router;
pub mod row_feed;
#[cfg(feature = "test-suites")]
pub mod suites;

pub use error::HybridError;
pub use layout::{CONTROL_KEY_PREFIX, Layout};
pub use metrics::StatsPublisher;
pub use recovery::{Recovered, RecoveryAction};
pub use router::{
    DEFAULT_MAX_DEFERRED_BYTES, FOLLOWER_SYNC_ENV, FollowerSync, HybridDb, HybridOptions, HybridTx,
    HybridTxMut, INTENT_LOG_FILE, Metered, Routed,
};
