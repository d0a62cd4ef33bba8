//! `stage drop tx-lookup` of a large tx-hash index under a memory limit (issue 32, scripts/operator-check).
//!
//! reth's `stage drop` clears a whole table in one transaction. A clear that builds one delete per
//! row in memory (a write batch, then its copy in the intent log) grows with the table and can be
//! OOM-killed on every replay. This check copies a hybrid datadir twice, adds synthetic tx hashes
//! to one copy, and runs the same `stage drop` on both under a watchdog: the large copy's peak RSS
//! may exceed the small copy's by at most the budget, or the command is killed and the check fails.
//! A hard limit rather than a report, because a real node meets the OOM killer, not a report.
//! (`RLIMIT_AS` cannot be the limit: MDBX maps its whole maximum size up front.)

use alloy_primitives::B256;
use eyre::{Context, bail, ensure};
use reth_db::mdbx::DatabaseArguments;
use reth_db_api::{
    cursor::DbCursorRO,
    database::Database,
    models::ClientVersion,
    tables::TransactionHashNumbers,
    transaction::{DbTx, DbTxMut},
};
use reth_hybrid_adapter::{HybridNodeDb, open_hybrid};
use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

#[derive(clap::Args)]
pub struct Args {
    /// The hybrid node binary (reth-hybrid-node-hybrid).
    #[arg(long)]
    node: PathBuf,
    /// A hybrid datadir with a tx-lookup stage; it is copied, never changed.
    #[arg(long)]
    datadir: PathBuf,
    /// An empty or missing folder for the two copies (removed after a pass).
    #[arg(long)]
    work: PathBuf,
    /// Synthetic tx hashes added to the large copy.
    #[arg(long, default_value_t = 5_000_000)]
    rows: u64,
    /// Peak-RSS growth allowed over the same command on the small copy, in MiB.
    #[arg(long, default_value_t = 256)]
    budget_mib: u64,
    /// The node's datadir flags (e.g. `--chain dev --color never`).
    #[arg(last = true)]
    node_args: Vec<String>,
}

/// Synthetic rows take tx numbers from here on, far above any chain the check builds.
const FIRST_SYNTHETIC_TX: u64 = 1 << 40;
/// Rows per transaction while filling: each commit spills its overlay to SST files.
const ROWS_PER_COMMIT: u64 = 1_000_000;
const MIB: u64 = 1 << 20;

pub fn run(args: Args) -> eyre::Result<()> {
    ensure!(
        !args.work.exists() || fs::read_dir(&args.work)?.next().is_none(),
        "{} is not empty: give an empty or missing folder",
        args.work.display()
    );
    let small = args.work.join("small");
    let large = args.work.join("large");
    copy_dir(&args.datadir, &small)?;
    copy_dir(&args.datadir, &large)?;

    let started = Instant::now();
    let chain_rows = fill(&large, args.rows)?;
    println!(
        "filled: {} synthetic tx hashes beside the chain's {chain_rows} in {:.1}s",
        args.rows,
        started.elapsed().as_secs_f64()
    );

    let unlimited = u64::MAX;
    let baseline = drop_tx_lookup(&args, &small, unlimited)?;
    let limit = baseline.peak_bytes + args.budget_mib * MIB;
    let measured = drop_tx_lookup(&args, &large, limit)?;
    let growth = measured.peak_bytes.saturating_sub(baseline.peak_bytes);
    if measured.killed {
        bail!(
            "stage drop tx-lookup of {} rows exceeded its memory limit and was killed: peak RSS \
             >= {} MiB, over {} MiB without the synthetic rows plus the {} MiB budget \
             (its log: {})",
            chain_rows + args.rows,
            measured.peak_bytes / MIB,
            baseline.peak_bytes / MIB,
            args.budget_mib,
            measured.log.display()
        );
    }
    ensure!(
        measured.success,
        "stage drop tx-lookup failed on the large copy (its log: {})",
        measured.log.display()
    );
    let left = count_rows(&large)?;
    ensure!(
        left == 0,
        "stage drop tx-lookup left {left} rows in TransactionHashNumbers"
    );
    println!(
        "stage drop tx-lookup of {} rows: peak RSS {} MiB in {:.1}s, {} MiB over the same command \
         on {chain_rows} rows ({} MiB; budget {} MiB); the table is empty and the datadir opens",
        chain_rows + args.rows,
        measured.peak_bytes / MIB,
        measured.elapsed.as_secs_f64(),
        growth / MIB,
        baseline.peak_bytes / MIB,
        args.budget_mib
    );
    fs::remove_dir_all(&args.work).with_context(|| format!("removing {}", args.work.display()))?;
    Ok(())
}

