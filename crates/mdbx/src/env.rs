//! Opening and creating reth-format MDBX datadirs with reth's environment settings.

use crate::{
    error::{MdbxCode, MdbxError, info},
    lock::StorageLock,
    tx::{MdbxTx, MdbxTxMut},
};
use mdbx_sys as ffi;
use reth_hybrid_api::{
    DatabaseError, Tables,
    raw::{RawEngine, RawResult},
};
use std::{
    ffi::CString,
    fs,
    path::{Path, PathBuf},
    ptr,
    sync::Arc,
};

/// reth's `database.version`.
pub const DB_VERSION: u32 = 2;
const GIB: isize = 1 << 30;
const TIB: isize = 1 << 40;

/// Map size limits. reth uses 0..8 TiB in 4 GiB steps; tests and tools use smaller steps so a
/// scratch datadir does not reserve gigabytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub max_size_bytes: isize,
    pub growth_step_bytes: isize,
}

impl Geometry {
    /// reth's production geometry.
    pub const RETH: Self = Self {
        max_size_bytes: 8 * TIB,
        growth_step_bytes: 4 * GIB,
    };
    /// Up to 1 TiB in 4 MiB steps: for tests, generated datadirs and tools.
    pub const SMALL: Self = Self {
        max_size_bytes: TIB,
        growth_step_bytes: 4 << 20,
    };
}

/// How to open a datadir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MdbxOptions {
    pub read_only: bool,
    /// Create `db/`, `database.version` and the environment if absent.
    pub create: bool,
    /// `None` keeps the geometry the datadir records. libmdbx preallocates each growth step
    /// (`fallocate`), so imposing reth's 4 GiB step on a small datadir would reserve 4 GiB of
    /// disk at its next commit; reth applies its own geometry when it opens the datadir.
    pub geometry: Option<Geometry>,
}

impl MdbxOptions {
    pub const fn read_only() -> Self {
        Self {
            read_only: true,
            create: false,
            geometry: None,
        }
    }

    /// An existing datadir, its recorded geometry kept.
    pub const fn read_write() -> Self {
        Self {
            read_only: false,
            create: false,
            geometry: None,
        }
    }

    /// Created if absent, with reth's geometry.
    pub const fn create() -> Self {
        Self {
            read_only: false,
            create: true,
            geometry: Some(Geometry::RETH),
        }
    }

    pub const fn with_geometry(mut self, geometry: Geometry) -> Self {
        self.geometry = Some(geometry);
        self
    }
}

/// An open MDBX environment and the DBI handle of every table present.
pub(crate) struct EnvInner {
    pub(crate) env: *mut ffi::MDBX_env,
    dbis: [Option<ffi::MDBX_dbi>; Tables::COUNT],
    pub(crate) read_only: bool,
    datadir: PathBuf,
    _lock: Option<StorageLock>,
}

// SAFETY: the environment handle is thread-safe in MDBX; it is opened with NOSTICKYTHREADS so
// transactions may move between threads, and our transactions serialise their own use.
unsafe impl Send for EnvInner {}
// SAFETY: as above; EnvInner is immutable after open.
unsafe impl Sync for EnvInner {}

impl EnvInner {
    pub(crate) fn dbi(&self, table: Tables) -> RawResult<ffi::MDBX_dbi> {
        self.dbis[table as usize].ok_or_else(|| {
            DatabaseError::Open(
                reth_hybrid_api::DatabaseErrorInfo::new(
                    format!("table {table} does not exist in {}", self.datadir.display()),
                    ffi::MDBX_NOTFOUND,
                )
                .with_engine("mdbx"),
            )
        })
    }
}

impl Drop for EnvInner {
    fn drop(&mut self) {
        // SAFETY: env came from mdbx_env_create and is closed exactly once; every transaction
        // and cursor holds an Arc to this struct, so none outlives it.
        unsafe { ffi::mdbx_env_close_ex(self.env, false) };
    }
}

impl std::fmt::Debug for EnvInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MdbxEnv")
            .field("datadir", &self.datadir)
            .field("read_only", &self.read_only)
            .finish()
    }
}

/// The MDBX engine over `<datadir>/db`.
#[derive(Debug, Clone)]
pub struct MdbxEngine {
    pub(crate) inner: Arc<EnvInner>,
}

fn check(rc: i32, path: &Path) -> Result<(), MdbxError> {
    if rc == ffi::MDBX_SUCCESS {
        Ok(())
    } else {
        Err(MdbxError::Open {
            path: path.to_path_buf(),
            code: MdbxCode { code: rc },
        })
    }
}

