//! RPC latency on a replayed datadir, the reads an operator's users make: transactions by hash
//! (the tx-hash index), balances and token storage at random historical blocks (the history
//! indices, reth's `HistoricalStateProvider`), a call and traces that execute old blocks against
//! history (`debug_traceBlockByNumber` and `debug_traceTransaction` with `prestateTracer`, the
//! reads storage v2 made 6-12x slower, and `callTracer`).
//!
//! - `rpc-samples` picks the calls once, from a node holding the chain, and records each answer
//!   (a trace's as the keccak of its JSON: a block's prestate trace is megabytes);
//! - `rpc-latency` times every call, one at a time, against a node under test: the first pass
//!   right after the node started (cold), then a second one (warm); every answer must equal the
//!   recorded one, so variants that answer differently fail instead of being timed;
//! - `reth-hybrid bench rpc-report` (the main workspace's bench crate) sets the runs of any
//!   number of variants side by side: percentiles, ratios, histograms and tail charts.

use crate::rpc::{Rpc, hex};
use alloy_primitives::{B256, keccak256};
use eyre::{Context, ensure, eyre};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::{collections::BTreeMap, path::PathBuf, time::Instant};

/// The kinds of call, in report order: (kind, method). A kind names the tracer where the method
/// alone does not say what runs.
pub(crate) const KINDS: [(&str, &str); 7] = [
    ("eth_getTransactionByHash", "eth_getTransactionByHash"),
    ("eth_getBalance", "eth_getBalance"),
    ("eth_getStorageAt", "eth_getStorageAt"),
    ("eth_call", "eth_call"),
    (
        "debug_traceTransaction prestateTracer",
        "debug_traceTransaction",
    ),
    (
        "debug_traceBlockByNumber prestateTracer",
        "debug_traceBlockByNumber",
    ),
    (
        "debug_traceBlockByNumber callTracer",
        "debug_traceBlockByNumber",
    ),
];

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Sample {
    /// One of [`KINDS`]; samples written before kinds existed name only their method.
    #[serde(default)]
    kind: String,
    pub(crate) method: String,
    pub(crate) params: Vec<Value>,
    /// The recorded answer, or `Null` where only its digest is kept.
    answer: Value,
    /// keccak256 of the answer's JSON (traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer_keccak: Option<B256>,
}

impl Sample {
    pub(crate) fn kind(&self) -> &str {
        if self.kind.is_empty() {
            &self.method
        } else {
            &self.kind
        }
    }

    /// Whether `answer` is the recorded one; on a mismatch, what was recorded, for the error.
    pub(crate) fn check(&self, answer: &Value) -> Result<(), String> {
        match self.answer_keccak {
            Some(digest) if digest == answer_keccak(answer) => Ok(()),
            Some(digest) => Err(format!("an answer with keccak {digest}")),
            None if *answer == self.answer => Ok(()),
            None => Err(self.answer.to_string()),
        }
    }
}

/// The digest a trace is recorded by: its JSON with object keys sorted (serde_json's map), so
/// two nodes that answer alike match whatever order they wrote the keys in.
fn answer_keccak(answer: &Value) -> B256 {
    keccak256(serde_json::to_vec(answer).expect("a JSON value serializes"))
}

fn tracer(name: &str) -> Value {
    json!({ "tracer": name })
}

#[derive(clap::Args)]
pub struct SamplesArgs {
    /// A node holding the chain (not under test).
    #[arg(long)]
    rpc: String,
    /// Calls of each point-read kind (tx by hash, balance, storage, eth_call).
    #[arg(long, default_value_t = 2000)]
    count: usize,
    /// Calls of each trace kind (a block's trace executes all its transactions).
    #[arg(long, default_value_t = 100)]
    trace_count: usize,
    #[arg(long, default_value_t = 11)]
    seed: u64,
    /// The token contract whose storage is sampled (its holders' slots); default: the one a
    /// `chain` deploys.
    #[arg(long)]
    token: Option<String>,
    #[arg(long)]
    out: PathBuf,
}

impl SamplesArgs {
    pub fn new(rpc: &str, count: usize, trace_count: usize, out: &std::path::Path) -> Self {
        Self {
            rpc: rpc.to_string(),
            count,
            trace_count,
            seed: 11,
            token: None,
            out: out.to_path_buf(),
        }
    }
}

