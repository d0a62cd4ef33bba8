//! The comparison as engineers write it up: a Markdown report (throughput, duration, total gas,
//! latency percentiles, winner with %, configuration and command lines) and JSON for CI.

use crate::reth_bench::{
    stats::{Comparison, MetricChange, Verdict},
    threads::{GroupCpu, ThreadCpu},
};
use serde::{Deserialize, Serialize};
use std::{collections::BTreeMap, fmt::Write};

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
    /// Blocks measured (warmup excluded).
    #[serde(default)]
    pub blocks: Option<u64>,
    /// The node's CPU over the measured blocks, by kind of thread and in all.
    #[serde(default)]
    pub cpu: Option<GroupCpu>,
}

/// A datadir's bytes after a run, per table and engine.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DiskRecord {
    /// Tables with rows or bytes in any engine.
    pub tables: Vec<TableDisk>,
    /// `mdbx.dat`'s length (free pages and never-written space included).
    pub mdbx_file_bytes: u64,
    /// `mdbx.dat`'s allocated blocks: MDBX grows the file sparse, so its length overstates it.
    #[serde(default)]
    pub mdbx_allocated_bytes: u64,
    /// The whole datadir on disk, as `du` counts it (allocated blocks, WALs and logs included).
    #[serde(default)]
    pub datadir_allocated_bytes: u64,
    /// Every file under `<datadir>/hybrid-rocksdb`.
    pub rocksdb_dir_bytes: u64,
    /// Every file under reth's own `<datadir>/rocksdb` (storage v2 keeps history there).
    #[serde(default)]
    pub upstream_rocksdb_dir_bytes: u64,
    /// `<datadir>/static_files` (headers, transactions, receipts; storage v2 adds changesets and
    /// senders).
    pub static_files_bytes: u64,
    /// `static_files/` per segment (`account-change-sets`, ...), data, offsets and config.
    #[serde(default)]
    pub static_file_segments: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TableDisk {
    pub table: String,
    /// The engine the layout routes it to.
    pub engine: String,
    pub mdbx_bytes: u64,
    /// SST files plus memtables holding rows (rows only in the WAL, replayed by the read).
    pub rocksdb_bytes: u64,
    /// In reth's own RocksDB (storage v2), counted as `rocksdb_bytes` is.
    #[serde(default)]
    pub upstream_rocksdb_bytes: u64,
}

impl TableDisk {
    fn bytes(&self) -> u64 {
        self.mdbx_bytes + self.rocksdb_bytes + self.upstream_rocksdb_bytes
    }

    /// Where its bytes are, as a report names it.
    fn place(&self) -> String {
        let places: Vec<&str> = [
            (self.mdbx_bytes, "mdbx"),
            (self.rocksdb_bytes, "rocksdb"),
            (self.upstream_rocksdb_bytes, "reth's rocksdb"),
        ]
        .into_iter()
        .filter(|(bytes, _)| *bytes > 0)
        .map(|(_, place)| place)
        .collect();
        match places.is_empty() {
            true => self.engine.clone(),
            false => places.join(" + "),
        }
    }
}

/// The table a static-file segment holds the rows of (storage v2 moved changesets and senders
/// out of MDBX into segments).
pub fn segment_table(segment: &str) -> Option<&'static str> {
    Some(match segment {
        "headers" => "Headers",
        "transactions" => "Transactions",
        "receipts" => "Receipts",
        "transaction-senders" => "TransactionSenders",
        "account-change-sets" => "AccountChangeSets",
        "storage-change-sets" => "StorageChangeSets",
        _ => return None,
    })
}

/// Bytes per segment of a `static_files/` folder: `static_file_<segment>_<from>_<to>` and its
/// companion files (`.off`, `.conf`, `.csoff`).
fn static_file_segments(dir: &std::path::Path) -> BTreeMap<String, u64> {
    let mut segments = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return segments;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("static_file_") else {
            continue;
        };
        let stem = rest.split('.').next().unwrap_or(rest);
        // <segment>_<from>_<to>: the segment is what precedes the last two fields.
        let mut fields = stem.rsplitn(3, '_');
        let (Some(_), Some(_), Some(segment)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let bytes = entry.metadata().map_or(0, |m| m.len());
        *segments.entry(segment.to_string()).or_insert(0) += bytes;
    }
    segments
}

