//! The seed benchmarks (`make bench-seeds`): seed 000's Merkle-Patricia job, seed 003's
//! read-modify-write counters and seed 004's per-operation costs, on MDBX, RocksDB and the
//! hybrid side by side. `cargo bench` runs the seeds' sizes; `cargo test` (no `--bench`) runs a
//! tiny size of each, so the job cannot rot. docs/benchmarks.md holds the results.

use criterion::{BatchSize, Criterion};
use reth_hybrid_api::raw::{RawCursor, RawEngine, RawTx};
use reth_hybrid_bench::{
    KeyGen, dir_bytes, print_ratio_table,
    seeds::{
        OpenStore, TrieStore,
        counters::{self, CounterConfig, CounterVariant},
        micro::{self, Comparator},
        open_store,
        pmt::{self, PmtConfig, RootMode},
    },
    with_store,
};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::{
    hint::black_box,
    time::{Duration, Instant},
};

struct Sizes {
    pmt: PmtConfig,
    counters: CounterConfig,
    /// Rows per value size in the iteration benchmark.
    iterate_rows: usize,
    value_sizes: &'static [usize],
    /// Keys preloaded for the comparator seek benchmark.
    comparator_keys: usize,
}

const SEED_SIZES: Sizes = Sizes {
    pmt: PmtConfig::SEED,
    counters: CounterConfig {
        threads: 4,
        key_range: 2_000_000,
        ops_per_thread: 500_000,
        ops_per_commit: 1_000,
        cache_bytes: 16 << 20,
        seed: 3,
    },
    iterate_rows: 20_000,
    value_sizes: &[8, 64, 512, 4096],
    comparator_keys: 200_000,
};

const TINY_SIZES: Sizes = Sizes {
    pmt: PmtConfig {
        batches: 3,
        keys_per_batch: 2_000,
        seed: 1,
        sorted_writes: false,
        root: RootMode::InWriteTx,
    },
    counters: CounterConfig {
        threads: 2,
        key_range: 1_000,
        ops_per_thread: 1_500,
        ops_per_commit: 100,
        cache_bytes: 1 << 20,
        seed: 3,
    },
    iterate_rows: 200,
    value_sizes: &[8, 4096],
    comparator_keys: 1_000,
};

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes = if full { &SEED_SIZES } else { &TINY_SIZES };
    println!(
        "# seed benchmarks ({} size)",
        if full {
            "the seeds'"
        } else {
            "tiny (cargo test)"
        }
    );
    // `SEEDS_JOBS=pmt,counters,micro` (the default: all) runs a subset.
    let jobs = std::env::var("SEEDS_JOBS").unwrap_or_else(|_| "pmt,counters,micro".into());
    let job = |name: &str| jobs.split(',').any(|j| j.trim() == name);
    if job("pmt") {
        pmt_job(&sizes.pmt);
    }
    if job("counters") {
        counter_job(&sizes.counters);
    }
    if !job("micro") {
        return;
    }
    // No charts: the ratios printed are the result (see engines.rs).
    let mut c = Criterion::default()
        .without_plots()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    iteration_by_value_size(&mut c, sizes);
    comparators(&mut c, sizes);
    c.final_summary();
    let iterate_groups: Vec<String> = sizes
        .value_sizes
        .iter()
        .map(|size| format!("seed004_iterate_{size}b_values"))
        .collect();
    let iterate_groups: Vec<&str> = iterate_groups.iter().map(String::as_str).collect();
    println!(
        "\nIterating {} rows, our RocksDB cursor vs MDBX's:",
        sizes.iterate_rows
    );
    print_ratio_table(&iterate_groups, "rocksdb", "mdbx");
    println!("\nOur RocksDB cursor vs RocksDB's own iterator (the cost of our cursor emulation):");
    print_ratio_table(&iterate_groups, "rocksdb", "rocksdb_native_iterator");
    let comparator_groups = [
        "seed004_comparator_put_1000",
        "seed004_comparator_seek_1000",
    ];
    println!("\nA Rust comparator callback vs RocksDB's native bytewise comparator:");
    print_ratio_table(&comparator_groups, "rust_bytewise", "native_bytewise");
    print_ratio_table(
        &comparator_groups,
        "rust_reverse_bytewise",
        "native_bytewise",
    );
}

