//! `bench run`: baseline and candidate runs of `reth-bench new-payload-fcu`, interleaved ABBA.
//! Before anything runs or is touched, `guard` checks every folder a run may reset, and
//! interrupted restores of an earlier run are finished or undone (`restore::recover`). Before
//! each run the datadir goes back to the same start block (reth's `stage unwind`, which keeps the
//! given block, or a restore from a pristine copy, `restore::Swap`), the node starts, the engine
//! port is awaited, reth-bench runs (warmup blocks first, in their own folder), and the node
//! stops. Every run keeps its raw output (CSVs, reth-bench and node logs) in its own folder.
//!
//! Each run proves which variant ran: a reth-hybrid-node names its storage in its startup line
//! (`storage=hybrid` or `storage=mdbx`) and reth names its layout (`storage_v2: true|false`),
//! which must match the side's layout (v1, reth-hybrid or v2), and after the run the
//! datadir's history must still be where the side's label says (a hybrid binary under the stock
//! name would have moved it). The datadir's bytes per table and engine after the run are kept
//! (`disk.json`) for the report, and so is the CPU each of the node's threads used over the
//! measured blocks (`cpu`, read from `/proc` once the node has idled after each phase).

use crate::reth_bench::{
    guard::{GuardError, Target, check_datadir, check_paths},
    preflight::{Layout, check_layout, check_pair, inspect},
    report::{DiskRecord, RunConfig, RunRecord, SetupConfig},
    restore::{RestoreError, Swap, recover},
    threads,
};
use std::{
    fs::File,
    io::Write,
    net::{TcpStream, ToSocketAddrs},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// How long a node must stay idle to count as caught up, and the most a run waits for it.
const SETTLE_WINDOW: Duration = Duration::from_secs(1);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How a datadir returns to the start block before each run.
#[derive(Debug, Clone)]
pub enum Reset {
    /// `<reth> stage unwind --datadir <datadir> <args>... to-block <start>` (the block is kept).
    /// On a hybrid datadir `reth` must be reth-hybrid-node's hybrid build, whose unwind reaches
    /// the RocksDB tables; `args` carries what the datadir needs, e.g. `--chain dev`.
    Unwind { reth: String, args: Vec<String> },
    /// Replace the datadir with a copy of this pristine one (beside it, then swapped in; see
    /// `restore`).
    Restore { from: PathBuf },
}

/// One side of the comparison.
#[derive(Debug, Clone)]
pub struct Setup {
    pub name: String,
    pub datadir: PathBuf,
    /// Where its history is claimed to be; checked against the datadir before any run.
    pub layout: Layout,
    /// Shell command that starts its node (run with `sh -c`, in its own process group).
    pub node_command: String,
    pub reset: Reset,
    pub jwt_secret: PathBuf,
}

#[derive(Debug, Clone, Copy)]
pub enum Range {
    /// Each run starts at block `from` (the datadir is reset to it; reth-bench skips the first
    /// block), sends the warmup blocks, then measures up to `to`.
    FromTo { from: u64, to: u64 },
    /// The next `n` blocks after the head.
    Advance(u64),
}

#[derive(Debug, Clone)]
pub struct RunPlan {
    pub baseline: Setup,
    pub candidate: Setup,
    pub reth_bench: String,
    /// Source of blocks (never the node under test).
    pub rpc_url: String,
    pub engine_rpc_url: String,
    pub range: Range,
    pub pairs: usize,
    pub warmup_blocks: u64,
    pub output: PathBuf,
    /// Passed to every reth-bench call (e.g. `--reth-new-payload`, `--wait-time 0ms`).
    pub extra_bench_args: Vec<String>,
    pub start_timeout: Duration,
    pub stop_timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Preflight(#[from] crate::reth_bench::preflight::PreflightError),
    #[error("{what} failed ({status}); its output is in {log}")]
    Command {
        what: String,
        status: String,
        log: PathBuf,
    },
    #[error("the {side} node did not open its engine port {addr} within {secs} s; see {log}")]
    NodeStart {
        side: String,
        addr: String,
        secs: u64,
        log: PathBuf,
    },
    #[error("the {side} node exited before its engine port opened ({status}); see {log}")]
    NodeExited {
        side: String,
        status: String,
        log: PathBuf,
    },
    #[error(
        "{datadir} keeps history in reth-hybrid's RocksDB, and `{reth}` is not reth-hybrid-node's \
         hybrid build (its --version does not say `storage: hybrid`): reth's own `stage unwind` \
         sees only MDBX and would leave that history ahead of the chain. Unwind with the hybrid \
         build (--{side}-reth <reth-hybrid-node-hybrid>) or reset from a pristine copy \
         (--{side}-restore-from <copy>)"
    )]
    UnwindHybrid {
        datadir: PathBuf,
        side: String,
        reth: String,
    },
    #[error(transparent)]
    Guard(#[from] GuardError),
    #[error(transparent)]
    Restore(#[from] RestoreError),
    #[error("bad block range: {reason}")]
    BadRange { reason: String },
    #[error("bad engine RPC URL {url}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("{output} already holds runs; pass a new --output folder")]
    OutputExists { output: PathBuf },
    #[error(
        "the {side} node says `{reported}` at startup, but the {side} is labelled {expected}: \
         its binary is the other variant (rebuild with `make integration`, which checks each \
         variant's --version), or its datadir holds reth's other layout (reth's stored setting \
         wins over --storage.v2); see {log}"
    )]
    WrongVariant {
        side: String,
        reported: String,
        expected: String,
        log: PathBuf,
    },
    #[error("after the {side} run: {source}")]
    AfterRun {
        side: String,
        #[source]
        source: crate::reth_bench::preflight::PreflightError,
    },
    #[error("reading the {side} datadir's sizes after its run: {reason}")]
    Disk { side: String, reason: String },
    #[error("I/O on {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The folders of the measured runs, per side, in run order.
#[derive(Debug, Clone, Default)]
pub struct RunOutcome {
    pub baseline: Vec<PathBuf>,
    pub candidate: Vec<PathBuf>,
    pub config: RunConfig,
}

/// The order of runs: pairs alternate AB, BA, AB... (ABBA), so drift over time hits both sides.
pub fn run_order(pairs: usize) -> Vec<bool> {
    (0..pairs)
        .flat_map(|p| {
            if p % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            }
        })
        .collect()
}

