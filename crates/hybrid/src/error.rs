//! Errors of the hybrid router, each naming what failed and how to fix it.

use crate::intent_log::Damage;
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
         mix with its layout. Adopt it first (`reth-hybrid-node-hybrid db --datadir <datadir> adopt-v2`, see \
         docs/migration.md), or use a datadir made with `--storage.v2=false` (reth's v1 layout)"
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
    #[error(
        "intent log {path} fails its checksum at byte {offset}: the disk changed bytes of a \
         complete record. No commit depends on it (MDBX and RocksDB both hold commit {seq}), so \
         nothing is lost, and the file was left as it is: check the disk, move the file aside \
         (keep it for a bug report) and open again"
    )]
    CorruptIntentNotNeeded {
        path: PathBuf,
        offset: u64,
        seq: u64,
    },
    #[error(
        "intent log {path} is damaged ({damage}; byte {offset}), but it is the only copy of \
         RocksDB's writes of commit {decided}, which MDBX decided; RocksDB holds commit {applied}. \
         Nothing was changed. Do not delete or edit the file: restore the whole datadir (MDBX, \
         RocksDB and this file) from one backup taken while reth was stopped, and keep the \
         damaged file for a bug report"
    )]
    DecidedIntentDamaged {
        path: PathBuf,
        offset: u64,
        damage: Damage,
        decided: u64,
        applied: u64,
    },
    #[error(
        "could not {op} intent log {path} ({source}); check free disk space and the device \
         (kernel log), then retry"
    )]
    IntentIo {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "MDBX's commit of sequence {seq} reported an error ({source}), so whether MDBX decided it \
         is unknown; reads and writes are refused from now on. Fix the cause (disk space, \
         device), then reopen the database: recovery finishes or discards the commit"
    )]
    PrimaryCommit {
        seq: u64,
        #[source]
        source: DatabaseError,
    },
    #[error(
        "RocksDB could not apply commit {seq} after MDBX decided it ({source}); reads and writes \
         are refused from now on. Fix the cause (disk space, device), then reopen the database: \
         recovery replays the commit into RocksDB from the intent log"
    )]
    FollowerApply {
        seq: u64,
        #[source]
        source: DatabaseError,
    },
    #[error(
        "recovery could not replay commit {seq} from intent log {path} into RocksDB ({source}); \
         the intent log was kept, so nothing is lost: fix the cause (disk space, device), then open \
         the database again"
    )]
    Replay {
        seq: u64,
        path: PathBuf,
        #[source]
        source: DatabaseError,
    },
    #[error(
        "recovery could not replay deferred commit {seq} from MDBX's pending row into RocksDB \
         ({source}); the row was kept, so nothing is lost: fix the cause (disk space, device), \
         then open the database again"
    )]
    ReplayDeferred {
        seq: u64,
        #[source]
        source: DatabaseError,
    },
    #[error(
        "MDBX's pending row {key} is damaged ({detail}), but it is the only copy of RocksDB's \
         writes of a commit MDBX decided (MDBX is at follower commit {decided}, RocksDB at \
         {applied}). Nothing was changed: restore the whole datadir from one backup taken while \
         reth was stopped"
    )]
    PendingRowDamaged {
        key: String,
        detail: String,
        decided: u64,
        applied: u64,
    },
    #[error(
        "RocksDB could not sync its WAL after commit {seq} ({source}); its last commits are kept \
         in MDBX, so nothing is lost, but reads and writes are refused from now on. Fix the cause \
         (disk space, device), then reopen the database: recovery replays what RocksDB lost"
    )]
    FollowerSync {
        seq: u64,
        #[source]
        source: DatabaseError,
    },
    #[error(
        "commit {seq} failed after MDBX may have decided it, so RocksDB may lack its writes; \
         this handle refuses reads and writes: reopen the database to recover (recovery \
         finishes or discards the commit)"
    )]
    Poisoned { seq: u64 },
    #[error(
        "a read transaction found MDBX at follower commit {seen} but this handle's RocksDB view \
         is at commit {current}: a commit bypassed this handle (a second HybridDb, or a direct \
         write, on the same engines); use one HybridDb per datadir and reopen the database"
    )]
    NoFollowerView { seen: u64, current: u64 },
    #[error(
        "a write reached the RocksDB half of commit {seq} from another thread while it was \
         being committed; the commit was not made (nothing changed): finish every cursor of a \
         transaction before committing it"
    )]
    RacingWrite { seq: u64 },
    #[error(
        "a table migration is in progress in this datadir ({path} exists): its tables have rows \
         in both engines. Finish it by running the same `reth-hybrid migrate` command again \
         (it resumes), then open the datadir"
    )]
    MigrationInProgress { path: PathBuf },
    #[error(
        "{path} is not writable ({source}); opening the datadir for use needs write access to it \
         (lock, commits, the intent log). Remount it read-write, or fix its owner, permissions or \
         immutable attribute (`lsattr`); on a read-only mount `reth-hybrid verify` and \
         `reth-hybrid stats` still read it"
    )]
    NotWritable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "commit {seq}'s RocksDB writes are {bytes} bytes, more than an intent record's 32-bit \
         length field can frame (4 GiB - 1); nothing was written or decided. A commit this large \
         should have spilled to SST files: report it, and split the work into smaller commits"
    )]
    IntentTooLarge { seq: u64, bytes: u64 },
    #[error(
        "Metadata row {key} is reth-hybrid's own (commit sequences, the layout, RocksDB writes \
         not yet synced); deleting or overwriting it through the database would leave a datadir \
         that no longer opens or that loses commits on power loss, so it was refused and nothing \
         changed. Only reth's own Metadata rows can be changed (`db clear Metadata` keeps ours)"
    )]
    ControlRow { key: String },
    #[error(
        "{datadir} is already open read-write in this process (another HybridDb on the same \
         engines); a second handle would reuse commit sequence numbers and move RocksDB's \
         recorded sequence backwards. Share the open handle (HybridDb is Clone), or drop it \
         before opening the datadir again"
    )]
    AlreadyOpen { datadir: PathBuf },
    #[error(transparent)]
    Engine(#[from] DatabaseError),
}

/// An injected I/O fault as the engine error it stands for (only fault tests produce these).
pub(crate) fn injected(engine: &'static str, e: std::io::Error) -> DatabaseError {
    DatabaseError::Commit(
        DatabaseErrorInfo::new(e.to_string(), e.raw_os_error().unwrap_or(-1))
            .with_engine(engine)
            .with_source(e),
    )
}

impl HybridError {
    /// As the error of `kind` (e.g. `DatabaseError::Commit`), so a failed commit does not read as
    /// a failed open; engine errors pass through unchanged.
    pub(crate) fn into_database_error(
        self,
        kind: fn(DatabaseErrorInfo) -> DatabaseError,
    ) -> DatabaseError {
        match self {
            HybridError::Engine(e) => e,
            other => kind(
                DatabaseErrorInfo::new(other.to_string(), -1)
                    .with_engine("hybrid")
                    .with_source(other),
            ),
        }
    }
}

impl From<HybridError> for DatabaseError {
    fn from(e: HybridError) -> Self {
        e.into_database_error(DatabaseError::Open)
    }
}
