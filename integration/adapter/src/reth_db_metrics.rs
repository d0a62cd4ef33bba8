//! reth's own database metrics, `reth_database_transaction_*` and `reth_database_operation_*`,
//! recorded where reth's MDBX `Tx` wrapper records them: at reth's trait calls, whichever engine
//! holds the table. A stock node's dashboards and alerts keep working on the hybrid;
//! `reth_hybrid_*` adds the engine and the commit protocol's phases.
//!
//! Names, labels and rules follow reth v2.5.1 (`crates/storage/db/src/metrics.rs`, `mdbx/tx.rs`):
//! every get, put, append, delete and cursor write is counted per table and operation (cursor
//! reads are not), writes of values over 4 KiB are timed, transactions are counted per mode at
//! open and close, and each close records how long the transaction was open and how long it took
//! to close, by outcome (commit, abort, or dropped without either). MDBX's own breakdown of a
//! commit (`commit_*_duration_seconds`) is recorded by [`crate::RethMdbx`] for the commits it
//! makes. As in reth, a read transaction in use after 60 seconds logs a warning once, unless its
//! long-read safety was disabled.

use metrics::{Counter, Histogram, Label};
use reth_hybrid_api::Tables;
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

/// Writes of larger values are timed (reth's `LARGE_VALUE_THRESHOLD_BYTES`).
const LARGE_VALUE_BYTES: usize = 4096;
/// A read transaction in use for longer logs a warning (reth's `LONG_TRANSACTION_DURATION`).
const LONG_READ: Duration = Duration::from_secs(60);

const TRANSACTION: &str = "database.transaction";
const OPERATION_CALLS: &str = "database.operation.calls_total";
const OPERATION_LARGE_VALUE_SECONDS: &str = "database.operation.large_value_duration_seconds";

/// reth's `Operation`, the `operation` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Get,
    PutUpsert,
    PutAppend,
    Delete,
    CursorUpsert,
    CursorInsert,
    CursorAppend,
    CursorAppendDup,
    CursorDeleteCurrent,
    CursorDeleteCurrentDuplicates,
}

impl Operation {
    const ALL: [Self; 10] = [
        Self::Get,
        Self::PutUpsert,
        Self::PutAppend,
        Self::Delete,
        Self::CursorUpsert,
        Self::CursorInsert,
        Self::CursorAppend,
        Self::CursorAppendDup,
        Self::CursorDeleteCurrent,
        Self::CursorDeleteCurrentDuplicates,
    ];

    const fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::PutUpsert => "put-upsert",
            Self::PutAppend => "put-append",
            Self::Delete => "delete",
            Self::CursorUpsert => "cursor-upsert",
            Self::CursorInsert => "cursor-insert",
            Self::CursorAppend => "cursor-append",
            Self::CursorAppendDup => "cursor-append-dup",
            Self::CursorDeleteCurrent => "cursor-delete-current",
            Self::CursorDeleteCurrentDuplicates => "cursor-delete-current-duplicates",
        }
    }
}

/// reth's `TransactionMode`, the `mode` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    ReadOnly,
    ReadWrite,
}

impl Mode {
    const ALL: [Self; 2] = [Self::ReadOnly, Self::ReadWrite];

    const fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::ReadWrite => "read-write",
        }
    }
}

/// reth's `TransactionOutcome`, the `outcome` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Commit,
    Abort,
    Drop,
}

impl Outcome {
    const ALL: [Self; 3] = [Self::Commit, Self::Abort, Self::Drop];

    const fn as_str(self) -> &'static str {
        match self {
            Self::Commit => "commit",
            Self::Abort => "abort",
            Self::Drop => "drop",
        }
    }
}

#[derive(Debug)]
pub(crate) struct OperationHandles {
    calls: Counter,
    large_value_seconds: Histogram,
}

/// One table's operation handles, bound once (as reth does) so hot paths never look a metric up.
pub(crate) type TableOperations = Arc<[OperationHandles]>;

