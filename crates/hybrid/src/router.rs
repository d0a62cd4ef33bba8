//! `HybridDb`: two engines behind one raw engine interface, each table routed by the layout.
//! The primary engine (the layout's "mdbx") holds the commit decision; the follower (the
//! layout's "rocksdb") is brought along through the intent log (see `commit.rs`).

use crate::{
    control::{FOLLOWER_SEQ_KEY, get_u64, has_user_rows, is_control_key, put_bytes},
    error::HybridError,
    intent_log::IntentLog,
    layout::{LAYOUT_KEY, Layout},
    metrics::{self, Op, StatsPublisher},
    preflight,
    recovery::{Recovered, recover},
};
use parking_lot::{Mutex, RawMutex, RwLock, lock_api::ArcMutexGuard};
use reth_hybrid_api::{
    DatabaseError, EngineKind, Tables,
    raw::{
        Liveness, RawCursor, RawCursorMut, RawEngine, RawPair, RawReplay, RawResult, RawTx,
        RawTxMut,
    },
};
use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

/// File name of the intent log inside the datadir.
pub const INTENT_LOG_FILE: &str = "hybrid-intent.log";

/// How to open a hybrid datadir.
#[derive(Debug, Clone, Default)]
pub struct HybridOptions {
    /// The layout to use. For a datadir that already has one, it must match (or be `None`).
    pub layout: Option<Layout>,
    /// When a commit's RocksDB writes become durable.
    pub follower_sync: FollowerSync,
}

/// When a commit's RocksDB writes become durable. Either way every commit is all-or-nothing
/// after a crash or power loss, and a RocksDB that fell behind is replayed or refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowerSync {
    /// Each commit that writes to RocksDB fsyncs the intent log, commits MDBX and writes
    /// RocksDB synced: three durable writes per commit.
    EveryCommit,
    /// A commit's RocksDB writes (up to `max_row_bytes`) ride in MDBX's decision commit as a
    /// pending row in `Metadata`; RocksDB applies them without an fsync and syncs its WAL every
    /// `max_commits` such commits or after `max_delay`, after which the next commit deletes
    /// the rows. One durable write per commit; recovery replays the rows RocksDB lost.
    /// Larger commits, and commits RocksDB exports as files, take the `EveryCommit` path.
    Deferred {
        max_commits: u32,
        max_delay: std::time::Duration,
        max_row_bytes: usize,
    },
}

/// The largest RocksDB batch the default defers. Small commits (`make demo`'s 100 rows, a few
/// KiB) persist faster deferred; reth's persistence commits (well over 64 KiB of RocksDB writes
/// on full blocks) had 43% shorter persistence waits on a node through the intent log
/// (docs/benchmarks.md, "The deferred RocksDB sync on a node").
pub const DEFAULT_MAX_DEFERRED_BYTES: usize = 64 << 10;

impl Default for FollowerSync {
    /// Deferred up to [`DEFAULT_MAX_DEFERRED_BYTES`]: RocksDB's WAL is synced about once a second
    /// for small commits; a larger one takes the `EveryCommit` path.
    fn default() -> Self {
        FollowerSync::Deferred {
            max_commits: 64,
            max_delay: std::time::Duration::from_secs(1),
            max_row_bytes: DEFAULT_MAX_DEFERRED_BYTES,
        }
    }
}

/// Environment variable a node reads to pick [`FollowerSync`] (`deferred` or `every-commit`).
pub const FOLLOWER_SYNC_ENV: &str = "RETH_HYBRID_ROCKSDB_SYNC";

impl FollowerSync {
    /// The mode `RETH_HYBRID_ROCKSDB_SYNC` names, or the default when it is not set.
    pub fn from_env() -> Result<Self, String> {
        match std::env::var(FOLLOWER_SYNC_ENV) {
            Ok(value) => value
                .parse()
                .map_err(|e| format!("{FOLLOWER_SYNC_ENV}: {e}")),
            Err(_) => Ok(Self::default()),
        }
    }
}

impl std::str::FromStr for FollowerSync {
    type Err = String;

    /// `every-commit` or `deferred` (the default settings).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "every-commit" => Ok(FollowerSync::EveryCommit),
            "deferred" => Ok(FollowerSync::default()),
            other => Err(format!(
                "unknown RocksDB sync mode {other:?}; use `deferred` (the default) or `every-commit`"
            )),
        }
    }
}

