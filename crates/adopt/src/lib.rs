//! Adopting a reth storage-v2 datadir (issue 35). v2 keeps history and tx hashes in reth's own
//! RocksDB, changesets and senders in static files, no plain state, and its tries under packed
//! keys. Adoption turns it into a hybrid datadir ([`AdoptTarget::Hybrid`]: history and tx hashes
//! ingested straight into reth-hybrid's RocksDB, the rest in MDBX in v1's bytes) or into a stock
//! v1 datadir ([`AdoptTarget::V1`]: every table in MDBX), which stock reth runs as it is. Either
//! way one MDBX commit switches it: before it the datadir is the v2 one reth left, after it the
//! target. See docs/migration.md.
//!
//! The pieces, each resumable from what the datadir already holds:
//! - [`upstream_ingest`]: reth's RocksDB tables into reth-hybrid's RocksDB by SST ingestion;
//! - [`upstream_copy`]: reth's RocksDB tables into the MDBX tables of the same name (v1);
//! - [`plain_state`]: `PlainAccountState`/`PlainStorageState` rebuilt from the hashed state, the
//!   addresses and slots behind the hashes taken from the history keys;
//! - [`trie`]: `AccountsTrie`/`StoragesTrie` rewritten under v1's keys, in the one write
//!   transaction that also switches the storage settings to v1;
//! - [`verify`]: the head's state root recomputed (before anything is written) and the
//!   changesets checked block by block against the static files (before the switch).

pub mod plain_state;
pub mod static_files;
pub mod trie;
pub mod upstream_copy;
pub mod upstream_ingest;
pub mod verify;

mod crash;
pub mod error;

pub use error::AdoptError;
pub use reth_hybrid_hybrid::progress::{NoProgress, Progress};

use alloy_primitives::{B256, keccak256};
use crash::crash_point;
use error::io;
use plain_state::{PlainRows, rebuild_plain_state};
use reth_hybrid_api::{
    Tables,
    models::{STORAGE_SETTINGS_KEY, StorageSettings},
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
    typed::TypedDatabase,
};
use reth_hybrid_hybrid::{
    Layout,
    control::{get_bytes, put_bytes},
    durable::{free_bytes, remove_durably, write_atomically},
    layout::{LAYOUT_KEY, MIGRATION_STATE_FILE},
};
use reth_hybrid_rocksdb::{
    HYBRID_ROCKSDB_DIR, RocksEngine, UpstreamRocksDb, clear_upstream_tables,
};
use serde::{Deserialize, Serialize};
use static_files::{StaticRows, V2StaticFiles, copy_static_files};
use std::{
    path::{Path, PathBuf},
    sync::atomic::{AtomicBool, Ordering},
    time::Instant,
};
use trie::{TrieRows, convert_tries};
use upstream_copy::{UPSTREAM_TABLES, copy_upstream_table};
use upstream_ingest::ingest_upstream_table;

/// The adoption's record: which v2 datadir it started from. Its presence also tells a rerun
/// that MDBX's staged tables are the adoption's own.
pub const ADOPT_STATE_FILE: &str = "hybrid-adopt.json";

/// Where an adoption leaves the datadir.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdoptTarget {
    /// reth-hybrid's layout: history and tx hashes in `hybrid-rocksdb/`, the rest in MDBX.
    Hybrid,
    /// A stock reth v1 datadir, every table in MDBX (what state files before the target was
    /// recorded describe).
    #[default]
    V1,
}

impl AdoptTarget {
    /// As the node command's `--to` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hybrid => "hybrid",
            Self::V1 => "v1",
        }
    }
}

/// The MDBX tables adoption fills, which a v2 datadir leaves empty ([`AdoptTarget::Hybrid`]
/// leaves the first three empty too: they go to reth-hybrid's RocksDB).
pub const STAGED_TABLES: [Tables; 8] = [
    Tables::TransactionHashNumbers,
    Tables::AccountsHistory,
    Tables::StoragesHistory,
    Tables::AccountChangeSets,
    Tables::StorageChangeSets,
    Tables::TransactionSenders,
    Tables::PlainAccountState,
    Tables::PlainStorageState,
];

/// An error from the caller's MDBX opener.
pub type OpenError = Box<dyn std::error::Error + Send + Sync>;

/// How adoption opens the datadir's MDBX: reth-hybrid's own engine in the tools and tests,
/// reth's inside the node binary (where a second libmdbx would clash). Both take reth's storage
/// lock; a read-only open refuses a datadir a live process holds.
pub trait MdbxOpener {
    type Engine: RawEngine + Clone;
    fn read_only(&self, datadir: &Path) -> Result<Self::Engine, OpenError>;
    fn read_write(&self, datadir: &Path) -> Result<Self::Engine, OpenError>;
    /// Bytes the table's pages take, for the free-space estimate.
    fn table_bytes(&self, engine: &Self::Engine, table: Tables) -> Result<u64, OpenError>;
}

/// The paths adoption looks at.
struct Datadir {
    root: PathBuf,
}

