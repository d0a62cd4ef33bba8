//! The node database's gauges, which reth's metrics server reports (`DatabaseMetrics`): reth's
//! own MDBX gauges exactly as a stock node reports them, then RocksDB's per table.

use alloy_primitives::B256;
use reth_db::mdbx::DatabaseArguments;
use reth_db_api::{
    database::Database,
    database_metrics::DatabaseMetrics,
    models::ClientVersion,
    tables::{CanonicalHeaders, TransactionHashNumbers},
    transaction::{DbTx, DbTxMut},
};
use reth_hybrid_adapter::open_hybrid;

fn labelled(labels: &[metrics::Label]) -> Vec<(String, String)> {
    labels
        .iter()
        .map(|l| (l.key().to_string(), l.value().to_string()))
        .collect()
}

#[test]
fn the_node_database_reports_reth_s_mdbx_gauges_then_rocksdb_s() {
    let dir = tempfile::tempdir().expect("tmp");
    let db =
        open_hybrid(dir.path(), DatabaseArguments::new(ClientVersion::default())).expect("open");
    let tx = db.tx_mut().expect("rw");
    tx.put::<CanonicalHeaders>(1, B256::repeat_byte(1))
        .expect("put");
    tx.put::<TransactionHashNumbers>(B256::repeat_byte(1), 1)
        .expect("put");
    tx.commit().expect("commit");

    let ours: Vec<(&str, Vec<(String, String)>)> = db
        .gauge_metrics()
        .iter()
        .map(|(name, _, labels)| (*name, labelled(labels)))
        .collect();
    // reth's MDBX gauges, computed by reth itself on the same environment.
    let stock: Vec<(&str, Vec<(String, String)>)> = db
        .engine()
        .primary()
        .env()
        .gauge_metrics()
        .iter()
        .map(|(name, _, labels)| (*name, labelled(labels)))
        .collect();
    assert!(
        stock.iter().any(|(n, l)| *n == "db.table_entries"
            && l.contains(&("table".into(), "CanonicalHeaders".into()))),
        "reth reports per-table MDBX gauges: {stock:?}"
    );
    assert_eq!(
        &ours[..stock.len()],
        &stock[..],
        "the node database reports reth's MDBX gauges first, unchanged"
    );
    let rocksdb = &ours[stock.len()..];
    assert!(
        rocksdb.iter().any(|(n, l)| *n == "rocksdb_memtable_bytes"
            && l.contains(&("table".into(), "TransactionHashNumbers".into()))),
        "then RocksDB's gauges per table: {rocksdb:?}"
    );
    assert!(
        rocksdb.iter().all(|(n, l)| n.starts_with("rocksdb_")
            && l.contains(&("source".into(), "reth-hybrid".into()))),
        "only RocksDB's after reth's, labelled as reth-hybrid's: {rocksdb:?}"
    );
}
