//! `ShardedKey<T>`: the key of a history shard, `key ++ highest_block_number (BE8)`.

use crate::{
    DatabaseError,
    table::{Decode, Encode},
};
use alloy_primitives::{Address, B256, BlockNumber};
use serde::{Deserialize, Serialize};

/// Most block numbers in one history shard; a full shard is keyed by its highest block.
pub const NUM_OF_INDICES_IN_SHARD: usize = 2_000;

/// Key of a history shard. Each shard is keyed by the highest block number it contains, except
/// the last shard of a key, which is keyed `u64::MAX` so `seek_exact(last)` finds it for merges.
#[derive(
    Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct ShardedKey<T> {
    pub key: T,
    pub highest_block_number: BlockNumber,
}

impl<T> ShardedKey<T> {
    pub const fn new(key: T, highest_block_number: BlockNumber) -> Self {
        Self {
            key,
            highest_block_number,
        }
    }

    /// The key of the last (open) shard.
    pub const fn last(key: T) -> Self {
        Self {
            key,
            highest_block_number: u64::MAX,
        }
    }
}

macro_rules! impl_sharded_key {
    ($ty:ty, $len:expr) => {
        impl Encode for ShardedKey<$ty> {
            type Encoded = [u8; $len + 8];
            fn encode(self) -> Self::Encoded {
                let mut buf = [0u8; $len + 8];
                buf[..$len].copy_from_slice(self.key.as_slice());
                buf[$len..].copy_from_slice(&self.highest_block_number.to_be_bytes());
                buf
            }
        }

        impl Decode for ShardedKey<$ty> {
            fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
                if value.len() != $len + 8 {
                    return Err(DatabaseError::decode());
                }
                let key = <$ty>::decode(&value[..$len])?;
                let highest_block_number = u64::decode(&value[$len..])?;
                Ok(Self {
                    key,
                    highest_block_number,
                })
            }
        }
    };
}

impl_sharded_key!(Address, 20);
impl_sharded_key!(B256, 32);
