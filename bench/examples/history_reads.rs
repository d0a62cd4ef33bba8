//! History lookups as a trace makes them: many read transactions, each a stream of
//! `cursor -> seek(address or address ++ slot, block) -> drop` on `AccountsHistory` and
//! `StoragesHistory`, RocksDB against MDBX on the same rows. The rows come from a node's
//! hybrid RocksDB (opened read-only), or are generated in the bench-reth chain's proportions
//! (`synthetic`). They are written into a fresh MDBX and into two fresh RocksDBs, one with
//! each history table's options as shipped and one with a candidate's (`CANDIDATE`), each left
//! in the shape a node leaves (everything in the bottom level, then two flushes and a memtable
//! of rewritten last shards, as persisted blocks leave them; RocksDB's own compactions then run
//! as they would on the node). It prints each shape, the per-lookup times side by side,
//! RocksDB's perf context over 50 of the transactions, and the same after a full compaction
//! (what the shape costs). `HISTORY_READS_BETWEEN_KIB` writes that much other memory between two
//! lookups, as a node's EVM does between a trace's lookups (the engines' blocks leave the CPU's
//! caches); `HISTORY_READS_TXS` sets the number of read transactions per round;
//! `HISTORY_READS_LAST_SHARD_FIRST` also times a lookup that tries the key's last shard by a point
//! lookup before seeking (what a reth-specific shortcut could save; not an engine path).
//!
//! `cargo run --profile dev -p reth-hybrid-bench --example history_reads -- <datadir>/hybrid-rocksdb [highest block]`
//! `cargo run --profile dev -p reth-hybrid-bench --example history_reads -- synthetic`
use reth_hybrid_api::{Decompress, table::compress_to_vec};
use reth_hybrid_api::{
    Tables,
    models::IntegerList,
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_bench::{KeyGen, sharded_key, storage_sharded_key};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use rocksdb::perf::{PerfContext, PerfStatsLevel, set_perf_stats};
use std::{hint::black_box, path::PathBuf, time::Instant};

/// Lookups per read transaction: what one `debug_traceTransaction` made in the 2026-12-05 run.
const PER_TX: usize = 274;
/// Read transactions per round (`HISTORY_READS_TXS` sets another count).
const TXS: usize = 400;

fn txs() -> usize {
    let n = std::env::var("HISTORY_READS_TXS")
        .map_or(TXS, |n| n.parse().expect("a number of transactions"));
    assert!(n >= 1, "HISTORY_READS_TXS must be at least 1");
    n
}

/// KiB of other memory written between two lookups (`HISTORY_READS_BETWEEN_KIB`, default 0). On a
/// node the EVM and the tracer run between a trace's lookups and push the engines' blocks and
/// structures out of the CPU's caches, which a tight loop of lookups keeps hot; only the lookups
/// are timed.
fn between_kib() -> usize {
    std::env::var("HISTORY_READS_BETWEEN_KIB").map_or(0, |n| n.parse().expect("KiB"))
}

/// Writes one byte of every cache line of `scratch`, evicting what was cached before it.
fn evict(scratch: &mut [u8]) {
    for i in (0..scratch.len()).step_by(64) {
        scratch[i] = scratch[i].wrapping_add(1);
    }
    black_box(&scratch);
}
const HISTORY: [Tables; 2] = [Tables::AccountsHistory, Tables::StoragesHistory];

type Row = (Tables, Vec<u8>, Vec<u8>);

/// The candidate history-table options set on the second RocksDB (RocksDB's dynamic options,
/// applied before any row is written); `HISTORY_READS_CANDIDATE="name=value;..."` tries others.
/// By default RocksDB's own level-0 trigger, which the shipped options lowered to 1 (and reth's
/// storage v2 keeps): the comparison that decided it.
const CANDIDATE: &str = "level0_file_num_compaction_trigger=4";

fn candidate_options() -> Vec<(String, String)> {
    std::env::var("HISTORY_READS_CANDIDATE")
        .unwrap_or_else(|_| CANDIDATE.to_string())
        .split(';')
        .filter(|o| !o.trim().is_empty())
        .map(|o| {
            let (k, v) = o.split_once('=').expect("name=value");
            (k.trim().to_string(), v.trim().to_string())
        })
        .collect()
}

/// Rows in the proportions of the bench-reth chain at block 2,000 (843,119 history rows there):
/// one shard per key (the last, highest block `u64::MAX`), accounts changed in 1-4 blocks,
/// storage slots of one token contract, sorted per table as a node's tables are.
fn synthetic_rows(accounts: usize, slots: usize, highest_block: u64) -> Vec<Row> {
    let mut g = KeyGen::new(11);
    let blocks = |g: &mut KeyGen| {
        let n = 1 + g.next_u64() % 4;
        let mut b: Vec<u64> = (0..n).map(|_| 1 + g.next_u64() % highest_block).collect();
        b.sort_unstable();
        b.dedup();
        compress_to_vec(&IntegerList::new(b).expect("sorted"))
    };
    let mut account_rows: Vec<Row> = (0..accounts)
        .map(|_| {
            let key = sharded_key(g.bytes(), u64::MAX).to_vec();
            (Tables::AccountsHistory, key, blocks(&mut g))
        })
        .collect();
    let token: [u8; 20] = g.bytes();
    let mut storage_rows: Vec<Row> = (0..slots)
        .map(|_| {
            let key = storage_sharded_key(token, g.bytes(), u64::MAX).to_vec();
            (Tables::StoragesHistory, key, blocks(&mut g))
        })
        .collect();
    account_rows.sort();
    storage_rows.sort();
    account_rows.extend(storage_rows);
    account_rows
}

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
    (0..PER_TX * txs())
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

/// What timing one lookup adds by itself (two clock reads), in ns: taken off each lookup's time.
fn clock_cost() -> f64 {
    static COST: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *COST.get_or_init(|| {
        const N: u32 = 100_000;
        let mut spent = std::time::Duration::ZERO;
        for _ in 0..N {
            let start = Instant::now();
            spent += black_box(start).elapsed();
        }
        spent.as_nanos() as f64 / f64::from(N)
    })
}

/// Mean ns per lookup over every transaction: the lookups alone, each timed on its own (opening
/// each transaction and the writes of `scratch` between lookups are not timed; the clock's own
/// cost is taken off).
fn run<E: RawEngine>(e: &E, keys: &[(Tables, Vec<u8>)], scratch: &mut [u8]) -> f64 {
    run_with(e, keys, scratch, history_lookup)
}

/// [`run`] with another way of looking a key up.
fn run_with<E: RawEngine>(
    e: &E,
    keys: &[(Tables, Vec<u8>)],
    scratch: &mut [u8],
    lookup: fn(&mut <E::Tx as RawTx>::Cursor, &[u8]) -> Settled,
) -> f64 {
    let mut spent = std::time::Duration::ZERO;
    for chunk in keys.chunks(PER_TX) {
        let tx = e.begin_ro().expect("ro");
        for (table, key) in chunk {
            evict(scratch);
            let start = Instant::now();
            let mut cur = tx.cursor(*table).expect("cursor");
            black_box(lookup(&mut cur, key));
            drop(cur);
            spent += start.elapsed();
        }
    }
    spent.as_nanos() as f64 / keys.len() as f64 - clock_cost()
}

/// What a history lookup settled on: the key of the shard that answers (`None`: the key has no
/// shard at or after the block), and whether it stepped back with `prev` to look for an earlier
/// shard of the same key.
#[derive(Debug, PartialEq)]
struct Settled {
    shard: Option<Vec<u8>>,
    stepped_back: bool,
}

/// reth v2.5.1's rank step in `history_info`: whether `block` lies before the shard's first entry
/// (then reth steps back to see whether an earlier shard of the same key exists).
fn before_first_entry(shard: &[u8], block: u64) -> bool {
    let shard = IntegerList::decompress(shard).expect("a shard").0;
    let mut rank = shard.rank(block);
    if rank.checked_sub(1).and_then(|r| shard.select(r)) == Some(block) {
        rank -= 1;
    }
    rank == 0 && shard.select(0) != Some(block)
}

/// reth v2.5.1's `history_info` on raw bytes (`providers/state/historical.rs`): the shard at or
/// after `key`, and when the block is before the shard's first entry, `prev` to see whether an
/// earlier shard of the same key exists.
fn history_lookup<C: RawCursor>(cur: &mut C, key: &[u8]) -> Settled {
    let prefix = &key[..key.len() - 8];
    let block = u64::from_be_bytes(key[key.len() - 8..].try_into().expect("8 bytes"));
    let Some((found, shard)) = cur.seek(key).expect("seek") else {
        return Settled {
            shard: None,
            stepped_back: false,
        };
    };
    if !found.starts_with(prefix) {
        return Settled {
            shard: None,
            stepped_back: false,
        };
    }
    let stepped_back = before_first_entry(&shard, block);
    if stepped_back {
        black_box(cur.prev().expect("prev"));
    }
    Settled {
        shard: Some(found),
        stepped_back,
    }
}

/// [`history_lookup`]'s answer by a point lookup of the key's last shard (highest block
/// `u64::MAX`) first: reth writes a key's shards as consecutive chunks of one sorted list, each
/// earlier shard named by its own last block, so the last shard answers every block from its
/// first entry on. Only blocks before that entry (or keys with no last shard) need the seek.
/// An experiment on rows that keep that invariant (no engine may assume it of arbitrary rows).
fn history_lookup_last_shard_first<C: RawCursor>(cur: &mut C, key: &[u8]) -> Settled {
    let block = u64::from_be_bytes(key[key.len() - 8..].try_into().expect("8 bytes"));
    let mut last = key[..key.len() - 8].to_vec();
    last.extend_from_slice(&u64::MAX.to_be_bytes());
    if let Some((found, shard)) = cur.seek_exact(&last).expect("seek_exact")
        && !before_first_entry(&shard, block)
    {
        return Settled {
            shard: Some(found),
            stepped_back: false,
        };
    }
    history_lookup(cur, key)
}

/// Rows of `keys` accounts with 1-6 shards each, written as reth writes them (consecutive
/// chunks of one sorted block list, the last chunk under `u64::MAX`), so the two lookups can be
/// checked on keys with earlier shards too (the synthetic rows have one shard per key).
fn multi_shard_rows(keys: usize, highest_block: u64) -> Vec<Row> {
    const PER_SHARD: usize = 4;
    let mut g = KeyGen::new(17);
    let mut rows = Vec::new();
    for _ in 0..keys {
        let address: [u8; 20] = g.bytes();
        let mut blocks: Vec<u64> = (0..1 + g.next_u64() % 24)
            .map(|_| 1 + g.next_u64() % highest_block)
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        let chunks: Vec<&[u64]> = blocks.chunks(PER_SHARD).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let highest = if i + 1 == chunks.len() {
                u64::MAX
            } else {
                *chunk.last().expect("a chunk is not empty")
            };
            let value = compress_to_vec(&IntegerList::new(chunk.to_vec()).expect("sorted"));
            rows.push((
                Tables::AccountsHistory,
                sharded_key(address, highest).to_vec(),
                value,
            ));
        }
    }
    rows.sort();
    rows
}

