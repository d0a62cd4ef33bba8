//! History lookups as a trace makes them: many read transactions, each a stream of
//! `cursor -> seek(address or address ++ slot, block) -> drop` on `AccountsHistory` and
//! `StoragesHistory`, RocksDB against MDBX on the same rows. The rows come from a node's
//! hybrid RocksDB (opened read-only); they are written into a fresh RocksDB in the shape a node
//! leaves (everything in the bottom level, then two flushed level-0 files and a memtable of
//! rewritten last shards, as persisted blocks leave them), and into a fresh MDBX. It prints the
//! shape, the per-lookup times side by side, RocksDB's perf context over 50 of the transactions, and the same
//! after a full compaction (what the shape costs).
//!
//! `cargo run --profile dev -p reth-hybrid-bench --example history_reads -- <datadir>/hybrid-rocksdb [highest block]`
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_bench::KeyGen;
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use rocksdb::perf::{PerfContext, PerfStatsLevel, set_perf_stats};
use std::{hint::black_box, path::PathBuf, time::Instant};

/// Lookups per read transaction: what one `debug_traceTransaction` made in the 2026-12-05 run.
const PER_TX: usize = 274;
const TXS: usize = 400;
const HISTORY: [Tables; 2] = [Tables::AccountsHistory, Tables::StoragesHistory];

type Row = (Tables, Vec<u8>, Vec<u8>);

/// Every history row of the source, in key order per table.
fn history_rows(source: &RocksEngine) -> Vec<Row> {
    let tx = source.begin_ro().expect("ro");
    let mut rows = Vec::new();
    for table in HISTORY {
        let mut cur = tx.cursor(table).expect("cursor");
        let mut row = cur.first().expect("first");
        while let Some((k, v)) = row {
            rows.push((table, k, v));
            row = cur.next().expect("next");
        }
    }
    rows
}

/// Each history key's prefix (address, or address ++ slot) and its last shard's row.
fn last_shards(rows: &[Row]) -> Vec<&Row> {
    let mut last: Vec<&Row> = Vec::new();
    for row in rows {
        match last.last_mut() {
            Some(l) if l.0 == row.0 && l.1[..l.1.len() - 8] == row.1[..row.1.len() - 8] => *l = row,
            _ => last.push(row),
        }
    }
    last
}

/// The lookup keys: a history key's prefix with a random block.
fn lookups(last: &[&Row], highest_block: u64) -> Vec<(Tables, Vec<u8>)> {
    let mut g = KeyGen::new(3);
    (0..PER_TX * TXS)
        .map(|_| {
            let (table, key, _) = last[(g.next_u64() as usize) % last.len()];
            let mut key = key[..key.len() - 8].to_vec();
            key.extend_from_slice(&(1 + g.next_u64() % highest_block).to_be_bytes());
            (*table, key)
        })
        .collect()
}

fn write<E: RawEngine>(e: &E, rows: &[&Row]) {
    for chunk in rows.chunks(50_000) {
        let tx = e.begin_rw().expect("rw");
        for (table, k, v) in chunk {
            tx.put(*table, k, v).expect("put");
        }
        tx.commit().expect("commit");
    }
}

fn compact(rocks: &RocksEngine) {
    rocks.flush().expect("flush");
    for table in HISTORY {
        rocks
            .db()
            .compact_range_cf::<&[u8], &[u8]>(rocks.column_family(table), None, None);
    }
}

/// Mean ns per lookup over every transaction.
fn run<E: RawEngine>(e: &E, keys: &[(Tables, Vec<u8>)]) -> f64 {
    let start = Instant::now();
    for chunk in keys.chunks(PER_TX) {
        let tx = e.begin_ro().expect("ro");
        for (table, key) in chunk {
            let mut cur = tx.cursor(*table).expect("cursor");
            black_box(cur.seek(key).expect("seek"));
        }
    }
    start.elapsed().as_nanos() as f64 / keys.len() as f64
}

