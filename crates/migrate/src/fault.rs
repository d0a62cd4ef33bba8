//! Injected I/O failures of the migration. With feature `fault-injection`, a test arms one point
//! on its own thread ([`arm`]); the n-th time the migration reaches that point on that thread
//! (counting from 1) the step fails with the errno given, the way the real system call would
//! have failed there. Without the feature [`inject`] is an inline `Ok(())`.
//!
//! Thread-local on purpose: tests of one binary run on parallel threads, and every armed point
//! is reached on the thread that called `migrate` (the SST writer, not the MDBX reader thread).

/// The steps of a migration that write to disk, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// A row written into an SST file (the file is left half-written, unrecorded).
    SstWrite,
    /// Writing `hybrid-migration.json` (its temporary file; the recorded state stays the old one).
    StateWrite,
    /// The ingestion of a table's SST files fails; nothing is ingested.
    Ingest,
    /// The ingestion lands but the call reports an error (as when a sync after it fails).
    IngestLanded,
    /// The MDBX transaction of the switch fails to commit.
    Switch,
    /// The MDBX transaction of one rollback batch fails to commit.
    RollbackBatch,
    /// Writing the compacted copy of `mdbx.dat`.
    CompactCopy,
}

/// Every fault point, for tests that enumerate them.
pub const FAULT_POINTS: [FaultPoint; 7] = [
    FaultPoint::SstWrite,
    FaultPoint::StateWrite,
    FaultPoint::Ingest,
    FaultPoint::IngestLanded,
    FaultPoint::Switch,
    FaultPoint::RollbackBatch,
    FaultPoint::CompactCopy,
];

#[cfg(feature = "fault-injection")]
mod armed {
    use super::FaultPoint;
    use std::cell::Cell;

    #[derive(Clone, Copy)]
    pub(super) struct Armed {
        pub point: FaultPoint,
        pub nth: u64,
        pub errno: i32,
        pub arrivals: u64,
    }

    thread_local! {
        pub(super) static ARMED: Cell<Option<Armed>> = const { Cell::new(None) };
    }
}

/// Disarms the point when dropped, so a failing assertion cannot leak a fault into later code
/// on the same thread.
#[cfg(feature = "fault-injection")]
#[derive(Debug)]
#[must_use = "the fault is disarmed when the guard is dropped"]
pub struct Armed(());

#[cfg(feature = "fault-injection")]
impl Drop for Armed {
    fn drop(&mut self) {
        armed::ARMED.with(|a| a.set(None));
    }
}

/// Makes the `nth` arrival (from 1) of this thread at `point` fail with `errno`
/// (e.g. `libc::EIO`, `libc::ENOSPC`). Replaces any point armed before. `u64::MAX` only counts.
#[cfg(feature = "fault-injection")]
pub fn arm(point: FaultPoint, nth: u64, errno: i32) -> Armed {
    armed::ARMED.with(|a| {
        a.set(Some(armed::Armed {
            point,
            nth: nth.max(1),
            errno,
            arrivals: 0,
        }))
    });
    Armed(())
}

/// How often this thread reached the armed point since it was armed.
#[cfg(feature = "fault-injection")]
pub fn arrivals() -> u64 {
    armed::ARMED.with(|a| a.get().map_or(0, |s| s.arrivals))
}

/// Whether the armed fault has fired (it fires once).
#[cfg(feature = "fault-injection")]
pub fn fired() -> bool {
    armed::ARMED.with(|a| a.get().is_some_and(|s| s.arrivals >= s.nth))
}

/// Called by the migration at `point`: the injected error, if this arrival is the armed one.
#[cfg(feature = "fault-injection")]
pub fn inject(point: FaultPoint) -> std::io::Result<()> {
    armed::ARMED.with(|a| match a.get() {
        Some(mut s) if s.point == point => {
            s.arrivals += 1;
            a.set(Some(s));
            if s.arrivals == s.nth {
                Err(std::io::Error::from_raw_os_error(s.errno))
            } else {
                Ok(())
            }
        }
        _ => Ok(()),
    })
}

#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn inject(_point: FaultPoint) -> std::io::Result<()> {
    Ok(())
}
