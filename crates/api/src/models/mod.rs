//! Key and value models of reth's tables, with reth's exact bytes.
//!
//! Types published on crates.io (`Account`, `StorageEntry`, `Bytecode`, alloy's `Header`,
//! receipts, transactions, `BranchNodeCompact`) are reused; reth's unpublished models are
//! re-implemented here and pinned by golden tests (`tests/golden.rs`).

mod accounts;
mod bal;
mod blocks;
mod client_version;
mod integer_list;
mod keys;
mod metadata;
mod nibbles;
mod prune;
mod sharded_key;
mod stage;
mod storage_sharded_key;

pub use accounts::{AccountBeforeTx, BlockNumberAddress};
pub use bal::{StoredBlockAccessList, StoredBlockAccessListKey};
pub use blocks::{CompactU256, StoredBlockBodyIndices, StoredBlockOmmers, StoredBlockWithdrawals};
pub use client_version::ClientVersion;
pub use integer_list::{BlockNumberList, IntegerList, IntegerListError};
pub use keys::ChainStateKey;
pub use metadata::{STORAGE_SETTINGS_KEY, StorageSettings};
pub use nibbles::{PackedStoredNibbles, StorageTrieEntry, StoredNibbles, StoredNibblesSubKey};
pub use prune::{PruneCheckpoint, PruneMode, PruneSegment};
pub use sharded_key::{NUM_OF_INDICES_IN_SHARD, ShardedKey};
pub use stage::{
    AccountHashingCheckpoint, CheckpointBlockRange, EntitiesCheckpoint, ExecutionCheckpoint,
    FinishCheckpoint, HeadersCheckpoint, IndexHistoryCheckpoint, MerkleChangeSetsCheckpoint,
    StageCheckpoint, StageId, StageUnitCheckpoint, StorageHashingCheckpoint,
};
pub use storage_sharded_key::StorageShardedKey;

pub use alloy_consensus::Header;
pub use alloy_primitives::{Address, B256, BlockHash, BlockNumber, TxHash, TxNumber, U256};
pub use alloy_trie::BranchNodeCompact;
pub use reth_primitives_traits::{Account, Bytecode, StorageEntry};

/// reth's `HeaderHash`.
pub type HeaderHash = B256;
/// reth's `Receipt` for Ethereum: `EthereumReceipt<TxType>`.
pub type Receipt = alloy_consensus::EthereumReceipt<alloy_consensus::TxType>;
/// reth's `TransactionSigned` for Ethereum.
pub type TransactionSigned = alloy_consensus::EthereumTxEnvelope<alloy_consensus::TxEip4844>;
