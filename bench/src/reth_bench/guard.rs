//! Which folders a `bench run` may reset, checked before anything is touched. A restore replaces
//! the whole datadir folder, so every datadir (and every restore source, which must outlive the
//! restores) is resolved to its real path and refused when it is:
//!
//! - given through `.` or `..` as its last component (`.`, `..`, `/data/x/.`);
//! - `/`, the home folder or a folder containing it, or the folder this command runs in or a
//!   folder containing it (what `.`, `..` and `~` resolve to);
//! - not a reth datadir (no `db/mdbx.dat`, what `migrate::datadir::Datadir::mdbx_file` names);
//! - in use: its `db/lock` names a running process other than this one;
//! - when restored, a mount point (a restore renames the datadir aside; a mount point cannot be);
//! - nested in the other side's datadir.
//!
//! A restore source must be a reth datadir not in use, and neither equal to, inside, nor
//! containing any datadir of the run. `--output` must not lie inside a datadir that is restored.
//! The datadirs themselves are checked by [`check_datadir`], which a caller runs once before and
//! once after finishing an interrupted restore (a datadir may be missing only in between).

use crate::reth_bench::orchestrate::{Reset, RunPlan, Setup};
use reth_hybrid_mdbx::lock::live_holder;
use reth_hybrid_migrate::datadir::Datadir;
use std::{
    io,
    os::unix::fs::MetadataExt,
    path::{Component, Path, PathBuf},
};

#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("--{flag} {given} cannot be resolved to a folder; pass the path of an existing folder")]
    Unresolvable {
        flag: String,
        given: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "--{flag} {given} names a folder through `.` or `..`; pass the datadir's own path (e.g. \
         /data/hoodi-hybrid)"
    )]
    DotPath { flag: String, given: PathBuf },
    #[error("--{flag} {given} is the root folder /; pass the datadir folder itself")]
    Root { flag: String, given: PathBuf },
    #[error(
        "--{flag} {given} resolves to {resolved}, which is the home folder {home} or contains \
         it; pass the datadir folder itself (e.g. {home}/hoodi-hybrid)"
    )]
    Home {
        flag: String,
        given: PathBuf,
        resolved: PathBuf,
        home: PathBuf,
    },
    #[error(
        "--{flag} {given} resolves to {resolved}, which is the folder this command runs in \
         ({cwd}) or contains it, and a reset replaces the whole datadir folder; run from another \
         folder and pass the datadir's own path"
    )]
    WorkingDir {
        flag: String,
        given: PathBuf,
        resolved: PathBuf,
        cwd: PathBuf,
    },
    #[error(
        "--{flag} {path} is not a reth datadir (it has no db/mdbx.dat); pass the folder that \
         holds reth's db/ folder"
    )]
    NotDatadir { flag: String, path: PathBuf },
    #[error(
        "--{flag} {path} is in use: its db/lock names pid {pid}, which is running; stop that \
         node first"
    )]
    Locked {
        flag: String,
        path: PathBuf,
        pid: u32,
    },
    #[error(
        "--{flag} {path} is a mount point, and a restore renames the datadir aside, which a mount \
         point cannot be; keep the datadir in a folder inside the mount (e.g. {path}/datadir)"
    )]
    MountPoint { flag: String, path: PathBuf },
    #[error(
        "--{flag} {source_dir} {relation} --{datadir_flag} {datadir}; every run replaces that \
         datadir, so the pristine copy would change or be lost with it: keep the copy outside \
         both datadirs"
    )]
    SourceOverlaps {
        flag: String,
        source_dir: PathBuf,
        relation: &'static str,
        datadir_flag: String,
        datadir: PathBuf,
    },
    #[error(
        "--baseline-datadir {baseline} and --candidate-datadir {candidate} are nested (one holds \
         the other), so resetting one would reset the other; use two separate folders"
    )]
    NestedDatadirs {
        baseline: PathBuf,
        candidate: PathBuf,
    },
    #[error(
        "--output {output} is inside --{flag} {datadir}, which every run replaces from its \
         pristine copy; pass an --output folder outside the datadirs"
    )]
    OutputInDatadir {
        output: PathBuf,
        flag: String,
        datadir: PathBuf,
    },
}

/// One side's folders, resolved to real paths.
#[derive(Debug, Clone)]
pub struct Target {
    pub side: &'static str,
    /// The datadir's real path (it may be missing while an interrupted restore is pending).
    pub datadir: PathBuf,
    /// The restore source's real path, when the side restores.
    pub restore_from: Option<PathBuf>,
}

impl Target {
    fn datadir_flag(&self) -> String {
        format!("{}-datadir", self.side)
    }
    fn source_flag(&self) -> String {
        format!("{}-restore-from", self.side)
    }
}

/// Whether the last component of `given` as typed is `.` or `..`.
fn ends_in_dot(given: &Path) -> bool {
    let bytes = given.as_os_str().as_encoded_bytes();
    let mut end = bytes.len();
    while end > 1 && bytes[end - 1] == b'/' {
        end -= 1;
    }
    let b = &bytes[..end];
    b == b"." || b == b".." || b.ends_with(b"/.") || b.ends_with(b"/..")
}

