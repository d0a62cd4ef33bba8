//! `stage dump`: reth's stage dump on a hybrid datadir. A block range's inputs of one stage
//! (execution, account or storage hashing, merkle) go into a new datadir, so the stage can be run
//! there alone. As reth, the source's stages are unwound in a write transaction that is read and
//! then dropped, never committed, so the source keeps every row.
//!
//! reth's own dump writes a fresh MDBX by table name. This one writes a new hybrid datadir with the
//! source's layout, every row through the router, so a table the layout keeps in RocksDB lands in
//! the new `hybrid-rocksdb`, and the hybrid build's `stage run` and `db` commands work on it.

use super::{
    Env, components,
    db_copy::Created,
    env::{Access, HybridEnvironment, HybridFactory, HybridTypes},
};
use alloy_primitives::Address;
use eyre::WrapErr;
use reth_chainspec::{ChainSpecProvider, EthChainSpec};
use reth_config::config::EtlConfig;
use reth_consensus::noop::NoopConsensus;
use reth_db_api::{
    cursor::DbCursorRO,
    database::Database,
    models::BlockNumberAddress,
    table::{Table, TableImporter},
    tables,
    transaction::DbTx,
};
use reth_exex::ExExManagerHandle;
use reth_hybrid_adapter::{HybridNodeDb, open_hybrid_with};
use reth_hybrid_hybrid::{HybridOptions, INTENT_LOG_FILE};
use reth_hybrid_rocksdb::HYBRID_ROCKSDB_DIR;
use reth_node_core::{
    args::DatadirArgs,
    dirs::{ChainPath, DataDirPath, PlatformPath},
};
use reth_provider::StageCheckpointReader;
use reth_provider::{
    DatabaseProviderFactory, ProviderFactory,
    providers::{RocksDBProvider, StaticFileProviderBuilder},
};
use reth_stages::{
    ExecInput, ExecutionStageThresholds, Stage, StageCheckpoint, StageId, UnwindInput,
    UnwindOutput,
    stages::{
        AccountHashingStage, ExecutionStage, MERKLE_STAGE_DEFAULT_REBUILD_THRESHOLD, MerkleStage,
        StorageHashingStage,
    },
};
use std::{
    collections::HashSet,
    ffi::OsString,
    path::{Path, PathBuf},
};
use tracing::info;

#[derive(Debug, clap::Args)]
pub struct DumpArgs {
    #[command(flatten)]
    env: Env,
    #[command(subcommand)]
    stage: DumpStage,
}

impl DumpArgs {
    pub fn env(&self) -> &Env {
        &self.env
    }
}

/// The stages reth can dump.
#[derive(Debug, Clone, clap::Subcommand)]
enum DumpStage {
    /// Execution stage.
    Execution(DumpRange),
    /// `StorageHashing` stage.
    StorageHashing(DumpRange),
    /// `AccountHashing` stage.
    AccountHashing(DumpRange),
    /// Merkle stage.
    Merkle(DumpRange),
}

#[derive(Debug, Clone, clap::Args)]
struct DumpRange {
    /// The path to the new datadir folder (the chain's name is appended, as in reth). It must
    /// hold no database yet.
    #[arg(long, value_name = "OUTPUT_PATH")]
    output_datadir: PlatformPath<DataDirPath>,
    /// From which block.
    #[arg(long, short)]
    from: u64,
    /// To which block.
    #[arg(long, short)]
    to: u64,
    /// Run the stage on the new datadir right after dumping, without committing.
    #[arg(long, short, default_value = "false")]
    dry_run: bool,
}

impl DumpStage {
    fn range(&self) -> &DumpRange {
        match self {
            Self::Execution(range)
            | Self::StorageHashing(range)
            | Self::AccountHashing(range)
            | Self::Merkle(range) => range,
        }
    }

