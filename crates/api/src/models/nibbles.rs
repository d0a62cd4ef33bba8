//! Trie keys: `StoredNibbles` (key of `AccountsTrie`), `StoredNibblesSubKey` (subkey of
//! `StoragesTrie`) and `StorageTrieEntry` (its value). One nibble per byte (legacy, v1 layout).

use crate::{
    DatabaseError,
    table::{Decode, Encode},
};
use alloy_trie::{BranchNodeCompact, Nibbles};
use reth_codecs::Compact;
use serde::{Deserialize, Serialize};

/// A trie path, stored one nibble (0..=15) per byte, 0..=64 bytes, no length byte.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StoredNibbles(pub Nibbles);

impl From<Nibbles> for StoredNibbles {
    fn from(value: Nibbles) -> Self {
        Self(value)
    }
}

fn nibbles_from_bytes(bytes: &[u8]) -> Result<Nibbles, DatabaseError> {
    if bytes.len() > 64 || bytes.iter().any(|b| *b > 0x0f) {
        return Err(DatabaseError::decode());
    }
    Ok(Nibbles::from_nibbles_unchecked(bytes))
}

impl Encode for StoredNibbles {
    type Encoded = Vec<u8>;
    fn encode(self) -> Self::Encoded {
        self.0.iter().collect()
    }
}

impl Decode for StoredNibbles {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        nibbles_from_bytes(value).map(Self)
    }
}

/// A trie path as a fixed 65-byte subkey: nibbles zero-padded to 64 bytes, then the length.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StoredNibblesSubKey(pub Nibbles);

impl From<Nibbles> for StoredNibblesSubKey {
    fn from(value: Nibbles) -> Self {
        Self(value)
    }
}

impl StoredNibblesSubKey {
    pub fn to_array(&self) -> [u8; 65] {
        let mut buf = [0u8; 65];
        for (i, nibble) in self.0.iter().enumerate() {
            buf[i] = nibble;
        }
        buf[64] = self.0.len() as u8;
        buf
    }
}

impl Encode for StoredNibblesSubKey {
    type Encoded = [u8; 65];
    fn encode(self) -> Self::Encoded {
        self.to_array()
    }
}

impl Decode for StoredNibblesSubKey {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        if value.len() != 65 || value[64] > 64 {
            return Err(DatabaseError::decode());
        }
        nibbles_from_bytes(&value[..value[64] as usize]).map(Self)
    }
}

impl Compact for StoredNibblesSubKey {
    fn to_compact<B>(&self, buf: &mut B) -> usize
    where
        B: bytes::BufMut + AsMut<[u8]>,
    {
        buf.put_slice(&self.to_array());
        65
    }

    fn from_compact(buf: &[u8], _len: usize) -> (Self, &[u8]) {
        let len = buf[64] as usize;
        (
            Self(Nibbles::from_nibbles_unchecked(&buf[..len])),
            &buf[65..],
        )
    }
}

/// Value of `StoragesTrie`: the 65-byte subkey, then the branch node compact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageTrieEntry {
    pub nibbles: StoredNibblesSubKey,
    pub node: BranchNodeCompact,
}

impl Compact for StorageTrieEntry {
    fn to_compact<B>(&self, buf: &mut B) -> usize
    where
        B: bytes::BufMut + AsMut<[u8]>,
    {
        self.nibbles.to_compact(buf) + self.node.to_compact(buf)
    }

    fn from_compact(buf: &[u8], len: usize) -> (Self, &[u8]) {
        let (nibbles, buf) = StoredNibblesSubKey::from_compact(buf, 65);
        let (node, buf) = BranchNodeCompact::from_compact(buf, len - 65);
        (Self { nibbles, node }, buf)
    }
}

reth_codecs::impl_compression_for_compact!(StorageTrieEntry);
