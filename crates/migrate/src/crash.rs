//! Crash points of the migration. With feature `crash-points`, a process started with
//! `RETH_HYBRID_CRASH_AT=<Point>:<n>` kills itself with SIGKILL the n-th time it reaches that
//! point (counting from 1); without the feature the macro compiles to nothing.

/// Every point between two durable steps of a migration, by name.
pub const CRASH_POINTS: [&str; 12] = [
    "AfterStateWrite",
    "CopyAfterSstFile",
    "CopyAfterCheckpoint",
    "AfterIngest",
    "AfterVerify",
    "AfterSwitch",
    "RollbackAfterBatch",
    "RollbackAfterSwitch",
    "RollbackAfterClear",
    "CompactAfterCopy",
    "CompactAfterRename",
    "BeforeStateRemove",
];

macro_rules! crash_point {
    ($point:literal) => {
        #[cfg(feature = "crash-points")]
        reth_hybrid_api::crash_point::reached($point);
    };
}
pub(crate) use crash_point;
