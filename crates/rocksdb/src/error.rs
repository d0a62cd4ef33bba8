//! RocksDB engine errors, kept whole as sources of `DatabaseError`.

use reth_hybrid_api::{DatabaseError, DatabaseErrorInfo, Tables};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RocksError {
    #[error("{name}={value:?}: expected {expected}; set it right or unset it")]
    Setting {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("opening RocksDB at {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: rocksdb::Error,
    },
    #[error("RocksDB at {path} has no column family {table}; it was not created by reth-hybrid")]
    MissingColumnFamily { path: PathBuf, table: Tables },
    #[error("RocksDB {operation} on table {table}")]
    Operation {
        operation: &'static str,
        table: Tables,
        #[source]
        source: rocksdb::Error,
    },
    #[error("I/O error on {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("RocksDB commit of a write batch")]
    Commit(#[source] rocksdb::Error),
    #[error(
        "dupsort table {table} holds a {len}-byte key, shorter than its {expected}-byte key prefix"
    )]
    CorruptDupKey {
        table: Tables,
        len: usize,
        expected: usize,
    },
    #[error(
        "the commit in flight was written to {path} ({expected_bytes} bytes), which now has \
         {found}; those files belong to the intent log and must stay until it is resolved: \
         restore them from a backup of the datadir"
    )]
    ExportedFileMissing {
        path: PathBuf,
        expected_bytes: u64,
        found: String,
    },
    #[error("the intent names spilled commit files, but its manifest is damaged: {what}")]
    BadManifest { what: String },
    #[error(
        "clearing table {table} needs a RocksDB opened without a row cache (RocksDB refuses \
         range deletions with one): open it with `RocksOptions::for_bulk_tools`"
    )]
    ClearWithRowCache { table: Tables },
    #[error("dupsort table {table} needs {expected}-byte keys; got {len} bytes")]
    WrongDupKeyLength {
        table: Tables,
        len: usize,
        expected: usize,
    },
}

/// Read errors carry the table; the engine error stays as the source.
pub(crate) fn read_err(
    operation: &'static str,
    table: Tables,
    source: rocksdb::Error,
) -> DatabaseError {
    let e = RocksError::Operation {
        operation,
        table,
        source,
    };
    DatabaseError::Read(
        DatabaseErrorInfo::new(e.to_string(), -1)
            .with_engine("rocksdb")
            .with_source(e),
    )
}

impl From<RocksError> for DatabaseError {
    fn from(e: RocksError) -> Self {
        let info = DatabaseErrorInfo::new(e.to_string(), -1).with_engine("rocksdb");
        match e {
            RocksError::Open { .. }
            | RocksError::MissingColumnFamily { .. }
            | RocksError::Setting { .. } => DatabaseError::Open(info.with_source(e)),
            RocksError::Commit(_) => DatabaseError::Commit(info.with_source(e)),
            _ => DatabaseError::Read(info.with_source(e)),
        }
    }
}
