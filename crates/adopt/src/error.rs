//! Adoption's errors. Each names the problem and the fix; refusals come before anything in the
//! datadir changes.

use reth_hybrid_api::{DatabaseError, Tables};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    #[error(
        "{datadir} is not a storage v2 datadir ({why}): there is nothing to adopt. A v1 datadir \
         moves to the hybrid layout with `reth-hybrid migrate --datadir {datadir}`"
    )]
    NotStorageV2 { datadir: PathBuf, why: String },
    #[error(
        "{datadir} cannot be adopted: {why}. Nothing was changed; the datadir is still a working \
         v2 datadir. {fix}"
    )]
    Refused {
        datadir: PathBuf,
        why: String,
        fix: String,
    },
    #[error("the adoption in {datadir} cannot be abandoned: {why}. Nothing was changed. {fix}")]
    AbandonRefused {
        datadir: PathBuf,
        why: String,
        fix: String,
    },
    #[error(
        "not enough free disk space on {path}: adoption writes about {needed} bytes and \
         {available} are free. Free space (or move the datadir) and run again; nothing was changed"
    )]
    DiskSpace {
        path: PathBuf,
        needed: u64,
        available: u64,
    },
    #[error(
        "{missing} rows of {table} have no preimage in the history indices (one: {example}): \
         this storage v2 datadir's history is incomplete (a pruned node keeps only recent \
         history), so its plain state cannot be rebuilt. Nothing was switched: the datadir is \
         still a working v2 datadir. A pruned node cannot be adopted; sync a new datadir with \
         `--storage.v2=false` and migrate that"
    )]
    MissingPreimages {
        table: Tables,
        missing: u64,
        example: String,
    },
    #[error(
        "the copy of {table} from reth's RocksDB does not match its source ({source_rows} rows \
         there, {target_rows} in MDBX; first difference at key {first_difference}). Nothing was \
         switched: the datadir is still a working v2 datadir. Report this; to retry, restore a \
         backup or clear MDBX's {table} (`reth db clear mdbx {table}` with the stock build)"
    )]
    CopyMismatch {
        table: Tables,
        source_rows: u64,
        target_rows: u64,
        first_difference: String,
    },
    #[error(
        "the copy of {table} from reth's RocksDB into reth-hybrid's RocksDB does not match its \
         source ({source_rows} rows there, {target_rows} in the copy, or their checksums \
         differ). Nothing was switched: the datadir is still a working v2 datadir, and the copy \
         was removed. Rerun the adoption to copy the table again; report this if it fails twice"
    )]
    IngestMismatch {
        table: Tables,
        source_rows: u64,
        target_rows: u64,
    },
    /// A copy stopped because the one running beside it failed; never the error reported.
    #[error(
        "the copy stopped because the one beside it failed; nothing was switched, and a rerun \
         resumes both"
    )]
    StoppedBeside,
    #[error(
        "{table} holds {mdbx} rows for block {block} after the copy, where the static files \
         record {files}. Nothing was switched: the datadir is still a working v2 datadir. Report \
         this; to stage the static files' rows anew, clear all three tables they fill with the \
         stock build (`reth db clear mdbx AccountChangeSets`, then StorageChangeSets and \
         TransactionSenders) and rerun adoption"
    )]
    ChangesetCount {
        table: Tables,
        block: u64,
        mdbx: u64,
        files: u64,
    },
    #[error(
        "the state root recomputed from {datadir}'s hashed state is {computed}, but the header \
         of its head block {block} commits to {expected}: the datadir's state does not match its \
         chain (reth's consistency check would unwind it, or it is damaged). Nothing was \
         changed. Start the v2 node once and stop it cleanly, then adopt; if this persists, \
         restore the datadir from a backup"
    )]
    StateRoot {
        datadir: PathBuf,
        block: u64,
        computed: alloy_primitives::B256,
        expected: alloy_primitives::B256,
    },
    #[error(
        "{table} of {datadir} does not match its hashed state: {problem}. The state itself \
         matches the head's state root, but reth builds each new block's root on the stored \
         nodes, so the adopted node would fail at its next block. Nothing was changed. Rebuild \
         the tries with the stock build (`reth stage drop --datadir <datadir> merkle`, then \
         start the v2 node until its pipeline finishes and stop it cleanly), then adopt"
    )]
    Trie {
        datadir: PathBuf,
        table: Tables,
        problem: String,
    },
    #[error(
        "reth's RocksDB holds {table} rows past the head block {head} ({example}): the v2 node \
         stopped in the middle of saving blocks, which reth heals at its next start. Nothing was \
         switched: the datadir is still a working v2 datadir. Start the v2 node once and stop it \
         cleanly, then rerun adoption"
    )]
    RowsPastHead {
        table: Tables,
        head: u64,
        example: String,
    },
    #[error("reading the static files' {what}")]
    StaticFiles {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("opening MDBX at {datadir}")]
    Open {
        datadir: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("the adoption state {path} cannot be read ({reason}); nothing was changed")]
    UnreadableState { path: PathBuf, reason: String },
    #[error("I/O error on {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Rocks(#[from] reth_hybrid_rocksdb::RocksError),
    #[error(transparent)]
    Hybrid(#[from] reth_hybrid_hybrid::HybridError),
    #[error(transparent)]
    Database(#[from] DatabaseError),
}

pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> AdoptError + '_ {
    move |source| AdoptError::Io {
        path: path.to_path_buf(),
        source,
    }
}
