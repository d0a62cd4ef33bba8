//! Errors of the hybrid router, each naming what failed and how to fix it.

use reth_hybrid_api::{DatabaseError, DatabaseErrorInfo, EngineKind, Tables};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HybridError {
    #[error(
        "table {table} is routed to {routed} but has rows in {found}; the datadir is half-migrated \
         or was written without reth-hybrid: run `reth-hybrid migrate --datadir <datadir> --tables {table} --to {routed}`"
    )]
    RowsInOtherEngine {
        table: Tables,
        routed: EngineKind,
        found: EngineKind,
    },
    #[error(
        "the datadir's layout routes {table} to {stored}, but {requested} was asked for; \
         use `reth-hybrid migrate` to move a table between engines"
    )]
    LayoutMismatch {
        table: Tables,
        stored: EngineKind,
        requested: EngineKind,
    },
    #[error(
        "this datadir uses reth's storage v2 (Metadata storage_settings has storage_v2 = true): its \
         history and tx-hash rows live in reth's own <datadir>/rocksdb, which reth-hybrid does not \
         mix with its layout. Use a datadir made with `--storage.v2=false` (reth's v1 layout)"
    )]
    UpstreamStorageV2,
    #[error(
        "stored layout is unreadable ({reason}); it was not written by this version of reth-hybrid"
    )]
    BadLayout { reason: String },
    #[error("unsupported layout version {found}; this reth-hybrid reads version {supported}")]
    UnsupportedVersion { found: u32, supported: u32 },
    #[error(
        "RocksDB is behind MDBX: MDBX recorded commit {primary} as the last that touched RocksDB, \
         RocksDB holds commit {follower} and no intent can replay the gap (lost WAL, or restored \
         from an older copy). Refusing to serve stale history: restore both engines from the same \
         backup, or re-migrate the RocksDB tables"
    )]
    FollowerBehind { primary: u64, follower: u64 },
    #[error(
        "RocksDB is ahead of MDBX: RocksDB holds commit {follower}, MDBX recorded {primary} (MDBX \
         restored from an older copy?). Restore both engines from the same backup"
    )]
    FollowerAhead { primary: u64, follower: u64 },
    #[error(
        "intent log {path} is corrupt at byte {offset} (checksum mismatch before the tail); refusing to guess"
    )]
    CorruptIntent { path: PathBuf, offset: u64 },
    #[error("intent log {path}")]
    IntentIo {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "a previous commit failed after MDBX committed (sequence {seq}); reopen the database to recover"
    )]
    Poisoned { seq: u64 },
    #[error(
        "a table migration is in progress in this datadir ({path} exists): its tables have rows \
         in both engines. Finish it by running the same `reth-hybrid migrate` command again \
         (it resumes), then open the datadir"
    )]
    MigrationInProgress { path: PathBuf },
    #[error(transparent)]
    Engine(#[from] DatabaseError),
}

impl From<HybridError> for DatabaseError {
    fn from(e: HybridError) -> Self {
        match e {
            HybridError::Engine(e) => e,
            other => DatabaseError::Open(
                DatabaseErrorInfo::new(other.to_string(), -1)
                    .with_engine("hybrid")
                    .with_source(other),
            ),
        }
    }
}
