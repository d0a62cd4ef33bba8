//! The wrapper's preflight on real generated datadirs, and `bench run` orchestration end to end:
//! with a stand-in reth-bench and node (shell scripts that behave as the real ones at the
//! process boundary: a listening engine port, CSV files in `--output`), and with a real
//! reth-bench when `RETH_HYBRID_RETH_BENCH` and its companions are set (skipped otherwise, saying
//! so).

use reth_hybrid_api::{EngineKind, typed::TypedDatabase};
use reth_hybrid_bench::reth_bench::preflight::Layout;
use reth_hybrid_bench::reth_bench::{
    files::read_run,
    orchestrate::{Range, Reset, RunPlan, Setup, run, run_order},
    preflight::{PreflightError, check_pair},
};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{GenerateSpec, MigrateRequest, NoProgress, generate, migrate};
use std::{path::Path, time::Duration};

fn generated(dir: &Path, scale: u64, seed: u64) {
    let engine =
        MdbxEngine::open(dir, MdbxOptions::create().with_geometry(Geometry::SMALL)).expect("mdbx");
    generate(&TypedDatabase::new(engine), &GenerateSpec::new(scale, seed)).expect("generate");
}

fn copy_db(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("db")).expect("mkdir");
    for f in ["mdbx.dat", "database.version"] {
        std::fs::copy(from.join("db").join(f), to.join("db").join(f)).expect("copy");
    }
}

/// An MDBX datadir and the same chain migrated to RocksDB.
fn pair(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (a, b) = (root.join("mdbx"), root.join("rocksdb"));
    generated(&a, 2, 9);
    copy_db(&a, &b);
    migrate(&b, &MigrateRequest::new(EngineKind::RocksDb), &NoProgress).expect("migrate");
    (a, b)
}