/// Counts `operation` and, for a value over 4 KiB, times it.
pub(crate) fn record<R>(
    ops: &TableOperations,
    operation: Operation,
    value_size: Option<usize>,
    f: impl FnOnce() -> R,
) -> R {
    let handles = &ops[operation as usize];
    handles.calls.increment(1);
    if value_size.is_some_and(|size| size > LARGE_VALUE_BYTES) {
        let started = Instant::now();
        let r = f();
        handles.large_value_seconds.record(started.elapsed());
        r
    } else {
        f()
    }
}

#[derive(Debug)]
struct ModeHandles {
    opened: Counter,
    closed: Counter,
}

#[derive(Debug)]
struct OutcomeHandles {
    open_seconds: Histogram,
    close_seconds: Histogram,
}

/// MDBX's account of one commit (`MDBX_commit_latency`), as reth records it.
#[derive(Debug)]
pub(crate) struct CommitLatencyHandles {
    preparation: Histogram,
    gc_wallclock: Histogram,
    audit: Histogram,
    write: Histogram,
    sync: Histogram,
    ending: Histogram,
    whole: Histogram,
    gc_cputime: Histogram,
}

impl CommitLatencyHandles {
    pub(crate) fn record(&self, latency: &reth_libmdbx::CommitLatency) {
        self.preparation.record(latency.preparation());
        self.gc_wallclock.record(latency.gc_wallclock());
        self.audit.record(latency.audit());
        self.write.record(latency.write());
        self.sync.record(latency.sync());
        self.ending.record(latency.ending());
        self.whole.record(latency.whole());
        self.gc_cputime.record(latency.gc_cputime());
    }
}

/// Every handle reth's `DatabaseEnvMetrics` holds, bound to the global recorder at creation
/// (inside a node: reth's Prometheus recorder, installed before any command runs).
#[derive(Debug)]
pub struct RethDbMetrics {
    tables: Vec<TableOperations>,
    modes: Vec<ModeHandles>,
    outcomes: Vec<OutcomeHandles>,
    commits: Vec<CommitLatencyHandles>,
}

impl Default for RethDbMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl RethDbMetrics {
    pub fn new() -> Self {
        let tables = Tables::ALL
            .iter()
            .map(|table| {
                Operation::ALL
                    .iter()
                    .map(|op| {
                        let labels = vec![
                            Label::new("table", table.name()),
                            Label::new("operation", op.as_str()),
                        ];
                        OperationHandles {
                            calls: metrics::counter!(OPERATION_CALLS, labels.clone()),
                            large_value_seconds: metrics::histogram!(
                                OPERATION_LARGE_VALUE_SECONDS,
                                labels
                            ),
                        }
                    })
                    .collect()
            })
            .collect();
        let transaction = |field: &str| format!("{TRANSACTION}.{field}");
        let modes = Mode::ALL
            .iter()
            .map(|mode| {
                let labels = vec![Label::new("mode", mode.as_str())];
                ModeHandles {
                    opened: metrics::counter!(transaction("opened_total"), labels.clone()),
                    closed: metrics::counter!(transaction("closed_total"), labels),
                }
            })
            .collect();
        let outcomes = Mode::ALL
            .iter()
            .flat_map(|mode| Outcome::ALL.iter().map(move |outcome| (mode, outcome)))
            .map(|(mode, outcome)| {
                let labels = vec![
                    Label::new("mode", mode.as_str()),
                    Label::new("outcome", outcome.as_str()),
                ];
                OutcomeHandles {
                    open_seconds: metrics::histogram!(
                        transaction("open_duration_seconds"),
                        labels.clone()
                    ),
                    close_seconds: metrics::histogram!(
                        transaction("close_duration_seconds"),
                        labels
                    ),
                }
            })
            .collect();
        let commits = Mode::ALL
            .iter()
            .map(|mode| {
                let labels = vec![
                    Label::new("mode", mode.as_str()),
                    Label::new("outcome", Outcome::Commit.as_str()),
                ];
                let h = |field: &str| {
                    metrics::histogram!(
                        transaction(&format!("commit_{field}_duration_seconds")),
                        labels.clone()
                    )
                };
                CommitLatencyHandles {
                    preparation: h("preparation"),
                    gc_wallclock: h("gc_wallclock"),
                    audit: h("audit"),
                    write: h("write"),
                    sync: h("sync"),
                    ending: h("ending"),
                    whole: h("whole"),
                    gc_cputime: h("gc_cputime"),
                }
            })
            .collect();
        Self {
            tables,
            modes,
            outcomes,
            commits,
        }
    }

