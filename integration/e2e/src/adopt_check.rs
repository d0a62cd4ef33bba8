//! `adopt-check` (scripts/operator-check, issue 35): the proof that adopting a storage-v2
//! datadir gives what a v1 datadir migrated to the hybrid gives. One chain is imported twice by
//! stock reth, with `--storage.v2=false` then `reth-hybrid migrate`, and in v2 (reth's default)
//! then `db adopt-v2`. The two hybrid datadirs must hold the same rows in every table (`db diff`,
//! which reads each through the hybrid), and the adopted node must answer RPC calls (tx by hash,
//! historical balances and storage, a token call, traces of old blocks and transactions)
//! exactly as the v2 node did before adoption. First, on the same v2 datadir, an adoption killed
//! while it stages and then abandoned (`db adopt-v2 --abandon`) must leave it as it was.

use crate::{
    clear_memory::copy_dir,
    rpc_bench::{LatencyArgs, SamplesArgs},
};
use eyre::{Context, ensure};
use std::{
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Instant,
};

#[derive(clap::Args)]
pub struct Args {
    /// The stock node binary (reth-hybrid-node-mdbx): imports in both layouts, serves v2.
    #[arg(long)]
    stock_node: PathBuf,
    /// The hybrid node binary (reth-hybrid-node-hybrid): adopts, then serves the result.
    #[arg(long)]
    hybrid_node: PathBuf,
    /// The `reth-hybrid` tool (migrates the v1 twin, verifies the adopted datadir).
    #[arg(long)]
    cli: PathBuf,
    /// The chain as an RLP file (`reth import` reads it).
    #[arg(long)]
    blocks: PathBuf,
    /// An empty or missing folder for the datadirs (removed after a pass).
    #[arg(long)]
    work: PathBuf,
    /// The engine API's JWT secret file.
    #[arg(long)]
    jwt: PathBuf,
    /// Ports from here on: HTTP, auth RPC, p2p.
    #[arg(long)]
    base_port: u16,
    /// Calls of each point-read kind checked on the adopted node.
    #[arg(long, default_value_t = 300)]
    samples: usize,
}

/// Every file of the datadir's stores (MDBX, reth's RocksDB, static files) and a hash of its
/// bytes; lock files and RocksDB's info logs aside, which any open touches.
fn stored_bytes(datadir: &Path) -> eyre::Result<std::collections::BTreeMap<PathBuf, u64>> {
    stored_bytes_of(datadir, &["db", "rocksdb", "static_files"])
}

/// [`stored_bytes`] of some of the stores (`parts`: folders in the datadir).
fn stored_bytes_of(
    datadir: &Path,
    parts: &[&str],
) -> eyre::Result<std::collections::BTreeMap<PathBuf, u64>> {
    use std::hash::{Hash, Hasher};
    let mut out = std::collections::BTreeMap::new();
    let mut stack: Vec<PathBuf> = parts
        .iter()
        .map(|d| datadir.join(d))
        .filter(|d| d.exists())
        .collect();
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let path = entry?.path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if path.is_dir() {
                stack.push(path);
            } else if !name.ends_with(".lck")
                && !["lock", "LOCK", "LOG"].contains(&name.as_ref())
                && !name.starts_with("LOG.old")
            {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                fs::read(&path)
                    .with_context(|| format!("reading {}", path.display()))?
                    .hash(&mut hasher);
                out.insert(path, hasher.finish());
            }
        }
    }
    Ok(out)
}

