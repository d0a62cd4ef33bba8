//! The datadir commands as an operator runs them: the real binary on a generated datadir.

use std::path::Path;

mod common;

use common::{Out, reth_hybrid};

fn json(out: &Out) -> serde_json::Value {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).expect("json")
}

fn generated() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("datadir");
    let out = reth_hybrid(&[
        "generate",
        "--datadir",
        d.to_str().expect("utf8"),
        "--scale",
        "2",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    (dir, d.to_string_lossy().into_owned())
}

fn mdbx_bytes(d: &str) -> Vec<u8> {
    std::fs::read(Path::new(d).join("db/mdbx.dat")).expect("read")
}

#[test]
fn migrate_stats_verify_and_roll_back() {
    let (_dir, d) = generated();
    let before = mdbx_bytes(&d);
    let plan = json(&reth_hybrid(&[
        "migrate",
        "--datadir",
        &d,
        "--dry-run",
        "--json",
    ]));
    assert_eq!(plan["tables"].as_array().expect("tables").len(), 3);
    assert!(plan["estimated_seconds"].as_f64().expect("eta") > 0.0);
    assert!(mdbx_bytes(&d) == before, "--dry-run changed mdbx.dat");
    assert!(!Path::new(&d).join("hybrid-rocksdb").exists());

    let report = json(&reth_hybrid(&["migrate", "--datadir", &d, "--json"]));
    let rows: u64 = report["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .map(|t| t["rows"].as_u64().expect("rows"))
        .sum();
    assert!(rows > 1600, "{report}");

    let stats = json(&reth_hybrid(&[
        "stats",
        "--datadir",
        &d,
        "--exact",
        "--json",
    ]));
    let table = |name: &str| {
        stats["tables"]
            .as_array()
            .expect("tables")
            .iter()
            .find(|t| t["table"] == name)
            .cloned()
            .expect("listed")
    };
    let tx = table("TransactionHashNumbers");
    assert_eq!(
        (tx["engine"].as_str(), tx["rocksdb_entries"].as_u64()),
        (Some("rocksdb"), Some(1600))
    );
    assert_eq!(tx["mdbx_entries"], 0);
    assert_eq!(table("PlainAccountState")["engine"], "mdbx");
    let text = reth_hybrid(&["stats", "--datadir", &d]);
    assert!(text.stdout.contains("TransactionHashNumbers") && text.stdout.contains("rocksdb"));

    let verify = reth_hybrid(&["verify", "--datadir", &d]);
    assert_eq!(verify.code, 0, "{}", verify.stdout);
    assert!(verify.stdout.contains("verify: PASSED"));
    let layout = json(&reth_hybrid(&["layout", "get", "--datadir", &d, "--json"]));
    assert_eq!(layout["recorded"], true);
    assert_eq!(layout["tables"]["AccountsHistory"], "rocksdb");

    let text = reth_hybrid(&["migrate", "--datadir", &d, "--to", "mdbx"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains("migrated TransactionHashNumbers"),
        "{}",
        text.stdout
    );
    let layout = json(&reth_hybrid(&["layout", "get", "--datadir", &d, "--json"]));
    assert_eq!(layout["tables"]["AccountsHistory"], "mdbx");
    assert_eq!(reth_hybrid(&["verify", "--datadir", &d]).code, 0);
}

#[test]
fn bad_input_is_refused_with_the_fix_and_verify_fails_with_exit_code_1() {
    let (_dir, d) = generated();
    let out = reth_hybrid(&["migrate", "--datadir", &d, "--tables", "AccountHistory"]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("unknown table \"AccountHistory\""),
        "{}",
        out.stderr
    );

    let out = reth_hybrid(&["migrate", "--datadir", "/nonexistent/datadir"]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("pass the reth datadir"),
        "{}",
        out.stderr
    );

    let out = reth_hybrid(&[
        "layout",
        "set",
        "--datadir",
        &d,
        "--table",
        "PlainAccountState",
        "--engine",
        "rocksdb",
    ]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("reth-hybrid migrate --tables PlainAccountState"),
        "{}",
        out.stderr
    );
    let out = reth_hybrid(&[
        "layout",
        "set",
        "--datadir",
        &d,
        "--table",
        "BlockOmmers",
        "--engine",
        "rocksdb",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);

    // A stray RocksDB copy of an MDBX table: verify must fail (exit 1) and name it.
    assert_eq!(
        reth_hybrid(&[
            "migrate",
            "--datadir",
            &d,
            "--tables",
            "TransactionHashNumbers"
        ])
        .code,
        0
    );
    {
        use reth_hybrid_api::raw::{RawEngine, RawTx, RawTxMut};
        let mdbx = reth_hybrid_mdbx::MdbxEngine::open(
            Path::new(&d),
            reth_hybrid_mdbx::MdbxOptions::read_write(),
        )
        .expect("mdbx");
        let tx = mdbx.begin_rw().expect("rw");
        tx.put(
            reth_hybrid_api::Tables::TransactionHashNumbers,
            &[3; 32],
            &[1],
        )
        .expect("put");
        tx.commit().expect("commit");
    }
    let out = reth_hybrid(&["verify", "--datadir", &d]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("FAIL  placement") && out.stdout.contains("TransactionHashNumbers"),
        "{}",
        out.stdout
    );
}

#[test]
fn demo_runs_end_to_end() {
    let out = reth_hybrid(&[
        "demo",
        "--scale",
        "3",
        "--lookups",
        "200",
        "--persist-blocks",
        "20",
    ]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // The round trip compares every row after both datadirs persisted the same blocks, so the
    // hybrid's persisted rows equal MDBX's.
    for step in [
        "== 1.",
        "== 2.",
        "verify: PASSED",
        "== 4.",
        "== 5. persist 20 blocks",
        "hybrid/MDBX: throughput",
        "tx-hash and history tables on disk",
        "identical after MDBX -> RocksDB -> MDBX",
    ] {
        assert!(
            out.stdout.contains(step),
            "missing {step:?} in {}",
            out.stdout
        );
    }
}
