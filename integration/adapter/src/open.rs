//! Opening a datadir as the hybrid node database.

use crate::{reth_db_metrics::RethDbMetrics, reth_mdbx::RethMdbx, upstream::UpstreamDatabase};
use reth_db::{DatabaseEnv, mdbx::DatabaseArguments};
use reth_hybrid_api::{DatabaseError, DatabaseErrorInfo};
use reth_hybrid_hybrid::{FollowerSync, HybridDb, HybridOptions};
use reth_hybrid_rocksdb::{HYBRID_ROCKSDB_DIR, RocksEngine};
use std::{path::Path, sync::Arc};

/// The database a hybrid node runs on.
pub type HybridNodeDb = UpstreamDatabase<HybridDb<RethMdbx, RocksEngine>>;

/// Opens (creating if needed) `<datadir>/db` with reth's settings and `<datadir>/hybrid-rocksdb`,
/// recovers a commit in flight, and checks the layout against the rows (a storage-v2 datadir,
/// or one with history rows in the wrong engine, is refused with the way out). Every refusal is
/// decided on read-only views before anything is created, so a refused datadir is unchanged.
/// RocksDB's writes are made durable as `RETH_HYBRID_ROCKSDB_SYNC` says (`deferred`, the
/// default, or `every-commit`).
pub fn open_hybrid(datadir: &Path, args: DatabaseArguments) -> eyre::Result<HybridNodeDb> {
    let follower_sync = FollowerSync::from_env().map_err(|e| eyre::eyre!(e))?;
    // Before anything is created: a fresh datadir gets its MDBX before RocksDB opens.
    reth_hybrid_rocksdb::RocksOptions::check_environment()?;
    open_hybrid_with(
        datadir,
        args,
        HybridOptions {
            follower_sync,
            ..HybridOptions::default()
        },
    )
}

/// [`open_hybrid`] with the hybrid's options: a new datadir takes `options.layout` (one that has
/// a layout must match it), so a datadir made from another keeps its routing.
pub fn open_hybrid_with(
    datadir: &Path,
    args: DatabaseArguments,
    options: HybridOptions,
) -> eyre::Result<HybridNodeDb> {
    refuse_upstream_rows(datadir)?;
    let db_dir = datadir.join("db");
    let rocks_dir = datadir.join(HYBRID_ROCKSDB_DIR);
    let read_only_args = args.clone();
    let hybrid = HybridDb::open_checked(
        datadir,
        options,
        // Read-only views of what exists: every refusal is decided on these, so a refused
        // datadir gets no MDBX table, client-version row or `hybrid-rocksdb/` created.
        || {
            let mdbx = match db_dir.join("mdbx.dat").exists() {
                true => {
                    let env = reth_db::open_db_read_only(&db_dir, read_only_args)
                        .map_err(reth_open_error)?;
                    Some(RethMdbx::new(Arc::new(env))?)
                }
                false => None,
            };
            let rocks = match reth_hybrid_rocksdb::is_initialized(&rocks_dir) {
                true => Some(RocksEngine::open_read_only(&rocks_dir)?),
                false => None,
            };
            Ok((mdbx, rocks))
        },
        || {
            let env: DatabaseEnv = reth_db::init_db(&db_dir, args).map_err(reth_open_error)?;
            let mdbx = RethMdbx::new(Arc::new(env))?;
            Ok((mdbx, RocksEngine::open_in_datadir(datadir)?))
        },
    )?;
    tracing::info!(
        target: "reth_hybrid",
        recovery = ?hybrid.recovered().action,
        rocksdb_sync = ?hybrid.follower_sync(),
        // RETH_HYBRID_ROCKSDB_HISTORY_L0_TRIGGER, as the engine opened with it.
        rocksdb_history_l0_trigger = hybrid.follower().history_level0_compaction_trigger(),
        rocksdb_tables = ?hybrid.layout().tables_in(reth_hybrid_api::EngineKind::RocksDb).collect::<Vec<_>>(),
        "opened the hybrid database"
    );
    // reth's MDBX gauges exactly as a stock node reports them, then RocksDB's (per table).
    let env = Arc::clone(hybrid.primary().env());
    Ok(UpstreamDatabase::new(hybrid).with_extra_gauges(move || {
        reth_db_api::database_metrics::DatabaseMetrics::gauge_metrics(&*env)
    }))
}

