//! `reth-hybrid stats`: per table its engine, entries and bytes; totals per engine. Read-only.

use crate::progress::bytes;
use eyre::WrapErr;
use reth_hybrid_api::EngineKind;
use reth_hybrid_migrate::stats::stats;
use std::{io::Write, path::PathBuf};

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    #[arg(long)]
    pub datadir: PathBuf,
    /// Count RocksDB rows exactly (a full scan) instead of RocksDB's estimate.
    #[arg(long)]
    pub exact: bool,
    /// Also list empty tables.
    #[arg(long)]
    pub all: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &StatsArgs, out: &mut impl Write) -> eyre::Result<()> {
    let s = stats(&args.datadir, args.exact)
        .wrap_err_with(|| format!("reading {}", args.datadir.display()))?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&s)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<28} {:<8} {:>14} {:>11} {:>14} {:>11}",
        "table", "engine", "mdbx rows", "mdbx bytes", "rocksdb rows", "rocks bytes"
    )?;
    for t in &s.tables {
        if !args.all && t.mdbx_entries == 0 && t.rocksdb_entries == 0 && t.rocksdb_bytes == 0 {
            continue;
        }
        writeln!(
            out,
            "{:<28} {:<8} {:>14} {:>11} {:>13}{} {:>11}",
            t.table.name(),
            t.engine.as_str(),
            t.mdbx_entries,
            bytes(t.mdbx_bytes),
            t.rocksdb_entries,
            if t.rocksdb_entries_exact { " " } else { "~" },
            bytes(t.rocksdb_bytes)
        )?;
    }
    let routed = |e: EngineKind| s.tables.iter().filter(|t| t.engine == e).count();
    writeln!(
        out,
        "mdbx:    {} tables routed, {} rows, {} in table pages; mdbx.dat {} ",
        routed(EngineKind::Mdbx),
        s.mdbx.entries,
        bytes(s.mdbx.bytes),
        bytes(s.mdbx_file_bytes)
    )?;
    writeln!(
        out,
        "rocksdb: {} tables routed, {}{} rows, {} in SST files and memtables; hybrid-rocksdb/ {} (WAL {})",
        routed(EngineKind::RocksDb),
        s.rocksdb.entries,
        if args.exact { "" } else { "~" },
        bytes(s.rocksdb.bytes),
        bytes(s.rocksdb_dir_bytes),
        bytes(s.rocksdb_wal_bytes)
    )?;
    if !s.layout_recorded {
        writeln!(
            out,
            "note: no layout recorded (never opened by reth-hybrid); engines inferred from the rows"
        )?;
    }
    match &s.upstream_rocksdb {
        Some(cfs) if cfs.iter().any(|c| c.has_rows) => {
            let with_rows: Vec<String> = cfs
                .iter()
                .filter(|c| c.has_rows)
                .map(|c| format!("{} ~{}", c.name, c.estimated_rows))
                .collect();
            writeln!(
                out,
                "WARNING: reth's own <datadir>/rocksdb holds rows ({}): a storage-v2 datadir; reth-hybrid will not mix it",
                with_rows.join(", ")
            )?;
        }
        Some(_) => writeln!(
            out,
            "reth's own <datadir>/rocksdb exists and is empty (normal for reth's v1 layout)"
        )?,
        None => {}
    }
    if s.migration_in_progress {
        writeln!(
            out,
            "WARNING: a migration is in progress; run the same `reth-hybrid migrate` again to finish it"
        )?;
    }
    Ok(())
}