#[test]
fn preflight_accepts_a_valid_pair_and_refuses_the_invalid_hybrid() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b) = pair(tmp.path());
    let (fa, fb) = check_pair((&a, Layout::Mdbx), (&b, Layout::RocksDb)).expect("valid");
    assert_eq!(fa.head, Some(200));
    assert_eq!(fa.genesis_hash, fb.genesis_hash);
    assert!(
        fb.placement
            .iter()
            .all(|p| p.mdbx_rows == 0 && p.rocksdb_rows() > 0)
    );

    // An MDBX datadir labelled RocksDB: the invalid hybrid.
    let err = check_pair((&a, Layout::RocksDb), (&b, Layout::RocksDb)).expect_err("invalid");
    assert!(matches!(err, PreflightError::InvalidHybrid { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("invalid hybrid") && msg.contains("reth-hybrid migrate --datadir"),
        "{msg}"
    );
    let err = check_pair((&b, Layout::Mdbx), (&b, Layout::RocksDb)).expect_err("not mdbx");
    assert!(matches!(err, PreflightError::NotMdbx { .. }), "{err}");

    // Another chain, and the same chain at another head.
    let other = tmp.path().join("other");
    generated(&other, 2, 10);
    let err = check_pair((&a, Layout::Mdbx), (&other, Layout::Mdbx)).expect_err("chain");
    assert!(
        matches!(err, PreflightError::DifferentChains { .. }),
        "{err}"
    );
    // The same chain, its node stopped at block 150 (the Finish checkpoint says where it is).
    let behind = tmp.path().join("behind");
    copy_db(&a, &behind);
    {
        use reth_hybrid_api::{
            DbTx, DbTxMut, models::StageCheckpoint, tables::StageCheckpoints, typed::Database,
        };
        let db =
            TypedDatabase::new(MdbxEngine::open(&behind, MdbxOptions::read_write()).expect("mdbx"));
        let tx = db.tx_mut().expect("rw");
        tx.put::<StageCheckpoints>(
            "Finish".into(),
            StageCheckpoint {
                block_number: 150,
                stage_checkpoint: None,
            },
        )
        .expect("put");
        tx.commit().expect("commit");
    }
    let err = check_pair((&a, Layout::Mdbx), (&behind, Layout::Mdbx)).expect_err("head");
    assert!(
        matches!(
            err,
            PreflightError::DifferentHeads {
                ha: 200,
                hb: 150,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("reth stage unwind --datadir <datadir> to-block 150"),
        "{err}"
    );
}

#[test]
fn preflight_tells_reths_storage_v2_from_reth_hybrid() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b) = pair(tmp.path());
    let v2 = tmp.path().join("v2");
    v2_like(&a, &v2);
    check_pair((&a, Layout::Mdbx), (&v2, Layout::V2)).expect("a valid v2 candidate");
    check_pair((&v2, Layout::V2), (&b, Layout::RocksDb)).expect("v2 as the baseline of the hybrid");
    let err = check_pair((&a, Layout::Mdbx), (&v2, Layout::RocksDb)).expect_err("not the hybrid");
    assert!(
        matches!(err, PreflightError::NotHybrid { .. })
            && err.to_string().contains("label it `v2`"),
        "{err}"
    );
    let err = check_pair((&v2, Layout::V2), (&b, Layout::V2)).expect_err("the hybrid is not v2");
    assert!(
        matches!(err, PreflightError::NotV2 { .. })
            && err.to_string().contains("hybrid-rocksdb")
            && err.to_string().contains("label it `rocksdb`"),
        "{err}"
    );
    let err = check_pair((&a, Layout::V2), (&v2, Layout::V2)).expect_err("v1 is not v2");
    assert!(matches!(err, PreflightError::InvalidHybrid { .. }), "{err}");
    let err = check_pair((&v2, Layout::Mdbx), (&b, Layout::RocksDb)).expect_err("v2 is not v1");
    assert!(matches!(err, PreflightError::NotMdbx { .. }), "{err}");
}

#[test]
fn layouts_parse_by_their_names_and_reths() {
    for (name, layout) in [
        ("mdbx", Layout::Mdbx),
        ("v1", Layout::Mdbx),
        ("rocksdb", Layout::RocksDb),
        ("hybrid", Layout::RocksDb),
        ("v2", Layout::V2),
    ] {
        assert_eq!(name.parse::<Layout>(), Ok(layout));
    }
    let err = "v3".parse::<Layout>().expect_err("unknown");
    assert!(err.contains("mdbx") && err.contains("v2"), "{err}");
}

/// A copy of `a` laid out as reth's storage v2 keeps history: MDBX's history tables empty, rows
/// in `<datadir>/rocksdb` (left in its WAL, as a stopped node leaves them).
fn v2_like(a: &Path, v2: &Path) {
    copy_db(a, v2);
    let mdbx = MdbxEngine::open(v2, MdbxOptions::read_write()).expect("mdbx");
    use reth_hybrid_api::raw::{RawEngine, RawTx, RawTxMut};
    let tx = mdbx.begin_rw().expect("rw");
    for t in reth_hybrid_bench::reth_bench::preflight::HISTORY_TABLES {
        tx.clear(t).expect("clear");
    }
    tx.commit().expect("commit");
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let names = [
        "AccountsHistory",
        "StoragesHistory",
        "TransactionHashNumbers",
    ];
    let db = rocksdb::DB::open_cf(&opts, v2.join("rocksdb"), names).expect("rocksdb");
    for n in names {
        db.put_cf(db.cf_handle(n).expect("cf"), [1u8; 40], [2u8])
            .expect("put");
    }
}

#[test]
fn disk_records_reths_rocksdb_per_table_and_static_file_segments() {
    use reth_hybrid_bench::reth_bench::report::DiskRecord;
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, _) = pair(tmp.path());
    let v2 = tmp.path().join("v2");
    v2_like(&a, &v2);
    let segments = v2.join("static_files");
    std::fs::create_dir_all(&segments).expect("mkdir");
    for (file, bytes) in [
        ("static_file_account-change-sets_0_499999", 3000),
        ("static_file_account-change-sets_0_499999.off", 200),
        ("static_file_account-change-sets_0_499999.csoff", 100),
        ("static_file_headers_0_499999", 50),
        ("lock", 7),
    ] {
        std::fs::write(segments.join(file), vec![0u8; bytes]).expect("write");
    }
    let disk = DiskRecord::read(&v2).expect("read");
    assert_eq!(
        disk.static_file_segments.get("account-change-sets"),
        Some(&3300),
        "{:?}",
        disk.static_file_segments
    );
    assert_eq!(disk.static_file_segments.get("headers"), Some(&50));
    assert_eq!(
        disk.static_file_segments.len(),
        2,
        "the lock file is no segment"
    );
    assert!(disk.upstream_rocksdb_dir_bytes > 0);
    let mdbx = v2.join("db").join("mdbx.dat");
    assert!(
        disk.mdbx_allocated_bytes > 0
            && disk.mdbx_allocated_bytes == reth_hybrid_bench::allocated_bytes(&mdbx)
            && disk.mdbx_allocated_bytes <= disk.mdbx_file_bytes.next_multiple_of(4096),
        "{disk:?}"
    );
    assert!(
        disk.datadir_allocated_bytes
            >= disk.mdbx_allocated_bytes + disk.upstream_rocksdb_dir_bytes / 2,
        "the whole datadir holds its parts: {disk:?}"
    );
    for table in [
        "AccountsHistory",
        "StoragesHistory",
        "TransactionHashNumbers",
    ] {
        let (bytes, place) = disk.logical_table(table).expect("held");
        assert!(
            bytes > 0 && place == "reth's rocksdb",
            "{table}: {bytes} in {place}"
        );
    }
    let (bytes, place) = disk.logical_table("AccountChangeSets").expect("segment");
    assert!(
        bytes >= 3300 && place.ends_with("static files"),
        "{bytes} in {place}"
    );
    // The v1 source keeps its history in MDBX, and has no reth RocksDB rows.
    let v1 = DiskRecord::read(&a).expect("read");
    assert_eq!(v1.logical_table("AccountsHistory").expect("held").1, "mdbx");
}