/// Opens a hybrid datadir for inspection: both engines read-only, nothing on disk changes. A
/// datadir that is not (yet) hybrid, has a commit in flight or is open in a running process is
/// refused with the way out: recovery writes, so it is left to the node or a read-write command.
pub fn open_hybrid_read_only(
    datadir: &Path,
    args: DatabaseArguments,
) -> eyre::Result<HybridNodeDb> {
    refuse_upstream_rows(datadir)?;
    let db_dir = datadir.join("db");
    let rocks_dir = datadir.join(HYBRID_ROCKSDB_DIR);
    eyre::ensure!(
        reth_hybrid_rocksdb::is_initialized(&rocks_dir),
        "{} is missing: {} is not a reth-hybrid datadir (an MDBX-only datadir is read with the \
         stock build, or moved with `reth-hybrid migrate`)",
        rocks_dir.display(),
        datadir.display()
    );
    // Recovery writes (it replays into RocksDB or clears the intent log), so a read-only open
    // takes a datadir only when recovery has nothing to do and no writer can start one: no live
    // process holds reth's lock, and the intent log is there and empty.
    if let Some(pid) = live_lock_holder(&db_dir) {
        eyre::bail!(
            "{} is open in a running process (pid {pid}, {}): stop it first; reth-hybrid's \
             read-only commands must not race its commits",
            datadir.display(),
            db_dir.join("lock").display()
        );
    }
    let intent = datadir.join(reth_hybrid_hybrid::INTENT_LOG_FILE);
    match std::fs::metadata(&intent) {
        Ok(meta) if meta.len() == 0 => {}
        Ok(meta) => eyre::bail!(
            "{} holds a commit in flight ({} bytes; the node stopped mid-commit): start the node, \
             or run a read-write command such as `init`, once to recover it, then read",
            intent.display(),
            meta.len()
        ),
        Err(e) => eyre::bail!(
            "{} is missing ({e}): this datadir was never opened by reth-hybrid; open it once \
             with the node or a read-write command",
            intent.display()
        ),
    }
    let open = || -> Result<(RethMdbx, RocksEngine), DatabaseError> {
        let env = reth_db::open_db_read_only(&db_dir, args.clone()).map_err(reth_open_error)?;
        Ok((
            RethMdbx::new(Arc::new(env))?,
            RocksEngine::open_read_only(&rocks_dir)?,
        ))
    };
    let hybrid = HybridDb::open_checked(
        datadir,
        HybridOptions::default(),
        || open().map(|(m, r)| (Some(m), Some(r))),
        open,
    )
    .map_err(|e| {
        eyre::eyre!(
            "opening {} read-only: {e}. If a commit was in flight when the node stopped, start \
             the node (or run a read-write command such as `init`) once: it recovers the commit",
            datadir.display()
        )
    })?;
    Ok(UpstreamDatabase::new(hybrid))
}

/// The pid in reth's `<db>/lock` when that process is alive (reth removes the file on a clean
/// exit; a killed process leaves it naming a dead pid).
fn live_lock_holder(db_dir: &Path) -> Option<u32> {
    let contents = std::fs::read_to_string(db_dir.join("lock")).ok()?;
    let pid: u32 = contents.lines().next()?.trim().parse().ok()?;
    (pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists()).then_some(pid)
}

/// reth's own RocksDB (storage v2) holding rows means history already lives there.
fn refuse_upstream_rows(datadir: &Path) -> eyre::Result<()> {
    if let Some(cfs) = reth_hybrid_rocksdb::inspect_upstream_rocksdb(&datadir.join("rocksdb"))? {
        let with_rows: Vec<String> = cfs
            .into_iter()
            .filter(|c| c.has_rows)
            .map(|c| c.name)
            .collect();
        if !with_rows.is_empty() {
            eyre::bail!(
                "{} holds rows of reth's storage v2 ({}): this datadir keeps its history in reth's \
                 own RocksDB, which reth-hybrid does not mix with its layout; use a datadir written \
                 with --storage.v2=false",
                datadir.join("rocksdb").display(),
                with_rows.join(", ")
            );
        }
    }
    Ok(())
}

impl HybridNodeDb {
    /// Records reth's own database metrics (`reth_database_*`) as a stock node does unless run
    /// with `--db.disable-metrics`: operations and transactions at reth's calls, MDBX's commit
    /// latency breakdown at each MDBX commit.
    pub fn with_reth_database_metrics(self) -> Self {
        let metrics = Arc::new(RethDbMetrics::new());
        self.engine()
            .primary()
            .record_commit_latency(Arc::clone(&metrics));
        self.with_reth_metrics(metrics)
    }
}

/// Turns on reth-hybrid's operation and commit-phase metrics inside reth's node: they go to
/// reth's Prometheus recorder (`--metrics`), which prefixes `reth_`: `reth_hybrid_*`.
pub fn enable_metrics() {
    reth_hybrid_hybrid::metrics::enable_under_reth();
}

/// reth's open errors (eyre) as an engine open error, message kept.
fn reth_open_error(e: eyre::Report) -> DatabaseError {
    DatabaseError::Open(DatabaseErrorInfo::new(format!("{e:#}"), -1).with_engine("mdbx"))
}
