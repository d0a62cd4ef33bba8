//! `reth-hybrid tables`: the catalogue of reth v2.5.1 tables and where the default layout puts them.

use reth_hybrid_api::Tables;
use serde::Serialize;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct TablesArgs {
    /// Print JSON (one array of objects) instead of a table.
    #[arg(long)]
    json: bool,
}

/// One catalogue row, as printed.
#[derive(Debug, Serialize)]
struct TableRow {
    table: Tables,
    dupsort: bool,
    key: &'static str,
    subkey: Option<&'static str>,
    value: &'static str,
    default_engine: reth_hybrid_api::EngineKind,
}

fn rows() -> Vec<TableRow> {
    Tables::ALL
        .into_iter()
        .map(|table| TableRow {
            table,
            dupsort: table.is_dupsort(),
            key: table.key_type(),
            subkey: table.subkey_type(),
            value: table.value_type(),
            default_engine: table.default_engine(),
        })
        .collect()
}

pub fn run(args: &TablesArgs, out: &mut impl Write) -> eyre::Result<()> {
    let rows = rows();
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &rows)?;
        writeln!(out)?;
        return Ok(());
    }
    let header = (
        "TABLE",
        "DUPSORT",
        "KEY (SUBKEY)",
        "VALUE",
        "DEFAULT ENGINE",
    );
    writeln!(
        out,
        "{:<28} {:<8} {:<26} {:<28} {}",
        header.0, header.1, header.2, header.3, header.4
    )?;
    for r in &rows {
        let key = match r.subkey {
            Some(sub) => format!("{} ({sub})", r.key),
            None => r.key.to_string(),
        };
        let dup = if r.dupsort { "yes" } else { "no" };
        writeln!(
            out,
            "{:<28} {:<8} {:<26} {:<28} {}",
            r.table, dup, key, r.value, r.default_engine
        )?;
    }
    let rocks = rows
        .iter()
        .filter(|r| r.default_engine == reth_hybrid_api::EngineKind::RocksDb)
        .count();
    writeln!(
        out,
        "\n{} tables: {} in MDBX, {} in RocksDB by default",
        rows.len(),
        rows.len() - rocks,
        rocks
    )?;
    Ok(())
}
