//! `reth-hybrid demo`: the whole job on a small generated datadir. Generate a reth v1 datadir,
//! migrate its history and tx-hash tables to RocksDB, verify, compare lookups against the
//! untouched MDBX copy, roll back, and check the round trip row for row.

use crate::progress::{Bars, bytes};
use eyre::{WrapErr, bail};
use reth_hybrid_api::{
    DbCursorRO, DbTx, EngineKind, Tables,
    models::ShardedKey,
    raw::{RawCursor, RawEngine, RawTx},
    tables::{AccountsHistory, TransactionHashNumbers},
    typed::{Database, TypedDatabase},
};
use reth_hybrid_bench::persist::{
    PersistReport, PersistSpec, RETH_BLOCKS_PER_COMMIT, chain_tip, persist_blocks,
};
use reth_hybrid_hybrid::{HybridDb, HybridOptions};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{
    GenerateSpec, MigrateRequest, generate, migrate, stats::stats, verify::verify,
};
use reth_hybrid_rocksdb::RocksEngine;
use std::{io::Write, path::Path, time::Instant};

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Size of the generated datadir (100 blocks of 8 transactions per unit).
    #[arg(long, default_value_t = 40)]
    pub scale: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Lookups per kind in the comparison.
    #[arg(long, default_value_t = 20_000)]
    pub lookups: usize,
    /// Blocks of 200 transactions persisted on each datadir in reth's write pattern.
    #[arg(long, default_value_t = 600)]
    pub persist_blocks: u64,
    /// Work in this (new) folder and keep it, instead of a temporary one.
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
}

