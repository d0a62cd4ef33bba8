//! Memory of one large write transaction, the shapes reth's pipeline makes: the tx-lookup stage
//! writes every tx hash of its range in one transaction (`hashes`: N random
//! `TransactionHashNumbers` rows), the index-history stages rebuild shards (`history`: N
//! `AccountsHistory` shards, 28-byte keys, ~100-byte values). Each is put and committed at once,
//! on MDBX alone and on the hybrid (where both tables live in RocksDB, which spills its writes to
//! disk past `RocksOptions::spill_bytes`). Prints, per case, two growths over the RSS before the
//! transaction:
//!
//! - peak anonymous memory (`RssAnon`, sampled every 2 ms): the process's own allocations, the
//!   hybrid's in-memory overlay, the commit's export and batch: the memory at stake;
//! - peak RSS (`VmHWM`): also file pages mapped in, which for our MDBX (`MDBX_WRITEMAP`) holds the
//!   transaction's dirty pages in the data file's mapping, pages the kernel can write back.
//!
//! Each case runs in a child process of its own, so memory freed by an earlier case cannot hide
//! a later one's; the child resets the kernel's peak (`/proc/self/clear_refs`) after opening the
//! engines. Before committing it reads 1,000 of its own writes back.
//!
//! `clear`: reth's `stage drop tx-lookup` / `db clear TransactionHashNumbers` on a synced node. N
//! tx hashes are committed first (not measured); then one transaction writes 1,000 tx hashes and
//! 1,000 `CanonicalHeaders` rows, clears `TransactionHashNumbers`, writes 1,000 tx hashes again,
//! and commits; the hashes left are checked. The hybrid's clear is one tombstone per row
//! streamed into an SST file (a write batch of them once needed the whole table in memory).
//!
//! The goals: 20M tx hashes and 5M history shards commit with growth <= 512 MiB (issue "bounded
//! memory"); a clear of 20M rows commits with growth <= 256 MiB (issue "no operator command can
//! make a datadir unopenable"). The last column is the hybrid's growth over its case's goal.
//!
//! `cargo bench -p reth-hybrid-bench --bench large_write` (`LARGE_WRITE_CASES`: comma-separated
//! `workload:rows`, default `hashes:1000000,hashes:4000000,hashes:20000000,history:5000000,
//! clear:20000000`).
//! The smoke run (`cargo test`) uses small cases and a 256 KiB spill budget, so the spilling
//! path runs in every `make test`.

