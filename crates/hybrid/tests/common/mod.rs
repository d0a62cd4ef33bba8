//! Shared constructors for the hybrid's tests: real MDBX and real RocksDB in one datadir.

#![allow(dead_code)]

use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_hybrid::{HybridDb, HybridError, HybridOptions, Layout};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::{collections::BTreeSet, path::Path};

pub type Db = HybridDb<MdbxEngine, RocksEngine>;

pub fn engines(dir: &Path) -> (MdbxEngine, RocksEngine) {
    engines_with(dir, true)
}

/// `sync_writes: false` is for suites about semantics, not durability (many short-lived datadirs).
pub fn engines_with(dir: &Path, sync_writes: bool) -> (MdbxEngine, RocksEngine) {
    let mdbx =
        MdbxEngine::open(dir, MdbxOptions::create().with_geometry(Geometry::SMALL)).expect("mdbx");
    let rocks = RocksEngine::open(
        &dir.join("hybrid-rocksdb"),
        &RocksOptions {
            block_cache_bytes: 8 << 20,
            sync_writes,
            create_if_missing: true,
            read_only: false,
        },
    )
    .expect("rocksdb");
    (mdbx, rocks)
}

pub fn open(dir: &Path, layout: Option<Layout>) -> Result<Db, HybridError> {
    let (mdbx, rocks) = engines(dir);
    HybridDb::open(mdbx, rocks, dir, HybridOptions { layout })
}

/// Commit `i` of the crash and recovery workloads: block `i` in MDBX (CanonicalHeaders), a tx hash
/// in RocksDB (TransactionHashNumbers) whose value is `i`.
pub fn write_commit<X: RawTxMut>(tx: &X, i: u64) {
    tx.put(Tables::CanonicalHeaders, &i.to_be_bytes(), &[i as u8; 32])
        .expect("mdbx row");
    tx.put(Tables::TransactionHashNumbers, &hash(i), &i.to_le_bytes())
        .expect("rocksdb row");
}

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
