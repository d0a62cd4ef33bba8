//! RPC latency on a replayed datadir, the reads an operator's users make: transactions by hash
//! (the tx-hash index) and balances and token storage at random historical blocks (the history
//! indices, reth's `HistoricalStateProvider`).
//!
//! - `rpc-samples` picks the calls once, from a node holding the chain, and records each answer;
//! - `rpc-latency` times every call, one at a time, against a node under test, after one untimed
//!   pass (connection and caches warm), and checks each answer against the recorded one;
//! - `rpc-report` sets the runs of two variants side by side (p50, p90, p99 and their ratios).

use crate::rpc::{Rpc, hex};
use eyre::{Context, ensure, eyre};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::{collections::BTreeMap, path::PathBuf, time::Instant};

/// The kinds of call, in report order.
const KINDS: [&str; 3] = [
    "eth_getTransactionByHash",
    "eth_getBalance",
    "eth_getStorageAt",
];

#[derive(Debug, Serialize, Deserialize)]
struct Sample {
    method: String,
    params: Vec<Value>,
    answer: Value,
}

#[derive(clap::Args)]
pub struct SamplesArgs {
    /// A node holding the chain (not under test).
    #[arg(long)]
    rpc: String,
    /// Calls of each kind.
    #[arg(long, default_value_t = 2000)]
    count: usize,
    #[arg(long, default_value_t = 11)]
    seed: u64,
    /// The token contract whose storage is sampled (its holders' slots); default: the one a
    /// `chain` deploys.
    #[arg(long)]
    token: Option<String>,
    #[arg(long)]
    out: PathBuf,
}

/// Picks `count` calls of each kind over blocks 1..=head: a random transaction's hash; the
/// recipient of a random transfer, or a random token holder's slot, read at a random block at
/// or after the one that wrote it (history, not the head's state).
pub async fn samples(args: SamplesArgs) -> eyre::Result<()> {
    let rpc = Rpc::new(&args.rpc)?;
    let head = rpc.block_number().await?;
    ensure!(
        head > 1,
        "{} has no chain to sample (head {head})",
        rpc.url()
    );
    let token = match &args.token {
        Some(t) => t.to_lowercase(),
        None => crate::chain::token_address()?.to_string().to_lowercase(),
    };
    let mut rng = StdRng::seed_from_u64(args.seed);
    let (mut hashes, mut balances, mut slots) = (Vec::new(), Vec::new(), Vec::new());
    while hashes.len() < args.count || balances.len() < args.count || slots.len() < args.count {
        let blocks: Vec<u64> = (0..crate::rpc::BATCH)
            .map(|_| rng.random_range(1..=head))
            .collect();
        let full = rpc
            .batch_ok(
                "eth_getBlockByNumber",
                blocks.iter().map(|b| vec![hex(*b), json!(true)]),
            )
            .await?;
        for (block, body) in blocks.iter().zip(&full) {
            let txs = body
                .get("transactions")
                .and_then(Value::as_array)
                .ok_or_else(|| eyre!("block {block} without transactions: {body}"))?;
            if txs.is_empty() {
                continue;
            }
            let tx = &txs[rng.random_range(0..txs.len())];
            let hash = tx.get("hash").cloned().unwrap_or(Value::Null);
            let to = tx
                .get("to")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_lowercase();
            let at = hex(rng.random_range(*block..=head));
            if hashes.len() < args.count {
                hashes.push(("eth_getTransactionByHash", vec![hash]));
            }
            if to == token && slots.len() < args.count {
                let input = tx.get("input").and_then(Value::as_str).unwrap_or("");
                // calldata[0..32] is the holder, left-padded: the slot of its balance.
                if input.len() >= 2 + 64 {
                    let slot = format!("0x{}", &input[2..66]);
                    slots.push(("eth_getStorageAt", vec![json!(token), json!(slot), at]));
                }
            } else if !to.is_empty() && to != token && balances.len() < args.count {
                balances.push(("eth_getBalance", vec![json!(to), at]));
            }
        }
    }
    let mut out = Vec::new();
    for calls in [hashes, balances, slots] {
        let method = calls[0].0;
        let answers = rpc
            .batch_ok(method, calls.iter().map(|(_, p)| p.clone()))
            .await?;
        for ((method, params), answer) in calls.into_iter().zip(answers) {
            out.push(Sample {
                method: method.to_string(),
                params,
                answer,
            });
        }
    }
    let non_zero = out
        .iter()
        .filter(|s| s.method != KINDS[0] && !is_zero(&s.answer))
        .count();
    std::fs::write(&args.out, serde_json::to_vec(&out)?)
        .wrap_err_with(|| format!("writing {}", args.out.display()))?;
    println!(
        "rpc-samples: {} calls ({} per kind) over blocks 1..={head}, {non_zero} historical reads \
         non-zero, to {}",
        out.len(),
        args.count,
        args.out.display()
    );
    Ok(())
}

fn is_zero(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        s.trim_start_matches("0x")
            .trim_start_matches('0')
            .is_empty()
    })
}

