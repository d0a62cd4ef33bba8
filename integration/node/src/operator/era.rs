//! `import-era` and `export-era` on a hybrid datadir: reth's ERA code (`reth_era_utils`) over the
//! hybrid's provider factory. ERA files carry headers and bodies, which live in static files and
//! MDBX in both layouts; the import also writes reth's `HeaderNumbers` index and the headers and
//! bodies checkpoints, so the node (or `stage run`) executes the blocks afterwards.

use super::{
    Env,
    env::{Access, HybridEnvironment},
};
use alloy_chains::{ChainKind, NamedChain};
use reqwest::{Client, Url};
use reth_chainspec::{EthChainSpec, EthereumHardforks};
use reth_era::{common::file_ops::EraFileType, era1::types::execution::MAX_BLOCKS_PER_ERA1};
use reth_era_downloader::{EraClient, EraStream, EraStreamConfig, read_dir, read_era_dir};
use reth_era_utils as era;
use reth_etl::Collector;
use reth_provider::{DatabaseProviderFactory, StaticFileProviderFactory};
use reth_static_file_types::StaticFileSegment;
use std::path::PathBuf;
use tracing::info;

#[derive(Debug, clap::Args)]
pub struct ImportEraArgs {
    #[command(flatten)]
    env: Env,
    #[command(flatten)]
    source: EraSource,
    /// Stop the import after this block height has been reached.
    #[arg(long, value_name = "TO_BLOCK")]
    to_block: Option<u64>,
    /// Backfill the `Receipts` static file segment from its tip up to the Execution checkpoint
    /// (Byzantium onwards, from `.era1` or `.ere` files that carry receipts).
    #[arg(long)]
    with_receipts: bool,
}

#[derive(Debug, clap::Args)]
#[group(required = false, multiple = false)]
struct EraSource {
    /// A local directory of ERA files (with `checksums.txt` for `.era1` and `.ere`).
    #[arg(long, value_name = "IMPORT_ERA_PATH")]
    path: Option<PathBuf>,
    /// A remote host serving ERA files (by default the chain's known host, if any).
    #[arg(long, value_name = "IMPORT_ERA_URL")]
    url: Option<Url>,
}