pub(crate) struct CommitState {
    pub(crate) seq: u64,
    pub(crate) follower_seq: u64,
    /// RocksDB's writes are durable up to this follower commit.
    pub(crate) durable_follower_seq: u64,
    /// Sequences of the pending rows MDBX holds (ascending); those at or below
    /// `durable_follower_seq` are deleted by the next commit.
    pub(crate) pending_rows: Vec<u64>,
    /// Deferred commits RocksDB has not synced yet, when the oldest of them was applied, and
    /// its sequence (the applied ring's bound is counted from it).
    pub(crate) unsynced: u32,
    pub(crate) unsynced_since: Option<std::time::Instant>,
    pub(crate) oldest_unsynced: Option<u64>,
    /// Keys under the pending prefix that name no sequence, found at open; the first commit
    /// deletes them.
    pub(crate) unreadable_pending: Vec<String>,
}

/// The follower snapshots a new reader can be given, one per follower commit MDBX may show it.
/// A commit publishes its frozen writes as `pending` before MDBX's decision and replaces
/// `current` once RocksDB applied them, each under the write lock for a few instructions: no
/// fsync ever happens under it, so opening a reader never waits for a commit's I/O.
pub(crate) struct FollowerViews<T> {
    /// The follower with every decided commit applied, and MDBX's `follower_seq` it matches.
    pub(crate) current: (u64, T),
    /// The commit in progress (its `follower_seq` and its frozen writes): MDBX shows it to a
    /// reader once its decision commit is durable, and RocksDB holds it once applied.
    pub(crate) pending: Option<(u64, T)>,
}

impl<T: Clone> FollowerViews<T> {
    /// The follower view matching a primary snapshot whose `follower_seq` is `seen`.
    fn matching(&self, seen: u64) -> Option<T> {
        match &self.pending {
            Some((seq, view)) if *seq == seen => Some(view.clone()),
            _ if self.current.0 == seen => Some(self.current.1.clone()),
            _ => None,
        }
    }
}

pub(crate) struct HybridInner<P, F: RawReplay> {
    pub(crate) primary: P,
    pub(crate) follower: F,
    pub(crate) layout: Layout,
    pub(crate) intent: IntentLog,
    /// Held for the whole of a commit (fsyncs included); readers never take it.
    pub(crate) state: Mutex<CommitState>,
    /// Sequence of a commit MDBX decided but RocksDB refused (0: none). Atomic so readers can
    /// check it without waiting for a commit in progress.
    pub(crate) poisoned: AtomicU64,
    /// Readers take it shared while opening their primary snapshot and picking the follower
    /// view that matches it; see [`FollowerViews`].
    pub(crate) views: RwLock<FollowerViews<F::Tx>>,
    pub(crate) writer: Arc<Mutex<()>>,
    pub(crate) datadir: PathBuf,
    pub(crate) recovered: Recovered,
    pub(crate) follower_sync: FollowerSync,
    /// This datadir's entry in the process's registry of read-write handles; `None` for a
    /// handle on read-only engines.
    _registration: Option<Registration>,
}

