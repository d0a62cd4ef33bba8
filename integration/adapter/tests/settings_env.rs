//! The node's settings from the environment, as `open_hybrid` (the node's database open) reads
//! them: a mistyped value is refused before anything is created or changed, with the variable
//! and what it takes named; valid ones reach the engine the node runs on.
//!
//! One test in its own binary: it sets process-wide environment variables, which other tests
//! opening datadirs in parallel would otherwise read.

use reth_db::mdbx::DatabaseArguments;
use reth_db_api::{
    database::Database,
    models::ClientVersion,
    tables,
    transaction::{DbTx, DbTxMut},
};
use reth_hybrid_adapter::{RethMdbx, open_hybrid};
use reth_hybrid_api::test_support::{copy_of_mdbx, datadir_files, mdbx_rows};
use reth_hybrid_hybrid::{FOLLOWER_SYNC_ENV, FollowerSync};
use reth_hybrid_rocksdb::HISTORY_L0_TRIGGER_ENV;
use std::{path::Path, sync::Arc};

fn args() -> DatabaseArguments {
    DatabaseArguments::new(ClientVersion::default())
}

fn set(name: &str, value: Option<&str>) {
    // SAFETY: the only test in this binary, and no thread of ours reads the environment. The
    // opens that succeed leave RocksDB's background threads running, which do not read it.
    unsafe {
        match value {
            Some(v) => std::env::set_var(name, v),
            None => std::env::remove_var(name),
        }
    }
}

/// Every file of `d` (MDBX's by its rows, read from a copy) and folder.
fn snapshot(d: &Path) -> impl PartialEq + std::fmt::Debug {
    let rows = d.join("db/mdbx.dat").exists().then(|| {
        let copy = copy_of_mdbx(d);
        let env = reth_db::open_db_read_only(copy.path().join("db"), args()).expect("copy");
        mdbx_rows(&RethMdbx::new(Arc::new(env)).expect("mdbx"))
    });
    (datadir_files(d), rows)
}

/// Opens `d` as the node does and requires a refusal naming every part of `says`, with `d` as it
/// was (nothing created, no row written).
fn refused_unchanged(d: &Path, says: &[&str]) {
    let before = snapshot(d);
    let err = match open_hybrid(d, args()) {
        Ok(_) => panic!("opened, expected a refusal saying {says:?}"),
        Err(e) => format!("{e:#}"),
    };
    for part in says {
        assert!(err.contains(part), "{err:?} does not say {part:?}");
    }
    assert!(
        snapshot(d) == before,
        "a refused open changed {}",
        d.display()
    );
}

#[test]
fn mistyped_settings_are_refused_before_anything_changes_and_valid_ones_reach_the_engine() {
    // Whatever the shell that ran the tests set.
    set(HISTORY_L0_TRIGGER_ENV, None);
    set(FOLLOWER_SYNC_ENV, None);
    let fresh = tempfile::tempdir().expect("tmp");
    let existing = tempfile::tempdir().expect("tmp");
    // A reth v1 datadir written by reth alone, with a row.
    let env = reth_db::init_db(existing.path().join("db"), args()).expect("init");
    let tx = env.tx_mut().expect("rw");
    tx.put::<tables::HeaderNumbers>(Default::default(), 7)
        .expect("put");
    tx.commit().expect("commit");
    drop(env);

    for (name, value, says) in [
        (HISTORY_L0_TRIGGER_ENV, "0", &["whole number >= 1"][..]),
        (HISTORY_L0_TRIGGER_ENV, "four", &["whole number >= 1"][..]),
        (
            FOLLOWER_SYNC_ENV,
            "sometimes",
            &["every-commit", "deferred"][..],
        ),
    ] {
        set(name, Some(value));
        let quoted = format!("{value:?}");
        for d in [fresh.path(), existing.path()] {
            refused_unchanged(d, &[&[name, quoted.as_str()][..], says].concat());
        }
        assert!(
            !fresh.path().join("db").exists(),
            "a refused open created the datadir's MDBX"
        );
        set(name, None);
    }

    // Valid values are the ones the node's engine gets.
    set(HISTORY_L0_TRIGGER_ENV, Some("4"));
    set(FOLLOWER_SYNC_ENV, Some("every-commit"));
    let db = open_hybrid(existing.path(), args()).expect("valid settings open");
    assert_eq!(
        db.engine().follower().history_level0_compaction_trigger(),
        4
    );
    assert_eq!(db.engine().follower_sync(), FollowerSync::EveryCommit);
    drop(db);
    set(HISTORY_L0_TRIGGER_ENV, None);
    set(FOLLOWER_SYNC_ENV, None);
    let db = open_hybrid(existing.path(), args()).expect("the defaults open");
    assert_eq!(db.engine().follower_sync(), FollowerSync::default());
    assert_eq!(
        db.engine().follower().history_level0_compaction_trigger(),
        1,
        "the shipped default"
    );
}
