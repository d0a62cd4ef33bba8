//! reth's own database metrics (`reth_database_*`) on the hybrid node database: the same reth
//! calls must produce the same series, with the same counts, as on stock reth's MDBX
//! `DatabaseEnv` with metrics on. Its own test binary: a metrics recorder is process-global.

use alloy_primitives::{B256, Bytes};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use reth_db::mdbx::DatabaseArguments;
use reth_db_api::{
    BlockNumberList,
    cursor::{DbCursorRO, DbCursorRW},
    database::Database,
    models::{ClientVersion, ShardedKey},
    tables::{AccountsHistory, Bytecodes, CanonicalHeaders, TransactionHashNumbers},
    transaction::{DbTx, DbTxMut},
};
use reth_hybrid_adapter::open_hybrid;
use std::collections::BTreeMap;

/// Series name and labels -> counter value or number of histogram samples; zeros left out.
type Series = BTreeMap<String, u64>;

fn database_series(snapshotter: &Snapshotter) -> Series {
    let mut out = Series::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        if !key.name().starts_with("database.") {
            continue;
        }
        let mut labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        labels.sort();
        let n = match value {
            DebugValue::Counter(n) => n,
            DebugValue::Histogram(samples) => samples.len() as u64,
            DebugValue::Gauge(_) => continue,
        };
        if n > 0 {
            out.insert(format!("{}{{{}}}", key.name(), labels.join(",")), n);
        }
    }
    out
}

/// reth's calls of a small block persistence and a few readers, on any reth database.
fn workload<DB: Database>(db: &DB) {
    let tx = db.tx_mut().expect("rw");
    tx.put::<CanonicalHeaders>(1, B256::repeat_byte(1))
        .expect("put");
    tx.put::<TransactionHashNumbers>(B256::repeat_byte(1), 1)
        .expect("put");
    tx.append::<CanonicalHeaders>(2, B256::repeat_byte(2))
        .expect("append");
    // Over 4 KiB: timed as a large value.
    tx.put::<Bytecodes>(
        B256::repeat_byte(3),
        reth_primitives_traits::Bytecode::new_raw(Bytes::from(vec![0x5b; 5000])),
    )
    .expect("put");
    let mut history = tx.cursor_write::<AccountsHistory>().expect("cursor");
    let key = ShardedKey::new(alloy_primitives::Address::repeat_byte(4), u64::MAX);
    history
        .upsert(key.clone(), &BlockNumberList::new_pre_sorted([1, 2]))
        .expect("upsert");
    history.seek_exact(key).expect("seek").expect("row");
    history.delete_current().expect("delete current");
    drop(history);
    tx.delete::<CanonicalHeaders>(2, None).expect("delete");
    tx.commit().expect("commit");

    let reader = db.tx().expect("ro");
    reader.get::<CanonicalHeaders>(1).expect("get");
    reader
        .get::<TransactionHashNumbers>(B256::repeat_byte(1))
        .expect("get");
    reader.commit().expect("ro commit");
    let dropped = db.tx().expect("ro");
    dropped.get::<CanonicalHeaders>(9).expect("get");
    drop(dropped);
    let aborted = db.tx_mut().expect("rw");
    aborted
        .put::<CanonicalHeaders>(3, B256::repeat_byte(3))
        .expect("put");
    aborted.abort();
}

#[test]
fn the_hybrid_reports_reth_s_database_metrics_as_stock_reth_does() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().expect("install recorder");
    let args = || DatabaseArguments::new(ClientVersion::default());

    let stock_dir = tempfile::tempdir().expect("tmp");
    let stock = reth_db::init_db(stock_dir.path(), args())
        .expect("stock MDBX")
        .with_metrics();
    database_series(&snapshotter);
    workload(&stock);
    let expected = database_series(&snapshotter);

    let hybrid_dir = tempfile::tempdir().expect("tmp");
    let hybrid = open_hybrid(hybrid_dir.path(), args())
        .expect("hybrid")
        .with_reth_database_metrics();
    database_series(&snapshotter);
    workload(&hybrid);
    let got = database_series(&snapshotter);

    for series in [
        "database.operation.calls_total{operation=get,table=TransactionHashNumbers}",
        "database.operation.calls_total{operation=cursor-upsert,table=AccountsHistory}",
        "database.operation.large_value_duration_seconds{operation=put-upsert,table=Bytecodes}",
        "database.transaction.open_duration_seconds{mode=read-only,outcome=drop}",
        "database.transaction.close_duration_seconds{mode=read-write,outcome=abort}",
        "database.transaction.commit_whole_duration_seconds{mode=read-write,outcome=commit}",
    ] {
        assert!(
            expected.contains_key(series),
            "stock reth records {series}: {expected:#?}"
        );
    }
    assert_eq!(
        got, expected,
        "the hybrid records reth's database metrics exactly as stock reth's MDBX"
    );

    // Without them (`--db.disable-metrics`) nothing is recorded.
    let quiet_dir = tempfile::tempdir().expect("tmp");
    let quiet = open_hybrid(quiet_dir.path(), args()).expect("hybrid");
    database_series(&snapshotter);
    workload(&quiet);
    assert_eq!(database_series(&snapshotter), Series::new());
}