    /// The stages whose tables the dump unwinds (each from its own checkpoint).
    fn unwound(&self) -> &'static [StageId] {
        match self {
            Self::Execution(_) => &[StageId::Execution],
            Self::StorageHashing(_) => &[StageId::StorageHashing],
            Self::AccountHashing(_) => &[StageId::AccountHashing],
            Self::Merkle(_) => &[
                StageId::StorageHashing,
                StageId::AccountHashing,
                StageId::MerkleExecute,
                StageId::Execution,
            ],
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Self::Execution(_) => "execution",
            Self::StorageHashing(_) => "storage-hashing",
            Self::AccountHashing(_) => "account-hashing",
            Self::Merkle(_) => "merkle",
        }
    }
}

pub async fn run(args: DumpArgs, runtime: reth_tasks::Runtime) -> eyre::Result<()> {
    let range = args.stage.range().clone();
    // reth asserts these (and reads block `from - 1`); refused here before anything opens.
    eyre::ensure!(
        range.from >= 1 && range.from < range.to,
        "--from {} --to {}: the range must have 1 <= FROM < TO (the dump also copies block \
         FROM - 1's body indices); nothing was written",
        range.from,
        range.to
    );
    // The dump copies MDBX tables, as reth's; the blocks' headers, transactions and receipts
    // stay in the source's static files, which these two stages read when they run.
    eyre::ensure!(
        !range.dry_run || !matches!(args.stage, DumpStage::Execution(_) | DumpStage::Merkle(_)),
        "--dry-run of the {} stage needs the range's headers{} in the new datadir's static \
         files, which a dump does not copy (reth's dry run fails the same way): dump without \
         --dry-run; the hashing stages' dumps do dry-run",
        args.stage.name(),
        match args.stage {
            DumpStage::Execution(_) => ", transactions and receipts",
            _ => "",
        }
    );
    let chain = args.env.chain.chain();
    let source_dir = args.env.datadir.clone().resolve_datadir(chain);
    eyre::ensure!(
        source_dir.db().join("mdbx.dat").is_file(),
        "{} holds no database: check --datadir and --chain (nothing was written)",
        source_dir.db().display()
    );
    let output = range
        .output_datadir
        .with_chain(chain, DatadirArgs::default());
    let fresh = FreshDatadir::check(output.data_dir(), source_dir.data_dir())?;

    let source = HybridEnvironment::init(&args.env, Access::ReadWrite, runtime.clone())?;
    for &id in args.stage.unwound() {
        stage_checkpoint(&source.provider_factory, id, range.to)?;
    }
    let layout = source.provider_factory.db_ref().engine().layout().clone();
    let mut created = Created::default();
    created.dir_all(output.data_dir())?;
    info!(target: "reth::cli", output = ?output.data_dir(), stage = args.stage.name(), "Creating a separate hybrid datadir");
    let dumped = open_hybrid_with(
        output.data_dir(),
        args.env.db.database_args(),
        HybridOptions {
            layout: Some(layout),
            ..HybridOptions::default()
        },
    )
    .and_then(|output_db| {
        dump(&args.stage, &source.provider_factory, &output_db)?;
        Ok(output_db)
    });
    let output_db = match dumped {
        Ok(db) => db,
        Err(e) => {
            fresh.remove_new_entries();
            created.remove();
            return Err(e.wrap_err(format!(
                "the dump failed and what it had written in {} was removed; the source is \
                 unchanged (its unwinds are never committed)",
                output.data_dir().display()
            )));
        }
    };
    info!(target: "reth::cli", stage = args.stage.name(), from = range.from, to = range.to, "Dumped the stage's tables");
    // Its static files and reth's own (empty) RocksDB too: a datadir the `db` commands open.
    let factory = output_factory(output_db, &output, &source.provider_factory, runtime)
        .wrap_err_with(|| {
            format!(
                "the dump's tables are in {}, but its static files or RocksDB could not be made",
                output.data_dir().display()
            )
        })?;
    if range.dry_run {
        dry_run(&args.stage, &factory).map_err(|e| {
            e.wrap_err(format!(
                "the dump in {} is complete; the dry run of the stage on it failed",
                output.data_dir().display()
            ))
        })?;
    }
    Ok(())
}

/// The output datadir's entries before the dump: it must hold no datadir yet (reth would import
/// into an existing database), and a failed dump removes exactly what it added.
struct FreshDatadir {
    dir: PathBuf,
    before: HashSet<OsString>,
}

