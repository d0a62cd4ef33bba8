//! reth-bench's output folders: `combined_latency.csv` (2.x: ten columns; 1.x: the first seven)
//! and `total_gas.csv`, latencies in microseconds; and the JSON report of reth-bench's successor,
//! tempoxyz/txgen (`bench send-blocks --report json:<file>`), read as reth's own converter reads
//! it (`.github/scripts/bench-txgen-report-to-reth-csv.py`). Rows are keyed by block number
//! (reth-bench writes them in order, but nothing here depends on it); every malformed input is
//! an error that names the file, the line (or block) and the problem.

use serde::Serialize;
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

pub const COMBINED_LATENCY_CSV: &str = "combined_latency.csv";
pub const TOTAL_GAS_CSV: &str = "total_gas.csv";
/// The name a txgen report is looked for under in a run folder.
pub const TXGEN_REPORT: &str = "report.json";

const COMBINED_V1: [&str; 7] = [
    "block_number",
    "gas_limit",
    "transaction_count",
    "gas_used",
    "new_payload_latency",
    "fcu_latency",
    "total_latency",
];
const COMBINED_V2_EXTRA: [&str; 3] = [
    "persistence_wait",
    "execution_cache_wait",
    "sparse_trie_wait",
];
const TOTAL_GAS: [&str; 4] = ["block_number", "transaction_count", "gas_used", "time"];

/// Which reth-bench wrote the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Format {
    /// reth-bench 1.x: seven columns, client-side latencies, no wait columns.
    V1,
    /// reth-bench 2.x: ten columns, with the persistence, execution-cache and sparse-trie waits.
    V2,
    /// A txgen `send-blocks` JSON report: server-side newPayload latency in microseconds (else
    /// the client's, in whole milliseconds), forkchoiceUpdated in whole milliseconds, the waits
    /// where the node reported them.
    Txgen,
}

/// One block of `combined_latency.csv` (latencies in microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BlockRow {
    pub block_number: u64,
    pub gas_limit: u64,
    pub transaction_count: u64,
    pub gas_used: u64,
    pub new_payload_us: u64,
    pub fcu_us: u64,
    pub total_us: u64,
    /// 2.x only.
    pub persistence_wait_us: Option<u64>,
    pub execution_cache_wait_us: Option<u64>,
    pub sparse_trie_wait_us: Option<u64>,
}

/// One run: the parsed folder.
#[derive(Debug, Clone, Serialize)]
pub struct RunData {
    pub dir: PathBuf,
    pub format: Format,
    /// Sorted by block number, one row per block.
    pub blocks: Vec<BlockRow>,
    /// `time` of the last row of `total_gas.csv`: the run's wall clock (minus block-fetch waits),
    /// in microseconds; `None` when the file is absent.
    pub wall_clock_us: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{file}:{line}: {problem}")]
    Malformed {
        file: PathBuf,
        line: u64,
        problem: String,
    },
    #[error("{file}: {problem}")]
    Mismatch { file: PathBuf, problem: String },
    #[error("reading {file}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn malformed(file: &Path, line: u64, problem: impl Into<String>) -> FileError {
    FileError::Malformed {
        file: file.to_path_buf(),
        line,
        problem: problem.into(),
    }
}

/// A data line: its line number and its fields.
type CsvRow = (u64, Vec<String>);

