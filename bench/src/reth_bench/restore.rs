//! Replacing a datadir with a copy of a pristine one, so that a kill at any moment leaves one
//! complete datadir under a known name, and the next run finishes or undoes what was left.
//!
//! A restore of `<parent>/<name>` works in a folder it creates beside the datadir, the work folder
//! `W = <parent>/<name>.reth-hybrid-restore-<pid>`, with `create_dir` (which fails if it exists).
//! The first thing written into `W` is the marker file [`MARKER`]: a work folder holding the
//! marker is provably this tool's, and nothing else is ever deleted, except an empty folder. The
//! steps ([`SwapStep`]), each made durable (fsync) before the next, and what a kill leaves:
//!
//! | killed              | `<name>` | in `W` besides the marker     | the next run ([`recover`])  |
//! |---------------------|----------|-------------------------------|-----------------------------|
//! | in `CreateWorkDir`  | old      | nothing (maybe no marker yet) | removes `W`                 |
//! | in or after `Copy`  | old      | `partial/` or complete `new/` | removes `W`                 |
//! | after `MoveOldAside`| missing  | complete `new/`, `old/`       | moves `new/` in, removes `W`|
//! | after `MoveNewIn`   | new      | `old/`                        | removes `W`                 |
//! | in `RemoveOld`      | new      | part of `old/`; or W is empty | removes `W`                 |
//!
//! `new/` only ever appears complete (the copy goes to `partial/`, is fsynced, then renamed), so
//! whenever `<name>` is missing, `W/new` or `W/old` is a complete datadir. A work folder of a
//! process still running is refused (two runs on one datadir); one without the marker that is not
//! empty, or a state no restore leaves (`<name>` present next to both `new/` and `old/`, or
//! `<name>` missing with neither), is named in an error and left alone.

use std::{
    fs::File,
    io::{self, Write},
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

/// The file that proves a work folder was created by this tool (written first, removed last).
pub const MARKER: &str = "RETH-HYBRID-RESTORE";
const WORK_INFIX: &str = ".reth-hybrid-restore-";
const PARTIAL: &str = "partial";
const NEW: &str = "new";
const OLD: &str = "old";

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("{path} is not a datadir folder a restore can replace; pass the datadir's own path")]
    BadPath { path: PathBuf },
    #[error("restoring {datadir}: {action} failed; {state}")]
    Step {
        datadir: PathBuf,
        action: String,
        state: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "copying {from} to {to} failed ({status}), see {log}; the datadir is untouched, and the \
         next bench run removes the partial copy"
    )]
    Copy {
        from: PathBuf,
        to: PathBuf,
        status: String,
        log: PathBuf,
    },
    #[error(
        "{work} belongs to a restore by pid {pid}, which is still running; let that bench run \
         finish (or stop it), then run again"
    )]
    Concurrent { work: PathBuf, pid: u32 },
    #[error(
        "{work} is named like a restore work folder but lacks the marker {MARKER} that \
         reth-hybrid writes into the folders it creates, so it is left alone; check what it \
         holds, then move or delete it yourself"
    )]
    Unproven { work: PathBuf },
    #[error(
        "{datadir} exists and {work} holds both a copy (new/) and a replaced datadir (old/), \
         which no restore leaves, so something else changed them; keep the one you want as \
         {datadir} and remove {work} yourself"
    )]
    Ambiguous { datadir: PathBuf, work: PathBuf },
    #[error(
        "{datadir} is missing and {work} holds no complete datadir to put back; restore it from \
         your pristine copy (`cp -a --reflink=auto <copy> {datadir}`), then remove {work}"
    )]
    Missing { datadir: PathBuf, work: PathBuf },
}

/// The steps of a restore, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapStep {
    /// `create_dir(W)`, then the marker, both fsynced.
    CreateWorkDir,
    /// `cp -a --reflink=auto <source> W/partial`, fsync of every file, rename to `W/new`.
    Copy,
    /// `rename(<datadir>, W/old)`.
    MoveOldAside,
    /// `rename(W/new, <datadir>)`.
    MoveNewIn,
    /// Removes `W/old`, then the marker, then `W`.
    RemoveOld,
}

impl SwapStep {
    pub const ALL: [SwapStep; 5] = [
        SwapStep::CreateWorkDir,
        SwapStep::Copy,
        SwapStep::MoveOldAside,
        SwapStep::MoveNewIn,
        SwapStep::RemoveOld,
    ];
}

fn split(datadir: &Path) -> Result<(&Path, String), RestoreError> {
    match (datadir.parent(), datadir.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => {
            Ok((parent, name.to_string_lossy().into_owned()))
        }
        _ => Err(RestoreError::BadPath {
            path: datadir.to_path_buf(),
        }),
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// fsyncs every file and folder under `path` (symlinks are not followed).
fn sync_tree(path: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            sync_tree(&entry?.path())?;
        }
        sync_dir(path)
    } else if meta.is_file() {
        File::open(path)?.sync_all()
    } else {
        Ok(())
    }
}

