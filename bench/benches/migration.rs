//! Migration throughput on a generated datadir with (by default) 10M tx hashes, three ways side
//! by side in one run, and the on-disk size of each migrated table before and after:
//!
//! - reth-hybrid's migration (MDBX cursor -> SST files, each ingested as it is written and read
//!   back through RocksDB on threads beside the copy, then the switch): the whole `migrate`
//!   call, verification included;
//! - row by row, as upstream's `reth db migrate-v2` does: a typed cursor walk (decode, encode
//!   again), WriteBatches of 512 MiB committed with a synced WAL, a flush; no verification;
//! - raw copy: the same rows' bytes streamed into one flat file and fsynced (the floor for any
//!   copy that reads MDBX in order and writes once).
//!
//! Prints: `ours vs row-by-row` (target >= 10x faster) and `ours / raw copy` throughput (target
//! >= 0.70), and per table `RocksDB / MDBX bytes` (target <= 0.60).
//!
//! The raw copy and ours alternate for `RETH_HYBRID_BENCH_ROUNDS` rounds (default 3; the
//! ratio uses the medians). `RETH_HYBRID_BENCH_TX_MILLIONS` (default 10) sizes the datadir; it
//! is generated once into `RETH_HYBRID_BENCH_DIR` (default `~/.cache/reth-hybrid/bench-data`)
//! and reused. `RETH_HYBRID_BENCH_SST_MIB` sets the SST file size (default: the tool's).

use reth_hybrid_api::{
    DbCursorRO, DbTx, Encode, EngineKind, Table, TableViewer, Tables,
    raw::RawEngine,
    typed::{Database, TypedDatabase},
};
use reth_hybrid_bench::{
    BenchData, env_or, generated_template,
    raw_copy::{raw_copy, scan_tables},
};
use reth_hybrid_mdbx::MdbxEngine;
use reth_hybrid_migrate::{MigrateRequest, migrate};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::{path::Path, time::Instant};

const TABLES: [Tables; 3] = [
    Tables::TransactionHashNumbers,
    Tables::AccountsHistory,
    Tables::StoragesHistory,
];
const TXS_PER_BLOCK: u64 = 1000;

/// Upstream's `reth db migrate-v2` per table: a typed cursor walk (each key and value decoded,
/// then encoded again), `put` into a WriteBatch committed (synced WAL) every 512 MiB, a flush.
fn row_by_row(template: &Path, out: &Path) -> f64 {
    struct CopyTable<'a> {
        tx: &'a <TypedDatabase<MdbxEngine> as Database>::TX,
        rocks: &'a RocksEngine,
    }
    impl TableViewer<()> for CopyTable<'_> {
        type Error = reth_hybrid_api::DatabaseError;
        fn view<T: Table>(&self) -> Result<(), Self::Error> {
            let table: Tables = T::NAME.parse().expect("catalogued");
            let cf = self.rocks.column_family(table);
            let mut cursor = self.tx.cursor_read::<T>()?;
            let mut batch = rocksdb::WriteBatch::default();
            let mut wo = rocksdb::WriteOptions::default();
            wo.set_sync(true);
            for entry in cursor.walk(None)? {
                let (key, value) = entry?;
                let k = key.encode();
                let v = reth_hybrid_api::table::compress_to_vec(&value);
                if table.is_dupsort() {
                    batch.put_cf(cf, [k.as_ref(), &v[..]].concat(), []);
                } else {
                    batch.put_cf(cf, k, v);
                }
                if batch.size_in_bytes() >= 512 << 20 {
                    self.rocks
                        .db()
                        .write_opt(std::mem::take(&mut batch), &wo)
                        .expect("write");
                }
            }
            self.rocks.db().write_opt(batch, &wo).expect("write");
            Ok(())
        }
    }
    let db = TypedDatabase::new(MdbxEngine::open_read_only(template).expect("ro"));
    let rocks = RocksEngine::open(out, &RocksOptions::default()).expect("rocksdb");
    let t = Instant::now();
    let tx = db.tx().expect("tx");
    for table in TABLES {
        table
            .view(&CopyTable {
                tx: &tx,
                rocks: &rocks,
            })
            .expect("copy");
    }
    rocks.flush().expect("flush");
    t.elapsed().as_secs_f64()
}

/// Prints how long each step of the migration took.
struct StepTimes(std::sync::Mutex<Option<(String, Instant)>>);

impl reth_hybrid_migrate::Progress for StepTimes {
    fn begin(&self, step: &str, _total: Option<u64>) {
        *self.0.lock().expect("lock") = Some((step.to_string(), Instant::now()));
    }
    fn advance(&self, _rows: u64) {}
    fn end(&self) {
        if let Some((step, t)) = self.0.lock().expect("lock").take() {
            eprintln!("  {step}: {:.2} s", t.elapsed().as_secs_f64());
        }
    }
}

