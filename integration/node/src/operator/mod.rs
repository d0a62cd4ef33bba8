//! reth's operator commands on a hybrid datadir. reth's own command structs open MDBX alone
//! (their environment is fixed to reth's `DatabaseEnv`), so these take reth's flags and run
//! reth's library code underneath (genesis init, the import pipeline, the unwind pipeline, the
//! pruner, `DbTool`) on a `ProviderFactory` over the hybrid database.
//!
//! reth's commands that are not here are refused by `main` with the reason and a way out.

mod adopt;
mod db;
mod db_copy;
mod db_diff;
mod db_list_tui;
mod db_meta;
mod db_state;
mod env;
mod era;
mod metrics;
mod pipeline;
mod re_execute;
mod stage;
mod stage_dump;

use alloy_consensus::Header;
use clap::{Parser, Subcommand};
use env::{Access, HybridEnvironment};
use reth_chainspec::{ChainSpecProvider, EthChainSpec};
use reth_cli_commands::{
    common::EnvironmentArgs,
    import_core::{ImportConfig, import_blocks_from_file},
    init_state::{InitStateCommand, without_evm::setup_without_evm},
};
use reth_cli_runner::CliRunner;
use reth_db_common::init::init_from_state_dump;
use reth_ethereum_cli::chainspec::EthereumChainSpecParser;
use reth_ethereum_consensus::EthBeaconConsensus;
use reth_node_core::args::LogArgs;
use reth_node_ethereum::EthEvmConfig;
use reth_primitives_traits::SealedHeader;
use reth_provider::{BlockHashReader, BlockNumReader};
use reth_provider::{
    DBProvider, DatabaseProviderFactory, StaticFileProviderFactory, StaticFileWriter,
};
use std::io::BufReader;
use std::{path::PathBuf, sync::Arc};
use tracing::info;

type Env = EnvironmentArgs<EthereumChainSpecParser>;

/// The subcommands this module runs; `main` hands it argv when the first argument is one.
pub const COMMANDS: [&str; 9] = [
    "init",
    "init-state",
    "import",
    "import-era",
    "export-era",
    "stage",
    "prune",
    "re-execute",
    "db",
];

#[derive(Debug, Parser)]
#[command(
    name = "reth-hybrid-node",
    about = "reth's operator commands on a reth-hybrid datadir (MDBX + hybrid-rocksdb)"
)]
struct OperatorCli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    logs: LogArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Initialize the database from a genesis file.
    Init {
        #[command(flatten)]
        env: Env,
    },
    /// Initialize the database from a state dump file (reth's flags and file format).
    InitState(Box<InitStateCommand<EthereumChainSpecParser>>),
    /// Import RLP-encoded blocks from a file (or files) through reth's pipeline.
    Import(ImportArgs),
    /// Import headers and bodies from ERA files, local or remote.
    ImportEra(Box<era::ImportEraArgs>),
    /// Export headers and bodies to ERA files.
    ExportEra(Box<era::ExportEraArgs>),
    /// Manipulate individual stages.
    Stage {
        #[command(subcommand)]
        command: StageCommand,
    },
    /// Prune according to the configuration without any limits.
    Prune {
        #[command(flatten)]
        env: Env,
    },
    /// Re-execute stored blocks in parallel and check them against the stored results.
    ReExecute(Box<re_execute::ReExecuteArgs>),
    /// Database debugging utilities.
    Db(db::DbArgs),
}