fn check_version(db_dir: &Path, create: bool) -> Result<(), MdbxError> {
    let path = db_dir.join("database.version");
    match fs::read_to_string(&path) {
        Ok(s) if s.trim() == DB_VERSION.to_string() => Ok(()),
        Ok(s) => Err(MdbxError::UnsupportedVersion {
            path,
            found: s.trim().to_string(),
            supported: DB_VERSION,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
            fs::write(&path, DB_VERSION.to_string())
                .map_err(|source| MdbxError::Io { path, source })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(MdbxError::UnsupportedVersion {
            path,
            found: "missing".into(),
            supported: DB_VERSION,
        }),
        Err(source) => Err(MdbxError::Io { path, source }),
    }
}

impl MdbxEngine {
    /// Creates (if needed) and opens `<datadir>/db` read-write with every table.
    pub fn create(datadir: &Path) -> Result<Self, MdbxError> {
        Self::open(datadir, MdbxOptions::create())
    }

    /// Opens `<datadir>/db` read-only; tables the datadir lacks are reported as missing.
    pub fn open_read_only(datadir: &Path) -> Result<Self, MdbxError> {
        Self::open(datadir, MdbxOptions::read_only())
    }

    pub fn open(datadir: &Path, options: MdbxOptions) -> Result<Self, MdbxError> {
        let db_dir = datadir.join("db");
        if options.create {
            fs::create_dir_all(&db_dir).map_err(|source| MdbxError::Io {
                path: db_dir.clone(),
                source,
            })?;
        } else if !db_dir.join("mdbx.dat").exists() {
            return Err(MdbxError::Missing { path: db_dir });
        }
        // ORDER: the lock is checked before MDBX touches the files, so a datadir held by a node
        // is refused without any change on disk.
        // Read-only opens refuse too: reth bundles libmdbx 0.13 and we 0.14, whose lock files
        // (mdbx.lck) differ, so even a reader must not share a datadir with a running node.
        let lock = if options.read_only {
            if let Some(holder) = crate::lock::live_holder(&db_dir) {
                return Err(MdbxError::Locked {
                    path: db_dir,
                    pid: holder.pid,
                });
            }
            None
        } else {
            Some(StorageLock::acquire(&db_dir)?)
        };
        check_version(&db_dir, options.create && !options.read_only)?;

        quiet_library_logging();
        let mut env = ptr::null_mut();
        // SAFETY: plain FFI calls on a handle we own; every error path closes the handle.
        unsafe {
            check(ffi::mdbx_env_create(&mut env), &db_dir)?;
            let guard = EnvGuard(env);
            check(
                ffi::mdbx_env_set_option(env, ffi::MDBX_opt_max_db, 256),
                &db_dir,
            )?;
            check(
                ffi::mdbx_env_set_option(env, ffi::MDBX_opt_max_readers, 32_000),
                &db_dir,
            )?;
            check(
                ffi::mdbx_env_set_option(env, ffi::MDBX_opt_rp_augment_limit, 256 * 1024),
                &db_dir,
            )?;
            let mut flags = ffi::MDBX_NORDAHEAD | ffi::MDBX_NOSTICKYTHREADS;
            if options.read_only {
                flags |= ffi::MDBX_RDONLY;
            } else {
                flags |= ffi::MDBX_WRITEMAP | ffi::MDBX_SYNC_DURABLE;
                // Without a call, libmdbx takes the geometry from the file's meta page; any
                // call (even with -1s, which mean libmdbx's defaults before an open) replaces it.
                if let Some(geometry) = options.geometry {
                    check(
                        ffi::mdbx_env_set_geometry(
                            env,
                            -1,
                            -1,
                            geometry.max_size_bytes,
                            geometry.growth_step_bytes,
                            0,
                            4096,
                        ),
                        &db_dir,
                    )?;
                }
            }
            let c_path = CString::new(db_dir.to_string_lossy().as_bytes()).map_err(|_| {
                MdbxError::Missing {
                    path: db_dir.clone(),
                }
            })?;
            check(
                ffi::mdbx_env_open(env, c_path.as_ptr(), flags, 0o644),
                &db_dir,
            )?;
            let dbis = open_tables(env, options.read_only, &db_dir)?;
            std::mem::forget(guard);
            Ok(Self {
                inner: Arc::new(EnvInner {
                    env,
                    dbis,
                    read_only: options.read_only,
                    datadir: datadir.to_path_buf(),
                    _lock: lock,
                }),
            })
        }
    }

    /// Whether the datadir has this table (a reth v2.2 datadir lacks the two BAL tables).
    pub fn has_table(&self, table: Tables) -> bool {
        self.inner.dbis[table as usize].is_some()
    }

    pub fn datadir(&self) -> &Path {
        &self.inner.datadir
    }

    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// Forces a durable sync (commits are already durable with reth's sync mode).
    pub fn sync(&self) -> RawResult<()> {
        // SAFETY: env is open for the lifetime of self.
        let rc = unsafe { ffi::mdbx_env_sync_ex(self.inner.env, true, false) };
        if rc == ffi::MDBX_SUCCESS || rc == ffi::MDBX_RESULT_TRUE {
            Ok(())
        } else {
            Err(DatabaseError::Commit(info(rc, None)))
        }
    }
}

/// libmdbx logs notices (geometry fix-ups, readahead) to stderr; keep warnings and errors only.
fn quiet_library_logging() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: sets process-wide logging options; no logger callback is installed.
        unsafe { ffi::mdbx_setup_debug(ffi::MDBX_LOG_WARN, ffi::MDBX_DBG_DONTCHANGE, None) };
    });
}