impl FreshDatadir {
    fn check(dir: &Path, source: &Path) -> eyre::Result<Self> {
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        };
        eyre::ensure!(
            !same(dir, source),
            "--output-datadir resolves to the source datadir {}: the dump writes a new datadir; \
             nothing was written",
            source.display()
        );
        for taken in [
            "db",
            HYBRID_ROCKSDB_DIR,
            "rocksdb",
            "static_files",
            INTENT_LOG_FILE,
        ] {
            let path = dir.join(taken);
            eyre::ensure!(
                !path.exists(),
                "{} exists: `stage dump` writes a new datadir (a dump interrupted earlier leaves \
                 a partial one: remove it, or pass another --output-datadir); nothing was written",
                path.display()
            );
        }
        let before = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .map(|entry| entry.map(|e| e.file_name()))
                .collect::<Result<_, _>>()?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashSet::new(),
            Err(e) => return Err(eyre::eyre!("reading {}: {e}", dir.display())),
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            before,
        })
    }

    fn remove_new_entries(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            if self.before.contains(&entry.file_name()) {
                continue;
            }
            let path = entry.path();
            let _ = match path.is_dir() {
                true => std::fs::remove_dir_all(&path),
                false => std::fs::remove_file(&path),
            };
        }
    }
}

/// The stage's tables, as reth's dump chooses them, into `out` (one commit per table, as reth:
/// a shared transaction would hold every table's rows in memory).
fn dump(stage: &DumpStage, source: &HybridFactory, out: &HybridNodeDb) -> eyre::Result<()> {
    let DumpRange { from, to, .. } = *stage.range();
    let db = source.db_ref();
    copy_range::<tables::BlockBodyIndices>(out, &db.tx()?, Some(from - 1), to + 1)?;
    let checkpoint = |id| stage_checkpoint(source, id, to);
    // Each branch copies what needs no unwind first, then unwinds in a write transaction of
    // the source that is read for the copy and dropped, never committed.
    let provider = || source.database_provider_rw();
    match stage {
        DumpStage::Execution(_) => {
            copy_range::<tables::CanonicalHeaders>(out, &db.tx()?, Some(from), to)?;
            copy_range::<tables::Headers>(out, &db.tx()?, Some(from), to)?;
            // reth copies BlockBodyIndices FROM..=TO here a second time, which its MDBX append
            // refuses (the rows up to TO + 1 are there): its execution dump fails every time.
            copy_range::<tables::BlockOmmers>(out, &db.tx()?, Some(from), to)?;
            let (from_tx, to_tx) = db.view(|tx| -> eyre::Result<(u64, u64)> {
                let mut bodies = tx.cursor_read::<tables::BlockBodyIndices>()?;
                let (_, first) = bodies
                    .seek(from)?
                    .ok_or_else(|| eyre::eyre!("BlockBody {from} does not exist."))?;
                let (_, last) = bodies
                    .seek(to)?
                    .ok_or_else(|| eyre::eyre!("BlockBody {to} does not exist."))?;
                Ok((first.first_tx_num, last.first_tx_num + last.tx_count))
            })??;
            // `to_tx` is the first transaction after TO, and the copy takes it too (as reth's).
            copy_range::<tables::Transactions>(out, &db.tx()?, Some(from_tx), to_tx)?;
            copy_range::<tables::TransactionSenders>(out, &db.tx()?, Some(from_tx), to_tx)?;

            // The state at FROM: accounts the range reads but never changes are in it too.
            let executed = checkpoint(StageId::Execution)?;
            let provider = provider()?;
            let (evm, _) = components(source);
            let mut execution = ExecutionStage::new_with_executor(evm, NoopConsensus::arc());
            unwind_fully(&mut execution, &provider, executed, from)?;
            let unwound = provider.into_tx();
            copy_dupsort::<tables::PlainStorageState>(out, &unwound)?;
            copy_all::<tables::PlainAccountState>(out, &unwound)?;
            copy_all::<tables::Bytecodes>(out, &unwound)?;
        }
        DumpStage::AccountHashing(_) => {
            copy_range::<tables::AccountChangeSets>(out, &db.tx()?, Some(from), to)?;
            let hashed = checkpoint(StageId::AccountHashing)?;
            let provider = provider()?;
            unwind_fully(&mut AccountHashingStage::default(), &provider, hashed, from)?;
            copy_all::<tables::PlainAccountState>(out, &provider.into_tx())?;
        }
        DumpStage::StorageHashing(_) => {
            let hashed = checkpoint(StageId::StorageHashing)?;
            let provider = provider()?;
            unwind_fully(&mut StorageHashingStage::default(), &provider, hashed, from)?;
            let unwound = provider.into_tx();
            copy_dupsort::<tables::PlainStorageState>(out, &unwound)?;
            copy_dupsort::<tables::StorageChangeSets>(out, &unwound)?;
        }
        DumpStage::Merkle(_) => {
            copy_range::<tables::Headers>(out, &db.tx()?, Some(from), to)?;
            copy_range::<tables::AccountChangeSets>(out, &db.tx()?, Some(from), to)?;
            // Hashed state and trie at FROM, then the hashed state brought to TO (the merkle
            // stage's input), from the plain state unwound to TO.
            let (storage, accounts, merkle, executed) = (
                checkpoint(StageId::StorageHashing)?,
                checkpoint(StageId::AccountHashing)?,
                checkpoint(StageId::MerkleExecute)?,
                checkpoint(StageId::Execution)?,
            );
            let provider = provider()?;
            unwind_fully(
                &mut StorageHashingStage::default(),
                &provider,
                storage,
                from,
            )?;
            unwind_fully(
                &mut AccountHashingStage::default(),
                &provider,
                accounts,
                from,
            )?;
            unwind_fully(&mut MerkleStage::default_unwind(), &provider, merkle, from)?;
            let (evm, consensus) = components(source);
            let mut execution = ExecutionStage::new(
                evm,
                consensus,
                ExecutionStageThresholds {
                    max_blocks: Some(u64::MAX),
                    max_changes: None,
                    max_cumulative_gas: None,
                    max_duration: None,
                },
                MERKLE_STAGE_DEFAULT_REBUILD_THRESHOLD,
                ExExManagerHandle::empty(),
            );
            unwind_fully(&mut execution, &provider, executed, to)?;
            let input = ExecInput {
                target: Some(to),
                checkpoint: Some(StageCheckpoint::new(from)),
            };
            // One pass each, never committing in between.
            AccountHashingStage {
                clean_threshold: u64::MAX,
                commit_threshold: u64::MAX,
                commit_entries: u64::MAX,
                etl_config: EtlConfig::default(),
            }
            .execute(&provider, input)?;
            StorageHashingStage {
                clean_threshold: u64::MAX,
                commit_threshold: u64::MAX,
                commit_entries: u64::MAX,
                etl_config: EtlConfig::default(),
            }
            .execute(&provider, input)?;
            let unwound = provider.into_tx();
            copy_range::<tables::StorageChangeSets>(
                out,
                &unwound,
                Some(BlockNumberAddress((from, Address::ZERO))),
                BlockNumberAddress((to, Address::repeat_byte(0xff))),
            )?;
            copy_all::<tables::HashedAccounts>(out, &unwound)?;
            copy_dupsort::<tables::HashedStorages>(out, &unwound)?;
            copy_all::<tables::AccountsTrie>(out, &unwound)?;
            copy_dupsort::<tables::StoragesTrie>(out, &unwound)?;
        }
    }
    Ok(())
}

