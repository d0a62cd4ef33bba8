//! `reth-hybrid verify`: exit code 0 when the datadir passes, 1 when a check fails.

use crate::progress::Bars;
use eyre::WrapErr;
use reth_hybrid_migrate::verify::{Outcome, VerifyReport, verify};
use std::{io::Write, path::PathBuf};

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    #[arg(long)]
    pub datadir: PathBuf,
    #[arg(long)]
    pub json: bool,
}

/// Runs the checks, prints them, and returns whether they passed.
pub fn run(args: &VerifyArgs, out: &mut impl Write) -> eyre::Result<bool> {
    let bars = Bars::new(args.json);
    let report = verify(&args.datadir, &bars)
        .wrap_err_with(|| format!("verifying {}", args.datadir.display()))?;
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        v["passed"] = report.passed().into();
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        print(&report, true, out)?;
    }
    Ok(report.passed())
}

/// Prints the checks, and with `tables` each non-empty table's rows and checksum.
pub fn print(report: &VerifyReport, tables: bool, out: &mut impl Write) -> std::io::Result<()> {
    for c in &report.checks {
        let tag = match c.outcome {
            Outcome::Pass => "PASS",
            Outcome::Warn => "WARN",
            Outcome::Fail => "FAIL",
        };
        writeln!(out, "{tag}  {:<10} {}", c.name, c.detail)?;
    }
    for t in report.tables.iter().filter(|t| tables && t.rows > 0) {
        writeln!(
            out,
            "      {:<28} {:<8} {:>12} rows  checksum {}{}",
            t.table.name(),
            t.engine.as_str(),
            t.rows,
            t.checksum,
            match &t.first_error {
                Some(e) => format!("  {} undecodable, first: {e}", t.undecodable),
                None => String::new(),
            }
        )?;
    }
    writeln!(
        out,
        "{}",
        if report.passed() {
            "verify: PASSED"
        } else {
            "verify: FAILED"
        }
    )
}
