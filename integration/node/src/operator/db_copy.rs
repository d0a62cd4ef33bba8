//! `db copy`: reth's MDBX copy (`mdbx_env_copy`, its flags) together with reth-hybrid's RocksDB,
//! both at the same commit. reth's storage lock is held throughout, so no node can start and
//! commit between the two halves; a copy that fails part way is removed again.

use super::env::{Access, HybridEnvironment};
use reth_db::{lockfile::StorageLock, mdbx::ffi, version::db_version_file_path};
use reth_hybrid_hybrid::INTENT_LOG_FILE;
use reth_hybrid_rocksdb::HYBRID_ROCKSDB_DIR;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct CopyArgs {
    /// Destination file of the MDBX copy (it must not exist), as in reth. Given as
    /// `<new datadir>/db/mdbx.dat` (without `--rocksdb-dest`), the copy is a datadir: RocksDB
    /// goes to `<new datadir>/hybrid-rocksdb`, with reth's own (empty) RocksDB, the database
    /// version file and an empty intent log.
    dest: PathBuf,
    /// Where the copy of reth-hybrid's RocksDB goes (a new directory); needed unless `dest` is
    /// `<new datadir>/db/mdbx.dat`.
    #[arg(long, value_name = "DIR")]
    rocksdb_dest: Option<PathBuf>,
    /// Compact the database while copying (reclaims free space).
    #[arg(short, long)]
    compact: bool,
    /// Force dynamic size for the destination database.
    #[arg(short = 'd', long)]
    force_dynamic_size: bool,
    /// Throttle to avoid MVCC pressure on writers.
    #[arg(short = 'p', long)]
    throttle_mvcc: bool,
}

/// Where each half of the copy goes.
struct Destination {
    mdbx_file: PathBuf,
    rocksdb_dir: PathBuf,
    /// The new datadir, when `dest` is `<datadir>/db/mdbx.dat` and no `--rocksdb-dest` is given.
    datadir: Option<PathBuf>,
}

impl Destination {
    fn new(args: &CopyArgs) -> eyre::Result<Self> {
        let datadir = match &args.rocksdb_dest {
            Some(_) => None,
            None => Some(&args.dest)
                .filter(|dest| dest.file_name().is_some_and(|n| n == "mdbx.dat"))
                .and_then(|dest| dest.parent())
                .filter(|db| db.file_name().is_some_and(|n| n == "db"))
                .and_then(Path::parent)
                .map(Path::to_path_buf),
        };
        let rocksdb_dir = match (&args.rocksdb_dest, &datadir) {
            (Some(dir), _) => dir.clone(),
            (None, Some(datadir)) => datadir.join(HYBRID_ROCKSDB_DIR),
            (None, None) => eyre::bail!(
                "a hybrid datadir's copy has two halves and {} names only the MDBX one: pass \
                 --rocksdb-dest DIR for reth-hybrid's RocksDB, or copy to <new datadir>/db/mdbx.dat \
                 (RocksDB then goes to <new datadir>/{HYBRID_ROCKSDB_DIR})",
                args.dest.display()
            ),
        };
        let mut taken = vec![args.dest.clone(), rocksdb_dir.clone()];
        if let Some(datadir) = &datadir {
            taken.extend([
                db_version_file_path(datadir.join("db")),
                datadir.join("rocksdb"),
                datadir.join(INTENT_LOG_FILE),
            ]);
        }
        for path in taken {
            eyre::ensure!(
                !path.exists(),
                "{} exists: the copy writes only new files and folders (nothing was copied)",
                path.display()
            );
        }
        Ok(Self {
            mdbx_file: args.dest.clone(),
            rocksdb_dir,
            datadir,
        })
    }
}

/// What a copy created, so that a failed one removes exactly that (newest first).
#[derive(Default)]
pub(super) struct Created(Vec<PathBuf>);

impl Created {
    /// Creates `dir` and its missing ancestors, recording each.
    pub(super) fn dir_all(&mut self, dir: &Path) -> std::io::Result<()> {
        // A relative path's last ancestor is "", which never "exists".
        let missing: Vec<&Path> = dir
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
            .collect();
        for d in missing.into_iter().rev() {
            std::fs::create_dir(d)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", d.display())))?;
            self.0.push(d.to_path_buf());
        }
        Ok(())
    }

    /// Records `path` before something writes it.
    fn path(&mut self, path: PathBuf) -> PathBuf {
        self.0.push(path.clone());
        path
    }

    pub(super) fn remove(self) {
        for path in self.0.into_iter().rev() {
            let _ = match path.is_dir() {
                true => std::fs::remove_dir_all(&path),
                false => std::fs::remove_file(&path),
            };
        }
    }
}