/// The source's checkpoint of a stage the dump unwinds, which must cover the range: a stage behind
/// TO would leave its tables at another block than the one the dump names.
fn stage_checkpoint(source: &HybridFactory, id: StageId, to: u64) -> eyre::Result<u64> {
    let at = source
        .provider()?
        .get_stage_checkpoint(id)?
        .unwrap_or_default()
        .block_number;
    eyre::ensure!(
        at >= to,
        "the source's {id} stage is at block {at}, below --to {to}: its tables do not hold the \
         range yet (let the node sync past {to}, or dump a lower range); nothing was written"
    );
    Ok(at)
}

/// Unwinds `stage` from block `at` down to `to` in the uncommitted transaction, in as many calls
/// as it takes (each unwinds at most the stage's threshold of blocks: 500,000 for execution).
fn unwind_fully<P, S: Stage<P>>(
    stage: &mut S,
    provider: &P,
    mut at: u64,
    to: u64,
) -> eyre::Result<()> {
    while at > to {
        let UnwindOutput { checkpoint } = stage.unwind(
            provider,
            UnwindInput {
                unwind_to: to,
                checkpoint: StageCheckpoint::new(at),
                bad_block: None,
            },
        )?;
        eyre::ensure!(
            checkpoint.block_number < at,
            "the {} stage's unwind from block {at} made no progress",
            stage.id()
        );
        at = checkpoint.block_number;
    }
    Ok(())
}