#[derive(Debug, clap::Args)]
struct ImportArgs {
    #[command(flatten)]
    env: Env,
    /// Disables stages that require state.
    #[arg(long)]
    no_state: bool,
    /// Chunk byte length to read from file.
    #[arg(long, value_name = "CHUNK_LEN")]
    chunk_len: Option<u64>,
    /// Fail immediately when an invalid block is encountered (default: stop at the last valid
    /// block and succeed).
    #[arg(long)]
    fail_on_invalid_block: bool,
    /// The path(s) to block file(s) for import, imported in order.
    #[arg(value_name = "IMPORT_PATH", required = true, num_args = 1..)]
    paths: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum StageCommand {
    /// Unwinds a certain block range, deleting it from the database (MDBX and RocksDB tables).
    Unwind(Box<UnwindArgs>),
    /// Resets a stage: clears its tables (wherever the hybrid keeps them) and its checkpoint.
    Drop(Box<stage::DropArgs>),
    /// Runs a single stage over a block range.
    Run(Box<stage::RunArgs>),
    /// Dumps a stage's inputs over a block range into a new (hybrid) datadir.
    Dump(Box<stage_dump::DumpArgs>),
}

#[derive(Debug, clap::Args)]
struct UnwindArgs {
    #[command(flatten)]
    env: Env,
    #[command(subcommand)]
    target: UnwindTarget,
    /// Unwind every stage except headers, bodies and sender recovery.
    #[arg(long)]
    offline: bool,
}

#[derive(Debug, Subcommand)]
enum UnwindTarget {
    /// Unwind down to this block number or hash; the block stays.
    #[command(name = "to-block")]
    ToBlock {
        target: alloy_eips::BlockHashOrNumber,
    },
    /// Unwind this many blocks from the latest one.
    #[command(name = "num-blocks")]
    NumBlocks { amount: u64 },
}

/// Runs one operator command from `argv` (program name first) and returns the exit code.
pub fn main(argv: Vec<String>) -> i32 {
    let cli = OperatorCli::parse_from(argv);
    match run(cli) {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("Error: {err:?}");
            1
        }
    }
}

fn run(mut cli: OperatorCli) -> eyre::Result<()> {
    if let Some(chain) = cli.command.chain() {
        cli.logs.log_file_directory = cli.logs.log_file_directory.join(chain);
    }
    let _guard = cli.logs.init_tracing()?;
    let runner = CliRunner::try_default_runtime()?;
    let runtime = runner.runtime();
    match cli.command {
        Command::Init { env } => runner.run_blocking_until_ctrl_c(init(env, runtime)),
        Command::Import(args) => runner.run_blocking_until_ctrl_c(import(args, runtime)),
        Command::Stage {
            command: StageCommand::Unwind(args),
        } => runner.run_blocking_until_ctrl_c(unwind(*args, runtime)),
        Command::Stage {
            command: StageCommand::Drop(args),
        } => runner.run_blocking_until_ctrl_c(stage::drop_stage(*args, runtime)),
        Command::Stage {
            command: StageCommand::Run(args),
        } => runner.run_blocking_until_ctrl_c(stage::run_stage(*args, runtime)),
        Command::Stage {
            command: StageCommand::Dump(args),
        } => runner.run_blocking_until_ctrl_c(stage_dump::run(*args, runtime)),
        Command::InitState(args) => runner.run_blocking_until_ctrl_c(init_state(*args, runtime)),
        Command::ImportEra(args) => runner.run_blocking_until_ctrl_c(era::import(*args, runtime)),
        Command::ExportEra(args) => runner.run_blocking_until_ctrl_c(era::export(*args, runtime)),
        Command::Prune { env } => runner.run_blocking_until_ctrl_c(prune(env, runtime)),
        Command::ReExecute(args) => {
            runner.run_blocking_until_ctrl_c(re_execute::run(*args, runtime))
        }
        Command::Db(args) => runner.run_blocking_until_ctrl_c(db::run(args, runtime)),
    }
}

impl Command {
    fn chain(&self) -> Option<String> {
        let env = match self {
            Self::Init { env } | Self::Prune { env } => env,
            Self::Import(args) => &args.env,
            Self::InitState(args) => &args.env,
            Self::ImportEra(args) => args.env(),
            Self::ExportEra(args) => args.env(),
            Self::Stage {
                command: StageCommand::Unwind(args),
            } => &args.env,
            Self::Stage {
                command: StageCommand::Drop(args),
            } => args.env(),
            Self::Stage {
                command: StageCommand::Run(args),
            } => args.env(),
            Self::Stage {
                command: StageCommand::Dump(args),
            } => args.env(),
            Self::ReExecute(args) => args.env(),
            Self::Db(args) => args.env(),
        };
        Some(env.chain.chain().to_string())
    }
}

