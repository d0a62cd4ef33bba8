//! Block-related values: body indices, ommers, withdrawals, and the `CompactU256` wrapper.

use alloy_consensus::Header;
use alloy_eips::eip4895::Withdrawals;
use alloy_primitives::{TxNumber, U256};
use reth_codecs::Compact;
use serde::{Deserialize, Serialize};

/// Where a block's transactions are: `first_tx_num .. first_tx_num + tx_count`.
/// Derived compact: 1 flag byte (two 4-bit lengths), then both numbers with leading zeros stripped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct StoredBlockBodyIndices {
    pub first_tx_num: TxNumber,
    pub tx_count: u64,
}

impl StoredBlockBodyIndices {
    pub const fn next_tx_num(&self) -> TxNumber {
        self.first_tx_num + self.tx_count
    }

    /// Highest tx number of the block; `None` for an empty block.
    pub const fn last_tx_num(&self) -> Option<TxNumber> {
        if self.tx_count == 0 {
            None
        } else {
            Some(self.first_tx_num + self.tx_count - 1)
        }
    }
}

reth_codecs::impl_compression_for_compact!(StoredBlockBodyIndices);

/// Ommer headers of a block: `Vec<Header>` compact.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredBlockOmmers {
    pub ommers: Vec<Header>,
}

impl Compact for StoredBlockOmmers {
    fn to_compact<B>(&self, buf: &mut B) -> usize
    where
        B: bytes::BufMut + AsMut<[u8]>,
    {
        let mut inner = Vec::new();
        self.ommers.to_compact(&mut inner);
        buf.put_slice(&inner);
        inner.len()
    }

    fn from_compact(buf: &[u8], _len: usize) -> (Self, &[u8]) {
        let (ommers, rest) = Vec::<Header>::from_compact(buf, buf.len());
        (Self { ommers }, rest)
    }
}

reth_codecs::impl_compression_for_compact!(StoredBlockOmmers);

/// Withdrawals of a block (derived compact around `Withdrawals`).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct StoredBlockWithdrawals {
    pub withdrawals: Withdrawals,
}

reth_codecs::impl_compression_for_compact!(StoredBlockWithdrawals);

/// `U256` as a derived struct, so it gets a flag byte (6-bit length) before the stripped bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Compact)]
#[reth_codecs(crate = "reth_codecs")]
pub struct CompactU256(pub U256);

reth_codecs::impl_compression_for_compact!(CompactU256);