#[test]
fn allocated_bytes_count_a_sparse_file_by_what_it_holds_and_a_hard_link_once() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("d");
    std::fs::create_dir_all(dir.join("sub")).expect("mkdir");
    // 1 GiB long, one 64 KiB block of data written: MDBX's mdbx.dat after a geometry step.
    let sparse = std::fs::File::create(dir.join("sparse")).expect("create");
    sparse.set_len(1 << 30).expect("extend");
    std::os::unix::fs::FileExt::write_all_at(&sparse, &[7u8; 65536], 0).expect("write");
    sparse.sync_all().expect("sync");
    std::fs::write(dir.join("sub/data"), vec![1u8; 1 << 20]).expect("write");
    std::fs::hard_link(dir.join("sub/data"), dir.join("link")).expect("link");
    let sparse_bytes = reth_hybrid_bench::allocated_bytes(&dir.join("sparse"));
    assert!(
        (65536..1 << 20).contains(&sparse_bytes),
        "a sparse file counts its blocks, not its length: {sparse_bytes}"
    );
    let all = reth_hybrid_bench::allocated_bytes(&dir);
    assert!(
        all >= sparse_bytes + (1 << 20) && all < sparse_bytes + (2 << 20) - 65536,
        "the hard-linked MiB counts once: {all}"
    );
    assert_eq!(reth_hybrid_bench::dir_bytes(&dir), (1 << 30) + (2 << 20));
    // A datadir given as a symlink counts what it points to; a symlink inside is not followed.
    std::os::unix::fs::symlink(&dir, tmp.path().join("alias")).expect("symlink");
    assert_eq!(
        reth_hybrid_bench::allocated_bytes(&tmp.path().join("alias")),
        all
    );
    std::os::unix::fs::symlink(&dir, dir.join("loop")).expect("symlink");
    let with_loop = reth_hybrid_bench::allocated_bytes(&dir);
    assert!(with_loop < all + 65536, "{with_loop} vs {all}");
}

/// A stand-in node: listens on the engine port until killed.
fn node_command(port: u16) -> String {
    format!(
        "exec python3 -c \"import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',{port})); s.listen(); time.sleep(600)\""
    )
}

/// A stand-in reth-hybrid-node: its startup line names `storage`, as the real one's does.
fn hybrid_node_command(port: u16, storage: &str) -> String {
    format!(
        "echo '2026-12-01T00:00:00.000000Z  INFO reth-hybrid-node 0.1.0 (test) storage=\"{storage}\"'; {}",
        node_command(port)
    )
}

/// [`hybrid_node_command`] with reth's own line on the datadir's layout after it.
fn node_command_on(port: u16, storage: &str, storage_v2: bool) -> String {
    format!(
        "echo '2026-12-01T00:00:00.000000Z  INFO Loaded storage settings settings=StorageSettings {{ storage_v2: {storage_v2} }} pruning_mode=\"archive\"'; {}",
        hybrid_node_command(port, storage)
    )
}