fn components(
    factory: &env::HybridFactory,
) -> (
    EthEvmConfig,
    Arc<EthBeaconConsensus<reth_chainspec::ChainSpec>>,
) {
    let spec = factory.chain_spec();
    (
        EthEvmConfig::new(spec.clone()),
        Arc::new(EthBeaconConsensus::new(spec)),
    )
}

async fn init(env: Env, runtime: reth_tasks::Runtime) -> eyre::Result<()> {
    info!(target: "reth::cli", "reth init starting (reth-hybrid)");
    let HybridEnvironment {
        provider_factory, ..
    } = HybridEnvironment::init(&env, Access::ReadWrite, runtime)?;
    let genesis = provider_factory.chain_spec().genesis_header().number;
    let hash = provider_factory
        .block_hash(genesis)?
        .ok_or_else(|| eyre::eyre!("Genesis hash not found."))?;
    info!(target: "reth::cli", hash = ?hash, "Genesis block written");
    Ok(())
}

/// reth's `init-state`: the dump goes through reth's `init_from_state_dump` into the hybrid (the
/// state root it computes must equal the header's); `--without-evm` first writes reth's dummy
/// chain up to the dump's header.
async fn init_state(
    args: InitStateCommand<EthereumChainSpecParser>,
    runtime: reth_tasks::Runtime,
) -> eyre::Result<()> {
    info!(target: "reth::cli", "Reth init-state starting (reth-hybrid)");
    let HybridEnvironment {
        provider_factory,
        config,
    } = HybridEnvironment::init(&args.env, Access::ReadWrite, runtime)?;
    if args.without_evm {
        let provider_rw = provider_factory.database_provider_rw()?;
        let header_file = args
            .header
            .ok_or_else(|| eyre::eyre!("Header file must be provided"))?;
        let header = read_header(&header_file)?;
        let header_hash = args.header_hash.unwrap_or_else(|| header.hash_slow());
        let last_block = provider_rw.last_block_number()?;
        if last_block == 0 {
            setup_without_evm(
                &provider_rw,
                SealedHeader::new(header, header_hash),
                |number| Header {
                    number,
                    ..Default::default()
                },
            )?;
            // As reth: static files first (a crash unwinds them to the database's checkpoints),
            // so init_from_state_dump below finds the header.
            provider_factory.static_file_provider().commit()?;
        } else if last_block < header.number {
            eyre::bail!(
                "Data directory should be empty when calling init-state with --without-evm."
            );
        }
        provider_rw.commit()?;
    }
    info!(target: "reth::cli", "Initiating state dump");
    let reader = BufReader::new(reth_fs_util::open(&args.state)?);
    let hash = init_from_state_dump(reader, &provider_factory, config.stages.etl)?;
    info!(target: "reth::cli", hash = ?hash, "Genesis block written");
    Ok(())
}

/// A header as RLP, raw or hex, as reth's `--header` takes it.
fn read_header(path: &std::path::Path) -> eyre::Result<Header> {
    let bytes = match reth_fs_util::read_to_string(path) {
        Ok(text) => alloy_primitives::hex::decode(text.trim())?,
        Err(_) => reth_fs_util::read(path)?,
    };
    Ok(alloy_rlp::Decodable::decode(&mut bytes.as_slice())?)
}

async fn import(args: ImportArgs, runtime: reth_tasks::Runtime) -> eyre::Result<()> {
    let HybridEnvironment {
        provider_factory,
        config,
        ..
    } = HybridEnvironment::init(&args.env, Access::ReadWrite, runtime.clone())?;
    let (evm, consensus) = components(&provider_factory);
    let import_config = ImportConfig {
        no_state: args.no_state,
        chunk_len: args.chunk_len,
        fail_on_invalid_block: args.fail_on_invalid_block,
    };
    info!(target: "reth::cli", "Starting import of {} file(s)", args.paths.len());
    let (mut blocks, mut txs) = (0, 0);
    for (index, path) in args.paths.iter().enumerate() {
        info!(target: "reth::cli", "Importing file {} of {}: {}", index + 1, args.paths.len(), path.display());
        let result = import_blocks_from_file(
            path,
            import_config.clone(),
            provider_factory.clone(),
            &config,
            evm.clone(),
            consensus.clone(),
            runtime.clone(),
        )
        .await?;
        blocks += result.total_imported_blocks;
        txs += result.total_imported_txns;
        if result.stopped_on_invalid_block {
            info!(
                target: "reth::cli",
                "Stopped at last valid block {} due to invalid block {} in file: {}",
                result.last_valid_block.unwrap_or(0),
                result.bad_block.unwrap_or(0),
                path.display()
            );
            break;
        }
        eyre::ensure!(
            result.is_successful(),
            "Chain was partially imported from file: {}. Imported {}/{} blocks, {}/{} transactions",
            path.display(),
            result.total_imported_blocks,
            result.total_decoded_blocks,
            result.total_imported_txns,
            result.total_decoded_txns
        );
        info!(target: "reth::cli", "Successfully imported file {}: {} blocks, {} transactions", path.display(), result.total_imported_blocks, result.total_imported_txns);
    }
    info!(target: "reth::cli", "Import complete. Total: {blocks} blocks, {txs} transactions");
    Ok(())
}

