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

/// Commit `i` of the clearing workload (the crash suite's clear kills): rows written before the
/// clears that the clears must remove (a tx hash no commit has, in RocksDB; a header number, in
/// MDBX), a clear of `TransactionHashNumbers` and of `HeaderNumbers`, then commit `i`'s rows,
/// `HeaderNumbers[hash(i)]`, and every earlier commit's tx hash written again. A whole commit
/// leaves what [`write_commit`] would have; a clear applied without the writes after it, or the
/// writes without the clear, shows in [`visible`] (lost tx numbers, or `u64::MAX`).
pub fn write_clearing_commit<X: RawTxMut>(tx: &X, i: u64) {
    tx.put(
        Tables::TransactionHashNumbers,
        &hash(u64::MAX - i),
        &u64::MAX.to_le_bytes(),
    )
    .expect("rocksdb row before the clear");
    tx.put(Tables::HeaderNumbers, &hash(u64::MAX - i), &i.to_be_bytes())
        .expect("mdbx row before the clear");
    tx.clear(Tables::TransactionHashNumbers)
        .expect("clear a rocksdb table");
    tx.clear(Tables::HeaderNumbers)
        .expect("clear an mdbx table");
    write_commit(tx, i);
    tx.put(Tables::HeaderNumbers, &hash(i), &i.to_be_bytes())
        .expect("mdbx row after the clear");
    for k in 1..i {
        tx.put(Tables::TransactionHashNumbers, &hash(k), &k.to_le_bytes())
            .expect("rocksdb row after the clear");
    }
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
