//! The crash points every crate's SIGKILL tests share: a process started with
//! `RETH_HYBRID_CRASH_AT=<point>:<n>` kills itself with SIGKILL the n-th time (counting from 1)
//! it passes the point named `<point>`. Each crate names its own points and calls [`reached`]
//! only behind its `crash-points` feature, so node builds never pass one.

use std::{
    collections::HashMap,
    sync::{Mutex, OnceLock},
};

/// Counts a pass of `point`; kills the process if this is the pass `RETH_HYBRID_CRASH_AT` names.
pub fn reached(point: &str) {
    static HITS: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
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
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let hit = hits.entry(point.to_string()).or_insert(0);
    *hit += 1;
    if n.parse::<u64>().is_ok_and(|n| n == *hit) {
        // SAFETY: kill(getpid(), SIGKILL) has no memory-safety preconditions.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
}