/// Datadirs (canonical paths) with a read-write [`HybridDb`] open in this process. A second
/// handle on the same engines would take commit sequences the first also takes.
static READ_WRITE_HANDLES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A datadir's place in [`READ_WRITE_HANDLES`], released when the handle's last clone (and
/// transaction) is gone.
struct Registration(PathBuf);

impl Registration {
    fn take(datadir: &Path) -> Result<Self, HybridError> {
        let key = std::fs::canonicalize(datadir).unwrap_or_else(|_| datadir.to_path_buf());
        let mut open = READ_WRITE_HANDLES.lock();
        if open.contains(&key) {
            return Err(HybridError::AlreadyOpen { datadir: key });
        }
        open.push(key.clone());
        Ok(Self(key))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        READ_WRITE_HANDLES.lock().retain(|p| *p != self.0);
    }
}

/// The thread that syncs an idle handle's deferred RocksDB commits (`commit::sync_if_idle`):
/// without it, RocksDB's WAL after a node's last burst of blocks would stay unsynced until the
/// next commit or close. Stopped and joined when the handle's last clone drops, so it never
/// holds the handle past that.
struct IdleSync {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl IdleSync {
    fn start<P: RawEngine, F: RawReplay>(inner: &Arc<HybridInner<P, F>>) -> Option<Self> {
        let FollowerSync::Deferred { max_delay, .. } = inner.follower_sync else {
            return None;
        };
        inner._registration.as_ref()?;
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let weak = Arc::downgrade(inner);
        // Ticks at a quarter of the delay, so a deferred commit is synced within 1.25x of it.
        let tick = (max_delay / 4).max(std::time::Duration::from_millis(10));
        let thread = std::thread::Builder::new()
            .name("reth-hybrid-sync".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(tick)
                {
                    let Some(db) = weak.upgrade() else { return };
                    crate::commit::sync_if_idle(&db);
                }
            });
        match thread {
            Ok(thread) => Some(Self {
                stop: Some(stop),
                thread: Some(thread),
            }),
            Err(e) => {
                tracing::warn!(error = %e, "could not start the idle sync thread; RocksDB's WAL is synced by commits and at close only");
                None
            }
        }
    }
}

impl Drop for IdleSync {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

impl<P, F: RawReplay> Drop for HybridInner<P, F> {
    /// A clean close leaves RocksDB's deferred writes durable (their pending rows, kept in
    /// MDBX, are deleted by the next open's first commit).
    fn drop(&mut self) {
        if self.state.get_mut().unsynced > 0
            && let Err(e) = self.follower.sync_applied()
        {
            tracing::warn!(error = %e, "could not sync RocksDB's WAL at close; the next open replays its deferred commits from MDBX if needed");
        }
    }
}

/// The hybrid database.
pub struct HybridDb<P, F: RawReplay> {
    /// ORDER: before `inner`, so the last clone stops the idle sync thread (which holds only a
    /// weak reference) before it releases the handle.
    _idle_sync: Option<Arc<IdleSync>>,
    pub(crate) inner: Arc<HybridInner<P, F>>,
}

impl<P, F: RawReplay> Clone for HybridDb<P, F> {
    fn clone(&self) -> Self {
        Self {
            _idle_sync: self._idle_sync.clone(),
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<P: RawEngine, F: RawReplay> std::fmt::Debug for HybridDb<P, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HybridDb")
            .field("datadir", &self.inner.datadir)
            .field("primary", &self.inner.primary)
            .field("follower", &self.inner.follower)
            .finish()
    }
}

impl<P: RawEngine, F: RawReplay> HybridDb<P, F> {
    /// Opens a datadir, refusing it before anything in it changes. `read_only` opens read-only
    /// views of the engines the datadir already has (`None` for one it does not have yet) and
    /// must change nothing on disk; every check of [`HybridDb::open`] runs on them (migration in
    /// progress, storage v2, the layout, rows in the other engine, the intent log, the follower
    /// ahead or behind), after the datadir and the folders in it were found writable. Only then
    /// does `read_write` open (and create) the engines for use, and [`HybridDb::open`] checks
    /// again under their locks.
    pub fn open_checked<VP, VF>(
        datadir: &Path,
        options: HybridOptions,
        read_only: impl FnOnce() -> Result<(Option<VP>, Option<VF>), DatabaseError>,
        read_write: impl FnOnce() -> Result<(P, F), DatabaseError>,
    ) -> Result<Self, HybridError>
    where
        VP: RawEngine,
        VF: RawEngine,
    {
        // First, as even a read-only MDBX open fails on a datadir it may not write to (libmdbx
        // works without its lock file only on a read-only filesystem).
        let engine_dirs: Vec<PathBuf> = std::fs::read_dir(datadir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.is_dir())
            .collect();
        preflight::check_writable(datadir, &engine_dirs)?;
        {
            let (primary, follower) = read_only()?;
            preflight::check(
                datadir,
                primary.as_ref(),
                follower.as_ref(),
                options.layout.as_ref(),
            )?;
            // The views close here: a read-write open must not share the process with them.
        }
        let (primary, follower) = read_write()?;
        Self::open(primary, follower, datadir, options)
    }

    /// Opens the hybrid over two open engines of one datadir: checks everything it refuses
    /// first (nothing written yet), then recovers the commit in flight and on first open
    /// records the layout. Engines opened read-write may already have created files; to refuse
    /// a datadir before that, open it with [`HybridDb::open_checked`].
    pub fn open(
        primary: P,
        follower: F,
        datadir: &Path,
        options: HybridOptions,
    ) -> Result<Self, HybridError> {
        // ORDER: every refusal comes before recovery (which may replay into or clear the intent
        // log) and before the intent log is created, so a refused datadir keeps its files.
        preflight::check(
            datadir,
            Some(&primary),
            Some(&follower),
            options.layout.as_ref(),
        )?;
        // Before recovery, which writes: a second handle that can commit (MDBX writable: even
        // with a read-only RocksDB it could make MDBX-only commits) is refused, nothing changed.
        let registration = match primary.is_read_only() {
            true => None,
            false => Some(Registration::take(datadir)?),
        };
        let intent = IntentLog::new(datadir.join(INTENT_LOG_FILE));
        let recovered = recover(&primary, &follower, &intent)?;
        intent.ensure_durable_file()?;
        // A process killed with deferred commits left them in RocksDB's WAL in the page cache,
        // not on disk: sync before their pending rows count as droppable.
        let rows = match primary.has_table(Tables::Metadata) {
            true => {
                let tx = primary.begin_ro()?;
                let rows = crate::control::pending_rows(&tx)?;
                tx.abort();
                rows
            }
            false => Vec::new(),
        };
        if !rows.is_empty() {
            follower.sync_applied()?;
        }
        let (pending_rows, unreadable_pending) = rows.into_iter().fold(
            (Vec::new(), Vec::new()),
            |(mut seqs, mut unreadable), row| {
                match row.seq {
                    Some(seq) => seqs.push(seq),
                    None => unreadable.push(row.key),
                }
                (seqs, unreadable)
            },
        );
        if !unreadable_pending.is_empty() {
            tracing::warn!(keys = ?unreadable_pending, "pending rows whose key names no commit; nothing needs them, the first commit deletes them");
        }
        let layout = settle_layout(&primary, &follower, options.layout)?;
        // After recovery the follower holds every decided commit: its snapshot is the view of
        // MDBX's current `follower_seq`.
        let views = FollowerViews {
            current: (recovered.follower_seq, follower.begin_ro()?),
            pending: None,
        };
        let inner = Arc::new(HybridInner {
            poisoned: AtomicU64::new(0),
            state: Mutex::new(CommitState {
                seq: recovered.seq,
                follower_seq: recovered.follower_seq,
                durable_follower_seq: recovered.follower_seq,
                pending_rows,
                unsynced: 0,
                unsynced_since: None,
                oldest_unsynced: None,
                unreadable_pending,
            }),
            follower_sync: options.follower_sync,
            primary,
            follower,
            layout,
            intent,
            views: RwLock::new(views),
            writer: Arc::new(Mutex::new(())),
            datadir: datadir.to_path_buf(),
            recovered,
            _registration: registration,
        });
        Ok(Self {
            _idle_sync: IdleSync::start(&inner).map(Arc::new),
            inner,
        })
    }

    pub fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    /// When this handle makes a commit's RocksDB writes durable.
    pub fn follower_sync(&self) -> FollowerSync {
        self.inner.follower_sync
    }

    /// What recovery did when this handle opened.
    pub fn recovered(&self) -> &Recovered {
        &self.inner.recovered
    }

    /// Sequence of the last committed hybrid write transaction.
    pub fn last_seq(&self) -> u64 {
        self.inner.state.lock().seq
    }

    /// Deferred commits whose RocksDB writes are not synced yet (their pending rows in MDBX are
    /// what recovery replays after a power loss). Back to 0 within about `max_delay` of the last
    /// such commit, idle or not.
    pub fn unsynced_commits(&self) -> u32 {
        self.inner.state.lock().unsynced
    }

    pub fn primary(&self) -> &P {
        &self.inner.primary
    }

    pub fn follower(&self) -> &F {
        &self.inner.follower
    }

    /// Publishes both engines' internals once: gauges `reth_hybrid_<name>` (labels: engine,
    /// table) and running totals as counters `reth_hybrid_<name>_total` ([`crate::metrics`]).
    pub fn report_engine_stats(&self) {
        report_engine_stats(&self.inner);
    }

    /// Publishes both engines' internals every `every` on a thread of its own until the handle
    /// drops or this database closes. The thread holds no reference to it between reports, but
    /// does during one: drop the handle before the database's last clone (the node does), or
    /// that close may run on the thread, after the owner thinks the datadir is free.
    pub fn spawn_stats_publisher(&self, every: Duration) -> std::io::Result<StatsPublisher> {
        let weak = Arc::downgrade(&self.inner);
        StatsPublisher::start(every, move || match weak.upgrade() {
            Some(inner) => {
                report_engine_stats(&inner);
                true
            }
            None => false,
        })
    }

    fn check_poisoned(&self) -> RawResult<()> {
        match self.inner.poisoned.load(Ordering::Acquire) {
            0 => Ok(()),
            seq => Err(HybridError::Poisoned { seq }.into_database_error(DatabaseError::InitTx)),
        }
    }
}

/// Publishes both engines' internals (see [`HybridDb::report_engine_stats`]).
fn report_engine_stats<P: RawEngine, F: RawReplay>(inner: &HybridInner<P, F>) {
    metrics::engine_stats(
        EngineKind::Mdbx,
        inner.primary.gauges(),
        inner.primary.counters(),
    );
    metrics::engine_stats(
        EngineKind::RocksDb,
        inner.follower.gauges(),
        inner.follower.counters(),
    );
}

/// Reads the stored layout, compares it with the requested one, validates it against the rows,
/// and records it on first open. Runs after recovery, so the rows are the settled ones.
fn settle_layout<P: RawEngine, F: RawEngine>(
    primary: &P,
    follower: &F,
    requested: Option<Layout>,
) -> Result<Layout, HybridError> {
    let stored = {
        let tx = primary.begin_ro()?;
        preflight::refuse_storage_v2(&tx)?;
        let stored = preflight::stored_layout(&tx)?;
        tx.abort();
        stored
    };
    let layout = preflight::resolve_layout(stored.as_ref(), requested.as_ref())?;
    let (ptx, ftx) = (primary.begin_ro()?, follower.begin_ro()?);
    for table in Tables::ALL {
        let (routed, other_has_rows, other) = match layout.engine_of(table) {
            EngineKind::Mdbx => (
                EngineKind::Mdbx,
                has_user_rows(&ftx, table)?,
                EngineKind::RocksDb,
            ),
            EngineKind::RocksDb => (
                EngineKind::RocksDb,
                has_user_rows(&ptx, table)?,
                EngineKind::Mdbx,
            ),
        };
        if other_has_rows {
            return Err(HybridError::RowsInOtherEngine {
                table,
                routed,
                found: other,
            });
        }
    }
    drop((ptx, ftx));
    if stored.is_none() {
        let tx = primary.begin_rw()?;
        put_bytes(&tx, LAYOUT_KEY, layout.to_json())?;
        tx.commit()?;
    }
    Ok(layout)
}

/// A cursor of whichever engine holds the table.
pub enum Routed<A, B> {
    Primary(A),
    /// A follower cursor with its reader's primary liveness, checked before every move: a
    /// reader the primary ended (reth's read timeout) can no longer read the follower either.
    Follower(B, Option<Liveness>),
}

impl<A: std::fmt::Debug, B: std::fmt::Debug> std::fmt::Debug for Routed<A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Primary(c) => f.debug_tuple("Primary").field(c).finish(),
            Self::Follower(c, alive) => f
                .debug_tuple("Follower")
                .field(c)
                .field(&alive.is_some())
                .finish(),
        }
    }
}

