//! Whether a history seek should try its key's prefix first. Only when the table has more than
//! one sorted run on disk (level-0 files, or rows above the bottom level): the prefix filters
//! then skip the runs without the prefix, while with one run the filter check is pure cost (a
//! lookup's prefix is almost always there). Measured both ways in docs/benchmarks.md ("History
//! seeks and the LSM's shape").

use rocksdb::{ColumnFamily, DB};
use std::{
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
    time::Instant,
};

/// How long a count of sorted runs is trusted: flushes and compactions change it seconds apart
/// at most, and reading it takes RocksDB's mutex. A stale count costs time, never a wrong answer.
const RECOUNT_AFTER_MS: u64 = 1000;

/// Levels of a column family (RocksDB's default `num_levels`, which we keep).
const LEVELS: usize = 7;

pub(crate) struct SortedRuns {
    epoch: Instant,
    /// Milliseconds since `epoch` at the last count, plus one (0: never counted).
    counted_at: AtomicU64,
    /// Per history table (by [`SortedRuns::slot`]): more than one sorted run at the last count.
    several: [AtomicBool; 2],
}

impl SortedRuns {
    pub(crate) fn new() -> Self {
        Self {
            epoch: Instant::now(),
            counted_at: AtomicU64::new(0),
            several: [AtomicBool::new(true), AtomicBool::new(true)],
        }
    }

    /// Whether the history table at `slot` (0 or 1; its column family `cfs[slot]`) had more than
    /// one sorted run on disk when last counted, recounting both tables when the count is old.
    pub(crate) fn several(&self, slot: usize, db: &DB, cfs: [&ColumnFamily; 2]) -> bool {
        let now = self.epoch.elapsed().as_millis() as u64 + 1;
        let counted = self.counted_at.load(Ordering::Relaxed);
        if counted == 0 || now.saturating_sub(counted) > RECOUNT_AFTER_MS {
            self.counted_at.store(now, Ordering::Relaxed);
            for (several, cf) in self.several.iter().zip(cfs) {
                several.store(count(db, cf).is_none_or(|runs| runs > 1), Ordering::Relaxed);
            }
        }
        self.several[slot].load(Ordering::Relaxed)
    }
}

/// Sorted runs on disk: each level-0 file, and each other level with files. `None` when RocksDB
/// does not answer (the caller then assumes several).
fn count(db: &DB, cf: &ColumnFamily) -> Option<u64> {
    let mut runs = 0;
    for level in 0..LEVELS {
        let files = db
            .property_int_value_cf(cf, &format!("rocksdb.num-files-at-level{level}"))
            .ok()??;
        runs += if level == 0 {
            files
        } else {
            u64::from(files > 0)
        };
    }
    Some(runs)
}
