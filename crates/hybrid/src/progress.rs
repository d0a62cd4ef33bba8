//! How long steps of the datadir tools (migrate, adopt) report progress; the CLI draws them as
//! progress bars, the node logs them, tests ignore them.

/// Receives the progress of long steps (copies, verifications, scans).
///
/// Steps may run at once on different threads (adoption ingests reth's RocksDB tables while it
/// copies the static files): each thread's `advance` and `end` are about the step that thread
/// began, so an implementation keeps one current step per thread.
pub trait Progress: Sync {
    /// A step starts on this thread; `total` rows when known (estimates are fine).
    fn begin(&self, step: &str, total: Option<u64>);
    /// `rows` more rows done in this thread's current step.
    fn advance(&self, rows: u64);
    /// This thread's current step ended.
    fn end(&self);
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn begin(&self, _step: &str, _total: Option<u64>) {}
    fn advance(&self, _rows: u64) {}
    fn end(&self) {}
}
