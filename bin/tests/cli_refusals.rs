//! The datadir commands refuse a datadir in a state they must not touch, say why, and leave it as
//! it was: MDBX compared by every row of every table (layout and control rows included), every
//! other file by its bytes (only `db/mdbx.lck`, libmdbx's reader slots, is left out).

use reth_hybrid_api::{
    Tables,
    models::{STORAGE_SETTINGS_KEY, StorageSettings},
    raw::{RawEngine, RawPair, RawTx, RawTxMut},
    test_support::{copy_of_mdbx, datadir_files, mdbx_rows},
};
use reth_hybrid_hybrid::{
    control::{FOLLOWER_SEQ_KEY, SEQ_KEY, put_bytes, put_u64},
    layout::{LAYOUT_KEY, MIGRATION_STATE_FILE},
};
use reth_hybrid_mdbx::{MdbxEngine, MdbxOptions, lock::ProcessUid};
use reth_hybrid_rocksdb::RocksEngine;
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Child, Command},
};

mod common;

use common::reth_hybrid;

/// A generated datadir whose history tables were migrated to RocksDB (a hybrid datadir).
fn hybrid_datadir(d: &Path) {
    let s = d.to_str().expect("utf8");
    let out = reth_hybrid(&["generate", "--datadir", s, "--scale", "1"]);
    assert_eq!(out.code, 0, "{}", out.text());
    let out = reth_hybrid(&["migrate", "--datadir", s]);
    assert_eq!(out.code, 0, "{}", out.text());
}

fn with_mdbx(d: &Path, f: impl FnOnce(&<MdbxEngine as RawEngine>::TxMut)) {
    let mdbx = MdbxEngine::open(d, MdbxOptions::read_write()).expect("mdbx");
    let tx = mdbx.begin_rw().expect("rw");
    f(&tx);
    tx.commit().expect("commit");
}

#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    files: BTreeMap<PathBuf, Option<Vec<u8>>>,
    mdbx: Vec<(Tables, Option<Vec<RawPair>>)>,
}

fn snapshot(d: &Path) -> Snapshot {
    // Rows read from a copy of db/, so a live lock or an immutable datadir is no obstacle.
    let copy = copy_of_mdbx(d);
    Snapshot {
        files: datadir_files(d),
        mdbx: mdbx_rows(&MdbxEngine::open_read_only(copy.path()).expect("mdbx copy")),
    }
}

fn differences(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for path in before.files.keys().chain(after.files.keys()) {
        if before.files.get(path) != after.files.get(path) {
            out.push(format!("{} differs", path.display()));
        }
    }
    out.dedup();
    for ((table, a), (_, b)) in before.mdbx.iter().zip(&after.mdbx) {
        if a != b {
            out.push(format!("MDBX table {table} differs"));
        }
    }
    out
}

/// What holds a datadir refused from outside it, until the case is over.
enum Held {
    Nothing,
    Node(Child),
    Immutable(PathBuf),
}

impl Drop for Held {
    fn drop(&mut self) {
        match self {
            Held::Nothing => {}
            Held::Node(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Held::Immutable(d) => {
                set_read_only(d, false);
            }
        }
    }
}

/// Root ignores permission bits, so as root the tree is made immutable (`chattr +i`).
fn set_read_only(d: &Path, on: bool) -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let status = if root {
        Command::new("chattr")
            .args(["-R", if on { "+i" } else { "-i" }])
            .arg(d)
            .status()
    } else {
        Command::new("chmod")
            .args(["-R", if on { "a-w" } else { "u+w" }])
            .arg(d)
            .status()
    };
    status.is_ok_and(|s| s.success())
}

