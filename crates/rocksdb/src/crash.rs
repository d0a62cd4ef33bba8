//! SIGKILL points inside the large-transaction path (feature `crash-points`, for the hybrid's
//! crash suite), driven like the hybrid's own: `RETH_HYBRID_CRASH_AT=<point>:<n>` kills the
//! process the n-th time it passes `<point>`. Without the feature they compile to nothing.

/// Where a spilling transaction can be killed.
#[cfg(feature = "crash-points")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// A spill run was ingested into the transaction's scratch store (mid-transaction).
    SpillAfterRun,
    /// One table's SST file of a commit was exported (before the intent names them).
    ExportAfterTable,
    /// One table's exported file was ingested, later ones not (a commit applied part way).
    IngestAfterTable,
}

#[cfg(feature = "crash-points")]
impl CrashPoint {
    pub const ALL: [CrashPoint; 3] = [
        CrashPoint::SpillAfterRun,
        CrashPoint::ExportAfterTable,
        CrashPoint::IngestAfterTable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::SpillAfterRun => "SpillAfterRun",
            CrashPoint::ExportAfterTable => "ExportAfterTable",
            CrashPoint::IngestAfterTable => "IngestAfterTable",
        }
    }
}

#[cfg(feature = "crash-points")]
pub(crate) fn reached(point: CrashPoint) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static HITS: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];
    let Ok(spec) = std::env::var("RETH_HYBRID_CRASH_AT") else {
        return;
    };
    let Some((name, n)) = spec.split_once(':') else {
        return;
    };
    if name != point.name() {
        return;
    }
    let idx = CrashPoint::ALL
        .iter()
        .position(|p| *p == point)
        .expect("listed");
    let hit = HITS[idx].fetch_add(1, Ordering::SeqCst) + 1;
    if n.parse::<u64>().is_ok_and(|n| n == hit) {
        // SAFETY: kill(getpid(), SIGKILL) has no memory-safety preconditions.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
}

macro_rules! crash_point {
    ($point:ident) => {
        #[cfg(feature = "crash-points")]
        $crate::crash::reached($crate::crash::CrashPoint::$point);
    };
}
pub(crate) use crash_point;
