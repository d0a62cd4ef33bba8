//! The hybrid at a real node's scale (`make bench-scale`): for each size, a generated stock
//! datadir and its migrated copy, side by side in one run.
//!
//! - tx-hash lookups (hits and misses) and historical account and storage lookups in reth's
//!   algorithm (history shard, rank, changeset), p50/p99 and ops/s, warm (after one pass over
//!   the same keys) and cold (after dropping the page cache, or `fadvise(DONTNEED)` on every file
//!   of the datadir where the machine does not allow that);
//! - block persistence in reth's write pattern (200 transactions a block, a commit every 3
//!   blocks): blocks/s and bytes written;
//! - the migration's time, and each moved table's bytes in MDBX and in RocksDB.
//!
//! Prints one table per measure with a row per size, the hybrid/MDBX ratios, and a log-linear
//! extrapolation of the warm p50s to mainnet's ~3 billion transactions.
//!
//! Knobs: `RETH_HYBRID_SCALE_MILLIONS` (sizes in millions of transactions, default `1,10,100`),
//! `RETH_HYBRID_SCALE_DIR` (default `~/.cache/reth-hybrid/scale-data`; needs ~2.6 GB of free
//! disk per million transactions... see docs/benchmarks.md), `RETH_HYBRID_SCALE_LOOKUPS` (warm
//! lookups per kind, default 200000; cold: a tenth), `RETH_HYBRID_SCALE_BLOCKS` (persisted blocks,
//! default 600), `RETH_HYBRID_SCALE_KEEP=1` keeps the datadirs.
//! Under `cargo test` it runs once at 20,000 transactions in a temporary folder.

use reth_hybrid_api::{
    DbTx, EngineKind, Tables,
    models::{Address, B256},
    tables::TransactionHashNumbers,
    typed::{Database, TypedDatabase},
};
use reth_hybrid_bench::{
    KeyGen,
    persist::{PersistReport, PersistSpec, chain_tip, persist_blocks, process_write_bytes},
    raw_copy::raw_copy,
    scale::{
        Latency, ScaleDatadir, ScaleSpec, account_nonce_at, generate_scale, slot_value_at,
        time_each,
    },
};
use reth_hybrid_hybrid::{HybridDb, HybridOptions};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{MigrateRequest, NoProgress, migrate, stats::stats};
use reth_hybrid_rocksdb::RocksEngine;
use std::{
    path::{Path, PathBuf},
    time::Instant,
};

/// Mainnet's transaction count, for the extrapolation (order of magnitude, late 2026).
const MAINNET_TRANSACTIONS: f64 = 3.0e9;
const MOVED: [Tables; 3] = [
    Tables::TransactionHashNumbers,
    Tables::AccountsHistory,
    Tables::StoragesHistory,
];

type Hybrid = TypedDatabase<HybridDb<MdbxEngine, RocksEngine>>;
type Mdbx = TypedDatabase<MdbxEngine>;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn open_mdbx(dir: &Path) -> Mdbx {
    TypedDatabase::new(MdbxEngine::open(dir, MdbxOptions::read_write()).expect("open mdbx"))
}

fn open_hybrid(dir: &Path) -> Hybrid {
    TypedDatabase::new(
        HybridDb::open(
            MdbxEngine::open(dir, MdbxOptions::read_write()).expect("open mdbx"),
            RocksEngine::open_in_datadir(dir).expect("open rocksdb"),
            dir,
            HybridOptions::default(),
        )
        .expect("open hybrid"),
    )
}

/// The keys one round of lookups uses.
struct Keys {
    hits: Vec<(B256, u64)>,
    misses: Vec<B256>,
    accounts: Vec<(Address, u64)>,
    slots: Vec<(Address, B256, u64)>,
}