/// A stand-in reth-bench: writes reth-bench 2.x CSVs for the requested range into --output;
/// `SLOW` (an env var the node command cannot see) is not needed: latency comes from the
/// datadir name in the jwt path, so each side has its own speed.
const FAKE_RETH_BENCH: &str = r#"#!/bin/sh
set -e
from=""; to=""; out=""; jwt=""
while [ $# -gt 0 ]; do
  case "$1" in
    --from) from="$2"; shift 2;; --to) to="$2"; shift 2;;
    --output) out="$2"; shift 2;; --jwt-secret) jwt="$2"; shift 2;;
    *) shift;;
  esac
done
case "$jwt" in *rocksdb*) np=800;; *) np=1000;; esac
mkdir -p "$out"
echo "block_number,gas_limit,transaction_count,gas_used,new_payload_latency,fcu_latency,total_latency,persistence_wait,execution_cache_wait,sparse_trie_wait" > "$out/combined_latency.csv"
echo "block_number,transaction_count,gas_used,time" > "$out/total_gas.csv"
t=0; b=$((from + 1))
while [ $b -le $to ]; do
  w=$(( (b * 37) % 50 ))
  total=$((np + w + 100)); t=$((t + total))
  echo "$b,30000000,10,1000000,$((np + w)),100,$total,0,0,0" >> "$out/combined_latency.csv"
  echo "$b,10,1000000,$t" >> "$out/total_gas.csv"
  b=$((b + 1))
done
echo "Benchmark complete"
"#;

/// A datadir pair, pristine copies of each to restore from, and the stand-in reth-bench.
struct Runnable {
    a: std::path::PathBuf,
    b: std::path::PathBuf,
    pa: std::path::PathBuf,
    pb: std::path::PathBuf,
    bench: std::path::PathBuf,
}

fn runnable(root: &Path) -> Runnable {
    let (a, b) = pair(root);
    let (pa, pb) = (root.join("pa"), root.join("pb"));
    for (from, to) in [(&a, &pa), (&b, &pb)] {
        std::process::Command::new("cp")
            .arg("-a")
            .arg(from)
            .arg(to)
            .status()
            .expect("cp");
    }
    let bench = root.join("reth-bench");
    std::fs::write(&bench, FAKE_RETH_BENCH).expect("write");
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&bench)
        .status()
        .expect("chmod");
    Runnable {
        a,
        b,
        pa,
        pb,
        bench,
    }
}