/// Runs `binary command --chain dev --datadir D args` to completion, its output in `log`.
fn run_logged(
    binary: &Path,
    command: &str,
    datadir: &Path,
    args: &[&str],
    log: &Path,
) -> eyre::Result<std::process::ExitStatus> {
    let out = fs::File::create(log)?;
    Command::new(binary)
        .arg(command)
        .args(["--chain", "dev", "--color", "never", "--datadir"])
        .arg(datadir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .status()
        .with_context(|| format!("starting {}", binary.display()))
}

/// [`run_logged`], which must succeed.
fn run_to_end(
    binary: &Path,
    command: &str,
    datadir: &Path,
    args: &[&str],
    log: &Path,
) -> eyre::Result<()> {
    let status = run_logged(binary, command, datadir, args, log)?;
    ensure!(
        status.success(),
        "{} {command} {} failed ({status}); its log: {}",
        binary.display(),
        args.join(" "),
        log.display()
    );
    Ok(())
}

/// `reth import` of the chain into `datadir`, with `--fail-on-invalid-block` (by default reth
/// drops a block that fails its checks while decoding, and every later one, from the totals it
/// prints). Every block and transaction must go in. reth may then abort at exit, after the
/// import completed, as RocksDB's static destructors race its RocksDB still closing on another
/// thread ("pthread lock: Invalid argument", about one import in three here); every RocksDB
/// write reth makes is synced, so that exact abort is accepted, and any other failure is not
/// (scripts/bench-reth's `import_blocks` does the same).
fn import(binary: &Path, datadir: &Path, args: &[&str], log: &Path) -> eyre::Result<()> {
    let args = [&["--fail-on-invalid-block"], args].concat();
    let status = run_logged(binary, "import", datadir, &args, log)?;
    let said = fs::read_to_string(log)?;
    ensure!(
        imported_everything(&said),
        "{} import {} did not import every block ({status}); its log: {}",
        binary.display(),
        args.join(" "),
        log.display()
    );
    if !status.success() {
        use std::os::unix::process::ExitStatusExt;
        ensure!(
            status.signal() == Some(libc::SIGABRT) && aborted_in_rocksdbs_exit_race(&said),
            "{} import {} failed ({status}) after importing every block; its log: {}",
            binary.display(),
            args.join(" "),
            log.display()
        );
        eprintln!(
            "note: reth aborted at exit after a complete import (RocksDB's exit race); {}",
            log.display()
        );
    }
    Ok(())
}

/// Whether reth's import log ends its import with every block (at least one) and transaction in:
/// `Import complete. Total: X/X blocks, Y/Y transactions`.
fn imported_everything(log: &str) -> bool {
    log.lines().any(|line| {
        let Some((_, total)) = line.split_once("Import complete. Total: ") else {
            return false;
        };
        // The count imported, when it is all of the count read.
        let all_of = |part: Option<&str>, unit: &str| {
            part.and_then(|p| p.trim().strip_suffix(unit))
                .and_then(|p| p.trim_end().split_once('/'))
                .filter(|(done, of)| done == of)
                .and_then(|(done, _)| done.parse::<u64>().ok())
        };
        let mut parts = total.split(',');
        all_of(parts.next(), "blocks").is_some_and(|blocks| blocks > 0)
            && all_of(parts.next(), "transactions").is_some()
    })
}

/// Whether the log's last line is the abort RocksDB's exit race prints.
fn aborted_in_rocksdbs_exit_race(log: &str) -> bool {
    log.lines().last().map(str::trim_end) == Some("pthread lock: Invalid argument")
}

/// An adoption abandoned before its switch, on reth's own stores: `db adopt-v2` killed
/// (SIGKILL) as soon as its log says it checks the changesets it copied (the changesets and
/// senders are committed to MDBX by then; the tx-hash index and history, ingested beside them,
/// may be whole or partly there; the check and the plain-state rebuild still lie between the kill
/// and the switch), then `db adopt-v2 --abandon`.
/// None of reth-hybrid's files may be left, reth's RocksDB and static files must be byte for
/// byte as before, and every MDBX table must hold the rows of a copy taken before
/// (VersionHistory aside: every open records itself there). The real adoption then starts
/// afresh on the abandoned datadir, and its equality with the v1 twin covers the rest.
fn adopt_killed_then_abandoned(
    args: &Args,
    v2: &Path,
    log: &dyn Fn(&str) -> PathBuf,
) -> eyre::Result<String> {
    let original = args.work.join("v2-unadopted");
    copy_dir(v2, &original)?;
    let reths = stored_bytes_of(v2, &["rocksdb", "static_files"])?;
    let killed_log = log("adopt-killed");
    let out = fs::File::create(&killed_log)?;
    let mut child = Command::new(&args.hybrid_node)
        .args(["db", "--chain", "dev", "--color", "never", "--datadir"])
        .arg(v2)
        .args(["adopt-v2", "--cli"])
        .arg(&args.cli)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("starting {}", args.hybrid_node.display()))?;
    let deadline = Instant::now() + std::time::Duration::from_secs(600);
    loop {
        if fs::read_to_string(&killed_log)?
            .contains("changeset rows per block against the static files")
        {
            child.kill()?;
            child.wait()?;
            break;
        }
        if let Some(status) = child.try_wait()? {
            eyre::bail!(
                "db adopt-v2 ended ({status}) before its log named the changeset check; its log: {}",
                killed_log.display()
            );
        }
        ensure!(
            Instant::now() < deadline,
            "db adopt-v2 did not reach the changeset check in 10 minutes; its log: {}",
            killed_log.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    ensure!(
        !fs::read_to_string(&killed_log)?.contains("switch to"),
        "db adopt-v2 reached its switch before the kill landed, so there is nothing to abandon; \
         its log: {}",
        killed_log.display()
    );
    ensure!(
        v2.join("hybrid-adopt.json").exists(),
        "the killed adoption left no state file in {}",
        v2.display()
    );
    run_to_end(
        &args.hybrid_node,
        "db",
        v2,
        &["adopt-v2", "--abandon"],
        &log("adopt-abandon"),
    )?;
    let said = fs::read_to_string(log("adopt-abandon"))?;
    ensure!(
        said.contains("abandoned the adoption to hybrid")
            && said.contains("AccountChangeSets")
            && said.contains("TransactionSenders"),
        "db adopt-v2 --abandon did not say it cleared the staged changesets and senders; its \
         log: {}",
        log("adopt-abandon").display()
    );
    for ours in [
        "hybrid-adopt.json",
        "hybrid-rocksdb",
        "hybrid-adopt-staging",
    ] {
        ensure!(
            !v2.join(ours).exists(),
            "db adopt-v2 --abandon left {}",
            v2.join(ours).display()
        );
    }
    ensure!(
        stored_bytes_of(v2, &["rocksdb", "static_files"])? == reths,
        "reth's RocksDB or static files in {} changed between the adoption's start and its abandon",
        v2.display()
    );
    let differing = mdbx_tables_differing(v2, &original)?;
    ensure!(
        differing.is_empty(),
        "after db adopt-v2 --abandon, MDBX differs from the datadir before the adoption: {}",
        differing.join("; ")
    );
    fs::remove_dir_all(&original)?;
    Ok(said
        .lines()
        .find(|l| l.starts_with("abandoned the adoption"))
        .unwrap_or_default()
        .to_string())
}

/// Every MDBX table of two datadirs compared row by row, raw (reth's `db diff` decodes the tries
/// under v1's keys and panics on a v2 datadir's packed ones); VersionHistory aside, as every
/// open records itself there. One line per table that differs.
fn mdbx_tables_differing(a: &Path, b: &Path) -> eyre::Result<Vec<String>> {
    use reth_hybrid_api::{
        Tables,
        raw::{RawCursor, RawEngine, RawTx},
    };
    let open = |datadir: &Path| -> eyre::Result<reth_hybrid_adapter::RethMdbx> {
        let env = reth_db::open_db_read_only(
            datadir.join("db"),
            reth_db::mdbx::DatabaseArguments::new(Default::default()),
        )
        .with_context(|| format!("opening {} read-only", datadir.display()))?;
        Ok(reth_hybrid_adapter::RethMdbx::new(std::sync::Arc::new(
            env,
        ))?)
    };
    let (a_env, b_env) = (open(a)?, open(b)?);
    let (a_tx, b_tx) = (a_env.begin_ro()?, b_env.begin_ro()?);
    let rows = |env: &reth_hybrid_adapter::RethMdbx,
                tx: &<reth_hybrid_adapter::RethMdbx as RawEngine>::Tx,
                table: Tables|
     -> eyre::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        if env.has_table(table) {
            let mut cursor = tx.cursor(table)?;
            let mut next = cursor.first()?;
            while let Some(row) = next {
                out.push(row);
                next = cursor.next()?;
            }
        }
        Ok(out)
    };
    let mut differing = Vec::new();
    for table in Tables::ALL {
        if table == Tables::VersionHistory {
            continue;
        }
        let (left, right) = (rows(&a_env, &a_tx, table)?, rows(&b_env, &b_tx, table)?);
        if left != right {
            let first = left
                .iter()
                .zip(&right)
                .position(|(l, r)| l != r)
                .unwrap_or(left.len().min(right.len()));
            differing.push(format!(
                "{table}: {} rows against {}, first difference at row {first}",
                left.len(),
                right.len()
            ));
        }
    }
    Ok(differing)
}

/// The tables `db diff` wrote a report for, VersionHistory aside (it records each open).
fn differing_tables(diff: &Path) -> Vec<String> {
    match fs::read_dir(diff) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name != "VersionHistory.txt")
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// A node serving RPC on a datadir, stopped (SIGTERM, then waited for) on drop.
struct Node(Child);

impl Node {
    fn start(binary: &Path, datadir: &Path, args: &Args, log: &Path) -> eyre::Result<Self> {
        let out = fs::File::create(log)?;
        let port = |offset: u16| (args.base_port + offset).to_string();
        let child = Command::new(binary)
            .args(["node", "--chain", "dev", "--color", "never", "--datadir"])
            .arg(datadir)
            .args(["--http", "--http.api", "eth,debug", "--http.port", &port(0)])
            .args(["--authrpc.port", &port(1), "--authrpc.jwtsecret"])
            .arg(&args.jwt)
            .args([
                "--port",
                &port(2),
                "--disable-discovery",
                "--no-persist-peers",
            ])
            .args(["--ipcdisable", "--log.file.max-files", "0"])
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        Ok(Self(child))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // SAFETY: signalling our own child, not yet reaped.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

pub async fn run(args: Args) -> eyre::Result<()> {
    ensure!(
        !args.work.exists() || fs::read_dir(&args.work)?.next().is_none(),
        "{} is not empty: give an empty or missing folder",
        args.work.display()
    );
    fs::create_dir_all(&args.work)?;
    let (v1, v2, before) = (
        args.work.join("v1"),
        args.work.join("v2"),
        args.work.join("v2-before"),
    );
    let log = |name: &str| args.work.join(format!("{name}.log"));
    let blocks = args.blocks.to_string_lossy().into_owned();
    import(
        &args.stock_node,
        &v1,
        &["--storage.v2=false", &blocks],
        &log("import-v1"),
    )?;
    import(&args.stock_node, &v2, &[&blocks], &log("import-v2"))?;
    let upstream =
        reth_hybrid_rocksdb::inspect_upstream_rocksdb(&v2.join("rocksdb"))?.unwrap_or_default();
    ensure!(
        upstream
            .iter()
            .any(|f| f.name == "AccountsHistory" && f.has_rows),
        "the default import did not write a storage-v2 datadir (no AccountsHistory rows in \
         {}/rocksdb)",
        v2.display()
    );
    copy_dir(&v2, &before)?;

    // What the v2 node answers, recorded before adoption.
    let rpc = format!("http://127.0.0.1:{}", args.base_port);
    let samples = args.work.join("samples.json");
    {
        let _node = Node::start(&args.stock_node, &before, &args, &log("node-v2"))?;
        crate::node::wait(crate::node::WaitArgs::new(&rpc)).await?;
        crate::rpc_bench::samples(SamplesArgs::new(&rpc, args.samples, 20, &samples)).await?;
    }

    // Upstream's only tool of its kind, for comparison: reth's own `db migrate-v2` of the v1 twin
    // (the reverse move). It leaves senders and tries for the pipeline to rebuild at the next
    // start, which is not timed here.
    let upstream_copy = args.work.join("v1-migrate-v2");
    copy_dir(&v1, &upstream_copy)?;
    let started = Instant::now();
    run_to_end(
        &args.stock_node,
        "db",
        &upstream_copy,
        &["migrate-v2"],
        &log("reth-migrate-v2"),
    )?;
    let reth_migrate_v2_secs = started.elapsed().as_secs_f64();
    fs::remove_dir_all(&upstream_copy)?;

    let started = Instant::now();
    let status = Command::new(&args.cli)
        .args(["migrate", "--datadir"])
        .arg(&v1)
        .stdout(fs::File::create(log("migrate-v1"))?)
        .status()?;
    ensure!(
        status.success(),
        "reth-hybrid migrate of the v1 twin failed ({status})"
    );
    let migrate_secs = started.elapsed().as_secs_f64();
    // The dry run checks everything (the head's state root recomputed from reth's hashed state
    // against its header, and reth's stored tries against the nodes that derives) and changes
    // nothing.
    let cli = args.cli.to_string_lossy().into_owned();
    let before = stored_bytes(&v2)?;
    run_to_end(
        &args.hybrid_node,
        "db",
        &v2,
        &["adopt-v2", "--dry-run"],
        &log("adopt-dry-run"),
    )?;
    let said = fs::read_to_string(log("adopt-dry-run"))?;
    ensure!(
        said.contains("can be adopted")
            && said.contains("equal to the header's")
            && said.contains("the stored tries equal"),
        "adopt-v2 --dry-run did not report a passing check; its log: {}",
        log("adopt-dry-run").display()
    );
    ensure!(
        stored_bytes(&v2)? == before,
        "adopt-v2 --dry-run changed files in {}",
        v2.display()
    );
    let abandoned = adopt_killed_then_abandoned(&args, &v2, &log)?;
    let started = Instant::now();
    run_to_end(
        &args.hybrid_node,
        "db",
        &v2,
        &["adopt-v2", "--cli", &cli],
        &log("adopt"),
    )?;
    let adopt_secs = started.elapsed().as_secs_f64();

    // A read-only open needs a datadir the hybrid has opened read-write once (its intent log),
    // as a node start does; `init` on an initialised datadir is such an open and changes no row.
    run_to_end(&args.hybrid_node, "init", &v1, &[], &log("open-v1"))?;
    run_to_end(&args.hybrid_node, "init", &v2, &[], &log("open-v2"))?;

    // Every table, read through the hybrid on both sides. VersionHistory records when each
    // datadir was opened, so it differs by nature.
    let diff = args.work.join("diff");
    run_to_end(
        &args.hybrid_node,
        "db",
        &v1,
        &[
            "diff",
            "--secondary-datadir",
            &v2.to_string_lossy(),
            "--output",
            &diff.to_string_lossy(),
        ],
        &log("diff"),
    )?;
    let differing = differing_tables(&diff);
    ensure!(
        differing.is_empty(),
        "the adopted datadir differs from the migrated v1 twin in {differing:?} (reports in {})",
        diff.display()
    );

    // The adopted node answers as the v2 node did (rpc-latency fails on any other answer).
    {
        let _node = Node::start(&args.hybrid_node, &v2, &args, &log("node-adopted"))?;
        crate::node::wait(crate::node::WaitArgs::new(&rpc)).await?;
        crate::rpc_bench::latency(LatencyArgs::new(
            &rpc,
            &samples,
            "adopted",
            &args.work.join("latency.json"),
        ))
        .await?;
    }
    println!(
        "adopt-v2: the adopted datadir equals its v1 twin migrated to the hybrid in every table \
         (db diff), and answers {} sampled RPC calls of each kind as the v2 node did; adopt-v2 \
         (checks, adoption straight to the hybrid, verify) {adopt_secs:.1}s; of the v1 twin: reth-hybrid \
         migrate {migrate_secs:.1}s, reth's own db migrate-v2 {reth_migrate_v2_secs:.1}s (senders \
         and tries left to its pipeline); before it, an adoption killed while it checked the \
         changesets and then abandoned left the v2 datadir as it was ({abandoned})",
        args.samples
    );
    fs::remove_dir_all(&args.work).with_context(|| format!("removing {}", args.work.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_import_counts_only_when_every_block_and_transaction_went_in() {
        let whole = "INFO Import complete. Total: 81/81 blocks, 4000/4000 transactions\n";
        assert!(imported_everything(whole));
        assert!(!imported_everything(
            "INFO Import complete. Total: 40/81 blocks, 2000/4000 transactions\n"
        ));
        assert!(!imported_everything(
            "INFO Import complete. Total: 81/81 blocks, 3999/4000 transactions\n"
        ));
        assert!(!imported_everything("INFO Imported 81 blocks\n"));
        assert!(
            !imported_everything("INFO Import complete. Total: 0/0 blocks, 0/0 transactions\n"),
            "an import of nothing"
        );
    }

    #[test]
    fn only_rocksdbs_exit_race_is_accepted_as_an_abort() {
        let raced = "INFO Import complete. Total: 81/81 blocks, 4000/4000 transactions\n\
                     pthread lock: Invalid argument\n";
        assert!(aborted_in_rocksdbs_exit_race(raced));
        assert!(!aborted_in_rocksdbs_exit_race(
            "pthread lock: Invalid argument\nthread 'main' panicked at somewhere\n"
        ));
        assert!(!aborted_in_rocksdbs_exit_race(""));
    }
}
