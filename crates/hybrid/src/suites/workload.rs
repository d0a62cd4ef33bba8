//! The commits the suites make: block `i` in a table the default layout keeps in MDBX, a tx hash
//! in one it routes to RocksDB, so every commit is a cross-engine commit.

use reth_hybrid_api::{
    DatabaseError, Tables,
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
};
use std::collections::BTreeSet;

/// Commit `i`'s writes: `CanonicalHeaders[i]` (MDBX) and `TransactionHashNumbers[hash(i)] = i`
/// (RocksDB).
pub fn write_commit<X: RawTxMut>(tx: &X, i: u64) {
    tx.put(Tables::CanonicalHeaders, &i.to_be_bytes(), &[i as u8; 32])
        .expect("mdbx row");
    tx.put(Tables::TransactionHashNumbers, &hash(i), &i.to_le_bytes())
        .expect("rocksdb row");
}

/// Makes commit `i` in one write transaction.
pub fn commit<E: RawEngine>(db: &E, i: u64) -> Result<(), DatabaseError> {
    let tx = db.begin_rw()?;
    write_commit(&tx, i);
    tx.commit()
}

/// The tx hash of commit `i`.
pub fn hash(i: u64) -> [u8; 32] {
    let mut h = [0xabu8; 32];
    h[..8].copy_from_slice(&i.to_be_bytes());
    h
}

/// The commits visible in each engine: (MDBX blocks, RocksDB tx numbers).
pub fn visible<E: RawEngine>(db: &E) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let tx = db.begin_ro().expect("ro");
    let mut blocks = BTreeSet::new();
    let mut c = tx.cursor(Tables::CanonicalHeaders).expect("cursor");
    let mut next = c.first().expect("first");
    while let Some((k, _)) = next {
        blocks.insert(u64::from_be_bytes(k.try_into().expect("8-byte key")));
        next = c.next().expect("next");
    }
    let mut txs = BTreeSet::new();
    let mut c = tx.cursor(Tables::TransactionHashNumbers).expect("cursor");
    let mut next = c.first().expect("first");
    while let Some((_, v)) = next {
        txs.insert(u64::from_le_bytes(v.try_into().expect("8-byte value")));
        next = c.next().expect("next");
    }
    (blocks, txs)
}