/// Reads a CSV file as (line number, fields), after checking its header is one of `headers`.
/// Returns which header matched.
fn read_csv(file: &Path, headers: &[&[&str]]) -> Result<(usize, Vec<CsvRow>), FileError> {
    let text = std::fs::read_to_string(file).map_err(|source| FileError::Io {
        file: file.to_path_buf(),
        source,
    })?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut records = reader.records();
    let header = match records.next() {
        None => return Err(malformed(file, 1, "empty file (no header)")),
        Some(Err(e)) => return Err(malformed(file, 1, e.to_string())),
        Some(Ok(h)) => h,
    };
    let header: Vec<&str> = header.iter().map(str::trim).collect();
    let which = headers
        .iter()
        .position(|h| *h == header.as_slice())
        .ok_or_else(|| {
            malformed(
                file,
                1,
                format!(
                    "unexpected header `{}`; expected `{}`",
                    header.join(","),
                    headers
                        .iter()
                        .map(|h| h.join(","))
                        .collect::<Vec<_>>()
                        .join("` or `")
                ),
            )
        })?;
    let width = headers[which].len();
    let mut rows = Vec::new();
    for record in records {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            malformed(file, line, e.to_string())
        })?;
        let line = record.position().map_or(0, |p| p.line());
        if record.len() == 1 && record.get(0).is_some_and(|f| f.trim().is_empty()) {
            continue;
        }
        if record.len() != width {
            return Err(malformed(
                file,
                line,
                format!(
                    "{} fields, the header has {width}{}",
                    record.len(),
                    if record.len() < width {
                        " (truncated file?)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        rows.push((line, record.iter().map(|f| f.trim().to_string()).collect()));
    }
    if rows.is_empty() {
        return Err(malformed(file, 2, "no rows after the header"));
    }
    Ok((which, rows))
}

fn field(file: &Path, line: u64, name: &str, value: &str) -> Result<u64, FileError> {
    value.parse::<u64>().map_err(|_| {
        malformed(
            file,
            line,
            format!("column {name}: `{value}` is not a non-negative integer"),
        )
    })
}

/// Whether `path` is one run: a reth-bench output folder, a folder holding a txgen report, or a
/// txgen report file.
pub fn is_run(path: &Path) -> bool {
    path.join(COMBINED_LATENCY_CSV).exists()
        || is_txgen_report(&path.join(TXGEN_REPORT))
        || (path.extension().is_some_and(|e| e == "json") && is_txgen_report(path))
}

/// A JSON object with txgen's `run_stats` (not, say, `bench compare`'s own `report.json`).
fn is_txgen_report(file: &Path) -> bool {
    file.is_file()
        && std::fs::read(file).ok().is_some_and(|bytes| {
            serde_json::from_slice::<serde_json::Value>(&bytes)
                .is_ok_and(|v| v.get("run_stats").is_some_and(|s| s.is_object()))
        })
}

/// Reads one run: a reth-bench output folder, or a txgen report (the file, or a folder holding
/// `report.json`).
pub fn read_run(dir: &Path) -> Result<RunData, FileError> {
    if dir.is_file() {
        return read_txgen(dir);
    }
    if !dir.join(COMBINED_LATENCY_CSV).exists() && is_txgen_report(&dir.join(TXGEN_REPORT)) {
        return read_txgen(&dir.join(TXGEN_REPORT));
    }
    read_reth_bench(dir)
}

/// txgen's `BlockStats` (crates/bench-core/src/metrics.rs); unknown fields are ignored.
#[derive(Debug, serde::Deserialize)]
struct TxgenBlock {
    number: u64,
    tx_count: u64,
    gas_used: u64,
    gas_limit: u64,
    new_payload_ms: u64,
    forkchoice_updated_ms: u64,
    new_payload_server_latency_us: Option<u64>,
    persistence_wait_us: Option<u64>,
    execution_cache_wait_us: Option<u64>,
    sparse_trie_wait_us: Option<u64>,
}

#[derive(Debug, serde::Deserialize)]
struct TxgenRunStats {
    duration_ms: u64,
}

#[derive(Debug, serde::Deserialize)]
struct TxgenReport {
    #[serde(default)]
    blocks: Vec<TxgenBlock>,
    run_stats: Option<TxgenRunStats>,
}

/// Reads a txgen report. newPayload is the server's latency where the node gave it (as reth's
/// converter does), forkchoiceUpdated the client's (txgen records it in whole milliseconds),
/// total their sum; the wall clock is the run's `duration_ms`.
fn read_txgen(file: &Path) -> Result<RunData, FileError> {
    let text = std::fs::read(file).map_err(|source| FileError::Io {
        file: file.to_path_buf(),
        source,
    })?;
    let report: TxgenReport = serde_json::from_slice(&text).map_err(|e| {
        malformed(
            file,
            e.line() as u64,
            format!("not a txgen send-blocks report: {e}"),
        )
    })?;
    if report.blocks.is_empty() {
        return Err(malformed(file, 1, "a txgen report without blocks"));
    }
    let mut by_block = BTreeMap::new();
    for b in &report.blocks {
        if b.gas_used > b.gas_limit {
            return Err(FileError::Mismatch {
                file: file.to_path_buf(),
                problem: format!(
                    "block {}: gas_used {} exceeds gas_limit {}",
                    b.number, b.gas_used, b.gas_limit
                ),
            });
        }
        let new_payload_us = b
            .new_payload_server_latency_us
            .unwrap_or(b.new_payload_ms * 1000);
        let fcu_us = b.forkchoice_updated_ms * 1000;
        let row = BlockRow {
            block_number: b.number,
            gas_limit: b.gas_limit,
            transaction_count: b.tx_count,
            gas_used: b.gas_used,
            new_payload_us,
            fcu_us,
            total_us: new_payload_us + fcu_us,
            persistence_wait_us: b.persistence_wait_us,
            execution_cache_wait_us: b.execution_cache_wait_us,
            sparse_trie_wait_us: b.sparse_trie_wait_us,
        };
        if by_block.insert(b.number, row).is_some() {
            return Err(FileError::Mismatch {
                file: file.to_path_buf(),
                problem: format!("block {} appears twice", b.number),
            });
        }
    }
    Ok(RunData {
        dir: file.to_path_buf(),
        format: Format::Txgen,
        blocks: by_block.into_values().collect(),
        wall_clock_us: report.run_stats.map(|s| s.duration_ms * 1000),
    })
}

/// Reads one reth-bench output folder.
fn read_reth_bench(dir: &Path) -> Result<RunData, FileError> {
    let combined = dir.join(COMBINED_LATENCY_CSV);
    let v2: Vec<&str> = COMBINED_V1
        .iter()
        .chain(COMBINED_V2_EXTRA.iter())
        .copied()
        .collect();
    let (which, rows) = read_csv(&combined, &[&COMBINED_V1, &v2])?;
    let format = if which == 0 { Format::V1 } else { Format::V2 };
    let names: &[&str] = if which == 0 { &COMBINED_V1 } else { &v2 };
    let mut by_block: BTreeMap<u64, (u64, BlockRow)> = BTreeMap::new();
    for (line, fields) in rows {
        let mut v = [0u64; 10];
        for (i, (name, value)) in names.iter().zip(&fields).enumerate() {
            v[i] = field(&combined, line, name, value)?;
        }
        let row = BlockRow {
            block_number: v[0],
            gas_limit: v[1],
            transaction_count: v[2],
            gas_used: v[3],
            new_payload_us: v[4],
            fcu_us: v[5],
            total_us: v[6],
            persistence_wait_us: (format == Format::V2).then_some(v[7]),
            execution_cache_wait_us: (format == Format::V2).then_some(v[8]),
            sparse_trie_wait_us: (format == Format::V2).then_some(v[9]),
        };
        if row.gas_used > row.gas_limit {
            return Err(malformed(
                &combined,
                line,
                format!(
                    "gas_used {} exceeds gas_limit {}",
                    row.gas_used, row.gas_limit
                ),
            ));
        }
        if let Some((first, _)) = by_block.insert(row.block_number, (line, row)) {
            return Err(malformed(
                &combined,
                line,
                format!(
                    "block {} appears twice (also on line {first})",
                    row.block_number
                ),
            ));
        }
    }
    let blocks: Vec<BlockRow> = by_block.into_values().map(|(_, r)| r).collect();

    let total_gas = dir.join(TOTAL_GAS_CSV);
    let wall_clock_us = if total_gas.exists() {
        let (_, rows) = read_csv(&total_gas, &[&TOTAL_GAS])?;
        let mut seen = BTreeMap::new();
        let mut last_time = 0;
        for (line, fields) in rows {
            let block = field(&total_gas, line, "block_number", &fields[0])?;
            let gas = field(&total_gas, line, "gas_used", &fields[2])?;
            let time = field(&total_gas, line, "time", &fields[3])?;
            last_time = last_time.max(time);
            if seen.insert(block, gas).is_some() {
                return Err(malformed(
                    &total_gas,
                    line,
                    format!("block {block} appears twice"),
                ));
            }
        }
        let combined_blocks: BTreeMap<u64, u64> = blocks
            .iter()
            .map(|b| (b.block_number, b.gas_used))
            .collect();
        if let Some((block, _)) = seen.iter().find(|(b, _)| !combined_blocks.contains_key(b)) {
            return Err(FileError::Mismatch {
                file: total_gas,
                problem: format!(
                    "block {block} is not in {COMBINED_LATENCY_CSV} (files from different runs?)"
                ),
            });
        }
        if let Some((block, _)) = combined_blocks.iter().find(|(b, _)| !seen.contains_key(b)) {
            return Err(FileError::Mismatch {
                file: total_gas,
                problem: format!(
                    "block {block} of {COMBINED_LATENCY_CSV} is missing (truncated file?)"
                ),
            });
        }
        if let Some((block, gas)) = seen.iter().find(|(b, g)| combined_blocks[b] != **g) {
            return Err(FileError::Mismatch {
                file: total_gas,
                problem: format!(
                    "block {block} used {gas} gas here but {} in {COMBINED_LATENCY_CSV}",
                    combined_blocks[block]
                ),
            });
        }
        Some(last_time)
    } else {
        None
    };
    Ok(RunData {
        dir: dir.to_path_buf(),
        format,
        blocks,
        wall_clock_us,
    })
}