#[derive(Debug, clap::Args)]
pub struct ExportEraArgs {
    #[command(flatten)]
    env: Env,
    /// The ERA file format to export: `era1` or `ere`.
    #[arg(long, value_enum, default_value_t = ExportFileType::Era1)]
    file_type: ExportFileType,
    /// The first block to export (default 0).
    #[arg(long, value_name = "first-block-number")]
    first_block_number: Option<u64>,
    /// The last block to export (default 8191).
    #[arg(long, value_name = "last-block-number")]
    last_block_number: Option<u64>,
    /// The maximum number of blocks per file, at most 8192.
    #[arg(long, value_name = "max-blocks-per-file")]
    max_blocks_per_file: Option<u64>,
    /// The directory to write to (default `<data-dir>/<chain>/<format>-export/`).
    #[arg(long, value_name = "EXPORT_PATH")]
    path: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ExportFileType {
    /// `.era1` files.
    Era1,
    /// `.ere` files.
    Ere,
    /// Consensus-layer `.era`: not exportable from an execution database (an error, as in reth).
    Era,
}

impl ImportEraArgs {
    pub fn env(&self) -> &Env {
        &self.env
    }
}

impl ExportEraArgs {
    pub fn env(&self) -> &Env {
        &self.env
    }
}

pub async fn import(args: ImportEraArgs, runtime: reth_tasks::Runtime) -> eyre::Result<()> {
    info!(target: "reth::cli", "reth import-era starting (reth-hybrid)");
    // As reth: a receipts backfill expects receipts to trail execution, so the start-up heal,
    // which would unwind execution to the receipts first, is skipped.
    let access = match args.with_receipts {
        true => Access::WriteWithoutHeal,
        false => Access::ReadWrite,
    };
    let HybridEnvironment {
        provider_factory,
        config,
    } = HybridEnvironment::init(&args.env, access, runtime)?;
    let mut hash_collector = Collector::new(config.stages.etl.file_size, config.stages.etl.dir);
    let static_files = provider_factory.static_file_provider();
    let genesis_block = static_files.genesis_block_number();
    let headers_tip = static_files
        .get_highest_static_file_block(StaticFileSegment::Headers)
        .unwrap_or(genesis_block);
    // With receipts, files covering already-imported headers are read again for their receipts.
    let resume_block = match args.with_receipts {
        true => static_files
            .get_highest_static_file_block(StaticFileSegment::Receipts)
            .unwrap_or(genesis_block)
            .min(headers_tip),
        false => headers_tip,
    };
    let next_block = resume_block + 1;
    let with_receipts = args.with_receipts;
    let chain = args.env.chain.clone();
    let verifiable = move |number: u64| chain.is_byzantium_active_at_block(number);
    let to_block = args.to_block;

    if let Some(path) = args.source.path {
        let era_type = EraFileType::from_dir(&path)?.ok_or_else(|| {
            eyre::eyre!(
                "No ERA (.era), ERA1 (.era1) or ERE (.ere, .erae) files found in {}",
                path.display()
            )
        })?;
        info!(target: "reth::cli", ?era_type, path = %path.display(), ?to_block, with_receipts, "Starting ERA import");
        receipts_supported(with_receipts, era_type)?;
        match era_type {
            EraFileType::Era => era::import::<era::Era, _, _, _, _, _, _>(
                read_era_dir(path)?,
                &provider_factory,
                &mut hash_collector,
                to_block,
                with_receipts,
                &verifiable,
            )?,
            EraFileType::Ere => era::import::<era::Ere, _, _, _, _, _, _>(
                read_dir(path, next_block)?,
                &provider_factory,
                &mut hash_collector,
                to_block,
                with_receipts,
                &verifiable,
            )?,
            EraFileType::Era1 => era::import::<era::Era1, _, _, _, _, _, _>(
                read_dir(path, next_block)?,
                &provider_factory,
                &mut hash_collector,
                to_block,
                with_receipts,
                &verifiable,
            )?,
        };
    } else {
        let url = match args.source.url {
            Some(url) => url,
            None => known_host(*args.env.chain.chain().kind())?,
        };
        let era_type = EraFileType::from_url(url.as_str());
        info!(target: "reth::cli", ?era_type, %url, ?to_block, with_receipts, "Starting ERA import");
        receipts_supported(with_receipts, era_type)?;
        let folder = args
            .env
            .datadir
            .clone()
            .resolve_datadir(args.env.chain.chain())
            .data_dir()
            .join("era");
        reth_fs_util::create_dir_all(&folder)?;
        let mut stream_config = EraStreamConfig::default();
        // Consensus `.era` files are slot-indexed: stream from the start, as reth does.
        if era_type != EraFileType::Era {
            stream_config = stream_config.start_from(next_block);
        }
        let client = EraClient::new(Client::new(), url, folder).with_era_type(era_type);
        let stream = EraStream::new(client, stream_config);
        match era_type {
            EraFileType::Ere => era::import::<era::Ere, _, _, _, _, _, _>(
                stream,
                &provider_factory,
                &mut hash_collector,
                to_block,
                with_receipts,
                &verifiable,
            )?,
            EraFileType::Era1 => era::import::<era::Era1, _, _, _, _, _, _>(
                stream,
                &provider_factory,
                &mut hash_collector,
                to_block,
                with_receipts,
                &verifiable,
            )?,
            EraFileType::Era => era::import::<era::Era, _, _, _, _, _, _>(
                stream,
                &provider_factory,
                &mut hash_collector,
                to_block,
                with_receipts,
                &verifiable,
            )?,
        };
    }
    Ok(())
}

pub async fn export(args: ExportEraArgs, runtime: reth_tasks::Runtime) -> eyre::Result<()> {
    let format = match args.file_type {
        ExportFileType::Era1 => "era1",
        ExportFileType::Ere => "ere",
        ExportFileType::Era => eyre::bail!(
            "Consensus-layer ERA (.era) files cannot be exported: they require beacon blocks and \
             state that the execution database does not store. Export `era1` or `ere` instead."
        ),
    };
    let HybridEnvironment {
        provider_factory, ..
    } = HybridEnvironment::init(&args.env, Access::ReadOnly, runtime)?;
    let dir = match args.path {
        Some(path) => path,
        None => args
            .env
            .datadir
            .clone()
            .resolve_datadir(args.env.chain.chain())
            .data_dir()
            .join(format!("{format}-export")),
    };
    let export_config = era::ExportConfig {
        network: args.env.chain.chain().to_string(),
        first_block_number: args.first_block_number.unwrap_or(0),
        last_block_number: args
            .last_block_number
            .unwrap_or(MAX_BLOCKS_PER_ERA1 as u64 - 1),
        max_blocks_per_file: args
            .max_blocks_per_file
            .unwrap_or(MAX_BLOCKS_PER_ERA1 as u64),
        dir,
    };
    export_config.validate()?;
    info!(
        target: "reth::cli",
        "Starting {format} block export: blocks {}-{} to {}",
        export_config.first_block_number,
        export_config.last_block_number,
        export_config.dir.display()
    );
    let provider = provider_factory.database_provider_ro()?;
    let files = match args.file_type {
        ExportFileType::Era1 => era::export::<era::Era1, _>(&provider, &export_config)?,
        ExportFileType::Ere => era::export::<era::Ere, _>(&provider, &export_config)?,
        ExportFileType::Era => unreachable!("refused above"),
    };
    info!(
        target: "reth::cli",
        "Successfully exported {} {format} files to {}",
        files.len(),
        export_config.dir.display()
    );
    Ok(())
}

/// Consensus `.era` files carry no receipts.
fn receipts_supported(with_receipts: bool, era_type: EraFileType) -> eyre::Result<()> {
    eyre::ensure!(
        !(with_receipts && era_type == EraFileType::Era),
        "--with-receipts is not supported for `.era` files: they contain no receipt data. Use \
         `.era1` or `.ere` files instead."
    );
    Ok(())
}

/// reth's known ERA hosts.
fn known_host(chain: ChainKind) -> eyre::Result<Url> {
    Ok(match chain {
        ChainKind::Named(NamedChain::Mainnet) => {
            Url::parse("https://era.ithaca.xyz/era1/index.html")?
        }
        ChainKind::Named(NamedChain::Sepolia) => {
            Url::parse("https://era.ithaca.xyz/sepolia-era1/index.html")?
        }
        chain => eyre::bail!("No known host for ERA files on chain {chain:?}"),
    })
}
