//! The comparison as engineers write it up: a Markdown report (throughput, duration, total gas,
//! latency percentiles, winner with %, configuration and command lines) and JSON for CI.

use crate::reth_bench::stats::{Comparison, MetricChange, Verdict};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// How the runs were made, when `bench run` made them (`run.json` in the output folder).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunConfig {
    pub baseline: SetupConfig,
    pub candidate: SetupConfig,
    /// The reth-bench command line of each run, in the order they ran.
    pub runs: Vec<RunRecord>,
    pub reth_bench: String,
    pub pairs: usize,
    pub warmup_blocks: u64,
    pub blocks: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SetupConfig {
    pub name: String,
    pub datadir: String,
    pub layout: String,
    pub node_command: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunRecord {
    pub side: String,
    pub index: usize,
    pub output: String,
    pub command: String,
}

fn mark(v: Verdict) -> &'static str {
    match v {
        Verdict::CandidateBetter => "✅",
        Verdict::BaselineBetter => "❌",
        Verdict::WithinNoise => "⚪",
    }
}

fn change_cell(m: &MetricChange) -> String {
    format!(
        "{:+.2}% {} (95% CI {:+.2}% .. {:+.2}%)",
        m.change_pct,
        mark(m.verdict),
        m.ci_low_pct,
        m.ci_high_pct
    )
}

/// The Markdown report.
pub fn markdown(c: &Comparison, config: Option<&RunConfig>) -> String {
    let (b, k) = (&c.baseline, &c.candidate);
    let mut s = String::new();
    let _ = writeln!(s, "## reth-bench: {} vs {}\n", k.name, b.name);
    let _ = writeln!(s, "**{}**\n", c.verdict);
    let _ = writeln!(s, "| | {} | {} | change |", b.name, k.name);
    let _ = writeln!(s, "|---|---|---|---|");
    let metric = |name: &str| {
        c.metrics
            .iter()
            .find(|m| m.metric == name)
            .expect("computed")
    };
    let g = metric("Ggas/s");
    let _ = writeln!(
        s,
        "| Throughput (Ggas/s, gas / Σ latency) | {:.4} | {:.4} | {} |",
        b.ggas_per_second,
        k.ggas_per_second,
        change_cell(g)
    );
    if let (Some(bw), Some(kw)) = (b.wall_clock_ggas_per_second, k.wall_clock_ggas_per_second) {
        let _ = writeln!(
            s,
            "| Throughput, wall clock (Ggas/s) | {bw:.4} | {kw:.4} | {:+.2}% |",
            (kw - bw) / bw * 100.0
        );
    }
    let _ = writeln!(
        s,
        "| Duration (Σ latency) | {:.2} s | {:.2} s | |",
        b.execution_seconds, k.execution_seconds
    );
    if let (Some(bw), Some(kw)) = (b.wall_clock_seconds, k.wall_clock_seconds) {
        let _ = writeln!(s, "| Duration (wall clock) | {bw:.2} s | {kw:.2} s | |");
    }
    let _ = writeln!(s, "| Total gas | {} | {} | |", b.total_gas, k.total_gas);
    let _ = writeln!(
        s,
        "| Blocks (runs) | {} ({}) | {} ({}) | {} matched |",
        b.rows, b.runs, k.rows, k.runs, c.matched_blocks
    );
    for name in [
        "total latency mean",
        "total latency p50",
        "total latency p90",
        "total latency p99",
        "newPayload mean",
        "FCU mean",
    ] {
        let m = metric(name);
        let _ = writeln!(
            s,
            "| {name} | {:.3} ms | {:.3} ms | {} |",
            m.baseline,
            m.candidate,
            change_cell(m)
        );
    }
    let _ = writeln!(
        s,
        "| newPayload p50 / p90 / p99 | {:.3} / {:.3} / {:.3} ms | {:.3} / {:.3} / {:.3} ms | |",
        b.new_payload.p50_ms,
        b.new_payload.p90_ms,
        b.new_payload.p99_ms,
        k.new_payload.p50_ms,
        k.new_payload.p90_ms,
        k.new_payload.p99_ms
    );
    if let (Some(bp), Some(kp)) = (b.persistence_wait, k.persistence_wait) {
        let _ = writeln!(
            s,
            "| persistence wait mean | {:.3} ms | {:.3} ms | |",
            bp.mean_ms, kp.mean_ms
        );
    }
    let _ = writeln!(
        s,
        "\nPer-block change of total latency over {} matched blocks: mean {:+.2}%, median {:+.2}%.",
        c.matched_blocks, c.per_block_change_mean_pct, c.per_block_change_median_pct
    );
    if !c.only_in_baseline.is_empty() || !c.only_in_candidate.is_empty() {
        let _ = writeln!(
            s,
            "Blocks on one side only (left out of the paired numbers): {} only in {}, {} only in {}.",
            c.only_in_baseline.len(),
            b.name,
            c.only_in_candidate.len(),
            k.name
        );
    }
    let _ = writeln!(
        s,
        "Intervals: 95% bootstrap, {} iterations, resampling {}; a winner is called only when the \
         interval clears the {:.2}% noise floor (✅ candidate better, ❌ baseline better, ⚪ within noise).",
        c.bootstrap_iterations,
        match c.resampling {
            crate::reth_bench::stats::Resampling::PairedBlocks => "matched blocks in pairs",
            crate::reth_bench::stats::Resampling::Runs => "whole runs per side",
        },
        c.noise_floor_pct
    );
    let _ = writeln!(
        s,
        "Blocks {}..={} ({}: reth-bench {:?}), {}..={} ({}: {:?}).",
        b.first_block,
        b.last_block,
        b.name,
        b.formats,
        k.first_block,
        k.last_block,
        k.name,
        k.formats
    );
    if let Some(cfg) = config {
        let _ = writeln!(s, "\n### Configuration\n");
        let _ = writeln!(
            s,
            "- reth-bench: `{}`; {} pairs, interleaved ABBA; {} warmup blocks per run; blocks {}",
            cfg.reth_bench, cfg.pairs, cfg.warmup_blocks, cfg.blocks
        );
        for setup in [&cfg.baseline, &cfg.candidate] {
            let _ = writeln!(
                s,
                "- {}: datadir `{}`, layout {}, node: `{}`",
                setup.name, setup.datadir, setup.layout, setup.node_command
            );
        }
        let _ = writeln!(s, "\n### Command lines\n");
        for r in &cfg.runs {
            let _ = writeln!(s, "- {} #{}: `{}`", r.side, r.index, r.command);
        }
    }
    s
}

/// The JSON report: the comparison, plus the run configuration when known.
pub fn json(c: &Comparison, config: Option<&RunConfig>) -> serde_json::Value {
    let mut v = serde_json::to_value(c).expect("serializes");
    if let Some(cfg) = config {
        v["config"] = serde_json::to_value(cfg).expect("serializes");
    }
    v
}
