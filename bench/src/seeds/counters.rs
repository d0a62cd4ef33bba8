//! Seed 003, counters: threads increment random 8-byte counters by read-modify-write (insert 0
//! when absent, else +1), over a key range larger than the engine's cache.
//!
//! Every variant runs the same operations: each thread draws batches of random keys, sorts a
//! batch (so concurrent RocksDB transactions lock keys in one order and cannot deadlock) and
//! applies it in one durable commit. The variants:
//! - `mdbx`, `rocksdb`, `hybrid`: our engines through the raw engine API (one writer at a time:
//!   threads queue for the write transaction, as on MDBX); the hybrid routes the counter table
//!   to RocksDB, so each commit pays its cross-engine protocol;
//! - `rocksdb-txn`: RocksDB's pessimistic `TransactionDB`, threads writing concurrently under
//!   row locks (`get_for_update` then `put`), the seed's read-then-write;
//! - `rocksdb-merge`: RocksDB's merge operator, blind writes folded at read or compaction time.
//!
//! After a run, every variant's table must satisfy `sum(values) + keys == operations`.

use super::SeedError;
use crate::KeyGen;
use reth_hybrid_api::{
    EngineKind, Tables,
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_hybrid::{HybridDb, HybridOptions, Layout};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use rocksdb::{
    BlockBasedOptions, Cache, DB, ErrorKind, MergeOperands, MultiThreaded, Options, TransactionDB,
    TransactionDBOptions, TransactionOptions, WriteBatch, WriteOptions,
};
use std::{
    path::Path,
    time::{Duration, Instant},
};

/// A table with 8-byte keys and values (`TxNumber -> BlockNumber`), used raw: big-endian u64
/// counters under big-endian u64 keys.
pub const COUNTER_TABLE: Tables = Tables::TransactionBlocks;

#[derive(Debug, Clone, Copy)]
pub struct CounterConfig {
    pub threads: usize,
    /// Keys are drawn from `0..key_range`.
    pub key_range: u64,
    pub ops_per_thread: u64,
    /// Operations per commit (one sorted batch).
    pub ops_per_commit: usize,
    /// RocksDB's block cache; MDBX caches in the OS page cache, which a process cannot bound.
    pub cache_bytes: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterVariant {
    Mdbx,
    RocksDb,
    Hybrid,
    RocksDbTransactions,
    RocksDbMerge,
}

impl CounterVariant {
    pub const ALL: [Self; 5] = [
        Self::Mdbx,
        Self::RocksDb,
        Self::Hybrid,
        Self::RocksDbTransactions,
        Self::RocksDbMerge,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Mdbx => "mdbx",
            Self::RocksDb => "rocksdb",
            Self::Hybrid => "hybrid",
            Self::RocksDbTransactions => "rocksdb-txn",
            Self::RocksDbMerge => "rocksdb-merge",
        }
    }
}

#[derive(Debug, Clone)]
pub struct CounterReport {
    pub variant: CounterVariant,
    pub ops: u64,
    /// Operations that found no counter (unknown to blind merges: `None`).
    pub inserts: Option<u64>,
    pub elapsed: Duration,
    /// Transactions retried after a lock timeout (`rocksdb-txn` only).
    pub retries: u64,
    /// The table afterwards.
    pub keys: u64,
    pub sum: u64,
}

impl CounterReport {
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }

    /// Every operation either inserted a key (at 0) or added one to a counter.
    pub fn is_consistent(&self) -> bool {
        self.keys + self.sum == self.ops
    }
}

/// The sorted batches thread `thread` applies.
fn batches(config: &CounterConfig, thread: usize) -> impl Iterator<Item = Vec<u64>> {
    let mut keys = KeyGen::new(config.seed ^ ((thread as u64 + 1) << 32));
    let mut left = config.ops_per_thread;
    let per_commit = config.ops_per_commit.max(1) as u64;
    let range = config.key_range.max(1);
    std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let n = left.min(per_commit);
        left -= n;
        let mut batch: Vec<u64> = (0..n).map(|_| keys.next_u64() % range).collect();
        batch.sort_unstable();
        Some(batch)
    })
}

fn counter(bytes: &[u8]) -> Result<u64, SeedError> {
    let array: [u8; 8] = bytes
        .try_into()
        .map_err(|_| SeedError::Corrupt(format!("a counter of {} bytes", bytes.len())))?;
    Ok(u64::from_be_bytes(array))
}

