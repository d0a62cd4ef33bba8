//! Metrics through the `metrics` facade (a Prometheus exporter is the CLI's `--metrics`): every
//! operation by table, engine and kind; commit phase timings; engine internals as gauges.
//! Without an installed recorder every call is a no-op. Cursor steps (`next`, `prev`, dup moves)
//! are counted but not timed, to keep iteration cost close to the engine's own.

use reth_hybrid_api::{
    EngineKind, Tables,
    raw::{EngineCounter, EngineGauge},
};
use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

static ENABLED: AtomicBool = AtomicBool::new(false);
/// Set inside a reth node, whose Prometheus recorder prefixes every name with `reth_`: our names
/// then drop their own `reth_`, so the node shows `reth_hybrid_*`, not `reth_reth_hybrid_*`.
static UNDER_RETH: AtomicBool = AtomicBool::new(false);

/// Turns recording on (the CLI does it when it installs an exporter). Off, the hot paths skip
/// every metrics call, so a node without an exporter pays one relaxed load per operation.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// [`enable`] inside a reth node (see `UNDER_RETH`).
pub fn enable_under_reth() {
    UNDER_RETH.store(true, Ordering::Relaxed);
    enable();
}

/// A metric's name as recorded: `full`, or without its `reth_` inside a reth node.
fn named(full: &'static str) -> &'static str {
    if UNDER_RETH.load(Ordering::Relaxed) {
        full.strip_prefix("reth_").unwrap_or(full)
    } else {
        full
    }
}

#[inline]
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// `Some(now)` when recording, for timing an operation.
#[inline]
pub(crate) fn start() -> Option<Instant> {
    enabled().then(Instant::now)
}

pub const OPERATIONS_TOTAL: &str = "reth_hybrid_operations_total";
pub const OPERATION_SECONDS: &str = "reth_hybrid_operation_seconds";
pub const COMMIT_PHASE_SECONDS: &str = "reth_hybrid_commit_phase_seconds";
pub const COMMITS_TOTAL: &str = "reth_hybrid_commits_total";
/// Bytes of each commit's RocksDB payload (write batch or SST manifest), by the route it took:
/// what decides between the deferred sync and the intent log (`FollowerSync::Deferred`'s bound).
pub const COMMIT_ROCKSDB_BYTES: &str = "reth_hybrid_commit_rocksdb_bytes";

/// Operation kinds, as the `op` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Get,
    Put,
    Append,
    Delete,
    Clear,
    Entries,
    OpenCursor,
    Seek,
    Step,
    CursorWrite,
}

impl Op {
    pub const fn as_str(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Put => "put",
            Op::Append => "append",
            Op::Delete => "delete",
            Op::Clear => "clear",
            Op::Entries => "entries",
            Op::OpenCursor => "open_cursor",
            Op::Seek => "seek",
            Op::Step => "step",
            Op::CursorWrite => "cursor_write",
        }
    }
}

/// Commit phases, as the `phase` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Intent,
    Primary,
    Follower,
    ClearIntent,
    /// RocksDB's WAL sync after deferred commits.
    FollowerSync,
}

impl Phase {
    pub const fn as_str(self) -> &'static str {
        match self {
            Phase::Intent => "intent_fsync",
            Phase::Primary => "mdbx_commit",
            Phase::Follower => "rocksdb_apply",
            Phase::ClearIntent => "intent_clear",
            Phase::FollowerSync => "rocksdb_wal_sync",
        }
    }
}

pub(crate) fn count(table: Tables, engine: EngineKind, op: Op) {
    if !enabled() {
        return;
    }
    metrics::counter!(named(OPERATIONS_TOTAL), "table" => table.name(), "engine" => engine.as_str(), "op" => op.as_str())
        .increment(1);
}

pub(crate) fn timed(table: Tables, engine: EngineKind, op: Op, started: Option<Instant>) {
    let Some(started) = started else { return };
    count(table, engine, op);
    metrics::histogram!(named(OPERATION_SECONDS), "table" => table.name(), "engine" => engine.as_str(), "op" => op.as_str())
        .record(started.elapsed().as_secs_f64());
}

pub(crate) fn phase(phase: Phase, took: Duration) {
    if !enabled() {
        return;
    }
    metrics::histogram!(named(COMMIT_PHASE_SECONDS), "phase" => phase.as_str())
        .record(took.as_secs_f64());
}

/// How a commit's RocksDB half was made durable, as the `rocksdb` and `route` labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitRoute {
    /// The commit wrote nothing to RocksDB.
    Untouched,
    /// A pending row in MDBX's commit, RocksDB written unsynced (synced later).
    Deferred,
    /// The intent log, fsynced, then a synced RocksDB write (or an SST ingestion).
    Logged,
}

impl CommitRoute {
    pub const fn as_str(self) -> &'static str {
        match self {
            CommitRoute::Untouched => "untouched",
            CommitRoute::Deferred => "deferred",
            CommitRoute::Logged => "logged",
        }
    }
}

/// Counts a finished commit by route and records its RocksDB payload's bytes.
pub(crate) fn commit(route: CommitRoute, payload_bytes: usize) {
    if !enabled() {
        return;
    }
    metrics::counter!(named(COMMITS_TOTAL), "rocksdb" => route.as_str()).increment(1);
    if route != CommitRoute::Untouched {
        metrics::histogram!(named(COMMIT_ROCKSDB_BYTES), "route" => route.as_str())
            .record(payload_bytes as f64);
    }
}

/// A stat's name as recorded: `reth_hybrid_<name><suffix>` (see `UNDER_RETH`).
fn stat_name(name: &str, suffix: &str) -> String {
    format!("{}{name}{suffix}", named("reth_hybrid_"))
}

/// Publishes one engine's internals: its gauges as `reth_hybrid_<name>` (labels: engine, and
/// table where per table), its running totals as counters `reth_hybrid_<name>_total`.
pub(crate) fn engine_stats(
    engine: EngineKind,
    gauges: Vec<EngineGauge>,
    counters: Vec<EngineCounter>,
) {
    for g in gauges {
        let name = stat_name(g.name, "");
        match g.table {
            Some(t) => {
                metrics::gauge!(name, "engine" => engine.as_str(), "table" => t.name()).set(g.value)
            }
            None => metrics::gauge!(name, "engine" => engine.as_str()).set(g.value),
        }
    }
    for c in counters {
        metrics::counter!(stat_name(c.name, "_total"), "engine" => engine.as_str())
            .absolute(c.value);
    }
}

/// A thread that publishes engine stats every interval, so a metrics scrape sees them as they
/// change (reth's node reports database gauges only every few minutes); stops when dropped or
/// when its report says the database is gone.
#[derive(Debug)]
pub struct StatsPublisher {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StatsPublisher {
    /// Runs `report` now and then every `every` until it returns false or the handle drops.
    pub(crate) fn start(
        every: Duration,
        mut report: impl FnMut() -> bool + Send + 'static,
    ) -> std::io::Result<Self> {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("reth-hybrid-stats".into())
            .spawn(move || {
                while report() {
                    if !matches!(
                        stopped.recv_timeout(every),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    ) {
                        return;
                    }
                }
            })?;
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Whether the thread still runs (it ends once the database it reports on is closed).
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for StatsPublisher {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}