/// A restore in progress: run it with [`Swap::run`], or step by step with [`Swap::step`]
/// (dropping it between steps leaves what a kill there would).
#[derive(Debug)]
pub struct Swap {
    datadir: PathBuf,
    parent: PathBuf,
    source: PathBuf,
    work: PathBuf,
    log: PathBuf,
    next: usize,
}

impl Swap {
    /// A restore of `datadir` (a real path, as `guard` resolves it) from `source`; `cp`'s
    /// output goes to `log`.
    pub fn new(datadir: &Path, source: &Path, log: &Path) -> Result<Self, RestoreError> {
        let (parent, name) = split(datadir)?;
        let work = parent.join(format!("{name}{WORK_INFIX}{}", std::process::id()));
        Ok(Self {
            datadir: datadir.to_path_buf(),
            parent: parent.to_path_buf(),
            source: source.to_path_buf(),
            work,
            log: log.to_path_buf(),
            next: 0,
        })
    }

    pub fn work_dir(&self) -> &Path {
        &self.work
    }

    fn fail(&self, action: String, state: &str) -> impl FnOnce(io::Error) -> RestoreError + use<> {
        let datadir = self.datadir.clone();
        let state = state.replace("{W}", &self.work.display().to_string());
        move |source| RestoreError::Step {
            datadir,
            action,
            state,
            source,
        }
    }

    /// Runs the next step and returns it; `Ok(None)` once the restore is done.
    pub fn step(&mut self) -> Result<Option<SwapStep>, RestoreError> {
        let Some(&step) = SwapStep::ALL.get(self.next) else {
            return Ok(None);
        };
        const UNTOUCHED: &str = "the datadir is untouched, and the next bench run removes {W}";
        let (w, parent) = (self.work.clone(), self.parent.clone());
        match step {
            SwapStep::CreateWorkDir => {
                let fail = |what: &str| self.fail(format!("{what} {}", w.display()), UNTOUCHED);
                std::fs::create_dir(&w).map_err(self.fail(
                    format!("creating {}", w.display()),
                    "the datadir is untouched",
                ))?;
                // ORDER: the marker is written right after the folder, so from here on the
                // folder is provably ours; a kill before it leaves an empty folder, which
                // `recover` removes with `remove_dir` (it cannot remove anything else).
                let marker = w.join(MARKER);
                let mut f = File::create(&marker).map_err(fail("writing the marker in"))?;
                writeln!(
                    f,
                    "restore of {} from {} by reth-hybrid bench run, pid {}",
                    self.datadir.display(),
                    self.source.display(),
                    std::process::id()
                )
                .and_then(|()| f.sync_all())
                .map_err(fail("writing the marker in"))?;
                sync_dir(&w)
                    .and_then(|()| sync_dir(&parent))
                    .map_err(fail("syncing"))?;
            }
            SwapStep::Copy => {
                let partial = w.join(PARTIAL);
                let out = File::create(&self.log)
                    .map_err(self.fail(format!("creating {}", self.log.display()), UNTOUCHED))?;
                let err = out
                    .try_clone()
                    .map_err(self.fail(format!("opening {}", self.log.display()), UNTOUCHED))?;
                let status = Command::new("cp")
                    .arg("-a")
                    .arg("--reflink=auto")
                    .arg(&self.source)
                    .arg(&partial)
                    .stdout(Stdio::from(out))
                    .stderr(Stdio::from(err))
                    .status()
                    .map_err(self.fail("running cp".into(), UNTOUCHED))?;
                if !status.success() {
                    return Err(RestoreError::Copy {
                        from: self.source.clone(),
                        to: partial,
                        status: status.to_string(),
                        log: self.log.clone(),
                    });
                }
                // ORDER: every copied file is durable before the copy gets the name `new`, so
                // `new/` is complete whenever it exists, even after a power cut.
                sync_tree(&partial)
                    .map_err(self.fail(format!("syncing {}", partial.display()), UNTOUCHED))?;
                let new = w.join(NEW);
                std::fs::rename(&partial, &new)
                    .and_then(|()| sync_dir(&w))
                    .map_err(self.fail(format!("renaming {}", partial.display()), UNTOUCHED))?;
            }
            SwapStep::MoveOldAside => {
                // ORDER: a kill after this rename leaves the datadir's name free, the old datadir
                // in W/old and the complete copy in W/new; `recover` renames W/new in.
                std::fs::rename(&self.datadir, w.join(OLD))
                    .and_then(|()| sync_dir(&parent))
                    .and_then(|()| sync_dir(&w))
                    .map_err(self.fail(
                        format!("moving it to {}", w.join(OLD).display()),
                        "if it is missing now, the next bench run puts the copy in {W}/new in \
                         its place",
                    ))?;
            }
            SwapStep::MoveNewIn => {
                std::fs::rename(w.join(NEW), &self.datadir)
                    .and_then(|()| sync_dir(&parent))
                    .and_then(|()| sync_dir(&w))
                    .map_err(self.fail(
                        format!("moving {} in", w.join(NEW).display()),
                        "the copy is in {W}/new and the old datadir in {W}/old; the next bench \
                         run moves the copy in",
                    ))?;
            }
            SwapStep::RemoveOld => {
                remove_work(&w).map_err(self.fail(
                    format!("removing {}", w.display()),
                    "the datadir is restored; the next bench run removes what is left of {W}",
                ))?;
            }
        }
        self.next += 1;
        Ok(Some(step))
    }