/// What a command must do on a case's datadir: refuse (non-zero exit) saying this, or (for the
/// commands that only read) run, with exit code 0 or verify's 1 for a failed check.
#[derive(Clone, Copy)]
enum Expect {
    Refuse(&'static str),
    Exit(i32, &'static str),
    /// Whatever the outcome, nothing changes.
    Any,
}
use Expect::{Any, Exit, Refuse};

struct Case {
    name: &'static str,
    build: fn(&Path) -> Option<Held>,
    verify: Expect,
    stats: Expect,
    migrate: Expect,
    /// `layout set` of an empty table (`BlockOmmers` to RocksDB) unless the case names one.
    layout_set: Expect,
    layout_set_args: [&'static str; 2],
}

const EMPTY_TABLE: [&str; 2] = ["BlockOmmers", "rocksdb"];

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "reth storage v2 datadir",
            build: |d| {
                hybrid_datadir(d);
                with_mdbx(d, |tx| {
                    let v2 = StorageSettings { storage_v2: true };
                    put_bytes(tx, STORAGE_SETTINGS_KEY, v2.to_json_bytes()).expect("put");
                });
                Some(Held::Nothing)
            },
            verify: Exit(1, "storage v2"),
            stats: Exit(0, ""),
            migrate: Refuse("storage v2"),
            layout_set: Refuse("storage v2"),
            layout_set_args: EMPTY_TABLE,
        },
        Case {
            name: "rows in the other engine",
            build: |d| {
                hybrid_datadir(d);
                with_mdbx(d, |tx| {
                    tx.put(Tables::TransactionHashNumbers, &[3; 32], &[1])
                        .expect("put");
                });
                Some(Held::Nothing)
            },
            verify: Exit(
                1,
                "TransactionHashNumbers (routed to rocksdb, rows in both engines)",
            ),
            stats: Exit(0, ""),
            migrate: Refuse("TransactionHashNumbers"),
            // The table whose rows are astray: routing it is refused while rows are in both.
            layout_set: Refuse("TransactionHashNumbers"),
            layout_set_args: ["TransactionHashNumbers", "mdbx"],
        },
        Case {
            name: "corrupt layout JSON in Metadata",
            build: |d| {
                hybrid_datadir(d);
                with_mdbx(d, |tx| {
                    put_bytes(tx, LAYOUT_KEY, b"{\"version\": 1, \"tab".to_vec()).expect("put");
                });
                Some(Held::Nothing)
            },
            verify: Exit(1, "stored layout is unreadable"),
            stats: Refuse("stored layout is unreadable"),
            migrate: Refuse("stored layout is unreadable"),
            layout_set: Refuse("stored layout is unreadable"),
            layout_set_args: EMPTY_TABLE,
        },
        Case {
            name: "follower ahead",
            build: |d| {
                hybrid_datadir(d);
                let rocks = RocksEngine::open_in_datadir(d).expect("rocksdb");
                let tx = rocks.begin_rw().expect("rw");
                put_u64(&tx, SEQ_KEY, 3).expect("put");
                tx.commit().expect("commit");
                Some(Held::Nothing)
            },
            verify: Exit(1, "RocksDB holds commit 3"),
            stats: Exit(0, ""),
            migrate: Refuse("RocksDB is ahead of MDBX"),
            layout_set: Refuse("RocksDB is ahead of MDBX"),
            layout_set_args: EMPTY_TABLE,
        },
        Case {
            name: "follower behind",
            build: |d| {
                hybrid_datadir(d);
                with_mdbx(d, |tx| {
                    put_u64(tx, SEQ_KEY, 2).expect("put");
                    put_u64(tx, FOLLOWER_SEQ_KEY, 2).expect("put");
                });
                Some(Held::Nothing)
            },
            verify: Exit(1, "MDBX recorded commit 2"),
            stats: Exit(0, ""),
            migrate: Refuse("RocksDB is behind MDBX"),
            layout_set: Refuse("RocksDB is behind MDBX"),
            layout_set_args: EMPTY_TABLE,
        },
        Case {
            name: "garbage migration state file",
            build: |d| {
                hybrid_datadir(d);
                std::fs::write(d.join(MIGRATION_STATE_FILE), b"\x00garbage{").expect("write");
                Some(Held::Nothing)
            },
            verify: Exit(1, MIGRATION_STATE_FILE),
            stats: Exit(0, ""),
            migrate: Refuse(MIGRATION_STATE_FILE),
            layout_set: Refuse(MIGRATION_STATE_FILE),
            layout_set_args: EMPTY_TABLE,
        },
        Case {
            name: "datadir locked by a running node",
            build: |d| {
                hybrid_datadir(d);
                let node = Command::new("sleep").arg("600").spawn().expect("spawn");
                let uid = ProcessUid::of(node.id()).expect("child visible in /proc");
                std::fs::write(
                    d.join("db/lock"),
                    format!("{}\n{}", uid.pid, uid.start_time),
                )
                .expect("lock");
                Some(Held::Node(node))
            },
            verify: Refuse("locked by running process"),
            stats: Refuse("locked by running process"),
            migrate: Refuse("locked by running process"),
            layout_set: Refuse("locked by running process"),
            layout_set_args: EMPTY_TABLE,
        },
        Case {
            name: "read-only datadir",
            build: |d| {
                hybrid_datadir(d);
                if set_read_only(d, true) {
                    return Some(Held::Immutable(d.to_path_buf()));
                }
                set_read_only(d, false);
                reth_hybrid_api::test_support::report_skip(
                    "cli refusals, case read-only datadir",
                    &format!("cannot make {} read-only here", d.display()),
                );
                None
            },
            // libmdbx reads without its lock file only on a read-only filesystem (EROFS), which
            // an immutable or permission-less tree is not: the readers may fail, but harmlessly.
            verify: Any,
            stats: Any,
            migrate: Refuse("not writable"),
            layout_set: Refuse("not writable"),
            layout_set_args: EMPTY_TABLE,
        },
    ]
}

