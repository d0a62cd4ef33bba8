//! `reth-hybrid`: the command line of reth-hybrid.

use clap::{Parser, Subcommand};

mod tables_cmd;

#[derive(Debug, Parser)]
#[command(
    name = "reth-hybrid",
    version,
    about = "Hybrid MDBX + RocksDB storage for reth: table catalogue, migration and datadir tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the table catalogue: name, dupsort, key, value, default engine.
    Tables(tables_cmd::TablesArgs),
}

fn main() -> eyre::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Tables(args) => tables_cmd::run(&args, &mut std::io::stdout().lock()),
    }
}
