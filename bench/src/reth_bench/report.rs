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
    /// The storage the node named in its startup line (`hybrid`, `mdbx`); `None`: not a
    /// reth-hybrid-node.
    #[serde(default)]
    pub storage: Option<String>,
    /// The datadir's sizes after the run.
    #[serde(default)]
    pub disk: Option<DiskRecord>,
}

/// A datadir's bytes after a run, per table and engine.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DiskRecord {
    /// Tables with rows or bytes in either engine.
    pub tables: Vec<TableDisk>,
    /// `mdbx.dat` (free pages included).
    pub mdbx_file_bytes: u64,
    /// Every file under `<datadir>/hybrid-rocksdb`.
    pub rocksdb_dir_bytes: u64,
    /// `<datadir>/static_files` (headers, transactions, receipts...: the same on both sides).
    pub static_files_bytes: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TableDisk {
    pub table: String,
    /// The engine the layout routes it to.
    pub engine: String,
    pub mdbx_bytes: u64,
    /// SST files plus memtables.
    pub rocksdb_bytes: u64,
}

impl DiskRecord {
    /// Reads a datadir's sizes (read-only; the node must be stopped).
    pub fn read(datadir: &std::path::Path) -> Result<Self, String> {
        let s = reth_hybrid_migrate::stats::stats(datadir, false).map_err(|e| e.to_string())?;
        Ok(Self {
            tables: s
                .tables
                .iter()
                .filter(|t| t.mdbx_bytes > 0 || t.rocksdb_bytes > 0)
                .map(|t| TableDisk {
                    table: t.table.name().to_string(),
                    engine: t.engine.as_str().to_string(),
                    mdbx_bytes: t.mdbx_bytes,
                    rocksdb_bytes: t.rocksdb_bytes,
                })
                .collect(),
            mdbx_file_bytes: s.mdbx_file_bytes,
            rocksdb_dir_bytes: s.rocksdb_dir_bytes,
            static_files_bytes: crate::dir_bytes(&datadir.join("static_files")),
        })
    }

    fn table(&self, name: &str) -> Option<&TableDisk> {
        self.tables.iter().find(|t| t.table == name)
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// The disk section: each side's last run, the moved tables side by side.
fn disk_section(s: &mut String, cfg: &RunConfig) {
    let last = |side: &str| {
        cfg.runs
            .iter()
            .rev()
            .find(|r| r.side == side)
            .and_then(|r| r.disk.as_ref())
    };
    let (Some(b), Some(k)) = (last("baseline"), last("candidate")) else {
        return;
    };
    let _ = writeln!(
        s,
        "
### Disk after the last run of each side
"
    );
    let _ = writeln!(
        s,
        "| table | {} | {} | {}/{} |",
        cfg.baseline.name, cfg.candidate.name, cfg.candidate.name, cfg.baseline.name
    );
    let _ = writeln!(s, "|---|---:|---:|---:|");
    let cell = |t: Option<&TableDisk>| match t {
        None => (String::from("-"), 0),
        Some(t) => {
            let bytes = t.mdbx_bytes + t.rocksdb_bytes;
            (format!("{} ({})", mib(bytes), t.engine), bytes)
        }
    };
    let mut names: Vec<&str> = b.tables.iter().map(|t| t.table.as_str()).collect();
    for t in &k.tables {
        if !names.contains(&t.table.as_str()) {
            names.push(&t.table);
        }
    }
    let (mut moved_b, mut moved_k) = (0u64, 0u64);
    for name in names {
        let ((bc, bb), (kc, kb)) = (cell(b.table(name)), cell(k.table(name)));
        let ratio = if bb > 0 {
            format!("{:.2}x", kb as f64 / bb as f64)
        } else {
            String::from("-")
        };
        let _ = writeln!(s, "| {name} | {bc} | {kc} | {ratio} |");
        if k.table(name).is_some_and(|t| t.engine == "rocksdb") {
            moved_b += bb;
            moved_k += kb;
        }
    }
    for (what, bv, kv) in [
        ("mdbx.dat", b.mdbx_file_bytes, k.mdbx_file_bytes),
        ("hybrid-rocksdb/", b.rocksdb_dir_bytes, k.rocksdb_dir_bytes),
        ("static_files/", b.static_files_bytes, k.static_files_bytes),
    ] {
        let _ = writeln!(s, "| **{what}** | {} | {} | |", mib(bv), mib(kv));
    }
    if moved_b > 0 {
        let _ = writeln!(
            s,
            "
The tables {} keeps in RocksDB: {} there vs {} in {}'s MDBX: **{:.2}x**.",
            cfg.candidate.name,
            mib(moved_k),
            mib(moved_b),
            cfg.baseline.name,
            moved_k as f64 / moved_b as f64
        );
    }
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
        let m = metric("persistence wait mean");
        let _ = writeln!(
            s,
            "| persistence wait mean | {:.3} ms | {:.3} ms | {} |",
            bp.mean_ms,
            kp.mean_ms,
            change_cell(m)
        );
        let _ = writeln!(
            s,
            "| persistence wait p50 / p90 / p99 | {:.3} / {:.3} / {:.3} ms | {:.3} / {:.3} / {:.3} ms | |",
            bp.p50_ms, bp.p90_ms, bp.p99_ms, kp.p50_ms, kp.p90_ms, kp.p99_ms
        );
        let w = metric("Ggas/s incl. persistence waits");
        let _ = writeln!(
            s,
            "| Throughput incl. persistence waits (Ggas/s, gas / Σ (latency + wait)) | {:.4} | {:.4} | {} |",
            b.ggas_per_second_with_waits,
            k.ggas_per_second_with_waits,
            change_cell(w)
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
        disk_section(&mut s, cfg);
        let _ = writeln!(s, "\n### Command lines\n");
        for r in &cfg.runs {
            let _ = writeln!(
                s,
                "- {} #{} (node storage: {}): `{}`",
                r.side,
                r.index,
                r.storage.as_deref().unwrap_or("not reported"),
                r.command
            );
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