    pub(crate) fn table(&self, table: Tables) -> TableOperations {
        Arc::clone(&self.tables[table as usize])
    }

    pub(crate) fn commit_latency(&self, mode: Mode) -> &CommitLatencyHandles {
        &self.commits[mode as usize]
    }

    fn outcome(&self, mode: Mode, outcome: Outcome) -> &OutcomeHandles {
        &self.outcomes[mode as usize * Outcome::ALL.len() + outcome as usize]
    }
}

/// One transaction's metrics, from its open to its close; a transaction dropped without a
/// commit or abort is recorded as `drop` (reth's `MetricsHandler`).
#[derive(Debug)]
pub(crate) struct TxMetrics {
    metrics: Arc<RethDbMetrics>,
    mode: Mode,
    opened: Instant,
    closed: bool,
    /// Cleared once the warning is logged or long-read safety is disabled.
    warn_long_read: AtomicBool,
}

impl TxMetrics {
    pub(crate) fn open(metrics: Arc<RethDbMetrics>, mode: Mode) -> Self {
        metrics.modes[mode as usize].opened.increment(1);
        Self {
            metrics,
            mode,
            opened: Instant::now(),
            closed: false,
            warn_long_read: AtomicBool::new(mode == Mode::ReadOnly),
        }
    }

    pub(crate) fn table(&self, table: Tables) -> TableOperations {
        self.metrics.table(table)
    }

    pub(crate) fn operation<R>(
        &self,
        table: Tables,
        operation: Operation,
        value_size: Option<usize>,
        f: impl FnOnce() -> R,
    ) -> R {
        self.warn_if_long_read();
        record(
            &self.metrics.tables[table as usize],
            operation,
            value_size,
            f,
        )
    }

    pub(crate) fn disable_long_read_warning(&self) {
        self.warn_long_read.store(false, Ordering::Relaxed);
    }

    /// Closes the transaction with `f`, timing the close.
    pub(crate) fn close<R>(mut self, outcome: Outcome, f: impl FnOnce() -> R) -> R {
        self.warn_if_long_read();
        self.closed = true;
        let started = Instant::now();
        let r = f();
        self.record_close(outcome, Some(started.elapsed()));
        r
    }

    fn record_close(&self, outcome: Outcome, close: Option<Duration>) {
        self.metrics.modes[self.mode as usize].closed.increment(1);
        let handles = self.metrics.outcome(self.mode, outcome);
        handles.open_seconds.record(self.opened.elapsed());
        if let Some(close) = close {
            handles.close_seconds.record(close);
        }
    }

    fn warn_if_long_read(&self) {
        if self.warn_long_read.load(Ordering::Relaxed) {
            let open = self.opened.elapsed();
            if open >= LONG_READ && self.warn_long_read.swap(false, Ordering::Relaxed) {
                tracing::warn!(
                    target: "storage::db::mdbx",
                    open_duration = ?open,
                    backtrace = %std::backtrace::Backtrace::force_capture(),
                    "A database read transaction has been open for too long"
                );
            }
        }
    }
}

impl Drop for TxMetrics {
    fn drop(&mut self) {
        if !self.closed {
            self.warn_if_long_read();
            self.record_close(Outcome::Drop, None);
        }
    }
}
