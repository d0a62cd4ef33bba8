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
    /// Syncing RocksDB's WAL after deferred commits (`FollowerSync::Deferred`).
    FollowerSync,
    /// Right before MDBX's decision commit, after the commit published its pending view. A stall
    /// point only ([`arm_stall`]): no fault fires here, so it is not in [`FaultPoint::ALL`].
    BeforeDecision,
    /// Between finding a commit's RocksDB transaction clean and freezing it. A stall point only.
    AfterCleanCheck,
}

impl FaultPoint {
    pub const ALL: [FaultPoint; 5] = [
        FaultPoint::IntentWrite,
        FaultPoint::IntentFsync,
        FaultPoint::PrimaryCommit,
        FaultPoint::FollowerApply,
        FaultPoint::FollowerSync,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultPoint::IntentWrite => "IntentWrite",
            FaultPoint::IntentFsync => "IntentFsync",
            FaultPoint::PrimaryCommit => "PrimaryCommit",
            FaultPoint::FollowerApply => "FollowerApply",
            FaultPoint::FollowerSync => "FollowerSync",
            FaultPoint::BeforeDecision => "BeforeDecision",
            FaultPoint::AfterCleanCheck => "AfterCleanCheck",
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
        sync::{Arc, mpsc},
        time::Duration,
    };

    static ARMED: Mutex<Vec<(PathBuf, FaultPoint, Fault)>> = Mutex::new(Vec::new());
    static STALLS: Mutex<Vec<(PathBuf, FaultPoint, Arc<Stall>)>> = Mutex::new(Vec::new());

    /// A commit held at a point: the committing thread reports its arrival and waits there
    /// until the test releases it (to show what others see meanwhile, and that they do not
    /// wait). Every wait of the test has a deadline, so a regression fails instead of hanging.
    #[derive(Debug)]
    pub struct Stall {
        arrived: (Mutex<mpsc::Sender<()>>, Mutex<mpsc::Receiver<()>>),
        released: (Mutex<mpsc::Sender<()>>, Mutex<mpsc::Receiver<()>>),
    }

    impl Stall {
        /// Waits up to `deadline` for the committing thread to be held at the point; false if
        /// it never got there.
        pub fn wait_until_held(&self, deadline: Duration) -> bool {
            self.arrived.1.lock().recv_timeout(deadline).is_ok()
        }

        /// Lets the held thread go on (or, if it has not arrived yet, lets it pass).
        pub fn release(&self) {
            let _ = self.released.0.lock().send(());
        }

        /// Called by the committing thread at the point.
        fn hold(&self) {
            let _ = self.arrived.0.lock().send(());
            let _ = self.released.1.lock().recv();
        }
    }

    fn channel() -> (Mutex<mpsc::Sender<()>>, Mutex<mpsc::Receiver<()>>) {
        let (tx, rx) = mpsc::channel();
        (Mutex::new(tx), Mutex::new(rx))
    }

    /// Arms a stall at `point` for datadir `dir`: the next operation of that datadir reaching the
    /// point waits there (see [`Stall`]), then goes on without a fault.
    pub fn arm_stall(dir: &Path, point: FaultPoint) -> Arc<Stall> {
        let stall = Arc::new(Stall {
            arrived: channel(),
            released: channel(),
        });
        STALLS
            .lock()
            .push((dir.to_path_buf(), point, Arc::clone(&stall)));
        stall
    }

    /// Arms `fault` at `point` for the datadir `dir`: it fires once, the next time an operation
    /// of that datadir reaches the point.
    pub fn arm(dir: &Path, point: FaultPoint, fault: Fault) {
        ARMED.lock().push((dir.to_path_buf(), point, fault));
    }

    /// Removes every fault and stall armed for `dir` that has not fired.
    pub fn disarm(dir: &Path) {
        ARMED.lock().retain(|(d, _, _)| d != dir);
        STALLS.lock().retain(|(d, _, _)| d != dir);
    }

    /// Holds the caller if a stall is armed at `point` for `dir`.
    pub fn stall(dir: &Path, point: FaultPoint) {
        let stall = {
            let mut stalls = STALLS.lock();
            stalls
                .iter()
                .position(|(d, p, _)| d == dir && *p == point)
                .map(|i| stalls.remove(i).2)
        };
        if let Some(stall) = stall {
            stall.hold();
        }
    }

    pub fn hit(dir: &Path, point: FaultPoint) -> io::Result<()> {
        stall(dir, point);
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
pub use armed::{Stall, arm, arm_stall, disarm, hit, stall};

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

/// `stall_point!(Point, dir)`: holds the caller while a test's stall is armed there (feature
/// `fault-injection`); nothing otherwise.
macro_rules! stall_point {
    ($point:ident, $dir:expr) => {{
        #[cfg(feature = "fault-injection")]
        $crate::fault::stall($dir, $crate::fault::FaultPoint::$point);
        #[cfg(not(feature = "fault-injection"))]
        {
            let _dir: &::std::path::Path = $dir;
        }
    }};
}
pub(crate) use stall_point;