/// Checks that both lookups settle on the same shard, on the measured rows and on rows with
/// several shards per key, in RocksDB and MDBX.
fn check_last_shard_first(
    rocks: &RocksEngine,
    mdbx: &MdbxEngine,
    keys: &[(Tables, Vec<u8>)],
    highest_block: u64,
) {
    fn agree<E: RawEngine>(e: &E, keys: &[(Tables, Vec<u8>)]) {
        let tx = e.begin_ro().expect("ro");
        for (table, key) in keys {
            let seek = history_lookup(&mut tx.cursor(*table).expect("cursor"), key);
            let last_first =
                history_lookup_last_shard_first(&mut tx.cursor(*table).expect("cursor"), key);
            // Where the shortcut answers, the block is at or after the last shard's first entry,
            // so the seek settles there without stepping back; elsewhere it is the seek.
            assert_eq!(
                seek,
                last_first,
                "{}: the last shard first settled elsewhere",
                e.engine_name()
            );
        }
    }
    agree(rocks, keys);
    agree(mdbx, keys);
    let dir = tempfile::tempdir().expect("tmp");
    let rows = multi_shard_rows(2_000, highest_block);
    let all: Vec<&Row> = rows.iter().collect();
    let multi_rocks =
        RocksEngine::open(&dir.path().join("rocks"), &RocksOptions::default()).expect("rocksdb");
    let multi_mdbx = MdbxEngine::open(
        &dir.path().join("mdbx"),
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )
    .expect("mdbx");
    write(&multi_rocks, &all);
    write(&multi_mdbx, &all);
    let last = last_shards(&rows);
    let multi_keys = lookups(&last, highest_block);
    let earlier = {
        let tx = multi_mdbx.begin_ro().expect("ro");
        multi_keys
            .iter()
            .filter(|(table, key)| {
                let settled = history_lookup(&mut tx.cursor(*table).expect("cursor"), key);
                settled
                    .shard
                    .is_some_and(|k| k[k.len() - 8..] != u64::MAX.to_be_bytes())
            })
            .count()
    };
    assert!(
        earlier > 0,
        "the multi-shard rows must answer some lookups from an earlier shard"
    );
    agree(&multi_rocks, &multi_keys);
    agree(&multi_mdbx, &multi_keys);
    println!(
        "  both lookups settle on the same shard, in each engine: {} lookups of the measured \
         rows, and {} over {} rows of 2,000 keys with 1-6 shards each ({earlier} of them settle \
         on an earlier shard)",
        keys.len(),
        multi_keys.len(),
        rows.len()
    );
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
            "  {:16} files per level {}  SST files {:.1} MiB  memtable {} KiB\n",
            table.name(),
            levels.join("/"),
            p("rocksdb.total-sst-files-size") as f64 / (1 << 20) as f64,
            p("rocksdb.cur-size-all-mem-tables") / 1024
        );
    }
    out
}

