//! `reth-hybrid-e2e`: the tools of the end-to-end check (`make e2e`, scripts/e2e) and of the node
//! benchmark (`make bench-reth`, scripts/bench-reth).
//!
//! - `load`: deterministic, pre-signed transactions from reth's dev accounts into a `--dev` node:
//!   transfers to fresh accounts and writes to fresh storage slots of a contract it deploys.
//!   Resumable: nonces come from the node, recipients and slots from (seed, sender, nonce).
//! - `chain`: a benchmark chain of full blocks, made by a `--chain dev` node through the engine
//!   API from transactions chosen here, deterministic by seed (`make bench-reth`).
//! - `export`: the node's canonical blocks 1..=head as an RLP chain file (`reth import` reads it).
//! - `rpc-samples`, `rpc-latency`: RPC read latency on a replayed datadir, hybrid vs stock
//!   (`make bench-reth`; `reth-hybrid bench rpc-report` sets the runs side by side).
//! - `state-dump`: reth's `init-state` dump file from `db list --json` of the plain state tables.
//! - `wait`: until a node answers RPC (and reaches a head); `scrape`: its Prometheus endpoint.
//! - `clear-memory`: `stage drop tx-lookup` of millions of rows under a memory limit.
//! - `adopt-check`: a v2 datadir adopted equals its v1 twin migrated, and answers as before.
//! - `check`: two nodes on the same chain answer alike: every block hash, every canonical
//!   transaction by hash, and sampled historical balances, nonces and storage slots.

mod adopt_check;
mod chain;
mod check;
mod clear_memory;
mod engine;
mod export;
mod load;
mod node;
mod rpc;
mod rpc_attribution;
mod rpc_bench;
mod state_dump;

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
    /// A benchmark chain built through the engine API, deterministic by seed.
    Chain(chain::Args),
    Export(export::Args),
    Check(check::Args),
    Wait(node::WaitArgs),
    /// Pick RPC reads (tx by hash, historical balance and storage) from a node holding the chain.
    RpcSamples(rpc_bench::SamplesArgs),
    /// Time those reads against a node under test, checking every answer.
    RpcLatency(rpc_bench::LatencyArgs),
    /// Where a hybrid node's time for those reads goes: its database time and RocksDB's work per
    /// call, read from its `--metrics` endpoint kind by kind.
    RpcAttribution(rpc_attribution::AttributionArgs),
    Scrape(node::ScrapeArgs),
    /// A state dump for reth's `init-state`, from `db list --json` of the plain state tables.
    StateDump(state_dump::Args),
    /// `stage drop tx-lookup` of a large tx-hash index under a memory limit.
    ClearMemory(clear_memory::Args),
    /// One chain imported in v1 (then migrated) and in v2 (then adopted): equal tables, equal answers.
    AdoptCheck(adopt_check::Args),
}

#[tokio::main]
async fn main() -> eyre::Result<()> {
    match Cli::parse().command {
        Command::Load(args) => load::run(args).await,
        Command::Chain(args) => chain::run(args).await,
        Command::Export(args) => export::run(args).await,
        Command::Check(args) => check::run(args).await,
        Command::Wait(args) => node::wait(args).await,
        Command::RpcSamples(args) => rpc_bench::samples(args).await,
        Command::RpcLatency(args) => rpc_bench::latency(args).await,
        Command::RpcAttribution(args) => rpc_attribution::run(args).await,
        Command::Scrape(args) => node::scrape(args).await,
        Command::StateDump(args) => state_dump::run(args),
        Command::ClearMemory(args) => clear_memory::run(args),
        Command::AdoptCheck(args) => adopt_check::run(args).await,
    }
}