impl DiskRecord {
    /// Reads a datadir's sizes (read-only; the node must be stopped).
    pub fn read(datadir: &std::path::Path) -> Result<Self, String> {
        let s = reth_hybrid_migrate::stats::stats(datadir, false).map_err(|e| e.to_string())?;
        let upstream_dir = reth_hybrid_migrate::datadir::Datadir::new(datadir).upstream_rocksdb();
        let upstream = reth_hybrid_rocksdb::inspect_upstream_rocksdb(&upstream_dir)
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let tables = s
            .tables
            .iter()
            .map(|t| TableDisk {
                table: t.table.name().to_string(),
                engine: t.engine.as_str().to_string(),
                mdbx_bytes: t.mdbx_bytes,
                rocksdb_bytes: t.rocksdb_bytes,
                upstream_rocksdb_bytes: upstream
                    .iter()
                    .find(|cf| cf.name == t.table.name())
                    .map_or(0, |cf| cf.sst_bytes + cf.unflushed_bytes),
            })
            .filter(|t| t.bytes() > 0)
            .collect();
        let static_files = datadir.join("static_files");
        Ok(Self {
            tables,
            mdbx_file_bytes: s.mdbx_file_bytes,
            mdbx_allocated_bytes: crate::allocated_bytes(&datadir.join("db").join("mdbx.dat")),
            datadir_allocated_bytes: crate::allocated_bytes(datadir),
            rocksdb_dir_bytes: s.rocksdb_dir_bytes,
            upstream_rocksdb_dir_bytes: crate::dir_bytes(&upstream_dir),
            static_files_bytes: crate::dir_bytes(&static_files),
            static_file_segments: static_file_segments(&static_files),
        })
    }

    fn table(&self, name: &str) -> Option<&TableDisk> {
        self.tables.iter().find(|t| t.table == name)
    }

    /// A logical table's bytes wherever they are (MDBX, either RocksDB, its static-file
    /// segment), and where: `None` when the datadir holds none.
    pub fn logical_table(&self, name: &str) -> Option<(u64, String)> {
        let table = self.table(name).filter(|t| t.bytes() > 0);
        let segment = self
            .static_file_segments
            .iter()
            .find(|(segment, bytes)| segment_table(segment) == Some(name) && **bytes > 0);
        let mut places = Vec::new();
        let mut bytes = 0;
        if let Some(t) = table {
            bytes += t.bytes();
            places.push(t.place());
        }
        if let Some((_, b)) = segment {
            bytes += b;
            places.push("static files".to_string());
        }
        (!places.is_empty()).then(|| (bytes, places.join(" + ")))
    }

