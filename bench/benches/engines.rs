//! Per-operation microbenchmarks, MDBX and RocksDB side by side on realistic keys (28-byte
//! sharded keys, 60-byte storage sharded keys, 32-byte hashes). Prints the MDBX/RocksDB ratio of
//! every operation at the end (`cargo bench -p reth-hybrid-bench --bench engines`).
//!
//! RocksDB's rows are flushed and compacted into its bottom level before any read, as on a
//! node (whose rows are almost all in SST files): reads of a memtable would flatter it.

use criterion::{BatchSize, Criterion};
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_bench::{KeyGen, print_ratio_table, sharded_key, storage_sharded_key};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::hint::black_box;

/// Rows preloaded per table.
const ROWS: usize = 200_000;
const GROUPS: &[&str] = &[
    "one_read_tx_hash",
    "get_hit_tx_hash",
    "get_miss_tx_hash",
    "seek_accounts_history",
    "seek_storages_history",
    "seek_exact_accounts_history",
    "next_accounts_history",
    "put_tx_hash",
    "append_accounts_history",
    "commit_10k_tx_hashes",
];

struct Data {
    hashes: Vec<[u8; 32]>,
    addresses: Vec<[u8; 20]>,
    slots: Vec<[u8; 32]>,
}

fn data() -> Data {
    let mut g = KeyGen::new(7);
    Data {
        hashes: (0..ROWS).map(|_| g.bytes::<32>()).collect(),
        addresses: (0..ROWS / 4).map(|_| g.bytes::<20>()).collect(),
        slots: (0..16).map(|_| g.bytes::<32>()).collect(),
    }
}

/// A history shard value of realistic size (a short roaring list).
const SHARD: &[u8] = &[
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 16, 0, 0, 0, 1,
    0, 2, 0, 3, 0,
];

fn preload<E: RawEngine>(e: &E, d: &Data) {
    let tx = e.begin_rw().expect("rw");
    for (i, h) in d.hashes.iter().enumerate() {
        tx.put(Tables::TransactionHashNumbers, h, &(i as u64).to_le_bytes())
            .expect("put");
    }
    for a in &d.addresses {
        for shard in [1000u64, 2000, 3000, u64::MAX] {
            tx.put(Tables::AccountsHistory, &sharded_key(*a, shard), SHARD)
                .expect("put");
        }
        for s in d.slots.iter().take(2) {
            tx.put(
                Tables::StoragesHistory,
                &storage_sharded_key(*a, *s, u64::MAX),
                SHARD,
            )
            .expect("put");
        }
    }
    tx.commit().expect("commit");
}

/// Moves every preloaded row of RocksDB into SST files on its bottom level.
fn settle(rocks: &RocksEngine) {
    rocks.flush().expect("flush");
    for table in [
        Tables::TransactionHashNumbers,
        Tables::AccountsHistory,
        Tables::StoragesHistory,
    ] {
        rocks
            .db()
            .compact_range_cf::<&[u8], &[u8]>(rocks.column_family(table), None, None);
    }
}

