//! Every refusal names the problem and leaves every file of the datadir as it was.

mod common;

use common::{files, generated};
use reth_hybrid_api::{
    EngineKind, Tables,
    raw::{RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_hybrid::{HybridDb, HybridError, HybridOptions};
use reth_hybrid_mdbx::{MdbxEngine, MdbxOptions, lock::ProcessUid};
use reth_hybrid_migrate::{
    MigrateError, MigrateRequest, NoProgress, datadir::Datadir, layout_set::set_table_engine,
    migrate, plan, state::MigrationState,
};
use reth_hybrid_rocksdb::RocksEngine;
use std::path::Path;

/// Runs `f` (expected to be refused) and checks the datadir's files did not change.
fn refused(d: &Path, f: impl FnOnce() -> Result<(), MigrateError>) -> MigrateError {
    let before = files(d);
    let err = f().expect_err("must be refused");
    let after = files(d);
    assert!(
        before == after,
        "refusal changed files: {:?}",
        after
            .iter()
            .filter(|(p, b)| before.get(*p) != Some(*b))
            .map(|(p, _)| p)
            .collect::<Vec<_>>()
    );
    err
}

fn to_rocks() -> MigrateRequest {
    MigrateRequest::new(EngineKind::RocksDb)
}

fn run(d: &Path, r: &MigrateRequest) -> Result<(), MigrateError> {
    migrate(d, r, &NoProgress).map(|_| ())
}

#[test]
fn refuses_a_datadir_held_by_a_live_process() {
    let dir = generated(1, 1);
    let d = dir.path();
    // A running "node": another live process whose pid and start time are in db/lock.
    let mut node = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("spawn");
    let uid = ProcessUid::of(node.id()).expect("child visible in /proc");
    std::fs::write(
        d.join("db/lock"),
        format!("{}\n{}", uid.pid, uid.start_time),
    )
    .expect("lock");
    let err = refused(d, || run(d, &to_rocks()));
    assert!(
        err.to_string().contains("locked by running process"),
        "{err}"
    );
    let err = refused(d, || plan(d, &to_rocks()).map(|_| ()));
    assert!(err.to_string().contains(&uid.pid.to_string()), "{err}");
    node.kill().expect("kill");
    node.wait().expect("reap");
    run(d, &to_rocks()).expect("migrates once the node is gone (its lock is stale)");
}

#[test]
fn refuses_an_unsupported_database_version() {
    let dir = generated(1, 1);
    let d = dir.path();
    std::fs::write(d.join("db/database.version"), "1").expect("write");
    let err = refused(d, || run(d, &to_rocks()));
    assert!(err.to_string().contains("database version 1"), "{err}");
}

#[test]
fn refuses_a_missing_datadir() {
    let dir = tempfile::tempdir().expect("tmp");
    let err = refused(dir.path(), || run(dir.path(), &to_rocks()));
    assert!(err.to_string().contains("pass the reth datadir"), "{err}");
}

#[test]
fn refuses_a_table_already_in_the_target() {
    let dir = generated(1, 1);
    let d = dir.path();
    let one = to_rocks().with_tables(vec![Tables::TransactionHashNumbers]);
    run(d, &one).expect("first");
    let err = refused(d, || run(d, &one));
    assert!(
        matches!(
            err,
            MigrateError::AlreadyInTarget {
                table: Tables::TransactionHashNumbers,
                ..
            }
        ),
        "{err}"
    );
    let back = MigrateRequest::new(EngineKind::Mdbx).with_tables(vec![Tables::AccountsHistory]);
    let err = refused(d, || run(d, &back));
    assert!(matches!(err, MigrateError::AlreadyInTarget { .. }), "{err}");
}

#[test]
fn refuses_metadata() {
    let dir = generated(1, 1);
    let d = dir.path();
    let err = refused(d, || {
        run(d, &to_rocks().with_tables(vec![Tables::Metadata]))
    });
    assert!(matches!(err, MigrateError::MetadataStaysInMdbx), "{err}");
    let err = refused(d, || {
        set_table_engine(d, Tables::Metadata, EngineKind::RocksDb).map(|_| ())
    });
    assert!(matches!(err, MigrateError::MetadataStaysInMdbx), "{err}");
}

#[test]
fn refuses_rows_already_in_the_target_engine() {
    let dir = generated(1, 1);
    let d = dir.path();
    {
        let rocks = RocksEngine::open_in_datadir(d).expect("rocksdb");
        let tx = rocks.begin_rw().expect("rw");
        tx.put(Tables::TransactionHashNumbers, &[7; 32], &[1])
            .expect("put");
        tx.commit().expect("commit");
    }
    let err = refused(d, || run(d, &to_rocks()));
    assert!(
        matches!(
            err,
            MigrateError::RowsInTarget {
                table: Tables::TransactionHashNumbers,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn refuses_a_datadir_with_rows_in_reths_own_rocksdb() {
    let dir = generated(1, 1);
    let d = dir.path();
    {
        // An upstream storage-v2 datadir: reth's <datadir>/rocksdb holds the history.
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&opts, d.join("rocksdb"), ["TransactionHashNumbers"])
            .expect("upstream rocksdb");
        let cf = db.cf_handle("TransactionHashNumbers").expect("cf");
        db.put_cf(cf, [9u8; 32], [1u8]).expect("put");
    }
    let err = refused(d, || run(d, &to_rocks()));
    let msg = err.to_string();
    assert!(
        msg.contains("TransactionHashNumbers") && msg.contains("storage v2"),
        "{msg}"
    );
    let report = reth_hybrid_migrate::verify::verify(d, &NoProgress).expect("verify runs");
    assert!(!report.passed());
}

#[test]
fn refuses_when_the_disk_is_too_small() {
    let dir = generated(2, 1);
    let d = dir.path();
    let mut req = to_rocks();
    req.assume_free_bytes = Some(1 << 20);
    let err = refused(d, || run(d, &req));
    assert!(matches!(err, MigrateError::DiskSpace { .. }), "{err}");
    assert!(err.to_string().contains("not enough free disk space"));
}

#[test]
fn refuses_a_different_migration_while_one_is_in_progress_and_the_hybrid_refuses_to_open() {
    let dir = generated(1, 1);
    let d = dir.path();
    let dd = Datadir::new(d);
    MigrationState::new(
        EngineKind::RocksDb,
        &[Tables::TransactionHashNumbers],
        false,
        "reth-hybrid migrate --tables TransactionHashNumbers".into(),
    )
    .write(&dd)
    .expect("state");
    let err = refused(d, || {
        run(d, &to_rocks().with_tables(vec![Tables::AccountsHistory]))
    });
    assert!(
        err.to_string().contains("--tables TransactionHashNumbers"),
        "{err}"
    );
    let err = refused(d, || {
        set_table_engine(d, Tables::BlockOmmers, EngineKind::RocksDb).map(|_| ())
    });
    assert!(
        matches!(err, MigrateError::OtherMigrationInProgress { .. }),
        "{err}"
    );
    let mdbx = MdbxEngine::open(d, MdbxOptions::read_write()).expect("mdbx");
    let rocks = RocksEngine::open_in_datadir(d).expect("rocksdb");
    let opened = HybridDb::open(mdbx, rocks, d, HybridOptions::default());
    assert!(matches!(
        opened,
        Err(HybridError::MigrationInProgress { .. })
    ));
    // The recorded migration itself resumes and finishes.
    run(
        d,
        &to_rocks().with_tables(vec![Tables::TransactionHashNumbers]),
    )
    .expect("resumes");
    assert!(!dd.state_file().exists());
}

#[test]
fn dry_run_plan_reports_rows_and_bytes_and_changes_nothing() {
    let dir = generated(2, 1);
    let d = dir.path();
    let before = files(d);
    let p = plan(d, &to_rocks()).expect("plan");
    assert!(before == files(d));
    assert_eq!(p.tables.len(), 3);
    let tx = p
        .tables
        .iter()
        .find(|t| t.table == Tables::TransactionHashNumbers)
        .expect("planned");
    assert_eq!((tx.rows, tx.rows_exact), (1600, true));
    assert!(tx.bytes > 0 && p.bytes_to_write >= tx.bytes);
    assert!(p.estimated_seconds > 0.0);
    assert!(p.command.contains("--to rocksdb"));
}

#[test]
fn layout_set_moves_only_empty_tables() {
    let dir = generated(1, 1);
    let d = dir.path();
    let err = refused(d, || {
        set_table_engine(d, Tables::PlainAccountState, EngineKind::RocksDb).map(|_| ())
    });
    assert!(
        err.to_string()
            .contains("reth-hybrid migrate --tables PlainAccountState --to rocksdb"),
        "{err}"
    );
    let layout =
        set_table_engine(d, Tables::BlockOmmers, EngineKind::RocksDb).expect("empty table");
    assert_eq!(layout.engine_of(Tables::BlockOmmers), EngineKind::RocksDb);
    assert_eq!(
        layout.engine_of(Tables::PlainAccountState),
        EngineKind::Mdbx
    );
    let mdbx = MdbxEngine::open_read_only(d).expect("ro");
    let recorded = reth_hybrid_migrate::datadir::recorded_layout(&mdbx.begin_ro().expect("ro"))
        .expect("read")
        .expect("recorded");
    assert_eq!(recorded, layout);
}

#[test]
fn verify_finds_rows_in_the_wrong_engine_and_rows_that_do_not_decode() {
    let dir = generated(1, 1);
    let d = dir.path();
    run(d, &to_rocks()).expect("migrate");
    assert!(
        reth_hybrid_migrate::verify::verify(d, &NoProgress)
            .expect("runs")
            .passed()
    );
    {
        // A stray history row left in MDBX, and a header number that is not 8 bytes.
        let mdbx = MdbxEngine::open(d, MdbxOptions::read_write()).expect("mdbx");
        let tx = mdbx.begin_rw().expect("rw");
        tx.put(Tables::TransactionHashNumbers, &[1; 32], &[5])
            .expect("put");
        tx.put(Tables::CanonicalHeaders, &[1, 2, 3], &[0; 32])
            .expect("put");
        tx.commit().expect("commit");
    }
    let report = reth_hybrid_migrate::verify::verify(d, &NoProgress).expect("runs");
    assert!(!report.passed());
    let failed: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| c.outcome == reth_hybrid_migrate::verify::Outcome::Fail)
        .map(|c| c.name)
        .collect();
    assert_eq!(failed, ["placement", "rows"], "{:#?}", report.checks);
    let bad = report
        .tables
        .iter()
        .find(|t| t.table == Tables::CanonicalHeaders)
        .expect("listed");
    assert_eq!(bad.undecodable, 1);
}
