//! reth-hybrid's table API: reth v2.5.1's table traits, all 31 tables with byte-identical keys
//! and values, a raw byte-level engine interface, and a typed layer written once on top of it.
//!
//! This crate knows no storage engine (no `libmdbx`, no `rocksdb` in its dependency tree).

extern crate alloc;

pub mod crash_point;
pub mod error;
pub mod models;
pub mod raw;
pub mod sorted;
pub mod table;
pub mod tables;
pub mod typed;

#[cfg(feature = "test-utils")]
pub mod conformance;
#[cfg(feature = "test-utils")]
pub mod model_engine;
#[cfg(feature = "test-utils")]
pub mod test_support;

pub use error::{DatabaseError, DatabaseErrorInfo, DatabaseWriteError, DatabaseWriteOperation};
pub use table::{Compress, Decode, Decompress, DupSort, Encode, Key, Table, TableInfo, Value};
pub use tables::{EngineKind, TableViewer, Tables};
pub use typed::{
    Database, DbCursorRO, DbCursorRW, DbDupCursorRO, DbDupCursorRW, DbTx, DbTxMut, DupWalker,
    RangeWalker, ReverseWalker, Walker,
};