async fn unwind(args: UnwindArgs, runtime: reth_tasks::Runtime) -> eyre::Result<()> {
    let HybridEnvironment {
        provider_factory,
        config,
        ..
    } = HybridEnvironment::init(&args.env, Access::ReadWrite, runtime)?;
    let last = provider_factory.provider()?.last_block_number()?;
    let target = match args.target {
        UnwindTarget::ToBlock {
            target: alloy_eips::BlockHashOrNumber::Number(number),
        } => number,
        UnwindTarget::ToBlock {
            target: alloy_eips::BlockHashOrNumber::Hash(hash),
        } => provider_factory
            .provider()?
            .block_number(hash)?
            .ok_or_else(|| eyre::eyre!("Block hash not found in database: {hash:?}"))?,
        UnwindTarget::NumBlocks { amount } => last.saturating_sub(amount),
    };
    eyre::ensure!(
        target <= last,
        "Target block number {target} is higher than the latest block number {last}"
    );
    if args.offline {
        info!(target: "reth::cli", "Performing an unwind for offline-only data!");
    }
    info!(target: "reth::cli", ?target, highest_block = last, prune_config = ?config.prune, "Executing a pipeline unwind.");
    let (evm, _) = components(&provider_factory);
    let mut pipeline = pipeline::unwind_pipeline(provider_factory, &config, evm, args.offline);
    pipeline.move_to_static_files()?;
    pipeline.unwind(target, None)?;
    info!(target: "reth::cli", ?target, "Unwound blocks");
    Ok(())
}

async fn prune(env: Env, runtime: reth_tasks::Runtime) -> eyre::Result<()> {
    let HybridEnvironment {
        provider_factory,
        config,
        ..
    } = HybridEnvironment::init(&env, Access::ReadWrite, runtime)?;
    let prune = config.prune;
    info!(target: "reth::cli", "Copying data from database to static files...");
    let producer =
        reth_static_file::StaticFileProducer::new(provider_factory.clone(), prune.segments.clone());
    let lowest = producer.lock().copy_to_static_files()?.min_block_num();
    info!(target: "reth::cli", lowest_static_file_height = ?lowest, "Copied data from database to static files");
    let Some(prune_tip) = lowest else {
        return Ok(());
    };
    info!(target: "reth::cli", ?prune_tip, config = ?prune, "Pruning data from database...");
    // As reth: batches bound memory (~5 GB at this limit); each batch is one hybrid commit.
    const DELETE_LIMIT: usize = 20_000_000;
    let mut pruner = reth_prune::PrunerBuilder::new(prune)
        .delete_limit(DELETE_LIMIT)
        .build_with_provider_factory(provider_factory);
    let mut total = 0usize;
    loop {
        let output = pruner.run(prune_tip)?;
        let batch: usize = output.segments.iter().map(|(_, s)| s.pruned).sum();
        total = total.saturating_add(batch);
        if output.progress.is_finished() {
            info!(target: "reth::cli", total_pruned = total, "Pruned data from database");
            return Ok(());
        }
        eyre::ensure!(
            batch > 0,
            "the pruner made no progress but reported more data remaining; stopped"
        );
        info!(target: "reth::cli", batch_pruned = batch, total_pruned = total, "Pruning batch complete, continuing...");
    }
}