/// Waits until RocksDB has no flush or compaction pending or running, as a node between blocks
/// would get to; returns how long that took.
fn settle(rocks: &RocksEngine) -> std::time::Duration {
    let start = Instant::now();
    rocks
        .db()
        .wait_for_compact(&rocksdb::WaitForCompactOptions::default())
        .expect("compactions finish");
    start.elapsed()
}

fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_micros() as u64
}

/// Bytes RocksDB's compactions wrote within `window` (µs since the epoch), per table and
/// reason, from the events in its info log (`LOG`; complete once the database is closed).
fn compactions(dir: &std::path::Path, window: (u64, u64)) -> Vec<(String, String, u64)> {
    let log = std::fs::read_to_string(dir.join("LOG")).expect("RocksDB's LOG");
    let mut started = std::collections::HashMap::new();
    let mut written = std::collections::BTreeMap::<(String, String), u64>::new();
    for line in log.lines() {
        let Some((_, event)) = line.split_once("EVENT_LOG_v1 ") else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<serde_json::Value>(event) else {
            continue;
        };
        let field = |name: &str| event.get(name).cloned().unwrap_or_default();
        let time = field("time_micros").as_u64().unwrap_or(0);
        match field("event").as_str() {
            Some("compaction_started") => {
                let what = (
                    field("cf_name").as_str().unwrap_or("?").to_string(),
                    field("compaction_reason")
                        .as_str()
                        .unwrap_or("?")
                        .to_string(),
                );
                started.insert(field("job").as_u64(), what);
            }
            Some("compaction_finished") if (window.0..=window.1).contains(&time) => {
                if let Some(what) = started.get(&field("job").as_u64()) {
                    *written.entry(what.clone()).or_default() +=
                        field("total_output_size").as_u64().unwrap_or(0);
                }
            }
            _ => {}
        }
    }
    written.into_iter().map(|((t, r), b)| (t, r, b)).collect()
}

