//! Crash points of the commit protocol and of recovery. With feature `crash-points`, a process
//! started with `RETH_HYBRID_CRASH_AT=<Point>:<n>` kills itself with SIGKILL the n-th time it
//! reaches that point (counting from 1); without the feature the macro compiles to nothing.

/// Every place the protocol can be interrupted between two durable steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// The intent is durable; no engine has committed.
    AfterIntentWrite,
    /// MDBX (the decision) committed; RocksDB has not.
    AfterPrimaryCommit,
    /// Both engines committed; the intent is still there.
    AfterFollowerApply,
    /// The intent was cleared.
    AfterIntentClear,
    /// Recovery replayed the intent into RocksDB but has not cleared it.
    RecoveryAfterReplay,
}

impl CrashPoint {
    pub const ALL: [CrashPoint; 5] = [
        CrashPoint::AfterIntentWrite,
        CrashPoint::AfterPrimaryCommit,
        CrashPoint::AfterFollowerApply,
        CrashPoint::AfterIntentClear,
        CrashPoint::RecoveryAfterReplay,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::AfterIntentWrite => "AfterIntentWrite",
            CrashPoint::AfterPrimaryCommit => "AfterPrimaryCommit",
            CrashPoint::AfterFollowerApply => "AfterFollowerApply",
            CrashPoint::AfterIntentClear => "AfterIntentClear",
            CrashPoint::RecoveryAfterReplay => "RecoveryAfterReplay",
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