#[derive(clap::Args)]
pub struct LatencyArgs {
    /// The node under test.
    #[arg(long)]
    rpc: String,
    #[arg(long)]
    samples: PathBuf,
    /// Names the variant in the result.
    #[arg(long)]
    label: String,
    /// The result (JSON).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Debug, Serialize, Deserialize)]
struct LatencyRun {
    label: String,
    /// Per kind: every call's latency in microseconds, in sample order.
    latencies_us: BTreeMap<String, Vec<f64>>,
}

/// Times each sample (one call at a time) after an untimed pass; every answer must equal the
/// recorded one.
pub async fn latency(args: LatencyArgs) -> eyre::Result<()> {
    let rpc = Rpc::new(&args.rpc)?;
    let samples: Vec<Sample> = serde_json::from_slice(
        &std::fs::read(&args.samples)
            .wrap_err_with(|| format!("reading {}", args.samples.display()))?,
    )
    .wrap_err("parsing the samples")?;
    let mut run = LatencyRun {
        label: args.label.clone(),
        latencies_us: BTreeMap::new(),
    };
    for timed in [false, true] {
        for sample in &samples {
            let started = Instant::now();
            let answer = rpc.call(&sample.method, sample.params.clone()).await?;
            let took = started.elapsed().as_secs_f64() * 1e6;
            ensure!(
                answer == sample.answer,
                "{} {} on {}: {answer}, the chain's node answered {}",
                sample.method,
                Value::Array(sample.params.clone()),
                rpc.url(),
                sample.answer
            );
            if timed {
                run.latencies_us
                    .entry(sample.method.clone())
                    .or_default()
                    .push(took);
            }
        }
    }
    std::fs::write(&args.out, serde_json::to_vec(&run)?)
        .wrap_err_with(|| format!("writing {}", args.out.display()))?;
    let line: Vec<String> = KINDS
        .iter()
        .filter_map(|k| {
            let v = run.latencies_us.get(*k)?;
            Some(format!("{k} p50 {:.0} µs", percentile(v, 50.0)))
        })
        .collect();
    println!(
        "rpc-latency {}: {} calls, answers as recorded; {}",
        args.label,
        samples.len(),
        line.join(", ")
    );
    Ok(())
}

/// Nearest-rank percentile (as reth's summary scripts).
fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((sorted.len() as f64 * p / 100.0) as usize).min(sorted.len() - 1);
    sorted[rank]
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// `rpc-latency` results of the baseline (one per run).
    #[arg(long, num_args = 1.., required = true)]
    baseline: Vec<PathBuf>,
    #[arg(long, num_args = 1.., required = true)]
    candidate: Vec<PathBuf>,
    /// Also write the table (Markdown) and the numbers (JSON, `<out>.json`) here.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn pooled(files: &[PathBuf]) -> eyre::Result<(String, BTreeMap<String, Vec<f64>>)> {
    let mut label = String::new();
    let mut all: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for f in files {
        let run: LatencyRun = serde_json::from_slice(
            &std::fs::read(f).wrap_err_with(|| format!("reading {}", f.display()))?,
        )
        .wrap_err_with(|| format!("parsing {}", f.display()))?;
        label = run.label;
        for (k, v) in run.latencies_us {
            all.entry(k).or_default().extend(v);
        }
    }
    Ok((label, all))
}

/// Both variants' percentiles per kind (runs pooled) and candidate/baseline ratios.
pub fn report(args: ReportArgs) -> eyre::Result<()> {
    let (base_label, base) = pooled(&args.baseline)?;
    let (cand_label, cand) = pooled(&args.candidate)?;
    let mut md = format!(
        "| RPC call | {base_label} p50 | {cand_label} p50 | ratio p50 | {base_label} p99 | \
         {cand_label} p99 | ratio p99 |\n|---|---:|---:|---:|---:|---:|---:|\n"
    );
    let mut numbers = serde_json::Map::new();
    for kind in KINDS {
        let (Some(b), Some(c)) = (base.get(kind), cand.get(kind)) else {
            continue;
        };
        let [b50, b90, b99] = [50.0, 90.0, 99.0].map(|p| percentile(b, p));
        let [c50, c90, c99] = [50.0, 90.0, 99.0].map(|p| percentile(c, p));
        md.push_str(&format!(
            "| `{kind}` | {b50:.0} µs | {c50:.0} µs | **{:.2}x** | {b99:.0} µs | {c99:.0} µs | {:.2}x |\n",
            c50 / b50,
            c99 / b99
        ));
        numbers.insert(
            kind.to_string(),
            json!({
                "calls": [b.len(), c.len()],
                "baseline_us": {"p50": b50, "p90": b90, "p99": b99},
                "candidate_us": {"p50": c50, "p90": c90, "p99": c99},
                "ratio": {"p50": c50 / b50, "p90": c90 / b90, "p99": c99 / b99},
            }),
        );
    }
    print!("{md}");
    if let Some(out) = &args.out {
        std::fs::write(out, &md).wrap_err_with(|| format!("writing {}", out.display()))?;
        let json_path = out.with_extension("json");
        std::fs::write(
            &json_path,
            serde_json::to_vec_pretty(&Value::Object(numbers))?,
        )
        .wrap_err_with(|| format!("writing {}", json_path.display()))?;
    }
    Ok(())
}