    /// Every logical table this datadir holds, in its own order then its segments'.
    fn logical_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tables.iter().map(|t| t.table.clone()).collect();
        for segment in self.static_file_segments.keys() {
            if let Some(table) = segment_table(segment)
                && !names.iter().any(|n| n == table)
            {
                names.push(table.to_string());
            }
        }
        names
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
    let cell = |d: &DiskRecord, name: &str| match d.logical_table(name) {
        None => (String::from("-"), 0),
        Some((bytes, place)) => (format!("{} ({place})", mib(bytes)), bytes),
    };
    let mut names = b.logical_names();
    for name in k.logical_names() {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let (mut moved_b, mut moved_k) = (0u64, 0u64);
    for name in &names {
        let name = name.as_str();
        let ((bc, bb), (kc, kb)) = (cell(b, name), cell(k, name));
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
        ("mdbx.dat, length", b.mdbx_file_bytes, k.mdbx_file_bytes),
        (
            "mdbx.dat, on disk",
            b.mdbx_allocated_bytes,
            k.mdbx_allocated_bytes,
        ),
        ("hybrid-rocksdb/", b.rocksdb_dir_bytes, k.rocksdb_dir_bytes),
        (
            "rocksdb/ (reth's)",
            b.upstream_rocksdb_dir_bytes,
            k.upstream_rocksdb_dir_bytes,
        ),
        ("static_files/", b.static_files_bytes, k.static_files_bytes),
        (
            "the whole datadir, on disk (du)",
            b.datadir_allocated_bytes,
            k.datadir_allocated_bytes,
        ),
    ] {
        if bv == 0 && kv == 0 {
            // Not recorded (a report.json from before the field) or truly empty: no row.
            continue;
        }
        let ratio = match bv {
            0 => String::new(),
            _ => format!("{:.2}x", kv as f64 / bv as f64),
        };
        let _ = writeln!(s, "| **{what}** | {} | {} | {ratio} |", mib(bv), mib(kv));
    }
    if moved_b > 0 {
        let _ = writeln!(
            s,
            "
The tables {} keeps in RocksDB: {} there vs {} in {}: **{:.2}x**.",
            cfg.candidate.name,
            mib(moved_k),
            mib(moved_b),
            cfg.baseline.name,
            moved_k as f64 / moved_b as f64
        );
    }
}

/// Mean CPU per measured block over `side`'s runs, (user, system) ms: each kind of thread, and
/// the node's total (exited threads included).
type CpuPerBlock = (BTreeMap<String, (f64, f64)>, (f64, f64));

fn cpu_per_block(cfg: &RunConfig, side: &str) -> Option<CpuPerBlock> {
    let runs: Vec<(u64, &GroupCpu)> = cfg
        .runs
        .iter()
        .filter(|r| r.side == side)
        .filter_map(|r| Some((r.blocks.filter(|&b| b > 0)?, r.cpu.as_ref()?)))
        .collect();
    if runs.is_empty() {
        return None;
    }
    let mut kinds: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    let mut total = (0.0, 0.0);
    let n = runs.len() as f64;
    let add = |cell: &mut (f64, f64), row: &ThreadCpu, blocks: u64| {
        cell.0 += row.user_ms / blocks as f64 / n;
        cell.1 += row.system_ms / blocks as f64 / n;
    };
    for (blocks, cpu) in runs {
        for row in &cpu.threads {
            add(kinds.entry(row.name.clone()).or_default(), row, blocks);
        }
        add(&mut total, &cpu.total, blocks);
    }
    Some((kinds, total))
}

/// Kinds of thread shown by name; the rest are summed in one row.
const CPU_ROWS: usize = 10;

/// The CPU section: per kind of thread, each side's user and system time per measured block.
fn cpu_section(s: &mut String, cfg: &RunConfig) {
    let (Some((b, b_total)), Some((k, k_total))) = (
        cpu_per_block(cfg, "baseline"),
        cpu_per_block(cfg, "candidate"),
    ) else {
        return;
    };
    let zero = (0.0, 0.0);
    let mut names: Vec<&String> = b.keys().chain(k.keys()).collect();
    names.sort();
    names.dedup();
    let total = |c: &(f64, f64)| c.0 + c.1;
    let largest = |name: &String| {
        total(b.get(name).unwrap_or(&zero)).max(total(k.get(name).unwrap_or(&zero)))
    };
    names.sort_by(|x, y| largest(y).total_cmp(&largest(x)).then(x.cmp(y)));
    let _ = writeln!(
        s,
        "
### CPU per block, by thread

Each node's CPU over the measured blocks (user + system, from `/proc`, read once the node had \
idled after its warmup and again after its last block), in ms per block, the mean of each \
side's runs; threads of one kind (`reth-rayon-*`) summed. On a machine with few cores, CPU \
that persistence uses beside execution slows execution too.
"
    );
    let _ = writeln!(
        s,
        "| thread | {} user + system | {} user + system | {} − {} |",
        cfg.baseline.name, cfg.candidate.name, cfg.candidate.name, cfg.baseline.name
    );
    let _ = writeln!(s, "|---|---:|---:|---:|");
    let cell = |c: &(f64, f64)| format!("{:.2} + {:.2}", c.0, c.1);
    let row = |s: &mut String, name: &str, bc: (f64, f64), kc: (f64, f64)| {
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {:+.2} |",
            cell(&bc),
            cell(&kc),
            total(&kc) - total(&bc)
        );
    };
    let (mut rest_b, mut rest_k) = (zero, zero);
    for (i, name) in names.iter().enumerate() {
        let (bc, kc) = (
            *b.get(*name).unwrap_or(&zero),
            *k.get(*name).unwrap_or(&zero),
        );
        if i < CPU_ROWS {
            row(s, &format!("`{name}`"), bc, kc);
        } else {
            for (acc, c) in [(&mut rest_b, bc), (&mut rest_k, kc)] {
                acc.0 += c.0;
                acc.1 += c.1;
            }
        }
    }
    if names.len() > CPU_ROWS {
        row(
            s,
            &format!("{} other kinds", names.len() - CPU_ROWS),
            rest_b,
            rest_k,
        );
    }
    row(
        s,
        "**the whole node** (threads that exited too)",
        b_total,
        k_total,
    );
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
        cpu_section(&mut s, cfg);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A run whose kinds of thread are `threads` and whose node in all used their sum plus
    /// `exited` user ms.
    fn run(side: &str, blocks: u64, threads: &[(&str, f64, f64)], exited: f64) -> RunRecord {
        let threads: Vec<ThreadCpu> = threads
            .iter()
            .map(|&(name, user_ms, system_ms)| ThreadCpu {
                name: name.into(),
                threads: 1,
                user_ms,
                system_ms,
            })
            .collect();
        let total = ThreadCpu {
            name: "all".into(),
            threads: threads.len(),
            user_ms: threads.iter().map(|t| t.user_ms).sum::<f64>() + exited,
            system_ms: threads.iter().map(|t| t.system_ms).sum(),
        };
        RunRecord {
            side: side.into(),
            blocks: Some(blocks),
            cpu: Some(GroupCpu { threads, total }),
            ..RunRecord::default()
        }
    }

