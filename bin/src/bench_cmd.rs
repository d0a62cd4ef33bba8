//! `reth-hybrid bench`: valid, repeatable reth-bench comparisons (docs/benchmarking.md).

use eyre::{WrapErr, bail};
use reth_hybrid_bench::reth_bench::{
    attribution::{attribution_markdown, read_attribution},
    charts::{write_charts, write_rpc_charts},
    files::{COMBINED_LATENCY_CSV, RunData, TXGEN_REPORT, is_run, read_run},
    orchestrate::{Range, Reset, RunPlan, Setup, run},
    preflight::{Layout, check_layout, check_pair},
    report::{RunConfig, json, markdown},
    rpc::{RpcReport, read_runs, write_report},
    stats::{CompareOptions, compare},
};
use std::{
    io::Write,
    path::{Path, PathBuf},
    time::Duration,
};

#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Compare reth-bench output folders: throughput, latency percentiles, per-block change,
    /// 95% bootstrap intervals, a winner only when the interval clears the noise floor.
    Compare(CompareArgs),
    /// Check that two datadirs make a valid comparison: same chain, same head, and each one's
    /// history really in the engine its label claims.
    Preflight(PreflightArgs),
    /// Run interleaved (ABBA) baseline/candidate pairs of `reth-bench new-payload-fcu`, then
    /// compare them.
    Run(Box<RunArgs>),
    /// Set RPC latency runs (`reth-hybrid-e2e rpc-latency` output, any number per variant) side
    /// by side: p50/p90/p99/p99.9 per call kind, warm and cold, each variant's ratio to the
    /// references at every percentile, histograms, and tail charts.
    RpcReport(RpcReportArgs),
}