fn shape(rocks: &RocksEngine) -> String {
    let mut out = String::new();
    for table in HISTORY {
        let cf = rocks.column_family(table);
        let p = |k: &str| {
            rocks
                .db()
                .property_int_value_cf(cf, k)
                .ok()
                .flatten()
                .unwrap_or(0)
        };
        let levels: Vec<String> = (0..7)
            .map(|l| p(&format!("rocksdb.num-files-at-level{l}")).to_string())
            .collect();
        out += &format!(
            "  {:16} files per level {}  memtable {} KiB\n",
            table.name(),
            levels.join("/"),
            p("rocksdb.cur-size-all-mem-tables") / 1024
        );
    }
    out
}

/// Medians of `rounds` runs of `a` and `b`, interleaved.
fn medians(rounds: usize, mut a: impl FnMut() -> f64, mut b: impl FnMut() -> f64) -> (f64, f64) {
    let (mut xs, mut ys): (Vec<f64>, Vec<f64>) = (0..rounds).map(|_| (a(), b())).unzip();
    xs.sort_by(f64::total_cmp);
    ys.sort_by(f64::total_cmp);
    (xs[rounds / 2], ys[rounds / 2])
}

fn side_by_side(label: &str, rocks: &RocksEngine, mdbx: &MdbxEngine, keys: &[(Tables, Vec<u8>)]) {
    run(rocks, &keys[..PER_TX * 20]);
    run(mdbx, &keys[..PER_TX * 20]);
    let (r, m) = medians(3, || run(rocks, keys), || run(mdbx, keys));
    println!(
        "{label}: per lookup, median of 3: RocksDB {r:.0} ns, MDBX {m:.0} ns, RocksDB/MDBX {:.2}x",
        r / m
    );
    set_perf_stats(PerfStatsLevel::EnableTime);
    let mut ctx = PerfContext::default();
    ctx.reset();
    run(rocks, &keys[..PER_TX * 50]);
    let n = (PER_TX * 50) as f64;
    set_perf_stats(PerfStatsLevel::Disable);
    for line in ctx.report(true).split(',') {
        let mut parts = line.trim().split('=').map(str::trim);
        if let (Some(name), Some(v)) = (parts.next(), parts.next())
            && let Ok(v) = v.parse::<f64>()
        {
            println!("    {name:40} {:10.2} per lookup", v / n);
        }
    }
}

fn main() {
    let source = PathBuf::from(std::env::args().nth(1).expect("a hybrid-rocksdb directory"));
    let highest_block: u64 = std::env::args()
        .nth(2)
        .map_or(2000, |b| b.parse().expect("block"));
    assert!(highest_block > 0, "the highest block must be at least 1");
    let rows = history_rows(&RocksEngine::open_read_only(&source).expect("source"));
    let last = last_shards(&rows);
    assert!(
        !last.is_empty(),
        "{} holds no history rows to look up",
        source.display()
    );
    let keys = lookups(&last, highest_block);
    let dir = tempfile::tempdir().expect("tmp");
    let rocks = RocksEngine::open(
        &dir.path().join("rocksdb"),
        &RocksOptions {
            sync_writes: false,
            ..RocksOptions::default()
        },
    )
    .expect("rocksdb");
    let mdbx = MdbxEngine::open(
        &dir.path().join("mdbx"),
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )
    .expect("mdbx");
    let all: Vec<&Row> = rows.iter().collect();
    write(&mdbx, &all);
    write(&rocks, &all);
    compact(&rocks);
    // What persisted blocks leave on top: last shards rewritten, two flushes and a memtable.
    let mut g = KeyGen::new(5);
    for flushed in [true, true, false] {
        let recent: Vec<&Row> = last
            .iter()
            .filter(|_| g.next_u64() % 100 < 3)
            .copied()
            .collect();
        write(&rocks, &recent);
        if flushed {
            rocks.flush().expect("flush");
        }
    }
    println!(
        "{} rows, {} keys; node-like shape:\n{}",
        rows.len(),
        last.len(),
        shape(&rocks)
    );
    side_by_side("node-like", &rocks, &mdbx, &keys);
    compact(&rocks);
    println!("after a full compaction:\n{}", shape(&rocks));
    side_by_side("compacted", &rocks, &mdbx, &keys);
}
