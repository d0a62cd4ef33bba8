//! Comparing two sets of reth-bench runs: per-side summaries, blocks paired by block number,
//! per-block changes, 95% bootstrap confidence intervals, and a winner only when the interval
//! clears the noise floor.
//!
//! With one run on a side the bootstrap resamples matched blocks (paired); with two or more runs
//! on both sides it resamples whole runs per side (block latencies within one run are correlated,
//! so runs are the honest unit). Percentiles are nearest-rank, as reth's own summary script.

use crate::{KeyGen, reth_bench::files::RunData};
use serde::Serialize;
use std::collections::BTreeMap;

/// Tunables of a comparison.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    pub baseline_name: String,
    pub candidate_name: String,
    /// A change smaller than this (in %) is never called a win, whatever its interval.
    pub noise_floor_pct: f64,
    pub bootstrap_iterations: usize,
    pub seed: u64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        Self {
            baseline_name: "baseline".into(),
            candidate_name: "candidate".into(),
            noise_floor_pct: 1.2,
            bootstrap_iterations: 10_000,
            seed: 42,
        }
    }
}

/// Mean and nearest-rank percentiles, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Dist {
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
}

/// The value at index `floor(n * p / 100)` of ascending `sorted` (`p` in percent), as reth's
/// summary scripts take a percentile; NaN for no values.
pub(crate) fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() as f64 * p / 100.0) as usize).min(sorted.len() - 1);
    sorted[idx]
}

fn dist_us(values: impl Iterator<Item = f64>) -> Dist {
    let mut v: Vec<f64> = values.map(|us| us / 1000.0).collect();
    v.sort_by(f64::total_cmp);
    Dist {
        mean_ms: v.iter().sum::<f64>() / v.len().max(1) as f64,
        p50_ms: percentile_sorted(&v, 50.0),
        p90_ms: percentile_sorted(&v, 90.0),
        p99_ms: percentile_sorted(&v, 99.0),
    }
}

/// One side's numbers over all its rows (every run pooled).
#[derive(Debug, Clone, Serialize)]
pub struct SideSummary {
    pub name: String,
    pub runs: usize,
    pub rows: usize,
    pub first_block: u64,
    pub last_block: u64,
    pub total_gas: u64,
    /// Σ total latency (newPayload + FCU), seconds.
    pub execution_seconds: f64,
    /// Σ of each run's wall clock (`total_gas.csv`), when every run has it.
    pub wall_clock_seconds: Option<f64>,
    /// Total gas / Σ total latency.
    pub ggas_per_second: f64,
    /// Total gas / Σ (total latency + persistence wait).
    pub ggas_per_second_with_waits: f64,
    /// Total gas / wall clock.
    pub wall_clock_ggas_per_second: Option<f64>,
    pub new_payload: Dist,
    pub fcu: Dist,
    pub total: Dist,
    pub persistence_wait: Option<Dist>,
    pub formats: Vec<crate::reth_bench::files::Format>,
}

fn summarize(name: &str, runs: &[RunData]) -> SideSummary {
    let rows: Vec<_> = runs.iter().flat_map(|r| r.blocks.iter()).collect();
    let total_gas: u64 = rows.iter().map(|r| r.gas_used).sum();
    let execution_us: u64 = rows.iter().map(|r| r.total_us).sum();
    let wall_us: Option<u64> = runs.iter().map(|r| r.wall_clock_us).sum();
    let waits_us: u64 = rows.iter().filter_map(|r| r.persistence_wait_us).sum();
    let waits: Option<Vec<f64>> = rows
        .iter()
        .map(|r| r.persistence_wait_us.map(|w| w as f64))
        .collect();
    let mut formats: Vec<_> = runs.iter().map(|r| r.format).collect();
    formats.dedup();
    SideSummary {
        name: name.to_string(),
        runs: runs.len(),
        rows: rows.len(),
        first_block: rows.iter().map(|r| r.block_number).min().unwrap_or(0),
        last_block: rows.iter().map(|r| r.block_number).max().unwrap_or(0),
        total_gas,
        execution_seconds: execution_us as f64 / 1e6,
        wall_clock_seconds: wall_us.map(|w| w as f64 / 1e6),
        ggas_per_second: total_gas as f64 / (execution_us.max(1) as f64 / 1e6) / 1e9,
        ggas_per_second_with_waits: total_gas as f64
            / ((execution_us + waits_us).max(1) as f64 / 1e6)
            / 1e9,
        wall_clock_ggas_per_second: wall_us
            .map(|w| total_gas as f64 / (w.max(1) as f64 / 1e6) / 1e9),
        new_payload: dist_us(rows.iter().map(|r| r.new_payload_us as f64)),
        fcu: dist_us(rows.iter().map(|r| r.fcu_us as f64)),
        total: dist_us(rows.iter().map(|r| r.total_us as f64)),
        persistence_wait: waits.map(|w| dist_us(w.into_iter())),
        formats,
    }
}

