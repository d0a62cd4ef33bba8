//! `db adopt-v2`: a reth storage-v2 datadir onto the hybrid without a resync. reth-hybrid-adopt
//! does the work (docs/migration.md, "For storage v2 operators") on reth's own MDBX; this
//! command supplies what only reth can read, the static files' changesets and senders, through
//! reth's static-file provider. With `--to hybrid` (the default) history and tx hashes go
//! straight into reth-hybrid's RocksDB and the `reth-hybrid` tool then verifies the datadir;
//! with `--to v1` the result is a stock v1 datadir.

use alloy_primitives::{Address, B256};
use eyre::WrapErr;
use reth_db::{Database, DatabaseEnv, mdbx::DatabaseArguments};
use reth_hybrid_adapter::RethMdbx;
use reth_hybrid_adopt::{
    AdoptStart, MdbxOpener, OpenError, Progress, adopt, check_adoption,
    static_files::{SourceError, V2StaticFiles},
};
use reth_hybrid_api::{Tables, models};
use reth_node_core::dirs::{ChainPath, DataDirPath};
use reth_provider::{
    ChangeSetReader, HeaderProvider, StorageChangeSetReader, TransactionsProvider,
    providers::StaticFileProvider,
};
use reth_static_file_types::StaticFileSegment;
use std::{
    collections::HashMap,
    path::PathBuf,
    sync::Mutex,
    thread::ThreadId,
    time::{Duration, Instant},
};
use tracing::info;

/// Where adoption stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AdoptTarget {
    /// The hybrid layout: history and tx hashes in hybrid-rocksdb (the default).
    Hybrid,
    /// A stock reth v1 datadir (every table in MDBX), for `reth node --storage.v2=false`.
    V1,
}

