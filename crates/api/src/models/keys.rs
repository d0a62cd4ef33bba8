//! Key encodings of primitive types: integers big-endian, hashes and addresses raw, strings UTF-8.

use crate::{
    DatabaseError,
    table::{Decode, Encode},
};
use alloy_primitives::{Address, B256};
use reth_codecs::Compact;
use serde::{Deserialize, Serialize};

macro_rules! impl_uint_key {
    ($($ty:ty),+) => {$(
        impl Encode for $ty {
            type Encoded = [u8; std::mem::size_of::<$ty>()];
            fn encode(self) -> Self::Encoded {
                self.to_be_bytes()
            }
        }
        impl Decode for $ty {
            fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
                Ok(<$ty>::from_be_bytes(value.try_into().map_err(|_| DatabaseError::decode())?))
            }
        }
    )+};
}
impl_uint_key!(u64, u32, u16, u8);

impl Encode for Address {
    type Encoded = [u8; 20];
    fn encode(self) -> Self::Encoded {
        self.0.0
    }
}

/// Unlike reth (which panics), a wrong length is a decode error.
impl Decode for Address {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        let bytes: [u8; 20] = value.try_into().map_err(|_| DatabaseError::decode())?;
        Ok(Self::from(bytes))
    }
}

impl Encode for B256 {
    type Encoded = [u8; 32];
    fn encode(self) -> Self::Encoded {
        self.0
    }
}

impl Decode for B256 {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        let bytes: [u8; 32] = value.try_into().map_err(|_| DatabaseError::decode())?;
        Ok(Self::from(bytes))
    }
}

impl Encode for String {
    type Encoded = Vec<u8>;
    fn encode(self) -> Self::Encoded {
        self.into_bytes()
    }
}

impl Decode for String {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        Self::from_utf8(value.to_vec()).map_err(|_| DatabaseError::decode())
    }
}

impl Encode for Vec<u8> {
    type Encoded = Self;
    fn encode(self) -> Self::Encoded {
        self
    }
}

impl Decode for Vec<u8> {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        Ok(value.to_vec())
    }
}

/// Key of `ChainState`: one byte, the variant index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ChainStateKey {
    /// Last finalized block (byte 0).
    LastFinalizedBlock,
    /// Last safe block (byte 1).
    LastSafeBlock,
}

impl Encode for ChainStateKey {
    type Encoded = [u8; 1];
    fn encode(self) -> Self::Encoded {
        match self {
            Self::LastFinalizedBlock => [0],
            Self::LastSafeBlock => [1],
        }
    }
}

impl Decode for ChainStateKey {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        match value {
            [0] => Ok(Self::LastFinalizedBlock),
            [1] => Ok(Self::LastSafeBlock),
            _ => Err(DatabaseError::decode()),
        }
    }
}

/// Helper for keys whose encoding is their `Compact` bytes.
pub(crate) fn compact_to_vec<C: Compact>(value: &C) -> Vec<u8> {
    let mut buf = Vec::new();
    value.to_compact(&mut buf);
    buf
}
