//! Refusals change nothing: every reason `HybridDb` refuses a datadir is tried on a datadir in
//! that state, and afterwards the datadir must be as it was. MDBX is compared by every row of
//! every table (the layout and reth-hybrid's control rows included) and by which tables exist;
//! every other file by its bytes, every folder by its presence. Only `db/mdbx.lck` (libmdbx's
//! reader slots) is left out.

use reth_hybrid_api::{
    DatabaseError, EngineKind, Tables,
    models::{STORAGE_SETTINGS_KEY, StorageSettings},
    raw::{RawEngine, RawPair, RawTx, RawTxMut},
    test_support::{self, copy_of_mdbx, datadir_files},
};
use reth_hybrid_hybrid::{
    HybridDb, HybridError, HybridOptions, INTENT_LOG_FILE, Layout,
    control::{FOLLOWER_SEQ_KEY, SEQ_KEY, get_u64, put_bytes, put_u64},
    intent_log::{Intent, IntentLog, encode},
    layout::{LAYOUT_KEY, MIGRATION_STATE_FILE},
};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions, lock::ProcessUid};
use reth_hybrid_rocksdb::{HYBRID_ROCKSDB_DIR, RocksEngine, is_initialized};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Child, Command},
};

type Db = HybridDb<MdbxEngine, RocksEngine>;

/// How the node, the tools and these tests open a datadir: read-only views for the checks, then
/// the engines for use (MDBX created with its tables, RocksDB created if absent).
fn open_datadir(d: &Path, layout: Option<Layout>) -> Result<Db, HybridError> {
    HybridDb::open_checked(
        d,
        HybridOptions {
            layout,
            ..HybridOptions::default()
        },
        || {
            let mdbx = match d.join("db/mdbx.dat").exists() {
                true => Some(MdbxEngine::open_read_only(d)?),
                false => None,
            };
            let path = d.join(HYBRID_ROCKSDB_DIR);
            let rocks = match is_initialized(&path) {
                true => Some(RocksEngine::open_read_only(&path)?),
                false => None,
            };
            Ok::<_, DatabaseError>((mdbx, rocks))
        },
        || {
            let mdbx = MdbxEngine::open(d, MdbxOptions::create().with_geometry(Geometry::SMALL))?;
            Ok((mdbx, RocksEngine::open_in_datadir(d)?))
        },
    )
}

// ---------------------------------------------------------------------------------------------
// Snapshots

#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    /// Every file but `db/mdbx.dat` and `db/mdbx.lck`, by bytes; folders as `None`.
    files: BTreeMap<PathBuf, Option<Vec<u8>>>,
    /// Every MDBX table: `None` if the datadir lacks it, else every row.
    mdbx: Vec<(Tables, Option<Vec<RawPair>>)>,
}

fn snapshot(d: &Path) -> Snapshot {
    Snapshot {
        files: datadir_files(d),
        mdbx: mdbx_rows(d),
    }
}

/// Every row of every MDBX table, read from a copy of `db/` so that a live lock or an immutable
/// datadir does not stand in the way (and the datadir itself is not opened at all).
fn mdbx_rows(d: &Path) -> Vec<(Tables, Option<Vec<RawPair>>)> {
    if !d.join("db/mdbx.dat").exists() {
        return Vec::new();
    }
    let copy = copy_of_mdbx(d);
    test_support::mdbx_rows(&MdbxEngine::open_read_only(copy.path()).expect("mdbx copy"))
}

