//! `AccountBeforeTx` (value of `AccountChangeSets`) and `BlockNumberAddress` (key of
//! `StorageChangeSets`).

use crate::{
    DatabaseError,
    table::{Decode, Encode},
};
use alloy_primitives::{Address, BlockNumber};
use reth_codecs::Compact;
use reth_primitives_traits::Account;
use serde::{Deserialize, Serialize};

/// An account as it was before a block changed it; `info: None` means it did not exist.
/// Bytes: `address (20) ++ Account compact` (nothing after the address when `None`). The address
/// is the dupsort subkey, hence first.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountBeforeTx {
    pub address: Address,
    pub info: Option<Account>,
}

impl Compact for AccountBeforeTx {
    fn to_compact<B>(&self, buf: &mut B) -> usize
    where
        B: bytes::BufMut + AsMut<[u8]>,
    {
        buf.put_slice(self.address.as_slice());
        let mut len = 20;
        if let Some(account) = &self.info {
            len += account.to_compact(buf);
        }
        len
    }

    fn from_compact(buf: &[u8], len: usize) -> (Self, &[u8]) {
        let address = Address::from_slice(&buf[..20]);
        let rest = &buf[20..];
        if len > 20 {
            let (account, rest) = Account::from_compact(rest, len - 20);
            (
                Self {
                    address,
                    info: Some(account),
                },
                rest,
            )
        } else {
            (
                Self {
                    address,
                    info: None,
                },
                rest,
            )
        }
    }
}

reth_codecs::impl_compression_for_compact!(AccountBeforeTx);

/// `(block number, address)`; bytes: `block (BE8) ++ address (20)`.
#[derive(
    Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct BlockNumberAddress(pub (BlockNumber, Address));

impl BlockNumberAddress {
    pub const fn block_number(&self) -> BlockNumber {
        self.0.0
    }

    pub const fn address(&self) -> Address {
        self.0.1
    }
}

impl Encode for BlockNumberAddress {
    type Encoded = [u8; 28];
    fn encode(self) -> Self::Encoded {
        let mut buf = [0u8; 28];
        buf[..8].copy_from_slice(&self.0.0.to_be_bytes());
        buf[8..].copy_from_slice(self.0.1.as_slice());
        buf
    }
}

/// Unlike reth (which slices and may panic), a wrong length is a decode error.
impl Decode for BlockNumberAddress {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        if value.len() != 28 {
            return Err(DatabaseError::decode());
        }
        Ok(Self((
            u64::decode(&value[..8])?,
            Address::decode(&value[8..])?,
        )))
    }
}
