//! Where a hybrid node's RPC time goes: the samples of `rpc-samples`, one kind of call at a time,
//! against a node started with `--metrics`, reading its Prometheus endpoint between kinds. Per
//! kind and pass (cold: first calls after the start; warm: the second pass), per call: the time
//! spent inside reth-hybrid's database operations by engine, the operations themselves, and
//! RocksDB's own work (row and block cache hits and misses by block kind, filter checks, table
//! files opened, iterator seeks) from the node's stats thread.
//!
//! The node records every operation's time here, which costs it a little: these latencies are
//! for setting the work beside, not for comparing variants (`rpc-latency` runs without
//! `--metrics`). Background work (a flush or compaction during a kind) is counted with the kind
//! it overlapped; the compactions-running gauge is sampled to show it.

use crate::{
    rpc::Rpc,
    rpc_bench::{KINDS, Sample},
};
use eyre::{Context, ensure};
use serde::Serialize;
use serde_json::Value;
use std::{
    collections::BTreeMap,
    path::PathBuf,
    time::{Duration, Instant},
};

/// Longer than the node's stats interval (1 s), so a scrape after it sees every call before it.
const SETTLE: Duration = Duration::from_millis(1_300);

#[derive(clap::Args)]
pub struct AttributionArgs {
    /// The node under test (reth-hybrid-node on the hybrid, with `--metrics`).
    #[arg(long)]
    rpc: String,
    /// Its metrics endpoint, e.g. http://127.0.0.1:9001/metrics.
    #[arg(long)]
    metrics: String,
    #[arg(long)]
    samples: PathBuf,
    /// Names the variant in the result.
    #[arg(long)]
    label: String,
    /// The result (JSON), read by `reth-hybrid bench rpc-report --attribution`.
    #[arg(long)]
    out: PathBuf,
}

/// One kind of call in one pass.
#[derive(Debug, Default, Serialize)]
struct KindWork {
    calls: usize,
    /// Every call's latency in microseconds.
    latencies_us: Vec<f64>,
    /// Seconds inside reth-hybrid's timed operations, by engine (`mdbx`, `rocksdb`).
    db_seconds: BTreeMap<String, f64>,
    /// Operations by `table engine op` (cursor steps included: counted, not timed).
    operations: BTreeMap<String, f64>,
    /// RocksDB's tickers (`reth_hybrid_rocksdb_<name>_total`), by `<name>`.
    rocksdb: BTreeMap<String, f64>,
    /// Highest compactions-running gauge seen at the scrapes around this kind.
    compactions_running: f64,
}

#[derive(Debug, Serialize)]
struct Attribution {
    label: String,
    /// `cold`, then `warm`: per kind.
    passes: BTreeMap<String, BTreeMap<String, KindWork>>,
}

pub async fn run(args: AttributionArgs) -> eyre::Result<()> {
    let rpc = Rpc::new(&args.rpc)?;
    let samples: Vec<Sample> = serde_json::from_slice(
        &std::fs::read(&args.samples)
            .wrap_err_with(|| format!("reading {}", args.samples.display()))?,
    )
    .wrap_err("parsing the samples")?;
    let mut before = wait_for_stats(&args.metrics).await?;
    let mut out = Attribution {
        label: args.label.clone(),
        passes: BTreeMap::new(),
    };
    for pass in ["cold", "warm"] {
        let mut kinds = BTreeMap::new();
        for (kind, _) in KINDS {
            let of_kind: Vec<&Sample> = samples.iter().filter(|s| s.kind() == kind).collect();
            if of_kind.is_empty() {
                continue;
            }
            let mut work = KindWork::default();
            for sample in of_kind {
                let started = Instant::now();
                let answer = rpc.call(&sample.method, sample.params.clone()).await?;
                work.latencies_us
                    .push(started.elapsed().as_secs_f64() * 1e6);
                if let Err(recorded) = sample.check(&answer) {
                    eyre::bail!(
                        "{} {} on {}: not the answer recorded ({recorded})",
                        sample.method,
                        Value::Array(sample.params.clone()),
                        rpc.url()
                    );
                }
                work.calls += 1;
            }
            tokio::time::sleep(SETTLE).await;
            let after = scrape(&args.metrics).await?;
            after.fill_delta(&before, &mut work);
            before = after;
            kinds.insert(kind.to_string(), work);
        }
        out.passes.insert(pass.to_string(), kinds);
    }
    std::fs::write(&args.out, serde_json::to_vec_pretty(&out)?)
        .wrap_err_with(|| format!("writing {}", args.out.display()))?;
    let warm = &out.passes["warm"];
    let line: Vec<String> = warm
        .iter()
        .map(|(kind, w)| {
            let calls = w.calls.max(1) as f64;
            format!(
                "{kind} {:.0} µs in RocksDB, {:.0} µs in MDBX a call",
                w.db_seconds.get("rocksdb").copied().unwrap_or(0.0) * 1e6 / calls,
                w.db_seconds.get("mdbx").copied().unwrap_or(0.0) * 1e6 / calls
            )
        })
        .collect();
    println!("rpc-attribution {} (warm): {}", args.label, line.join("; "));
    Ok(())
}