impl From<AdoptTarget> for reth_hybrid_adopt::AdoptTarget {
    fn from(target: AdoptTarget) -> Self {
        match target {
            AdoptTarget::Hybrid => Self::Hybrid,
            AdoptTarget::V1 => Self::V1,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct AdoptArgs {
    /// Where the datadir ends up.
    #[arg(long, value_enum, default_value = "hybrid")]
    to: AdoptTarget,
    /// The `reth-hybrid` tool that verifies the adopted hybrid datadir (default: from PATH).
    #[arg(long)]
    cli: Option<PathBuf>,
    /// Run every refusal and check (the head's state root and the stored tries included), print
    /// the plan and the disk estimate, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Undo an adoption that has not switched the datadir yet: the rows it staged in MDBX
    /// cleared, reth-hybrid's staged RocksDB and files removed, the v2 datadir as reth left it.
    /// Refused once the adoption has switched.
    #[arg(long, conflicts_with = "dry_run")]
    abandon: bool,
}

const SEGMENTS: [StaticFileSegment; 3] = [
    StaticFileSegment::AccountChangeSets,
    StaticFileSegment::StorageChangeSets,
    StaticFileSegment::TransactionSenders,
];

/// The node's primitives (the static files' row types).
type N = <reth_node_ethereum::EthereumNode as reth_node_builder::NodeTypes>::Primitives;

/// The v2 datadir's static files, through reth's provider.
struct RethStaticFiles {
    provider: StaticFileProvider<N>,
    dir: PathBuf,
}

impl V2StaticFiles for RethStaticFiles {
    fn account_changesets(&self, block: u64) -> Result<Vec<models::AccountBeforeTx>, SourceError> {
        Ok(self
            .provider
            .account_block_changeset(block)?
            .into_iter()
            .map(|entry| models::AccountBeforeTx {
                address: entry.address,
                info: entry.info.map(|a| models::Account {
                    nonce: a.nonce,
                    balance: a.balance,
                    bytecode_hash: a.bytecode_hash,
                }),
            })
            .collect())
    }

    fn storage_changesets(
        &self,
        block: u64,
    ) -> Result<Vec<(Address, models::StorageEntry)>, SourceError> {
        Ok(self
            .provider
            .storage_changeset(block)?
            .into_iter()
            .map(|(key, entry)| {
                (
                    key.address(),
                    models::StorageEntry {
                        key: entry.key,
                        value: entry.value,
                    },
                )
            })
            .collect())
    }

    fn senders(&self, first: u64, count: u64) -> Result<Vec<Address>, SourceError> {
        Ok(self.provider.senders_by_tx_range(first..first + count)?)
    }

    fn changesets_end(&self) -> Option<u64> {
        let end = |segment| self.provider.get_highest_static_file_block(segment);
        match (
            end(StaticFileSegment::AccountChangeSets),
            end(StaticFileSegment::StorageChangeSets),
        ) {
            (Some(accounts), Some(storage)) => Some(accounts.min(storage)),
            (accounts, storage) => accounts.or(storage),
        }
    }

    fn senders_end(&self) -> Option<u64> {
        self.provider
            .get_highest_static_file_tx(StaticFileSegment::TransactionSenders)
    }

    fn changeset_counts(&self, block: u64) -> Result<(u64, u64), SourceError> {
        // reth's own index of each block's changes, kept beside the rows (the offsets sidecar).
        let count = |segment| -> Result<u64, SourceError> {
            let jar = self
                .provider
                .get_segment_provider_for_block(segment, block, None)?;
            Ok(jar
                .read_changeset_offset(block)?
                .map_or(0, |offset| offset.num_changes()))
        };
        Ok((
            count(StaticFileSegment::AccountChangeSets)?,
            count(StaticFileSegment::StorageChangeSets)?,
        ))
    }

    fn state_root(&self, block: u64) -> Result<B256, SourceError> {
        let header = self
            .provider
            .header_by_number(block)?
            .ok_or_else(|| format!("no header for block {block} in the static files"))?;
        Ok(header.state_root)
    }

    fn bytes(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        entries
            .flatten()
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                SEGMENTS
                    .iter()
                    .any(|s| name.starts_with(&format!("static_file_{}_", s.as_str())))
            })
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum()
    }

    fn remove(&self) -> Result<(), SourceError> {
        let writable = StaticFileProvider::<N>::read_write(&self.dir)?;
        let files = reth_db::static_file::iter_static_files(&self.dir)?;
        for segment in SEGMENTS {
            for (range, _) in files.get(segment).into_iter().flatten() {
                writable.delete_jar(segment, range.start())?;
            }
        }
        Ok(())
    }
}

/// reth's own MDBX, opened as reth's commands open it (with its storage lock when writing).
struct RethOpener;

/// reth's default aborts a read transaction open for five minutes; adoption reads whole tables
/// in one (the state root over a mainnet state takes hours) on a datadir no node holds.
fn adoption_arguments() -> DatabaseArguments {
    DatabaseArguments::default().with_max_read_transaction_duration(Some(
        reth_db::mdbx::MaxReadTransactionDuration::Unbounded,
    ))
}

impl MdbxOpener for RethOpener {
    type Engine = RethMdbx;
    fn read_only(&self, datadir: &std::path::Path) -> Result<RethMdbx, OpenError> {
        let env = reth_db::open_db_read_only(datadir.join("db"), adoption_arguments())?;
        Ok(RethMdbx::new(std::sync::Arc::new(env))?)
    }
    fn read_write(&self, datadir: &std::path::Path) -> Result<RethMdbx, OpenError> {
        let env: DatabaseEnv = reth_db::init_db(datadir.join("db"), adoption_arguments())?;
        Ok(RethMdbx::new(std::sync::Arc::new(env))?)
    }
    fn table_bytes(&self, engine: &RethMdbx, table: Tables) -> Result<u64, OpenError> {
        let tx = engine.env().tx()?;
        let dbi = tx.inner().open_db(Some(table.name()))?;
        let stat = tx.inner().db_stat(dbi.dbi())?;
        Ok(stat.page_size() as u64
            * (stat.leaf_pages() + stat.branch_pages() + stat.overflow_pages()) as u64)
    }
}

/// Logs each step and its rows every ten seconds (the node's logs are where operators look).
/// Adoption runs two steps at once (reth's RocksDB tables ingested beside the static files'
/// copy), each on its own thread: one current step per thread.
#[derive(Default)]
struct LogProgress {
    steps: Mutex<HashMap<ThreadId, LogStep>>,
}

struct LogStep {
    name: String,
    total: Option<u64>,
    done: u64,
    started: Instant,
    logged: Instant,
}

impl Progress for LogProgress {
    fn begin(&self, step: &str, total: Option<u64>) {
        let now = Instant::now();
        self.steps.lock().expect("progress lock").insert(
            std::thread::current().id(),
            LogStep {
                name: step.to_string(),
                total,
                done: 0,
                started: now,
                logged: now,
            },
        );
        info!(target: "reth::cli", step, ?total, "adopt: started");
    }
    fn advance(&self, rows: u64) {
        let mut steps = self.steps.lock().expect("progress lock");
        let Some(s) = steps.get_mut(&std::thread::current().id()) else {
            return;
        };
        s.done += rows;
        if s.logged.elapsed() > Duration::from_secs(10) {
            s.logged = Instant::now();
            let rate = s.done as f64 / s.started.elapsed().as_secs_f64().max(1e-3);
            let eta = s
                .total
                .filter(|_| rate > 0.0)
                .map(|total| humantime_secs(total.saturating_sub(s.done) as f64 / rate));
            info!(target: "reth::cli", step = %s.name, done = s.done, total = ?s.total, per_second = rate as u64, eta = eta.as_deref().unwrap_or("unknown"), "adopt: progress");
        }
    }
    fn end(&self) {
        let Some(s) = self
            .steps
            .lock()
            .expect("progress lock")
            .remove(&std::thread::current().id())
        else {
            return;
        };
        let secs = s.started.elapsed().as_secs_f64();
        info!(target: "reth::cli", step = %s.name, done = s.done, seconds = secs, "adopt: finished");
    }
}

/// `1h02m`, `3m05s`, `12s`: an ETA as an operator reads it.
fn humantime_secs(secs: f64) -> String {
    let secs = secs.round() as u64;
    match (secs / 3600, secs / 60 % 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

pub fn run(args: AdoptArgs, data_dir: &ChainPath<DataDirPath>) -> eyre::Result<()> {
    let datadir = data_dir.data_dir();
    if args.abandon {
        let undone = reth_hybrid_adopt::abandon(datadir, &RethOpener)?;
        println!(
            "abandoned the adoption to {} in {}: {} staged MDBX table(s) cleared ({}), removed {}; \
             the datadir is the storage v2 datadir reth left",
            undone.target.as_str(),
            datadir.display(),
            undone.cleared.len(),
            undone
                .cleared
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .join(", "),
            undone
                .removed
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        );
        return Ok(());
    }
    let static_dir = data_dir.static_files();
    let provider = StaticFileProvider::<N>::read_only(&static_dir)
        .wrap_err_with(|| format!("opening the static files at {}", static_dir.display()))?;
    let source = RethStaticFiles {
        provider,
        dir: static_dir,
    };
    let progress = LogProgress::default();
    if args.dry_run {
        let plan = check_adoption(datadir, &RethOpener, &source, args.to.into(), &progress)?;
        println!(
            "dry run: {} can be adopted (nothing was changed)\n  head block {}, state root {} \
             recomputed from the hashed state and equal to the header's; \
             the stored tries equal the ones it derives\n  {}\n  disk: about {} \
             MiB to write, {} MiB free",
            datadir.display(),
            plan.head,
            plan.state_root,
            match plan.start {
                AdoptStart::Fresh => "a new adoption",
                AdoptStart::Resume => "resumes an interrupted adoption",
                AdoptStart::Restage => "restages an adoption the v2 node ran past",
                AdoptStart::CleanupAfterSwitch =>
                    "finishes the clean-up of an adoption already switched",
            },
            plan.needed_bytes >> 20,
            plan.available_bytes >> 20,
        );
        return Ok(());
    }
    let adopted = adopt(datadir, &RethOpener, &source, args.to.into(), &progress)?;
    info!(
        target: "reth::cli",
        head = adopted.head,
        upstream_rows = ?adopted.upstream_rows,
        changesets = adopted.static_rows.account_changesets + adopted.static_rows.storage_changesets,
        senders = adopted.static_rows.senders,
        plain_accounts = adopted.plain.accounts,
        plain_slots = adopted.plain.storage,
        seconds = adopted.seconds,
        target = reth_hybrid_adopt::AdoptTarget::from(args.to).as_str(),
        "adopted"
    );
    if args.to == AdoptTarget::Hybrid {
        // Each copy was checked as it was made; `verify` checks the datadir as a whole, on
        // reth-hybrid's own MDBX engine, which cannot share this process with reth's libmdbx.
        let cli = args
            .cli
            .clone()
            .unwrap_or_else(|| PathBuf::from("reth-hybrid"));
        let status = std::process::Command::new(&cli)
            .args(["verify", "--datadir"])
            .arg(datadir)
            .status()
            .wrap_err_with(|| {
                format!(
                    "starting {} verify (the datadir is adopted; check it with `reth-hybrid \
                     verify --datadir {}`)",
                    cli.display(),
                    datadir.display()
                )
            })?;
        eyre::ensure!(
            status.success(),
            "`reth-hybrid verify` found a problem in the adopted datadir ({status}; its report is \
             above). Keep the datadir as it is and report this; `reth-hybrid migrate --to mdbx` \
             gives back a stock v1 datadir"
        );
    }
    println!(
        "adopted {} at block {}: {}",
        datadir.display(),
        adopted.head,
        match args.to {
            AdoptTarget::Hybrid => "now a reth-hybrid datadir, verified",
            AdoptTarget::V1 => "now a stock v1 datadir (`reth node --storage.v2=false`)",
        }
    );
    Ok(())
}
