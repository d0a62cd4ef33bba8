//! Migration throughput on a generated datadir with (by default) 10M tx hashes, three ways side
//! by side in one run, and the on-disk size of each migrated table before and after:
//!
//! - reth-hybrid's migration (MDBX cursor -> SST files -> ingestion, then both sides scanned and
//!   compared, then the switch): the whole `migrate` call, verification included;
//! - row by row, as upstream's `reth db migrate-v2` does: a typed cursor walk (decode, encode
//!   again), WriteBatches of 512 MiB committed with a synced WAL, a flush; no verification;
//! - raw copy: the same rows' bytes streamed into one flat file and fsynced (the floor for any
//!   copy that reads MDBX in order and writes once).
//!
//! Prints: `ours vs row-by-row` (target >= 10x faster) and `ours / raw copy` throughput (target
//! >= 0.70), and per table `RocksDB / MDBX bytes` (target <= 0.60).
//!
//! `RETH_HYBRID_BENCH_TX_MILLIONS` (default 10) sizes the datadir; it is generated once into
//! `RETH_HYBRID_BENCH_DIR` (default `~/.cache/reth-hybrid/bench-data`) and reused.

use reth_hybrid_api::{
    DbCursorRO, DbTx, Encode, EngineKind, Table, TableViewer, Tables,
    raw::{RawCursor, RawEngine, RawTx},
    typed::{Database, TypedDatabase},
};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{GenerateSpec, MigrateRequest, generate, migrate};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::{
    io::Write,
    path::{Path, PathBuf},
    time::Instant,
};

const TABLES: [Tables; 3] = [
    Tables::TransactionHashNumbers,
    Tables::AccountsHistory,
    Tables::StoragesHistory,
];
const TXS_PER_BLOCK: u64 = 1000;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The generated template datadir, made once per size.
fn template(root: &Path, tx_millions: f64) -> PathBuf {
    let txs = (tx_millions * 1e6) as u64;
    let scale = txs.div_ceil(TXS_PER_BLOCK * 100).max(1);
    let dir = root.join(format!("template-{scale}x{TXS_PER_BLOCK}"));
    let done = dir.join("GENERATED");
    if done.exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "generating {} blocks x {TXS_PER_BLOCK} txs into {} (once)",
        scale * 100,
        dir.display()
    );
    let t = Instant::now();
    let engine = MdbxEngine::open(&dir, MdbxOptions::create().with_geometry(Geometry::SMALL))
        .expect("create datadir");
    let report = generate(
        &TypedDatabase::new(engine),
        &GenerateSpec {
            txs_per_block: TXS_PER_BLOCK,
            ..GenerateSpec::new(scale, 1)
        },
    )
    .expect("generate");
    eprintln!("generated {report:?} in {:.0} s", t.elapsed().as_secs_f64());
    std::fs::write(&done, format!("{report:?}")).expect("marker");
    dir
}

/// Streams every row of the tables to `f`; returns (rows, key+value bytes).
fn scan(engine: &MdbxEngine, mut f: impl FnMut(Tables, &[u8], &[u8])) -> (u64, u64) {
    let tx = engine.begin_ro().expect("ro");
    let (mut rows, mut bytes) = (0, 0);
    for table in TABLES {
        let mut c = tx.cursor(table).expect("cursor");
        let mut next = c.first().expect("first");
        while let Some((k, v)) = next {
            rows += 1;
            bytes += (k.len() + v.len()) as u64;
            f(table, &k, &v);
            next = c.next().expect("next");
        }
    }
    (rows, bytes)
}

fn raw_copy(template: &Path, out: &Path) -> f64 {
    let engine = MdbxEngine::open_read_only(template).expect("ro");
    let t = Instant::now();
    let mut file =
        std::io::BufWriter::with_capacity(8 << 20, std::fs::File::create(out).expect("create"));
    scan(&engine, |_, k, v| {
        file.write_all(&(k.len() as u32).to_le_bytes())
            .expect("write");
        file.write_all(k).expect("write");
        file.write_all(&(v.len() as u32).to_le_bytes())
            .expect("write");
        file.write_all(v).expect("write");
    });
    let file = file.into_inner().expect("flush");
    file.sync_all().expect("fsync");
    t.elapsed().as_secs_f64()
}

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
    // `cargo bench` passes `--bench`; `cargo test --all-targets` does not: then a small smoke run
    // in a temporary folder checks the harness without the 10M-row datadir.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let smoke_dir = smoke.then(|| tempfile::tempdir().expect("tmp"));
    let root: PathBuf = match &smoke_dir {
        Some(d) => d.path().to_path_buf(),
        None => std::env::var_os("RETH_HYBRID_BENCH_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                    .join(".cache/reth-hybrid/bench-data")
            }),
    };
    std::fs::create_dir_all(&root).expect("bench dir");
    let tx_millions: f64 = if smoke {
        0.02
    } else {
        env_or("RETH_HYBRID_BENCH_TX_MILLIONS", 10.0)
    };
    let template = template(&root, tx_millions);
    let scratch = tempfile::tempdir_in(&root).expect("scratch");

    // Warm the page cache the same way for every method.
    let (rows, bytes) = scan(
        &MdbxEngine::open_read_only(&template).expect("ro"),
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
    let raw = raw_copy(&template, &scratch.path().join("raw.bin"));
    eprintln!("raw copy: {raw:.2} s");
    let slow = if only_ours {
        f64::NAN
    } else {
        row_by_row(&template, &scratch.path().join("row-by-row"))
    };
    eprintln!("row by row: {slow:.2} s");

    let ours_dir = scratch.path().join("ours");
    std::fs::create_dir_all(ours_dir.join("db")).expect("mkdir");
    for name in ["mdbx.dat", "database.version"] {
        std::fs::copy(
            template.join("db").join(name),
            ours_dir.join("db").join(name),
        )
        .expect("copy");
    }
    let t = Instant::now();
    let report = migrate(
        &ours_dir,
        &MigrateRequest::new(EngineKind::RocksDb),
        &StepTimes(Default::default()),
    )
    .expect("migrate");
    let ours = t.elapsed().as_secs_f64();
    eprintln!("  (open, preflight, state files and the final cleanup: the rest)");
    eprintln!("reth-hybrid migrate (verification included): {ours:.2} s");

    println!(
        "\nmigration of {rows} rows ({:.0} MB of MDBX pages: {})",
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
        "ratio ours / raw copy throughput: {:.2} (target >= 0.70)",
        raw / ours
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
