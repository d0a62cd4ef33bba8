//! Block access lists (EIP-7928) as stored by reth v2.5: key `block (BE8) ++ hash (32)`,
//! value `keccak(raw) (32) ++ raw RLP`.

use crate::{
    DatabaseError,
    table::{Decode, Encode},
};
use alloy_primitives::{B256, BlockNumber, Bytes, keccak256};
use reth_codecs::{Compress, Decompress, DecompressError};
use serde::{Deserialize, Serialize};

#[derive(
    Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct StoredBlockAccessListKey {
    pub block_number: BlockNumber,
    pub block_hash: B256,
}

impl Encode for StoredBlockAccessListKey {
    type Encoded = [u8; 40];
    fn encode(self) -> Self::Encoded {
        let mut buf = [0u8; 40];
        buf[..8].copy_from_slice(&self.block_number.to_be_bytes());
        buf[8..].copy_from_slice(self.block_hash.as_slice());
        buf
    }
}

impl Decode for StoredBlockAccessListKey {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        if value.len() != 40 {
            return Err(DatabaseError::decode());
        }
        Ok(Self {
            block_number: u64::decode(&value[..8])?,
            block_hash: B256::decode(&value[8..])?,
        })
    }
}

/// A block access list's raw RLP with its hash in front.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredBlockAccessList {
    pub hash: B256,
    pub raw: Bytes,
}

impl StoredBlockAccessList {
    pub fn new(raw: Bytes) -> Self {
        Self {
            hash: keccak256(&raw),
            raw,
        }
    }
}

impl Compress for StoredBlockAccessList {
    type Compressed = Vec<u8>;

    fn compress_to_buf<B: bytes::BufMut + AsMut<[u8]>>(&self, buf: &mut B) {
        buf.put_slice(self.hash.as_slice());
        buf.put_slice(&self.raw);
    }
}

#[derive(Debug, thiserror::Error)]
#[error("stored block access list is {0} bytes, shorter than its 32-byte hash")]
struct ShortAccessList(usize);

impl Decompress for StoredBlockAccessList {
    fn decompress(value: &[u8]) -> Result<Self, DecompressError> {
        if value.len() < 32 {
            return Err(DecompressError::new(ShortAccessList(value.len())));
        }
        Ok(Self {
            hash: B256::from_slice(&value[..32]),
            raw: Bytes::copy_from_slice(&value[32..]),
        })
    }
}
