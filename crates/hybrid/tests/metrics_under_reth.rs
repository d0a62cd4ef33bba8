//! Inside a reth node, whose Prometheus recorder prefixes every name with `reth_`, our metrics
//! drop their own `reth_` (`enable_under_reth`), so the node serves `reth_hybrid_*`. Its own test
//! binary: the recorder and the switch are process-global.

mod common;

use common::{open, write_commit};
use metrics_util::debugging::DebuggingRecorder;
use reth_hybrid_api::raw::{RawEngine, RawTx};
use reth_hybrid_hybrid::metrics::{COMMITS_TOTAL, OPERATIONS_TOTAL};

#[test]
fn names_drop_their_reth_prefix_under_reth() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().expect("install recorder");
    reth_hybrid_hybrid::metrics::enable_under_reth();

    let dir = tempfile::tempdir().expect("tmp");
    let db = open(dir.path(), None).expect("open");
    let tx = db.begin_rw().expect("rw");
    write_commit(&tx, 1);
    tx.commit().expect("commit");

    let names: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, ..)| key.key().name().to_string())
        .collect();
    for full in [OPERATIONS_TOTAL, COMMITS_TOTAL] {
        let short = full
            .strip_prefix("reth_")
            .expect("our names start with reth_");
        assert!(
            names.iter().any(|n| n == short),
            "{short} is recorded: {names:?}"
        );
        assert!(
            !names.iter().any(|n| n == full),
            "{full} would show as reth_{full} in reth's node: {names:?}"
        );
    }
}