fn engine_addr(url: &str) -> Result<String, RunError> {
    let bad = |reason: &str| RunError::BadUrl {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let hostport = rest.split('/').next().unwrap_or(rest);
    if hostport.is_empty() {
        return Err(bad("no host"));
    }
    Ok(if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:80")
    })
}

fn run_logged(mut cmd: Command, what: &str, log: &Path) -> Result<(), RunError> {
    let out = File::create(log).map_err(io(log))?;
    let err = out.try_clone().map_err(io(log))?;
    let status = cmd
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .status()
        .map_err(io(log))?;
    if status.success() {
        Ok(())
    } else {
        Err(RunError::Command {
            what: what.to_string(),
            status: status.to_string(),
            log: log.to_path_buf(),
        })
    }
}

fn shell_words(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

struct Node {
    child: Child,
}

impl Node {
    fn start(setup: &Setup, log: &Path) -> Result<Self, RunError> {
        let out = File::create(log).map_err(io(log))?;
        let err = out.try_clone().map_err(io(log))?;
        become_subreaper();
        let child = Command::new("sh")
            .arg("-c")
            .arg(&setup.node_command)
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .process_group(0)
            .spawn()
            .map_err(io(log))?;
        Ok(Self { child })
    }

    /// The node's process group (it was started as the group's leader).
    fn pgid(&self) -> i32 {
        self.child.id() as i32
    }

    fn wait_for_port(
        &mut self,
        side: &str,
        addr: &str,
        timeout: Duration,
        log: &Path,
    ) -> Result<(), RunError> {
        let started = Instant::now();
        let targets: Vec<_> = addr
            .to_socket_addrs()
            .map_err(|e| RunError::BadUrl {
                url: addr.to_string(),
                reason: e.to_string(),
            })?
            .collect();
        loop {
            if targets
                .iter()
                .any(|t| TcpStream::connect_timeout(t, Duration::from_millis(200)).is_ok())
            {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(RunError::NodeExited {
                    side: side.to_string(),
                    status: status.to_string(),
                    log: log.to_path_buf(),
                });
            }
            if started.elapsed() > timeout {
                return Err(RunError::NodeStart {
                    side: side.to_string(),
                    addr: addr.to_string(),
                    secs: timeout.as_secs(),
                    log: log.to_path_buf(),
                });
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// SIGTERM to the node's process group, SIGKILL after `timeout`; returns once no process of
    /// the group is left. The shell running the node command dies at once on SIGTERM while the
    /// node shuts down (persisting its in-memory blocks, releasing the datadir's lock): only an
    /// empty group means the node is gone.
    fn stop(mut self, timeout: Duration) {
        let pgid = self.child.id() as i32;
        // SAFETY: kill(2) on our own child's process group; no memory is touched.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        if !self.wait_group_gone(timeout) {
            // SAFETY: as above.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            self.wait_group_gone(Duration::from_secs(30));
        }
    }

    /// Waits until the node's process group is empty, reaping its processes (the shell is our
    /// child; the node, orphaned when the shell exits, is reparented to us: `become_subreaper`).
    fn wait_group_gone(&mut self, timeout: Duration) -> bool {
        let pgid = self.child.id() as i32;
        let started = Instant::now();
        loop {
            let _ = self.child.try_wait();
            // SAFETY: waitpid(2) on members of our own child's process group, without blocking;
            // a null status pointer is allowed.
            while unsafe { libc::waitpid(-pgid, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
            // SAFETY: signal 0 only checks whether any process of the group exists.
            if unsafe { libc::kill(-pgid, 0) } != 0 {
                return true;
            }
            if started.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Makes this process the reaper of its orphaned descendants (Linux), so a node whose shell
/// exited is reaped here and its exit seen, instead of lingering as a zombie under a container's
/// init that may never reap it.
fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(2) with PR_SET_CHILD_SUBREAPER only sets a flag on this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

impl Drop for Node {
    /// A node left running by an error is killed with its whole group.
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: signal 0 checks whether any process of our child's group is left.
        if unsafe { libc::kill(-pgid, 0) } == 0 {
            // SAFETY: kill(2) on our own child's process group.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            self.wait_group_gone(Duration::from_secs(30));
        }
    }
}

/// The storage a reth-hybrid-node's startup line names (`storage=hybrid`, `storage="mdbx"`);
/// `None` for a node that prints none (stock reth).
pub fn reported_storage(log: &str) -> Option<String> {
    log.lines()
        .filter(|l| l.contains("reth-hybrid-node"))
        .find_map(|l| {
            let rest = &l[l.find("storage=")? + "storage=".len()..];
            let word: String = rest
                .trim_start_matches('"')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            (!word.is_empty()).then_some(word)
        })
}

/// reth's own startup line on the datadir's layout (`Loaded storage settings
/// settings=StorageSettings { storage_v2: true }`): on an existing datadir the stored setting,
/// whatever `--storage.v2` said. `None` where the line is missing.
pub fn reported_reth_storage_v2(log: &str) -> Option<bool> {
    log.lines()
        .filter(|l| l.contains("Loaded storage settings"))
        .find_map(|l| {
            let rest = &l[l.find("storage_v2: ")? + "storage_v2: ".len()..];
            match () {
                _ if rest.starts_with("true") => Some(true),
                _ if rest.starts_with("false") => Some(false),
                _ => None,
            }
        })
}

/// Refuses a run whose node names another storage than the side's layout needs: the build's
/// (reth-hybrid-node's line) and reth's layout (v1 or v2, reth's line). Returns what was named,
/// for the report.
fn check_variant(setup: &Setup, side: &str, log: &Path) -> Result<Option<String>, RunError> {
    let text = std::fs::read_to_string(log).map_err(io(log))?;
    let reported = reported_storage(&text);
    let expected = setup.layout.node_storage();
    let wrong = |reported: String, needs: String| RunError::WrongVariant {
        side: side.to_string(),
        reported,
        expected: format!("{} (needs {needs})", setup.layout),
        log: log.to_path_buf(),
    };
    if let Some(r) = &reported
        && r != expected
    {
        return Err(wrong(format!("storage={r}"), format!("storage={expected}")));
    }
    let v2 = reported_reth_storage_v2(&text);
    if let Some(v2) = v2
        && v2 != setup.layout.reth_storage_v2()
    {
        return Err(wrong(
            format!("storage_v2: {v2}"),
            format!("storage_v2: {}", setup.layout.reth_storage_v2()),
        ));
    }
    Ok(match (reported, v2) {
        (Some(r), Some(v2)) => Some(format!("{r}, storage_v2: {v2}")),
        (Some(r), None) => Some(r),
        (None, Some(v2)) => Some(format!("storage_v2: {v2}")),
        (None, None) => None,
    })
}

/// The datadir's bytes per table and engine, written to `disk.json` in the run folder.
fn record_disk(setup: &Setup, side: &str, dir: &Path) -> Result<DiskRecord, RunError> {
    let failed = |reason: String| RunError::Disk {
        side: side.to_string(),
        reason,
    };
    // A stopped node leaves RocksDB's newest rows in its WAL; opened, they sit in memtables,
    // whose memory is not what the rows take in files. Flushed first (this run's datadir is
    // restored before the next run), the tables' bytes are their SST files.
    let rocks = setup.datadir.join(reth_hybrid_rocksdb::HYBRID_ROCKSDB_DIR);
    if reth_hybrid_rocksdb::is_initialized(&rocks) {
        reth_hybrid_rocksdb::RocksEngine::open_in_datadir_for_bulk(&setup.datadir)
            .map_err(|e| e.to_string())
            .and_then(|db| db.flush().map_err(|e| e.to_string()))
            .map_err(|e| failed(format!("flushing {}: {e}", rocks.display())))?;
    }
    let disk = DiskRecord::read(&setup.datadir).map_err(failed)?;
    let path = dir.join("disk.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&disk).expect("serializes"))
        .map_err(io(&path))?;
    Ok(disk)
}

fn reset(setup: &Setup, target: &Target, start: u64, dir: &Path) -> Result<(), RunError> {
    match &setup.reset {
        Reset::Restore { from } => {
            // The real paths `guard` checked, not the ones as typed.
            let from = target.restore_from.as_deref().unwrap_or(from);
            Swap::new(&target.datadir, from, &dir.join("reset.log"))?.run()?;
            Ok(())
        }
        Reset::Unwind { reth, args } => {
            let head = inspect(&setup.datadir)?.head.unwrap_or(0);
            if head == start {
                return Ok(());
            }
            let mut cmd = Command::new(reth);
            cmd.arg("stage")
                .arg("unwind")
                .arg("--datadir")
                .arg(&setup.datadir)
                .args(args)
                .arg("to-block")
                .arg(start.to_string());
            run_logged(cmd, "reth stage unwind", &dir.join("reset.log"))
        }
    }
}

/// Whether `reth` is reth-hybrid-node's hybrid build: its `--version` names the storage it runs.
fn unwinds_hybrid(reth: &str) -> bool {
    Command::new(reth)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|out| {
            out.status.success()
                && String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .any(|line| line.trim() == "reth-hybrid-node storage: hybrid")
        })
}

/// The datadir each run of `setup` starts from: the pristine copy when restoring, else itself.
fn start_state(setup: &Setup) -> &Path {
    match &setup.reset {
        Reset::Restore { from } => from,
        Reset::Unwind { .. } => &setup.datadir,
    }
}

/// Everything that must hold before a datadir is touched, and the recovery of interrupted
/// restores. ORDER: all refusals that need no datadir come first, then each existing datadir is
/// checked, and only then are the leftovers of an earlier restore (provably this tool's, see
/// `restore`) finished or undone; the datadirs are checked again after that.
fn prepare(plan: &RunPlan, log: &mut dyn Write) -> Result<[Target; 2], RunError> {
    let targets = check_paths(plan)?;
    for t in &targets {
        if t.datadir.exists() {
            check_datadir(t)?;
        }
    }
    for t in &targets {
        recover(&t.datadir, log)?;
    }
    for t in &targets {
        check_datadir(t)?;
    }
    Ok(targets)
}

fn bench_command(
    plan: &RunPlan,
    setup: &Setup,
    range: (u64, u64),
    advance: Option<u64>,
    out: &Path,
) -> Command {
    let mut cmd = Command::new(&plan.reth_bench);
    cmd.arg("new-payload-fcu")
        .arg("--rpc-url")
        .arg(&plan.rpc_url)
        .arg("--engine-rpc-url")
        .arg(&plan.engine_rpc_url)
        .arg("--jwt-secret")
        .arg(&setup.jwt_secret);
    match advance {
        Some(n) => {
            cmd.arg("--advance").arg(n.to_string());
        }
        None => {
            cmd.arg("--from")
                .arg(range.0.to_string())
                .arg("--to")
                .arg(range.1.to_string());
        }
    }
    cmd.arg("--output").arg(out).args(&plan.extra_bench_args);
    cmd
}

/// Runs the plan. `log` gets one line per step.
pub fn run(plan: &RunPlan, log: &mut dyn Write) -> Result<RunOutcome, RunError> {
    if plan.output.join("run.json").exists() {
        return Err(RunError::OutputExists {
            output: plan.output.clone(),
        });
    }
    let targets = prepare(plan, log)?;
    // What the runs will start from: with restores, the pristine copies.
    let (a, _) = check_pair(
        (start_state(&plan.baseline), plan.baseline.layout),
        (start_state(&plan.candidate), plan.candidate.layout),
    )?;
    let head = a.head.unwrap_or(0);
    let start = match plan.range {
        Range::FromTo { from, to } => {
            if to <= from + plan.warmup_blocks {
                return Err(RunError::BadRange {
                    reason: format!(
                        "--to {to} leaves no measured block after --from {from} and {} warmup blocks",
                        plan.warmup_blocks
                    ),
                });
            }
            if from > head {
                return Err(RunError::BadRange {
                    reason: format!("--from {from} is above the datadirs' head {head}"),
                });
            }
            from
        }
        Range::Advance(_) => head,
    };
    let _ = writeln!(
        log,
        "preflight passed: same genesis {}, both at block {head}; {} is {}, {} is {}",
        a.genesis_hash.as_deref().unwrap_or("?"),
        plan.baseline.name,
        plan.baseline.layout,
        plan.candidate.name,
        plan.candidate.layout
    );
    for (setup, side) in [(&plan.baseline, "baseline"), (&plan.candidate, "candidate")] {
        let hybrid = reth_hybrid_migrate::datadir::Datadir::new(&setup.datadir).has_rocksdb();
        if let Reset::Unwind { reth, .. } = &setup.reset
            && hybrid
            && !unwinds_hybrid(reth)
        {
            return Err(RunError::UnwindHybrid {
                datadir: setup.datadir.clone(),
                side: side.to_string(),
                reth: reth.clone(),
            });
        }
    }
    std::fs::create_dir_all(&plan.output).map_err(io(&plan.output))?;
    let addr = engine_addr(&plan.engine_rpc_url)?;
    let w = plan.warmup_blocks;
    let mut outcome = RunOutcome::default();
    let mut records = Vec::new();
    let mut counts = (0usize, 0usize);
    for is_candidate in run_order(plan.pairs) {
        let (setup, target, side, k) = if is_candidate {
            counts.1 += 1;
            (&plan.candidate, &targets[1], "candidate", counts.1)
        } else {
            counts.0 += 1;
            (&plan.baseline, &targets[0], "baseline", counts.0)
        };
        let dir = plan.output.join(format!("{side}-{k}"));
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let _ = writeln!(
            log,
            "{side} run {k}: resetting {} to block {start}",
            setup.datadir.display()
        );
        reset(setup, target, start, &dir)?;
        let node_log = dir.join("node.log");
        let mut node = Node::start(setup, &node_log)?;
        node.wait_for_port(side, &addr, plan.start_timeout, &node_log)?;
        let storage = check_variant(setup, side, &node_log)?;
        let _ = writeln!(
            log,
            "{side} run {k}: node up on {addr} (storage: {})",
            storage.as_deref().unwrap_or("not reported")
        );
        let (measured, advance) = match plan.range {
            Range::FromTo { to, .. } => ((start + w, to), None),
            Range::Advance(n) => ((0, 0), Some(n)),
        };
        if w > 0 {
            let warm = dir.join("warmup");
            let cmd = bench_command(
                plan,
                setup,
                (start, start + w),
                plan_advance(plan, w),
                &warm,
            );
            let _ = writeln!(log, "{side} run {k}: warmup: {}", shell_words(&cmd));
            run_logged(cmd, "reth-bench (warmup)", &dir.join("warmup.log"))?;
        }
        let cmd = bench_command(plan, setup, measured, advance, &dir);
        let command = shell_words(&cmd);
        // The node's CPU over the measured blocks only: read once the warmup's blocks are
        // persisted (the node idles), and again once the measured ones are.
        let settle = |what: &str, log: &mut dyn Write| {
            if !threads::wait_until_idle(node.pgid(), SETTLE_WINDOW, SETTLE_TIMEOUT) {
                let _ = writeln!(
                    log,
                    "{side} run {k}: the node did not idle within {} s {what}; its CPU figures \
                     include that work",
                    SETTLE_TIMEOUT.as_secs()
                );
            }
        };
        settle("after the warmup", log);
        let cpu_before = threads::snapshot_group(node.pgid());
        let _ = writeln!(log, "{side} run {k}: {command}");
        let result = run_logged(cmd, "reth-bench", &dir.join("reth-bench.log"));
        let cpu = match result {
            Ok(()) => {
                settle("after the last block", log);
                let after = threads::snapshot_group(node.pgid());
                if cpu_before.is_empty() || after.is_empty() {
                    let _ = writeln!(
                        log,
                        "{side} run {k}: the node's threads could not be read from /proc; no CPU figures"
                    );
                    None
                } else {
                    Some(threads::cpu_between(
                        &cpu_before,
                        &after,
                        threads::ticks_per_second(),
                    ))
                }
            }
            Err(_) => None,
        };
        node.stop(plan.stop_timeout);
        result?;
        // The run wrote its blocks: its history must still be where the label says.
        inspect(&setup.datadir)
            .and_then(|facts| check_layout(&facts, setup.layout))
            .map_err(|source| RunError::AfterRun {
                side: side.to_string(),
                source,
            })?;
        let disk = record_disk(setup, side, &dir)?;
        records.push(RunRecord {
            side: side.to_string(),
            index: k,
            output: dir.display().to_string(),
            command,
            storage,
            disk: Some(disk),
            blocks: Some(advance.unwrap_or(measured.1 - measured.0)),
            cpu,
        });
        if is_candidate {
            outcome.candidate.push(dir);
        } else {
            outcome.baseline.push(dir);
        }
    }
    let setup_config = |s: &Setup| SetupConfig {
        name: s.name.clone(),
        datadir: s.datadir.display().to_string(),
        layout: s.layout.to_string(),
        node_command: s.node_command.clone(),
    };
    outcome.config = RunConfig {
        baseline: setup_config(&plan.baseline),
        candidate: setup_config(&plan.candidate),
        runs: records,
        reth_bench: plan.reth_bench.clone(),
        pairs: plan.pairs,
        warmup_blocks: w,
        blocks: match plan.range {
            Range::FromTo { from, to } => format!(
                "{}..={} (warmup {}..={})",
                from + w + 1,
                to,
                from + 1,
                from + w
            ),
            Range::Advance(n) => format!("the {n} after the head (+{w} warmup)"),
        },
    };
    let path = plan.output.join("run.json");
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&outcome.config).expect("serializes"),
    )
    .map_err(io(&path))?;
    Ok(outcome)
}

fn plan_advance(plan: &RunPlan, w: u64) -> Option<u64> {
    matches!(plan.range, Range::Advance(_)).then_some(w)
}
