//! `reth-hybrid tables` as a user runs it: the real binary, both output formats.

mod common;

use common::reth_hybrid;
use std::process::Command;

#[test]
fn tables_prints_every_table_with_its_engine() {
    let run = reth_hybrid(&["tables"]);
    let (out, ok) = (run.stdout, run.code == 0);
    assert!(ok);
    assert_eq!(
        out.lines()
            .filter(|l| l.ends_with("mdbx") || l.ends_with("rocksdb"))
            .count(),
        31,
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("AccountsHistory "))
        .expect("AccountsHistory row");
    assert!(
        line.contains("ShardedKey<Address>")
            && line.contains("BlockNumberList")
            && line.ends_with("rocksdb"),
        "{line}"
    );
    let dup = out
        .lines()
        .find(|l| l.starts_with("PlainStorageState "))
        .expect("row");
    assert!(
        dup.contains("yes") && dup.contains("Address (B256)") && dup.ends_with("mdbx"),
        "{dup}"
    );
    assert!(
        out.contains("31 tables: 28 in MDBX, 3 in RocksDB by default"),
        "{out}"
    );
}

#[test]
fn tables_json_is_machine_readable() {
    let run = reth_hybrid(&["tables", "--json"]);
    let (out, ok) = (run.stdout, run.code == 0);
    assert!(ok);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(rows.len(), 31);
    let hashes = rows
        .iter()
        .find(|r| r["table"] == "TransactionHashNumbers")
        .expect("row");
    assert_eq!(hashes["default_engine"], "rocksdb");
    assert_eq!(hashes["dupsort"], false);
    assert_eq!(hashes["key"], "TxHash");
    assert_eq!(hashes["value"], "TxNumber");
    let trie = rows
        .iter()
        .find(|r| r["table"] == "StoragesTrie")
        .expect("row");
    assert_eq!(trie["subkey"], "StoredNibblesSubKey");
}

#[test]
fn metrics_flag_serves_and_rejects_bad_addresses() {
    let out = Command::new(env!("CARGO_BIN_EXE_reth-hybrid"))
        .args(["--metrics", "127.0.0.1:0", "tables", "--json"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_reth-hybrid"))
        .args(["--metrics", "not-an-address", "tables"])
        .output()
        .expect("run");
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("--metrics") && err.contains("not-an-address"),
        "{err}"
    );
}

#[test]
fn generate_writes_a_datadir_and_never_overwrites_one() {
    let dir = tempfile::tempdir().expect("tmp");
    let datadir = dir.path().join("dd");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_reth-hybrid"))
            .args(args)
            .output()
            .expect("run")
    };
    let d = datadir.to_str().expect("utf8 path");
    let out = run(&[
        "generate",
        "--datadir",
        d,
        "--scale",
        "1",
        "--seed",
        "3",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["blocks"], 100);
    assert_eq!(report["transactions"], 800);
    assert!(datadir.join("db/mdbx.dat").exists());
    let again = run(&["generate", "--datadir", d]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a database"));
}

#[test]
fn layout_get_reads_a_datadir_without_changing_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let datadir = dir.path().join("dd");
    let d = datadir.to_str().expect("utf8 path");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_reth-hybrid"))
            .args(args)
            .output()
            .expect("run")
    };
    assert!(run(&["generate", "--datadir", d]).status.success());
    let before = std::fs::read(datadir.join("db/mdbx.dat")).expect("read");
    let out = run(&["layout", "get", "--datadir", d, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        v["recorded"], false,
        "a generated reth v1 datadir has no reth-hybrid layout yet"
    );
    assert_eq!(v["tables"]["AccountsHistory"], "rocksdb");
    assert_eq!(v["tables"]["PlainAccountState"], "mdbx");
    assert!(
        std::fs::read(datadir.join("db/mdbx.dat")).expect("read") == before,
        "read-only: the datadir is unchanged"
    );
    let text = String::from_utf8(run(&["layout", "get", "--datadir", d]).stdout).expect("utf8");
    assert!(
        text.contains("no layout recorded")
            && text
                .contains("rocksdb (3): TransactionHashNumbers, AccountsHistory, StoragesHistory"),
        "{text}"
    );
    let missing = run(&[
        "layout",
        "get",
        "--datadir",
        dir.path().join("nope").to_str().expect("utf8"),
    ]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no MDBX database"));
}