impl Datadir {
    fn mdbx_file(&self) -> PathBuf {
        self.root.join("db").join("mdbx.dat")
    }
    fn upstream_rocksdb(&self) -> PathBuf {
        self.root.join("rocksdb")
    }
    fn state_file(&self) -> PathBuf {
        self.root.join(ADOPT_STATE_FILE)
    }
    fn hybrid_rocksdb(&self) -> PathBuf {
        self.root.join(HYBRID_ROCKSDB_DIR)
    }
    /// Where [`AdoptTarget::Hybrid`] writes its SST files before ingesting them.
    fn staging(&self) -> PathBuf {
        self.root.join(ADOPT_STAGING_DIR)
    }
    fn migration_in_progress(&self) -> bool {
        self.root.join(MIGRATION_STATE_FILE).exists()
    }
    /// reth-hybrid's own RocksDB (a hybrid adoption's staged copy, or a hybrid datadir's) or a
    /// migration in progress: this is not a v2 datadir as reth left it.
    fn has_hybrid_parts(&self) -> bool {
        self.migration_in_progress() || reth_hybrid_rocksdb::is_initialized(&self.hybrid_rocksdb())
    }
}

/// Where [`AdoptTarget::Hybrid`] stages its SST files (removed when the adoption ends).
pub const ADOPT_STAGING_DIR: &str = "hybrid-adopt-staging";

/// reth v2.5.1's own column families besides the three tables: adoption leaves them as they are
/// (reth keeps block access lists there in either layout).
const RETH_OTHER_FAMILIES: [&str; 3] =
    ["default", "BlockAccessLists", "BlockAccessListBlockNumbers"];

/// Prune segments whose checkpoint means rows adoption needs are gone (history: the preimages
/// of the hashed state; senders; tx hashes; bodies).
const PRUNED_REFUSED: [&str; 5] = [
    "AccountHistory",
    "StorageHistory",
    "SenderRecovery",
    "TransactionLookup",
    "Bodies",
];

/// The adoption state's format: 2 since the stored tries are checked with the state root (a
/// version 1 state's root is not reused, so a resumed run checks the tries too), 3 since it
/// records its target (an older build must not resume a hybrid adoption as a v1 one).
const STATE_VERSION: u32 = 3;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct AdoptState {
    version: u32,
    /// Checksum of the stage and prune checkpoints when the adoption started: a v2 node run in
    /// between changes them, and the staged rows are then stale.
    source: String,
    /// The head's state root the first run recomputed: a resumed run on the same source does
    /// not read the whole state again.
    #[serde(default)]
    state_root: Option<B256>,
    /// Where the adoption goes; a rerun must go there too.
    #[serde(default)]
    target: AdoptTarget,
}

/// What an adoption did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdoptReport {
    pub head: u64,
    pub upstream_rows: Vec<(Tables, u64)>,
    pub static_rows: StaticRows,
    pub plain: PlainRows,
    pub tries: TrieRows,
    /// The adoption had been interrupted after its switch to v1; this run only cleaned up.
    pub resumed_after_switch: bool,
    pub seconds: f64,
}

fn open_err(dd: &Datadir) -> impl FnOnce(OpenError) -> AdoptError + '_ {
    move |source| AdoptError::Open {
        datadir: dd.root.clone(),
        source,
    }
}

fn refused(dd: &Datadir, why: impl Into<String>, fix: impl Into<String>) -> AdoptError {
    AdoptError::Refused {
        datadir: dd.root.clone(),
        why: why.into(),
        fix: fix.into(),
    }
}

fn is_v2<T: RawTx>(tx: &T) -> Result<bool, AdoptError> {
    Ok(get_bytes(tx, STORAGE_SETTINGS_KEY)?
        .is_some_and(|b| StorageSettings::from_json_bytes(&b).is_ok_and(|s| s.storage_v2)))
}

fn source_identity<T: RawTx>(tx: &T) -> Result<String, AdoptError> {
    let mut rows = Vec::new();
    for table in [Tables::StageCheckpoints, Tables::PruneCheckpoints] {
        let mut cursor = tx.cursor(table)?;
        let mut next = cursor.first()?;
        while let Some((k, v)) = next {
            for part in [table.name().as_bytes(), &k, &v] {
                rows.extend_from_slice(&(part.len() as u64).to_be_bytes());
                rows.extend_from_slice(part);
            }
            next = cursor.next()?;
        }
    }
    Ok(hex::encode(keccak256(&rows)))
}