impl Keys {
    fn draw(data: &ScaleDatadir, n: usize, seed: u64) -> Self {
        let mut g = KeyGen::new(seed);
        let mut below = |m: usize| (g.next_u64() % m.max(1) as u64) as usize;
        let hits = (0..n).map(|_| data.hits[below(data.hits.len())]).collect();
        let accounts = (0..n)
            .map(|_| {
                (
                    data.addresses[below(data.addresses.len())],
                    1 + below(data.blocks as usize + 1) as u64,
                )
            })
            .collect();
        let slots = (0..n)
            .map(|_| {
                let (a, s) = data.slots[below(data.slots.len())];
                (a, s, 1 + below(data.blocks as usize + 1) as u64)
            })
            .collect();
        let mut h = KeyGen::new(seed ^ 0x3155);
        let misses = (0..n).map(|_| B256::from(h.bytes::<32>())).collect();
        Self {
            hits,
            misses,
            accounts,
            slots,
        }
    }
}

/// One side's lookups: [tx hit, tx miss, account history, storage history].
type Lookups = [Latency; 4];

/// Runs every kind of lookup on `db`; the answers, so both sides can be compared.
fn lookups<D: Database>(db: &D, keys: &Keys) -> (Lookups, Vec<Option<u64>>) {
    let tx = db.tx().expect("tx");
    let (hit, mut answers) =
        time_each(&keys.hits, |(h, _)| tx.get::<TransactionHashNumbers>(*h)).expect("tx-hash hits");
    for ((_, want), got) in keys.hits.iter().zip(&answers) {
        assert_eq!(*got, Some(*want), "a stored tx hash was not found");
    }
    let (miss, missed) =
        time_each(&keys.misses, |h| tx.get::<TransactionHashNumbers>(*h)).expect("misses");
    assert!(
        missed.iter().all(Option::is_none),
        "a random hash was found"
    );
    let (acc, nonces) =
        time_each(&keys.accounts, |(a, b)| account_nonce_at(&tx, *a, *b)).expect("account history");
    let (slot, values) = time_each(&keys.slots, |(a, s, b)| {
        slot_value_at(&tx, *a, *s, *b).map(|v| v.map(|v| v.to::<u64>()))
    })
    .expect("storage history");
    answers.extend(nonces);
    answers.extend(values);
    ([hit, miss, acc, slot], answers)
}

fn mean(a: &Latency, b: &Latency) -> Latency {
    Latency {
        ops: a.ops + b.ops,
        p50_ns: (a.p50_ns + b.p50_ns) / 2.0,
        p99_ns: (a.p99_ns + b.p99_ns) / 2.0,
        ops_per_second: (a.ops_per_second + b.ops_per_second) / 2.0,
    }
}

/// Warm: a pass over the keys on each side, then MDBX, hybrid, hybrid, MDBX; means of the two.
fn warm(stock: &Path, hybrid: &Path, keys: &Keys) -> (Lookups, Lookups) {
    let (m, h) = (open_mdbx(stock), open_hybrid(hybrid));
    lookups(&m, keys);
    lookups(&h, keys);
    let (m1, am) = lookups(&m, keys);
    let (h1, ah) = lookups(&h, keys);
    assert_eq!(am, ah, "the hybrid answered a lookup differently from MDBX");
    let (h2, _) = lookups(&h, keys);
    let (m2, _) = lookups(&m, keys);
    (
        std::array::from_fn(|i| mean(&m1[i], &m2[i])),
        std::array::from_fn(|i| mean(&h1[i], &h2[i])),
    )
}

/// How the page cache was emptied (for the report). The machine-wide drop only in a real run:
/// the smoke run under `cargo test` keeps to its own files.
fn drop_page_cache(datadir: &Path) -> &'static str {
    // SAFETY: sync takes no arguments and only flushes dirty pages.
    unsafe { libc::sync() };
    if !is_smoke() && std::fs::write("/proc/sys/vm/drop_caches", "1").is_ok() {
        return "drop_caches";
    }
    fadvise_dontneed(datadir);
    "fadvise"
}