pub fn run(args: &DemoArgs, out: &mut impl Write) -> eyre::Result<()> {
    let tmp;
    let root = match &args.dir {
        Some(d) => {
            if d.exists() {
                bail!("{} exists; pass a new folder to --dir", d.display());
            }
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let baseline = root.join("mdbx-only");
    let hybrid_dir = root.join("hybrid");
    let bars = Bars::new(false);

    writeln!(
        out,
        "== 1. generate a reth v1 datadir (scale {}, seed {})",
        args.scale, args.seed
    )?;
    let t = Instant::now();
    let report = {
        let engine = MdbxEngine::open(
            &baseline,
            MdbxOptions::create().with_geometry(Geometry::SMALL),
        )?;
        generate(
            &TypedDatabase::new(engine),
            &GenerateSpec::new(args.scale, args.seed),
        )?
    };
    writeln!(
        out,
        "   {} blocks, {} transactions, {} accounts, {} account + {} storage history shards ({:.1} s)",
        report.blocks,
        report.transactions,
        report.accounts,
        report.account_history_shards,
        report.storage_history_shards,
        t.elapsed().as_secs_f64()
    )?;
    copy_datadir(&baseline, &hybrid_dir)?;

    writeln!(
        out,
        "== 2. migrate the history and tx-hash tables to RocksDB (SST files + ingestion)"
    )?;
    let mut request = MigrateRequest::new(EngineKind::RocksDb);
    request.compact = true;
    let migrated = migrate(&hybrid_dir, &request, &bars).wrap_err("migrating")?;
    for t in &migrated.tables {
        writeln!(
            out,
            "   {:<24} {:>8} rows  {:>10} in MDBX -> {:>10} in RocksDB  ({:.2} s)",
            t.table.name(),
            t.rows,
            bytes(t.source_bytes),
            bytes(t.target_bytes),
            t.seconds
        )?;
    }
    if let Some((before, after)) = migrated.compacted {
        writeln!(
            out,
            "   mdbx.dat compacted: {} -> {} on disk",
            bytes(before),
            bytes(after)
        )?;
    }
    let s = stats(&hybrid_dir, true)?;
    writeln!(
        out,
        "   now: MDBX {} rows in {} tables, RocksDB {} rows in {} tables",
        s.mdbx.entries,
        s.tables
            .iter()
            .filter(|t| t.engine == EngineKind::Mdbx && t.mdbx_entries > 0)
            .count(),
        s.rocksdb.entries,
        s.tables
            .iter()
            .filter(|t| t.engine == EngineKind::RocksDb && t.rocksdb_entries > 0)
            .count()
    )?;

    writeln!(
        out,
        "== 3. verify (placement, recovery state, every row decoded and checksummed)"
    )?;
    let verified = verify(&hybrid_dir, &bars)?;
    let mut text = Vec::new();
    crate::verify_cmd::print(&verified, false, &mut text)?;
    for line in String::from_utf8_lossy(&text).lines() {
        writeln!(out, "   {line}")?;
    }
    if !verified.passed() {
        bail!("verification failed");
    }

    writeln!(
        out,
        "== 4. lookups: untouched MDBX datadir vs the hybrid, {} each (same answers required)",
        args.lookups
    )?;
    let (mdbx_times, hybrid_times) = compare_lookups(&baseline, &hybrid_dir, args.lookups)?;
    for (name, m, h) in [
        ("tx hash -> number", mdbx_times.0, hybrid_times.0),
        ("account history seek", mdbx_times.1, hybrid_times.1),
    ] {
        writeln!(
            out,
            "   {name:<22} MDBX {m:>6.2} us   hybrid (RocksDB) {h:>6.2} us   ratio {:.2}x",
            h / m
        )?;
    }
    writeln!(out, "   (a small, fully cached datadir; {})", build_note())?;

    writeln!(
        out,
        "== 5. persist {} blocks of {} transactions in reth's write pattern on both (a commit every {} blocks)",
        args.persist_blocks,
        PersistSpec::new(0, 0).txs_per_block,
        RETH_BLOCKS_PER_COMMIT
    )?;
    let (m, h) = compare_persistence(&baseline, &hybrid_dir, args.persist_blocks, args.seed)?;
    for (name, r) in [("MDBX only", &m), ("hybrid", &h)] {
        writeln!(
            out,
            "   {name:<10} {:>8.0} blocks/s   {:>10} written",
            r.blocks_per_second(),
            r.bytes_written.map_or("n/a".to_string(), bytes),
        )?;
    }
    write!(
        out,
        "   hybrid/MDBX: throughput {:.2}x",
        h.blocks_per_second() / m.blocks_per_second()
    )?;
    match (h.bytes_written, m.bytes_written) {
        (Some(hb), Some(mb)) if mb > 0 => {
            writeln!(out, ", bytes written {:.2}x", hb as f64 / mb as f64)?
        }
        _ => writeln!(out)?,
    }
    let (m_bytes, h_bytes) = (
        routed_table_bytes(&baseline)?,
        routed_table_bytes(&hybrid_dir)?,
    );
    writeln!(
        out,
        "   tx-hash and history tables on disk: MDBX only {}, hybrid {} ({:.2}x)",
        bytes(m_bytes),
        bytes(h_bytes),
        h_bytes as f64 / m_bytes.max(1) as f64
    )?;
    writeln!(
        out,
        "   (persistence favours the hybrid more as the datadir grows: MDBX's random tx-hash inserts \
         split and copy ever more pages; `make bench-scale` measures 1M-100M transactions, \
         docs/benchmarks.md \"At scale\")"
    )?;

    writeln!(
        out,
        "== 6. roll back to MDBX and compare every row with the original"
    )?;
    migrate(&hybrid_dir, &MigrateRequest::new(EngineKind::Mdbx), &bars).wrap_err("rolling back")?;
    let (a, b) = (digests(&baseline)?, digests(&hybrid_dir)?);
    if a != b {
        bail!("round trip changed rows");
    }
    writeln!(
        out,
        "   {} tables, {} rows: identical after MDBX -> RocksDB -> MDBX",
        a.len(),
        a.iter().map(|d| d.1).sum::<u64>()
    )?;
    writeln!(
        out,
        "demo done{}",
        match &args.dir {
            Some(d) => format!("; datadirs kept in {}", d.display()),
            None => String::new(),
        }
    )?;
    Ok(())
}

/// What kind of build measured, since a debug build of our crates skews every ratio.
fn build_note() -> &'static str {
    if cfg!(debug_assertions) {
        "a test-profile build: engines and reth-hybrid's crates optimised, debug assertions on"
    } else {
        "a release build"
    }
}

/// The hybrid datadir, as the node would open it.
fn open_hybrid(datadir: &Path) -> eyre::Result<TypedDatabase<HybridDb<MdbxEngine, RocksEngine>>> {
    Ok(TypedDatabase::new(HybridDb::open(
        MdbxEngine::open(datadir, MdbxOptions::read_write())?,
        RocksEngine::open_in_datadir(datadir)?,
        datadir,
        HybridOptions::default(),
    )?))
}

/// The same blocks persisted on both datadirs, in halves run MDBX, hybrid, hybrid, MDBX so
/// neither side always goes first.
fn compare_persistence(
    baseline: &Path,
    hybrid_dir: &Path,
    blocks: u64,
    seed: u64,
) -> eyre::Result<(PersistReport, PersistReport)> {
    let mdbx_db = TypedDatabase::new(MdbxEngine::open(baseline, MdbxOptions::read_write())?);
    let hybrid = open_hybrid(hybrid_dir)?;
    let half = |db_seed: u64, n: u64| PersistSpec::new(n, seed ^ db_seed);
    let (first, second) = (blocks / 2, blocks - blocks / 2);
    let mut total = [PersistReport::default(), PersistReport::default()];
    let mut add = |i: usize, r: PersistReport| {
        let t = &mut total[i];
        t.blocks += r.blocks;
        t.transactions += r.transactions;
        t.commits += r.commits;
        t.seconds += r.seconds;
        t.bytes_written = t
            .bytes_written
            .or(Some(0))
            .zip(r.bytes_written)
            .map(|(a, b)| a + b);
    };
    for (round, n) in [(1u64, first), (2, second)] {
        let tip = chain_tip(&mdbx_db)?;
        if chain_tip(&hybrid)? != tip {
            bail!("the two datadirs' tips differ before persisting");
        }
        let spec = half(round, n);
        if round == 1 {
            add(0, persist_blocks(&mdbx_db, &tip, &spec)?);
            add(1, persist_hybrid(&hybrid, &tip, &spec)?);
        } else {
            add(1, persist_hybrid(&hybrid, &tip, &spec)?);
            add(0, persist_blocks(&mdbx_db, &tip, &spec)?);
        }
    }
    Ok((total[0], total[1]))
}

/// [`persist_blocks`] on the hybrid, with RocksDB's memtable flushed into its files inside the
/// measurement: bytes still in memory would flatter it.
fn persist_hybrid(
    db: &TypedDatabase<HybridDb<MdbxEngine, RocksEngine>>,
    tip: &reth_hybrid_bench::persist::ChainTip,
    spec: &PersistSpec,
) -> eyre::Result<PersistReport> {
    let before = reth_hybrid_bench::persist::process_write_bytes();
    let started = Instant::now();
    let mut report = persist_blocks(db, tip, spec)?;
    db.engine().follower().flush()?;
    report.seconds = started.elapsed().as_secs_f64();
    report.bytes_written = before
        .zip(reth_hybrid_bench::persist::process_write_bytes())
        .map(|(b, a)| a.saturating_sub(b));
    Ok(report)
}

/// Bytes the tx-hash and history tables take in either engine.
fn routed_table_bytes(datadir: &Path) -> eyre::Result<u64> {
    let s = stats(datadir, true)?;
    Ok(s.tables
        .iter()
        .filter(|t| {
            [
                Tables::TransactionHashNumbers,
                Tables::AccountsHistory,
                Tables::StoragesHistory,
            ]
            .contains(&t.table)
        })
        .map(|t| t.mdbx_bytes + t.rocksdb_bytes)
        .sum())
}

fn copy_datadir(from: &Path, to: &Path) -> eyre::Result<()> {
    std::fs::create_dir_all(to.join("db"))?;
    for name in ["mdbx.dat", "database.version"] {
        std::fs::copy(from.join("db").join(name), to.join("db").join(name))
            .wrap_err_with(|| format!("copying {name}"))?;
    }
    Ok(())
}

/// Per table: (name, rows, digest) of every row, for the round-trip check.
fn digests(datadir: &Path) -> eyre::Result<Vec<(Tables, u64, u128)>> {
    let mdbx = MdbxEngine::open_read_only(datadir)?;
    let tx = mdbx.begin_ro()?;
    let mut out = Vec::new();
    for table in Tables::ALL {
        let mut d = reth_hybrid_migrate::TableDigest::default();
        let mut c = tx.cursor(table)?;
        let mut next = c.first()?;
        while let Some((k, v)) = next {
            if !(table == Tables::Metadata && k.starts_with(b"reth_hybrid.")) {
                d.add(&k, &v);
            }
            next = c.next()?;
        }
        out.push((table, d.rows, d.sum));
    }
    Ok(out)
}

type Times = (f64, f64);
/// What each lookup returned (tx number, or the history shard's highest block).
type Answers = Vec<Option<u64>>;

/// Mean microseconds per lookup on both datadirs, after checking both give the same answers.
fn compare_lookups(baseline: &Path, hybrid_dir: &Path, n: usize) -> eyre::Result<(Times, Times)> {
    let mdbx_db = TypedDatabase::new(MdbxEngine::open(baseline, MdbxOptions::read_write())?);
    let hybrid_db = open_hybrid(hybrid_dir)?;

    // Keys: every k-th tx hash, and account-history seeks at blocks spread over the chain.
    let (hashes, accounts) = {
        let tx = mdbx_db.tx()?;
        let mut hashes = Vec::new();
        let mut c = tx.cursor_read::<TransactionHashNumbers>()?;
        let mut next = c.first()?;
        while let Some((h, _)) = next {
            hashes.push(h);
            next = c.next()?;
        }
        let mut accounts = Vec::new();
        let mut c = tx.cursor_read::<AccountsHistory>()?;
        let mut next = c.first()?;
        while let Some((k, _)) = next {
            accounts.push(k.key);
            next = c.next()?;
        }
        (hashes, accounts)
    };
    if hashes.is_empty() || accounts.is_empty() {
        bail!("the generated datadir has no transactions or history");
    }
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move |m: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % m as u64) as usize
    };
    let hash_keys: Vec<_> = (0..n).map(|_| hashes[rand(hashes.len())]).collect();
    let seeks: Vec<_> = (0..n)
        .map(|_| ShardedKey::new(accounts[rand(accounts.len())], rand(10_000) as u64))
        .collect();

    fn measure<D: Database>(
        db: &D,
        hash_keys: &[alloy_primitives::B256],
        seeks: &[ShardedKey<alloy_primitives::Address>],
    ) -> eyre::Result<(Times, Answers, Answers)> {
        let tx = db.tx()?;
        let t = Instant::now();
        let numbers: Vec<Option<u64>> = hash_keys
            .iter()
            .map(|h| tx.get::<TransactionHashNumbers>(*h))
            .collect::<Result<_, _>>()?;
        let hash_us = t.elapsed().as_secs_f64() * 1e6 / hash_keys.len() as f64;
        let mut cursor = tx.cursor_read::<AccountsHistory>()?;
        let t = Instant::now();
        let mut shards = Vec::with_capacity(seeks.len());
        for key in seeks {
            shards.push(cursor.seek(*key)?.map(|(k, _)| k.highest_block_number));
        }
        let seek_us = t.elapsed().as_secs_f64() * 1e6 / seeks.len() as f64;
        Ok(((hash_us, seek_us), numbers, shards))
    }
    // One warm-up pass each, then the measured pass.
    measure(&mdbx_db, &hash_keys, &seeks)?;
    measure(&hybrid_db, &hash_keys, &seeks)?;
    let (m, m_numbers, m_shards) = measure(&mdbx_db, &hash_keys, &seeks)?;
    let (h, h_numbers, h_shards) = measure(&hybrid_db, &hash_keys, &seeks)?;
    if m_numbers != h_numbers || m_shards != h_shards {
        bail!("the hybrid answered a lookup differently from MDBX");
    }
    Ok((m, h))
}
