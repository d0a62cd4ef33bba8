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

#[cfg(feature = "crash-points")]
pub fn reached(point: &str) {
    use std::sync::{Mutex, OnceLock};
    static HITS: OnceLock<Mutex<std::collections::HashMap<String, u64>>> = OnceLock::new();
    let Ok(spec) = std::env::var("RETH_HYBRID_CRASH_AT") else {
        return;
    };
    let Some((name, n)) = spec.split_once(':') else {
        return;
    };
    if name != point {
        return;
    }
    let mut hits = HITS
        .get_or_init(Default::default)
        .lock()
        .expect("not poisoned");
    let hit = hits.entry(point.to_string()).or_insert(0);
    *hit += 1;
    if n.parse::<u64>().is_ok_and(|n| n == *hit) {
        // SAFETY: kill(getpid(), SIGKILL) has no memory-safety preconditions.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
}

macro_rules! crash_point {
    ($point:literal) => {
        #[cfg(feature = "crash-points")]
        $crate::crash::reached($point);
    };
}
pub(crate) use crash_point;