fn open(datadir: &Path) -> eyre::Result<HybridNodeDb> {
    open_hybrid(datadir, DatabaseArguments::new(ClientVersion::default()))
        .with_context(|| format!("opening {} as a hybrid datadir", datadir.display()))
}

/// Adds `rows` synthetic tx hashes, in no order; returns the rows the table held before.
fn fill(datadir: &Path, rows: u64) -> eyre::Result<u64> {
    let chain_rows = count_rows(datadir)?;
    ensure!(
        chain_rows > 0,
        "{} has no tx hashes: give a datadir whose tx-lookup stage ran",
        datadir.display()
    );
    let db = open(datadir)?;
    for start in (0..rows).step_by(ROWS_PER_COMMIT as usize) {
        let tx = db.tx_mut()?;
        for n in start..rows.min(start + ROWS_PER_COMMIT) {
            tx.put::<TransactionHashNumbers>(synthetic_hash(n), FIRST_SYNTHETIC_TX + n)?;
        }
        tx.commit()?;
    }
    Ok(chain_rows)
}

/// Spread like real tx hashes (splitmix64 per word: keccak is slow in a debug build).
fn synthetic_hash(n: u64) -> B256 {
    let mut hash = [0u8; 32];
    for (word, bytes) in hash.chunks_exact_mut(8).enumerate() {
        let mut z = n
            .wrapping_mul(4)
            .wrapping_add(word as u64)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        bytes.copy_from_slice(&(z ^ (z >> 31)).to_be_bytes());
    }
    B256::from(hash)
}

fn count_rows(datadir: &Path) -> eyre::Result<u64> {
    let db = open(datadir)?;
    let tx = db.tx()?;
    let mut cursor = tx.cursor_read::<TransactionHashNumbers>()?;
    let mut rows = 0u64;
    let mut entry = cursor.first()?;
    while entry.is_some() {
        rows += 1;
        entry = cursor.next()?;
    }
    Ok(rows)
}

struct Run {
    peak_bytes: u64,
    killed: bool,
    success: bool,
    elapsed: Duration,
    log: PathBuf,
}

/// `stage drop tx-lookup` on `datadir`, SIGKILLed as soon as its peak RSS passes `limit` bytes.
fn drop_tx_lookup(args: &Args, datadir: &Path, limit: u64) -> eyre::Result<Run> {
    let log = datadir.with_extension("log");
    let out = fs::File::create(&log)?;
    let started = Instant::now();
    let child = Command::new(&args.node)
        .args(["stage", "drop", "--datadir"])
        .arg(datadir)
        .args(&args.node_args)
        .arg("tx-lookup")
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("starting {}", args.node.display()))?;
    let pid = child.id() as libc::pid_t;
    let mut killed = false;
    let mut polled_peak = 0u64;
    loop {
        let mut status = 0;
        // SAFETY: `rusage` is plain data that wait4 fills; `pid` is our own unwaited child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let waited = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        ensure!(
            waited >= 0,
            "waiting for {}: {}",
            args.node.display(),
            std::io::Error::last_os_error()
        );
        if waited == pid {
            // ru_maxrss is in KiB on Linux: the kernel's own peak, including the last instants.
            let peak_bytes = polled_peak.max(usage.ru_maxrss as u64 * 1024);
            return Ok(Run {
                peak_bytes,
                killed,
                success: !killed && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                elapsed: started.elapsed(),
                log,
            });
        }
        if let Some(peak) = peak_rss(pid) {
            polled_peak = polled_peak.max(peak);
        }
        if polled_peak > limit && !killed {
            // SAFETY: signalling our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The process's peak resident set so far (`VmHWM`), in bytes.
fn peak_rss(pid: libc::pid_t) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A datadir's files, copied (the source is closed: no node runs on it).
pub fn copy_dir(from: &Path, to: &Path) -> eyre::Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        } else {
            bail!(
                "{} is neither a file nor a folder; copy the datadir by hand",
                entry.path().display()
            );
        }
    }
    Ok(())
}