/// A fresh RocksDB holding `rows`, compacted, then what persisted blocks leave on top: the last
/// shards of 3% of the keys rewritten three times, the first two flushed. `options` are set on
/// the history tables before any write. Returns the engine and the window (µs since the epoch)
/// of the writes on top and the compactions they caused.
fn node_shaped(
    dir: &std::path::Path,
    rows: &[&Row],
    last: &[&Row],
    options: &[(String, String)],
) -> (RocksEngine, (u64, u64)) {
    let rocks = RocksEngine::open(
        dir,
        &RocksOptions {
            sync_writes: false,
            // The shipped value even where the environment sets another.
            history_level0_compaction_trigger: 1,
            ..RocksOptions::default()
        },
    )
    .expect("rocksdb");
    for table in HISTORY {
        if !options.is_empty() {
            rocks
                .db()
                .set_options_cf(
                    rocks.column_family(table),
                    &options
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .collect::<Vec<_>>(),
                )
                .expect("the candidate's options are RocksDB's dynamic options");
        }
    }
    write(&rocks, rows);
    compact(&rocks);
    settle(&rocks);
    let start = now_micros();
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
    let waited = settle(&rocks);
    println!("  waited {waited:.1?} for the compactions after the flushes");
    (rocks, (start, now_micros()))
}