fn fadvise_dontneed(dir: &Path) {
    use std::os::fd::AsRawFd;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            fadvise_dontneed(&path);
        } else if let Ok(f) = std::fs::File::open(&path) {
            // SAFETY: a valid descriptor; advice only, no memory is touched.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
}

/// Cold: each side opened after the cache was emptied, its keys read once.
fn cold(stock: &Path, hybrid: &Path, keys: &Keys) -> (Lookups, Lookups, &'static str) {
    let how = drop_page_cache(stock);
    let (m, am) = lookups(&open_mdbx(stock), keys);
    drop_page_cache(hybrid);
    let (h, ah) = lookups(&open_hybrid(hybrid), keys);
    assert_eq!(am, ah, "the hybrid answered a lookup differently from MDBX");
    (m, h, how)
}

/// The same blocks on both, in halves run MDBX, hybrid, hybrid, MDBX.
fn persistence(stock: &Path, hybrid: &Path, blocks: u64) -> (PersistReport, PersistReport) {
    let (m, h) = (open_mdbx(stock), open_hybrid(hybrid));
    let mut total = [PersistReport::default(); 2];
    for (round, n) in [(1u64, blocks / 2), (2, blocks - blocks / 2)] {
        let tip = chain_tip(&m).expect("tip");
        assert_eq!(chain_tip(&h).expect("tip"), tip, "tips differ");
        let spec = PersistSpec::new(n, round);
        let mut run = |side: usize| {
            let r = if side == 0 {
                persist_blocks(&m, &tip, &spec).expect("persist")
            } else {
                persist_flushed(&h, &tip, &spec)
            };
            let t = &mut total[side];
            t.blocks += r.blocks;
            t.commits += r.commits;
            t.seconds += r.seconds;
            t.bytes_written = Some(t.bytes_written.unwrap_or(0) + r.bytes_written.unwrap_or(0));
        };
        if round == 1 {
            run(0);
            run(1);
        } else {
            run(1);
            run(0);
        }
    }
    (total[0], total[1])
}

/// Persistence on the hybrid with RocksDB's memtable flushed inside the measurement.
fn persist_flushed(
    h: &Hybrid,
    tip: &reth_hybrid_bench::persist::ChainTip,
    spec: &PersistSpec,
) -> PersistReport {
    let before = process_write_bytes();
    let t = Instant::now();
    let mut r = persist_blocks(h, tip, spec).expect("persist");
    h.engine().follower().flush().expect("flush");
    r.seconds = t.elapsed().as_secs_f64();
    r.bytes_written = before
        .zip(process_write_bytes())
        .map(|(b, a)| a.saturating_sub(b));
    r
}

/// Each moved table's bytes: (table, in the stock MDBX, in the hybrid's RocksDB).
fn table_bytes(stock: &Path, hybrid: &Path) -> Vec<(Tables, u64, u64)> {
    let (s, h) = (
        stats(stock, true).expect("stats"),
        stats(hybrid, true).expect("stats"),
    );
    MOVED
        .iter()
        .map(|t| {
            let find = |st: &reth_hybrid_migrate::stats::DatadirStats| {
                st.tables
                    .iter()
                    .find(|x| x.table == *t)
                    .map_or(0, |x| x.mdbx_bytes + x.rocksdb_bytes)
            };
            (*t, find(&s), find(&h))
        })
        .collect()
}

/// Copies the datadir and flushes the copy: a node's datadir at rest has no dirty pages, and
/// the migration's first durable commit would otherwise pay for writing it back.
fn copy_datadir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("db")).expect("mkdir");
    for name in ["mdbx.dat", "database.version"] {
        std::fs::copy(from.join("db").join(name), to.join("db").join(name)).expect("copy");
        std::fs::File::open(to.join("db").join(name))
            .and_then(|f| f.sync_all())
            .expect("fsync the copy");
    }
}

