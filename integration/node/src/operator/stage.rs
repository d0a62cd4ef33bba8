//! `stage drop` and `stage run`: reth's stage tools on a hybrid datadir (`stage run headers` and
//! `bodies` download from peers through reth's network, as reth's do). reth's own clear the
//! tables by name in MDBX (or in its RocksDB for storage v2); here every clear goes through the
//! hybrid's router, so dropping the history or tx-lookup stage empties the RocksDB table, and
//! running a stage writes through the same router as the node's pipeline does.

use super::{
    Env, components,
    env::{Access, HybridEnvironment, HybridFactory},
};
use alloy_eips::BlockHashOrNumber;
use reth_chainspec::{ChainSpecProvider, EthChainSpec};
use reth_cli_util::get_secret_key;
use reth_config::config::{HashingConfig, SenderRecoveryConfig, TransactionLookupConfig};
use reth_db_api::{
    tables,
    transaction::{DbTx, DbTxMut},
};
use reth_db_common::init::{
    insert_genesis_account_history, insert_genesis_header, insert_genesis_state,
    insert_genesis_storage_history,
};
use reth_downloaders::{
    bodies::bodies::BodiesDownloaderBuilder,
    headers::reverse_headers::ReverseHeadersDownloaderBuilder,
};
use reth_exex::ExExManagerHandle;
use reth_network::{BlockDownloaderProvider, EthNetworkPrimitives, FetchClient, NetworkInfo};
use reth_network_p2p::headers::client::HeadersClient;
use reth_node_core::args::NetworkArgs;
use reth_node_core::args::StageEnum;
use reth_provider::providers::BlockchainProvider;
use reth_provider::{
    DBProvider, DatabaseProviderFactory, StageCheckpointReader, StageCheckpointWriter,
    StaticFileProviderFactory, StaticFileWriter,
};
use reth_prune::PruneSegment;
use reth_stages::{
    ExecInput, ExecOutput, ExecutionStageThresholds, Stage, StageExt, StageId, UnwindInput,
    UnwindOutput,
    stages::{
        AccountHashingStage, BodyStage, ExecutionStage, HeaderStage, IndexAccountHistoryStage,
        IndexStorageHistoryStage, MerkleStage, SenderRecoveryStage, StorageHashingStage,
        TransactionLookupStage,
    },
};
use reth_static_file_types::StaticFileSegment;
use std::sync::Arc;
use std::{net::SocketAddr, time::Instant};
use tokio::sync::watch;
use tracing::{info, warn};

#[derive(Debug, clap::Args)]
pub struct DropArgs {
    #[command(flatten)]
    env: Env,
    /// The stage whose tables and checkpoint are reset (genesis rows are written back).
    stage: StageEnum,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    env: Env,
    /// Enable Prometheus metrics (reth's and reth-hybrid's), served at this address.
    #[arg(long, value_name = "SOCKET")]
    metrics: Option<SocketAddr>,
    /// The name of the stage to run.
    #[arg(value_enum)]
    stage: StageEnum,
    /// The height to start at.
    #[arg(long)]
    from: u64,
    /// The end of the stage.
    #[arg(long, short)]
    to: u64,
    /// Batch size for stage execution and unwind.
    #[arg(long)]
    batch_size: Option<u64>,
    /// Skip unwinding the range first (for a range the stage has not run on).
    #[arg(long, short)]
    skip_unwind: bool,
    /// Commit the changes in the database. WARNING: potentially destructive. Required for the
    /// headers, bodies and execution stages, which write static files.
    #[arg(long, short)]
    commit: bool,
    /// Save stage checkpoints.
    #[arg(long)]
    checkpoints: bool,
    /// The network the headers and bodies stages download from (reth's flags: `--trusted-peers`,
    /// `--trusted-only`, `--disable-discovery`, `--port`, ...).
    #[command(flatten)]
    network: NetworkArgs,
}

impl DropArgs {
    pub fn env(&self) -> &Env {
        &self.env
    }
}

