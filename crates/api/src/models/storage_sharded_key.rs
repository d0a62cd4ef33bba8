//! `StorageShardedKey`: `address (20) ++ slot (32) ++ highest_block_number (BE8)` = 60 bytes.

use super::ShardedKey;
use crate::{
    DatabaseError,
    table::{Decode, Encode},
};
use alloy_primitives::{Address, B256, BlockNumber};
use serde::{Deserialize, Serialize};

const STORAGE_SHARD_KEY_BYTES: usize = 20 + 32 + 8;

/// Key of a `StoragesHistory` shard; same shard rules as [`ShardedKey`].
#[derive(
    Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct StorageShardedKey {
    pub address: Address,
    pub sharded_key: ShardedKey<B256>,
}

impl StorageShardedKey {
    pub const fn new(
        address: Address,
        storage_key: B256,
        highest_block_number: BlockNumber,
    ) -> Self {
        Self {
            address,
            sharded_key: ShardedKey::new(storage_key, highest_block_number),
        }
    }

    /// The key of the last (open) shard of `(address, slot)`.
    pub const fn last(address: Address, storage_key: B256) -> Self {
        Self {
            address,
            sharded_key: ShardedKey::last(storage_key),
        }
    }
}

impl Encode for StorageShardedKey {
    type Encoded = [u8; STORAGE_SHARD_KEY_BYTES];
    fn encode(self) -> Self::Encoded {
        let mut buf = [0u8; STORAGE_SHARD_KEY_BYTES];
        buf[..20].copy_from_slice(self.address.as_slice());
        buf[20..].copy_from_slice(&self.sharded_key.encode());
        buf
    }
}

impl Decode for StorageShardedKey {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        if value.len() != STORAGE_SHARD_KEY_BYTES {
            return Err(DatabaseError::decode());
        }
        Ok(Self {
            address: Address::decode(&value[..20])?,
            sharded_key: ShardedKey::<B256>::decode(&value[20..])?,
        })
    }
}