/// Seed 000: prints each batch like the seed, then a summary per store.
fn pmt_job(config: &PmtConfig) {
    let keys = config.batches * config.keys_per_batch;
    println!(
        "\n## Seed 000, the PMT job: {keys} random 32-byte keys in {} batches of {}",
        config.batches, config.keys_per_batch
    );
    let started = Instant::now();
    let reference = pmt::reference_roots(config);
    println!(
        "reference roots (from scratch, every batch, untimed below): {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // Every store in the seed's random write order, then the MDBX-backed ones with each batch
    // written in key order (as reth writes its sorted hashed state), with the root computed on
    // a second thread while the leaves are written (as reth's state root reads a snapshot), and
    // with the root's 16 subtrees shared out between this machine's cores; that last one on
    // plain RocksDB too, for the trie's engine.
    // `SEEDS_PMT_STORES=N,M` runs only those rows of the list (0-based).
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let random = (false, RootMode::InWriteTx);
    let sorted = (true, RootMode::InWriteTx);
    let beside = (true, RootMode::Snapshot { threads: 1 });
    let parallel = (true, RootMode::Snapshot { threads: cores });
    let all: Vec<(TrieStore, (bool, RootMode))> = TrieStore::ALL
        .into_iter()
        .map(|store| (store, random))
        .chain([
            (TrieStore::Mdbx, sorted),
            (TrieStore::Hybrid, sorted),
            (TrieStore::Mdbx, beside),
            (TrieStore::Hybrid, beside),
            (TrieStore::Mdbx, parallel),
            (TrieStore::Hybrid, parallel),
            (TrieStore::RocksDb, parallel),
        ])
        .collect();
    let chosen: Option<Vec<usize>> = std::env::var("SEEDS_PMT_STORES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect());
    let variants = all
        .into_iter()
        .enumerate()
        .filter(|(i, _)| chosen.as_ref().is_none_or(|c| c.contains(i)))
        .map(|(_, v)| v);
    let mut summary = Vec::new();
    for (store, (sorted_writes, root)) in variants {
        let config = &PmtConfig {
            sorted_writes,
            root,
            ..*config
        };
        let name = [
            store.name().to_string(),
            if sorted_writes {
                "sorted writes".into()
            } else {
                String::new()
            },
            root.describe(),
        ]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
        let dir = tempfile::tempdir().expect("tempdir");
        let open = open_store(store, dir.path()).expect("open the store");
        println!("\n### {name}");
        let started = Instant::now();
        let reports = with_store!(&open, |db| pmt::run(db, config, |batch| {
            assert_eq!(
                batch.root, reference[batch.batch],
                "{name}: batch {}'s incremental root differs from the from-scratch root",
                batch.batch
            );
            let p = &batch.phases;
            println!(
                "Batch {} completed in {} ms (leaves read {}, hashes reused {}, nodes written {}; \
                 leaf writes {} ms, root {} ms, trie writes {} ms, commit {} ms)",
                batch.batch,
                batch.elapsed.as_millis(),
                batch.leaves_read,
                batch.hashes_reused,
                batch.nodes_written,
                p.leaf_writes.as_millis(),
                p.root.as_millis(),
                p.trie_writes.as_millis(),
                p.commit.as_millis(),
            );
        }))
        .expect("the PMT job");
        let total = started.elapsed();
        let bytes = dir_bytes(dir.path());
        let (mdbx_bytes, rocks_bytes) = (
            dir_bytes(&dir.path().join("db")),
            dir_bytes(&dir.path().join("hybrid-rocksdb")),
        );
        check_stored_trie(&open, store);
        let rocks_dir = dir.path().join("hybrid-rocksdb");
        let wal = wal_bytes(&rocks_dir);
        let mdbx_compacted = compact(&open, store, dir.path());
        // Closed before RocksDB is measured: until then, iterators the hybrid's shared read view
        // keeps for its next reader pin the files the compaction replaced.
        drop(open);
        let rocks_compacted = dir_bytes(&rocks_dir);
        println!(
            "Job completed in {} ms; {:.0} MiB on disk (MDBX {:.0}, RocksDB {:.0} of which WAL \
             {:.0}); compacted and closed: MDBX {:.0}, RocksDB {:.0} of which WAL {:.0}",
            total.as_millis(),
            mib(bytes),
            mib(mdbx_bytes),
            mib(rocks_bytes),
            mib(wal),
            mib(mdbx_compacted),
            mib(rocks_compacted),
            mib(wal_bytes(&rocks_dir)),
        );
        let compacted = mdbx_compacted + rocks_compacted;
        let mut phases = pmt::BatchPhases::default();
        reports.iter().for_each(|r| phases.add(&r.phases));
        summary.push((name, total, bytes, compacted, reports, phases));
    }
    println!("\n| store | job | MiB on disk | MiB after compaction | first batch | last batch |");
    println!("|---|---:|---:|---:|---:|---:|");
    let best = summary.iter().map(|s| s.1).min().expect("stores");
    for (name, total, bytes, compacted, reports, _) in &summary {
        println!(
            "| {} | {:.1} s ({:.2}x best) | {:.0} | {:.0} | {} ms | {} ms |",
            name,
            total.as_secs_f64(),
            total.as_secs_f64() / best.as_secs_f64(),
            mib(*bytes),
            mib(*compacted),
            reports.first().map_or(0, |r| r.elapsed.as_millis()),
            reports.last().map_or(0, |r| r.elapsed.as_millis()),
        );
    }
    println!("\nWhere the time went (all batches):");
    println!("\n| store | leaf writes | root | trie writes | commit |");
    println!("|---|---:|---:|---:|---:|");
    for (name, total, _, _, _, p) in &summary {
        let share = |d: Duration| {
            format!(
                "{:.1} s ({:.0}%)",
                d.as_secs_f64(),
                100.0 * d.as_secs_f64() / total.as_secs_f64()
            )
        };
        println!(
            "| {name} | {} | {} | {} | {} |",
            share(p.leaf_writes),
            share(p.root),
            share(p.trie_writes),
            share(p.commit)
        );
    }
    println!(
        "seed 000 for comparison (another machine): PatriciaDB 40.2 s / 1.19 GB, Besu's PMT on \
         RocksDB 224.3 s / 2.1 GB after compaction (5.6x)"
    );
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// The stored trie after all incremental updates equals a from-scratch build's.
fn check_stored_trie(open: &OpenStore, store: TrieStore) {
    with_store!(open, |db| {
        let tx = reth_hybrid_api::typed::Database::tx(db).expect("read tx");
        let (_, expected) = pmt::from_scratch_nodes(&tx).expect("rebuild");
        let stored = pmt::stored_nodes(&tx).expect("stored nodes");
        assert!(
            stored == expected,
            "{}: the stored trie ({} nodes) differs from a from-scratch build ({} nodes)",
            store.name(),
            stored.len(),
            expected.len()
        );
    });
}

/// Compacts both engines, as Besu's figure in the seed is after compaction: RocksDB's column
/// families of the trie in place, MDBX by a compacting copy (free pages left out; written beside
/// the store and removed). Returns the copy's bytes.
fn compact(open: &OpenStore, store: TrieStore, dir: &std::path::Path) -> u64 {
    let rocks = match open {
        OpenStore::RocksDb(db) => Some(db.engine().as_ref()),
        OpenStore::Hybrid(db) if store == TrieStore::HybridTrieInRocksDb => {
            Some(db.engine().follower())
        }
        _ => None,
    };
    for table in [
        reth_hybrid_api::Tables::AccountsTrie,
        reth_hybrid_api::Tables::HashedAccounts,
    ] {
        if let Some(rocks) = rocks {
            rocks
                .db()
                .compact_range_cf(rocks.column_family(table), None::<&[u8]>, None::<&[u8]>);
        }
    }
    let mdbx = match open {
        OpenStore::Mdbx(db) => Some(db.engine().as_ref()),
        OpenStore::Hybrid(db) => Some(db.engine().primary()),
        OpenStore::RocksDb(_) => None,
    };
    mdbx.map_or(0, |mdbx| {
        let copy = dir.join("compacted-mdbx.dat");
        mdbx.copy_compacted(&copy).expect("a compacting MDBX copy");
        let bytes = std::fs::metadata(&copy).expect("the copy").len();
        std::fs::remove_file(&copy).expect("remove the copy");
        bytes
    })
}

/// Bytes of RocksDB's write-ahead log files in `dir`.
fn wal_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum()
    })
}