fn read_state(dd: &Datadir) -> Result<Option<AdoptState>, AdoptError> {
    let path = dd.state_file();
    match std::fs::read(&path) {
        Ok(bytes) => {
            let state: AdoptState =
                serde_json::from_slice(&bytes).map_err(|e| AdoptError::UnreadableState {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
            if state.version > STATE_VERSION {
                return Err(AdoptError::UnreadableState {
                    path,
                    reason: format!(
                        "format version {} is newer than this build's {STATE_VERSION}: finish \
                         the adoption with the reth-hybrid build that started it",
                        state.version
                    ),
                });
            }
            Ok(Some(state))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(&path)(e)),
    }
}

/// What the checks found and a run will do: `--dry-run` prints it, and a run starts with it.
#[derive(Debug, Clone, PartialEq)]
pub struct AdoptPlan {
    pub head: u64,
    /// The head's state root, recomputed from the hashed state and equal to its header's.
    pub state_root: B256,
    /// Where a run starts: anew, resuming its staged rows, restaging them (a v2 node ran since
    /// they were staged), or only the cleanup after an interrupted switch.
    pub start: AdoptStart,
    /// Bytes adoption is estimated to write, and what the disk has free (0 when nothing is left
    /// to stage).
    pub needed_bytes: u64,
    pub available_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdoptStart {
    Fresh,
    Resume,
    Restage,
    CleanupAfterSwitch,
}

/// Runs every refusal and check of [`adopt`] on a read-only open and writes nothing: the
/// `--dry-run`.
pub fn check_adoption<O: MdbxOpener>(
    datadir: &Path,
    mdbx: &O,
    source: &dyn V2StaticFiles,
    target: AdoptTarget,
    progress: &dyn Progress,
) -> Result<AdoptPlan, AdoptError> {
    let dd = Datadir {
        root: datadir.to_path_buf(),
    };
    Ok(checked(&dd, mdbx, source, target, progress)?.0)
}

/// The refusals, in an order where the cheap ones come first, then the plan and the source's
/// identity (for the state file).
fn checked<O: MdbxOpener>(
    dd: &Datadir,
    mdbx: &O,
    source: &dyn V2StaticFiles,
    target: AdoptTarget,
    progress: &dyn Progress,
) -> Result<(AdoptPlan, String), AdoptError> {
    if target == AdoptTarget::Hybrid {
        reth_hybrid_rocksdb::RocksOptions::check_environment()?;
    }
    if !dd.mdbx_file().exists() {
        return Err(refused(
            dd,
            format!("{} does not exist", dd.mdbx_file().display()),
            "Pass the datadir reth was started with (--datadir).",
        ));
    }
    reth_hybrid_hybrid::preflight::check_writable(&dd.root, &[dd.root.join("db")])?;
    let state = read_state(dd)?;
    if let Some(state) = &state
        && state.target != target
    {
        return Err(refused(
            dd,
            format!(
                "an adoption to {} was started here, and this run asks for {}",
                state.target.as_str(),
                target.as_str()
            ),
            format!(
                "Rerun it with `--to {}` to finish it{}.",
                state.target.as_str(),
                match state.target {
                    AdoptTarget::V1 => " (then `reth-hybrid migrate` takes it to the hybrid)",
                    AdoptTarget::Hybrid => " (then `reth-hybrid migrate --to mdbx` gives v1)",
                }
            ),
        ));
    }
    // reth-hybrid's own RocksDB or a migration: refused, except after an adoption's switch,
    // where a `migrate` run before the clean-up finished does no harm and the clean-up is left.
    let hybrid_parts = || {
        refused(
            dd,
            "it already has reth-hybrid's own RocksDB or a migration in progress",
            "Finish or abandon that first (`reth-hybrid migrate`, see docs/migration.md).",
        )
    };
    if dd.has_hybrid_parts() && state.is_none() {
        return Err(hybrid_parts());
    }
    // A read-only open refuses a datadir a running node holds.
    let ro = mdbx.read_only(&dd.root).map_err(open_err(dd))?;
    let tx = ro.begin_ro()?;
    let identity = source_identity(&tx)?;
    let head = head_block(&tx)?;
    if !is_v2(&tx)? {
        if state.is_none() {
            return Err(AdoptError::NotStorageV2 {
                datadir: dd.root.clone(),
                why: "Metadata storage_settings says v1".into(),
            });
        }
        let plan = AdoptPlan {
            head,
            state_root: B256::ZERO,
            start: AdoptStart::CleanupAfterSwitch,
            needed_bytes: 0,
            available_bytes: free_bytes(&dd.root).map_err(io(&dd.root))?,
        };
        return Ok((plan, identity));
    }
    // Before the switch, reth-hybrid's RocksDB can only be a hybrid adoption's own staged copy.
    if dd.migration_in_progress() || (dd.has_hybrid_parts() && target != AdoptTarget::Hybrid) {
        return Err(hybrid_parts());
    }
    let start = match &state {
        None => AdoptStart::Fresh,
        Some(state) if state.source == identity => AdoptStart::Resume,
        Some(_) => AdoptStart::Restage,
    };
    refuse_unadoptable(dd, &tx, head, source)?;
    if start == AdoptStart::Fresh {
        for table in STAGED_TABLES {
            if tx.entries(table)? > 0 {
                return Err(refused(
                    dd,
                    format!("MDBX table {table} has rows, which a storage v2 datadir leaves empty"),
                    "Check the datadir with reth (`reth db stats`); restore it from a backup if \
                     another tool wrote into it.",
                ));
            }
        }
    }
    let upstream_bytes = upstream_table_bytes(dd)?;
    let available_bytes = free_bytes(&dd.root).map_err(io(&dd.root))?;
    // MDBX rows take about twice the compressed SST bytes; the plain state about what the
    // hashed state takes; the tries are rewritten in one transaction (old pages are freed at its
    // commit) with keys up to twice as long. A resumed run needs at most as much.
    let stat = |t: Tables| mdbx.table_bytes(&ro, t).map_err(open_err(dd));
    let needed_bytes = 2 * upstream_bytes
        + source.bytes() * 3 / 2
        + stat(Tables::HashedAccounts)?
        + stat(Tables::HashedStorages)?
        + 2 * (stat(Tables::AccountsTrie)? + stat(Tables::StoragesTrie)?)
        + (256 << 20);
    if start == AdoptStart::Fresh && needed_bytes > available_bytes {
        return Err(AdoptError::DiskSpace {
            path: dd.root.clone(),
            needed: needed_bytes,
            available: available_bytes,
        });
    }
    // Last, as it reads the whole state: the head's root from the hashed state alone (once:
    // a resumed run adopts the state the first run checked).
    let (state_root, trie_mismatch) = match state.as_ref().and_then(|s| s.state_root) {
        // Version 1 states predate the trie check: their resumed runs check again.
        Some(root)
            if start == AdoptStart::Resume && state.as_ref().is_some_and(|s| s.version >= 2) =>
        {
            (root, None)
        }
        _ => {
            let check = verify::check_state(tx, progress)?;
            (check.root, check.trie_mismatch)
        }
    };
    let expected = source
        .state_root(head)
        .map_err(|source| AdoptError::StaticFiles {
            what: format!("header of block {head}"),
            source,
        })?;
    if state_root != expected {
        return Err(AdoptError::StateRoot {
            datadir: dd.root.clone(),
            block: head,
            computed: state_root,
            expected,
        });
    }
    if let Some(mismatch) = trie_mismatch {
        return Err(AdoptError::Trie {
            datadir: dd.root.clone(),
            table: mismatch.table,
            problem: mismatch.problem,
        });
    }
    Ok((
        AdoptPlan {
            head,
            state_root,
            start,
            needed_bytes,
            available_bytes,
        },
        identity,
    ))
}

/// [`adopt`] to [`AdoptTarget::V1`].
pub fn adopt_to_v1<O: MdbxOpener>(
    datadir: &Path,
    mdbx: &O,
    source: &dyn V2StaticFiles,
    progress: &dyn Progress,
) -> Result<AdoptReport, AdoptError> {
    adopt(datadir, mdbx, source, AdoptTarget::V1, progress)
}

/// Turns the storage-v2 datadir at `datadir` into `target`'s layout: see the module's docs. A
/// rerun after any interruption continues (with the same target); until the switch the datadir
/// stays a working v2 datadir, and after it a working datadir of the target's layout.
pub fn adopt<O: MdbxOpener>(
    datadir: &Path,
    mdbx: &O,
    source: &dyn V2StaticFiles,
    target: AdoptTarget,
    progress: &dyn Progress,
) -> Result<AdoptReport, AdoptError> {
    let started = Instant::now();
    let dd = Datadir {
        root: datadir.to_path_buf(),
    };
    let (plan, identity) = checked(&dd, mdbx, source, target, progress)?;
    remove_leftovers(&dd)?;
    let mut report = AdoptReport {
        head: plan.head,
        ..Default::default()
    };
    let mdbx_opener = mdbx;
    if plan.start == AdoptStart::Restage {
        // A v2 node ran since the adoption started: what was staged describes an older head.
        // Cleared before the state file names the new source, so a kill in between restages
        // again rather than resuming on stale rows.
        tracing::warn!("the v2 datadir changed since the adoption started; staging it anew");
        let mdbx = mdbx_opener.read_write(datadir).map_err(open_err(&dd))?;
        let rw = mdbx.begin_rw()?;
        for table in STAGED_TABLES {
            rw.clear(table)?;
        }
        rw.commit()?;
        drop(mdbx);
        // Only a hybrid adoption's own staged copy can be there (see `checked`).
        remove_dir_durably(&dd.hybrid_rocksdb())?;
        remove_dir_durably(&dd.staging())?;
        crash_point!("AdoptAfterRestageClear");
    }
    if plan.start != AdoptStart::CleanupAfterSwitch {
        let bytes = serde_json::to_vec_pretty(&AdoptState {
            version: STATE_VERSION,
            source: identity,
            state_root: Some(plan.state_root),
            target,
        })
        .map_err(|e| AdoptError::UnreadableState {
            path: dd.state_file(),
            reason: e.to_string(),
        })?;
        write_atomically(&dd.state_file(), &bytes).map_err(io(&dd.state_file()))?;
        crash_point!("AdoptAfterStateWrite");
    }
    let mdbx = mdbx_opener.read_write(datadir).map_err(open_err(&dd))?;
    match plan.start {
        AdoptStart::CleanupAfterSwitch => report.resumed_after_switch = true,
        _ => {
            let db = TypedDatabase::new(mdbx.clone());
            let upstream = UpstreamRocksDb::open_read_only(&dd.upstream_rocksdb())?
                .ok_or_else(|| no_upstream_rocksdb(&dd))?;
            let limits = head_limits(&mdbx.begin_ro()?, report.head)?;
            let copy_static = |stop: &AtomicBool| -> Result<StaticRows, AdoptError> {
                let rows = copy_static_files(&db, source, report.head, stop, progress)?;
                use reth_hybrid_api::Database;
                verify::changeset_counts_match(&db.tx()?, source, report.head, stop, progress)?;
                Ok(rows)
            };
            // Where the history indices are once copied: the plain state's preimages.
            let rocks = match target {
                AdoptTarget::V1 => {
                    for table in UPSTREAM_TABLES {
                        let rows = copy_upstream_table(&upstream, &mdbx, table, limits, progress)?;
                        report.upstream_rows.push((table, rows));
                    }
                    drop(upstream);
                    report.static_rows = copy_static(&AtomicBool::new(false))?;
                    None
                }
                AdoptTarget::Hybrid => {
                    let rocks = RocksEngine::open_in_datadir_for_bulk(&dd.root)?;
                    // Two engines, two writers: reth's RocksDB tables are ingested on a thread
                    // of their own while this one copies the static files into MDBX. Each copy
                    // resumes on its own, so a kill leaves both resumable; a copy that fails
                    // stops the other at its next commit or file, and its error is the one
                    // reported.
                    let stop = AtomicBool::new(false);
                    let failed = |e: AdoptError| {
                        stop.store(true, Ordering::Relaxed);
                        e
                    };
                    let (ingested, copied) = std::thread::scope(|scope| {
                        let ingest = scope.spawn(|| {
                            let _panics = StopOnPanic(&stop);
                            UPSTREAM_TABLES
                                .into_iter()
                                .map(|table| {
                                    ingest_upstream_table(
                                        &upstream,
                                        &rocks,
                                        &dd.staging(),
                                        table,
                                        limits,
                                        &stop,
                                        progress,
                                    )
                                    .map(|rows| (table, rows))
                                })
                                .collect::<Result<Vec<_>, AdoptError>>()
                                .map_err(failed)
                        });
                        let copied = {
                            let _panics = StopOnPanic(&stop);
                            copy_static(&stop).map_err(failed)
                        };
                        (
                            ingest.join().expect("the ingestion thread panicked"),
                            copied,
                        )
                    });
                    match (ingested, copied) {
                        (Ok(ingested), Ok(copied)) => {
                            report.upstream_rows = ingested;
                            report.static_rows = copied;
                        }
                        (Err(AdoptError::StoppedBeside), Err(e)) | (Err(e), _) | (_, Err(e)) => {
                            return Err(e);
                        }
                    }
                    drop(upstream);
                    Some(rocks)
                }
            };
            report.plain = match &rocks {
                None => rebuild_plain_state(&mdbx, &mdbx, progress)?,
                Some(rocks) => rebuild_plain_state(&mdbx, rocks, progress)?,
            };
            drop(rocks);
            progress.begin(
                &format!(
                    "switch to {} (tries under v1's keys, stage progress, storage settings{})",
                    target.as_str(),
                    if target == AdoptTarget::Hybrid {
                        ", layout"
                    } else {
                        ""
                    }
                ),
                None,
            );
            report.tries = switch_to_v1(&mdbx, target)?;
            progress.end();
            crash_point!("AdoptAfterSwitch");
        }
    }
    drop(mdbx);
    // Cleanup: the datadir is v1 now, and reth v1 reads none of this.
    progress.begin(
        "clean-up (reth's RocksDB copies and the static-file segments removed)",
        None,
    );
    clear_upstream_tables(&dd.upstream_rocksdb(), &UPSTREAM_TABLES)?;
    remove_dir_durably(&dd.staging())?;
    crash_point!("AdoptAfterUpstreamClear");
    source.remove().map_err(|source| AdoptError::StaticFiles {
        what: "segments' removal".into(),
        source,
    })?;
    progress.end();
    crash_point!("AdoptAfterSourceRemove");
    remove_durably(&dd.state_file()).map_err(io(&dd.state_file()))?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Sets its flag when dropped by a panic: the copy beside a panicking one stops instead of
/// running to its end before the panic is seen.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// What [`abandon`] undid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AbandonReport {
    /// Where the abandoned adoption was going.
    pub target: AdoptTarget,
    /// The staged MDBX tables that held rows, now empty again.
    pub cleared: Vec<Tables>,
    /// What was removed: reth-hybrid's staged RocksDB and SST files, then the state file.
    pub removed: Vec<PathBuf>,
}

/// Undoes an adoption that has not switched yet, leaving the v2 datadir as reth left it: the
/// staged MDBX tables cleared (v2 keeps them empty), a hybrid adoption's `hybrid-rocksdb/` and
/// staged SST files removed, then the state file. Until that last step the state file stays, so
/// a kill at any point leaves a datadir a rerun of either command finishes. Refused, changing
/// nothing: no adoption started here, a datadir a process holds, one the adoption has switched
/// (the target's now: `reth-hybrid migrate --to mdbx` gives stock v1, and reth has no way back to
/// v2), and a `hybrid-rocksdb/` that a v1 adoption did not write.
pub fn abandon<O: MdbxOpener>(datadir: &Path, mdbx: &O) -> Result<AbandonReport, AdoptError> {
    let dd = Datadir {
        root: datadir.to_path_buf(),
    };
    let refused = |why: String, fix: &str| AdoptError::AbandonRefused {
        datadir: dd.root.clone(),
        why,
        fix: fix.to_string(),
    };
    let Some(state) = read_state(&dd)? else {
        return Err(refused(
            format!(
                "no adoption was started here ({} is absent)",
                dd.state_file().display()
            ),
            "There is nothing to abandon.",
        ));
    };
    if dd.migration_in_progress() {
        return Err(refused(
            "a `reth-hybrid migrate` is in progress here".into(),
            "Finish or abandon the migration first (docs/migration.md).",
        ));
    }
    // A read-only open changes nothing (the read-write open below is what refuses a datadir a
    // live process holds, before anything is written).
    let ro = mdbx.read_only(&dd.root).map_err(open_err(&dd))?;
    let switched = !is_v2(&ro.begin_ro()?)?;
    drop(ro);
    if switched {
        return Err(refused(
            format!(
                "the adoption has switched the datadir to {} already (only its clean-up is left)",
                state.target.as_str()
            ),
            match state.target {
                AdoptTarget::Hybrid => {
                    "Rerun `db adopt-v2 --to hybrid` to finish it. To leave the hybrid layout, \
                     `reth-hybrid migrate --datadir <datadir> --to mdbx` gives a stock v1 \
                     datadir; reth offers no way back to storage v2."
                }
                AdoptTarget::V1 => {
                    "Rerun `db adopt-v2 --to v1` to finish it; reth offers no way back to \
                     storage v2."
                }
            },
        ));
    }
    let hybrid_rocksdb = reth_hybrid_rocksdb::is_initialized(&dd.hybrid_rocksdb());
    if hybrid_rocksdb && state.target != AdoptTarget::Hybrid {
        return Err(refused(
            format!(
                "{} holds a RocksDB that this adoption to v1 did not write",
                dd.hybrid_rocksdb().display()
            ),
            "Find out what wrote it before removing anything.",
        ));
    }
    let engine = mdbx.read_write(&dd.root).map_err(open_err(&dd))?;
    let mut report = AbandonReport {
        target: state.target,
        ..Default::default()
    };
    let rw = engine.begin_rw()?;
    for table in STAGED_TABLES {
        if rw.entries(table)? > 0 {
            rw.clear(table)?;
            report.cleared.push(table);
        }
    }
    rw.commit()?;
    crash_point!("AbandonAfterClear");
    // Only a hybrid adoption writes these (a v1 one with a `hybrid-rocksdb/` was refused).
    let ours = match state.target {
        AdoptTarget::Hybrid => vec![dd.hybrid_rocksdb(), dd.staging()],
        AdoptTarget::V1 => vec![dd.staging()],
    };
    for dir in ours {
        if dir.exists() {
            remove_dir_durably(&dir)?;
            report.removed.push(dir);
        }
    }
    remove_leftovers(&dd)?;
    crash_point!("AbandonAfterRemove");
    remove_durably(&dd.state_file()).map_err(io(&dd.state_file()))?;
    report.removed.push(dd.state_file());
    // ORDER: reth's storage lock is held to here, so an adoption started meanwhile cannot
    // resume on what this removes.
    drop(engine);
    Ok(report)
}

fn no_upstream_rocksdb(dd: &Datadir) -> AdoptError {
    refused(
        dd,
        format!(
            "it has no {} folder, where storage v2 keeps history and tx hashes",
            dd.upstream_rocksdb().display()
        ),
        "Pass the datadir a storage v2 node wrote (its `rocksdb/` beside `db/`).",
    )
}

/// The head and its last transaction number, from `BlockBodyIndices` (MDBX in both layouts).
fn head_limits<T: RawTx>(tx: &T, head: u64) -> Result<upstream_copy::HeadLimits, AdoptError> {
    use reth_hybrid_api::{Decompress, models::StoredBlockBodyIndices};
    let body = tx
        .get(Tables::BlockBodyIndices, &head.to_be_bytes())?
        .map(|v| StoredBlockBodyIndices::decompress(&v))
        .transpose()
        .map_err(|_| reth_hybrid_api::DatabaseError::decode())?;
    // Transactions 0..first + count exist up to the head (its body counts from its first).
    let last_tx = body
        .map(|b| b.first_tx_num + b.tx_count)
        .filter(|&end| end > 0)
        .map(|end| end - 1);
    Ok(upstream_copy::HeadLimits { head, last_tx })
}

/// The head the datadir is at: the `Finish` stage's block.
fn head_block<T: RawTx>(tx: &T) -> Result<u64, AdoptError> {
    use reth_hybrid_api::{Decompress, models::StageCheckpoint};
    Ok(tx
        .get(Tables::StageCheckpoints, b"Finish")?
        .map(|v| {
            StageCheckpoint::decompress(&v)
                .map(|c| c.block_number)
                .map_err(|_| reth_hybrid_api::DatabaseError::decode())
        })
        .transpose()?
        .unwrap_or(0))
}

/// A pruned datadir, static files (changesets or senders) behind the head, an unknown RocksDB
/// family with rows.
fn refuse_unadoptable<T: RawTx>(
    dd: &Datadir,
    tx: &T,
    head: u64,
    source: &dyn V2StaticFiles,
) -> Result<(), AdoptError> {
    let mut pruned = Vec::new();
    let mut cursor = tx.cursor(Tables::PruneCheckpoints)?;
    let mut next = cursor.first()?;
    while let Some((key, _)) = next {
        let segment = key
            .first()
            .and_then(|b| prune_segment_name(*b))
            .unwrap_or("unknown");
        if PRUNED_REFUSED.contains(&segment) {
            pruned.push(segment);
        }
        next = cursor.next()?;
    }
    if !pruned.is_empty() {
        return Err(refused(
            dd,
            format!(
                "it is pruned ({} have prune checkpoints): the history that holds the \
                 addresses and slots behind its hashed state is gone",
                pruned.join(", ")
            ),
            "Only archive v2 datadirs can be adopted; sync a new datadir with \
             `--storage.v2=false` and run `reth-hybrid migrate` on it.",
        ));
    }
    if source.changesets_end().is_none_or(|end| end < head) {
        return Err(refused(
            dd,
            format!(
                "its static files hold changesets up to block {}, below its head {head}: \
                 reth's consistency check would unwind it",
                source
                    .changesets_end()
                    .map_or("none".to_string(), |b| b.to_string())
            ),
            "Start the v2 node once and stop it cleanly (it heals the datadir), then adopt.",
        ));
    }
    // Senders are read by transaction: a segment that ends early would leave v1 without them.
    let last_tx = head_limits(tx, head)?.last_tx;
    if let Some(last_tx) = last_tx
        && source.senders_end().is_none_or(|end| end < last_tx)
    {
        return Err(refused(
            dd,
            format!(
                "its static files hold senders up to transaction {}, below its head's last \
                 transaction {last_tx}: reth's consistency check would unwind it",
                source
                    .senders_end()
                    .map_or("none".to_string(), |t| t.to_string())
            ),
            "Start the v2 node once and stop it cleanly (it heals the datadir), then adopt.",
        ));
    }
    let Some(families) = reth_hybrid_rocksdb::inspect_upstream_rocksdb(&dd.upstream_rocksdb())?
    else {
        return Err(no_upstream_rocksdb(dd));
    };
    for family in &families {
        let known = UPSTREAM_TABLES.iter().any(|t| t.name() == family.name)
            || RETH_OTHER_FAMILIES.contains(&family.name.as_str());
        if family.has_rows && !known {
            return Err(refused(
                dd,
                format!(
                    "reth's RocksDB has a column family `{}` with rows, which reth v2.5.1 \
                     does not write",
                    family.name
                ),
                "Adopt it with the reth version that wrote it, or report the family.",
            ));
        }
    }
    Ok(())
}

/// The bytes reth's RocksDB holds for the three tables (SST files and unflushed WAL).
fn upstream_table_bytes(dd: &Datadir) -> Result<u64, AdoptError> {
    Ok(
        reth_hybrid_rocksdb::inspect_upstream_rocksdb(&dd.upstream_rocksdb())?
            .unwrap_or_default()
            .iter()
            .filter(|f| UPSTREAM_TABLES.iter().any(|t| t.name() == f.name))
            .map(|f| f.sst_bytes + f.unflushed_bytes)
            .sum(),
    )
}

/// reth's `PruneSegment` byte, by name (only the ones adoption looks at need to be right).
fn prune_segment_name(byte: u8) -> Option<&'static str> {
    use reth_hybrid_api::{Decode, models::PruneSegment};
    let segment = PruneSegment::decode(&[byte]).ok()?;
    Some(match segment {
        PruneSegment::SenderRecovery => "SenderRecovery",
        PruneSegment::TransactionLookup => "TransactionLookup",
        PruneSegment::Receipts => "Receipts",
        PruneSegment::ContractLogs => "ContractLogs",
        PruneSegment::AccountHistory => "AccountHistory",
        PruneSegment::StorageHistory => "StorageHistory",
        PruneSegment::Headers => "Headers",
        PruneSegment::Transactions => "Transactions",
        PruneSegment::MerkleChangeSets => "MerkleChangeSets",
        PruneSegment::Bodies => "Bodies",
    })
}

/// The stage checkpoints' progress as reth's v1 pipeline leaves it at the same head (the block
/// numbers are already equal): v2 counts no senders or tx hashes of its own into SenderRecovery
/// and TransactionLookup, and its hashing stages, which execution makes redundant, record no
/// progress; v1's record every row as processed.
fn v1_stage_progress<T: RawTxMut>(tx: &T) -> Result<(), AdoptError> {
    use reth_hybrid_api::{
        Decompress,
        models::{
            AccountHashingCheckpoint, CheckpointBlockRange, EntitiesCheckpoint, StageCheckpoint,
            StageUnitCheckpoint, StorageHashingCheckpoint,
        },
        table::compress_to_vec,
    };
    let decode = |v: Vec<u8>| {
        StageCheckpoint::decompress(&v).map_err(|_| reth_hybrid_api::DatabaseError::decode())
    };
    let done = |n: u64| EntitiesCheckpoint {
        processed: n,
        total: n,
    };
    for stage in [
        "SenderRecovery",
        "TransactionLookup",
        "AccountHashing",
        "StorageHashing",
    ] {
        let Some(mut checkpoint) = tx
            .get(Tables::StageCheckpoints, stage.as_bytes())?
            .map(decode)
            .transpose()?
        else {
            continue;
        };
        checkpoint.stage_checkpoint = match (stage, checkpoint.stage_checkpoint) {
            (_, Some(StageUnitCheckpoint::Entities(e))) => {
                Some(StageUnitCheckpoint::Entities(done(e.total)))
            }
            ("AccountHashing", None) => {
                Some(StageUnitCheckpoint::Account(AccountHashingCheckpoint {
                    address: None,
                    block_range: CheckpointBlockRange::default(),
                    progress: done(tx.entries(Tables::PlainAccountState)? as u64),
                }))
            }
            ("StorageHashing", None) => {
                Some(StageUnitCheckpoint::Storage(StorageHashingCheckpoint {
                    address: None,
                    storage: None,
                    block_range: CheckpointBlockRange::default(),
                    progress: done(tx.entries(Tables::PlainStorageState)? as u64),
                }))
            }
            (_, other) => other,
        };
        tx.put(
            Tables::StageCheckpoints,
            stage.as_bytes(),
            &compress_to_vec(&checkpoint),
        )?;
    }
    Ok(())
}

/// A folder and everything in it, gone for good (its parent synced); nothing when it is missing.
/// It is first renamed aside (see [`removal_name`]), so a kill while its files go leaves no
/// half-removed RocksDB under its own name for a resumed adoption to open: the name is free at
/// once, and whichever command runs next removes what is left ([`remove_leftovers`]).
fn remove_dir_durably(dir: &Path) -> Result<(), AdoptError> {
    let aside = removal_name(dir);
    remove_aside(&aside)?;
    match std::fs::rename(dir, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(dir)(e)),
    }
    reth_hybrid_hybrid::durable::sync_parent(dir).map_err(io(dir))?;
    crash_point!("AdoptDirRenamedForRemoval");
    remove_aside(&aside)
}

/// Where [`remove_dir_durably`] puts a folder while it removes it: `<name>.removing`.
fn removal_name(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".removing");
    dir.with_file_name(name)
}

