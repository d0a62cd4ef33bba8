//! Stage checkpoints (`StageCheckpoints` values), with reth's derived compact layout.

use alloy_primitives::{Address, B256, BlockNumber};
use reth_codecs::Compact;
use serde::{Deserialize, Serialize};

/// Key of `StageCheckpoints`/`StageCheckpointProgresses`: the stage name, e.g. `"Execution"`.
pub type StageId = String;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct CheckpointBlockRange {
    pub from: BlockNumber,
    pub to: BlockNumber,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct EntitiesCheckpoint {
    pub processed: u64,
    pub total: u64,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct AccountHashingCheckpoint {
    pub address: Option<Address>,
    pub block_range: CheckpointBlockRange,
    pub progress: EntitiesCheckpoint,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct StorageHashingCheckpoint {
    pub address: Option<Address>,
    pub storage: Option<B256>,
    pub block_range: CheckpointBlockRange,
    pub progress: EntitiesCheckpoint,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct ExecutionCheckpoint {
    pub block_range: CheckpointBlockRange,
    pub progress: EntitiesCheckpoint,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct HeadersCheckpoint {
    pub block_range: CheckpointBlockRange,
    pub progress: EntitiesCheckpoint,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct IndexHistoryCheckpoint {
    pub block_range: CheckpointBlockRange,
    pub progress: EntitiesCheckpoint,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct MerkleChangeSetsCheckpoint {
    pub block_range: CheckpointBlockRange,
}

/// reth's layout with its `partial-persistence` feature (without it reth panics on this variant).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct FinishCheckpoint {
    pub partial_state_trie: Option<BlockNumber>,
}

/// Per-stage progress detail; the variant index is the on-disk tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub enum StageUnitCheckpoint {
    Account(AccountHashingCheckpoint),
    Storage(StorageHashingCheckpoint),
    Entities(EntitiesCheckpoint),
    Execution(ExecutionCheckpoint),
    Headers(HeadersCheckpoint),
    IndexHistory(IndexHistoryCheckpoint),
    MerkleChangeSets(MerkleChangeSetsCheckpoint),
    Finish(FinishCheckpoint),
}

/// A stage's checkpoint: the block it reached, and optional unit progress.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct StageCheckpoint {
    pub block_number: BlockNumber,
    pub stage_checkpoint: Option<StageUnitCheckpoint>,
}

reth_codecs::impl_compression_for_compact!(StageCheckpoint);
