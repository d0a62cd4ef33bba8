//! reth's storage lock file (`<datadir>/db/lock`): `pid\nstart_time`. A lock is live only if a
//! process with that pid exists and started at that time (pids get reused). We write the same
//! format so a reth node refuses to open a datadir while reth-hybrid holds it, and vice versa.
//!
//! reth itself only checks the file, then writes it: two processes that both find a stale lock
//! both "win". We additionally hold an exclusive `flock` on the file for as long as the lock is
//! held, so among reth-hybrid processes (and handles within one process) exactly one holds a
//! datadir; the pid inside still keeps reth out, and a live reth's pid still keeps us out.

use crate::error::MdbxError;
use std::{
    fs::{self, File, OpenOptions},
    io,
    os::{
        fd::AsRawFd,
        unix::fs::{FileExt, MetadataExt, OpenOptionsExt},
    },
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

const LOCKFILE_NAME: &str = "lock";

/// How often `acquire` reopens the file after finding that the inode it locked was removed by the
/// holder that just released it. Each retry means another process released the lock meanwhile.
const MAX_ATTEMPTS: usize = 64;

/// How long `acquire` keeps trying while the file's `flock` is held by an open file that names
/// no live process. That is a racer between its `flock` and its pid write, or, in a process
/// that spawns children, a child between `fork` and `exec` that briefly holds a copy of a
/// descriptor another thread had open (the lock stays until the `exec` closes it).
const BUSY_PATIENCE: Duration = Duration::from_secs(2);
const BUSY_RETRY: Duration = Duration::from_millis(10);

/// A held storage lock: the open lock file with our `flock` on it. Removed on drop if it is
/// still ours.
#[derive(Debug)]
pub struct StorageLock {
    path: PathBuf,
    file: File,
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
///
/// Read-only opens use only this check, without `flock`: its purpose is to keep readers away
/// from a running reth (whose libmdbx lock format differs), and reth takes no `flock`. Taking
/// even a shared `flock` to probe would make a concurrent read-write `acquire` fail, and two
/// reth-hybrid processes already coordinate readers and writers through MDBX's own lock file.
pub fn live_holder(db_dir: &Path) -> Option<ProcessUid> {
    let contents = fs::read_to_string(db_dir.join(LOCKFILE_NAME)).ok()?;
    let uid = ProcessUid::parse(&contents)?;
    (uid.pid != std::process::id() && uid.is_live()).then_some(uid)
}

/// The pid and start time written in an open lock file, if it holds them.
fn read_uid(file: &File) -> Option<ProcessUid> {
    let mut buf = [0u8; 128];
    let n = file.read_at(&mut buf, 0).ok()?;
    ProcessUid::parse(std::str::from_utf8(&buf[..n]).ok()?)
}

/// Whether `file` is the inode that `path` names right now.
fn is_current(file: &File, path: &Path) -> io::Result<bool> {
    let held = file.metadata()?;
    match fs::metadata(path) {
        Ok(now) => Ok(now.dev() == held.dev() && now.ino() == held.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Outcome of a non-blocking exclusive `flock`.
enum Flock {
    Held,
    /// Another open file description holds it (another process, or another handle here).
    Taken,
    /// The filesystem does not support `flock`.
    Unsupported(io::Error),
}

fn try_flock(file: &File) -> io::Result<Flock> {
    loop {
        // SAFETY: flock on a descriptor we own; it has no memory effects.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Flock::Held);
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(code) if code == libc::EWOULDBLOCK || code == libc::EAGAIN => {
                return Ok(Flock::Taken);
            }
            Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL) => {
                return Ok(Flock::Unsupported(err));
            }
            _ => return Err(err),
        }
    }
}

impl StorageLock {
    /// Takes the lock, refusing if another process (or another handle in this process) holds it.
    ///
    /// Steps: open (create) `db/lock`, take a non-blocking exclusive `flock`, make sure the
    /// locked inode is still the one at the path (a holder releasing removes the file before it
    /// unlocks, so a racer may have locked a removed inode: it reopens), refuse if the file names
    /// a live other process (reth takes no `flock`), then write our pid and start time in place.
    pub fn acquire(db_dir: &Path) -> Result<Self, MdbxError> {
        Self::acquire_with_hook(db_dir, &mut || ())
    }

    /// [`Self::acquire`] that runs `between_open_and_flock` in the window where a holder that
    /// releases may remove the file this attempt has just opened. A seam for tests, which release
    /// the holder there to reach that race deterministically.
    #[doc(hidden)]
    pub fn acquire_with_hook(
        db_dir: &Path,
        between_open_and_flock: &mut dyn FnMut(),
    ) -> Result<Self, MdbxError> {
        let path = db_dir.join(LOCKFILE_NAME);
        let io_err = |source| MdbxError::Io {
            path: path.clone(),
            source,
        };
        let busy_until = Instant::now() + BUSY_PATIENCE;
        let mut attempts = 0;
        while attempts < MAX_ATTEMPTS {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o644)
                .open(&path)
                .map_err(io_err)?;
            between_open_and_flock();
            match try_flock(&file).map_err(io_err)? {
                Flock::Held => {}
                // A flock held on a file no longer at the path guards nothing (its holder
                // released and removed it; a child forked meanwhile may still hold a copy of
                // the descriptor until its exec): reopen.
                Flock::Taken if !is_current(&file, &path).map_err(io_err)? => {
                    attempts += 1;
                    continue;
                }
                Flock::Taken => match Self::held_elsewhere(db_dir, &file) {
                    MdbxError::LockBusy { .. } if Instant::now() < busy_until => {
                        drop(file);
                        std::thread::sleep(BUSY_RETRY);
                        continue;
                    }
                    held => return Err(held),
                },
                Flock::Unsupported(err) => {
                    // Such a filesystem still gets reth's own protection: the pid check below.
                    tracing::warn!(path = %path.display(), %err, "filesystem has no flock; storage lock falls back to the pid check only");
                }
            }
            // ORDER: the inode check comes after the flock: from here on no reth-hybrid process
            // can remove or replace this inode, so if it is current now it stays current.
            if !is_current(&file, &path).map_err(io_err)? {
                attempts += 1;
                continue;
            }
            if let Some(holder) = read_uid(&file)
                && holder.pid != std::process::id()
                && holder.is_live()
            {
                return Err(MdbxError::Locked {
                    path: db_dir.to_path_buf(),
                    pid: holder.pid,
                });
            }
            // Written over the old contents, then cut to length, so a reader (reth) never finds an
            // existing lock file empty. The trailing newline keeps a longer old second line from
            // running into ours meanwhile; reth reads two trimmed lines, so it accepts it.
            let own = ProcessUid::own()
                .map(|u| format!("{}\n{}\n", u.pid, u.start_time))
                .unwrap_or_else(|| format!("{}\n0\n", std::process::id()));
            file.write_all_at(own.as_bytes(), 0).map_err(io_err)?;
            file.set_len(own.len() as u64).map_err(io_err)?;
            file.sync_all().map_err(io_err)?;
            return Ok(Self { path, file });
        }
        Err(MdbxError::LockBusy {
            path: db_dir.to_path_buf(),
        })
    }

    /// The error for a lock whose `flock` another open file holds, naming the holder if the
    /// file already does.
    fn held_elsewhere(db_dir: &Path, file: &File) -> MdbxError {
        let path = db_dir.to_path_buf();
        match read_uid(file) {
            Some(uid) if uid.pid == std::process::id() => MdbxError::AlreadyOpen { path },
            Some(uid) if uid.is_live() => MdbxError::Locked { path, pid: uid.pid },
            // The holder has its flock but has not written its pid yet.
            _ => MdbxError::LockBusy { path },
        }
    }
}

impl Drop for StorageLock {
    fn drop(&mut self) {
        let current = is_current(&self.file, &self.path).unwrap_or(false);
        let ours = current && read_uid(&self.file).is_some_and(|u| u.pid == std::process::id());
        // ORDER: the file is removed while our flock is still held and unlocked only when
        // `self.file` closes after this function; a racer that opened this inode before the
        // removal and locks it after the close sees it is no longer at the path and reopens.
        if ours {
            if let Err(err) = fs::remove_file(&self.path) {
                tracing::warn!(path = %self.path.display(), %err, "could not remove storage lock");
            }
        } else if current {
            tracing::warn!(path = %self.path.display(), "storage lock file no longer names this process; leaving it");
        }
    }
}