/// Mean ns per lookup of `shipped`, `candidate` and MDBX, medians of 3 interleaved rounds.
fn side_by_side(
    label: &str,
    shipped: &RocksEngine,
    candidate: &RocksEngine,
    mdbx: &MdbxEngine,
    keys: &[(Tables, Vec<u8>)],
    highest_block: u64,
) {
    let scratch = &mut vec![0u8; between_kib() * 1024];
    let warm = &keys[..PER_TX * 20.min(keys.len() / PER_TX)];
    run(shipped, warm, scratch);
    run(candidate, warm, scratch);
    run(mdbx, warm, scratch);
    let mut rounds: Vec<[f64; 3]> = (0..3)
        .map(|_| {
            [
                run(shipped, keys, scratch),
                run(candidate, keys, scratch),
                run(mdbx, keys, scratch),
            ]
        })
        .collect();
    let median = |i: usize, rounds: &mut Vec<[f64; 3]>| {
        rounds.sort_by(|a, b| a[i].total_cmp(&b[i]));
        rounds[1][i]
    };
    let (s, c, m) = (
        median(0, &mut rounds),
        median(1, &mut rounds),
        median(2, &mut rounds),
    );
    println!(
        "{label}: per lookup, median of 3 interleaved: RocksDB as shipped {s:.0} ns ({:.2}x MDBX), \
         candidate {c:.0} ns ({:.2}x MDBX), MDBX {m:.0} ns; candidate/shipped {:.2}x",
        s / m,
        c / m,
        c / s
    );
    if std::env::var_os("HISTORY_READS_LAST_SHARD_FIRST").is_some() {
        last_shard_first(shipped, mdbx, keys, scratch, highest_block);
    }
    for (name, rocks) in [("as shipped", shipped), ("candidate", candidate)] {
        println!("  RocksDB perf context, {name}:");
        perf_context(
            rocks,
            &keys[..PER_TX * 50.min(keys.len() / PER_TX)],
            scratch,
        );
    }
}

/// `HISTORY_READS_LAST_SHARD_FIRST`: the seek against [`history_lookup_last_shard_first`], both
/// engines, interleaved (medians of 3), after checking that both ways find the same shards.
fn last_shard_first(
    rocks: &RocksEngine,
    mdbx: &MdbxEngine,
    keys: &[(Tables, Vec<u8>)],
    scratch: &mut [u8],
    highest_block: u64,
) {
    check_last_shard_first(rocks, mdbx, keys, highest_block);
    let mut rounds: Vec<[f64; 4]> = (0..3)
        .map(|_| {
            [
                run(rocks, keys, scratch),
                run_with(rocks, keys, scratch, history_lookup_last_shard_first),
                run(mdbx, keys, scratch),
                run_with(mdbx, keys, scratch, history_lookup_last_shard_first),
            ]
        })
        .collect();
    let mut median = |i: usize| {
        rounds.sort_by(|a, b| a[i].total_cmp(&b[i]));
        rounds[1][i]
    };
    let (rs, rl, ms, ml) = (median(0), median(1), median(2), median(3));
    println!(
        "  last shard first (point lookup, seek only before its first block): RocksDB {rl:.0} ns \
         against its seek {rs:.0} ns ({:.2}x); MDBX {ml:.0} ns against its seek {ms:.0} ns; \
         RocksDB last-shard-first / MDBX seek {:.2}x",
        rl / rs,
        rl / ms
    );
}