/// One ABBA pair over `r`'s datadirs, both sides running `node_command`, blocks 201..=210.
fn one_pair_plan(r: &Runnable, port: u16, node_command: String, output: &Path) -> RunPlan {
    let setup = |name: &str, d: &Path, layout, restore: &Path| Setup {
        name: name.into(),
        datadir: d.to_path_buf(),
        layout,
        node_command: node_command.clone(),
        reset: Reset::Restore {
            from: restore.to_path_buf(),
        },
        jwt_secret: d.join("jwt.hex"),
    };
    RunPlan {
        baseline: setup("stock", &r.a, Layout::Mdbx, &r.pa),
        candidate: setup("hybrid", &r.b, Layout::RocksDb, &r.pb),
        reth_bench: r.bench.display().to_string(),
        rpc_url: "http://127.0.0.1:1".into(),
        engine_rpc_url: format!("http://127.0.0.1:{port}"),
        range: Range::FromTo { from: 200, to: 210 },
        pairs: 1,
        warmup_blocks: 0,
        output: output.to_path_buf(),
        extra_bench_args: Vec::new(),
        start_timeout: Duration::from_secs(30),
        stop_timeout: Duration::from_secs(10),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

#[test]
fn run_interleaves_pairs_resets_datadirs_and_keeps_every_runs_output() {
    assert_eq!(run_order(2), [false, true, true, false]);
    let tmp = tempfile::tempdir().expect("tmp");
    // Pristine copies to restore from before each run.
    let Runnable {
        a,
        b,
        pa,
        pb,
        bench,
    } = runnable(tmp.path());
    let port = free_port();
    let setup = |name: &str, d: &Path, layout, restore: &Path| Setup {
        name: name.into(),
        datadir: d.to_path_buf(),
        layout,
        node_command: node_command(port),
        reset: Reset::Restore {
            from: restore.to_path_buf(),
        },
        jwt_secret: d.join("jwt.hex"),
    };
    let output = tmp.path().join("out");
    let plan = RunPlan {
        baseline: setup("mdbx", &a, Layout::Mdbx, &pa),
        candidate: setup("rocksdb", &b, Layout::RocksDb, &pb),
        reth_bench: bench.display().to_string(),
        rpc_url: "http://127.0.0.1:1".into(),
        engine_rpc_url: format!("http://127.0.0.1:{port}"),
        range: Range::FromTo { from: 200, to: 260 },
        pairs: 2,
        warmup_blocks: 5,
        output: output.clone(),
        extra_bench_args: vec!["--wait-time".into(), "0ms".into()],
        start_timeout: Duration::from_secs(30),
        stop_timeout: Duration::from_secs(10),
    };
    let mut log = Vec::new();
    let outcome = run(&plan, &mut log).expect("run");
    let log = String::from_utf8(log).expect("utf8");
    assert!(log.contains("preflight passed"), "{log}");
    assert_eq!(outcome.baseline.len(), 2);
    assert_eq!(outcome.candidate.len(), 2);
    let order: Vec<&str> = outcome
        .config
        .runs
        .iter()
        .map(|r| r.side.as_str())
        .collect();
    assert_eq!(order, ["baseline", "candidate", "candidate", "baseline"]);
    for dir in outcome.baseline.iter().chain(&outcome.candidate) {
        for f in [
            "combined_latency.csv",
            "total_gas.csv",
            "reth-bench.log",
            "node.log",
            "reset.log",
            "warmup/combined_latency.csv",
        ] {
            assert!(dir.join(f).exists(), "{} lacks {f}", dir.display());
        }
        let run = read_run(dir).expect("parse");
        assert_eq!(
            run.blocks.first().map(|b| b.block_number),
            Some(206),
            "measured after the warmup"
        );
        assert_eq!(run.blocks.last().map(|b| b.block_number), Some(260));
    }
    let cmd = &outcome.config.runs[0].command;
    for part in [
        "new-payload-fcu",
        "--rpc-url",
        "--engine-rpc-url",
        "--jwt-secret",
        "--from 205",
        "--to 260",
        "--output",
        "--wait-time 0ms",
    ] {
        assert!(cmd.contains(part), "{cmd} lacks {part}");
    }
    assert!(output.join("run.json").exists());
    // Every node was stopped: the port is free again.
    std::net::TcpListener::bind(("127.0.0.1", port)).expect("the node's port was released");
    // A second run into the same folder is refused.
    assert!(run(&plan, &mut Vec::new()).is_err());
    // A restore source that is the datadir itself, or missing, is refused before anything
    // is deleted.
    for bad in [b.clone(), tmp.path().join("no-such-copy")] {
        let mut p = plan.clone();
        p.output = tmp.path().join("out-bad-restore");
        p.candidate.reset = Reset::Restore { from: bad };
        let err = run(&p, &mut Vec::new()).expect_err("refused");
        assert!(
            err.to_string().contains("--candidate-restore-from"),
            "{err}"
        );
        assert!(b.join("db/mdbx.dat").exists(), "the datadir is untouched");
    }
    // Each run records the datadir's bytes per table and engine after it, and the report shows
    // the moved tables side by side.
    let last = outcome.config.runs.last().expect("runs");
    let disk = last.disk.as_ref().expect("disk figures");
    assert!(
        disk.tables
            .iter()
            .any(|t| t.table == "TransactionHashNumbers" && t.mdbx_bytes > 0),
        "{disk:?}"
    );
    assert!(output.join("baseline-1/disk.json").exists());
    assert_eq!(last.storage, None, "a node that names no storage");
    // And the node's threads' CPU over the measured blocks (the stand-in node is python3, a
    // kind of thread by the name's stem).
    assert_eq!(last.blocks, Some(55), "260 - (200 + 5)");
    let cpu = last.cpu.as_ref().expect("the node's threads were read");
    assert!(cpu.threads.iter().any(|t| t.name == "python*"), "{cpu:?}");

    // A hybrid datadir cannot be reset with reth's unwind (it would not unwind RocksDB).
    let mut unwind = plan.clone();
    unwind.output = tmp.path().join("out-unwind");
    unwind.candidate.reset = Reset::Unwind {
        reth: "reth".into(),
        args: Vec::new(),
    };
    let err = run(&unwind, &mut Vec::new()).expect_err("refused");
    assert!(
        err.to_string().contains("--candidate-restore-from"),
        "{err}"
    );
}

#[test]
fn real_reth_bench_end_to_end_when_configured() {
    let vars = [
        "RETH_HYBRID_RETH_BENCH",
        "RETH_HYBRID_BENCH_RPC_URL",
        "RETH_HYBRID_BENCH_BASELINE_DATADIR",
        "RETH_HYBRID_BENCH_BASELINE_NODE",
        "RETH_HYBRID_BENCH_CANDIDATE_DATADIR",
        "RETH_HYBRID_BENCH_CANDIDATE_NODE",
    ];
    let missing: Vec<&str> = vars
        .iter()
        .copied()
        .filter(|v| std::env::var_os(v).is_none())
        .collect();
    if !missing.is_empty() {
        reth_hybrid_api::test_support::report_skip(
            "real reth-bench run",
            &format!(
                "set {} (a reth-bench binary from reth v2.2.0 or v1.11.4, a block source RPC, and \
                 two synced datadirs with the commands that start their nodes)",
                missing.join(", ")
            ),
        );
        return;
    }
    let var = |v: &str| std::env::var(v).expect("checked");
    let output = tempfile::tempdir().expect("tmp");
    let setup = |side: &str, layout| {
        let datadir = std::path::PathBuf::from(var(&format!("RETH_HYBRID_BENCH_{side}_DATADIR")));
        Setup {
            name: layout_name(layout),
            jwt_secret: datadir.join("jwt.hex"),
            datadir,
            layout,
            node_command: var(&format!("RETH_HYBRID_BENCH_{side}_NODE")),
            reset: Reset::Unwind {
                reth: std::env::var("RETH_HYBRID_RETH").unwrap_or_else(|_| "reth".into()),
                args: Vec::new(),
            },
        }
    };
    let plan = RunPlan {
        baseline: setup("BASELINE", Layout::Mdbx),
        candidate: setup("CANDIDATE", Layout::RocksDb),
        reth_bench: var("RETH_HYBRID_RETH_BENCH"),
        rpc_url: var("RETH_HYBRID_BENCH_RPC_URL"),
        engine_rpc_url: "http://127.0.0.1:8551".into(),
        range: Range::Advance(20),
        pairs: 1,
        warmup_blocks: 2,
        output: output.path().join("run"),
        extra_bench_args: Vec::new(),
        start_timeout: Duration::from_secs(300),
        stop_timeout: Duration::from_secs(60),
    };
    let outcome = run(&plan, &mut std::io::stderr()).expect("real run");
    for dir in outcome.baseline.iter().chain(&outcome.candidate) {
        assert!(!read_run(dir).expect("parse").blocks.is_empty());
    }
}

fn layout_name(layout: Layout) -> String {
    layout.to_string()
}

#[test]
fn run_refuses_a_stock_node_on_the_other_reth_layout() {
    let tmp = tempfile::tempdir().expect("tmp");
    let r = runnable(tmp.path());
    let port = free_port();
    // The baseline is labelled v1 (mdbx), but reth says its datadir is storage v2.
    let mut plan = one_pair_plan(
        &r,
        port,
        node_command_on(port, "mdbx", true),
        &tmp.path().join("out"),
    );
    plan.candidate.node_command = node_command_on(port, "hybrid", false);
    let err = run(&plan, &mut Vec::new()).expect_err("v2 under the v1 label");
    let msg = err.to_string();
    assert!(
        msg.contains("baseline node says `storage_v2: true`")
            && msg.contains("needs storage_v2: false"),
        "{msg}"
    );
    std::net::TcpListener::bind(("127.0.0.1", port)).expect("the refused node was stopped");
}

#[test]
fn reths_layout_line_is_read_from_the_node_log() {
    use reth_hybrid_bench::reth_bench::orchestrate::reported_reth_storage_v2;
    let line = "2026-12-04T03:00:00.000000Z  INFO Loaded storage settings settings=StorageSettings { storage_v2: true } pruning_mode=\"archive\"";
    assert_eq!(reported_reth_storage_v2(line), Some(true));
    assert_eq!(
        reported_reth_storage_v2(&line.replace("true", "false")),
        Some(false)
    );
    assert_eq!(
        reported_reth_storage_v2("INFO storage_v2: true, but not reth's line"),
        None
    );
}

#[test]
fn run_records_which_variant_ran_and_refuses_the_other_one() {
    let tmp = tempfile::tempdir().expect("tmp");
    let r = runnable(tmp.path());
    let port = free_port();
    let plan = |out: &str, stock_storage: &str| {
        let mut plan = one_pair_plan(
            &r,
            port,
            hybrid_node_command(port, stock_storage),
            &tmp.path().join(out),
        );
        plan.candidate.node_command = hybrid_node_command(port, "hybrid");
        plan
    };
    // The hybrid binary under the stock name: its startup line gives it away.
    let err = run(&plan("wrong", "hybrid"), &mut Vec::new()).expect_err("the wrong variant");
    let msg = err.to_string();
    assert!(
        msg.contains("baseline node says `storage=hybrid`") && msg.contains("make integration"),
        "{msg}"
    );
    std::net::TcpListener::bind(("127.0.0.1", port)).expect("the refused node was stopped");

    let outcome = run(&plan("right", "mdbx"), &mut Vec::new()).expect("run");
    let storages: Vec<(&str, Option<&str>)> = outcome
        .config
        .runs
        .iter()
        .map(|r| (r.side.as_str(), r.storage.as_deref()))
        .collect();
    assert_eq!(
        storages,
        [("baseline", Some("mdbx")), ("candidate", Some("hybrid"))],
        "each run records the storage its node named"
    );
}

#[test]
fn the_startup_line_names_the_storage() {
    use reth_hybrid_bench::reth_bench::orchestrate::reported_storage;
    let reth_terminal = "2026-12-01T17:00:00.123456Z  INFO reth-hybrid-node 0.1.0 (hybrid: history and tx-hash index in RocksDB) storage=\"hybrid\"";
    assert_eq!(reported_storage(reth_terminal).as_deref(), Some("hybrid"));
    let plain = "INFO reth_hybrid: reth-hybrid-node 0.1.0 (stock MDBX) storage=mdbx";
    assert_eq!(reported_storage(plain).as_deref(), Some("mdbx"));
    assert_eq!(
        reported_storage("INFO reth::cli: Starting reth version=2.5.1 storage=whatever"),
        None,
        "only reth-hybrid-node's own line counts"
    );
}

/// A stand-in node as `sh -c` runs a real one: not exec'd (the shell stays its parent, and dies
/// at once on the group's SIGTERM), taking `shutdown_secs` to shut down on SIGTERM (a real node
/// persists its in-memory blocks then), and appending a line to `stopped` once it has.
fn slow_stopping_node_command(port: u16, shutdown_secs: f64, stopped: &Path) -> String {
    format!(
        "python3 -c \"import signal,socket,sys,time\n\
def term(*_):\n    time.sleep({shutdown_secs}); open('{}','a').write('stopped\\n'); sys.exit(0)\n\
signal.signal(signal.SIGTERM, term)\n\
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',{port})); s.listen(); time.sleep(600)\"; true",
        stopped.display()
    )
}

#[test]
fn run_lets_each_node_finish_its_shutdown_before_going_on() {
    let tmp = tempfile::tempdir().expect("tmp");
    let runnable = runnable(tmp.path());
    let port = free_port();
    let stopped = tmp.path().join("stopped");
    let plan = one_pair_plan(
        &runnable,
        port,
        slow_stopping_node_command(port, 1.5, &stopped),
        &tmp.path().join("out"),
    );
    run(&plan, &mut Vec::new()).expect("run");
    // Read the moment `run` returns: had it gone on when the shell died (or killed the group
    // then), the last node would still be shutting down, or never have finished.
    let lines = std::fs::read_to_string(&stopped).unwrap_or_default();
    assert_eq!(
        lines.lines().count(),
        2,
        "both nodes finished their shutdown before run went on: {lines:?}"
    );

    // A node that does not stop within the timeout is killed, and run still returns.
    let stubborn = tmp.path().join("stubborn");
    let mut slow = plan.clone();
    slow.output = tmp.path().join("out-slow");
    slow.stop_timeout = Duration::from_millis(500);
    slow.baseline.node_command = slow_stopping_node_command(port, 30.0, &stubborn);
    slow.candidate.node_command = slow_stopping_node_command(port, 30.0, &stubborn);
    let started = std::time::Instant::now();
    run(&slow, &mut Vec::new()).expect("run");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "killed after the timeout"
    );
    assert!(
        !stubborn.exists(),
        "the stubborn nodes were killed, not waited for"
    );
    std::net::TcpListener::bind(("127.0.0.1", port)).expect("the killed node's port was released");
}

/// Rows a stopped node left in the WAL of the hybrid RocksDB at `datadir` (not yet in SST files):
/// what a read-only open replays into its memtables.
fn rocksdb_rows_in_wal(datadir: &Path) -> u64 {
    let path = datadir.join(reth_hybrid_rocksdb::HYBRID_ROCKSDB_DIR);
    let names = rocksdb::DB::list_cf(&rocksdb::Options::default(), &path).expect("list");
    let db = rocksdb::DB::open_cf_for_read_only(&rocksdb::Options::default(), &path, &names, false)
        .expect("open read-only");
    names
        .iter()
        .map(|n| {
            db.property_int_value_cf(
                db.cf_handle(n).expect("cf"),
                "rocksdb.num-entries-active-mem-table",
            )
            .ok()
            .flatten()
            .unwrap_or(0)
        })
        .sum()
}

#[test]
fn run_records_disk_after_flushing_the_rocksdb_wal() {
    use reth_hybrid_api::{
        Tables,
        raw::{RawEngine, RawTx, RawTxMut},
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let runnable = runnable(tmp.path());
    let (b, pb) = (&runnable.b, &runnable.pb);
    // The candidate's starting copy holds rows only in RocksDB's WAL, as a stopped node leaves them.
    {
        let rocks = reth_hybrid_rocksdb::RocksEngine::open_in_datadir(pb).expect("open");
        let tx = rocks.begin_rw().expect("rw");
        for i in 0u64..2000 {
            let mut key = [7u8; 32];
            key[..8].copy_from_slice(&i.to_be_bytes());
            tx.put(Tables::TransactionHashNumbers, &key, &i.to_be_bytes())
                .expect("put");
        }
        tx.commit().expect("commit");
    }
    assert!(
        rocksdb_rows_in_wal(pb) >= 2000,
        "the rows are in the WAL only"
    );
    let port = free_port();
    let plan = one_pair_plan(&runnable, port, node_command(port), &tmp.path().join("out"));
    run(&plan, &mut Vec::new()).expect("run");
    assert_eq!(
        rocksdb_rows_in_wal(b),
        0,
        "the run's RocksDB was flushed before its disk was recorded"
    );
}

/// A stand-in `stage unwind` binary whose `--version` names `storage`, as reth-hybrid-node's does.
fn fake_unwinder(dir: &Path, storage: &str) -> String {
    let path = dir.join(format!("unwinder-{storage}"));
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && echo 'reth-hybrid-node storage: {storage}'\nexit 0\n"
        ),
    )
    .expect("write");
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .expect("chmod");
    path.display().to_string()
}

