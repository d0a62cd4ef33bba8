//! Metrics: operations by table, engine and kind; commit phases; RocksDB internals as gauges.
//! Its own test binary, since a metrics recorder is process-global.

mod common;

use common::{open, write_commit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_hybrid::{
    DEFAULT_MAX_DEFERRED_BYTES, FollowerSync,
    metrics::{COMMIT_PHASE_SECONDS, COMMIT_ROCKSDB_BYTES, COMMITS_TOTAL, OPERATIONS_TOTAL},
};
use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

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
    db.report_engine_stats();

    let mut counters: HashMap<String, u64> = HashMap::new();
    let mut histograms = Vec::new();
    let mut gauges = Vec::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let k = key.key();
        let id = metric_id(k);
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
        counters.get(&format!("{COMMITS_TOTAL}{{rocksdb=logged}}")),
        Some(&3),
        "every commit of an every-commit handle takes the intent log"
    );
    assert!(
        histograms
            .iter()
            .any(|(h, n)| *h == format!("{COMMIT_ROCKSDB_BYTES}{{route=logged}}") && *n == 3),
        "each commit's RocksDB payload is measured: {histograms:?}"
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
        "reth_hybrid_rocksdb_sst_bytes",
        "reth_hybrid_rocksdb_memtable_bytes",
        "reth_hybrid_rocksdb_pending_compaction_bytes",
        "reth_hybrid_rocksdb_level0_files",
        "reth_hybrid_rocksdb_write_stall_seconds",
        "reth_hybrid_rocksdb_wal_bytes",
        "reth_hybrid_rocksdb_running_compactions",
        "reth_hybrid_rocksdb_block_cache_usage_bytes",
    ] {
        assert!(
            gauges
                .iter()
                .any(|g| g.starts_with(&format!("{name}{{")) && g.contains("engine=rocksdb")),
            "gauge {name}: {gauges:?}"
        );
    }
    // The get above went to RocksDB: its tickers count it, published as running totals.
    let memtable = counters
        .iter()
        .filter(|(id, _)| {
            id.starts_with("reth_hybrid_rocksdb_memtable_hit_total{")
                || id.starts_with("reth_hybrid_rocksdb_memtable_miss_total{")
        })
        .map(|(_, n)| *n)
        .sum::<u64>();
    assert!(memtable >= 1, "RocksDB's memtable tickers: {counters:#?}");

    // The publisher thread reports on its own, and ends once the database closes.
    let seeks_now = || {
        counter_value(
            &snapshotter,
            "reth_hybrid_rocksdb_iterator_seeks_total{engine=rocksdb}",
        )
    };
    let before = seeks_now();
    let publisher = db
        .spawn_stats_publisher(Duration::from_millis(10))
        .expect("publisher");
    let tx = db.begin_ro().expect("ro");
    let mut c = tx.cursor(Tables::AccountsHistory).expect("cursor");
    c.seek(&[0u8; 28]).expect("seek");
    drop((c, tx));
    let deadline = Instant::now() + Duration::from_secs(30);
    while seeks_now() <= before {
        assert!(
            Instant::now() < deadline,
            "the publisher reports RocksDB's new iterator seek within 30 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(publisher.is_running());
    drop(db);
    while publisher.is_running() {
        assert!(
            Instant::now() < deadline,
            "the publisher stops once its database has closed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // It held no reference: the datadir opens again in this process.
    drop(open(dir.path(), None).expect("reopen after close"));

    // The default sync: a small commit is deferred, one over the bound takes the intent log,
    // and the payload sizes say which side of the bound each was on. (A snapshot drains what it
    // reads: the one below sees these two commits only.)
    drop(snapshotter.snapshot());
    let dir = tempfile::tempdir().expect("tmp");
    let db = common::open_with(dir.path(), None, FollowerSync::default()).expect("open");
    let tx = db.begin_rw().expect("rw");
    write_commit(&tx, 1);
    tx.commit().expect("small commit");
    let tx = db.begin_rw().expect("rw");
    for i in 0..4_000u64 {
        tx.put(
            Tables::TransactionHashNumbers,
            &common::hash(1_000_000 + i),
            &i.to_be_bytes(),
        )
        .expect("put");
    }
    tx.commit().expect("large commit");
    let mut counters: HashMap<String, u64> = HashMap::new();
    let mut payloads: HashMap<String, Vec<f64>> = HashMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let k = key.key();
        let id = metric_id(k);
        match value {
            DebugValue::Counter(n) => {
                counters.insert(id, n);
            }
            DebugValue::Histogram(v) if k.name() == COMMIT_ROCKSDB_BYTES => {
                payloads.insert(id, v.into_iter().map(|x| x.into_inner()).collect());
            }
            _ => {}
        }
    }
    for route in ["deferred", "logged"] {
        assert_eq!(
            counters.get(&format!("{COMMITS_TOTAL}{{rocksdb={route}}}")),
            Some(&1),
            "one {route} commit: {counters:#?}"
        );
    }
    let bound = DEFAULT_MAX_DEFERRED_BYTES as f64;
    let deferred = &payloads[&format!("{COMMIT_ROCKSDB_BYTES}{{route=deferred}}")];
    assert!(
        deferred.len() == 1 && deferred[0] > 0.0 && deferred[0] <= bound,
        "one deferred payload within the bound: {deferred:?}"
    );
    let logged = &payloads[&format!("{COMMIT_ROCKSDB_BYTES}{{route=logged}}")];
    assert!(
        logged.len() == 1 && logged[0] > bound,
        "one logged payload, over the bound: {logged:?}"
    );
}

/// A counter's value in the recorder (0 when not recorded yet), by `name{label=value,...}`.
fn counter_value(snapshotter: &Snapshotter, id: &str) -> u64 {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .find_map(|(key, _, _, value)| match value {
            DebugValue::Counter(n) if metric_id(key.key()) == id => Some(n),
            _ => None,
        })
        .unwrap_or(0)
}

/// A metric as `name{label=value,...}`, labels in recording order.
fn metric_id(key: &metrics::Key) -> String {
    let labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}
