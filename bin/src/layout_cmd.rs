//! `reth-hybrid layout get`: which engine holds each table, as recorded in the datadir.

use eyre::WrapErr;
use reth_hybrid_api::{EngineKind, Tables, raw::RawEngine};
use reth_hybrid_hybrid::{Layout, control::get_bytes, layout::LAYOUT_KEY};
use reth_hybrid_mdbx::MdbxEngine;
use std::{io::Write, path::PathBuf};

#[derive(Debug, clap::Subcommand)]
pub enum LayoutCommand {
    /// Print the layout recorded in a datadir (read-only; changes nothing).
    Get {
        #[arg(long)]
        datadir: PathBuf,
        /// Print JSON: {"recorded": bool, "tables": {"Table": "engine", ...}}.
        #[arg(long)]
        json: bool,
    },
    /// Route an empty table to another engine (a table with rows must be moved with `migrate`).
    Set {
        #[arg(long)]
        datadir: PathBuf,
        #[arg(long, value_parser = crate::migrate_cmd::parse_table)]
        table: Tables,
        #[arg(long)]
        engine: EngineKind,
    },
}

pub fn run(cmd: &LayoutCommand, out: &mut impl Write) -> eyre::Result<()> {
    let (datadir, json) = match cmd {
        LayoutCommand::Get { datadir, json } => (datadir, json),
        LayoutCommand::Set {
            datadir,
            table,
            engine,
        } => {
            reth_hybrid_migrate::layout_set::set_table_engine(datadir, *table, *engine)
                .wrap_err_with(|| {
                    format!("setting the engine of {table} in {}", datadir.display())
                })?;
            writeln!(out, "{table} is now routed to {engine}")?;
            return Ok(());
        }
    };
    let engine = MdbxEngine::open_read_only(datadir)
        .wrap_err_with(|| format!("opening {} read-only", datadir.display()))?;
    let tx = engine.begin_ro()?;
    let stored = get_bytes(&tx, LAYOUT_KEY)?;
    let recorded = stored.is_some();
    let layout = match stored {
        Some(bytes) => Layout::from_json(&bytes).wrap_err("reading the recorded layout")?,
        None => Layout::default(),
    };
    if *json {
        let tables: serde_json::Map<String, serde_json::Value> = Tables::ALL
            .iter()
            .map(|t| (t.name().to_string(), layout.engine_of(*t).as_str().into()))
            .collect();
        writeln!(
            out,
            "{}",
            serde_json::json!({ "recorded": recorded, "tables": tables })
        )?;
        return Ok(());
    }
    if !recorded {
        writeln!(
            out,
            "no layout recorded in {} (never opened by reth-hybrid); the default would be:",
            datadir.display()
        )?;
    }
    for engine in [EngineKind::RocksDb, EngineKind::Mdbx] {
        let names: Vec<&str> = layout.tables_in(engine).map(|t| t.name()).collect();
        writeln!(out, "{engine} ({}): {}", names.len(), names.join(", "))?;
    }
    Ok(())
}