/// A block present on both sides (latencies averaged over each side's runs).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BlockChange {
    pub block_number: u64,
    pub gas_used: u64,
    pub baseline_total_us: f64,
    pub candidate_total_us: f64,
    /// (candidate − baseline) / baseline × 100 of total latency.
    pub change_pct: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    CandidateBetter,
    BaselineBetter,
    /// The interval does not clear the noise floor.
    WithinNoise,
}

/// One metric, both sides, the change and its interval.
#[derive(Debug, Clone, Serialize)]
pub struct MetricChange {
    pub metric: &'static str,
    pub unit: &'static str,
    pub baseline: f64,
    pub candidate: f64,
    pub change_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    pub higher_is_better: bool,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resampling {
    /// Matched blocks resampled in pairs (one run on a side).
    PairedBlocks,
    /// Whole runs resampled per side (two or more runs on both sides).
    Runs,
}

/// Everything `bench compare` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub baseline: SideSummary,
    pub candidate: SideSummary,
    pub matched_blocks: usize,
    pub only_in_baseline: Vec<u64>,
    pub only_in_candidate: Vec<u64>,
    pub per_block: Vec<BlockChange>,
    pub per_block_change_mean_pct: f64,
    pub per_block_change_median_pct: f64,
    pub metrics: Vec<MetricChange>,
    pub resampling: Resampling,
    pub bootstrap_iterations: usize,
    pub noise_floor_pct: f64,
    /// One sentence: who wins on Ggas/s, by how much, or why nobody does.
    pub verdict: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("the {side} side has no runs")]
    NoRuns { side: &'static str },
    #[error(
        "no block appears on both sides (baseline {b0}..={b1}, candidate {c0}..={c1}): the runs \
         replayed different ranges"
    )]
    NoOverlap { b0: u64, b1: u64, c0: u64, c1: u64 },
    #[error(
        "block {block} used {baseline} gas in the baseline but {candidate} in the candidate: the \
         two sides did not replay the same chain"
    )]
    DifferentBlocks {
        block: u64,
        baseline: u64,
        candidate: u64,
    },
}

/// One block's numbers: gas, then newPayload, FCU, total latency and persistence wait (µs;
/// the wait is 0 where the format has none).
type Row = (u64, f64, f64, f64, f64);

/// Per block of one side: its row averaged over the runs that have it.
type BlockMeans = BTreeMap<u64, Row>;

fn row(b: &crate::reth_bench::files::BlockRow) -> Row {
    (
        b.gas_used,
        b.new_payload_us as f64,
        b.fcu_us as f64,
        b.total_us as f64,
        b.persistence_wait_us.unwrap_or(0) as f64,
    )
}

fn block_means(runs: &[RunData]) -> BlockMeans {
    let mut acc: BTreeMap<u64, (Row, f64)> = BTreeMap::new();
    for run in runs {
        for b in &run.blocks {
            let r = row(b);
            let e = acc
                .entry(b.block_number)
                .or_insert(((b.gas_used, 0.0, 0.0, 0.0, 0.0), 0.0));
            e.0.1 += r.1;
            e.0.2 += r.2;
            e.0.3 += r.3;
            e.0.4 += r.4;
            e.1 += 1.0;
        }
    }
    acc.into_iter()
        .map(|(k, ((g, np, fcu, t, w), n))| (k, (g, np / n, fcu / n, t / n, w / n)))
        .collect()
}

/// How many metrics are compared.
const METRIC_COUNT: usize = 9;

/// The throughput that counts the node's persistence waits (the headline when there were any).
const GGAS_WITH_WAITS: &str = "Ggas/s incl. persistence waits";

/// The compared metrics over a set of rows. reth_newPayload's latency leaves out the time the
/// node waited for persistence; the metrics "incl. persistence waits" add it back, so storage
/// that persists faster (or slower) shows in them.
const METRICS: [(&str, &str, bool); METRIC_COUNT] = [
    ("Ggas/s", "Ggas/s", true),
    ("total latency mean", "ms", false),
    ("total latency p50", "ms", false),
    ("total latency p90", "ms", false),
    ("total latency p99", "ms", false),
    ("newPayload mean", "ms", false),
    ("FCU mean", "ms", false),
    (GGAS_WITH_WAITS, "Ggas/s", true),
    ("persistence wait mean", "ms", false),
];