/// A routed cursor that records its operations: seeks timed, steps counted.
#[derive(Debug)]
pub struct Metered<C> {
    inner: C,
    table: Tables,
    engine: EngineKind,
}

impl<C> Metered<C> {
    fn new(inner: C, table: Tables, engine: EngineKind) -> Self {
        metrics::count(table, engine, Op::OpenCursor);
        Self {
            inner,
            table,
            engine,
        }
    }

    fn seek<R>(&mut self, f: impl FnOnce(&mut C) -> R) -> R {
        let started = metrics::start();
        let r = f(&mut self.inner);
        metrics::timed(self.table, self.engine, Op::Seek, started);
        r
    }

    fn step<R>(&mut self, op: Op, f: impl FnOnce(&mut C) -> R) -> R {
        metrics::count(self.table, self.engine, op);
        f(&mut self.inner)
    }
}

impl<C: RawCursor> RawCursor for Metered<C> {
    fn first(&mut self) -> RawResult<Option<RawPair>> {
        self.seek(|c| c.first())
    }
    fn last(&mut self) -> RawResult<Option<RawPair>> {
        self.seek(|c| c.last())
    }
    fn seek(&mut self, key: &[u8]) -> RawResult<Option<RawPair>> {
        Metered::seek(self, |c| c.seek(key))
    }
    fn seek_exact(&mut self, key: &[u8]) -> RawResult<Option<RawPair>> {
        Metered::seek(self, |c| c.seek_exact(key))
    }
    fn next(&mut self) -> RawResult<Option<RawPair>> {
        self.step(Op::Step, |c| c.next())
    }
    fn prev(&mut self) -> RawResult<Option<RawPair>> {
        self.step(Op::Step, |c| c.prev())
    }
    fn current(&mut self) -> RawResult<Option<RawPair>> {
        self.inner.current()
    }
    fn next_dup(&mut self) -> RawResult<Option<RawPair>> {
        self.step(Op::Step, |c| c.next_dup())
    }
    fn prev_dup(&mut self) -> RawResult<Option<RawPair>> {
        self.step(Op::Step, |c| c.prev_dup())
    }
    fn next_no_dup(&mut self) -> RawResult<Option<RawPair>> {
        self.step(Op::Step, |c| c.next_no_dup())
    }
    fn last_dup(&mut self) -> RawResult<Option<Vec<u8>>> {
        self.step(Op::Step, |c| c.last_dup())
    }
    fn seek_by_key_subkey(&mut self, key: &[u8], subkey: &[u8]) -> RawResult<Option<Vec<u8>>> {
        Metered::seek(self, |c| c.seek_by_key_subkey(key, subkey))
    }
    /// Counted with the steps: one call in MDBX; on RocksDB a walk of a dupsort key's rows
    /// (only a layout routing a dupsort table there makes one).
    fn dup_count(&mut self) -> RawResult<u64> {
        self.step(Op::Step, |c| c.dup_count())
    }
}

