//! Watching a node from the e2e script (which assumes no curl): wait for its RPC, read its
//! Prometheus endpoint.

use crate::rpc::Rpc;
use eyre::{Context, bail, ensure};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct WaitArgs {
    #[arg(long)]
    rpc: String,
    /// Also wait until the head reaches this block.
    #[arg(long, default_value_t = 0)]
    min_head: u64,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 180)]
    timeout_secs: u64,
}

impl WaitArgs {
    /// Until `rpc` answers, within the default timeout.
    pub fn new(rpc: &str) -> Self {
        Self {
            rpc: rpc.to_string(),
            min_head: 0,
            timeout_secs: 180,
        }
    }
}

/// Waits for the node's RPC to answer (and its head to reach `--min-head`); prints the head.
pub async fn wait(args: WaitArgs) -> eyre::Result<()> {
    let rpc = Rpc::new(&args.rpc)?;
    let started = Instant::now();
    let mut last_error: String;
    loop {
        match rpc.block_number().await {
            Ok(head) if head >= args.min_head => {
                println!("{head}");
                return Ok(());
            }
            Ok(head) => last_error = format!("head {head}, waiting for {}", args.min_head),
            Err(e) => last_error = format!("{e:#}"),
        }
        if started.elapsed() > Duration::from_secs(args.timeout_secs) {
            bail!(
                "{} not ready after {}s: {last_error}",
                args.rpc,
                args.timeout_secs
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[derive(clap::Args)]
pub struct ScrapeArgs {
    /// The node's metrics endpoint (`--metrics <addr>`), e.g. http://127.0.0.1:9001/metrics.
    #[arg(long)]
    url: String,
    /// Text that samples must contain (a name prefix, a label), each in at least one sample.
    #[arg(long = "expect", required = true)]
    expect: Vec<String>,
}

/// Reads the endpoint once and counts the samples containing each expected text; fails if one
/// has none.
pub async fn scrape(args: ScrapeArgs) -> eyre::Result<()> {
    let body = reqwest::get(&args.url)
        .await
        .and_then(|r| r.error_for_status())
        .wrap_err_with(|| format!("GET {}", args.url))?
        .text()
        .await
        .wrap_err("reading the metrics")?;
    let samples: Vec<&str> = body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    let mut counts = Vec::new();
    for prefix in &args.expect {
        let n = samples
            .iter()
            .filter(|l| l.contains(prefix.as_str()))
            .count();
        counts.push(format!("{prefix}: {n}"));
        ensure!(
            n > 0,
            "{} has no sample containing {prefix} ({} samples in all)",
            args.url,
            samples.len()
        );
    }
    println!("scrape: {} samples; {}", samples.len(), counts.join(", "));
    Ok(())
}