    fn config(runs: Vec<RunRecord>) -> RunConfig {
        RunConfig {
            baseline: SetupConfig {
                name: "stock-v2".into(),
                ..SetupConfig::default()
            },
            candidate: SetupConfig {
                name: "hybrid".into(),
                ..SetupConfig::default()
            },
            runs,
            ..RunConfig::default()
        }
    }

    #[test]
    fn cpu_per_block_is_each_sides_mean_over_its_runs() {
        let cfg = config(vec![
            run("baseline", 100, &[("persistence", 500.0, 100.0)], 0.0),
            run(
                "candidate",
                100,
                &[
                    ("persistence", 800.0, 200.0),
                    ("mdbx-rs-txn-mgr", 0.0, 900.0),
                ],
                100.0,
            ),
            run("candidate", 200, &[("persistence", 1200.0, 200.0)], 0.0),
            run("baseline", 50, &[("persistence", 350.0, 50.0)], 0.0),
        ]);
        let (b, b_total) = cpu_per_block(&cfg, "baseline").expect("recorded");
        let (k, k_total) = cpu_per_block(&cfg, "candidate").expect("recorded");
        // (5 + 7) / 2 user, (1 + 1) / 2 system; the candidate's (8 + 6) / 2 and (2 + 1) / 2,
        // and a kind one run lacks counts as 0 there.
        assert_eq!(b["persistence"], (6.0, 1.0));
        assert_eq!(k["persistence"], (7.0, 1.5));
        assert_eq!(k["mdbx-rs-txn-mgr"], (0.0, 4.5));
        assert_eq!(b_total, (6.0, 1.0));
        // The exited threads' 1 ms a block in the first run shows in the whole node only.
        assert_eq!(k_total, (7.5, 6.0));
        let mut s = String::new();
        cpu_section(&mut s, &cfg);
        assert!(
            s.contains("| `mdbx-rs-txn-mgr` | 0.00 + 0.00 | 0.00 + 4.50 | +4.50 |"),
            "{s}"
        );
        assert!(
            s.contains("| `persistence` | 6.00 + 1.00 | 7.00 + 1.50 | +1.50 |"),
            "{s}"
        );
        assert!(
            s.contains("| **the whole node** (threads that exited too) | 6.00 + 1.00 | 7.50 + 6.00 | +6.50 |"),
            "{s}"
        );
    }

    #[test]
    fn kinds_are_ordered_by_the_larger_sides_figure() {
        // a: 10 ms on the baseline, 1 on the candidate; b: 2 and 8; c: 5 and 5. Ordered by
        // the baseline alone: a, c, b; by the candidate alone: b, c, a; by the larger: a, b, c.
        let cfg = config(vec![
            run(
                "baseline",
                1,
                &[("a", 10.0, 0.0), ("b", 2.0, 0.0), ("c", 5.0, 0.0)],
                0.0,
            ),
            run(
                "candidate",
                1,
                &[("a", 1.0, 0.0), ("b", 8.0, 0.0), ("c", 5.0, 0.0)],
                0.0,
            ),
        ]);
        let mut s = String::new();
        cpu_section(&mut s, &cfg);
        let at = |name: &str| s.find(&format!("| `{name}` |")).expect(name);
        assert!(at("a") < at("b") && at("b") < at("c"), "{s}");
    }

    #[test]
    fn kinds_beyond_the_first_ten_are_summed_and_runs_without_figures_show_nothing() {
        let many: Vec<(String, f64)> = (0..13)
            .map(|i| (format!("t{i:02}"), 100.0 * (i + 1) as f64))
            .collect();
        let rows: Vec<(&str, f64, f64)> =
            many.iter().map(|(n, ms)| (n.as_str(), *ms, 0.0)).collect();
        let cfg = config(vec![
            run("baseline", 100, &rows, 0.0),
            run("candidate", 100, &rows, 0.0),
        ]);
        let mut s = String::new();
        cpu_section(&mut s, &cfg);
        // t00..t02 (1, 2, 3 ms a block) are the three smallest: one row of 6 ms.
        assert!(
            s.contains("| 3 other kinds | 6.00 + 0.00 | 6.00 + 0.00 | +0.00 |"),
            "{s}"
        );
        assert!(!s.contains("`t02`") && s.contains("`t03`"), "{s}");
        let mut none = config(vec![RunRecord {
            side: "baseline".into(),
            ..RunRecord::default()
        }]);
        none.runs.push(run("candidate", 100, &rows, 0.0));
        let mut s = String::new();
        cpu_section(&mut s, &none);
        assert!(s.is_empty(), "one side without figures: no section");
    }
}