fn main() {
    let data = BenchData::from_args();
    let (smoke, root) = (data.smoke, data.root.clone());
    let template = generated_template(&root, data.tx_millions, TXS_PER_BLOCK);
    let scratch = tempfile::tempdir_in(&root).expect("scratch");

    // Warm the page cache the same way for every method.
    let (rows, bytes) = scan_tables(
        &MdbxEngine::open_read_only(&template).expect("ro"),
        &TABLES,
        |_, _, _| {},
    );
    let before: Vec<(Tables, u64)> = {
        let engine = MdbxEngine::open_read_only(&template).expect("ro");
        let tx = engine.begin_ro().expect("ro");
        TABLES
            .iter()
            .map(|t| (*t, tx.table_stat(*t).expect("stat").bytes()))
            .collect()
    };
    let source_bytes: u64 = before.iter().map(|b| b.1).sum();
    eprintln!(
        "{rows} rows, {:.1} MB of keys+values, {:.1} MB of MDBX pages",
        bytes as f64 / 1e6,
        source_bytes as f64 / 1e6
    );

    let only_ours = std::env::var_os("RETH_HYBRID_BENCH_ONLY_OURS").is_some();
    let slow = if only_ours {
        f64::NAN
    } else {
        row_by_row(&template, &scratch.path().join("row-by-row"))
    };
    eprintln!("row by row: {slow:.2} s");

    let mut request = MigrateRequest::new(EngineKind::RocksDb);
    if let Some(mib) = std::env::var("RETH_HYBRID_BENCH_SST_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        request.sst_file_bytes = mib << 20;
    }
    // The raw copy's time swings by 2x between runs on a shared disk: alternate the two, and
    // compare medians.
    let rounds: usize = if smoke {
        1
    } else {
        env_or("RETH_HYBRID_BENCH_ROUNDS", 3)
    };
    let (mut raws, mut ourses, mut report) = (Vec::new(), Vec::new(), None);
    for round in 1..=rounds {
        let raw = raw_copy(&template, &TABLES, &scratch.path().join("raw.bin")).seconds;
        eprintln!("round {round}: raw copy: {raw:.2} s");
        let ours_dir = scratch.path().join("ours");
        let _ = std::fs::remove_dir_all(&ours_dir);
        std::fs::create_dir_all(ours_dir.join("db")).expect("mkdir");
        for name in ["mdbx.dat", "database.version"] {
            std::fs::copy(
                template.join("db").join(name),
                ours_dir.join("db").join(name),
            )
            .expect("copy");
            // A node's datadir at rest has no dirty pages: flush the copy, or the migration's
            // first durable MDBX commit would pay for writing it back.
            std::fs::File::open(ours_dir.join("db").join(name))
                .and_then(|f| f.sync_all())
                .expect("fsync the copy");
        }
        let t = Instant::now();
        report =
            Some(migrate(&ours_dir, &request, &StepTimes(Default::default())).expect("migrate"));
        let ours = t.elapsed().as_secs_f64();
        eprintln!("  (open, preflight, state files and the final cleanup: the rest)");
        eprintln!("round {round}: reth-hybrid migrate (verification included): {ours:.2} s");
        eprintln!(
            "round {round}: ours / raw copy throughput: {:.2}",
            raw / ours
        );
        raws.push(raw);
        ourses.push(ours);
    }
    let report = report.expect("one round at least");
    let ratios: Vec<f64> = raws.iter().zip(&ourses).map(|(r, o)| r / o).collect();
    let (raw, ours) = (median(&raws), median(&ourses));

    println!(
        "\nmigration of {rows} rows ({:.0} MB of MDBX pages: {}); medians of {rounds} alternating rounds",
        source_bytes as f64 / 1e6,
        TABLES.map(|t| t.name()).join(", ")
    );
    println!("| method | seconds | rows/s | MB/s (MDBX pages) |");
    println!("|---|---|---|---|");
    for (name, s) in [
        ("reth-hybrid migrate (SST + ingest + verify)", ours),
        (
            "row by row (typed walk + WriteBatch, upstream method)",
            slow,
        ),
        ("raw sequential copy (floor)", raw),
    ] {
        println!(
            "| {name} | {s:.2} | {:.0} | {:.0} |",
            rows as f64 / s,
            source_bytes as f64 / 1e6 / s
        );
    }
    println!(
        "\nratio ours vs row-by-row: {:.1}x faster (target >= 10x)",
        slow / ours
    );
    println!(
        "ratio ours / raw copy throughput: {:.2} (medians; per round {}) (target >= 0.70)",
        raw / ours,
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("\n| table | MDBX bytes | RocksDB bytes | RocksDB / MDBX (target <= 0.60) |");
    println!("|---|---|---|---|");
    for t in &report.tables {
        println!(
            "| {} | {} | {} | {:.2} |",
            t.table.name(),
            t.source_bytes,
            t.target_bytes,
            t.target_bytes as f64 / t.source_bytes.max(1) as f64
        );
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
