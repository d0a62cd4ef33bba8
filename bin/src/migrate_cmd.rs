//! `reth-hybrid migrate`: move tables between MDBX and RocksDB (see docs/migration.md).

use crate::progress::{Bars, bytes};
use eyre::WrapErr;
use reth_hybrid_api::{EngineKind, Tables};
use reth_hybrid_migrate::{
    MigrateReport, MigrateRequest, Plan,
    abandon::{AbandonPlan, abandon, abandon_plan},
    migrate, plan,
};
use std::{io::Write, path::PathBuf};

#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// The reth datadir (the folder that holds db/).
    #[arg(long)]
    pub datadir: PathBuf,
    /// Tables to move, comma-separated (default: AccountsHistory, StoragesHistory,
    /// TransactionHashNumbers, those not yet in the target).
    #[arg(long, value_delimiter = ',', value_parser = parse_table)]
    pub tables: Option<Vec<Tables>>,
    /// Target engine: rocksdb (default) or mdbx (rollback).
    #[arg(long, default_value = "rocksdb")]
    pub to: EngineKind,
    /// Print the plan (tables, rows, bytes, estimated time) and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Afterwards rewrite mdbx.dat compacted, returning the freed pages to the filesystem.
    #[arg(long)]
    pub compact: bool,
    /// Target size of each SST file, in MiB.
    #[arg(long, default_value_t = 256)]
    pub sst_file_mib: u64,
    /// Print JSON (the plan or the report) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Give up the interrupted migration instead of resuming it (for an unreadable state file):
    /// keeps every table where the layout records it, removes the partial copy in the other
    /// engine, the staging files and the state file. With --dry-run, only says what it removes.
    #[arg(long, conflicts_with_all = ["tables", "compact"])]
    pub abandon: bool,
}

pub fn parse_table(s: &str) -> Result<Tables, String> {
    s.trim().parse::<Tables>().map_err(|e| e.to_string())
}

impl MigrateArgs {
    fn request(&self) -> MigrateRequest {
        let mut r = MigrateRequest::new(self.to);
        r.tables = self.tables.clone();
        r.compact = self.compact;
        r.sst_file_bytes = self.sst_file_mib.max(1) << 20;
        r
    }
}

pub fn run(args: &MigrateArgs, out: &mut impl Write) -> eyre::Result<()> {
    let request = args.request();
    if args.abandon {
        let (result, done) = if args.dry_run {
            (abandon_plan(&args.datadir), false)
        } else {
            (abandon(&args.datadir), true)
        };
        let plan = result
            .wrap_err_with(|| format!("abandoning the migration in {}", args.datadir.display()))?;
        if args.json {
            writeln!(out, "{}", serde_json::to_string_pretty(&plan)?)?;
        } else {
            print_abandon(&plan, done, out)?;
        }
        return Ok(());
    }
    if args.dry_run {
        let plan = plan(&args.datadir, &request)
            .wrap_err_with(|| format!("planning the migration of {}", args.datadir.display()))?;
        if args.json {
            writeln!(out, "{}", serde_json::to_string_pretty(&plan)?)?;
        } else {
            print_plan(&plan, out)?;
            writeln!(out, "dry run: nothing was changed")?;
        }
        return Ok(());
    }
    let bars = Bars::new(args.json);
    let report = migrate(&args.datadir, &request, &bars)
        .wrap_err_with(|| format!("migrating {}", args.datadir.display()))?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_report(&report, out)?;
    }
    Ok(())
}

pub fn print_plan(plan: &Plan, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{} {} to {}{}",
        if plan.resume {
            "resuming the migration of"
        } else {
            "plan: migrate"
        },
        plan.datadir.display(),
        plan.to,
        if plan.compact {
            ", then compact mdbx.dat"
        } else {
            ""
        }
    )?;
    for t in &plan.tables {
        writeln!(
            out,
            "  {:<24} {:>14} rows{}  {:>10}  from {}{}",
            t.table.name(),
            t.rows,
            if t.rows_exact { " " } else { "~" },
            bytes(t.bytes),
            t.from,
            if t.done { "  (done)" } else { "" }
        )?;
    }
    for t in &plan.skipped {
        writeln!(out, "  {:<24} already in {}, skipped", t.name(), plan.to)?;
    }
    if plan.tables.is_empty() {
        writeln!(out, "  nothing to migrate")?;
    }
    writeln!(
        out,
        "writes about {} ({} free), estimated {:.0} s",
        bytes(plan.bytes_to_write),
        bytes(plan.free_bytes),
        plan.estimated_seconds
    )?;
    writeln!(out, "command: {}", plan.command)
}

fn print_report(report: &MigrateReport, out: &mut impl Write) -> std::io::Result<()> {
    print_plan(&report.plan, out)?;
    for t in &report.tables {
        writeln!(
            out,
            "migrated {:<24} {:>12} rows  checksum {}  {} -> {}  {:.1} s ({:.0} rows/s)",
            t.table.name(),
            t.rows,
            &t.checksum[..16],
            bytes(t.source_bytes),
            bytes(t.target_bytes),
            t.seconds,
            t.rows as f64 / t.seconds.max(1e-9)
        )?;
    }
    if let Some((before, after)) = report.compacted {
        writeln!(
            out,
            "compacted mdbx.dat: {} -> {} on disk ({} returned to the filesystem)",
            bytes(before),
            bytes(after),
            bytes(before.saturating_sub(after))
        )?;
    }
    writeln!(
        out,
        "done in {:.1} s; every table verified (rows and checksum, both engines)",
        report.seconds
    )
}

fn print_abandon(plan: &AbandonPlan, done: bool, out: &mut impl Write) -> std::io::Result<()> {
    let Some(state) = &plan.state else {
        return writeln!(
            out,
            "no migration in progress in {}; nothing to abandon",
            plan.datadir.display()
        );
    };
    writeln!(out, "abandoning in {}: {state}", plan.datadir.display())?;
    let verb = if done { "removed" } else { "would remove" };
    for c in &plan.partial_copies {
        writeln!(
            out,
            "  {:<24} {verb} the partial copy in {}; the table stays in {}",
            c.table.name(),
            c.removed_from,
            c.kept_in
        )?;
    }
    for t in &plan.rollback_positions {
        writeln!(out, "  {:<24} {verb} the rollback position", t.name())?;
    }
    for f in &plan.files {
        writeln!(out, "  {verb} {}", f.display())?;
    }
    let rocks: Vec<&str> = plan
        .layout
        .iter()
        .filter(|(_, e)| *e == EngineKind::RocksDb)
        .map(|(t, _)| t.name())
        .collect();
    writeln!(
        out,
        "tables in RocksDB afterwards: {}",
        if rocks.is_empty() {
            "none".to_string()
        } else {
            rocks.join(", ")
        }
    )?;
    if done {
        writeln!(
            out,
            "the migration was abandoned; `reth-hybrid verify` checks the datadir, and \
             `reth-hybrid migrate` starts a new one"
        )
    } else {
        writeln!(out, "dry run: nothing was changed")
    }
}
