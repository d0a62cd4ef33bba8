//! The hybrid counterpart of reth's `EnvironmentArgs::init`: the same directories, config file,
//! static files and consistency heal, with the hybrid database where reth opens MDBX alone.

use super::pipeline::unwind_pipeline;
use reth_chainspec::{ChainSpecProvider, EthChainSpec};
use reth_cli_commands::common::EnvironmentArgs;
use reth_config::{Config, config::EtlConfig};
use reth_db_common::init::init_genesis_with_settings;
use reth_ethereum_cli::chainspec::EthereumChainSpecParser;
use reth_hybrid_adapter::{HybridNodeDb, open_hybrid, open_hybrid_read_only};
use reth_node_builder::NodeTypesWithDBAdapter;
use reth_node_ethereum::EthereumNode;
use reth_provider::{
    ProviderFactory, StaticFileProviderFactory, StorageSettings,
    providers::{RocksDBProvider, StaticFileProviderBuilder},
};
use tracing::{info, warn};

/// The node types of every operator command: reth's Ethereum node on the hybrid database.
pub type HybridTypes = NodeTypesWithDBAdapter<EthereumNode, HybridNodeDb>;
pub type HybridFactory = ProviderFactory<HybridTypes>;

/// What a command may do to the datadir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Opens (creating) the datadir, recovers a commit in flight, heals static files, writes
    /// genesis if missing: what the node does at start.
    ReadWrite,
    /// [`Access::ReadWrite`] without the static-file heal (reth's `RwInconsistent`: a receipts
    /// backfill, where receipts trail execution on purpose).
    WriteWithoutHeal,
    /// Changes nothing on disk; a datadir that needs recovery or healing is reported.
    ReadOnly,
}

pub struct HybridEnvironment {
    pub config: Config,
    pub provider_factory: HybridFactory,
}

impl HybridEnvironment {
    pub fn init(
        args: &EnvironmentArgs<EthereumChainSpecParser>,
        access: Access,
        runtime: reth_tasks::Runtime,
    ) -> eyre::Result<Self> {
        let writes = access != Access::ReadOnly;
        if args.storage.v2 && writes {
            info!(
                target: "reth_hybrid",
                "reth's v1 storage layout (history through the Database traits into reth-hybrid's \
                 router); --storage.v2 does not apply"
            );
        }
        let data_dir = args.datadir.clone().resolve_datadir(args.chain.chain());
        let (db_path, sf_path, rocksdb_path) =
            (data_dir.db(), data_dir.static_files(), data_dir.rocksdb());
        if access == Access::ReadOnly {
            eyre::ensure!(
                db_path.join("mdbx.dat").is_file(),
                "{} holds no database: a read-only command needs an initialised datadir (run \
                 `init` or `import` first, or check --datadir and --chain)",
                db_path.display()
            );
        }
        info!(target: "reth::cli", ?db_path, ?sf_path, "Opening storage (reth-hybrid)");
        let genesis_block_number = args.chain.genesis().number.unwrap_or_default();
        let db_args = args.db.database_args();
        // ORDER: the hybrid's refusals (a stock or storage-v2 datadir, a migration in progress)
        // come before anything is created in the datadir: folders, static files, config file.
        let (db, static_files) = match access {
            Access::ReadWrite | Access::WriteWithoutHeal => {
                reth_fs_util::create_dir_all(data_dir.data_dir())?;
                let db = open_hybrid(data_dir.data_dir(), db_args)?;
                for dir in [&sf_path, &rocksdb_path] {
                    reth_fs_util::create_dir_all(dir)?;
                }
                let static_files = StaticFileProviderBuilder::read_write(&sf_path)
                    .with_metrics()
                    .with_genesis_block_number(genesis_block_number)
                    .build()?;
                (db, static_files)
            }
            Access::ReadOnly => (
                open_hybrid_read_only(data_dir.data_dir(), db_args)?,
                StaticFileProviderBuilder::read_only(&sf_path)
                    .with_metrics()
                    .with_genesis_block_number(genesis_block_number)
                    .build()?,
            ),
        };
        let config_path = args.config.clone().unwrap_or_else(|| data_dir.config());
        // reth's loader writes a default file where there is none: not for a read-only command.
        let mut config = match access == Access::ReadOnly && !config_path.exists() {
            true => Config::default(),
            false => Config::from_path(&config_path)
                .inspect_err(|err| {
                    warn!(target: "reth::cli", %err, "Failed to load config file, using default")
                })
                .unwrap_or_default(),
        };
        // ETL and era files under the datadir, not /tmp, as reth does.
        if config.stages.etl.dir.is_none() {
            config.stages.etl.dir = Some(EtlConfig::from_datadir(data_dir.data_dir()));
        }
        if config.stages.era.folder.is_none() {
            config.stages.era = config.stages.era.with_datadir(data_dir.data_dir());
        }
        // reth opens its own RocksDB in every layout (empty in v1); the factory needs it.
        if !RocksDBProvider::exists(&rocksdb_path) {
            eyre::ensure!(
                writes,
                "{} is missing: the datadir was not written by reth v2.x; start the node (or run \
                 a read-write command such as `init`) once",
                rocksdb_path.display()
            );
        }
        let mut rocksdb = RocksDBProvider::builder(&rocksdb_path)
            .with_default_tables()
            .with_database_log_level(args.db.log_level)
            .with_read_only(access == Access::ReadOnly);
        if let Some(cache_size) = args.db.rocksdb_block_cache_size {
            rocksdb = rocksdb.with_block_cache_size(cache_size);
        }
        let provider_factory = ProviderFactory::<HybridTypes>::new(
            db,
            args.chain.clone(),
            static_files,
            rocksdb.build()?,
            runtime,
        )?
        .with_prune_modes(config.prune.segments.clone())
        .with_minimum_pruning_distance(config.prune.minimum_pruning_distance);

        if access != Access::WriteWithoutHeal {
            heal_static_files(&provider_factory, &config, access)?;
        }
        if writes {
            init_genesis_with_settings(&provider_factory, StorageSettings::v1())?;
        }
        Ok(Self {
            config,
            provider_factory,
        })
    }
}

/// reth's check between MDBX and the static files; read-write, an unwind heals a difference as
/// the node would at start.
fn heal_static_files(factory: &HybridFactory, config: &Config, access: Access) -> eyre::Result<()> {
    let Some(target) = factory
        .static_file_provider()
        .check_consistency(&factory.provider()?)?
    else {
        return Ok(());
    };
    if access == Access::ReadOnly {
        warn!(target: "reth::cli", unwind_target = %target, "Inconsistent storage. Restart node to heal.");
        return Ok(());
    }
    let block = target.unwind_target().ok_or_else(|| {
        eyre::eyre!("storage consistency check asked for {target}, not an unwind")
    })?;
    eyre::ensure!(
        block != 0,
        "a static file <> database inconsistency was found that would unwind to block 0; \
         refusing (restore the datadir from a copy)"
    );
    info!(target: "reth::cli", unwind_target = %target, "Executing an unwind after a failed storage consistency check.");
    let evm = reth_node_ethereum::EthEvmConfig::new(factory.chain_spec());
    let mut pipeline = unwind_pipeline(factory.clone(), config, evm, false);
    pipeline.move_to_static_files()?;
    pipeline.unwind(block, None)?;
    Ok(())
}