fn perf_context(rocks: &RocksEngine, keys: &[(Tables, Vec<u8>)], scratch: &mut [u8]) {
    set_perf_stats(PerfStatsLevel::EnableTime);
    let mut ctx = PerfContext::default();
    ctx.reset();
    run(rocks, keys, scratch);
    let n = keys.len() as f64;
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
    let source = std::env::args()
        .nth(1)
        .expect("a hybrid-rocksdb directory, or synthetic");
    let highest_block: u64 = std::env::args()
        .nth(2)
        .map_or(2000, |b| b.parse().expect("block"));
    assert!(highest_block > 0, "the highest block must be at least 1");
    let rows = if source == "synthetic" {
        synthetic_rows(523_272, 320_000, highest_block)
    } else {
        history_rows(&RocksEngine::open_read_only(&PathBuf::from(&source)).expect("source"))
    };
    let last = last_shards(&rows);
    assert!(
        !last.is_empty(),
        "{source} holds no history rows to look up"
    );
    let keys = lookups(&last, highest_block);
    let dir = tempfile::tempdir().expect("tmp");
    let mdbx = MdbxEngine::open(
        &dir.path().join("mdbx"),
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )
    .expect("mdbx");
    let all: Vec<&Row> = rows.iter().collect();
    write(&mdbx, &all);
    let stepped_back = {
        let tx = mdbx.begin_ro().expect("ro");
        keys.iter()
            .filter(|(table, key)| {
                history_lookup(&mut tx.cursor(*table).expect("cursor"), key).stepped_back
            })
            .count()
    };
    println!(
        "{:.0}% of the lookups step back to an earlier shard (`prev`), as reth's history_info does",
        100.0 * stepped_back as f64 / keys.len() as f64
    );
    let candidate_options = candidate_options();
    println!(
        "{} rows, {} keys, {} lookups; candidate options {candidate_options:?}; {} KiB written \
         between lookups; timing a lookup costs {:.0} ns by itself (taken off)",
        rows.len(),
        last.len(),
        keys.len(),
        between_kib(),
        clock_cost()
    );
    println!("as shipped:");
    let (shipped, shipped_window) = node_shaped(&dir.path().join("shipped"), &all, &last, &[]);
    println!("candidate:");
    let (candidate, candidate_window) = node_shaped(
        &dir.path().join("candidate"),
        &all,
        &last,
        &candidate_options,
    );
    println!(
        "node-like shapes:\n  as shipped\n{}  candidate\n{}",
        shape(&shipped),
        shape(&candidate)
    );
    side_by_side(
        "node-like",
        &shipped,
        &candidate,
        &mdbx,
        &keys,
        highest_block,
    );
    compact(&shipped);
    compact(&candidate);
    println!("after a full compaction:\n{}", shape(&shipped));
    side_by_side(
        "compacted",
        &shipped,
        &candidate,
        &mdbx,
        &keys,
        highest_block,
    );
    // Closed, their info logs are complete.
    drop((shipped, candidate));
    for (name, window) in [("shipped", shipped_window), ("candidate", candidate_window)] {
        println!("what RocksDB's compactions wrote after the flushes, {name}:");
        for (table, reason, bytes) in compactions(&dir.path().join(name), window) {
            println!(
                "  {table:24} {reason:24} {:8.1} MiB",
                bytes as f64 / (1 << 20) as f64
            );
        }
    }
}
