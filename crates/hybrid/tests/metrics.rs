//! Metrics: operations by table, engine and kind; commit phases; RocksDB internals as gauges.
//! Its own test binary, since a metrics recorder is process-global.

mod common;

use common::{open, write_commit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawEngine, RawTx},
};
use reth_hybrid_hybrid::metrics::{COMMIT_PHASE_SECONDS, COMMITS_TOTAL, OPERATIONS_TOTAL};
use std::collections::HashMap;

#[test]
fn operations_commit_phases_and_engine_gauges_are_recorded() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().expect("install recorder");
    reth_hybrid_hybrid::metrics::enable();

    let dir = tempfile::tempdir().expect("tmp");
    let db = open(dir.path(), None).expect("open");
    for i in 1..=3 {
        let tx = db.begin_rw().expect("rw");
        write_commit(&tx, i);
        tx.commit().expect("commit");
    }
    let tx = db.begin_ro().expect("ro");
    tx.get(Tables::TransactionHashNumbers, &common::hash(1))
        .expect("get");
    let mut c = tx.cursor(Tables::CanonicalHeaders).expect("cursor");
    c.seek(&1u64.to_be_bytes()).expect("seek");
    c.next().expect("next");
    drop((c, tx));
    db.report_gauges();

    let mut counters: HashMap<String, u64> = HashMap::new();
    let mut histograms = Vec::new();
    let mut gauges = Vec::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let k = key.key();
        let labels: Vec<String> = k
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let id = format!("{}{{{}}}", k.name(), labels.join(","));
        match value {
            DebugValue::Counter(n) => {
                counters.insert(id, n);
            }
            DebugValue::Histogram(v) => histograms.push((id, v.len())),
            DebugValue::Gauge(_) => gauges.push(id),
        }
    }
    let put_rocks =
        format!("{OPERATIONS_TOTAL}{{table=TransactionHashNumbers,engine=rocksdb,op=put}}");
    assert_eq!(counters.get(&put_rocks), Some(&3), "{counters:#?}");
    let put_mdbx = format!("{OPERATIONS_TOTAL}{{table=CanonicalHeaders,engine=mdbx,op=put}}");
    assert_eq!(counters.get(&put_mdbx), Some(&3));
    assert_eq!(
        counters.get(&format!(
            "{OPERATIONS_TOTAL}{{table=CanonicalHeaders,engine=mdbx,op=seek}}"
        )),
        Some(&1)
    );
    assert_eq!(
        counters.get(&format!(
            "{OPERATIONS_TOTAL}{{table=CanonicalHeaders,engine=mdbx,op=step}}"
        )),
        Some(&1)
    );
    assert_eq!(
        counters.get(&format!("{COMMITS_TOTAL}{{rocksdb=written}}")),
        Some(&3)
    );
    for phase in [
        "intent_fsync",
        "mdbx_commit",
        "rocksdb_apply",
        "intent_clear",
    ] {
        let id = format!("{COMMIT_PHASE_SECONDS}{{phase={phase}}}");
        assert!(
            histograms.iter().any(|(h, n)| *h == id && *n == 3),
            "phase {phase} timed per commit: {histograms:?}"
        );
    }
    for name in [
        "rocksdb_sst_bytes",
        "rocksdb_memtable_bytes",
        "rocksdb_pending_compaction_bytes",
        "rocksdb_write_stall_seconds",
        "rocksdb_wal_bytes",
    ] {
        assert!(
            gauges
                .iter()
                .any(|g| g.starts_with(name) && g.contains("engine=rocksdb")),
            "gauge {name}: {gauges:?}"
        );
    }
}
