//! SIGKILL points inside the large-transaction path (feature `crash-points`, for the hybrid's
//! crash suite; `reth_hybrid_api::crash_point` says how they are driven). Without the feature
//! they compile to nothing.

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

macro_rules! crash_point {
    ($point:ident) => {
        #[cfg(feature = "crash-points")]
        reth_hybrid_api::crash_point::reached($crate::crash::CrashPoint::$point.name());
    };
}
pub(crate) use crash_point;