impl<C: RawCursor> Metered<C> {
    /// A cursor write to one of reth-hybrid's control rows is refused (see [`refuse_control_row`]).
    fn guard(&self, key: &[u8]) -> RawResult<()> {
        refuse_control_row(self.table, key)
    }

    /// As [`Metered::guard`], for a delete at the cursor's position.
    fn guard_current(&mut self) -> RawResult<()> {
        if self.table != Tables::Metadata {
            return Ok(());
        }
        match self.inner.current()? {
            Some((key, _)) => refuse_control_row(self.table, &key),
            None => Ok(()),
        }
    }
}

impl<C: RawCursorMut> RawCursorMut for Metered<C> {
    fn upsert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.guard(key)?;
        self.step(Op::CursorWrite, |c| c.upsert(key, value))
    }
    fn insert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.guard(key)?;
        self.step(Op::CursorWrite, |c| c.insert(key, value))
    }
    fn append(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.guard(key)?;
        self.step(Op::CursorWrite, |c| c.append(key, value))
    }
    fn append_dup(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.guard(key)?;
        self.step(Op::CursorWrite, |c| c.append_dup(key, value))
    }
    fn append_last(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.guard(key)?;
        self.step(Op::CursorWrite, |c| c.append_last(key, value))
    }
    fn delete_current(&mut self) -> RawResult<()> {
        self.guard_current()?;
        self.step(Op::CursorWrite, |c| c.delete_current())
    }
    fn delete_current_duplicates(&mut self) -> RawResult<()> {
        self.guard_current()?;
        self.step(Op::CursorWrite, |c| c.delete_current_duplicates())
    }
}