/// The real path of `given`: canonical if it exists, else its deepest existing ancestor's
/// canonical path with the missing plain components appended (a `..` in them is refused).
pub fn resolve(given: &Path) -> io::Result<PathBuf> {
    let abs = if given.is_absolute() {
        given.to_path_buf()
    } else {
        std::env::current_dir()?.join(given)
    };
    let mut existing = abs.as_path();
    let mut missing = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(mut real) => {
                real.extend(missing.iter().rev());
                return Ok(real);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match (existing.components().next_back(), existing.parent()) {
                    (Some(Component::Normal(name)), Some(parent)) => {
                        missing.push(name.to_os_string());
                        existing = parent;
                    }
                    _ => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Refuses a datadir path that is `/`, holds the home or working folder, or is given via `.`.
fn check_shape(flag: &str, given: &Path, resolved: &Path) -> Result<(), GuardError> {
    let flag = flag.to_string();
    if resolved.parent().is_none() {
        return Err(GuardError::Root {
            flag,
            given: given.to_path_buf(),
        });
    }
    if let Some(home) = std::env::var_os("HOME").and_then(|h| Path::new(&h).canonicalize().ok())
        && home.starts_with(resolved)
    {
        return Err(GuardError::Home {
            flag,
            given: given.to_path_buf(),
            resolved: resolved.to_path_buf(),
            home,
        });
    }
    if let Ok(cwd) = std::env::current_dir().and_then(|c| c.canonicalize())
        && cwd.starts_with(resolved)
    {
        return Err(GuardError::WorkingDir {
            flag,
            given: given.to_path_buf(),
            resolved: resolved.to_path_buf(),
            cwd,
        });
    }
    if ends_in_dot(given) {
        return Err(GuardError::DotPath {
            flag,
            given: given.to_path_buf(),
        });
    }
    Ok(())
}

/// Refuses a folder without `db/mdbx.dat`, and one whose `db/lock` names a running process.
fn check_reth_datadir(flag: &str, path: &Path) -> Result<(), GuardError> {
    if !Datadir::new(path).mdbx_file().is_file() {
        return Err(GuardError::NotDatadir {
            flag: flag.to_string(),
            path: path.to_path_buf(),
        });
    }
    if let Some(holder) = live_holder(&path.join("db")) {
        return Err(GuardError::Locked {
            flag: flag.to_string(),
            path: path.to_path_buf(),
            pid: holder.pid,
        });
    }
    Ok(())
}

fn resolve_datadir(side: &'static str, setup: &Setup) -> Result<Target, GuardError> {
    let flag = format!("{side}-datadir");
    let datadir = resolve(&setup.datadir).map_err(|source| GuardError::Unresolvable {
        flag: flag.clone(),
        given: setup.datadir.clone(),
        source,
    })?;
    check_shape(&flag, &setup.datadir, &datadir)?;
    let restore_from = match &setup.reset {
        Reset::Restore { from } => {
            let source_flag = format!("{side}-restore-from");
            let real = from
                .canonicalize()
                .map_err(|source| GuardError::Unresolvable {
                    flag: source_flag.clone(),
                    given: from.clone(),
                    source,
                })?;
            Some(real)
        }
        Reset::Unwind { .. } => None,
    };
    Ok(Target {
        side,
        datadir,
        restore_from,
    })
}

/// The checks that need no datadir to exist: path shapes, the restore sources, how the folders
/// relate, and `--output`. Reads only; run it before anything else.
pub fn check_paths(plan: &RunPlan) -> Result<[Target; 2], GuardError> {
    let targets = [
        resolve_datadir("baseline", &plan.baseline)?,
        resolve_datadir("candidate", &plan.candidate)?,
    ];
    let (a, b) = (&targets[0].datadir, &targets[1].datadir);
    if a != b && (a.starts_with(b) || b.starts_with(a)) {
        return Err(GuardError::NestedDatadirs {
            baseline: a.clone(),
            candidate: b.clone(),
        });
    }
    for t in &targets {
        let Some(source) = &t.restore_from else {
            continue;
        };
        for d in &targets {
            let relation = if source == &d.datadir {
                "is the same folder as"
            } else if source.starts_with(&d.datadir) {
                "is inside"
            } else if d.datadir.starts_with(source) {
                "contains"
            } else {
                continue;
            };
            return Err(GuardError::SourceOverlaps {
                flag: t.source_flag(),
                source_dir: source.clone(),
                relation,
                datadir_flag: d.datadir_flag(),
                datadir: d.datadir.clone(),
            });
        }
        check_reth_datadir(&t.source_flag(), source)?;
    }
    if let Ok(output) = resolve(&plan.output) {
        for t in targets.iter().filter(|t| t.restore_from.is_some()) {
            if output.starts_with(&t.datadir) {
                return Err(GuardError::OutputInDatadir {
                    output,
                    flag: t.datadir_flag(),
                    datadir: t.datadir.clone(),
                });
            }
        }
    }
    Ok(targets)
}

/// A datadir a run may reset: a reth datadir, not in use, and (when restored) not a mount point.
pub fn check_datadir(target: &Target) -> Result<(), GuardError> {
    let flag = target.datadir_flag();
    check_reth_datadir(&flag, &target.datadir)?;
    if target.restore_from.is_some() {
        let parent = target.datadir.parent().unwrap_or(Path::new("/"));
        let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
        if dev(&target.datadir) != dev(parent) {
            return Err(GuardError::MountPoint {
                flag,
                path: target.datadir.clone(),
            });
        }
    }
    Ok(())
}
