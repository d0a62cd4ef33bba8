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

#[cfg(feature = "crash-points")]
pub fn reached(point: CrashPoint) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static HITS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];
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