fn free_bytes(dir: &Path) -> u64 {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid C string and an out-parameter of the right type.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return u64::MAX;
    }
    s.f_bavail as u64 * s.f_frsize as u64
}

/// Everything measured at one size.
struct SizeResult {
    transactions: u64,
    accounts: usize,
    account_shards: u64,
    generate_s: f64,
    migrate_s: f64,
    /// The raw copy of the same rows (the migration's floor), cold like the migration.
    raw_copy_s: f64,
    moved_rows: u64,
    bytes: Vec<(Tables, u64, u64)>,
    warm: (Lookups, Lookups),
    cold: (Lookups, Lookups, &'static str),
    persist: (PersistReport, PersistReport),
}

fn run_size(root: &Path, transactions: u64, lookups_n: usize, blocks: u64) -> SizeResult {
    let name = format!("{}tx", transactions);
    let (stock, hybrid) = (
        root.join(format!("stock-{name}")),
        root.join(format!("hybrid-{name}")),
    );
    for d in [&stock, &hybrid] {
        let _ = std::fs::remove_dir_all(d);
    }
    // ~110 bytes of MDBX a transaction in the stock datadir, about as much again for the copy,
    // and head room for RocksDB's files and the persisted blocks.
    let need = transactions * 260 + (1 << 30);
    let free = free_bytes(root);
    assert!(
        free >= need,
        "{} has {} MB free; {transactions} transactions need about {} MB: free space or set \
         RETH_HYBRID_SCALE_DIR/RETH_HYBRID_SCALE_MILLIONS",
        root.display(),
        free >> 20,
        need >> 20
    );
    eprintln!(
        "== {transactions} transactions: generating {}",
        stock.display()
    );
    let t = Instant::now();
    let spec = ScaleSpec {
        transactions,
        seed: 1,
    };
    let data = {
        let geometry = Geometry {
            max_size_bytes: 1 << 40,
            growth_step_bytes: 256 << 20,
        };
        let engine = MdbxEngine::open(&stock, MdbxOptions::create().with_geometry(geometry))
            .expect("create stock datadir");
        generate_scale(&TypedDatabase::new(engine), &spec, 1_000_000).expect("generate")
    };
    let generate_s = t.elapsed().as_secs_f64();
    eprintln!(
        "   {} blocks, {} accounts ({} changes, {} shards), {} slots; {generate_s:.0} s",
        data.blocks,
        data.addresses.len(),
        data.account_changes,
        data.account_shards,
        data.slots.len()
    );
    copy_datadir(&stock, &hybrid);
    // The migration's floor on the same source, both read from disk: a node's datadir is far
    // larger than its page cache.
    drop_page_cache(&stock);
    let raw = raw_copy(&stock, &MOVED, &root.join(format!("raw-{name}.bin")));
    eprintln!(
        "   raw copy of {} rows (page cache emptied first): {:.1} s",
        raw.rows, raw.seconds
    );
    drop_page_cache(&hybrid);
    let t = Instant::now();
    let report = migrate(
        &hybrid,
        &MigrateRequest::new(EngineKind::RocksDb),
        &NoProgress,
    )
    .expect("migrate");
    let migrate_s = t.elapsed().as_secs_f64();
    let moved_rows = report.tables.iter().map(|t| t.rows).sum();
    eprintln!(
        "   migrated {moved_rows} rows in {migrate_s:.1} s (page cache emptied first; ours / raw \
         copy throughput {:.2})",
        raw.seconds / migrate_s
    );
    let bytes = table_bytes(&stock, &hybrid);

    let warm_keys = Keys::draw(&data, lookups_n, 7);
    let warm = warm(&stock, &hybrid, &warm_keys);
    let cold_keys = Keys::draw(&data, (lookups_n / 10).max(100), 8);
    let cold = cold(&stock, &hybrid, &cold_keys);
    let persist = persistence(&stock, &hybrid, blocks);
    eprintln!("   measured");
    if std::env::var_os("RETH_HYBRID_SCALE_KEEP").is_none() {
        for d in [&stock, &hybrid] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
    SizeResult {
        transactions,
        accounts: data.addresses.len(),
        account_shards: data.account_shards,
        generate_s,
        migrate_s,
        raw_copy_s: raw.seconds,
        moved_rows,
        bytes,
        warm,
        cold,
        persist,
    }
}

fn us(ns: f64) -> String {
    format!("{:.2} µs", ns / 1e3)
}

const KINDS: [&str; 4] = [
    "tx hash, hit",
    "tx hash, miss",
    "account history",
    "storage history",
];

/// One table of lookups: a row per size and kind, both sides and their ratios.
fn print_lookups(title: &str, rows: &[(u64, &Lookups, &Lookups)]) {
    println!("\n### {title}\n");
    println!(
        "| transactions | lookup | MDBX p50 | hybrid p50 | p50 ratio | MDBX p99 | hybrid p99 | p99 ratio | MDBX ops/s | hybrid ops/s |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (transactions, m, h) in rows {
        for (i, kind) in KINDS.iter().enumerate() {
            println!(
                "| {transactions} | {kind} | {} | {} | **{:.2}x** | {} | {} | {:.2}x | {:.0} | {:.0} |",
                us(m[i].p50_ns),
                us(h[i].p50_ns),
                h[i].p50_ns / m[i].p50_ns,
                us(m[i].p99_ns),
                us(h[i].p99_ns),
                h[i].p99_ns / m[i].p99_ns,
                m[i].ops_per_second,
                h[i].ops_per_second
            );
        }
    }
}

/// Least squares of `y = a + b log10(x)`, evaluated at `at`.
fn log_fit(points: &[(f64, f64)], at: f64) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let xs: Vec<f64> = points.iter().map(|(x, _)| x.log10()).collect();
    let (mx, my) = (
        xs.iter().sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxy: f64 = xs
        .iter()
        .zip(points)
        .map(|(x, p)| (x - mx) * (p.1 - my))
        .sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    (sxx > 0.0).then(|| my + sxy / sxx * (at.log10() - mx))
}

/// `cargo bench` passes `--bench`; `cargo test --all-targets` does not: then a small smoke run
/// in a temporary folder checks the harness.
fn is_smoke() -> bool {
    !std::env::args().any(|a| a == "--bench")
}

fn main() {
    let smoke = is_smoke();
    let smoke_dir = smoke.then(|| tempfile::tempdir().expect("tmp"));
    let root: PathBuf = match &smoke_dir {
        Some(d) => d.path().to_path_buf(),
        None => std::env::var_os("RETH_HYBRID_SCALE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                    .join(".cache/reth-hybrid/scale-data")
            }),
    };
    std::fs::create_dir_all(&root).expect("scale dir");
    let sizes: Vec<u64> = if smoke {
        vec![20_000]
    } else {
        std::env::var("RETH_HYBRID_SCALE_MILLIONS")
            .unwrap_or_else(|_| "1,10,100".into())
            .split(',')
            .map(|s| {
                (s.trim()
                    .parse::<f64>()
                    .expect("RETH_HYBRID_SCALE_MILLIONS: numbers")
                    * 1e6) as u64
            })
            .collect()
    };
    let lookups_n = if smoke {
        500
    } else {
        env_or("RETH_HYBRID_SCALE_LOOKUPS", 200_000)
    };
    let blocks = if smoke {
        12
    } else {
        env_or("RETH_HYBRID_SCALE_BLOCKS", 600)
    };

    let started = Instant::now();
    let results: Vec<SizeResult> = sizes
        .iter()
        .map(|n| run_size(&root, *n, lookups_n, blocks))
        .collect();

    println!(
        "\n## Scale benchmark ({}; {} warm lookups per kind, {} cold; {} persisted blocks; {:.0} s in all)",
        if cfg!(debug_assertions) {
            "test build"
        } else {
            "release build"
        },
        lookups_n,
        (lookups_n / 10).max(100),
        blocks,
        started.elapsed().as_secs_f64()
    );
    println!("\n### Datadirs and migration\n");
    println!(
        "| transactions | accounts | account shards | generate | migrate (verified, cold) | raw copy (cold) | ours / raw copy | moved rows/s | table | MDBX bytes | RocksDB bytes | RocksDB/MDBX |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|");
    for r in &results {
        for (t, m, h) in &r.bytes {
            println!(
                "| {} | {} | {} | {:.0} s | {:.1} s | {:.1} s | **{:.2}** | {:.2} M | {} | {:.1} MB | {:.1} MB | **{:.2}** |",
                r.transactions,
                r.accounts,
                r.account_shards,
                r.generate_s,
                r.migrate_s,
                r.raw_copy_s,
                r.raw_copy_s / r.migrate_s,
                r.moved_rows as f64 / r.migrate_s / 1e6,
                t.name(),
                *m as f64 / 1e6,
                *h as f64 / 1e6,
                *h as f64 / (*m).max(1) as f64
            );
        }
    }
    let warm: Vec<_> = results
        .iter()
        .map(|r| (r.transactions, &r.warm.0, &r.warm.1))
        .collect();
    print_lookups("Lookups, warm (after one pass over the same keys)", &warm);
    let cold: Vec<_> = results
        .iter()
        .map(|r| (r.transactions, &r.cold.0, &r.cold.1))
        .collect();
    let how = results.first().map_or("", |r| r.cold.2);
    print_lookups(
        &format!("Lookups, cold (page cache emptied with {how} before each side)"),
        &cold,
    );

    println!("\n### Block persistence (200 transactions a block, a commit every 3 blocks)\n");
    println!(
        "| transactions | MDBX blocks/s | hybrid blocks/s | hybrid/MDBX throughput | MDBX bytes/block | hybrid bytes/block | hybrid/MDBX bytes |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for r in &results {
        let (m, h) = &r.persist;
        let per_block =
            |p: &PersistReport| p.bytes_written.unwrap_or(0) as f64 / p.blocks.max(1) as f64;
        println!(
            "| {} | {:.0} | {:.0} | **{:.2}x** | {:.0} KB | {:.0} KB | **{:.2}x** |",
            r.transactions,
            m.blocks_per_second(),
            h.blocks_per_second(),
            h.blocks_per_second() / m.blocks_per_second(),
            per_block(m) / 1e3,
            per_block(h) / 1e3,
            per_block(h) / per_block(m).max(1.0)
        );
    }

    println!(
        "\n### Warm p50 extrapolated to {MAINNET_TRANSACTIONS:.0e} transactions (log-linear fit over the sizes above)\n"
    );
    println!("| lookup | MDBX p50 | hybrid p50 | ratio |");
    println!("|---|---:|---:|---:|");
    for (i, kind) in KINDS.iter().enumerate() {
        let fit = |side: usize| {
            let pts: Vec<(f64, f64)> = results
                .iter()
                .map(|r| {
                    let l = if side == 0 { &r.warm.0 } else { &r.warm.1 };
                    (r.transactions as f64, l[i].p50_ns)
                })
                .collect();
            log_fit(&pts, MAINNET_TRANSACTIONS)
        };
        match (fit(0), fit(1)) {
            (Some(m), Some(h)) => println!("| {kind} | {} | {} | {:.2}x |", us(m), us(h), h / m),
            _ => println!("| {kind} | (needs two sizes) | | |"),
        }
    }
    if smoke {
        let r = &results[0];
        assert!(r.persist.0.blocks == blocks && r.persist.1.blocks == blocks);
        assert!(r.bytes.iter().all(|(_, m, h)| *m > 0 && *h > 0));
    }
}
