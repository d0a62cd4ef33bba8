//! reth's codec and table traits (`reth-db-api/src/table.rs`), same names, same bounds.

use crate::DatabaseError;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;

pub use reth_codecs::{Compress, Decompress, DecompressError};

/// Turns an encoded key into an owned byte vector without copying where possible.
pub trait IntoVec: AsRef<[u8]> {
    fn into_vec(self) -> Vec<u8>;
}

impl IntoVec for Vec<u8> {
    fn into_vec(self) -> Vec<u8> {
        self
    }
}

impl<const N: usize> IntoVec for [u8; N] {
    fn into_vec(self) -> Vec<u8> {
        self.to_vec()
    }
}

/// Key encoding. Byte order of the encoding must equal the logical order of keys: engines compare
/// keys bytewise (MDBX's default comparator, RocksDB's bytewise comparator).
pub trait Encode: Send + Sync + Sized + Debug {
    type Encoded: AsRef<[u8]> + IntoVec + Send + Sync + Ord + Debug;
    fn encode(self) -> Self::Encoded;
}

/// Key decoding. A malformed key is `Err(DatabaseError::Decode)`, never a panic.
pub trait Decode: Send + Sync + Sized + Debug {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError>;
    fn decode_owned(value: Vec<u8>) -> Result<Self, DatabaseError> {
        Self::decode(&value)
    }
}

/// A table key.
pub trait Key: Encode + Decode + Ord + Clone + Serialize + for<'a> Deserialize<'a> {}
impl<T> Key for T where T: Encode + Decode + Ord + Clone + Serialize + for<'a> Deserialize<'a> {}

/// A table value.
pub trait Value: Compress + Decompress + Serialize {}
impl<T> Value for T where T: Compress + Decompress + Serialize {}

/// A table: its name (also the MDBX DBI and RocksDB column family name), whether it is dupsort,
/// and its key and value types.
pub trait Table: Send + Sync + Debug + 'static {
    const NAME: &'static str;
    const DUPSORT: bool;
    type Key: Key;
    type Value: Value;
}

/// Object-safe view of a table, for code that handles tables at run time.
pub trait TableInfo: Send + Sync + Debug + 'static {
    fn name(&self) -> &'static str;
    fn is_dupsort(&self) -> bool;
}

pub type TableRow<T> = (<T as Table>::Key, <T as Table>::Value);

/// A dupsort table. Several values per key, sorted by their bytes. The encoding of `SubKey` is a
/// prefix of the value's encoding, which is what makes `seek_by_key_subkey` find a value by subkey.
pub trait DupSort: Table {
    type SubKey: Key;
}

/// Bytes of a value as written to an engine: `uncompressable_ref` when the type has one (fixed
/// byte types), otherwise `compress_to_buf` into a fresh buffer.
pub fn compress_to_vec<V: Compress>(value: &V) -> Vec<u8> {
    if let Some(bytes) = value.uncompressable_ref() {
        return bytes.to_vec();
    }
    let mut buf = V::Compressed::default();
    value.compress_to_buf(&mut buf);
    buf.into()
}
