//! Readers under a committing writer: the latency of opening a read transaction and making 100
//! mixed gets (accounts in MDBX; tx hashes and account history in RocksDB on the hybrid), and of
//! the open alone, while another thread commits durable batches at a fixed rate (the same for
//! both sides, so both carry the same write load). The hybrid against MDBX alone, holding the
//! same rows, in alternating rounds of one run (order swapped every round, a warm-up round
//! discarded). Prints p50/p90/p99/p99.9/max and the hybrid/MDBX ratio at each percentile; the
//! goal is p99 <= 1.2x for open + 100 gets (stock MDBX never makes a reader wait for a commit,
//! and neither may the hybrid). The open-alone ratio isolates waiting from the engines'
//! different get speeds. The hybrid runs twice, with RocksDB's row cache (default) and without, since every row here is
//! hot and a node's cold lookups skip the row cache.
//!
//! `cargo bench -p reth-hybrid-bench --bench reader_latency` (`READER_BENCH_SECS` per round,
//! default 3; `READER_BENCH_ROUNDS`, default 4; `READER_BENCH_COMMIT_MS`, the writer's commit
//! interval, default 20).

use reth_hybrid_api::{
    Tables,
    raw::{RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_bench::{KeyGen, sharded_key};
use reth_hybrid_hybrid::{HybridDb, HybridOptions};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::{
    hint::black_box,
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

/// Rows per writer commit: about what a small block's persistence writes.
const COMMIT_ACCOUNTS: usize = 200;
const COMMIT_HASHES: usize = 1_000;
const COMMIT_SHARDS: usize = 200;

struct Data {
    accounts: Vec<[u8; 20]>,
    hashes: Vec<[u8; 32]>,
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn mdbx(dir: &Path) -> MdbxEngine {
    MdbxEngine::open(dir, MdbxOptions::create().with_geometry(Geometry::SMALL)).expect("mdbx")
}

fn load<E: RawEngine>(db: &E, d: &Data) {
    let tx = db.begin_rw().expect("rw");
    for (i, a) in d.accounts.iter().enumerate() {
        tx.put(Tables::PlainAccountState, a, &(i as u64).to_be_bytes())
            .expect("put");
        tx.put(
            Tables::AccountsHistory,
            &sharded_key(*a, u64::MAX),
            &[7; 34],
        )
        .expect("put");
    }
    for (i, h) in d.hashes.iter().enumerate() {
        tx.put(Tables::TransactionHashNumbers, h, &(i as u64).to_le_bytes())
            .expect("put");
    }
    tx.commit().expect("load");
}

/// Commits durable batches, one every `interval` (or back to back when a commit takes longer),
/// until `stop`; returns the commits made. Keys continue across rounds (`first`).
fn writer<E: RawEngine>(
    db: &E,
    d: &Data,
    stop: &AtomicBool,
    first: u64,
    interval: Duration,
) -> u64 {
    let mut g = KeyGen::new(99 + first);
    let mut commits = 0u64;
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let n = first + commits;
        let tx = db.begin_rw().expect("rw");
        for _ in 0..COMMIT_ACCOUNTS {
            let a = d.accounts[g.next_u64() as usize % d.accounts.len()];
            tx.put(Tables::PlainAccountState, &a, &n.to_be_bytes())
                .expect("put");
        }
        for _ in 0..COMMIT_HASHES {
            let h = g.bytes::<32>();
            tx.put(Tables::TransactionHashNumbers, &h, &n.to_le_bytes())
                .expect("put");
        }
        for _ in 0..COMMIT_SHARDS {
            let a = d.accounts[g.next_u64() as usize % d.accounts.len()];
            tx.put(
                Tables::AccountsHistory,
                &sharded_key(a, 1_000_000 + n),
                &[9; 34],
            )
            .expect("put");
        }
        tx.commit().expect("commit");
        commits += 1;
        next += interval;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        } else {
            next = Instant::now();
        }
    }
    commits
}

/// Latencies of one read: (open alone, open + 100 gets: 40 accounts, 30 tx hashes, 30 history
/// shards).
fn read_once<E: RawEngine>(db: &E, d: &Data, g: &mut KeyGen) -> (Duration, Duration) {
    let started = Instant::now();
    let tx = db.begin_ro().expect("ro");
    let opened = started.elapsed();
    for i in 0..100 {
        let r = g.next_u64() as usize;
        let v = match i % 10 {
            0..=3 => tx.get(Tables::PlainAccountState, &d.accounts[r % d.accounts.len()]),
            4..=6 => tx.get(
                Tables::TransactionHashNumbers,
                &d.hashes[r % d.hashes.len()],
            ),
            _ => tx.get(
                Tables::AccountsHistory,
                &sharded_key(d.accounts[r % d.accounts.len()], u64::MAX),
            ),
        };
        black_box(v.expect("get"));
    }
    tx.abort();
    (opened, started.elapsed())
}

#[derive(Default)]
struct Side {
    open: Vec<Duration>,
    read: Vec<Duration>,
    commits: u64,
}

/// One round on `db`: a writer commits (if `interval` is set) while this thread reads.
fn round<E: RawEngine>(
    db: &Arc<E>,
    d: &Arc<Data>,
    secs: u64,
    interval: Option<Duration>,
    side: &mut Side,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let first = side.commits;
    let w = interval.map(|interval| {
        let (db, d, stop) = (Arc::clone(db), Arc::clone(d), Arc::clone(&stop));
        std::thread::spawn(move || writer(&*db, &d, &stop, first, interval))
    });
    let mut g = KeyGen::new(5 + first);
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        let (open, read) = read_once(&**db, d, &mut g);
        side.open.push(open);
        side.read.push(read);
    }
    stop.store(true, Ordering::Relaxed);
    side.commits += w.map_or(0, |w| w.join().expect("writer"));
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; a plain run (e.g. `cargo test --benches`) passes nothing
    // and gets a short smoke run.
    let benching = std::env::args().any(|a| a == "--bench");
    let secs = env_u64("READER_BENCH_SECS", if benching { 3 } else { 1 });
    let rounds = env_u64("READER_BENCH_ROUNDS", if benching { 4 } else { 1 });
    let (accounts, hashes) = if benching {
        (50_000, 200_000)
    } else {
        (2_000, 10_000)
    };
    let mut g = KeyGen::new(11);
    let d = Arc::new(Data {
        accounts: (0..accounts).map(|_| g.bytes::<20>()).collect(),
        hashes: (0..hashes).map(|_| g.bytes::<32>()).collect(),
    });

    // The hybrid twice: with RocksDB's row cache (the default) and without it. Every RocksDB
    // row here is read again and again (~250k rows, millions of gets), so the row cache holds
    // them all; a node's cold lookups (random hashes of a long chain) take the path without it.
    let hybrid_dirs = [
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    ];
    let [hybrid, hybrid_no_row_cache] = [0, 1].map(|i| {
        let dir = hybrid_dirs[i].path();
        let options = RocksOptions {
            row_cache_bytes: if i == 0 {
                RocksOptions::default().row_cache_bytes
            } else {
                0
            },
            ..RocksOptions::default()
        };
        let rocks = RocksEngine::open(&dir.join("hybrid-rocksdb"), &options).expect("rocksdb");
        let db = Arc::new(
            HybridDb::open(mdbx(dir), rocks, dir, HybridOptions::default()).expect("hybrid"),
        );
        load(&*db, &d);
        // A node's RocksDB holds nearly all its rows in SST files (the memtable only the newest
        // writes); without this flush every read would search a skiplist of the whole load.
        db.follower().flush().expect("flush RocksDB");
        db
    });
    let mdir = tempfile::tempdir().expect("tmp");
    let plain = Arc::new(mdbx(mdir.path()));
    load(&*plain, &d);

    let interval = Duration::from_millis(env_u64("READER_BENCH_COMMIT_MS", 20));
    let busy = Some(interval);
    let run = |engine: usize, secs: u64, interval: Option<Duration>, side: &mut Side| match engine {
        0 => round(&hybrid, &d, secs, interval, side),
        1 => round(&hybrid_no_row_cache, &d, secs, interval, side),
        _ => round(&plain, &d, secs, interval, side),
    };
    // Warm-up (discarded): RocksDB settles after the load, caches fill.
    if benching {
        for engine in 0..3 {
            run(engine, 1, busy, &mut Side::default());
        }
    }
    // [hybrid, hybrid without row cache, mdbx] x [with the writer, idle]
    let mut sides: [[Side; 2]; 3] = Default::default();
    // Alternating rounds, order rotated each time, so drift of the shared machine hits all.
    for r in 0..rounds as usize {
        for engine in [0, 1, 2].map(|e| (e + r) % 3) {
            for (load, interval) in [(0, busy), (1, None)] {
                run(engine, secs, interval, &mut sides[engine][load]);
            }
        }
        eprintln!("round {}/{rounds} done", r + 1);
    }
    for side in sides.iter_mut().flatten() {
        side.open.sort();
        side.read.sort();
    }

    println!(
        "\nreaders, with a writer committing every {interval:?} and idle ({secs} s x {rounds} rounds each)"
    );
    println!("| | writer | what | reads | commits | p50 | p90 | p99 | p99.9 | max |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let names = ["hybrid", "hybrid, no row cache", "mdbx"];
    for (name, engine) in names.iter().zip(&sides) {
        for (load, side) in [("committing", &engine[0]), ("idle", &engine[1])] {
            for (what, lat) in [("open + 100 gets", &side.read), ("open", &side.open)] {
                println!(
                    "| {name} | {load} | {what} | {} | {} | {:.1} µs | {:.1} µs | {:.1} µs | {:.1} µs | {:.1} µs |",
                    lat.len(),
                    side.commits,
                    us(pct(lat, 0.5)),
                    us(pct(lat, 0.9)),
                    us(pct(lat, 0.99)),
                    us(pct(lat, 0.999)),
                    us(*lat.last().expect("reads"))
                );
            }
        }
    }
    let row_cache = hybrid
        .follower()
        .gauges()
        .into_iter()
        .find(|g| g.name == "rocksdb_row_cache_hit_ratio")
        .map_or(0.0, |g| g.value);
    println!("\nhybrid's RocksDB row cache hit ratio: {row_cache:.3}");
    let ratio = |a: &[Duration], b: &[Duration], p| us(pct(a, p)) / us(pct(b, p));
    // The ratio at each of p50, p90, p99 and p99.9.
    let ratios = |a: &[Duration], b: &[Duration]| {
        [(0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (0.999, "p99.9")]
            .map(|(p, name)| format!("{name} {:.2}x", ratio(a, b, p)))
            .join(", ")
    };
    let [[h, h_idle], [n, _], [m, m_idle]] = &sides;
    println!(
        "\nhybrid/mdbx, open + 100 gets under the writer: {} (goal: p99 <= 1.20x)",
        ratios(&h.read, &m.read)
    );
    println!(
        "hybrid without row cache/mdbx, open + 100 gets under the writer: {}",
        ratios(&n.read, &m.read)
    );
    println!(
        "hybrid/mdbx, open alone under the writer: {}",
        ratios(&h.open, &m.open)
    );
    println!(
        "hybrid/mdbx, open + 100 gets, idle: {}",
        ratios(&h_idle.read, &m_idle.read)
    );
    println!(
        "what the writer costs readers (committing/idle), p99: open + 100 gets: hybrid {:.2}x, mdbx {:.2}x; open: hybrid {:.2}x, mdbx {:.2}x",
        ratio(&h.read, &h_idle.read, 0.99),
        ratio(&m.read, &m_idle.read, 0.99),
        ratio(&h.open, &h_idle.open, 0.99),
        ratio(&m.open, &m_idle.open, 0.99)
    );
}