/// reth-hybrid's own `Metadata` rows (`reth_hybrid.*`: the commit sequences, the layout, pending
/// RocksDB writes) are written only by the commit protocol, on the engines directly; a write or
/// delete through the router is refused, so no caller can leave a datadir that no longer opens.
fn refuse_control_row(table: Tables, key: &[u8]) -> RawResult<()> {
    match table == Tables::Metadata && is_control_key(key) {
        true => Err(HybridError::ControlRow {
            key: String::from_utf8_lossy(key).into_owned(),
        }
        .into_database_error(DatabaseError::Delete)),
        false => Ok(()),
    }
}

macro_rules! route {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            Routed::Primary($c) => $e,
            Routed::Follower($c, alive) => {
                if let Some(alive) = alive {
                    alive()?;
                }
                $e
            }
        }
    };
}

impl<A: RawCursor, B: RawCursor> RawCursor for Routed<A, B> {
    fn first(&mut self) -> RawResult<Option<RawPair>> {
        route!(self, c => c.first())
    }
    fn last(&mut self) -> RawResult<Option<RawPair>> {
        route!(self, c => c.last())
    }
    fn seek(&mut self, key: &[u8]) -> RawResult<Option<RawPair>> {
        route!(self, c => c.seek(key))
    }
    fn seek_exact(&mut self, key: &[u8]) -> RawResult<Option<RawPair>> {
        route!(self, c => c.seek_exact(key))
    }
    fn next(&mut self) -> RawResult<Option<RawPair>> {
        route!(self, c => c.next())
    }
    fn prev(&mut self) -> RawResult<Option<RawPair>> {
        route!(self, c => c.prev())
    }
    fn current(&mut self) -> RawResult<Option<RawPair>> {
        route!(self, c => c.current())
    }
    fn next_dup(&mut self) -> RawResult<Option<RawPair>> {
        route!(self, c => c.next_dup())
    }
    fn prev_dup(&mut self) -> RawResult<Option<RawPair>> {
        route!(self, c => c.prev_dup())
    }
    fn next_no_dup(&mut self) -> RawResult<Option<RawPair>> {
        route!(self, c => c.next_no_dup())
    }
    fn last_dup(&mut self) -> RawResult<Option<Vec<u8>>> {
        route!(self, c => c.last_dup())
    }
    fn seek_by_key_subkey(&mut self, key: &[u8], subkey: &[u8]) -> RawResult<Option<Vec<u8>>> {
        route!(self, c => c.seek_by_key_subkey(key, subkey))
    }
    fn dup_count(&mut self) -> RawResult<u64> {
        route!(self, c => c.dup_count())
    }
}

