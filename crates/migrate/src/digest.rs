//! An order-independent digest of a table: row count and the wrapping sum of a 128-bit hash of
//! every row. Two engines holding the same rows give the same digest whatever order they are
//! read in, so a copy can be checked chunk by chunk and both sides compared at the end.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TableDigest {
    pub rows: u64,
    /// Hex of the 128-bit sum (JSON has no 128-bit integers).
    #[serde(with = "hex_u128")]
    pub sum: u128,
}

impl TableDigest {
    /// Adds one row. The key length is hashed too, so `(ab, c)` and `(a, bc)` differ.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        self.add_hash(Self::row_hash(key, value));
    }

    /// The hash [`Self::add`] sums (so a reader thread can hash while another writes).
    pub fn row_hash(key: &[u8], value: &[u8]) -> u128 {
        let mut h = Xxh3::new();
        h.update(&(key.len() as u32).to_le_bytes());
        h.update(key);
        h.update(value);
        h.digest128()
    }

    pub fn add_hash(&mut self, hash: u128) {
        self.rows += 1;
        self.sum = self.sum.wrapping_add(hash);
    }

    pub fn merge(&mut self, other: &Self) {
        self.rows += other.rows;
        self.sum = self.sum.wrapping_add(other.sum);
    }

    pub fn sum_hex(&self) -> String {
        format!("{:032x}", self.sum)
    }
}

mod hex_u128 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:032x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        let s = String::deserialize(d)?;
        u128::from_str_radix(&s, 16).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_independent_and_sensitive_to_every_byte() {
        let rows: [(&[u8], &[u8]); 3] = [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")];
        let (mut fwd, mut rev) = (TableDigest::default(), TableDigest::default());
        rows.iter().for_each(|(k, v)| fwd.add(k, v));
        rows.iter().rev().for_each(|(k, v)| rev.add(k, v));
        assert_eq!(fwd, rev);
        let mut changed = TableDigest::default();
        changed.add(b"a", b"1");
        changed.add(b"b", b"2");
        changed.add(b"c", b"4");
        assert_ne!(fwd.sum, changed.sum);
        let mut split = TableDigest::default();
        split.add(b"ab", b"");
        let mut joined = TableDigest::default();
        joined.add(b"a", b"b");
        assert_ne!(split, joined);
        let json = serde_json::to_string(&fwd).expect("serializes");
        assert_eq!(
            serde_json::from_str::<TableDigest>(&json).expect("parses"),
            fwd
        );
    }
}