impl RunArgs {
    pub fn env(&self) -> &Env {
        &self.env
    }
}

pub async fn drop_stage(args: DropArgs, runtime: reth_tasks::Runtime) -> eyre::Result<()> {
    let HybridEnvironment {
        provider_factory, ..
    } = HybridEnvironment::init(&args.env, Access::ReadWrite, runtime)?;
    let chain = provider_factory.chain_spec();

    // As reth: static-file rows are pruned by the writers at their commit, not by deleting
    // files, so an interruption before the checkpoints commit loses nothing.
    let segments: &[StaticFileSegment] = match args.stage {
        StageEnum::Headers => &[StaticFileSegment::Headers],
        StageEnum::Bodies => &[StaticFileSegment::Transactions],
        StageEnum::Execution => &[
            StaticFileSegment::Receipts,
            StaticFileSegment::AccountChangeSets,
            StaticFileSegment::StorageChangeSets,
        ],
        StageEnum::Senders => &[StaticFileSegment::TransactionSenders],
        _ => &[],
    };
    let static_files = provider_factory.static_file_provider();
    for &segment in segments {
        let Some(highest_block) = static_files.get_highest_static_file_block(segment) else {
            continue;
        };
        let mut writer = static_files.latest_writer(segment)?;
        let txs = || {
            static_files
                .get_highest_static_file_tx(segment)
                .map(|tx| tx + 1)
                .unwrap_or_default()
        };
        match segment {
            StaticFileSegment::Headers => writer.prune_headers(highest_block)?,
            StaticFileSegment::Transactions => writer.prune_transactions(txs(), 0)?,
            StaticFileSegment::Receipts => writer.prune_receipts(txs(), 0)?,
            StaticFileSegment::TransactionSenders => writer.prune_transaction_senders(txs(), 0)?,
            StaticFileSegment::AccountChangeSets => {
                writer.prune_account_changesets(highest_block)?
            }
            StaticFileSegment::StorageChangeSets => {
                writer.prune_storage_changesets(highest_block)?
            }
        }
    }

    let provider_rw = provider_factory.unwind_provider_rw()?;
    let tx = provider_rw.tx_ref();
    let reset_stage =
        |stage: StageId| tx.put::<tables::StageCheckpoints>(stage.to_string(), Default::default());
    let reset_prune = |segment: PruneSegment| -> eyre::Result<()> {
        if let Some(mut checkpoint) = tx.get::<tables::PruneCheckpoints>(segment)? {
            checkpoint.block_number = None;
            checkpoint.tx_number = None;
            tx.put::<tables::PruneCheckpoints>(segment, checkpoint)?;
        }
        Ok(())
    };
    // The hybrid runs reth's v1 layout (plain state canonical, history through the tables), so
    // these are the clears of reth's v1 branch; the router sends the history and tx-hash ones to
    // RocksDB inside the same commit.
    match args.stage {
        StageEnum::Headers => {
            tx.clear::<tables::CanonicalHeaders>()?;
            tx.clear::<tables::Headers>()?;
            tx.clear::<tables::HeaderNumbers>()?;
            reset_stage(StageId::Headers)?;
            insert_genesis_header(&provider_rw, &chain)?;
        }
        StageEnum::Bodies => {
            tx.clear::<tables::BlockBodyIndices>()?;
            tx.clear::<tables::Transactions>()?;
            tx.clear::<tables::TransactionBlocks>()?;
            tx.clear::<tables::BlockOmmers>()?;
            tx.clear::<tables::BlockWithdrawals>()?;
            reset_stage(StageId::Bodies)?;
            insert_genesis_header(&provider_rw, &chain)?;
        }
        StageEnum::Senders => {
            tx.clear::<tables::TransactionSenders>()?;
            // Pruned numbers would otherwise count in the next run's progress.
            reset_prune(PruneSegment::SenderRecovery)?;
            reset_stage(StageId::SenderRecovery)?;
        }
        StageEnum::Execution => {
            tx.clear::<tables::PlainAccountState>()?;
            tx.clear::<tables::PlainStorageState>()?;
            tx.clear::<tables::AccountChangeSets>()?;
            tx.clear::<tables::StorageChangeSets>()?;
            tx.clear::<tables::Bytecodes>()?;
            tx.clear::<tables::Receipts>()?;
            reset_prune(PruneSegment::Receipts)?;
            reset_prune(PruneSegment::ContractLogs)?;
            reset_stage(StageId::Execution)?;
            insert_genesis_state(&provider_rw, chain.genesis().alloc.iter())?;
        }
        StageEnum::AccountHashing => {
            tx.clear::<tables::HashedAccounts>()?;
            reset_stage(StageId::AccountHashing)?;
        }
        StageEnum::StorageHashing => {
            tx.clear::<tables::HashedStorages>()?;
            reset_stage(StageId::StorageHashing)?;
        }
        StageEnum::Hashing => {
            tx.clear::<tables::HashedAccounts>()?;
            reset_stage(StageId::AccountHashing)?;
            tx.clear::<tables::HashedStorages>()?;
            reset_stage(StageId::StorageHashing)?;
        }
        StageEnum::Merkle => {
            tx.clear::<tables::AccountsTrie>()?;
            tx.clear::<tables::StoragesTrie>()?;
            reset_stage(StageId::MerkleExecute)?;
            reset_stage(StageId::MerkleUnwind)?;
            tx.delete::<tables::StageCheckpointProgresses>(
                StageId::MerkleExecute.to_string(),
                None,
            )?;
        }
        StageEnum::AccountHistory => {
            tx.clear::<tables::AccountsHistory>()?;
            reset_stage(StageId::IndexAccountHistory)?;
            insert_genesis_account_history(&provider_rw, chain.genesis().alloc.iter())?;
        }
        StageEnum::StorageHistory => {
            tx.clear::<tables::StoragesHistory>()?;
            reset_stage(StageId::IndexStorageHistory)?;
            insert_genesis_storage_history(&provider_rw, chain.genesis().alloc.iter())?;
        }
        StageEnum::TxLookup => {
            tx.clear::<tables::TransactionHashNumbers>()?;
            reset_prune(PruneSegment::TransactionLookup)?;
            reset_stage(StageId::TransactionLookup)?;
            insert_genesis_header(&provider_rw, &chain)?;
        }
    }
    tx.put::<tables::StageCheckpoints>(StageId::Finish.to_string(), Default::default())?;
    provider_rw.commit()?;
    info!(target: "reth::cli", stage = %args.stage, "Dropped the stage's tables and checkpoint");
    Ok(())
}