pub fn run(
    args: CopyArgs,
    env: &super::Env,
    data_dir: &reth_node_core::dirs::ChainPath<reth_node_core::dirs::DataDirPath>,
    runtime: reth_tasks::Runtime,
) -> eyre::Result<()> {
    let dest = Destination::new(&args)?;
    let db_dir = data_dir.db();
    // Held until both halves are copied: a node that starts meanwhile finds the datadir taken.
    let _lock = StorageLock::try_acquire(&db_dir).map_err(|e| {
        eyre::eyre!(
            "{}: stop the node first; a hybrid copy must not race its commits ({e})",
            db_dir.display()
        )
    })?;
    // The read-only open's refusals: not a hybrid datadir, a commit in flight.
    let source = HybridEnvironment::init(env, Access::ReadOnly, runtime)?;
    let mut created = Created::default();
    if let Err(e) = copy_halves(&args, &dest, &source, data_dir, &mut created) {
        created.remove();
        return Err(e.wrap_err("the copy failed and what it had written was removed"));
    }
    println!("Done.");
    if dest.datadir.is_some() {
        println!(
            "Static files are not part of `db copy` (as in reth): copy {} to the new datadir too.",
            data_dir.static_files().display()
        );
    }
    Ok(())
}

fn copy_halves(
    args: &CopyArgs,
    dest: &Destination,
    source: &HybridEnvironment,
    data_dir: &reth_node_core::dirs::ChainPath<reth_node_core::dirs::DataDirPath>,
    created: &mut Created,
) -> eyre::Result<()> {
    let hybrid = source.provider_factory.db_ref().engine();
    if let Some(parent) = dest.mdbx_file.parent() {
        created.dir_all(parent)?;
    }
    println!("Copying database to {} ...", dest.mdbx_file.display());
    copy_mdbx(
        args,
        hybrid.primary().env(),
        &created.path(dest.mdbx_file.clone()),
    )?;
    println!(
        "Copying reth-hybrid's RocksDB to {} ...",
        dest.rocksdb_dir.display()
    );
    created.dir_all(&dest.rocksdb_dir)?;
    let files = copy_rocksdb(
        &data_dir.data_dir().join(HYBRID_ROCKSDB_DIR),
        &dest.rocksdb_dir,
    )?;
    println!("{files} RocksDB files (SST files hard-linked where the filesystem allows)");
    if let Some(datadir) = &dest.datadir {
        // reth opens its own RocksDB in every layout (empty in v1, which the open checked).
        let upstream = data_dir.rocksdb();
        if upstream.is_dir() {
            let to = datadir.join("rocksdb");
            created.dir_all(&to)?;
            copy_rocksdb(&upstream, &to)?;
        }
        let version = created.path(db_version_file_path(datadir.join("db")));
        std::fs::copy(db_version_file_path(data_dir.db()), &version)?;
        // The source's intent log is empty (the open refuses one in flight): so is the copy's.
        std::fs::File::create(created.path(datadir.join(INTENT_LOG_FILE)))?;
    }
    Ok(())
}

fn copy_mdbx(args: &CopyArgs, env: &reth_db::DatabaseEnv, dest: &Path) -> eyre::Result<()> {
    let mut flags: ffi::MDBX_copy_flags_t = ffi::MDBX_CP_DEFAULTS;
    if args.compact {
        flags |= ffi::MDBX_CP_COMPACT;
    }
    if args.force_dynamic_size {
        flags |= ffi::MDBX_CP_FORCE_DYNAMIC_SIZE;
    }
    if args.throttle_mvcc {
        flags |= ffi::MDBX_CP_THROTTLE_MVCC;
    }
    let dest_str = dest
        .to_str()
        .ok_or_else(|| eyre::eyre!("destination path must be valid UTF-8"))?;
    let dest_c = std::ffi::CString::new(dest_str)?;
    // SAFETY: the environment outlives the call; `dest_c` is a NUL-terminated path.
    let rc = env.with_raw_env_ptr(|ptr| unsafe { ffi::mdbx_env_copy(ptr, dest_c.as_ptr(), flags) });
    if rc != 0 {
        // SAFETY: mdbx_strerror returns a static NUL-terminated string for any code.
        let message = unsafe { std::ffi::CStr::from_ptr(ffi::mdbx_strerror(rc)) };
        eyre::bail!(
            "mdbx_env_copy failed with error code {rc}: {}",
            message.to_string_lossy()
        );
    }
    Ok(())
}

/// Copies a RocksDB that no process writes (the storage lock is held and the open was
/// read-only): its files are then one consistent state, as a checkpoint's are. SST files are
/// immutable, so they are hard-linked; the manifest, WAL and options are copied. RocksDB's own
/// info logs, its `LOCK` and the spill scratch of a killed process are left out.
fn copy_rocksdb(from: &Path, to: &Path) -> eyre::Result<usize> {
    let mut files = 0;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let name_str = name.to_string_lossy();
        if !entry.file_type()?.is_file() || name_str == "LOCK" || name_str.starts_with("LOG") {
            continue;
        }
        let target = to.join(&name);
        let linked =
            name_str.ends_with(".sst") && std::fs::hard_link(entry.path(), &target).is_ok();
        if !linked {
            std::fs::copy(entry.path(), &target)?;
            std::fs::File::open(&target)?.sync_all()?;
        }
        files += 1;
    }
    let dir = std::fs::File::open(to)?;
    dir.sync_all()?;
    Ok(files)
}
