//! `IntegerList` (`BlockNumberList`): a sorted set of u64 in roaring's portable 64-bit format.

use reth_codecs::{Compress, Decompress, DecompressError};
use roaring::RoaringTreemap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The value of the history tables: the block numbers at which a key changed.
pub type BlockNumberList = IntegerList;

/// A sorted list of unique u64; encoded with `RoaringTreemap::serialize_into` (portable format).
#[derive(Clone, PartialEq, Default)]
pub struct IntegerList(pub RoaringTreemap);

/// Building a list from input that is not strictly increasing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntegerListError {
    #[error("integer list input is not strictly increasing")]
    UnsortedInput,
}

impl IntegerList {
    /// Builds from strictly increasing numbers; anything else is `UnsortedInput`.
    pub fn new(list: impl IntoIterator<Item = u64>) -> Result<Self, IntegerListError> {
        RoaringTreemap::from_sorted_iter(list)
            .map(Self)
            .map_err(|_| IntegerListError::UnsortedInput)
    }

    /// Builds from any numbers, sorting and de-duplicating.
    pub fn new_pre_sorted(list: impl IntoIterator<Item = u64>) -> Self {
        Self(list.into_iter().collect())
    }

    /// Appends numbers that must all be greater than the current maximum.
    pub fn append(&mut self, list: impl IntoIterator<Item = u64>) -> Result<u64, IntegerListError> {
        self.0
            .append(list)
            .map_err(|_| IntegerListError::UnsortedInput)
    }

    pub fn push(&mut self, value: u64) -> Result<(), IntegerListError> {
        self.0
            .try_push(value)
            .map_err(|_| IntegerListError::UnsortedInput)
    }

    pub fn len(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter()
    }

    /// Number of elements <= `value` (reth's history lookup uses rank/select).
    pub fn rank(&self, value: u64) -> u64 {
        self.0.rank(value)
    }

    pub fn select(&self, n: u64) -> Option<u64> {
        self.0.select(n)
    }

    pub fn max(&self) -> Option<u64> {
        self.0.max()
    }

    pub fn min(&self) -> Option<u64> {
        self.0.min()
    }
}

impl std::fmt::Debug for IntegerList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IntegerList")?;
        f.debug_list().entries(self.0.iter()).finish()
    }
}

impl Compress for IntegerList {
    type Compressed = Vec<u8>;

    fn compress_to_buf<B: bytes::BufMut + AsMut<[u8]>>(&self, buf: &mut B) {
        let mut out = Vec::with_capacity(self.0.serialized_size());
        // Writing into a Vec cannot fail.
        self.0
            .serialize_into(&mut out)
            .expect("serializing into a Vec is infallible");
        buf.put_slice(&out);
    }
}

impl Decompress for IntegerList {
    fn decompress(value: &[u8]) -> Result<Self, DecompressError> {
        RoaringTreemap::deserialize_from(value)
            .map(Self)
            .map_err(DecompressError::new)
    }
}

/// Serialized as a JSON list of numbers, like reth.
impl Serialize for IntegerList {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

impl<'de> Deserialize<'de> for IntegerList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let values = Vec::<u64>::deserialize(deserializer)?;
        Self::new(values).map_err(serde::de::Error::custom)
    }
}