/// Scrapes until the node's stats thread has published (it starts with the node).
async fn wait_for_stats(url: &str) -> eyre::Result<Scrape> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match scrape(url).await {
            Ok(s) if s.rocksdb.contains_key("iterator_seeks") => {
                tokio::time::sleep(SETTLE).await;
                return scrape(url).await;
            }
            Ok(_) | Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(250)).await
            }
            Ok(_) => eyre::bail!(
                "{url} shows no reth_hybrid_rocksdb_iterator_seeks_total after 60 s: start \
                 reth-hybrid-node-hybrid with --metrics (the stock build has no such stats)"
            ),
            Err(e) => return Err(e),
        }
    }
}

/// The series this tool reads, from one scrape.
#[derive(Debug, Default)]
struct Scrape {
    rocksdb: BTreeMap<String, f64>,
    /// `reth_hybrid_operation_seconds_sum` by `table engine op`.
    op_seconds: BTreeMap<String, f64>,
    /// `reth_hybrid_operations_total` by `table engine op`.
    ops: BTreeMap<String, f64>,
    compactions_running: f64,
}

impl Scrape {
    fn parse(body: &str) -> Self {
        let mut out = Self::default();
        for line in body.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            if let Some(ticker) = name
                .strip_prefix("reth_hybrid_rocksdb_")
                .and_then(|n| n.strip_suffix("_total"))
            {
                out.rocksdb.insert(ticker.to_string(), value);
            } else if name == "reth_hybrid_rocksdb_running_compactions" {
                out.compactions_running = value;
            } else if name == "reth_hybrid_operation_seconds_sum" {
                out.op_seconds.insert(operation_key(labels), value);
            } else if name == "reth_hybrid_operations_total" {
                out.ops.insert(operation_key(labels), value);
            }
        }
        out
    }

    /// `self - before` into `work`.
    fn fill_delta(&self, before: &Scrape, work: &mut KindWork) {
        let delta = |now: &BTreeMap<String, f64>, then: &BTreeMap<String, f64>| {
            now.iter()
                .map(|(k, v)| (k.clone(), v - then.get(k).copied().unwrap_or(0.0)))
                .filter(|(_, d)| *d > 0.0)
                .collect::<BTreeMap<_, _>>()
        };
        work.rocksdb = delta(&self.rocksdb, &before.rocksdb);
        work.operations = delta(&self.ops, &before.ops);
        for (key, seconds) in delta(&self.op_seconds, &before.op_seconds) {
            let engine = key.split(' ').nth(1).unwrap_or("?").to_string();
            *work.db_seconds.entry(engine).or_default() += seconds;
        }
        work.compactions_running = self.compactions_running.max(before.compactions_running);
    }
}

/// `table engine op` from a series' labels, whatever their order.
fn operation_key(labels: &str) -> String {
    let label = |name: &str| {
        labels
            .split(',')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix("=\""))
            .map(|v| v.trim_end_matches('"'))
            .unwrap_or("?")
    };
    format!("{} {} {}", label("table"), label("engine"), label("op"))
}

async fn scrape(url: &str) -> eyre::Result<Scrape> {
    let body = reqwest::get(url)
        .await
        .and_then(|r| r.error_for_status())
        .wrap_err_with(|| format!("GET {url}"))?
        .text()
        .await
        .wrap_err("reading the metrics")?;
    let scrape = Scrape::parse(&body);
    ensure!(
        !body.is_empty(),
        "{url} answered with no metrics at all: is it the node's --metrics address?"
    );
    Ok(scrape)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exporter's text format as reth's node serves it: counters, a summary's `_sum`, gauges.
    #[test]
    fn a_scrape_reads_tickers_operation_time_and_compactions() {
        let before = Scrape::parse(
            "# TYPE reth_hybrid_rocksdb_block_cache_data_miss_total counter\n\
             reth_hybrid_rocksdb_block_cache_data_miss_total{engine=\"rocksdb\"} 10\n\
             reth_hybrid_operation_seconds_sum{table=\"AccountsHistory\",engine=\"rocksdb\",op=\"seek\"} 0.5\n\
             reth_hybrid_operations_total{table=\"AccountsHistory\",engine=\"rocksdb\",op=\"seek\"} 100\n",
        );
        let after = Scrape::parse(
            "reth_hybrid_rocksdb_block_cache_data_miss_total{engine=\"rocksdb\"} 16\n\
             reth_hybrid_rocksdb_iterator_seeks_total{engine=\"rocksdb\"} 3\n\
             reth_hybrid_rocksdb_running_compactions{engine=\"rocksdb\"} 1\n\
             reth_hybrid_operation_seconds{table=\"AccountsHistory\",engine=\"rocksdb\",op=\"seek\",quantile=\"0.5\"} 0.001\n\
             reth_hybrid_operation_seconds_sum{table=\"AccountsHistory\",engine=\"rocksdb\",op=\"seek\"} 0.75\n\
             reth_hybrid_operation_seconds_sum{engine=\"mdbx\",table=\"PlainAccountState\",op=\"get\"} 0.125\n\
             reth_hybrid_operations_total{table=\"AccountsHistory\",engine=\"rocksdb\",op=\"seek\"} 130\n",
        );
        let mut work = KindWork::default();
        after.fill_delta(&before, &mut work);
        assert_eq!(work.rocksdb.get("block_cache_data_miss"), Some(&6.0));
        assert_eq!(work.rocksdb.get("iterator_seeks"), Some(&3.0));
        assert_eq!(work.db_seconds.get("rocksdb"), Some(&0.25));
        assert_eq!(work.db_seconds.get("mdbx"), Some(&0.125));
        assert_eq!(
            work.operations.get("AccountsHistory rocksdb seek"),
            Some(&30.0)
        );
        assert_eq!(work.compactions_running, 1.0);
    }
}
