//! Seed 004's per-operation costs that the engine suite lacked: the cost of iterating rows by
//! value size (our cursors copy each row out; RocksDB's own iterator lends it), and the cost of
//! RocksDB's comparator. Our dupsort tables store `key ++ subkey` under RocksDB's native
//! bytewise comparator; the seed measured a comparator called back across the language
//! boundary (JNI) 7x slower than the native one, and a Rust callback is that choice here.

use crate::KeyGen;
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
};
use rocksdb::{DB, Options};
use std::{cmp::Ordering, path::Path};

/// Raw rows of any size (`hash -> bytes`).
pub const VALUE_TABLE: Tables = Tables::Bytecodes;

/// Writes `rows` rows of `value_size` bytes into [`VALUE_TABLE`] in one commit.
pub fn fill_values<E: RawEngine>(
    engine: &E,
    rows: usize,
    value_size: usize,
) -> Result<(), reth_hybrid_api::DatabaseError> {
    let mut keys = KeyGen::new(value_size as u64);
    let value = vec![0x5a; value_size];
    let tx = engine.begin_rw()?;
    for _ in 0..rows {
        tx.put(VALUE_TABLE, &keys.bytes::<32>(), &value)?;
    }
    tx.commit()
}

/// Iterates [`VALUE_TABLE`] from the first row; returns (rows, value bytes) seen.
pub fn iterate_values<E: RawEngine>(
    engine: &E,
) -> Result<(usize, usize), reth_hybrid_api::DatabaseError> {
    let tx = engine.begin_ro()?;
    let mut cursor = tx.cursor(VALUE_TABLE)?;
    let (mut rows, mut bytes) = (0, 0);
    let mut row = cursor.first()?;
    while let Some((_, value)) = row {
        rows += 1;
        bytes += value.len();
        row = cursor.next()?;
    }
    Ok((rows, bytes))
}

/// How a RocksDB orders keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparator {
    /// RocksDB's built-in `leveldb.BytewiseComparator` (what reth-hybrid uses).
    NativeBytewise,
    /// The same order from a Rust callback.
    RustBytewise,
    /// Reverse byte order from a Rust callback.
    RustReverseBytewise,
}

impl Comparator {
    pub const ALL: [Self; 3] = [
        Self::NativeBytewise,
        Self::RustBytewise,
        Self::RustReverseBytewise,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::NativeBytewise => "native_bytewise",
            Self::RustBytewise => "rust_bytewise",
            Self::RustReverseBytewise => "rust_reverse_bytewise",
        }
    }
}

/// A RocksDB at `path` ordered by `comparator`, WAL unsynced (the seed's defaults).
pub fn open_with_comparator(path: &Path, comparator: Comparator) -> Result<DB, rocksdb::Error> {
    let mut options = Options::default();
    options.create_if_missing(true);
    match comparator {
        Comparator::NativeBytewise => {}
        Comparator::RustBytewise => options.set_comparator(
            "reth-hybrid.rust_bytewise",
            Box::new(|a: &[u8], b: &[u8]| a.cmp(b)),
        ),
        Comparator::RustReverseBytewise => options.set_comparator(
            "reth-hybrid.rust_reverse_bytewise",
            Box::new(|a: &[u8], b: &[u8]| -> Ordering { b.cmp(a) }),
        ),
    }
    DB::open(&options, path)
}