/// Every refusal of `verify`, `stats`, `migrate` and `layout set`, one case per reason: the
/// command says the problem (or, for the read-only commands, reports it or runs), and the
/// datadir is unchanged.
#[test]
fn every_cli_refusal_changes_nothing() {
    let mut failures = Vec::new();
    for case in cases() {
        let dir = tempfile::tempdir().expect("tmp");
        let d = dir.path().join("datadir");
        let Some(held) = (case.build)(&d) else {
            continue;
        };
        let s = d.to_str().expect("utf8");
        let commands: [(&str, Vec<&str>, Expect); 4] = [
            ("verify", vec!["verify", "--datadir", s], case.verify),
            ("stats", vec!["stats", "--datadir", s], case.stats),
            (
                "migrate",
                vec![
                    "migrate",
                    "--datadir",
                    s,
                    "--tables",
                    "TransactionHashNumbers",
                    "--to",
                    "mdbx",
                ],
                case.migrate,
            ),
            (
                "layout set",
                vec![
                    "layout",
                    "set",
                    "--datadir",
                    s,
                    "--table",
                    case.layout_set_args[0],
                    "--engine",
                    case.layout_set_args[1],
                ],
                case.layout_set,
            ),
        ];
        for (command, args, expect) in commands {
            let before = snapshot(&d);
            let out = reth_hybrid(&args);
            let after = snapshot(&d);
            let ok = match expect {
                Refuse(says) => out.code != 0 && out.text().contains(says),
                Exit(code, says) => out.code == code && out.text().contains(says),
                Any => true,
            };
            if !ok {
                failures.push(format!(
                    "{} / {command}: exit {}, expected {}:\n{}",
                    case.name,
                    out.code,
                    match expect {
                        Refuse(says) => format!("a refusal saying {says:?}"),
                        Exit(code, says) => format!("exit {code} saying {says:?}"),
                        Any => unreachable!("any outcome passes"),
                    },
                    out.text()
                ));
            }
            let changed = differences(&before, &after);
            if !changed.is_empty() {
                failures.push(format!(
                    "{} / {command} changed the datadir: {}",
                    case.name,
                    changed.join(", ")
                ));
            }
        }
        drop(held);
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}