impl<A: RawCursorMut, B: RawCursorMut> RawCursorMut for Routed<A, B> {
    fn upsert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        route!(self, c => c.upsert(key, value))
    }
    fn insert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        route!(self, c => c.insert(key, value))
    }
    fn append(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        route!(self, c => c.append(key, value))
    }
    fn append_dup(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        route!(self, c => c.append_dup(key, value))
    }
    fn append_last(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        route!(self, c => c.append_last(key, value))
    }
    fn delete_current(&mut self) -> RawResult<()> {
        route!(self, c => c.delete_current())
    }
    fn delete_current_duplicates(&mut self) -> RawResult<()> {
        route!(self, c => c.delete_current_duplicates())
    }
}

/// A hybrid read transaction: one snapshot of each engine, opened at one consistent point.
pub struct HybridTx<A, B> {
    primary: A,
    follower: B,
    layout: Layout,
}

impl<A, B> std::fmt::Debug for HybridTx<A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HybridTx")
    }
}

/// Dispatches a transaction call to the engine that holds `table`, timing it as `$op`.
macro_rules! by_table {
    ($self:expr, $table:expr, $op:expr, $tx:ident => $e:expr) => {{
        let started = metrics::start();
        let engine = $self.layout.engine_of($table);
        let result = match engine {
            EngineKind::Mdbx => {
                let $tx = &$self.primary;
                $e
            }
            // A primary the engine ended (reth's read timeout) ends the follower's half too.
            EngineKind::RocksDb => $self.primary.check_alive().and_then(|()| {
                let $tx = &$self.follower;
                $e
            }),
        };
        metrics::timed($table, engine, $op, started);
        result
    }};
}

/// The read half of `RawTx`, the same for read and write hybrid transactions: each call goes
/// to the engine that holds the table.
macro_rules! routed_reads {
    () => {
        fn get(&self, table: Tables, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
            by_table!(self, table, Op::Get, tx => tx.get(table, key))
        }

        fn cursor(&self, table: Tables) -> RawResult<Self::Cursor> {
            let engine = self.layout.engine_of(table);
            let routed = match engine {
                EngineKind::Mdbx => Routed::Primary(self.primary.cursor(table)?),
                EngineKind::RocksDb => {
                    self.primary.check_alive()?;
                    Routed::Follower(self.follower.cursor(table)?, self.primary.liveness())
                }
            };
            Ok(Metered::new(routed, table, engine))
        }

        fn entries(&self, table: Tables) -> RawResult<usize> {
            by_table!(self, table, Op::Entries, tx => tx.entries(table))
        }

        /// The primary decides: a reader it ended has ended whole.
        fn check_alive(&self) -> RawResult<()> {
            self.primary.check_alive()
        }

        fn liveness(&self) -> Option<Liveness> {
            self.primary.liveness()
        }
    };
}

impl<A: RawTx, B: RawTx> RawTx for HybridTx<A, B> {
    type Cursor = Metered<Routed<A::Cursor, B::Cursor>>;

    routed_reads!();

    fn commit(self) -> RawResult<()> {
        let r = self.primary.commit();
        self.follower.commit()?;
        r
    }

    fn abort(self) {
        self.primary.abort();
        self.follower.abort();
    }

    fn disable_long_read_safety(&mut self) {
        self.primary.disable_long_read_safety();
        self.follower.disable_long_read_safety();
    }
}

/// A hybrid write transaction.
pub struct HybridTxMut<P: RawEngine, F: RawReplay> {
    pub(crate) primary: P::TxMut,
    pub(crate) follower: F::TxMut,
    pub(crate) layout: Layout,
    pub(crate) db: Arc<HybridInner<P, F>>,
    pub(crate) _writer: ArcMutexGuard<RawMutex, ()>,
}

impl<P: RawEngine, F: RawReplay> std::fmt::Debug for HybridTxMut<P, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HybridTxMut")
    }
}

impl<P: RawEngine, F: RawReplay> RawTx for HybridTxMut<P, F> {
    type Cursor = Metered<Routed<<P::TxMut as RawTx>::Cursor, <F::TxMut as RawTx>::Cursor>>;

    routed_reads!();

    fn commit(self) -> RawResult<()> {
        crate::commit::commit(self).map_err(|e| e.into_database_error(DatabaseError::Commit))
    }

    fn abort(self) {
        self.primary.abort();
        self.follower.abort();
    }
}

impl<P: RawEngine, F: RawReplay> RawTxMut for HybridTxMut<P, F> {
    type CursorMut =
        Metered<Routed<<P::TxMut as RawTxMut>::CursorMut, <F::TxMut as RawTxMut>::CursorMut>>;