struct EnvGuard(*mut ffi::MDBX_env);
impl Drop for EnvGuard {
    fn drop(&mut self) {
        // SAFETY: only reached on an error path before the handle is handed to EnvInner.
        unsafe { ffi::mdbx_env_close_ex(self.0, false) };
    }
}

/// Opens (and in read-write mode creates) the DBI of every table, with DUPSORT exactly where
/// reth sets it. A table whose stored flags disagree with the catalogue is an error.
///
/// # Safety
/// `env` must be an open environment.
unsafe fn open_tables(
    env: *mut ffi::MDBX_env,
    read_only: bool,
    db_dir: &Path,
) -> Result<[Option<ffi::MDBX_dbi>; Tables::COUNT], MdbxError> {
    let mut dbis = [None; Tables::COUNT];
    let mut txn = ptr::null_mut();
    let txn_flags = if read_only {
        ffi::MDBX_TXN_RDONLY
    } else {
        ffi::MDBX_TXN_READWRITE
    };
    // SAFETY: env is open (caller's contract).
    check(
        unsafe {
            ffi::mdbx_txn_begin_ex(env, ptr::null_mut(), txn_flags, &mut txn, ptr::null_mut())
        },
        db_dir,
    )?;
    for table in Tables::ALL {
        let name = CString::new(table.name()).expect("table names have no NUL");
        let dup = if table.is_dupsort() {
            ffi::MDBX_DUPSORT
        } else {
            ffi::MDBX_DB_DEFAULTS
        };
        let flags = if read_only {
            ffi::MDBX_DB_ACCEDE
        } else {
            dup | ffi::MDBX_CREATE
        };
        let mut dbi = 0;
        // SAFETY: txn is live; name is NUL-terminated.
        let rc = unsafe { ffi::mdbx_dbi_open(txn, name.as_ptr(), flags, &mut dbi) };
        match rc {
            ffi::MDBX_SUCCESS => {
                let (mut got, mut state) = (0, 0);
                // SAFETY: dbi was just opened in txn.
                unsafe { ffi::mdbx_dbi_flags_ex(txn, dbi, &mut got, &mut state) };
                if (got & ffi::MDBX_DUPSORT != 0) != table.is_dupsort() {
                    // SAFETY: txn is live and ends here.
                    unsafe { ffi::mdbx_txn_abort_ex(txn, ptr::null_mut()) };
                    return Err(MdbxError::Open {
                        path: db_dir.join(table.name()),
                        code: MdbxCode {
                            code: ffi::MDBX_INCOMPATIBLE,
                        },
                    });
                }
                dbis[table as usize] = Some(dbi);
            }
            ffi::MDBX_NOTFOUND if read_only => {}
            rc => {
                // SAFETY: txn is live and ends here.
                unsafe { ffi::mdbx_txn_abort_ex(txn, ptr::null_mut()) };
                return Err(MdbxError::Open {
                    path: db_dir.join(table.name()),
                    code: MdbxCode { code: rc },
                });
            }
        }
    }
    // SAFETY: txn is live; committing makes the DBI handles usable by later transactions.
    check(
        unsafe { ffi::mdbx_txn_commit_ex(txn, ptr::null_mut()) },
        db_dir,
    )?;
    Ok(dbis)
}

impl RawEngine for MdbxEngine {
    type Tx = MdbxTx;
    type TxMut = MdbxTxMut;

    fn engine_name(&self) -> &'static str {
        "mdbx"
    }

    fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    fn path(&self) -> PathBuf {
        self.inner.datadir.join("db")
    }

    fn has_table(&self, table: Tables) -> bool {
        self.inner.dbis[table as usize].is_some()
    }

    fn begin_ro(&self) -> RawResult<MdbxTx> {
        MdbxTx::begin(Arc::clone(&self.inner), true)
    }

    fn begin_rw(&self) -> RawResult<MdbxTxMut> {
        if self.inner.read_only {
            return Err(DatabaseError::InitTx(info(ffi::MDBX_EACCESS, None)));
        }
        MdbxTx::begin(Arc::clone(&self.inner), false).map(MdbxTxMut)
    }

    /// MDBX's reader table, as reth's `DatabaseEnv` reports it (0 means none).
    fn oldest_reader_txnid(&self) -> Option<u64> {
        let txnid = self.env_info().ok()?.mi_latter_reader_txnid;
        (txnid != 0).then_some(txnid)
    }

    fn last_txnid(&self) -> Option<u64> {
        let txnid = self.env_info().ok()?.mi_recent_txnid;
        (txnid != 0).then_some(txnid)
    }
}