pub async fn run_stage(args: RunArgs, runtime: reth_tasks::Runtime) -> eyre::Result<()> {
    // As reth: these stages write static files, which only a commit unwinds.
    eyre::ensure!(
        args.commit
            || !matches!(
                args.stage,
                StageEnum::Headers | StageEnum::Bodies | StageEnum::Execution
            ),
        "The stage {} requires overwriting existing static files and must commit, but `--commit` \
         was not provided. Please pass `--commit` and try again.",
        args.stage
    );
    let _ = fdlimit::raise_fd_limit();
    let HybridEnvironment {
        provider_factory,
        config,
    } = HybridEnvironment::init(&args.env, Access::ReadWrite, runtime.clone())?;
    if let Some(listen_addr) = args.metrics {
        let pprof_dumps = args
            .env
            .datadir
            .clone()
            .resolve_datadir(args.env.chain.chain())
            .pprof_dumps();
        super::metrics::serve(listen_addr, &provider_factory, pprof_dumps, runtime.clone()).await?;
    }
    let (evm, consensus) = components(&provider_factory);
    let batch_size = args
        .batch_size
        .unwrap_or(args.to.saturating_sub(args.from) + 1);
    let etl = config.stages.etl.clone();
    let prune_modes = config.prune.segments.clone();
    let fetch_client = match args.stage {
        StageEnum::Headers | StageEnum::Bodies => Some(Arc::new(
            fetch_client(&args, &config, &provider_factory, runtime.clone()).await?,
        )),
        _ => None,
    };

    let mut provider_rw = provider_factory.database_provider_rw()?;
    let (mut exec_stage, mut unwind_stage): (Box<dyn Stage<_>>, Option<Box<dyn Stage<_>>>) = match (
        args.stage,
        fetch_client,
    ) {
        (StageEnum::Headers, Some(client)) => {
            info!(target: "reth::cli", to = args.to, "Asking the network for the tip's header");
            let tip = loop {
                match client.get_header(BlockHashOrNumber::Number(args.to)).await {
                    Ok(header) => match header.into_data() {
                        Some(header) => break header,
                        // A peer behind --to answers with nothing: ask again, not in a spin.
                        None => {
                            warn!(target: "reth::cli", to = args.to, "No peer returned the tip's header yet; retrying");
                            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                        }
                    },
                    Err(error) if error.is_retryable() => {
                        warn!(target: "reth::cli", %error, "Error requesting the tip's header; retrying")
                    }
                    Err(error) => return Err(error.into()),
                }
            };
            let (_, tip_hash) = watch::channel(tip.hash_slow());
            (
                Box::new(HeaderStage::new(
                    provider_factory.clone(),
                    ReverseHeadersDownloaderBuilder::new(config.stages.headers)
                        .build(client, consensus.clone()),
                    tip_hash,
                    etl,
                )),
                None,
            )
        }
        (StageEnum::Bodies, Some(client)) => {
            let bodies = &config.stages.bodies;
            (
                Box::new(BodyStage::new(
                    BodiesDownloaderBuilder::default()
                        .with_stream_batch_size(batch_size as usize)
                        .with_request_limit(bodies.downloader_request_limit)
                        .with_max_buffered_blocks_size_bytes(
                            bodies.downloader_max_buffered_blocks_size_bytes,
                        )
                        .with_concurrent_requests_range(
                            bodies.downloader_min_concurrent_requests
                                ..=bodies.downloader_max_concurrent_requests,
                        )
                        .build(client, consensus.clone(), provider_factory.clone()),
                )),
                None,
            )
        }
        (stage, _) => match stage {
            StageEnum::Senders => (
                Box::new(SenderRecoveryStage::new(
                    SenderRecoveryConfig {
                        commit_threshold: batch_size,
                    },
                    None,
                )),
                None,
            ),
            StageEnum::Execution => (
                Box::new(ExecutionStage::new(
                    evm,
                    consensus,
                    ExecutionStageThresholds {
                        max_blocks: Some(batch_size),
                        max_changes: None,
                        max_cumulative_gas: None,
                        max_duration: None,
                    },
                    config.stages.merkle.incremental_threshold,
                    ExExManagerHandle::empty(),
                )),
                None,
            ),
            StageEnum::TxLookup => (
                Box::new(TransactionLookupStage::new(
                    TransactionLookupConfig {
                        chunk_size: batch_size,
                    },
                    etl,
                    prune_modes.transaction_lookup,
                )),
                None,
            ),
            StageEnum::AccountHashing | StageEnum::StorageHashing => {
                let hashing = HashingConfig {
                    clean_threshold: 1,
                    commit_threshold: batch_size,
                    commit_entries: u64::MAX,
                };
                if args.stage == StageEnum::AccountHashing {
                    (Box::new(AccountHashingStage::new(hashing, etl)), None)
                } else {
                    (Box::new(StorageHashingStage::new(hashing, etl)), None)
                }
            }
            StageEnum::Merkle => (
                Box::new(MerkleStage::new_execution(
                    config.stages.merkle.rebuild_threshold,
                    config.stages.merkle.incremental_threshold,
                )),
                Some(Box::new(MerkleStage::default_unwind())),
            ),
            StageEnum::AccountHistory => (
                Box::new(IndexAccountHistoryStage::new(
                    config.stages.index_account_history,
                    etl,
                    prune_modes.account_history,
                )),
                None,
            ),
            StageEnum::StorageHistory => (
                Box::new(IndexStorageHistoryStage::new(
                    config.stages.index_storage_history,
                    etl,
                    prune_modes.storage_history,
                )),
                None,
            ),
            // reth runs nothing for `hashing` (no single stage); neither do we, but say so.
            StageEnum::Hashing => eyre::bail!(
                "`hashing` names two stages: run `account-hashing` and `storage-hashing`"
            ),
            StageEnum::Headers | StageEnum::Bodies => unreachable!("a fetch client was made"),
        },
    };

    let checkpoint = provider_rw
        .get_stage_checkpoint(exec_stage.id())?
        .unwrap_or_default();
    let unwind_stage = unwind_stage.as_mut().unwrap_or(&mut exec_stage);
    let mut unwind = UnwindInput {
        checkpoint: checkpoint.with_block_number(args.to),
        unwind_to: args.from,
        bad_block: None,
    };
    if !args.skip_unwind {
        while unwind.checkpoint.block_number > args.from {
            let UnwindOutput { checkpoint } = unwind_stage.unwind(&provider_rw, unwind)?;
            unwind.checkpoint = checkpoint;
            if args.checkpoints {
                provider_rw.save_stage_checkpoint(unwind_stage.id(), checkpoint)?;
            }
            if args.commit {
                provider_rw.commit()?;
                provider_rw = provider_factory.database_provider_rw()?;
            }
        }
    }

    let mut input = ExecInput {
        target: Some(args.to),
        checkpoint: Some(checkpoint.with_block_number(args.from)),
    };
    let start = Instant::now();
    info!(target: "reth::cli", stage = %args.stage, "Executing stage");
    loop {
        exec_stage.execute_ready(input).await?;
        let ExecOutput { checkpoint, done } = exec_stage.execute(&provider_rw, input)?;
        input.checkpoint = Some(checkpoint);
        if args.checkpoints {
            provider_rw.save_stage_checkpoint(exec_stage.id(), checkpoint)?;
        }
        if args.commit {
            provider_rw.commit()?;
            provider_rw = provider_factory.database_provider_rw()?;
        }
        if done {
            break;
        }
    }
    info!(target: "reth::cli", stage = %args.stage, time = ?start.elapsed(), "Finished stage");
    Ok(())
}