fn metric_values(rows: &[Row], scratch: &mut Vec<f64>) -> [f64; METRIC_COUNT] {
    let n = rows.len().max(1) as f64;
    let gas: f64 = rows.iter().map(|r| r.0 as f64).sum();
    let total: f64 = rows.iter().map(|r| r.3).sum();
    let waits: f64 = rows.iter().map(|r| r.4).sum();
    scratch.clear();
    scratch.extend(rows.iter().map(|r| r.3 / 1000.0));
    scratch.sort_by(f64::total_cmp);
    [
        gas / (total.max(1.0) / 1e6) / 1e9,
        total / n / 1000.0,
        percentile_sorted(scratch, 50.0),
        percentile_sorted(scratch, 90.0),
        percentile_sorted(scratch, 99.0),
        rows.iter().map(|r| r.1).sum::<f64>() / n / 1000.0,
        rows.iter().map(|r| r.2).sum::<f64>() / n / 1000.0,
        gas / ((total + waits).max(1.0) / 1e6) / 1e9,
        waits / n / 1000.0,
    ]
}

fn pct(base: f64, cand: f64) -> f64 {
    if base == 0.0 {
        0.0
    } else {
        (cand - base) / base * 100.0
    }
}

/// Compares candidate runs against baseline runs.
pub fn compare(
    baseline: &[RunData],
    candidate: &[RunData],
    opts: &CompareOptions,
) -> Result<Comparison, CompareError> {
    if baseline.is_empty() {
        return Err(CompareError::NoRuns { side: "baseline" });
    }
    if candidate.is_empty() {
        return Err(CompareError::NoRuns { side: "candidate" });
    }
    let (bs, cs) = (
        summarize(&opts.baseline_name, baseline),
        summarize(&opts.candidate_name, candidate),
    );
    let (bm, cm) = (block_means(baseline), block_means(candidate));
    let matched: Vec<u64> = bm.keys().filter(|k| cm.contains_key(k)).copied().collect();
    if matched.is_empty() {
        return Err(CompareError::NoOverlap {
            b0: bs.first_block,
            b1: bs.last_block,
            c0: cs.first_block,
            c1: cs.last_block,
        });
    }
    for b in &matched {
        if bm[b].0 != cm[b].0 {
            return Err(CompareError::DifferentBlocks {
                block: *b,
                baseline: bm[b].0,
                candidate: cm[b].0,
            });
        }
    }
    let per_block: Vec<BlockChange> = matched
        .iter()
        .map(|b| BlockChange {
            block_number: *b,
            gas_used: bm[b].0,
            baseline_total_us: bm[b].3,
            candidate_total_us: cm[b].3,
            change_pct: pct(bm[b].3, cm[b].3),
        })
        .collect();
    let mut changes: Vec<f64> = per_block.iter().map(|c| c.change_pct).collect();
    changes.sort_by(f64::total_cmp);

    let mut scratch = Vec::new();
    let mut rng = KeyGen::new(opts.seed);
    let iterations = opts.bootstrap_iterations.max(1);
    let runs_mode = baseline.len() >= 2 && candidate.len() >= 2;
    let (point, samples): ([f64; METRIC_COUNT], Vec<[f64; METRIC_COUNT]>) = if runs_mode {
        // Each run's metrics over the matched blocks; resample runs per side.
        let per_run = |runs: &[RunData], scratch: &mut Vec<f64>| -> Vec<[f64; METRIC_COUNT]> {
            runs.iter()
                .map(|r| {
                    let rows: Vec<Row> = r
                        .blocks
                        .iter()
                        .filter(|b| {
                            bm.contains_key(&b.block_number) && cm.contains_key(&b.block_number)
                        })
                        .map(row)
                        .collect();
                    metric_values(&rows, scratch)
                })
                .collect()
        };
        let (br, cr) = (
            per_run(baseline, &mut scratch),
            per_run(candidate, &mut scratch),
        );
        let mean_of = |sel: &[usize], v: &[[f64; METRIC_COUNT]]| -> [f64; METRIC_COUNT] {
            let mut out = [0.0; METRIC_COUNT];
            for i in sel {
                for m in 0..METRIC_COUNT {
                    out[m] += v[*i][m] / sel.len() as f64;
                }
            }
            out
        };
        let all_b: Vec<usize> = (0..br.len()).collect();
        let all_c: Vec<usize> = (0..cr.len()).collect();
        let (pb, pc) = (mean_of(&all_b, &br), mean_of(&all_c, &cr));
        let point = std::array::from_fn(|m| pct(pb[m], pc[m]));
        let samples = (0..iterations)
            .map(|_| {
                let sb: Vec<usize> = (0..br.len())
                    .map(|_| (rng.next_u64() % br.len() as u64) as usize)
                    .collect();
                let sc: Vec<usize> = (0..cr.len())
                    .map(|_| (rng.next_u64() % cr.len() as u64) as usize)
                    .collect();
                let (b, c) = (mean_of(&sb, &br), mean_of(&sc, &cr));
                std::array::from_fn(|m| pct(b[m], c[m]))
            })
            .collect();
        (point, samples)
    } else {
        let b_rows: Vec<_> = matched.iter().map(|k| bm[k]).collect();
        let c_rows: Vec<_> = matched.iter().map(|k| cm[k]).collect();
        let (pb, pc) = (
            metric_values(&b_rows, &mut scratch),
            metric_values(&c_rows, &mut scratch),
        );
        let point = std::array::from_fn(|m| pct(pb[m], pc[m]));
        let n = matched.len();
        let (mut sb, mut sc) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let samples = (0..iterations)
            .map(|_| {
                sb.clear();
                sc.clear();
                for _ in 0..n {
                    let i = (rng.next_u64() % n as u64) as usize;
                    sb.push(b_rows[i]);
                    sc.push(c_rows[i]);
                }
                let (b, c) = (
                    metric_values(&sb, &mut scratch),
                    metric_values(&sc, &mut scratch),
                );
                std::array::from_fn(|m| pct(b[m], c[m]))
            })
            .collect();
        (point, samples)
    };
    let side_values = |s: &SideSummary| -> [f64; METRIC_COUNT] {
        [
            s.ggas_per_second,
            s.total.mean_ms,
            s.total.p50_ms,
            s.total.p90_ms,
            s.total.p99_ms,
            s.new_payload.mean_ms,
            s.fcu.mean_ms,
            s.ggas_per_second_with_waits,
            s.persistence_wait.map_or(0.0, |w| w.mean_ms),
        ]
    };
    let (bv, cv) = (side_values(&bs), side_values(&cs));
    let metrics: Vec<MetricChange> = METRICS
        .iter()
        .enumerate()
        .map(|(m, (metric, unit, higher_is_better))| {
            let mut dist: Vec<f64> = samples.iter().map(|s| s[m]).collect();
            dist.sort_by(f64::total_cmp);
            let (lo, hi) = (
                percentile_sorted(&dist, 2.5),
                percentile_sorted(&dist, 97.5),
            );
            // Improvement in the metric's good direction, and its interval.
            let (imp_lo, imp_hi) = if *higher_is_better {
                (lo, hi)
            } else {
                (-hi, -lo)
            };
            let verdict = if imp_lo > opts.noise_floor_pct {
                Verdict::CandidateBetter
            } else if imp_hi < -opts.noise_floor_pct {
                Verdict::BaselineBetter
            } else {
                Verdict::WithinNoise
            };
            MetricChange {
                metric,
                unit,
                baseline: bv[m],
                candidate: cv[m],
                change_pct: point[m],
                ci_low_pct: lo,
                ci_high_pct: hi,
                higher_is_better: *higher_is_better,
                verdict,
            }
        })
        .collect();
    // Where the node waited for persistence (reth-bench --wait-for-persistence), its latency
    // leaves that time out: the headline is the throughput that counts it, as storage decides it.
    let waited = [&bs, &cs]
        .iter()
        .any(|s| s.persistence_wait.as_ref().is_some_and(|w| w.mean_ms > 0.0));
    let g = metrics
        .iter()
        .find(|m| waited && m.metric == GGAS_WITH_WAITS)
        .unwrap_or(&metrics[0]);
    let what = g.metric;
    let verdict = match g.verdict {
        Verdict::CandidateBetter => format!(
            "{} wins: {:+.2}% {what} (95% CI {:+.2}% .. {:+.2}%, clears the {:.2}% noise floor)",
            cs.name, g.change_pct, g.ci_low_pct, g.ci_high_pct, opts.noise_floor_pct
        ),
        Verdict::BaselineBetter => format!(
            "{} wins: {} is {:+.2}% {what} (95% CI {:+.2}% .. {:+.2}%, clears the {:.2}% noise floor)",
            bs.name, cs.name, g.change_pct, g.ci_low_pct, g.ci_high_pct, opts.noise_floor_pct
        ),
        Verdict::WithinNoise => format!(
            "no winner: {} is {:+.2}% {what}, but the 95% CI {:+.2}% .. {:+.2}% does not clear the {:.2}% noise floor",
            cs.name, g.change_pct, g.ci_low_pct, g.ci_high_pct, opts.noise_floor_pct
        ),
    };
    Ok(Comparison {
        only_in_baseline: bm.keys().filter(|k| !cm.contains_key(k)).copied().collect(),
        only_in_candidate: cm.keys().filter(|k| !bm.contains_key(k)).copied().collect(),
        matched_blocks: matched.len(),
        per_block_change_mean_pct: changes.iter().sum::<f64>() / changes.len() as f64,
        per_block_change_median_pct: percentile_sorted(&changes, 50.0),
        per_block,
        metrics,
        resampling: if runs_mode {
            Resampling::Runs
        } else {
            Resampling::PairedBlocks
        },
        bootstrap_iterations: iterations,
        noise_floor_pct: opts.noise_floor_pct,
        verdict,
        baseline: bs,
        candidate: cs,
    })
}