fn bench_engine<E: RawEngine>(c: &mut Criterion, name: &str, e: &E, d: &Data) {
    let mut g = KeyGen::new(11);
    // The fixed cost of one read as an RPC call pays it: a read transaction for one lookup.
    c.benchmark_group("one_read_tx_hash")
        .bench_function(name, |b| {
            b.iter(|| {
                let h = &d.hashes[(g.next_u64() as usize) % d.hashes.len()];
                let ro = e.begin_ro().expect("ro");
                black_box(ro.get(Tables::TransactionHashNumbers, h).expect("get"))
            })
        });
    let ro = e.begin_ro().expect("ro");
    c.benchmark_group("get_hit_tx_hash")
        .bench_function(name, |b| {
            b.iter(|| {
                let h = &d.hashes[(g.next_u64() as usize) % d.hashes.len()];
                black_box(ro.get(Tables::TransactionHashNumbers, h).expect("get"))
            })
        });
    c.benchmark_group("get_miss_tx_hash")
        .bench_function(name, |b| {
            b.iter(|| {
                black_box(
                    ro.get(Tables::TransactionHashNumbers, &g.bytes::<32>())
                        .expect("get"),
                )
            })
        });
    let mut cur = ro.cursor(Tables::AccountsHistory).expect("cursor");
    c.benchmark_group("seek_accounts_history")
        .bench_function(name, |b| {
            b.iter(|| {
                let a = d.addresses[(g.next_u64() as usize) % d.addresses.len()];
                black_box(
                    cur.seek(&sharded_key(a, g.next_u64() % 4000))
                        .expect("seek"),
                )
            })
        });
    let mut scur = ro.cursor(Tables::StoragesHistory).expect("cursor");
    c.benchmark_group("seek_storages_history")
        .bench_function(name, |b| {
            b.iter(|| {
                let a = d.addresses[(g.next_u64() as usize) % d.addresses.len()];
                black_box(
                    scur.seek(&storage_sharded_key(a, d.slots[0], 5))
                        .expect("seek"),
                )
            })
        });
    // The lookup reth's history indexing makes for every changed address: its last shard.
    let mut xcur = ro.cursor(Tables::AccountsHistory).expect("cursor");
    c.benchmark_group("seek_exact_accounts_history")
        .bench_function(name, |b| {
            b.iter(|| {
                let a = d.addresses[(g.next_u64() as usize) % d.addresses.len()];
                black_box(
                    xcur.seek_exact(&sharded_key(a, u64::MAX))
                        .expect("seek_exact"),
                )
            })
        });
    let mut ncur = ro.cursor(Tables::AccountsHistory).expect("cursor");
    ncur.first().expect("first");
    c.benchmark_group("next_accounts_history")
        .bench_function(name, |b| {
            b.iter(|| {
                if ncur.next().expect("next").is_none() {
                    ncur.first().expect("first");
                }
            })
        });
    drop((cur, scur, xcur, ncur, ro));
    c.benchmark_group("put_tx_hash").bench_function(name, |b| {
        b.iter_batched(
            || e.begin_rw().expect("rw"),
            |tx| {
                for _ in 0..100 {
                    tx.put(Tables::TransactionHashNumbers, &g.bytes::<32>(), &[1; 8])
                        .expect("put");
                }
                tx.abort();
            },
            BatchSize::PerIteration,
        )
    });
    let mut next_block = 10_000_000u64;
    c.benchmark_group("append_accounts_history")
        .bench_function(name, |b| {
            b.iter_batched(
                || e.begin_rw().expect("rw"),
                |tx| {
                    let addr = [0xffu8; 20];
                    for _ in 0..100 {
                        next_block += 1;
                        tx.append(
                            Tables::AccountsHistory,
                            &sharded_key(addr, next_block),
                            SHARD,
                        )
                        .expect("append");
                    }
                    tx.abort();
                },
                BatchSize::PerIteration,
            )
        });
    let mut group = c.benchmark_group("commit_10k_tx_hashes");
    group.sample_size(10);
    group.bench_function(name, |b| {
        b.iter(|| {
            let tx = e.begin_rw().expect("rw");
            for _ in 0..10_000 {
                tx.put(Tables::TransactionHashNumbers, &g.bytes::<32>(), &[2; 8])
                    .expect("put");
            }
            tx.commit().expect("commit");
        })
    });
    group.finish();
}

fn main() {
    // No charts: the ratios printed are the result, and a chart backend must never end a run
    // (criterion's plotters charts panicked with FontUnavailable when plotters' ab_glyph text,
    // enabled for our own reports, had no registered font).
    let mut c = Criterion::default().without_plots().configure_from_args();
    let d = data();
    let mdbx_dir = tempfile::tempdir().expect("tmp");
    let rocks_dir = tempfile::tempdir().expect("tmp");
    let mdbx = MdbxEngine::open(
        mdbx_dir.path(),
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )
    .expect("mdbx");
    let rocks = RocksEngine::open(rocks_dir.path(), &RocksOptions::default()).expect("rocksdb");
    preload(&mdbx, &d);
    preload(&rocks, &d);
    settle(&rocks);
    bench_engine(&mut c, "mdbx", &mdbx, &d);
    bench_engine(&mut c, "rocksdb", &rocks, &d);
    c.final_summary();
    println!("\nMDBX/RocksDB time ratio per operation (< 1: MDBX faster; {ROWS} preloaded rows):");
    print_ratio_table(GROUPS, "mdbx", "rocksdb");
}
