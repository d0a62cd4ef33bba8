//! An order-independent digest of a table: row count and the wrapping sum of a 128-bit hash of
//! every row. Two engines holding the same rows give the same digest whatever order they are
//! read in, so a copy can be checked chunk by chunk and both sides compared at the end.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

/// Rows (with their 4-byte key length) up to this size are hashed from a stack buffer.
const ONE_SHOT_BYTES: usize = 256;

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

    /// The hash [`Self::add`] sums (so a reader thread can hash while another writes): of
    /// `len(key) as u32 LE ++ key ++ value`. Rows up to [`ONE_SHOT_BYTES`] (every
    /// tx-hash row, most history rows) are hashed in one call from a stack buffer, which gives
    /// the same value as the streaming hasher at a fraction of its cost.
    pub fn row_hash(key: &[u8], value: &[u8]) -> u128 {
        let len = 4 + key.len() + value.len();
        if len <= ONE_SHOT_BYTES {
            let mut buf = [0u8; ONE_SHOT_BYTES];
            buf[..4].copy_from_slice(&(key.len() as u32).to_le_bytes());
            buf[4..4 + key.len()].copy_from_slice(key);
            buf[4 + key.len()..len].copy_from_slice(value);
            return xxh3_128(&buf[..len]);
        }
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

    /// The one-shot path must give the streaming hasher's value: digests recorded by an earlier
    /// version (a resumed migration's state file) stay comparable.
    #[test]
    fn one_shot_and_streaming_hashes_agree_at_every_length() {
        let bytes: Vec<u8> = (0..600u32).map(|i| (i * 31 % 251) as u8).collect();
        for key_len in [0, 1, 20, 32, 52, 100, 252, 300] {
            for value_len in [0, 1, 8, 199, 200, 201, 252, 260] {
                let (key, value) = (&bytes[..key_len], &bytes[key_len..key_len + value_len]);
                let mut h = Xxh3::new();
                h.update(&(key_len as u32).to_le_bytes());
                h.update(key);
                h.update(value);
                assert_eq!(
                    TableDigest::row_hash(key, value),
                    h.digest128(),
                    "key {key_len} value {value_len}"
                );
            }
        }
    }

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
