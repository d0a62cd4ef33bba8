//! A migration state file that cannot be read is refused with every file left as it was, and
//! `migrate --abandon` is the way forward: from the rows alone it keeps each table where the
//! layout records it, removes the partial copy, and a new migration then ends like one that was
//! never interrupted.

mod common;

use common::{Rows, all_rows, copy_tree, counts, files, generated};
use reth_hybrid_api::{
    EngineKind, Tables,
    raw::{RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_hybrid::{HybridDb, HybridError, HybridOptions};
use reth_hybrid_mdbx::{MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{
    MigrateError, MigrateRequest, NoProgress,
    abandon::{abandon, abandon_plan},
    datadir::{Datadir, recorded_layout},
    fault::{self, FaultPoint},
    migrate, plan,
    verify::verify,
};
use reth_hybrid_rocksdb::RocksEngine;
use std::path::Path;

fn request(to: EngineKind) -> MigrateRequest {
    let mut r = MigrateRequest::new(to);
    r.sst_file_bytes = 8 << 10;
    r.batch_rows = 300;
    r
}

/// Per table: (rows in MDBX, rows in RocksDB).
fn placement(d: &Path) -> Vec<(usize, usize)> {
    Tables::ALL.into_iter().map(|t| counts(d, t)).collect()
}

/// Leaves `d` mid-migration: the migration toward `to` fails at `point`'s `nth` arrival.
fn interrupt(d: &Path, to: EngineKind, point: FaultPoint, nth: u64) {
    let _armed = fault::arm(point, nth, libc::EIO);
    let result = migrate(d, &request(to), &NoProgress);
    assert!(fault::fired(), "{point:?}:{nth} was not reached");
    result.expect_err("the fault fails the migration");
}

const GARBAGE: [&[u8]; 3] = [
    b"\x00\x17not json at all\xff",
    // torn: a state file cut in the middle (the atomic write prevents it; a disk may not)
    b"{\"version\":1,\"to\":\"rocksdb\",\"tables\":[{\"table\":\"Acc",
    b"{\"version\":99,\"to\":\"rocksdb\",\"tables\":[],\"compact\":false,\"command\":\"x\"}",
];

#[test]
fn a_garbage_state_file_is_refused_and_changes_nothing() {
    let dir = generated(2, 61);
    let d = dir.path();
    // Mid-migration: the first table's copy ingested, not switched; SST files staged.
    interrupt(d, EngineKind::RocksDb, FaultPoint::Switch, 1);
    let dd = Datadir::new(d);
    for garbage in GARBAGE {
        std::fs::write(dd.state_file(), garbage).expect("garbage");
        let before = files(d);
        for to in [EngineKind::RocksDb, EngineKind::Mdbx] {
            let err = migrate(d, &request(to), &NoProgress).expect_err("refused");
            assert!(matches!(err, MigrateError::UnreadableState { .. }), "{err}");
            let msg = err.to_string();
            assert!(
                msg.contains(&format!(
                    "reth-hybrid migrate --datadir {} --abandon",
                    d.display()
                )) && msg.contains("nothing was changed"),
                "the refusal must name the way forward: {msg}"
            );
            let err = plan(d, &request(to)).expect_err("the dry run refuses too");
            assert!(matches!(err, MigrateError::UnreadableState { .. }), "{err}");
        }
        // `--abandon --dry-run` says what it would remove and changes nothing either.
        let would = abandon_plan(d).expect("abandon plan");
        assert_eq!(would.partial_copies.len(), 1, "{would:?}");
        assert_eq!(would.partial_copies[0].removed_from, EngineKind::RocksDb);
        assert!(
            would
                .state
                .as_deref()
                .is_some_and(|s| s.contains("cannot be read"))
        );
        let report = verify(d, &NoProgress).expect("verify runs");
        assert!(!report.passed());
        assert!(
            before == files(d),
            "refusing {garbage:?} changed files: {:?}",
            files(d)
                .iter()
                .filter(|(p, b)| before.get(*p) != Some(*b))
                .map(|(p, _)| p)
                .collect::<Vec<_>>()
        );
    }
}

/// Where each scenario interrupts the migration.
struct Scenario {
    to: EngineKind,
    point: FaultPoint,
    nth: u64,
    /// What the scenario leaves, for messages.
    leaves: &'static str,
    /// Whether rows of some table are in the engine the layout does not name.
    partial_copy: bool,
}

const SCENARIOS: [Scenario; 7] = [
    Scenario {
        to: EngineKind::RocksDb,
        point: FaultPoint::SstWrite,
        nth: 1,
        leaves: "the first SST file half-written, nothing ingested",
        partial_copy: false,
    },
    Scenario {
        to: EngineKind::RocksDb,
        point: FaultPoint::SstWrite,
        nth: 3,
        leaves: "two SST files ingested, the third half-written",
        partial_copy: true,
    },
    Scenario {
        to: EngineKind::RocksDb,
        point: FaultPoint::IngestLanded,
        nth: 1,
        leaves: "one table ingested into RocksDB, still recorded in MDBX",
        partial_copy: true,
    },
    Scenario {
        to: EngineKind::RocksDb,
        point: FaultPoint::Switch,
        nth: 2,
        leaves: "one table switched, the next ingested but not switched",
        partial_copy: true,
    },
    Scenario {
        to: EngineKind::RocksDb,
        point: FaultPoint::Switch,
        nth: 3,
        leaves: "two tables switched, the third ingested but not switched",
        partial_copy: true,
    },
    Scenario {
        to: EngineKind::Mdbx,
        point: FaultPoint::RollbackBatch,
        nth: 3,
        leaves: "a partial rollback copy in MDBX with its position",
        partial_copy: true,
    },
    Scenario {
        to: EngineKind::Mdbx,
        point: FaultPoint::Switch,
        nth: 2,
        leaves: "one table rolled back, the next copied into MDBX but not switched",
        partial_copy: true,
    },
];

#[test]
fn abandon_keeps_every_table_where_the_layout_records_it_and_a_new_migration_matches() {
    let template = generated(2, 62);
    let original: Rows = all_rows(template.path());
    // Uninterrupted references, forward and back.
    let forward = tempfile::tempdir().expect("tmp");
    copy_tree(template.path(), forward.path());
    migrate(forward.path(), &request(EngineKind::RocksDb), &NoProgress).expect("forward");
    let forward_placement = placement(forward.path());
    let back = tempfile::tempdir().expect("tmp");
    copy_tree(forward.path(), back.path());
    migrate(back.path(), &request(EngineKind::Mdbx), &NoProgress).expect("back");
    let back_placement = placement(back.path());

    for s in SCENARIOS {
        let what = format!("{:?}:{} to {} ({})", s.point, s.nth, s.to, s.leaves);
        let work = tempfile::tempdir().expect("tmp");
        let d = work.path();
        let start = match s.to {
            EngineKind::RocksDb => template.path(),
            EngineKind::Mdbx => forward.path(),
        };
        copy_tree(start, d);
        interrupt(d, s.to, s.point, s.nth);
        let dd = Datadir::new(d);
        std::fs::write(dd.state_file(), GARBAGE[0]).expect("garbage");

        let done = abandon(d).unwrap_or_else(|e| panic!("{what}: abandon: {e}"));
        // Only the SST files exist before the first ingestion; later a partial copy too.
        assert_eq!(
            !done.partial_copies.is_empty(),
            s.partial_copy,
            "{what}: {done:?}"
        );
        assert_eq!(
            done.files.contains(&dd.staging()),
            s.to == EngineKind::RocksDb,
            "{what}: {done:?}"
        );
        // Every row exactly once, in the engine the layout names; nothing of the migration left.
        assert!(all_rows(d) == original, "{what}: rows differ after abandon");
        let report = verify(d, &NoProgress).expect("verify runs");
        assert!(report.passed(), "{what}: {:#?}", report.checks);
        for leftover in [
            dd.state_file(),
            dd.state_file().with_extension("tmp"),
            dd.staging(),
        ] {
            assert!(!leftover.exists(), "{what}: {} left", leftover.display());
        }
        {
            // The hybrid opens it, or (no table switched yet: a plain reth datadir again)
            // refuses it as the original, saying it needs `migrate`.
            let mdbx = MdbxEngine::open(d, MdbxOptions::read_write()).expect("mdbx");
            let recorded = recorded_layout(&mdbx.begin_ro().expect("ro")).expect("layout");
            let rocks = RocksEngine::open_in_datadir(d).expect("rocksdb");
            match HybridDb::open(mdbx, rocks, d, HybridOptions::default()) {
                Ok(_) => {}
                Err(HybridError::RowsInOtherEngine { .. }) if recorded.is_none() => {}
                Err(e) => panic!("{what}: the hybrid must open after abandon: {e}"),
            }
        }
        // Abandoning again finds nothing and changes nothing.
        let before = files(d);
        let again = abandon(d).expect("again");
        assert!(again.state.is_none() && again.partial_copies.is_empty());
        assert!(before == files(d), "{what}: a second abandon changed files");

        // A new migration, started afresh, ends like the uninterrupted one.
        migrate(d, &request(s.to), &NoProgress)
            .unwrap_or_else(|e| panic!("{what}: a new migration: {e}"));
        assert!(
            all_rows(d) == original,
            "{what}: rows differ after the new migration"
        );
        let expected = match s.to {
            EngineKind::RocksDb => &forward_placement,
            EngineKind::Mdbx => &back_placement,
        };
        assert_eq!(&placement(d), expected, "{what}");
        assert!(verify(d, &NoProgress).expect("verify").passed(), "{what}");
    }
}

#[test]
fn abandon_refuses_rows_only_in_the_engine_the_layout_does_not_name() {
    let dir = generated(1, 63);
    let d = dir.path();
    migrate(d, &request(EngineKind::RocksDb), &NoProgress).expect("migrate");
    assert_eq!(counts(d, Tables::BlockOmmers), (0, 0), "an empty table");
    {
        // BlockOmmers is recorded in MDBX, which has none of its rows; RocksDB has one.
        let rocks = RocksEngine::open_in_datadir(d).expect("rocksdb");
        let tx = rocks.begin_rw().expect("rw");
        tx.put(Tables::BlockOmmers, &7u64.to_be_bytes(), &[0xc0])
            .expect("put");
        tx.commit().expect("commit");
    }
    std::fs::write(Datadir::new(d).state_file(), GARBAGE[0]).expect("garbage");
    let before = files(d);
    let err = abandon(d).expect_err("refused");
    assert!(
        matches!(
            err,
            MigrateError::AbandonRefused {
                table: Tables::BlockOmmers,
                layout: EngineKind::Mdbx,
                other: EngineKind::RocksDb
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("nothing was changed"), "{err}");
    assert!(before == files(d), "the refusal changed files");
}

#[test]
fn abandon_without_a_migration_in_progress_changes_nothing() {
    let dir = generated(1, 64);
    let d = dir.path();
    let before = files(d);
    let plan = abandon(d).expect("nothing to abandon");
    assert!(plan.state.is_none() && plan.partial_copies.is_empty() && plan.files.is_empty());
    assert!(before == files(d));
}
