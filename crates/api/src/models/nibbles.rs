//! Trie keys: `StoredNibbles` (key of `AccountsTrie`), `StoredNibblesSubKey` (subkey of
//! `StoragesTrie`) and `StorageTrieEntry` (its value). One nibble per byte (legacy, v1 layout).
//! `PackedStoredNibbles` is storage v2's form of both paths, kept here so that adopting a v2
//! datadir can turn its trie rows into the v1 bytes the catalogue's tables hold.

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

/// storage v2's trie path, both as `AccountsTrie`'s key and as `StoragesTrie`'s subkey (reth's
/// `PackedStoredNibbles` and `PackedStoredNibblesSubKey` share this layout): nibbles packed two per
/// byte, high nibble first, zero-padded to 32 bytes, then the nibble count. Same `memcmp` order as
/// the v1 forms, so a table converted row by row stays sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PackedStoredNibbles(pub Nibbles);

impl PackedStoredNibbles {
    pub const LEN: usize = 33;

    pub fn to_array(&self) -> [u8; Self::LEN] {
        let mut buf = [0u8; Self::LEN];
        self.0.pack_to(&mut buf[..32]);
        buf[32] = self.0.len() as u8;
        buf
    }

    /// Strict where reth's decoder is lenient (it reads the count and ignores the rest): a count
    /// above 64 or a set padding nibble is a corrupt row, never a different path.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DatabaseError> {
        let Ok(bytes) = <&[u8; Self::LEN]>::try_from(bytes) else {
            return Err(DatabaseError::decode());
        };
        let count = bytes[32] as usize;
        if count > 64 {
            return Err(DatabaseError::decode());
        }
        let nibbles = Nibbles::unpack(&bytes[..32]).slice(..count);
        if Self(nibbles).to_array() != *bytes {
            return Err(DatabaseError::decode());
        }
        Ok(Self(nibbles))
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
