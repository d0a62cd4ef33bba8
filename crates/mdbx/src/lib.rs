//! The MDBX engine: reth-format datadirs (`<datadir>/db`) with reth's environment flags
//! (WRITEMAP, NORDAHEAD, NOSTICKYTHREADS, durable sync, 4 KiB pages, 256 DBIs) and table flags
//! (DUPSORT exactly where reth sets it), behind the raw engine interface.
//!
//! The crates.io `mdbx-sys` bundles libmdbx 0.14 while reth v2.5.1 bundles 0.13: the data file
//! format is the same (format 3), the lock file format is not, so reth and reth-hybrid must
//! never hold one datadir at the same time. The storage lock (`db/lock`) enforces that.

mod cursor;
mod env;
mod error;
pub mod lock;
mod stats;
mod tx;

pub use cursor::MdbxCursor;
pub use env::{DB_VERSION, Geometry, MdbxEngine, MdbxOptions};
pub use error::{MdbxCode, MdbxError};
pub use stats::{EnvStat, TableStat};
pub use tx::{MdbxTx, MdbxTxMut};