use reth_hybrid_api::test_support::report_skip;
use reth_hybrid_api::{
    Tables,
    raw::{RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_bench::KeyGen;
use reth_hybrid_hybrid::{HybridDb, HybridOptions};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::{
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

const CASE_ENV: &str = "LARGE_WRITE_CASE";
const MIB: f64 = (1u64 << 20) as f64;
const GOAL_BYTES: f64 = 512.0 * MIB;
const CLEAR_GOAL_BYTES: f64 = 256.0 * MIB;
/// Rows the clearing transaction writes before and after its clear.
const AROUND_CLEAR: u64 = 1_000;

/// One case's rows: table, key and value of row `i`.
#[derive(Clone, Copy)]
enum Workload {
    Hashes,
    History,
    Clear,
}

impl Workload {
    fn parse(s: &str) -> Self {
        match s {
            "hashes" => Self::Hashes,
            "history" => Self::History,
            "clear" => Self::Clear,
            other => panic!("unknown workload {other} (hashes, history, clear)"),
        }
    }

    fn table(self) -> Tables {
        match self {
            Self::Hashes | Self::Clear => Tables::TransactionHashNumbers,
            Self::History => Tables::AccountsHistory,
        }
    }

    fn goal_bytes(self) -> f64 {
        match self {
            Self::Clear => CLEAR_GOAL_BYTES,
            _ => GOAL_BYTES,
        }
    }

    /// Row `i`: a random tx hash and its number; or a shard of one of `rows / 4` addresses
    /// (4 shards each, keyed by their highest block) holding an encoded block list.
    fn row(self, keys: &mut KeyGen, i: u64) -> (Vec<u8>, Vec<u8>) {
        match self {
            Self::Hashes | Self::Clear => (keys.bytes::<32>().to_vec(), i.to_be_bytes().to_vec()),
            Self::History => {
                let mut key = keys.bytes::<20>().to_vec();
                key.extend_from_slice(&(i % 4 * 1_000_000 + 999_999).to_be_bytes());
                let value: Vec<u8> = (0..100u64)
                    .map(|b| (i.wrapping_mul(31) + b) as u8)
                    .collect();
                (key, value)
            }
        }
    }
}

/// A `/proc/self/status` field in bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map(|kb| kb * 1024)
        .unwrap_or_else(|| panic!("{field} not in /proc/self/status"))
}

/// Makes `VmHWM` (peak RSS) restart from the current RSS; false where the kernel refuses.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The highest `RssAnon` seen while it runs, sampled every 2 ms on a thread of its own.
struct AnonPeak {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    sampler: std::thread::JoinHandle<()>,
}

impl AnonPeak {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(status_bytes("RssAnon:")));
        let sampler = {
            let (stop, peak) = (stop.clone(), peak.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(status_bytes("RssAnon:"), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        };
        Self {
            stop,
            peak,
            sampler,
        }
    }

    fn finish(self) -> u64 {
        self.peak
            .fetch_max(status_bytes("RssAnon:"), Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
        self.sampler.join().expect("sampler");
        self.peak.load(Ordering::Relaxed)
    }
}

/// One case, measured: a large write ([`write_rows`]) or a clear ([`run_clear`]).
fn run_case<E: RawEngine>(db: &E, workload: Workload, rows: u64) {
    match workload {
        Workload::Clear => run_clear(db, rows),
        _ => measured(|| write_rows(db, workload, rows)),
    }
}

/// Runs `work` and prints `anon_growth_bytes rss_growth_bytes seconds`: its peak growth of
/// anonymous memory and of RSS over the memory before it, and its time.
fn measured(work: impl FnOnce()) {
    let before_rss = status_bytes("VmRSS:");
    let before_anon = status_bytes("RssAnon:");
    if !reset_peak() {
        println!("skip: /proc/self/clear_refs cannot be written here");
        return;
    }
    let anon = AnonPeak::start();
    let started = Instant::now();
    work();
    let secs = started.elapsed().as_secs_f64();
    let anon_growth = anon.finish().saturating_sub(before_anon);
    let rss_growth = status_bytes("VmHWM:").saturating_sub(before_rss);
    println!("{anon_growth} {rss_growth} {secs:.3}");
}

/// Puts `rows` rows in one transaction, reads some back, commits.
fn write_rows<E: RawEngine>(db: &E, workload: Workload, rows: u64) {
    let table = workload.table();
    let tx = db.begin_rw().expect("rw");
    let mut keys = KeyGen::new(rows);
    for i in 0..rows {
        let (key, value) = workload.row(&mut keys, i);
        tx.put(table, &key, &value).expect("put");
    }
    let mut keys = KeyGen::new(rows);
    let stride = (rows / 1000).max(1);
    for i in 0..rows {
        let (key, value) = workload.row(&mut keys, i);
        if i % stride == 0 {
            let got = tx.get(table, &key).expect("get");
            assert_eq!(got, Some(value), "own write {i}");
        }
    }
    tx.commit().expect("commit");
}

/// The `clear` case: `rows` tx hashes committed (not measured), then the measured clearing
/// transaction ([`clear_between_writes`]); prints as [`measured`] does, then checks the rows left.
fn run_clear<E: RawEngine>(db: &E, rows: u64) {
    let table = Tables::TransactionHashNumbers;
    let tx = db.begin_rw().expect("rw");
    let mut keys = KeyGen::new(rows);
    for i in 0..rows {
        let (key, value) = Workload::Clear.row(&mut keys, i);
        tx.put(table, &key, &value).expect("put");
    }
    tx.commit().expect("fill");
    measured(|| clear_between_writes(db));
    let tx = db.begin_ro().expect("ro");
    assert_eq!(
        tx.entries(table).expect("entries") as u64,
        AROUND_CLEAR,
        "only the rows written after the clear are left"
    );
    assert_eq!(
        tx.get(table, &tagged_hash(0xa0, 7)).expect("get"),
        Some(7u64.to_be_bytes().to_vec())
    );
    assert_eq!(tx.get(table, &tagged_hash(0xb0, 7)).expect("get"), None);
}

/// A tx hash of the clearing transaction: `tag` (before or after the clear) and `i`.
fn tagged_hash(tag: u8, i: u64) -> [u8; 32] {
    let mut h = [tag; 32];
    h[..8].copy_from_slice(&i.to_be_bytes());
    h
}

/// The measured transaction of the `clear` case: writes in both engines, the clear, writes
/// again, commit.
fn clear_between_writes<E: RawEngine>(db: &E) {
    let table = Tables::TransactionHashNumbers;
    let tx = db.begin_rw().expect("rw");
    for i in 0..AROUND_CLEAR {
        tx.put(table, &tagged_hash(0xb0, i), &i.to_be_bytes())
            .expect("before the clear");
        tx.put(Tables::CanonicalHeaders, &i.to_be_bytes(), &[7; 32])
            .expect("mdbx row");
    }
    tx.clear(table).expect("clear");
    for i in 0..AROUND_CLEAR {
        tx.put(table, &tagged_hash(0xa0, i), &i.to_be_bytes())
            .expect("after the clear");
    }
    tx.commit().expect("commit the clear");
}

fn child(spec: &str) {
    let mut parts = spec.split(':');
    let (Some(engine), Some(workload), Some(rows)) = (parts.next(), parts.next(), parts.next())
    else {
        panic!("{CASE_ENV}: engine:workload:rows, got {spec}");
    };
    let workload = Workload::parse(workload);
    let rows: u64 = rows.parse().expect("rows");
    let dir = tempfile::tempdir().expect("tmp");
    let mdbx = MdbxEngine::open(
        dir.path(),
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )
    .expect("mdbx");
    match engine {
        "mdbx" => run_case(&mdbx, workload, rows),
        "hybrid" => {
            let rocks =
                RocksEngine::open(&dir.path().join("hybrid-rocksdb"), &RocksOptions::default())
                    .expect("rocksdb");
            let db =
                HybridDb::open(mdbx, rocks, dir.path(), HybridOptions::default()).expect("hybrid");
            run_case(&db, workload, rows)
        }
        other => panic!("unknown engine {other}"),
    }
}

/// What a case measured: peak growth of anonymous memory and of all RSS (bytes), seconds.
struct Measured {
    anon: u64,
    rss: u64,
    secs: f64,
}

/// Runs one case in a child process; `None` if it could not measure here.
fn measure(engine: &str, case: &str, spill_bytes: Option<&str>) -> Option<Measured> {
    let mut cmd = Command::new(std::env::current_exe().expect("bench binary"));
    cmd.env(CASE_ENV, format!("{engine}:{case}"));
    if let Some(bytes) = spill_bytes {
        cmd.env(reth_hybrid_rocksdb::SPILL_BYTES_ENV, bytes);
    }
    let out = cmd.output().expect("spawn the case");
    assert!(
        out.status.success(),
        "{engine} {case} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    if let Some(reason) = line.strip_prefix("skip: ") {
        report_skip("large_write benchmark", reason);
        return None;
    }
    let fields: Vec<f64> = line
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect();
    match fields[..] {
        [anon, rss, secs] => Some(Measured {
            anon: anon as u64,
            rss: rss as u64,
            secs,
        }),
        _ => panic!("{engine} {case} printed no measurement: {text}"),
    }
}

fn main() {
    if let Ok(spec) = std::env::var(CASE_ENV) {
        return child(&spec);
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this as a smoke test, with a
    // spill budget small enough that its cases spill.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let cases: Vec<String> = match std::env::var("LARGE_WRITE_CASES") {
        Ok(list) => list.split(',').map(|s| s.trim().to_string()).collect(),
        Err(_) if smoke => vec![
            "hashes:20000".into(),
            "history:5000".into(),
            "clear:20000".into(),
        ],
        Err(_) => [
            "hashes:1000000",
            "hashes:4000000",
            "hashes:20000000",
            "history:5000000",
            "clear:20000000",
        ]
        .map(String::from)
        .to_vec(),
    };
    let spill_bytes = smoke.then_some("262144");
    let budget = spill_bytes
        .map(str::to_string)
        .or_else(|| std::env::var(reth_hybrid_rocksdb::SPILL_BYTES_ENV).ok())
        .unwrap_or_else(|| "default".into());
    println!("one write transaction of N rows: peak growth (MiB); RocksDB spill budget: {budget}");
    println!(
        "{:>18} {:>10} {:>10} {:>12} {:>10} {:>10} {:>12} {:>10} {:>12}",
        "case",
        "mdbx anon",
        "mdbx rss",
        "hybrid anon",
        "hybrid rss",
        "rss ratio",
        "hybrid B/row",
        "hybrid s",
        "anon / goal"
    );
    let mut worst: f64 = 0.0;
    for case in &cases {
        let workload = Workload::parse(case.split(':').next().unwrap_or_default());
        let rows: f64 = case
            .rsplit(':')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("LARGE_WRITE_CASES: workload:rows, got {case}"));
        let (Some(mdbx), Some(hybrid)) = (
            measure("mdbx", case, spill_bytes),
            measure("hybrid", case, spill_bytes),
        ) else {
            return;
        };
        worst = worst.max(hybrid.anon as f64 / workload.goal_bytes());
        println!(
            "{case:>18} {:>10.1} {:>10.1} {:>12.1} {:>10.1} {:>9.1}x {:>12.0} {:>10.1} {:>11.2}x",
            mdbx.anon as f64 / MIB,
            mdbx.rss as f64 / MIB,
            hybrid.anon as f64 / MIB,
            hybrid.rss as f64 / MIB,
            hybrid.rss as f64 / mdbx.rss.max(1) as f64,
            hybrid.anon as f64 / rows,
            hybrid.secs,
            hybrid.anon as f64 / workload.goal_bytes(),
        );
    }
    println!(
        "goals: anonymous-memory growth <= 512 MiB per write case, <= 256 MiB per clear; the \
         hybrid's largest growth is {worst:.2}x its case's goal"
    );
}
