//! Adoption throughput (issue 35) on a storage-v2 twin of a generated datadir of (by default)
//! 10M transactions (`reth_hybrid_bench::v2_twin`: reth's RocksDB tables, a flat stand-in for
//! the static files, hashed state and packed tries in MDBX), side by side in one run with a raw
//! copy of the same source bytes:
//!
//! - adoption, once to each target: the whole `adopt` call, checks included (the head's state
//!   root recomputed from the hashed state), the copies from RocksDB (ingested into
//!   `hybrid-rocksdb/` for the hybrid target, the default; into MDBX for v1) and from the static
//!   files, the plain state rebuilt, the changesets checked per block, the tries switched,
//!   reth's copies cleared;
//! - raw copy: every byte adoption reads (reth's RocksDB files, the static files, the hashed
//!   state and tries' rows) read once and written once to one file, fsynced: the floor for any
//!   tool that reads the v2 datadir and writes what it read.
//!
//! Before each, the source is dropped from the page cache (read from disk). The three take turns
//! going first for `RETH_HYBRID_BENCH_ROUNDS` rounds (default 3; the ratios use medians). Prints
//! `adopt / raw copy throughput` for each target (target >= 0.70). `RETH_HYBRID_BENCH_TX_MILLIONS`
//! (default 10) sizes the datadir, generated once with its twin under `RETH_HYBRID_BENCH_DIR`
//! (default `~/.cache/reth-hybrid/bench-data`).

use reth_hybrid_adopt::{AdoptReport, AdoptTarget, Progress, adopt};
use reth_hybrid_api::Tables;
use reth_hybrid_bench::{
    BenchData, copy_tree_synced, dir_bytes, env_or, evict_from_page_cache, generated_template,
    raw_copy::{scan_tables, write_row},
    v2_twin::{FlatStaticFiles, OurMdbx, make_v2_twin},
};
use reth_hybrid_mdbx::MdbxEngine;
use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    thread::ThreadId,
    time::Instant,
};

const TXS_PER_BLOCK: u64 = 1000;

/// The MDBX tables adoption reads from the twin (besides small ones: checkpoints, bodies).
const MDBX_SOURCES: [Tables; 4] = [
    Tables::HashedAccounts,
    Tables::HashedStorages,
    Tables::AccountsTrie,
    Tables::StoragesTrie,
];

/// The v2 twin of `template`, made once.
fn twin(root: &Path, template: &Path) -> PathBuf {
    let name = template.file_name().expect("name").to_string_lossy();
    let dir = root.join(format!("v2-twin-of-{name}"));
    let done = dir.join("TWIN");
    if done.exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let t = Instant::now();
    let report = make_v2_twin(template, &dir).expect("v2 twin");
    eprintln!("made {report:?} in {:.0} s", t.elapsed().as_secs_f64());
    std::fs::write(&done, format!("{report:?}")).expect("marker");
    dir
}

/// Reads every byte adoption reads from `twin` and writes it once into `out`, fsynced; returns
/// seconds and bytes.
fn raw_copy_of_sources(twin: &Path, out: &Path) -> (f64, u64) {
    let t = Instant::now();
    let mut file =
        std::io::BufWriter::with_capacity(8 << 20, std::fs::File::create(out).expect("create"));
    let mut bytes = 0u64;
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("list").flatten() {
            if entry.path().is_dir() {
                files(&entry.path(), out);
            } else {
                out.push(entry.path());
            }
        }
    }
    let mut sources = Vec::new();
    files(&twin.join("rocksdb"), &mut sources);
    files(&twin.join("static"), &mut sources);
    for path in sources {
        let mut from = std::fs::File::open(&path).expect("open");
        bytes += std::io::copy(&mut from, &mut file).expect("copy");
    }
    let engine = MdbxEngine::open_read_only(twin).expect("ro");
    let (_, row_bytes) = scan_tables(&engine, &MDBX_SOURCES, |_, k, v| write_row(&mut file, k, v));
    let file = file.into_inner().expect("flush");
    file.sync_all().expect("fsync");
    let seconds = t.elapsed().as_secs_f64();
    drop(file);
    let _ = std::fs::remove_file(out);
    (seconds, bytes + row_bytes)
}

/// Prints how long each step of the adoption took, and the time between steps (the checks and
/// opens no step reports) where it is more than a tenth of a second. Steps that run at once (on
/// other threads) are marked as such and not counted as gaps.
struct StepTimes {
    steps: std::sync::Mutex<HashMap<ThreadId, (String, Instant, u64)>>,
    last_end: std::sync::Mutex<Instant>,
}

impl StepTimes {
    fn new() -> Self {
        Self {
            steps: Default::default(),
            last_end: std::sync::Mutex::new(Instant::now()),
        }
    }
}