/// reth's network for the download stages, started on the hybrid's provider (peers are served
/// from it as a node would), and its fetch client. `--trusted-peers` count for both stages (reth
/// adds them for bodies only, so its headers stage finds peers by discovery alone).
async fn fetch_client(
    args: &RunArgs,
    config: &reth_config::Config,
    factory: &HybridFactory,
    runtime: reth_tasks::Runtime,
) -> eyre::Result<FetchClient<EthNetworkPrimitives>> {
    let mut config = config.clone();
    config.peers.trusted_nodes_only |= args.network.trusted_only;
    config
        .peers
        .trusted_nodes
        .extend(args.network.trusted_peers.clone());
    let data_dir = args
        .env
        .datadir
        .clone()
        .resolve_datadir(args.env.chain.chain());
    let secret_path = args
        .network
        .p2p_secret_key
        .clone()
        .unwrap_or_else(|| data_dir.p2p_secret());
    let network = args
        .network
        .network_config::<EthNetworkPrimitives>(
            &config,
            factory.chain_spec(),
            get_secret_key(&secret_path)?,
            data_dir.known_peers(),
            runtime,
        )
        .build(BlockchainProvider::new(factory.clone())?)
        .start_network()
        .await?;
    info!(target: "reth::cli", peer_id = %network.peer_id(), local_addr = %network.local_addr(), "Network started for the download stage");
    Ok(network.fetch_client().await?)
}
