//! `reth-hybrid-e2e`: the tools of the end-to-end check (`make e2e`, scripts/e2e).
//!
//! - `load`: deterministic, pre-signed transactions from reth's dev accounts into a `--dev` node:
//!   transfers to fresh accounts and writes to fresh storage slots of a contract it deploys.
//!   Resumable: nonces come from the node, recipients and slots from (seed, sender, nonce).
//! - `export`: the node's canonical blocks 1..=head as an RLP chain file (`reth import` reads it).
//! - `wait`: until a node answers RPC (and reaches a head); `scrape`: its Prometheus endpoint.
//! - `check`: two nodes on the same chain answer alike: every block hash, every canonical
//!   transaction by hash, and sampled historical balances, nonces and storage slots.

mod check;
mod export;
mod load;
mod node;
mod rpc;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Load(load::Args),
    Export(export::Args),
    Check(check::Args),
    Wait(node::WaitArgs),
    Scrape(node::ScrapeArgs),
}

#[tokio::main]
async fn main() -> eyre::Result<()> {
    match Cli::parse().command {
        Command::Load(args) => load::run(args).await,
        Command::Export(args) => export::run(args).await,
        Command::Check(args) => check::run(args).await,
        Command::Wait(args) => node::wait(args).await,
        Command::Scrape(args) => node::scrape(args).await,
    }
}