impl Progress for StepTimes {
    fn begin(&self, step: &str, _total: Option<u64>) {
        let mut steps = self.steps.lock().expect("lock");
        let gap = self.last_end.lock().expect("lock").elapsed().as_secs_f64();
        if gap > 0.1 && steps.is_empty() {
            eprintln!("  (between steps, before \"{step}\": {gap:.2} s)");
        }
        steps.insert(
            std::thread::current().id(),
            (step.to_string(), Instant::now(), 0),
        );
    }
    fn advance(&self, rows: u64) {
        if let Some(s) = self
            .steps
            .lock()
            .expect("lock")
            .get_mut(&std::thread::current().id())
        {
            s.2 += rows;
        }
    }
    fn end(&self) {
        let mut steps = self.steps.lock().expect("lock");
        if let Some((step, t, rows)) = steps.remove(&std::thread::current().id()) {
            *self.last_end.lock().expect("lock") = Instant::now();
            let secs = t.elapsed().as_secs_f64();
            let beside = if steps.is_empty() {
                ""
            } else {
                " [beside another step]"
            };
            if rows == 0 {
                eprintln!("  {step}: {secs:.2} s{beside}");
            } else {
                eprintln!(
                    "  {step}: {secs:.2} s ({rows} rows or blocks, {:.0}/s){beside}",
                    rows as f64 / secs.max(1e-9)
                );
            }
        }
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let data = BenchData::from_args();
    let (smoke, root) = (data.smoke, data.root.clone());
    let template = generated_template(&root, data.tx_millions, TXS_PER_BLOCK);
    let twin = twin(&root, &template);
    let parts = [
        (
            "reth's RocksDB (3 tables)",
            dir_bytes(&twin.join("rocksdb")),
        ),
        (
            "static files (changesets, senders; flat stand-in)",
            dir_bytes(&twin.join("static")),
        ),
        ("MDBX", dir_bytes(&twin.join("db"))),
    ];
    for (name, bytes) in parts {
        eprintln!("twin {name}: {:.1} MB", bytes as f64 / 1e6);
    }
    let scratch = tempfile::tempdir_in(&root).expect("scratch");
    let rounds: usize = if smoke {
        1
    } else {
        env_or("RETH_HYBRID_BENCH_ROUNDS", 3)
    };
    let targets = [AdoptTarget::Hybrid, AdoptTarget::V1];
    let (mut raws, mut adopts, mut bytes, mut report) = (
        Vec::new(),
        vec![Vec::new(); targets.len()],
        0,
        None::<AdoptReport>,
    );
    for round in 1..=rounds {
        // Raw copy, then each target; each round starts one further along.
        for turn in 0..=targets.len() {
            let which = (turn + round - 1) % (targets.len() + 1);
            if which == 0 {
                evict_from_page_cache(&twin);
                let (secs, b) = raw_copy_of_sources(&twin, &scratch.path().join("raw.bin"));
                bytes = b;
                eprintln!(
                    "round {round}: raw copy of {:.1} MB: {secs:.2} s",
                    b as f64 / 1e6
                );
                raws.push(secs);
                continue;
            }
            let target = targets[which - 1];
            let work = scratch.path().join("adopt");
            let _ = std::fs::remove_dir_all(&work);
            copy_tree_synced(&twin, &work).expect("copy the twin");
            evict_from_page_cache(&work);
            let files = FlatStaticFiles::open(&work.join("static")).expect("open the static files");
            let t = Instant::now();
            let adopted = adopt(&work, &OurMdbx, &files, target, &StepTimes::new()).expect("adopt");
            let secs = t.elapsed().as_secs_f64();
            eprintln!("round {round}: adopt to {}: {secs:.2} s", target.as_str());
            adopts[which - 1].push(secs);
            report = Some(adopted);
            drop(files);
            let _ = std::fs::remove_dir_all(&work);
        }
    }
    let report = report.expect("one round at least");
    let raw = median(&raws);
    let txs = report.static_rows.senders;
    let rows: u64 = report.upstream_rows.iter().map(|r| r.1).sum::<u64>()
        + report.static_rows.account_changesets
        + report.static_rows.storage_changesets
        + report.static_rows.senders
        + report.plain.accounts
        + report.plain.storage;
    println!(
        "\nadoption of a v2 twin of {txs} transactions, head {} ({rows} rows staged; {:.0} MB \
         of source bytes); medians of {rounds} alternating rounds, source read from disk",
        report.head,
        bytes as f64 / 1e6
    );
    println!("| method | seconds | rows/s | MB/s (source bytes) |");
    println!("|---|---|---|---|");
    let names = [
        "adopt to hybrid (checks, ingestion, copies, rebuild, switch)",
        "adopt to v1 (checks, copies into MDBX, rebuild, switch)",
    ];
    let rows_of = names
        .iter()
        .zip(&adopts)
        .map(|(name, secs)| (*name, median(secs)))
        .chain([("raw copy of the same bytes (floor)", raw)]);
    for (name, s) in rows_of {
        println!(
            "| {name} | {s:.2} | {:.0} | {:.0} |",
            rows as f64 / s,
            bytes as f64 / 1e6 / s
        );
    }
    println!();
    for (target, secs) in targets.iter().zip(&adopts) {
        let ratios: Vec<String> = raws
            .iter()
            .zip(secs)
            .map(|(r, a)| format!("{:.2}", r / a))
            .collect();
        println!(
            "ratio adopt to {} / raw copy throughput: {:.2} (medians; per round {}) (target >= \
             0.70)",
            target.as_str(),
            raw / median(secs),
            ratios.join(", ")
        );
    }
}
