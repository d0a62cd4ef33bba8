//! Prune checkpoints: `PruneSegment` (1-byte key) and `PruneCheckpoint` (derived compact).

use crate::{
    DatabaseError,
    table::{Decode, Encode},
};
use alloy_primitives::{BlockNumber, TxNumber};
use reth_codecs::Compact;
use serde::{Deserialize, Serialize};

/// reth's prune segments. Variant indexes are the on-disk bytes and never change; `Headers`,
/// `Transactions` and `MerkleChangeSets` are deprecated upstream but keep their index.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Compact,
)]
#[reth_codecs(crate = "reth_codecs")]
pub enum PruneSegment {
    SenderRecovery,
    TransactionLookup,
    Receipts,
    ContractLogs,
    AccountHistory,
    StorageHistory,
    Headers,
    Transactions,
    MerkleChangeSets,
    Bodies,
}

impl Encode for PruneSegment {
    type Encoded = [u8; 1];
    fn encode(self) -> Self::Encoded {
        let mut buf = Vec::with_capacity(1);
        self.to_compact(&mut buf);
        [buf[0]]
    }
}

impl Decode for PruneSegment {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        // Only indexes 0..=9 exist; anything else would make the derived decoder panic.
        match value {
            [b] if *b <= 9 => Ok(Self::from_compact(value, 1).0),
            _ => Err(DatabaseError::decode()),
        }
    }
}

/// How a segment is pruned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub enum PruneMode {
    Full,
    Distance(u64),
    Before(BlockNumber),
}

/// Progress of pruning one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct PruneCheckpoint {
    pub block_number: Option<BlockNumber>,
    pub tx_number: Option<TxNumber>,
    pub prune_mode: PruneMode,
}

reth_codecs::impl_compression_for_compact!(PruneCheckpoint);
