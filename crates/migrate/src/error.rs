//! Migration and datadir-tool errors. Each names the problem and the fix; preflight errors are
//! raised before anything in the datadir changes.

use reth_hybrid_api::{DatabaseError, EngineKind, Tables};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(
        "{path} holds rows of reth's storage v2 ({tables}): this is an upstream v2 datadir whose \
         history lives in reth's own RocksDB. reth-hybrid does not mix layouts. Adopt it \
         (`reth-hybrid-node-hybrid db --datadir <datadir> adopt-v2`; rerunning it also finishes an \
         adoption interrupted before its clean-up), or use a datadir written with \
         `--storage.v2=false` (reth's v1 layout)"
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
        "verification of {table} failed: {reason}. The source was not touched and the copy was \
         removed; run the same command again to copy it anew"
    )]
    MisplacedFiles { table: Tables, reason: String },
    #[error(
        "the migration state {path} is inconsistent with the datadir ({reason}); nothing was \
         changed. Give the migration up with `reth-hybrid migrate --datadir {dd} --abandon` (it \
         keeps every table where the layout records it and removes the partial copy; see \
         docs/migration.md), or restore the datadir from a backup",
        dd = path.parent().unwrap_or(path).display()
    )]
    BadState { path: PathBuf, reason: String },
    #[error(
        "the migration state {path} cannot be read ({reason}); nothing was changed. Give the \
         interrupted migration up with `reth-hybrid migrate --datadir {dd} --abandon`: it \
         works out from the rows where every table is, removes the partial copy and this file, \
         and removes no row the node reads; then start the migration again",
        dd = path.parent().unwrap_or(path).display()
    )]
    UnreadableState { path: PathBuf, reason: String },
    #[error(
        "{step} failed ({cause}). Nothing was lost: the migration stopped between two durable \
         steps and every table is still read from one complete copy. {fix}, then run the same \
         command again to resume: {resume}"
    )]
    StepFailed {
        step: String,
        cause: &'static str,
        fix: &'static str,
        resume: String,
        #[source]
        source: Box<MigrateError>,
    },
    #[error(
        "cannot abandon the migration: table {table} is recorded in {layout} but its rows are \
         only in {other}, which no interrupted migration leaves; nothing was changed. Run \
         `reth-hybrid verify` and restore the datadir from a backup"
    )]
    AbandonRefused {
        table: Tables,
        layout: EngineKind,
        other: EngineKind,
    },
    #[error(
        "table {table} must be empty to change its engine with `layout set` ({rows} rows in {engine}); move its rows with `reth-hybrid migrate --tables {table} --to {target}`"
    )]
    NotEmpty {
        table: Tables,
        rows: u64,
        engine: EngineKind,
        target: EngineKind,
    },
    #[error(
        "{datadir}: RocksDB lacks commits that MDBX holds as pending rows (its WAL lost its \
         unsynced tail, as on power loss), so its tables look emptier than they are. Open the \
         datadir read-write once (start the node, or run `reth-hybrid migrate`), which replays \
         them, then retry"
    )]
    RecoveryPending { datadir: PathBuf },
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
