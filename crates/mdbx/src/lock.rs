//! reth's storage lock file (`<datadir>/db/lock`): `pid\nstart_time`. A lock is live only if a
//! process with that pid exists and started at that time (pids get reused). We write the same
//! format so a reth node refuses to open a datadir while reth-hybrid holds it, and vice versa.

use crate::error::MdbxError;
use std::{
    fs,
    path::{Path, PathBuf},
};

const LOCKFILE_NAME: &str = "lock";

/// A held storage lock; removed on drop if it is still ours.
#[derive(Debug)]
pub struct StorageLock {
    path: PathBuf,
}

/// Pid and start time (unix seconds) of a process, as reth's lock records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessUid {
    pub pid: u32,
    pub start_time: u64,
}

impl ProcessUid {
    pub fn own() -> Option<Self> {
        Self::of(std::process::id())
    }

    /// The process with `pid`, if it runs (Linux `/proc`; elsewhere `None`).
    pub fn of(pid: u32) -> Option<Self> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Field 22 (starttime, clock ticks since boot) comes after the parenthesised name.
        let after_name = &stat[stat.rfind(')')? + 2..];
        let ticks: u64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
        let boot = fs::read_to_string("/proc/stat").ok()?;
        let btime: u64 = boot
            .lines()
            .find_map(|l| l.strip_prefix("btime "))?
            .trim()
            .parse()
            .ok()?;
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let hz = if hz > 0 { hz as u64 } else { 100 };
        Some(Self {
            pid,
            start_time: btime + ticks / hz,
        })
    }

    fn parse(contents: &str) -> Option<Self> {
        let mut lines = contents.lines();
        let pid = lines.next()?.trim().parse().ok()?;
        let start_time = lines.next()?.trim().parse().ok()?;
        Some(Self { pid, start_time })
    }

    /// Still running: same pid and same start time (a second of slack for rounding).
    pub fn is_live(&self) -> bool {
        Self::of(self.pid).is_some_and(|p| p.start_time.abs_diff(self.start_time) <= 1)
    }
}

/// The live holder of the lock in `db_dir`, if any (our own process does not count).
pub fn live_holder(db_dir: &Path) -> Option<ProcessUid> {
    let contents = fs::read_to_string(db_dir.join(LOCKFILE_NAME)).ok()?;
    let uid = ProcessUid::parse(&contents)?;
    (uid.pid != std::process::id() && uid.is_live()).then_some(uid)
}

impl StorageLock {
    /// Takes the lock, refusing if a live process holds it.
    pub fn acquire(db_dir: &Path) -> Result<Self, MdbxError> {
        if let Some(holder) = live_holder(db_dir) {
            return Err(MdbxError::Locked {
                path: db_dir.to_path_buf(),
                pid: holder.pid,
            });
        }
        let path = db_dir.join(LOCKFILE_NAME);
        let own = ProcessUid::own()
            .map(|u| format!("{}\n{}", u.pid, u.start_time))
            .unwrap_or_else(|| format!("{}\n0", std::process::id()));
        fs::write(&path, own).map_err(|source| MdbxError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(Self { path })
    }
}

impl Drop for StorageLock {
    fn drop(&mut self) {
        let ours = fs::read_to_string(&self.path)
            .ok()
            .and_then(|c| ProcessUid::parse(&c))
            .is_some_and(|u| u.pid == std::process::id());
        if ours && let Err(err) = fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), %err, "could not remove storage lock");
        }
    }
}
