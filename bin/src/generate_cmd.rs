//! `reth-hybrid generate`: a synthetic reth v1-layout datadir, for tests, demos and benchmarks.

use eyre::{WrapErr, bail};
use reth_hybrid_api::typed::TypedDatabase;
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{GenerateSpec, generate_with_progress};
use std::{io::Write, path::PathBuf, time::Instant};

#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// Folder to create the datadir in; must not already hold a database.
    #[arg(long)]
    datadir: PathBuf,
    /// Size: 1 is 100 blocks of 8 transactions (a few MB); rows grow linearly.
    #[arg(long, default_value_t = 1)]
    scale: u64,
    /// Same seed, same datadir.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Transactions per block (raise it for a tx-hash-heavy benchmark datadir).
    #[arg(long, default_value_t = 8)]
    txs_per_block: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &GenerateArgs, out: &mut impl Write) -> eyre::Result<()> {
    let existing = args.datadir.join("db").join("mdbx.dat");
    if existing.exists() {
        bail!(
            "{} already holds a database; generate writes only into a new datadir (choose another --datadir)",
            args.datadir.display()
        );
    }
    let started = Instant::now();
    let engine = MdbxEngine::open(
        &args.datadir,
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )
    .wrap_err_with(|| format!("creating a datadir in {}", args.datadir.display()))?;
    let bars = crate::progress::Bars::new(args.json);
    let report = generate_with_progress(
        &TypedDatabase::new(engine),
        &GenerateSpec {
            txs_per_block: args.txs_per_block.max(1),
            ..GenerateSpec::new(args.scale, args.seed)
        },
        &bars,
    )
    .wrap_err("writing the synthetic datadir")?;
    let secs = started.elapsed().as_secs_f64();
    if args.json {
        let json = serde_json::json!({
            "datadir": args.datadir,
            "scale": args.scale,
            "seed": args.seed,
            "blocks": report.blocks,
            "transactions": report.transactions,
            "accounts": report.accounts,
            "storage_slots": report.storage_slots,
            "account_history_shards": report.account_history_shards,
            "storage_history_shards": report.storage_history_shards,
            "seconds": secs,
        });
        writeln!(out, "{json}")?;
    } else {
        writeln!(
            out,
            "generated {} (reth v1 layout, all tables in MDBX): {} blocks, {} transactions, {} accounts, \
             {} storage slots, {} account + {} storage history shards in {secs:.1}s",
            args.datadir.display(),
            report.blocks,
            report.transactions,
            report.accounts,
            report.storage_slots,
            report.account_history_shards,
            report.storage_history_shards,
        )?;
    }
    Ok(())
}