/// Runs `variant` in a fresh store under `dir`.
pub fn run(
    variant: CounterVariant,
    dir: &Path,
    config: &CounterConfig,
) -> Result<CounterReport, SeedError> {
    match variant {
        CounterVariant::Mdbx => {
            let engine =
                MdbxEngine::open(dir, MdbxOptions::create().with_geometry(Geometry::SMALL))?;
            run_engine(variant, &engine, config)
        }
        CounterVariant::RocksDb => {
            let engine = RocksEngine::open(&dir.join("rocksdb"), &rocks_options(config))?;
            run_engine(variant, &engine, config)
        }
        CounterVariant::Hybrid => {
            let mdbx = MdbxEngine::open(dir, MdbxOptions::create().with_geometry(Geometry::SMALL))?;
            let rocks = RocksEngine::open(&dir.join("hybrid-rocksdb"), &rocks_options(config))?;
            let mut layout = Layout::default();
            layout.set(COUNTER_TABLE, EngineKind::RocksDb);
            let hybrid = HybridDb::open(
                mdbx,
                rocks,
                dir,
                HybridOptions {
                    layout: Some(layout),
                    ..Default::default()
                },
            )?;
            run_engine(variant, &hybrid, config)
        }
        CounterVariant::RocksDbTransactions => run_transaction_db(dir, config),
        CounterVariant::RocksDbMerge => run_merge(dir, config),
    }
}

fn rocks_options(config: &CounterConfig) -> RocksOptions {
    RocksOptions {
        block_cache_bytes: config.cache_bytes,
        row_cache_bytes: 0,
        ..RocksOptions::default()
    }
}

fn run_engine<E: RawEngine>(
    variant: CounterVariant,
    engine: &E,
    config: &CounterConfig,
) -> Result<CounterReport, SeedError> {
    let (inserts, elapsed) = on_threads(config, |thread| {
        let mut inserts = 0;
        for batch in batches(config, thread) {
            let tx = engine.begin_rw()?;
            for key in batch {
                let key = key.to_be_bytes();
                let next = match tx.get(COUNTER_TABLE, &key)? {
                    None => {
                        inserts += 1;
                        0
                    }
                    Some(value) => counter(&value)? + 1,
                };
                tx.put(COUNTER_TABLE, &key, &next.to_be_bytes())?;
            }
            tx.commit()?;
        }
        Ok(inserts)
    })?;
    let table = {
        let tx = engine.begin_ro()?;
        let mut cursor = tx.cursor(COUNTER_TABLE)?;
        let (mut keys, mut sum) = (0, 0);
        let mut row = cursor.first()?;
        while let Some((_, value)) = row {
            keys += 1;
            sum += counter(&value)?;
            row = cursor.next()?;
        }
        (keys, sum)
    };
    Ok(CounterReport::new(
        variant,
        config,
        Some(inserts),
        elapsed,
        0,
        table,
    ))
}

impl CounterReport {
    fn new(
        variant: CounterVariant,
        config: &CounterConfig,
        inserts: Option<u64>,
        elapsed: Duration,
        retries: u64,
        (keys, sum): (u64, u64),
    ) -> Self {
        Self {
            variant,
            ops: config.ops_per_thread * config.threads as u64,
            inserts,
            elapsed,
            retries,
            keys,
            sum,
        }
    }
}

/// Runs `work(thread)` on every configured thread at once; returns the sum of their results and
/// the wall time they took together.
fn on_threads<F>(config: &CounterConfig, work: F) -> Result<(u64, Duration), SeedError>
where
    F: Fn(usize) -> Result<u64, SeedError> + Sync,
{
    let started = Instant::now();
    let total = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..config.threads)
            .map(|thread| {
                let work = &work;
                scope.spawn(move || work(thread))
            })
            .collect();
        let mut total = 0;
        for worker in workers {
            total += worker
                .join()
                .map_err(|_| SeedError::Corrupt("a counter thread panicked".into()))??;
        }
        Ok::<_, SeedError>(total)
    })?;
    Ok((total, started.elapsed()))
}

/// The seed's RocksDB set-up: a bounded block cache holding index and filter blocks, bloom
/// filters.
fn seed_rocksdb_options(config: &CounterConfig) -> Options {
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(&Cache::new_lru_cache(config.cache_bytes));
    table.set_cache_index_and_filter_blocks(true);
    table.set_bloom_filter(10.0, false);
    let mut options = Options::default();
    options.create_if_missing(true);
    options.set_block_based_table_factory(&table);
    options
}

