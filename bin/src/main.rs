//! `reth-hybrid`: the command line of reth-hybrid.

use clap::{Parser, Subcommand};

mod bench_cmd;
mod demo_cmd;
mod generate_cmd;
mod layout_cmd;
mod migrate_cmd;
mod progress;
mod report;
mod stats_cmd;
mod tables_cmd;
mod verify_cmd;

#[derive(Debug, Parser)]
#[command(
    name = "reth-hybrid",
    version,
    about = "Hybrid MDBX + RocksDB storage for reth: table catalogue, migration and datadir tools"
)]
struct Cli {
    /// Serve Prometheus metrics (operations, commit phases, engine gauges) on this address,
    /// e.g. 127.0.0.1:9001, for as long as the command runs.
    #[arg(long, global = true, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,

    /// On an error, also print where in reth-hybrid it was raised (as RUST_BACKTRACE=1 does).
    #[arg(short, long, global = true)]
    verbose: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the table catalogue: name, dupsort, key, value, default engine.
    Tables(tables_cmd::TablesArgs),
    /// Write a synthetic reth v1-layout datadir (deterministic per seed) into a new folder.
    Generate(generate_cmd::GenerateArgs),
    /// Show which engine holds each table of a datadir, or route an empty table.
    #[command(subcommand)]
    Layout(layout_cmd::LayoutCommand),
    /// Move tables between MDBX and RocksDB: verified, resumable, reversible.
    Migrate(migrate_cmd::MigrateArgs),
    /// Per table: engine, entries and bytes on disk; totals per engine.
    Stats(stats_cmd::StatsArgs),
    /// Check a datadir: layout, placement, recovery state, every row decoded and checksummed.
    /// Exit code 0: passed; 1: a check failed.
    Verify(verify_cmd::VerifyArgs),
    /// Generate a small datadir, migrate it, verify, compare lookups, roll back.
    Demo(demo_cmd::DemoArgs),
    /// reth-bench wrapper: preflight, interleaved runs, comparison with confidence intervals.
    #[command(subcommand)]
    Bench(bench_cmd::BenchCommand),
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let internals = report::wants_internals(cli.verbose);
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{}", report::render(&err, internals));
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> eyre::Result<()> {
    if let Some(addr) = cli.metrics {
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .with_http_listener(addr)
            .install()
            .map_err(|e| eyre::eyre!("cannot serve metrics on {addr}: {e}"))?;
        reth_hybrid_hybrid::metrics::enable();
        tracing::info!(%addr, "serving Prometheus metrics");
    }
    match cli.command {
        Command::Tables(args) => tables_cmd::run(&args, &mut std::io::stdout().lock()),
        Command::Generate(args) => generate_cmd::run(&args, &mut std::io::stdout().lock()),
        Command::Layout(cmd) => layout_cmd::run(&cmd, &mut std::io::stdout().lock()),
        Command::Migrate(args) => migrate_cmd::run(&args, &mut std::io::stdout().lock()),
        Command::Stats(args) => stats_cmd::run(&args, &mut std::io::stdout().lock()),
        Command::Verify(args) => {
            if !verify_cmd::run(&args, &mut std::io::stdout().lock())? {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Demo(args) => demo_cmd::run(&args, &mut std::io::stdout().lock()),
        Command::Bench(cmd) => bench_cmd::run_command(&cmd, &mut std::io::stdout().lock()),
    }
}