/// Picks `count` calls of each point-read kind over blocks 1..=head: a random transaction's hash;
/// the recipient of a random transfer, or a random token holder's slot, read at a random block at
/// or after the one that wrote it (history, not the head's state); a token transfer of 0 from a
/// sender to a holder as `eth_call` at such a block (the token's code runs against both slots'
/// history; it returns nothing, so the check is that it runs). And `trace_count` of each trace
/// kind: random old blocks, and random transactions.
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
    let (mut calls, mut tx_traces, mut block_traces) = (Vec::new(), Vec::new(), Vec::new());
    while hashes.len() < args.count
        || balances.len() < args.count
        || slots.len() < args.count
        || calls.len() < args.count
        || tx_traces.len() < args.trace_count
        || block_traces.len() < args.trace_count
    {
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
                hashes.push(vec![hash.clone()]);
            }
            if tx_traces.len() < args.trace_count {
                tx_traces.push(vec![hash, tracer("prestateTracer")]);
            }
            if block_traces.len() < args.trace_count {
                block_traces.push(hex(*block));
            }
            if to == token {
                let input = tx.get("input").and_then(Value::as_str).unwrap_or("");
                // calldata[0..32] is the holder, left-padded: the slot of its balance.
                if input.len() < 2 + 64 {
                    continue;
                }
                let holder = &input[2..66];
                if slots.len() < args.count {
                    let slot = format!("0x{holder}");
                    slots.push(vec![json!(token), json!(slot), at.clone()]);
                }
                if calls.len() < args.count {
                    let from = tx.get("from").cloned().unwrap_or(Value::Null);
                    let data = format!("0x{holder}{:064x}", 0);
                    calls.push(vec![json!({"from": from, "to": token, "data": data}), at]);
                }
            } else if !to.is_empty() && balances.len() < args.count {
                balances.push(vec![json!(to), at]);
            }
        }
    }
    let block_traces_with = |name: &str| -> Vec<Vec<Value>> {
        block_traces
            .iter()
            .map(|b| vec![b.clone(), tracer(name)])
            .collect()
    };
    let picked = [
        hashes,
        balances,
        slots,
        calls,
        tx_traces,
        block_traces_with("prestateTracer"),
        block_traces_with("callTracer"),
    ];
    let mut out = Vec::new();
    for ((kind, method), params) in KINDS.into_iter().zip(picked) {
        let digest_only = method.starts_with("debug_");
        // Traces one at a time: a batch of block traces can pass the node's response limit.
        let answers = match digest_only {
            true => {
                let mut answers = Vec::with_capacity(params.len());
                for p in &params {
                    answers.push(rpc.call(method, p.clone()).await?);
                }
                answers
            }
            false => rpc.batch_ok(method, params.iter().cloned()).await?,
        };
        for (params, answer) in params.into_iter().zip(answers) {
            let (answer, answer_keccak) = match digest_only {
                true => (Value::Null, Some(answer_keccak(&answer))),
                false => (answer, None),
            };
            out.push(Sample {
                kind: kind.to_string(),
                method: method.to_string(),
                params,
                answer,
                answer_keccak,
            });
        }
    }
    let non_zero = out
        .iter()
        .filter(|s| matches!(s.method.as_str(), "eth_getBalance" | "eth_getStorageAt"))
        .filter(|s| !is_zero(&s.answer))
        .count();
    std::fs::write(&args.out, serde_json::to_vec(&out)?)
        .wrap_err_with(|| format!("writing {}", args.out.display()))?;
    println!(
        "rpc-samples: {} calls ({} per point-read kind, {} per trace kind) over blocks 1..={head}, \
         {non_zero} historical reads non-zero, to {}",
        out.len(),
        args.count,
        args.trace_count,
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

impl LatencyArgs {
    pub fn new(rpc: &str, samples: &std::path::Path, label: &str, out: &std::path::Path) -> Self {
        Self {
            rpc: rpc.to_string(),
            samples: samples.to_path_buf(),
            label: label.to_string(),
            out: out.to_path_buf(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct LatencyRun {
    label: String,
    /// Per kind: every call's latency in microseconds, in sample order, in the second pass.
    latencies_us: BTreeMap<String, Vec<f64>>,
    /// The same for the first pass, right after the node started.
    #[serde(default)]
    cold_latencies_us: BTreeMap<String, Vec<f64>>,
}

/// Times each sample, one call at a time, twice: the first pass is the cold one (the node just
/// started), the second the warm one. Every answer must equal the recorded one.
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
        cold_latencies_us: BTreeMap::new(),
    };
    for warm in [false, true] {
        for sample in &samples {
            let started = Instant::now();
            let answer = rpc.call(&sample.method, sample.params.clone()).await?;
            let took = started.elapsed().as_secs_f64() * 1e6;
            if let Err(recorded) = sample.check(&answer) {
                let shown = answer.to_string();
                let shown = shown.get(..2000).unwrap_or(&shown);
                eyre::bail!(
                    "{} {} on {}: {shown}, the chain's node answered {recorded}",
                    sample.method,
                    Value::Array(sample.params.clone()),
                    rpc.url()
                );
            }
            let pass = match warm {
                true => &mut run.latencies_us,
                false => &mut run.cold_latencies_us,
            };
            pass.entry(sample.kind().to_string())
                .or_default()
                .push(took);
        }
    }
    std::fs::write(&args.out, serde_json::to_vec(&run)?)
        .wrap_err_with(|| format!("writing {}", args.out.display()))?;
    let line: Vec<String> = KINDS
        .iter()
        .filter_map(|(k, _)| {
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