    pub fn run(mut self) -> Result<(), RestoreError> {
        while self.step()?.is_some() {}
        Ok(())
    }
}

/// Removes a work folder holding the marker: its contents, then the marker, then the folder.
/// ORDER: the marker goes last, so a kill midway leaves a folder that is still provably ours
/// (or an empty one).
fn remove_work(work: &Path) -> io::Result<()> {
    for sub in [PARTIAL, NEW, OLD] {
        let p = work.join(sub);
        if p.exists() {
            std::fs::remove_dir_all(&p)?;
        }
    }
    sync_dir(work)?;
    std::fs::remove_file(work.join(MARKER))?;
    std::fs::remove_dir(work)?;
    if let Some(parent) = work.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

/// Whether a process with this pid runs (pids get reused, so a stale one may look alive: that
/// refuses, never deletes).
fn pid_runs(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The work folders of interrupted restores of `datadir`, with the pid in their names.
pub fn leftovers(datadir: &Path) -> Result<Vec<(PathBuf, u32)>, RestoreError> {
    let (parent, name) = split(datadir)?;
    let prefix = format!("{name}{WORK_INFIX}");
    let entries = std::fs::read_dir(parent).map_err(|source| RestoreError::Step {
        datadir: datadir.to_path_buf(),
        action: format!("listing {}", parent.display()),
        state: "nothing was changed".into(),
        source,
    })?;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.push((entry.path(), pid));
        }
    }
    found.sort();
    Ok(found)
}

/// Finishes or undoes interrupted restores of `datadir` (see the module docs), logging each
/// action; refuses, changing nothing of that folder, what it cannot prove safe.
pub fn recover(datadir: &Path, log: &mut dyn Write) -> Result<(), RestoreError> {
    for (work, pid) in leftovers(datadir)? {
        if pid != std::process::id() && pid_runs(pid) {
            return Err(RestoreError::Concurrent { work, pid });
        }
        let io_err = |action: String| {
            let datadir = datadir.to_path_buf();
            move |source| RestoreError::Step {
                datadir,
                action,
                state: "no complete datadir was removed; fix the cause and run again".into(),
                source,
            }
        };
        if !work.join(MARKER).exists() {
            let empty = std::fs::read_dir(&work)
                .map_err(io_err(format!("listing {}", work.display())))?
                .next()
                .is_none();
            if !empty {
                return Err(RestoreError::Unproven { work });
            }
            // remove_dir removes only an empty folder: nothing can be lost.
            std::fs::remove_dir(&work).map_err(io_err(format!("removing {}", work.display())))?;
            let _ = writeln!(
                log,
                "removed {}, left empty by an interrupted restore",
                work.display()
            );
            continue;
        }
        let (new, old) = (work.join(NEW), work.join(OLD));
        if datadir.exists() {
            if new.exists() && old.exists() {
                return Err(RestoreError::Ambiguous {
                    datadir: datadir.to_path_buf(),
                    work,
                });
            }
        } else if new.exists() {
            std::fs::rename(&new, datadir)
                .and_then(|()| sync_dir(datadir.parent().unwrap_or(Path::new("/"))))
                .map_err(io_err(format!("moving {} in", new.display())))?;
            let _ = writeln!(
                log,
                "finished an interrupted restore: moved its complete copy {} to {}",
                new.display(),
                datadir.display()
            );
        } else if old.exists() {
            std::fs::rename(&old, datadir)
                .and_then(|()| sync_dir(datadir.parent().unwrap_or(Path::new("/"))))
                .map_err(io_err(format!("moving {} back", old.display())))?;
            let _ = writeln!(
                log,
                "undid an interrupted restore: moved the datadir {} back to {}",
                old.display(),
                datadir.display()
            );
        } else {
            return Err(RestoreError::Missing {
                datadir: datadir.to_path_buf(),
                work,
            });
        }
        remove_work(&work).map_err(io_err(format!("removing {}", work.display())))?;
        let _ = writeln!(
            log,
            "removed {}, the work folder of an interrupted restore of {}",
            work.display(),
            datadir.display()
        );
    }
    Ok(())
}