#[derive(Debug, clap::Args)]
pub struct RpcReportArgs {
    /// The runs (JSON), grouped by the variant label inside each.
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// A variant the others are compared with (ratio = variant / reference); repeatable. The
    /// first is the baseline every other variant is set against; later ones are compared with
    /// the variants that are not references.
    #[arg(long, required = true)]
    pub reference: Vec<String>,
    /// Write rpc.md, rpc.json and the charts (rpc_latency_warm|cold, SVG and PNG) here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A `reth-hybrid-e2e rpc-attribution` run (where the hybrid's time went, per call kind):
    /// printed after the latency tables, and written as rpc-attribution.md with --out.
    #[arg(long)]
    pub attribution: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Baseline: a reth-bench output folder, or a folder of them (or a `bench run` output, with
    /// the candidate omitted).
    pub baseline: PathBuf,
    /// Candidate: a reth-bench output folder, or a folder of them.
    pub candidate: Option<PathBuf>,
    #[arg(long, default_value = "baseline")]
    pub baseline_name: String,
    #[arg(long, default_value = "candidate")]
    pub candidate_name: String,
    /// Smallest change (in %) ever called a win.
    #[arg(long, default_value_t = 1.2)]
    pub noise_floor: f64,
    #[arg(long, default_value_t = 10_000)]
    pub iterations: usize,
    /// Write report.md, report.json and the charts (SVG and PNG) into this folder.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the JSON report instead of Markdown.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct PreflightArgs {
    #[arg(long)]
    pub baseline_datadir: PathBuf,
    /// Where the baseline's history is: mdbx (reth's storage v1), rocksdb (reth-hybrid) or v2
    /// (reth's storage v2); checked against the datadir.
    #[arg(long, default_value = "mdbx")]
    pub baseline_layout: Layout,
    #[arg(long)]
    pub candidate_datadir: PathBuf,
    /// As --baseline-layout, for the candidate.
    #[arg(long, default_value = "rocksdb")]
    pub candidate_layout: Layout,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[arg(long)]
    pub baseline_datadir: PathBuf,
    /// Shell command that starts the baseline node on this datadir.
    #[arg(long)]
    pub baseline_node: String,
    /// Where the baseline's history is: mdbx (reth's storage v1), rocksdb (reth-hybrid) or v2
    /// (reth's storage v2); checked against the datadir.
    #[arg(long, default_value = "mdbx")]
    pub baseline_layout: Layout,
    #[arg(long)]
    pub baseline_name: Option<String>,
    /// Restore the baseline datadir from this pristine copy before each run (instead of
    /// `stage unwind`).
    #[arg(long)]
    pub baseline_restore_from: Option<PathBuf>,
    #[arg(long)]
    pub candidate_datadir: PathBuf,
    #[arg(long)]
    pub candidate_node: String,
    /// As --baseline-layout, for the candidate.
    #[arg(long, default_value = "rocksdb")]
    pub candidate_layout: Layout,
    #[arg(long)]
    pub candidate_name: Option<String>,
    #[arg(long)]
    pub candidate_restore_from: Option<PathBuf>,
    /// The reth binary used for `stage unwind` (per datadir, the same binary as its node is safest).
    #[arg(long, default_value = "reth")]
    pub reth: String,
    /// The baseline's `stage unwind` binary (default: --reth).
    #[arg(long)]
    pub baseline_reth: Option<String>,
    /// The candidate's `stage unwind` binary (default: --reth). On a hybrid datadir it must be
    /// reth-hybrid-node's hybrid build: reth's own unwind sees only MDBX.
    #[arg(long)]
    pub candidate_reth: Option<String>,
    /// Extra argument for every `stage unwind` (repeatable), e.g. --unwind-arg=--chain
    /// --unwind-arg=dev.
    #[arg(long = "unwind-arg", allow_hyphen_values = true)]
    pub unwind_args: Vec<String>,
    /// reth-bench binary (from reth v2.2.0 or v1.11.4; later reth releases do not ship it).
    #[arg(long, default_value = "reth-bench")]
    pub reth_bench: String,
    /// RPC of a node that serves the blocks (never the node under test).
    #[arg(long)]
    pub rpc_url: String,
    #[arg(long, default_value = "http://127.0.0.1:8551")]
    pub engine_rpc_url: String,
    /// JWT secret file (default: `<datadir>/jwt.hex` of each side).
    #[arg(long)]
    pub jwt_secret: Option<PathBuf>,
    /// Start block: each run resets its datadir to it.
    #[arg(long, requires = "to", conflicts_with = "advance")]
    pub from: Option<u64>,
    /// Last measured block.
    #[arg(long, requires = "from")]
    pub to: Option<u64>,
    /// Measure the next N blocks after the head instead of --from/--to.
    #[arg(long)]
    pub advance: Option<u64>,
    /// Baseline/candidate pairs (ABBA order).
    #[arg(long, default_value_t = 3)]
    pub pairs: usize,
    /// Blocks replayed before the measured ones in every run (kept in `warmup/`).
    #[arg(long, default_value_t = 10)]
    pub warmup_blocks: u64,
    /// New folder for every run's raw output and the report.
    #[arg(long)]
    pub output: PathBuf,
    /// Extra argument for every reth-bench call (repeatable), e.g. --bench-arg=--reth-new-payload.
    #[arg(long = "bench-arg", allow_hyphen_values = true)]
    pub bench_args: Vec<String>,
    /// Seconds to wait for a node's engine port.
    #[arg(long, default_value_t = 300)]
    pub start_timeout: u64,
    #[arg(long, default_value_t = 1.2)]
    pub noise_floor: f64,
}

/// The runs under `path`: itself if it is one (a reth-bench folder, a txgen report or a folder
/// holding one), else its entries that are (whose names start with `prefix`, when given), sorted.
fn collect_runs(path: &Path, prefix: Option<&str>) -> eyre::Result<Vec<RunData>> {
    if is_run(path) {
        return Ok(vec![read_run(path)?]);
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(path)
        .wrap_err_with(|| format!("reading {}", path.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| is_run(p))
        .filter(|p| {
            prefix.is_none_or(|pre| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(pre))
            })
        })
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        bail!(
            "{} holds no reth-bench output ({COMBINED_LATENCY_CSV} in it or in its subfolders) \
             and no txgen report ({TXGEN_REPORT} or a .json report)",
            path.display()
        );
    }
    dirs.iter()
        .map(|d| read_run(d).map_err(Into::into))
        .collect()
}