/// Seed 003: ops/s per variant, each checked for `sum + keys == operations`.
fn counter_job(config: &CounterConfig) {
    println!(
        "\n## Seed 003, counters: {} threads x {} read-modify-writes over {} keys, {} per commit, \
         RocksDB block cache {} MiB",
        config.threads,
        config.ops_per_thread,
        config.key_range,
        config.ops_per_commit,
        config.cache_bytes >> 20
    );
    println!("\n| variant | ops/s | vs mdbx | inserts | lock-timeout retries | MiB on disk |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut mdbx_rate = None;
    for variant in CounterVariant::ALL {
        let dir = tempfile::tempdir().expect("tempdir");
        let report = counters::run(variant, dir.path(), config).expect("the counter job");
        assert!(
            report.is_consistent(),
            "{}: {} keys holding {} after {} operations",
            variant.name(),
            report.keys,
            report.sum,
            report.ops
        );
        let rate = report.ops_per_sec();
        let base = *mdbx_rate.get_or_insert(rate);
        println!(
            "| {} | {:.0} | {:.2}x | {} | {} | {:.0} |",
            variant.name(),
            rate,
            rate / base,
            report.inserts.map_or("(blind)".into(), |n| n.to_string()),
            report.retries,
            mib(dir_bytes(dir.path()))
        );
    }
    println!(
        "seed 003 for comparison (another machine, 16 threads, 5 billion keys): TuplDB 7.7x \
         RocksDB's read-modify-write"
    );
}

/// Seed 004: iteration cost by value size, per engine.
fn iteration_by_value_size(c: &mut Criterion, sizes: &Sizes) {
    for &size in sizes.value_sizes {
        let mdbx_dir = tempfile::tempdir().expect("tempdir");
        let rocks_dir = tempfile::tempdir().expect("tempdir");
        let mdbx = MdbxEngine::open(
            mdbx_dir.path(),
            MdbxOptions::create().with_geometry(Geometry::SMALL),
        )
        .expect("mdbx");
        let rocks = RocksEngine::open(rocks_dir.path(), &RocksOptions::default()).expect("rocksdb");
        micro::fill_values(&mdbx, sizes.iterate_rows, size).expect("fill mdbx");
        micro::fill_values(&rocks, sizes.iterate_rows, size).expect("fill rocksdb");
        let mut group = c.benchmark_group(format!("seed004_iterate_{size}b_values"));
        group.bench_function("mdbx", |b| {
            b.iter(|| black_box(micro::iterate_values(&mdbx).expect("iterate")))
        });
        group.bench_function("rocksdb", |b| {
            b.iter(|| black_box(micro::iterate_values(&rocks).expect("iterate")))
        });
        group.bench_function("rocksdb_native_iterator", |b| {
            b.iter(|| {
                let cf = rocks.column_family(micro::VALUE_TABLE);
                let mut it = rocks.db().raw_iterator_cf(cf);
                it.seek_to_first();
                let mut bytes = 0;
                while let Some(value) = it.value() {
                    bytes += value.len();
                    it.next();
                }
                black_box(bytes)
            })
        });
        group.finish();
        // The engines' own cursors agree on what they iterate.
        let ro = rocks.begin_ro().expect("ro");
        assert!(
            ro.cursor(micro::VALUE_TABLE)
                .expect("cursor")
                .first()
                .expect("first")
                .is_some()
        );
    }
}

/// Seed 004: puts and seeks under the native comparator and under Rust callbacks.
fn comparators(c: &mut Criterion, sizes: &Sizes) {
    let dirs: Vec<_> = Comparator::ALL
        .iter()
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let dbs: Vec<_> = Comparator::ALL
        .iter()
        .zip(&dirs)
        .map(|(cmp, dir)| {
            (
                *cmp,
                micro::open_with_comparator(dir.path(), *cmp).expect("open"),
            )
        })
        .collect();
    let mut group = c.benchmark_group("seed004_comparator_put_1000");
    for (cmp, db) in &dbs {
        let mut keys = KeyGen::new(4);
        group.bench_function(cmp.name(), |b| {
            b.iter_batched(
                || (0..1000).map(|_| keys.bytes::<32>()).collect::<Vec<_>>(),
                |batch| {
                    for key in batch {
                        db.put(key, [1u8; 32]).expect("put");
                    }
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
    for (_, db) in &dbs {
        let mut keys = KeyGen::new(5);
        for _ in 0..sizes.comparator_keys {
            db.put(keys.bytes::<32>(), [2u8; 32]).expect("preload");
        }
        db.flush().expect("flush");
    }
    let mut group = c.benchmark_group("seed004_comparator_seek_1000");
    for (cmp, db) in &dbs {
        let mut keys = KeyGen::new(6);
        group.bench_function(cmp.name(), |b| {
            b.iter(|| {
                let mut it = db.raw_iterator();
                for _ in 0..1000 {
                    it.seek(keys.bytes::<32>());
                    black_box(it.valid());
                }
            })
        });
    }
    group.finish();
}