fn remove_aside(aside: &Path) -> Result<(), AdoptError> {
    match std::fs::remove_dir_all(aside) {
        Ok(()) => reth_hybrid_hybrid::durable::sync_parent(aside).map_err(io(aside)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(aside)(e)),
    }
}

/// What a removal killed midway left aside (adoption and abandon both finish it).
fn remove_leftovers(dd: &Datadir) -> Result<(), AdoptError> {
    for dir in [dd.hybrid_rocksdb(), dd.staging()] {
        remove_aside(&removal_name(&dir))?;
    }
    Ok(())
}

/// The switch, in one MDBX write transaction: the tries under v1's keys, the storage settings
/// set to v1 and, for [`AdoptTarget::Hybrid`], the layout that routes the three tables to
/// reth-hybrid's RocksDB (where they were ingested). Before its commit the datadir is v2 as it
/// was; after it, the target's.
fn switch_to_v1<E: RawEngine>(mdbx: &E, target: AdoptTarget) -> Result<TrieRows, AdoptError> {
    let mut snapshot = mdbx.begin_ro()?;
    snapshot.disable_long_read_safety();
    let tx = mdbx.begin_rw()?;
    let rows = convert_tries(&snapshot, &tx)?;
    v1_stage_progress(&tx)?;
    put_bytes(
        &tx,
        STORAGE_SETTINGS_KEY,
        StorageSettings { storage_v2: false }.to_json_bytes(),
    )?;
    if target == AdoptTarget::Hybrid {
        let mut layout = Layout::all(reth_hybrid_api::EngineKind::Mdbx);
        for table in UPSTREAM_TABLES {
            layout.set(table, reth_hybrid_api::EngineKind::RocksDb);
        }
        put_bytes(&tx, LAYOUT_KEY, layout.to_json())?;
    }
    tx.commit()?;
    Ok(rows)
}