fn copy_range<T: Table>(
    out: &HybridNodeDb,
    source: &impl DbTx,
    from: Option<T::Key>,
    to: T::Key,
) -> eyre::Result<()>
where
    T::Key: Default,
{
    out.update(|tx| tx.import_table_with_range::<T, _>(source, from, to))??;
    Ok(())
}

fn copy_all<T: Table>(out: &HybridNodeDb, source: &impl DbTx) -> eyre::Result<()> {
    out.update(|tx| tx.import_table::<T, _>(source))??;
    Ok(())
}

fn copy_dupsort<T: reth_db_api::table::DupSort>(
    out: &HybridNodeDb,
    source: &impl DbTx,
) -> eyre::Result<()> {
    out.update(|tx| tx.import_dupsort::<T, _>(source))??;
    Ok(())
}

/// A provider factory over the dump, with its own static files and reth's (empty) RocksDB (reth
/// makes these for its dry run only).
fn output_factory(
    db: HybridNodeDb,
    output: &ChainPath<DataDirPath>,
    source: &HybridFactory,
    runtime: reth_tasks::Runtime,
) -> eyre::Result<HybridFactory> {
    let chain = source.chain_spec();
    let static_files = StaticFileProviderBuilder::read_write(output.static_files())
        .with_genesis_block_number(chain.genesis().number.unwrap_or_default())
        .build()?;
    let rocksdb = RocksDBProvider::builder(output.rocksdb())
        .with_default_tables()
        .build()?;
    Ok(ProviderFactory::<HybridTypes>::new(
        db,
        chain,
        static_files,
        rocksdb,
        runtime,
    )?)
}

/// The hashing stage run over the dumped range on the new datadir, from scratch and never
/// committed (reth's dry run); execution and merkle were refused before the dump.
fn dry_run(stage: &DumpStage, factory: &HybridFactory) -> eyre::Result<()> {
    let DumpRange { from, to, .. } = *stage.range();
    info!(target: "reth::cli", stage = stage.name(), "Executing stage. [dry-run]");
    let provider = factory.database_provider_rw()?;
    let input = ExecInput {
        target: Some(to),
        checkpoint: Some(StageCheckpoint::new(from)),
    };
    match stage {
        DumpStage::AccountHashing(_) => run_until_done(
            &mut AccountHashingStage {
                clean_threshold: 1,
                ..Default::default()
            },
            &provider,
            input,
        )?,
        DumpStage::StorageHashing(_) => run_until_done(
            &mut StorageHashingStage {
                clean_threshold: 1,
                ..Default::default()
            },
            &provider,
            input,
        )?,
        DumpStage::Execution(_) | DumpStage::Merkle(_) => {
            unreachable!("--dry-run of {} is refused before the dump", stage.name())
        }
    }
    info!(target: "reth::cli", "Success");
    Ok(())
}

/// reth's dry-run loop: the same input again until the stage says it is done.
fn run_until_done<P, S: Stage<P>>(
    stage: &mut S,
    provider: &P,
    input: ExecInput,
) -> eyre::Result<()> {
    while !stage.execute(provider, input)?.done {}
    Ok(())
}