    fn put(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()> {
        refuse_control_row(table, key)?;
        by_table!(self, table, Op::Put, tx => tx.put(table, key, value))
    }

    fn append(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()> {
        refuse_control_row(table, key)?;
        by_table!(self, table, Op::Append, tx => tx.append(table, key, value))
    }

    fn delete(&self, table: Tables, key: &[u8], value: Option<&[u8]>) -> RawResult<bool> {
        refuse_control_row(table, key)?;
        by_table!(self, table, Op::Delete, tx => tx.delete(table, key, value))
    }

    /// A `Metadata` clear deletes reth's rows one by one and keeps reth-hybrid's own (reth's
    /// `Metadata` holds a handful of rows); every other table is cleared whole.
    fn clear(&self, table: Tables) -> RawResult<()> {
        if table != Tables::Metadata {
            return by_table!(self, table, Op::Clear, tx => tx.clear(table));
        }
        by_table!(self, table, Op::Clear, tx => {
            let mut reths = Vec::new();
            let mut cursor = tx.cursor(table)?;
            let mut next = cursor.first()?;
            while let Some((key, _)) = next {
                if !is_control_key(&key) {
                    reths.push(key);
                }
                next = cursor.next()?;
            }
            drop(cursor);
            reths
                .iter()
                .try_for_each(|key| tx.delete(table, key, None).map(drop))
        })
    }

    fn cursor_mut(&self, table: Tables) -> RawResult<Self::CursorMut> {
        let engine = self.layout.engine_of(table);
        let routed = match engine {
            EngineKind::Mdbx => Routed::Primary(self.primary.cursor_mut(table)?),
            EngineKind::RocksDb => {
                Routed::Follower(self.follower.cursor_mut(table)?, self.primary.liveness())
            }
        };
        Ok(Metered::new(routed, table, engine))
    }
}

impl<P: RawEngine, F: RawReplay> RawEngine for HybridDb<P, F> {
    type Tx = HybridTx<P::Tx, F::Tx>;
    type TxMut = HybridTxMut<P, F>;

    fn engine_name(&self) -> &'static str {
        "hybrid"
    }

    fn path(&self) -> PathBuf {
        self.inner.datadir.clone()
    }

    fn begin_ro(&self) -> RawResult<Self::Tx> {
        // ORDER: the primary snapshot is opened under the views' read lock, so the commit that
        // MDBX shows it is `current` or `pending` (a commit publishes `pending` before its
        // decision and retires it only after the follower applied it, both under the write lock).
        let views = self.inner.views.read();
        self.check_poisoned()?;
        let primary = self.inner.primary.begin_ro()?;
        // Read even with nothing pending (one lookup, about a microsecond): a commit that did
        // not go through this handle (another hybrid on the same engines) is refused, never
        // paired with a stale follower view.
        let seen = get_u64(&primary, FOLLOWER_SEQ_KEY)?;
        let follower = views.matching(seen).ok_or_else(|| {
            HybridError::NoFollowerView {
                seen,
                current: views.current.0,
            }
            .into_database_error(DatabaseError::InitTx)
        })?;
        drop(views);
        Ok(HybridTx {
            primary,
            follower,
            layout: self.inner.layout.clone(),
        })
    }

    /// Both engines' gauges (the follower's are named `rocksdb_*`).
    fn gauges(&self) -> Vec<reth_hybrid_api::raw::EngineGauge> {
        let mut out = self.inner.primary.gauges();
        out.extend(self.inner.follower.gauges());
        out
    }

    /// Both engines' running totals (the follower's are named `rocksdb_*`).
    fn counters(&self) -> Vec<reth_hybrid_api::raw::EngineCounter> {
        let mut out = self.inner.primary.counters();
        out.extend(self.inner.follower.counters());
        out
    }

    /// MDBX's: every hybrid reader holds an MDBX read transaction for its whole life (and fails
    /// whole once reth's timeout ends it), so MDBX's reader table covers the hybrid's readers
    /// (reth waits on it before unwinding static files).
    fn oldest_reader_txnid(&self) -> Option<u64> {
        self.inner.primary.oldest_reader_txnid()
    }

    fn last_txnid(&self) -> Option<u64> {
        self.inner.primary.last_txnid()
    }

    fn begin_rw(&self) -> RawResult<Self::TxMut> {
        let writer = self.inner.writer.lock_arc();
        self.check_poisoned()?;
        Ok(HybridTxMut {
            primary: self.inner.primary.begin_rw()?,
            follower: self.inner.follower.begin_rw()?,
            layout: self.inner.layout.clone(),
            db: Arc::clone(&self.inner),
            _writer: writer,
        })
    }
}
