//! Fault points of the commit protocol: the I/O steps that can fail without the process dying
//! (a full disk, a failing device). With feature `fault-injection`, a test arms a fault for one
//! datadir and the next operation of that datadir reaching the point fails with the fault's
//! errno instead of doing its work; without the feature the macro is `Ok(())` and compiles to
//! nothing. Faults are keyed by datadir so tests running in parallel in one process do not
//! disturb each other.

use std::io;

/// Every I/O step of a commit (and of recovery's replay) whose failure the protocol must survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// Writing the intent record: half of it is written, then the write fails (as on a full disk).
    IntentWrite,
    /// Syncing the intent record: the record is written but not synced, and the sync fails.
    IntentFsync,
    /// MDBX's decision commit reports an error although it committed: the ambiguous case (an
    /// error from the final sync), which the protocol must treat as "maybe decided".
    PrimaryCommit,
    /// Applying the intent to RocksDB (in a commit after MDBX decided, or in recovery's replay).
    FollowerApply,
}

impl FaultPoint {
    pub const ALL: [FaultPoint; 4] = [
        FaultPoint::IntentWrite,
        FaultPoint::IntentFsync,
        FaultPoint::PrimaryCommit,
        FaultPoint::FollowerApply,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultPoint::IntentWrite => "IntentWrite",
            FaultPoint::IntentFsync => "IntentFsync",
            FaultPoint::PrimaryCommit => "PrimaryCommit",
            FaultPoint::FollowerApply => "FollowerApply",
        }
    }
}

/// The errors a fault point can raise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `EIO`: the device failed.
    Eio,
    /// `ENOSPC`: the disk is full.
    Enospc,
}

impl Fault {
    pub const ALL: [Fault; 2] = [Fault::Eio, Fault::Enospc];

    pub fn errno(self) -> i32 {
        match self {
            Fault::Eio => libc::EIO,
            Fault::Enospc => libc::ENOSPC,
        }
    }

    /// The error the operating system would have returned.
    pub fn io_error(self) -> io::Error {
        io::Error::from_raw_os_error(self.errno())
    }
}

#[cfg(feature = "fault-injection")]
mod armed {
    use super::{Fault, FaultPoint};
    use parking_lot::Mutex;
    use std::{
        io,
        path::{Path, PathBuf},
    };

    static ARMED: Mutex<Vec<(PathBuf, FaultPoint, Fault)>> = Mutex::new(Vec::new());

    /// Arms `fault` at `point` for the datadir `dir`: it fires once, the next time an operation
    /// of that datadir reaches the point.
    pub fn arm(dir: &Path, point: FaultPoint, fault: Fault) {
        ARMED.lock().push((dir.to_path_buf(), point, fault));
    }

    /// Removes every fault armed for `dir` that has not fired.
    pub fn disarm(dir: &Path) {
        ARMED.lock().retain(|(d, _, _)| d != dir);
    }

    pub fn hit(dir: &Path, point: FaultPoint) -> io::Result<()> {
        let mut armed = ARMED.lock();
        match armed.iter().position(|(d, p, _)| d == dir && *p == point) {
            Some(i) => {
                let (_, _, fault) = armed.remove(i);
                tracing::warn!(dir = %dir.display(), point = point.name(), ?fault, "injecting fault");
                Err(fault.io_error())
            }
            None => Ok(()),
        }
    }
}

#[cfg(feature = "fault-injection")]
pub use armed::{arm, disarm, hit};

/// `fault_point!(Point, dir)` is an `io::Result<()>`: the armed fault for datadir `dir` at
/// `FaultPoint::Point`, or `Ok(())` (always, without feature `fault-injection`).
macro_rules! fault_point {
    ($point:ident, $dir:expr) => {{
        #[cfg(feature = "fault-injection")]
        let result = $crate::fault::hit($dir, $crate::fault::FaultPoint::$point);
        #[cfg(not(feature = "fault-injection"))]
        let result: ::std::io::Result<()> = {
            // Type-checked in every build, so the fault points cannot rot without the feature.
            let _dir: &::std::path::Path = $dir;
            Ok(())
        };
        result
    }};
}
pub(crate) use fault_point;