fn differences(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for path in before.files.keys().chain(after.files.keys()) {
        match (before.files.get(path), after.files.get(path)) {
            (Some(a), Some(b)) if a == b => {}
            (None, Some(_)) => out.push(format!("{} created", path.display())),
            (Some(_), None) => out.push(format!("{} removed", path.display())),
            _ => out.push(format!("{} changed", path.display())),
        }
    }
    out.dedup();
    for ((table, a), (_, b)) in before.mdbx.iter().zip(&after.mdbx) {
        match (a, b) {
            (None, Some(_)) => out.push(format!("MDBX table {table} created")),
            (a, b) if a != b => out.push(format!("MDBX table {table} changed")),
            _ => {}
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Datadirs in each state

/// A reth v1 datadir written without reth-hybrid: a few blocks, all in MDBX.
fn reth_datadir(d: &Path, with_tx_hashes: bool) {
    let mdbx =
        MdbxEngine::open(d, MdbxOptions::create().with_geometry(Geometry::SMALL)).expect("mdbx");
    let tx = mdbx.begin_rw().expect("rw");
    for i in 0..10u64 {
        tx.put(Tables::CanonicalHeaders, &i.to_be_bytes(), &[i as u8; 32])
            .expect("put");
        if with_tx_hashes {
            tx.put(Tables::TransactionHashNumbers, &hash(i), &i.to_le_bytes())
                .expect("put");
        }
    }
    tx.commit().expect("commit");
}

/// A datadir the hybrid has used: a few commits with rows in both engines.
fn hybrid_datadir(d: &Path) {
    let db = open_datadir(d, None).expect("open");
    for i in 0..5u64 {
        let tx = db.begin_rw().expect("rw");
        tx.put(Tables::CanonicalHeaders, &i.to_be_bytes(), &[i as u8; 32])
            .expect("put");
        tx.put(Tables::TransactionHashNumbers, &hash(i), &i.to_le_bytes())
            .expect("put");
        tx.commit().expect("commit");
    }
}

fn hash(i: u64) -> [u8; 32] {
    let mut h = [0xabu8; 32];
    h[..8].copy_from_slice(&i.to_be_bytes());
    h
}

fn with_mdbx(d: &Path, f: impl FnOnce(&<MdbxEngine as RawEngine>::TxMut)) {
    let mdbx = MdbxEngine::open(d, MdbxOptions::read_write()).expect("mdbx");
    let tx = mdbx.begin_rw().expect("rw");
    f(&tx);
    tx.commit().expect("commit");
}

fn with_rocks(d: &Path, f: impl FnOnce(&<RocksEngine as RawEngine>::TxMut)) {
    let rocks = RocksEngine::open_in_datadir(d).expect("rocksdb");
    let tx = rocks.begin_rw().expect("rw");
    f(&tx);
    tx.commit().expect("commit");
}

fn mdbx_seqs(d: &Path) -> (u64, u64) {
    let mdbx = MdbxEngine::open_read_only(d).expect("mdbx");
    let tx = mdbx.begin_ro().expect("ro");
    (
        get_u64(&tx, SEQ_KEY).expect("seq"),
        get_u64(&tx, FOLLOWER_SEQ_KEY).expect("follower seq"),
    )
}

/// Keeps whatever makes a datadir refused for reasons outside it (a live holder of its lock, an
/// immutable tree) until the case is over.
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

/// Makes the whole tree read-only. Root ignores permission bits, so as root the files are made
/// immutable (`chattr +i`, which binds root too); otherwise write permission is removed.
fn set_read_only(d: &Path, on: bool) -> bool {
    // SAFETY: geteuid has no preconditions.
    let status = if unsafe { libc::geteuid() } == 0 {
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

struct Case {
    name: &'static str,
    /// Puts the datadir into the refused state; `None` when this machine cannot (said why).
    build: fn(&Path) -> Option<Held>,
    layout: fn() -> Option<Layout>,
    /// The refusal must say this.
    says: &'static str,
}

fn default_layout() -> Option<Layout> {
    None
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "reth storage v2 datadir",
            build: |d| {
                reth_datadir(d, false);
                with_mdbx(d, |tx| {
                    let v2 = StorageSettings { storage_v2: true };
                    put_bytes(tx, STORAGE_SETTINGS_KEY, v2.to_json_bytes()).expect("put");
                });
                Some(Held::Nothing)
            },
            layout: default_layout,
            says: "storage v2",
        },
        Case {
            name: "reth datadir never migrated: tx hashes in MDBX, routed to RocksDB",
            build: |d| {
                reth_datadir(d, true);
                Some(Held::Nothing)
            },
            layout: default_layout,
            says: "TransactionHashNumbers is routed to rocksdb but has rows in mdbx",
        },
        Case {
            name: "rows in RocksDB of a table routed to MDBX",
            build: |d| {
                hybrid_datadir(d);
                with_rocks(d, |tx| {
                    tx.put(Tables::HeaderNumbers, &[7; 32], &7u64.to_be_bytes())
                        .expect("put");
                });
                Some(Held::Nothing)
            },
            layout: default_layout,
            says: "HeaderNumbers is routed to mdbx but has rows in rocksdb",
        },
        Case {
            name: "a different layout requested",
            build: |d| {
                hybrid_datadir(d);
                Some(Held::Nothing)
            },
            layout: || Some(Layout::all(EngineKind::Mdbx)),
            says: "use `reth-hybrid migrate`",
        },
        Case {
            name: "corrupt layout JSON in Metadata",
            build: |d| {
                hybrid_datadir(d);
                with_mdbx(d, |tx| {
                    put_bytes(tx, LAYOUT_KEY, b"{\"version\": 1, \"tables\": ".to_vec())
                        .expect("put");
                });
                Some(Held::Nothing)
            },
            layout: default_layout,
            says: "stored layout is unreadable",
        },
        Case {
            name: "follower ahead (MDBX restored from an older copy)",
            build: |d| {
                hybrid_datadir(d);
                let (seq, _) = mdbx_seqs(d);
                with_rocks(d, |tx| put_u64(tx, SEQ_KEY, seq + 3).expect("put"));
                Some(Held::Nothing)
            },
            layout: default_layout,
            says: "RocksDB is ahead of MDBX",
        },
        Case {
            name: "follower behind with an undecided intent in the log",
            build: |d| {
                hybrid_datadir(d);
                let (seq, follower_seq) = mdbx_seqs(d);
                // RocksDB restored from an older copy: MDBX records two more commits reaching it.
                with_mdbx(d, |tx| {
                    put_u64(tx, SEQ_KEY, seq + 2).expect("put");
                    put_u64(tx, FOLLOWER_SEQ_KEY, follower_seq + 2).expect("put");
                });
                // And an intent MDBX never decided: recovery would discard it.
                IntentLog::new(d.join(INTENT_LOG_FILE))
                    .write(&Intent {
                        seq: seq + 3,
                        prev_follower_seq: follower_seq + 2,
                        payload: vec![1, 2, 3],
                    })
                    .expect("intent");
                Some(Held::Nothing)
            },
            layout: default_layout,
            says: "RocksDB is behind MDBX",
        },
        Case {
            name: "corrupt intent log",
            build: |d| {
                hybrid_datadir(d);
                let (seq, follower_seq) = mdbx_seqs(d);
                let mut bytes = encode(&Intent {
                    seq,
                    prev_follower_seq: follower_seq.saturating_sub(1),
                    payload: vec![9; 64],
                })
                .expect("frames");
                bytes[30] ^= 0xff;
                std::fs::write(d.join(INTENT_LOG_FILE), bytes).expect("write");
                Some(Held::Nothing)
            },
            layout: default_layout,
            says: INTENT_LOG_FILE,
        },
        Case {
            name: "garbage migration state file",
            build: |d| {
                reth_datadir(d, false);
                std::fs::write(d.join(MIGRATION_STATE_FILE), b"\x00garbage{").expect("write");
                Some(Held::Nothing)
            },
            layout: default_layout,
            says: MIGRATION_STATE_FILE,
        },
        Case {
            name: "datadir locked by a running node",
            build: |d| {
                reth_datadir(d, false);
                let node = Command::new("sleep").arg("600").spawn().expect("spawn");
                let uid = ProcessUid::of(node.id()).expect("child visible in /proc");
                std::fs::write(
                    d.join("db/lock"),
                    format!("{}\n{}", uid.pid, uid.start_time),
                )
                .expect("lock");
                Some(Held::Node(node))
            },
            layout: default_layout,
            says: "locked by running process",
        },
        Case {
            name: "read-only datadir",
            build: |d| {
                hybrid_datadir(d);
                if set_read_only(d, true) {
                    Some(Held::Immutable(d.to_path_buf()))
                } else {
                    set_read_only(d, false);
                    reth_hybrid_api::test_support::report_skip(
                        "every_open_refusal_changes_nothing, case read-only datadir",
                        &format!(
                            "cannot make {} read-only here (as root this needs `chattr` on a \
                             filesystem with the immutable attribute)",
                            d.display()
                        ),
                    );
                    None
                }
            },
            layout: default_layout,
            says: "is not writable",
        },
    ]
}

/// The refusals of opening a datadir, one case per reason: each names its problem and leaves
/// the datadir as it was (no `hybrid-rocksdb/`, no intent log, no MDBX table, row or layout
/// written, no intent discarded).
#[test]
fn every_open_refusal_changes_nothing() {
    let mut failures = Vec::new();
    for case in cases() {
        let dir = tempfile::tempdir().expect("tmp");
        let d = dir.path().join("datadir");
        std::fs::create_dir(&d).expect("mkdir");
        let Some(held) = (case.build)(&d) else {
            continue;
        };
        let before = snapshot(&d);
        let result = open_datadir(&d, (case.layout)());
        let after = snapshot(&d);
        drop(held);
        match result {
            Ok(_) => failures.push(format!("{}: opened, expected a refusal", case.name)),
            Err(e) if !e.to_string().contains(case.says) => failures.push(format!(
                "{}: the refusal does not say {:?}: {e}",
                case.name, case.says
            )),
            Err(_) => {}
        }
        let changed = differences(&before, &after);
        if !changed.is_empty() {
            failures.push(format!("{}: {}", case.name, changed.join(", ")));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// A datadir written by real reth v2.2 lacks two tables reth added later; a refused open must
/// not create them (a read-write MDBX open would).
#[test]
fn a_refused_reth_datadir_gets_no_new_tables() {
    let Some(fixture) = reth_hybrid_api::test_support::fixture_datadir(
        "a_refused_reth_datadir_gets_no_new_tables",
        Path::new(env!("CARGO_MANIFEST_DIR")),
        "reth-v2.2-hoodi-genesis-v1",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("datadir");
    std::fs::create_dir_all(d.join("db")).expect("mkdir");
    for name in ["mdbx.dat", "database.version"] {
        std::fs::copy(fixture.join("db").join(name), d.join("db").join(name)).expect("copy");
    }
    std::fs::write(d.join(MIGRATION_STATE_FILE), b"garbage").expect("write");
    let before = snapshot(&d);
    assert!(
        before.mdbx.iter().any(|(_, rows)| rows.is_none()),
        "the fixture lacks tables"
    );
    let err = open_datadir(&d, None).expect_err("refused");
    assert!(err.to_string().contains(MIGRATION_STATE_FILE), "{err}");
    assert_eq!(differences(&before, &snapshot(&d)), Vec::<String>::new());
}

/// `HybridDb::open` over engines already open read-write checks before recovery writes: an
/// undecided intent is not discarded when the follower is behind, and a layout refusal does not
/// create the intent log.
#[test]
fn open_over_open_engines_refuses_before_writing() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    hybrid_datadir(d);
    let (seq, follower_seq) = mdbx_seqs(d);
    with_mdbx(d, |tx| {
        put_u64(tx, FOLLOWER_SEQ_KEY, follower_seq + 2).expect("put");
    });
    let intent = Intent {
        seq: seq + 3,
        prev_follower_seq: follower_seq + 2,
        payload: vec![1, 2, 3],
    };
    IntentLog::new(d.join(INTENT_LOG_FILE))
        .write(&intent)
        .expect("intent");
    let before = std::fs::read(d.join(INTENT_LOG_FILE)).expect("read");
    let engines = (
        MdbxEngine::open(d, MdbxOptions::read_write()).expect("mdbx"),
        RocksEngine::open_in_datadir(d).expect("rocksdb"),
    );
    let err =
        HybridDb::open(engines.0, engines.1, d, HybridOptions::default()).expect_err("behind");
    assert!(matches!(err, HybridError::FollowerBehind { .. }), "{err}");
    assert_eq!(
        std::fs::read(d.join(INTENT_LOG_FILE)).expect("read"),
        before
    );

    let fresh = tempfile::tempdir().expect("tmp");
    reth_datadir(fresh.path(), true);
    let engines = (
        MdbxEngine::open(fresh.path(), MdbxOptions::read_write()).expect("mdbx"),
        RocksEngine::open_in_datadir(fresh.path()).expect("rocksdb"),
    );
    let err = HybridDb::open(engines.0, engines.1, fresh.path(), HybridOptions::default())
        .expect_err("rows in the other engine");
    assert!(
        matches!(err, HybridError::RowsInOtherEngine { .. }),
        "{err}"
    );
    assert!(!fresh.path().join(INTENT_LOG_FILE).exists());
}

/// The checks refuse nothing that opens: a new datadir, a reth datadir without the routed
/// tables' rows, a hybrid datadir, with the layout stored or requested.
#[test]
fn the_checked_open_opens_what_it_should() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    drop(open_datadir(d, None).expect("new datadir"));
    drop(open_datadir(d, Some(Layout::default())).expect("same layout requested"));
    let reth = tempfile::tempdir().expect("tmp");
    reth_datadir(reth.path(), false);
    hybrid_datadir(reth.path());
    let db = open_datadir(reth.path(), None).expect("reopened");
    assert_eq!(db.last_seq(), 5);
}