#[test]
fn a_hybrid_datadir_is_unwound_only_by_the_hybrid_build() {
    let tmp = tempfile::tempdir().expect("tmp");
    let r = runnable(tmp.path());
    let port = free_port();
    let unwind = |reth: String| Reset::Unwind {
        reth,
        args: vec!["--chain".into(), "dev".into()],
    };
    // reth's own unwind (or the stock build) would leave the RocksDB history ahead: refused
    // before anything runs.
    for reth in [fake_unwinder(tmp.path(), "mdbx"), "no-such-reth".into()] {
        let mut plan = one_pair_plan(&r, port, node_command(port), &tmp.path().join("out-stock"));
        plan.candidate.reset = unwind(reth.clone());
        let err = run(&plan, &mut Vec::new()).expect_err("refused");
        assert!(
            err.to_string().contains("--candidate-reth") && err.to_string().contains(&reth),
            "{err}"
        );
        assert!(!plan.output.exists(), "refused before any run");
    }
    // The hybrid build's unwind reaches the RocksDB tables: the pair runs.
    let mut plan = one_pair_plan(&r, port, node_command(port), &tmp.path().join("out-hybrid"));
    plan.candidate.reset = unwind(fake_unwinder(tmp.path(), "hybrid"));
    let outcome = run(&plan, &mut Vec::new()).expect("the hybrid build may unwind");
    assert_eq!(outcome.candidate.len(), 1);
}
