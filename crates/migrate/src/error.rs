//! Migration and datadir-tool errors. Each names the problem and the fix; preflight errors are
//! raised before anything in the datadir changes.

use reth_hybrid_api::{DatabaseError, EngineKind, Tables};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(
        "{path} holds rows of reth's storage v2 ({tables}): this is an upstream v2 datadir whose \
         history lives in reth's own RocksDB. reth-hybrid does not mix layouts; use a datadir \
         written with `--storage.v2=false` (reth's v1 layout)"
    )]
    UpstreamRocksDbRows { path: PathBuf, tables: String },
    #[error("{0}")]
    UpstreamStorageV2(String),
    #[error(
        "table {table} is already in {engine}; nothing to migrate (see `reth-hybrid layout get`)"
    )]
    AlreadyInTarget { table: Tables, engine: EngineKind },
    #[error(
        "table {table} already has rows in {engine}, the migration's target, but no migration of \
         it is recorded: the datadir was changed outside reth-hybrid. Run `reth-hybrid verify` \
         and restore the datadir from a backup"
    )]
    RowsInTarget { table: Tables, engine: EngineKind },
    #[error(
        "table Metadata holds reth-hybrid's layout and commit sequences and always stays in MDBX"
    )]
    MetadataStaysInMdbx,
    #[error(
        "a different migration is in progress in this datadir ({state}): {recorded}. Finish it \
         first by running: {resume}"
    )]
    OtherMigrationInProgress {
        state: PathBuf,
        recorded: String,
        resume: String,
    },
    #[error(
        "not enough free disk space on {path}: the migration writes about {needed} bytes and \
         {available} are free. Free space (or move the datadir) and run again"
    )]
    DiskSpace {
        path: PathBuf,
        needed: u64,
        available: u64,
    },
    #[error(
        "verification of {table} failed: source {source_rows} rows (checksum {source_sum}), \
         target {target_rows} rows (checksum {target_sum}). The source was not touched and the \
         copy was removed; run the same command again to copy it anew"
    )]
    VerifyFailed {
        table: Tables,
        source_rows: u64,
        source_sum: String,
        target_rows: u64,
        target_sum: String,
    },
    #[error(
        "the migration state {path} is inconsistent with the datadir ({reason}); restore the \
         datadir from a backup or report this"
    )]
    BadState { path: PathBuf, reason: String },
    #[error(
        "table {table} must be empty to change its engine with `layout set` ({rows} rows in {engine}); move its rows with `reth-hybrid migrate --tables {table} --to {target}`"
    )]
    NotEmpty {
        table: Tables,
        rows: u64,
        engine: EngineKind,
        target: EngineKind,
    },
    #[error("I/O error on {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Mdbx(#[from] reth_hybrid_mdbx::MdbxError),
    #[error(transparent)]
    Rocks(#[from] reth_hybrid_rocksdb::RocksError),
    #[error(transparent)]
    Hybrid(#[from] reth_hybrid_hybrid::HybridError),
    #[error(transparent)]
    Database(#[from] DatabaseError),
}

pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> MigrateError + '_ {
    move |source| MigrateError::Io {
        path: path.to_path_buf(),
        source,
    }
}
