//! `db stage-checkpoints`, `db prune-checkpoints`, `db settings`, `db static-file-header`: the
//! node's bookkeeping, which lives in MDBX tables and static files in both layouts. Reads and
//! writes go through the hybrid's provider, so a write is one hybrid commit like any other, and
//! the output is reth's.

use super::env::{Access, HybridFactory};
use clap::{Args, Subcommand, ValueEnum};
use reth_provider::{
    DBProvider, DatabaseProviderFactory, MetadataProvider, MetadataWriter, PruneCheckpointReader,
    PruneCheckpointWriter, StageCheckpointReader, StageCheckpointWriter, StaticFileProviderFactory,
    StorageSettings,
};
use reth_prune::{PruneCheckpoint, PruneMode, PruneSegment};
use reth_stages::StageId;
use reth_static_file_types::StaticFileSegment;
use std::path::PathBuf;
use tracing::warn;

#[derive(Debug, Subcommand)]
pub enum StageCheckpoints {
    /// Get stage checkpoint(s) from the database.
    Get {
        /// Specific stage to query; all stages when omitted.
        #[arg(long, value_enum)]
        stage: Option<StageArg>,
    },
    /// Set a stage checkpoint.
    Set {
        #[arg(long, value_enum)]
        stage: StageArg,
        /// Block number to set as the stage's checkpoint.
        #[arg(long)]
        block_number: u64,
        /// Clear the stage-specific unit checkpoint payload.
        #[arg(long)]
        clear_stage_unit: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum PruneCheckpoints {
    /// Get prune checkpoint(s) from the database.
    Get {
        /// Specific segment to query; all segments when omitted.
        #[arg(long, value_enum)]
        segment: Option<SegmentArg>,
    },
    /// Set a prune checkpoint.
    Set(PruneSetArgs),
}

#[derive(Debug, Args)]
pub struct PruneSetArgs {
    #[arg(long, value_enum)]
    segment: SegmentArg,
    /// Highest pruned block number.
    #[arg(long)]
    block_number: Option<u64>,
    /// Highest pruned transaction number.
    #[arg(long)]
    tx_number: Option<u64>,
    /// Prune mode to store.
    #[arg(long, value_enum)]
    mode: PruneModeArg,
    /// Value for `distance` or `before`.
    #[arg(long, required_if_eq_any([("mode", "distance"), ("mode", "before")]))]
    mode_value: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub enum Settings {
    /// Show the storage settings stored in the database.
    Get,
    /// Set a storage setting.
    #[command(subcommand)]
    Set(SettingsSet),
}

#[derive(Debug, Clone, Copy, Subcommand)]
#[command(rename_all = "snake_case")]
pub enum SettingsSet {
    /// reth's storage v2 layout (history and tx hashes in reth's own RocksDB).
    V2 {
        #[arg(action(clap::ArgAction::Set))]
        value: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum StaticFileHeader {
    /// Query by segment and block number.
    Block {
        #[arg(value_enum)]
        segment: StaticFileSegment,
        block: u64,
    },
    /// Query by path to the static file.
    Path { path: PathBuf },
}

/// reth's names for the stages (`db stage-checkpoints --stage`).
#[derive(Debug, Clone, Copy, ValueEnum)]
#[value(rename_all = "kebab-case")]
pub enum StageArg {
    Era,
    Headers,
    Bodies,
    SenderRecovery,
    Execution,
    PruneSenderRecovery,
    MerkleUnwind,
    AccountHashing,
    StorageHashing,
    MerkleExecute,
    TransactionLookup,
    IndexStorageHistory,
    IndexAccountHistory,
    Prune,
    Finish,
}

impl From<StageArg> for StageId {
    fn from(arg: StageArg) -> Self {
        match arg {
            StageArg::Era => Self::Era,
            StageArg::Headers => Self::Headers,
            StageArg::Bodies => Self::Bodies,
            StageArg::SenderRecovery => Self::SenderRecovery,
            StageArg::Execution => Self::Execution,
            StageArg::PruneSenderRecovery => Self::PruneSenderRecovery,
            StageArg::MerkleUnwind => Self::MerkleUnwind,
            StageArg::AccountHashing => Self::AccountHashing,
            StageArg::StorageHashing => Self::StorageHashing,
            StageArg::MerkleExecute => Self::MerkleExecute,
            StageArg::TransactionLookup => Self::TransactionLookup,
            StageArg::IndexStorageHistory => Self::IndexStorageHistory,
            StageArg::IndexAccountHistory => Self::IndexAccountHistory,
            StageArg::Prune => Self::Prune,
            StageArg::Finish => Self::Finish,
        }
    }
}

/// reth's names for the prune segments.
#[derive(Debug, Clone, Copy, ValueEnum)]
#[value(rename_all = "kebab-case")]
pub enum SegmentArg {
    SenderRecovery,
    TransactionLookup,
    Receipts,
    ContractLogs,
    AccountHistory,
    StorageHistory,
    Bodies,
}

impl From<SegmentArg> for PruneSegment {
    fn from(arg: SegmentArg) -> Self {
        match arg {
            SegmentArg::SenderRecovery => Self::SenderRecovery,
            SegmentArg::TransactionLookup => Self::TransactionLookup,
            SegmentArg::Receipts => Self::Receipts,
            SegmentArg::ContractLogs => Self::ContractLogs,
            SegmentArg::AccountHistory => Self::AccountHistory,
            SegmentArg::StorageHistory => Self::StorageHistory,
            SegmentArg::Bodies => Self::Bodies,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "kebab-case")]
pub enum PruneModeArg {
    Full,
    Distance,
    Before,
}

impl StageCheckpoints {
    pub fn access(&self) -> Access {
        match self {
            Self::Get { .. } => Access::ReadOnly,
            Self::Set { .. } => Access::ReadWrite,
        }
    }

    pub fn run(self, factory: &HybridFactory) -> eyre::Result<()> {
        match self {
            Self::Get { stage: Some(stage) } => {
                let stage: StageId = stage.into();
                let checkpoint = factory.provider()?.get_stage_checkpoint(stage)?;
                println!("{stage}: {checkpoint:?}");
            }
            Self::Get { stage: None } => {
                let mut checkpoints = factory.provider()?.get_all_checkpoints()?;
                checkpoints.sort_by(|a, b| a.0.cmp(&b.0));
                for (stage, checkpoint) in checkpoints {
                    println!("{stage}: {checkpoint:?}");
                }
            }
            Self::Set {
                stage,
                block_number,
                clear_stage_unit,
            } => {
                let stage: StageId = stage.into();
                let provider_rw = factory.database_provider_rw()?;
                let mut checkpoint = provider_rw.get_stage_checkpoint(stage)?.unwrap_or_default();
                checkpoint.block_number = block_number;
                if clear_stage_unit {
                    checkpoint.stage_checkpoint = None;
                }
                provider_rw.save_stage_checkpoint(stage, checkpoint)?;
                provider_rw.commit()?;
                println!("Updated checkpoint for {stage}: {checkpoint:?}");
            }
        }
        Ok(())
    }
}

impl PruneCheckpoints {
    pub fn access(&self) -> Access {
        match self {
            Self::Get { .. } => Access::ReadOnly,
            Self::Set(_) => Access::ReadWrite,
        }
    }

    pub fn run(self, factory: &HybridFactory) -> eyre::Result<()> {
        match self {
            Self::Get {
                segment: Some(segment),
            } => {
                let segment: PruneSegment = segment.into();
                match factory.provider()?.get_prune_checkpoint(segment)? {
                    Some(checkpoint) => print_prune_checkpoint(segment, &checkpoint),
                    None => println!("No checkpoint found for {segment}"),
                }
            }
            Self::Get { segment: None } => {
                let mut checkpoints = factory.provider()?.get_prune_checkpoints()?;
                checkpoints.sort_by_key(|(segment, _)| *segment);
                if checkpoints.is_empty() {
                    println!("No prune checkpoints found.");
                    return Ok(());
                }
                println!(
                    "{:<25} {:>15} {:>15} {:>20}",
                    "Segment", "Block Number", "Tx Number", "Prune Mode"
                );
                println!("{}", "-".repeat(80));
                for (segment, checkpoint) in &checkpoints {
                    println!(
                        "{:<25} {:>15} {:>15} {:>20}",
                        segment.to_string(),
                        optional(checkpoint.block_number),
                        optional(checkpoint.tx_number),
                        mode(&checkpoint.prune_mode),
                    );
                }
            }
            Self::Set(args) => {
                eyre::ensure!(
                    args.block_number.is_some() || args.tx_number.is_some(),
                    "at least one of --block-number or --tx-number must be provided"
                );
                let value = || {
                    args.mode_value.ok_or_else(|| {
                        eyre::eyre!("--mode-value is required for {:?} mode", args.mode)
                    })
                };
                let prune_mode = match args.mode {
                    PruneModeArg::Full => PruneMode::Full,
                    PruneModeArg::Distance => PruneMode::Distance(value()?),
                    PruneModeArg::Before => PruneMode::Before(value()?),
                };
                let segment: PruneSegment = args.segment.into();
                let checkpoint = PruneCheckpoint {
                    block_number: args.block_number,
                    tx_number: args.tx_number,
                    prune_mode,
                };
                let provider_rw = factory.database_provider_rw()?;
                if let Some(previous) = provider_rw.get_prune_checkpoint(segment)? {
                    println!("Previous checkpoint for {segment}:");
                    print_prune_checkpoint(segment, &previous);
                    println!();
                }
                provider_rw.save_prune_checkpoint(segment, checkpoint)?;
                provider_rw.commit()?;
                println!("Updated checkpoint for {segment}:");
                print_prune_checkpoint(segment, &checkpoint);
            }
        }
        Ok(())
    }
}

impl Settings {
    pub fn access(&self) -> Access {
        match self {
            Self::Set(SettingsSet::V2 { value: false }) => Access::ReadWrite,
            _ => Access::ReadOnly,
        }
    }

    pub fn run(self, factory: &HybridFactory) -> eyre::Result<()> {
        match self {
            Self::Get => match factory.provider()?.storage_settings()? {
                Some(settings) => {
                    println!("Current storage settings:");
                    println!("{settings:#?}");
                }
                None => println!("No storage settings found."),
            },
            // A hybrid datadir is reth's v1 layout with reth-hybrid's routing on top: v1 is
            // the only value; as reth, it is written where no settings row is.
            Self::Set(SettingsSet::V2 { value: false }) => {
                let provider_rw = factory.database_provider_rw()?;
                if provider_rw.storage_settings()?.is_some() {
                    println!("storage_v2 is already set to false");
                    return Ok(());
                }
                println!("No storage settings found, creating new settings.");
                provider_rw.write_storage_settings(StorageSettings::v1())?;
                provider_rw.commit()?;
                println!("Storage settings updated successfully.");
            }
            Self::Set(SettingsSet::V2 { value: true }) => eyre::bail!(
                "`db settings set v2 true` is not available on a hybrid datadir: the hybrid runs \
                 reth's v1 layout and routes the history and tx-hash tables to its own RocksDB \
                 (`reth-hybrid layout`). For reth's storage v2, move the tables back with \
                 `reth-hybrid migrate --datadir D --to mdbx` and use reth's `db migrate-v2`"
            ),
        }
        Ok(())
    }
}

impl StaticFileHeader {
    pub fn run(self, factory: &HybridFactory) -> eyre::Result<()> {
        let static_files = factory.static_file_provider();
        if let Err(err) = static_files.check_consistency(&factory.provider()?) {
            warn!("Error checking consistency of static files: {err}");
        }
        let provider = match self {
            Self::Path { path } => static_files
                .get_segment_provider_for_path(&path)?
                .ok_or_else(|| {
                    eyre::eyre!(
                        "Could not find static file segment for path: {}",
                        path.display()
                    )
                })?,
            Self::Block { segment, block } => static_files.get_segment_provider(segment, block)?,
        };
        let header = provider.user_header();
        println!("Segment: {}", header.segment());
        println!("Expected Block Range: {}", header.expected_block_range());
        println!("Block Range: {:?}", header.block_range());
        println!("Transaction Range: {:?}", header.tx_range());
        Ok(())
    }
}

fn print_prune_checkpoint(segment: PruneSegment, checkpoint: &PruneCheckpoint) {
    println!("  Segment:      {segment}");
    println!("  Block Number: {}", optional(checkpoint.block_number));
    println!("  Tx Number:    {}", optional(checkpoint.tx_number));
    println!("  Prune Mode:   {}", mode(&checkpoint.prune_mode));
}

fn optional(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_string(), |n| n.to_string())
}

fn mode(mode: &PruneMode) -> String {
    match mode {
        PruneMode::Full => "Full".to_string(),
        PruneMode::Distance(d) => format!("Distance({d})"),
        PruneMode::Before(b) => format!("Before({b})"),
    }
}