fn synced() -> WriteOptions {
    let mut write = WriteOptions::default();
    write.set_sync(true);
    write
}

fn run_transaction_db(dir: &Path, config: &CounterConfig) -> Result<CounterReport, SeedError> {
    let db: TransactionDB<MultiThreaded> = TransactionDB::open(
        &seed_rocksdb_options(config),
        &TransactionDBOptions::default(),
        dir.join("rocksdb-txn"),
    )?;
    let retries = std::sync::atomic::AtomicU64::new(0);
    let (inserts, elapsed) = on_threads(config, |thread| {
        let mut inserts = 0;
        for batch in batches(config, thread) {
            loop {
                match apply_transaction(&db, &batch) {
                    Ok(found_none) => {
                        inserts += found_none;
                        break;
                    }
                    Err(SeedError::Rocks(e))
                        if matches!(
                            e.kind(),
                            ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::TryAgain
                        ) =>
                    {
                        retries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(inserts)
    })?;
    let table = scan(db.iterator(rocksdb::IteratorMode::Start))?;
    Ok(CounterReport::new(
        CounterVariant::RocksDbTransactions,
        config,
        Some(inserts),
        elapsed,
        retries.into_inner(),
        table,
    ))
}

/// One batch in one pessimistic transaction; returns how many keys it found absent. A lock
/// timeout rolls the whole transaction back (the caller retries it).
fn apply_transaction(db: &TransactionDB<MultiThreaded>, batch: &[u64]) -> Result<u64, SeedError> {
    let txn = db.transaction_opt(&synced(), &TransactionOptions::default());
    let mut inserts = 0;
    for key in batch {
        let key = key.to_be_bytes();
        let next = match txn.get_for_update(key, true)? {
            None => {
                inserts += 1;
                0
            }
            Some(value) => counter(&value)? + 1,
        };
        txn.put(key, next.to_be_bytes())?;
    }
    txn.commit()?;
    Ok(inserts)
}

/// The counter merge: an operand is a number of increments `n`; applied to no value it gives
/// `n - 1` (the first increment inserts 0), to a value `v` it gives `v + n`.
fn full_merge(_key: &[u8], existing: Option<&[u8]>, operands: &MergeOperands) -> Option<Vec<u8>> {
    let increments: u64 = operands.iter().filter_map(|op| counter(op).ok()).sum();
    let value = match existing.map(counter) {
        Some(Ok(v)) => v + increments,
        Some(Err(_)) => return None,
        None => increments.checked_sub(1)?,
    };
    Some(value.to_be_bytes().to_vec())
}

/// Operands combine by adding their increment counts.
fn partial_merge(
    _key: &[u8],
    _existing: Option<&[u8]>,
    operands: &MergeOperands,
) -> Option<Vec<u8>> {
    let increments: u64 = operands.iter().filter_map(|op| counter(op).ok()).sum();
    Some(increments.to_be_bytes().to_vec())
}

fn run_merge(dir: &Path, config: &CounterConfig) -> Result<CounterReport, SeedError> {
    let mut options = seed_rocksdb_options(config);
    options.set_merge_operator("reth-hybrid-counter", full_merge, partial_merge);
    let db = DB::open(&options, dir.join("rocksdb-merge"))?;
    let (_, elapsed) = on_threads(config, |thread| {
        for batch in batches(config, thread) {
            let mut write = WriteBatch::default();
            for key in batch {
                write.merge(key.to_be_bytes(), 1u64.to_be_bytes());
            }
            db.write_opt(write, &synced())?;
        }
        Ok(0)
    })?;
    let table = scan(db.iterator(rocksdb::IteratorMode::Start))?;
    Ok(CounterReport::new(
        CounterVariant::RocksDbMerge,
        config,
        None,
        elapsed,
        0,
        table,
    ))
}

fn scan<I>(rows: I) -> Result<(u64, u64), SeedError>
where
    I: Iterator<Item = Result<(Box<[u8]>, Box<[u8]>), rocksdb::Error>>,
{
    let (mut keys, mut sum) = (0, 0);
    for row in rows {
        let (_, value) = row?;
        keys += 1;
        sum += counter(&value)?;
    }
    Ok((keys, sum))
}
