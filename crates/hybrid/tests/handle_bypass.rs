//! A second hybrid handle on the same engines: readers of the first share its RocksDB view, so a
//! commit made around it must make the first refuse new readers, never pair MDBX's newer commit
//! with its stale view. (The wait-free reader tests themselves are in `suites::readers`, run by
//! `pair_suite.rs` here and on reth's MDBX in the integration workspace.)

mod common;

use common::commit;
use reth_hybrid_api::raw::RawEngine;

/// Readers share this handle's RocksDB view, so a commit made through a second hybrid on the
/// same engines must be refused, never paired with the stale view.
#[test]
fn a_commit_bypassing_the_handle_is_refused_not_misread() {
    use reth_hybrid_hybrid::{HybridDb, HybridOptions};
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
    let second =
        HybridDb::open(mdbx, rocks, dir.path(), HybridOptions::default()).expect("second handle");
    commit(&second, 2).expect("commit 2 through the second handle");
    let err = first
        .begin_ro()
        .expect_err("the first handle's RocksDB view is stale");
    assert!(
        err.to_string().contains("bypassed this handle"),
        "the error names the cause: {err}"
    );
}
