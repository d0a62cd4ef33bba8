//! A second hybrid handle on the same engines in one process would take commit sequences the
//! first also takes and move RocksDB's recorded sequence backwards: it is refused at open, with
//! nothing changed. (The wait-free reader tests are in `suites::readers`, run by `pair_suite.rs`
//! here and on reth's MDBX in the integration workspace.)

mod common;

use common::{commit, visible};
use reth_hybrid_api::raw::RawEngine;
use reth_hybrid_hybrid::{
    HybridDb, HybridError, HybridOptions,
    control::{FOLLOWER_SEQ_KEY, SEQ_KEY, get_u64},
};
use reth_hybrid_mdbx::MdbxEngine;
use reth_hybrid_rocksdb::RocksEngine;

/// MDBX's and RocksDB's recorded sequences: (commit, follower, RocksDB's commit).
fn sequences(mdbx: &MdbxEngine, rocks: &RocksEngine) -> (u64, u64, u64) {
    let (ptx, ftx) = (mdbx.begin_ro().expect("ro"), rocks.begin_ro().expect("ro"));
    (
        get_u64(&ptx, SEQ_KEY).expect("seq"),
        get_u64(&ptx, FOLLOWER_SEQ_KEY).expect("follower seq"),
        get_u64(&ftx, SEQ_KEY).expect("rocksdb seq"),
    )
}

#[test]
fn a_second_handle_on_the_same_engines_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let (mdbx, rocks) = common::engines(dir.path());
    let first = HybridDb::open(
        mdbx.clone(),
        rocks.clone(),
        dir.path(),
        HybridOptions::default(),
    )
    .expect("first handle");
    commit(&first, 1).expect("commit 1");
    let before = sequences(&mdbx, &rocks);
    let err = HybridDb::open(
        mdbx.clone(),
        rocks.clone(),
        dir.path(),
        HybridOptions::default(),
    )
    .expect_err("a second read-write handle in the same process");
    assert!(
        matches!(err, HybridError::AlreadyOpen { .. }),
        "refused as already open: {err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("already open read-write in this process") && msg.contains("Clone"),
        "the error says what is wrong and what to do: {msg}"
    );
    // The same datadir through another path spelling is the same datadir.
    let dotted = dir.path().join(".");
    assert!(matches!(
        HybridDb::open(
            mdbx.clone(),
            rocks.clone(),
            &dotted,
            HybridOptions::default()
        ),
        Err(HybridError::AlreadyOpen { .. })
    ));
    assert_eq!(
        sequences(&mdbx, &rocks),
        before,
        "the refusal wrote nothing"
    );

    // The first handle goes on; a clone shares it.
    let clone = first.clone();
    commit(&clone, 2).expect("commit 2 through a clone");
    assert_eq!(visible(&first).1, (1..=2).collect());
    drop((first, clone));

    // Once every clone is gone, the datadir opens again.
    let again = HybridDb::open(mdbx, rocks, dir.path(), HybridOptions::default())
        .expect("reopens after the first handle is dropped");
    commit(&again, 3).expect("commit 3");
    assert_eq!(visible(&again).1, (1..=3).collect());
}

/// A writable MDBX makes a handle a writer even over a read-only RocksDB: it could make
/// commits that touch only MDBX, taking sequences the open handle also takes.
#[test]
fn a_second_handle_with_a_read_only_rocksdb_is_still_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let (mdbx, rocks) = common::engines(dir.path());
    let writer = HybridDb::open(mdbx, rocks, dir.path(), HybridOptions::default()).expect("writer");
    commit(&writer, 1).expect("commit 1");
    let rocks_ro =
        RocksEngine::open_read_only(&dir.path().join("hybrid-rocksdb")).expect("rocksdb read-only");
    assert!(matches!(
        HybridDb::open(
            writer.primary().clone(),
            rocks_ro,
            dir.path(),
            HybridOptions::default()
        ),
        Err(HybridError::AlreadyOpen { .. })
    ));
    commit(&writer, 2).expect("the writer goes on");
}