fn write_reports(
    out: &Path,
    comparison: &reth_hybrid_bench::reth_bench::stats::Comparison,
    config: Option<&RunConfig>,
    log: &mut impl Write,
) -> eyre::Result<()> {
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("report.md"), markdown(comparison, config))?;
    std::fs::write(
        out.join("report.json"),
        serde_json::to_vec_pretty(&json(comparison, config))?,
    )?;
    match write_charts(comparison, out) {
        Ok(files) => writeln!(
            log,
            "wrote {} and {} charts",
            out.join("report.md").display(),
            files.len()
        )?,
        Err(e) => writeln!(
            log,
            "wrote {}; charts skipped: {e}",
            out.join("report.md").display()
        )?,
    }
    Ok(())
}

pub fn run_command(cmd: &BenchCommand, out: &mut impl Write) -> eyre::Result<()> {
    match cmd {
        BenchCommand::Compare(args) => {
            let (baseline, candidate, config) = match &args.candidate {
                Some(c) => (
                    collect_runs(&args.baseline, None)?,
                    collect_runs(c, None)?,
                    None,
                ),
                None => {
                    let config = std::fs::read(args.baseline.join("run.json"))
                        .ok()
                        .and_then(|b| serde_json::from_slice::<RunConfig>(&b).ok());
                    (
                        collect_runs(&args.baseline, Some("baseline-"))?,
                        collect_runs(&args.baseline, Some("candidate-"))?,
                        config,
                    )
                }
            };
            let names = config
                .as_ref()
                .map(|c| (c.baseline.name.clone(), c.candidate.name.clone()));
            let opts = CompareOptions {
                baseline_name: names
                    .as_ref()
                    .map_or(args.baseline_name.clone(), |n| n.0.clone()),
                candidate_name: names.map_or(args.candidate_name.clone(), |n| n.1),
                noise_floor_pct: args.noise_floor,
                bootstrap_iterations: args.iterations,
                ..CompareOptions::default()
            };
            let comparison = compare(&baseline, &candidate, &opts)?;
            if args.json {
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&json(&comparison, config.as_ref()))?
                )?;
            } else {
                write!(out, "{}", markdown(&comparison, config.as_ref()))?;
            }
            if let Some(dir) = &args.out {
                write_reports(dir, &comparison, config.as_ref(), &mut std::io::stderr())?;
            }
            Ok(())
        }
        BenchCommand::RpcReport(args) => {
            let report = RpcReport::new(read_runs(&args.runs)?, &args.reference)?;
            write!(out, "{}", report.markdown())?;
            let attribution = match &args.attribution {
                Some(path) => Some(attribution_markdown(&read_attribution(path)?)),
                None => None,
            };
            if let Some(md) = &attribution {
                write!(out, "{md}")?;
            }
            if let Some(dir) = &args.out {
                std::fs::create_dir_all(dir)
                    .wrap_err_with(|| format!("creating {}", dir.display()))?;
                let files = write_report(&report, dir)?;
                if let Some(md) = &attribution {
                    let path = dir.join("rpc-attribution.md");
                    std::fs::write(&path, md)
                        .wrap_err_with(|| format!("writing {}", path.display()))?;
                }
                let mut log = std::io::stderr();
                match write_rpc_charts(&report.variants, dir) {
                    Ok(charts) => writeln!(
                        log,
                        "wrote {}, {} and {} charts",
                        files[0].display(),
                        files[1].display(),
                        charts.len()
                    )?,
                    Err(e) => writeln!(
                        log,
                        "wrote {} and {}; charts skipped: {e}",
                        files[0].display(),
                        files[1].display()
                    )?,
                }
            }
            Ok(())
        }
        BenchCommand::Preflight(args) => {
            let (a, b) = check_pair(
                (&args.baseline_datadir, args.baseline_layout),
                (&args.candidate_datadir, args.candidate_layout),
            )?;
            for (facts, layout) in [(&a, args.baseline_layout), (&b, args.candidate_layout)] {
                check_layout(facts, layout)?;
                writeln!(
                    out,
                    "{}: head {} ({}), genesis {}, history in {layout}: {}",
                    facts.datadir.display(),
                    facts.head.unwrap_or(0),
                    facts.head_hash.as_deref().unwrap_or("?"),
                    facts.genesis_hash.as_deref().unwrap_or("?"),
                    facts
                        .placement
                        .iter()
                        .map(|p| format!(
                            "{} mdbx {} hybrid-rocksdb {} reth's rocksdb {}",
                            p.table, p.mdbx_rows, p.hybrid_rocksdb_rows, p.upstream_rocksdb_rows
                        ))
                        .collect::<Vec<_>>()
                        .join("; ")
                )?;
            }
            writeln!(
                out,
                "preflight passed: a valid {} vs {} comparison",
                args.candidate_layout, args.baseline_layout
            )?;
            Ok(())
        }
        BenchCommand::Run(args) => {
            let range = match (args.from, args.to, args.advance) {
                (Some(from), Some(to), None) => Range::FromTo { from, to },
                (None, None, Some(n)) => Range::Advance(n),
                _ => bail!("give either --from and --to, or --advance"),
            };
            let setup = |name: &Option<String>,
                         datadir: &PathBuf,
                         node: &String,
                         layout: Layout,
                         restore: &Option<PathBuf>,
                         reth: &Option<String>| Setup {
                name: name.clone().unwrap_or_else(|| layout.to_string()),
                datadir: datadir.clone(),
                layout,
                node_command: node.clone(),
                reset: match restore {
                    Some(from) => Reset::Restore { from: from.clone() },
                    None => Reset::Unwind {
                        reth: reth.clone().unwrap_or_else(|| args.reth.clone()),
                        args: args.unwind_args.clone(),
                    },
                },
                jwt_secret: args
                    .jwt_secret
                    .clone()
                    .unwrap_or_else(|| datadir.join("jwt.hex")),
            };
            let plan = RunPlan {
                baseline: setup(
                    &args.baseline_name,
                    &args.baseline_datadir,
                    &args.baseline_node,
                    args.baseline_layout,
                    &args.baseline_restore_from,
                    &args.baseline_reth,
                ),
                candidate: setup(
                    &args.candidate_name,
                    &args.candidate_datadir,
                    &args.candidate_node,
                    args.candidate_layout,
                    &args.candidate_restore_from,
                    &args.candidate_reth,
                ),
                reth_bench: args.reth_bench.clone(),
                rpc_url: args.rpc_url.clone(),
                engine_rpc_url: args.engine_rpc_url.clone(),
                range,
                pairs: args.pairs.max(1),
                warmup_blocks: args.warmup_blocks,
                output: args.output.clone(),
                extra_bench_args: args.bench_args.clone(),
                start_timeout: Duration::from_secs(args.start_timeout),
                stop_timeout: Duration::from_secs(60),
            };
            let outcome = run(&plan, &mut std::io::stderr())?;
            let baseline: Vec<RunData> = outcome
                .baseline
                .iter()
                .map(|d| read_run(d))
                .collect::<Result<_, _>>()?;
            let candidate: Vec<RunData> = outcome
                .candidate
                .iter()
                .map(|d| read_run(d))
                .collect::<Result<_, _>>()?;
            let comparison = compare(
                &baseline,
                &candidate,
                &CompareOptions {
                    baseline_name: plan.baseline.name.clone(),
                    candidate_name: plan.candidate.name.clone(),
                    noise_floor_pct: args.noise_floor,
                    ..CompareOptions::default()
                },
            )?;
            write!(out, "{}", markdown(&comparison, Some(&outcome.config)))?;
            write_reports(
                &args.output,
                &comparison,
                Some(&outcome.config),
                &mut std::io::stderr(),
            )?;
            Ok(())
        }
    }
}
