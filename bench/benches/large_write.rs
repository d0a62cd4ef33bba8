//! Memory of one large write transaction, the shape reth's pipeline makes (the tx-lookup stage
//! writes every tx hash of its range in one transaction): N `TransactionHashNumbers` rows put and
//! committed at once, on MDBX alone and on the hybrid (where the table lives in RocksDB). Prints,
//! per row count, two growths over the RSS before the transaction:
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
//! The goal (issue "bounded memory"): 20M rows commit with growth <= 512 MiB.
//!
//! `cargo bench -p reth-hybrid-bench --bench large_write` (`LARGE_WRITE_ROWS`: comma-separated
//! row counts, default `1000000,2000000,4000000`).

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

fn hash(keys: &mut KeyGen) -> [u8; 32] {
    keys.bytes::<32>()
}

/// One case: puts `rows` tx hashes in one transaction, reads some back, commits; prints
/// `anon_growth_bytes rss_growth_bytes seconds`.
fn run_case<E: RawEngine>(db: &E, rows: u64) {
    let before_rss = status_bytes("VmRSS:");
    let before_anon = status_bytes("RssAnon:");
    if !reset_peak() {
        println!("skip: /proc/self/clear_refs cannot be written here");
        return;
    }
    let anon = AnonPeak::start();
    let started = Instant::now();
    let tx = db.begin_rw().expect("rw");
    let mut keys = KeyGen::new(rows);
    for i in 0..rows {
        tx.put(
            Tables::TransactionHashNumbers,
            &hash(&mut keys),
            &i.to_be_bytes(),
        )
        .expect("put");
    }
    let mut keys = KeyGen::new(rows);
    let stride = (rows / 1000).max(1);
    for i in 0..rows {
        let key = hash(&mut keys);
        if i % stride == 0 {
            let got = tx.get(Tables::TransactionHashNumbers, &key).expect("get");
            assert_eq!(got.as_deref(), Some(&i.to_be_bytes()[..]), "own write {i}");
        }
    }
    tx.commit().expect("commit");
    let secs = started.elapsed().as_secs_f64();
    let anon_growth = anon.finish().saturating_sub(before_anon);
    let rss_growth = status_bytes("VmHWM:").saturating_sub(before_rss);
    println!("{anon_growth} {rss_growth} {secs:.3}");
}

fn child(spec: &str) {
    let (engine, rows) = spec.split_once(':').expect("engine:rows");
    let rows: u64 = rows.parse().expect("rows");
    let dir = tempfile::tempdir().expect("tmp");
    let mdbx = MdbxEngine::open(
        dir.path(),
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )
    .expect("mdbx");
    match engine {
        "mdbx" => run_case(&mdbx, rows),
        "hybrid" => {
            let rocks =
                RocksEngine::open(&dir.path().join("hybrid-rocksdb"), &RocksOptions::default())
                    .expect("rocksdb");
            let db =
                HybridDb::open(mdbx, rocks, dir.path(), HybridOptions::default()).expect("hybrid");
            run_case(&db, rows)
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
fn measure(engine: &str, rows: u64) -> Option<Measured> {
    let out = Command::new(std::env::current_exe().expect("bench binary"))
        .env(CASE_ENV, format!("{engine}:{rows}"))
        .output()
        .expect("spawn the case");
    assert!(
        out.status.success(),
        "{engine} with {rows} rows failed: {}",
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
        _ => panic!("{engine} with {rows} rows printed no measurement: {text}"),
    }
}

fn main() {
    if let Ok(spec) = std::env::var(CASE_ENV) {
        return child(&spec);
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this as a smoke test.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let rows: Vec<u64> = match std::env::var("LARGE_WRITE_ROWS") {
        Ok(list) => list
            .split(',')
            .map(|s| s.trim().parse().expect("LARGE_WRITE_ROWS: row counts"))
            .collect(),
        Err(_) if smoke => vec![20_000],
        Err(_) => vec![1_000_000, 2_000_000, 4_000_000],
    };
    println!("one write transaction of N TransactionHashNumbers rows: peak growth (MiB)");
    println!(
        "{:>10} {:>10} {:>10} {:>12} {:>10} {:>10} {:>12} {:>10}",
        "rows",
        "mdbx anon",
        "mdbx rss",
        "hybrid anon",
        "hybrid rss",
        "rss ratio",
        "hybrid B/row",
        "hybrid s"
    );
    let mut per_row = 0.0;
    for n in rows {
        let (Some(mdbx), Some(hybrid)) = (measure("mdbx", n), measure("hybrid", n)) else {
            return;
        };
        per_row = hybrid.anon as f64 / n as f64;
        println!(
            "{n:>10} {:>10.1} {:>10.1} {:>12.1} {:>10.1} {:>9.1}x {:>12.0} {:>10.1}",
            mdbx.anon as f64 / MIB,
            mdbx.rss as f64 / MIB,
            hybrid.anon as f64 / MIB,
            hybrid.rss as f64 / MIB,
            hybrid.rss as f64 / mdbx.rss.max(1) as f64,
            hybrid.anon as f64 / n as f64,
            hybrid.secs,
        );
    }
    println!(
        "goal: 20M rows with growth <= 512 MiB; the hybrid's anonymous memory at 20M rows, \
         extrapolated: {:.0} MiB",
        per_row * 20e6 / MIB
    );
}
