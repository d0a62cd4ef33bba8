//! Migration end to end on real MDBX and RocksDB: round trips are row-for-row identical, the
//! layout follows, the hybrid opens the result, `--compact` returns space.

mod common;

use common::{all_rows, counts, generated};
use reth_hybrid_api::{
    DbTx, EngineKind, Tables,
    raw::{RawEngine, RawTx},
    tables::TransactionHashNumbers,
    typed::{Database, TypedDatabase},
};
use reth_hybrid_hybrid::{HybridDb, HybridOptions};
use reth_hybrid_mdbx::{MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{MigrateRequest, NoProgress, datadir::Datadir, migrate, verify::verify};
use reth_hybrid_rocksdb::RocksEngine;

const DEFAULT_TABLES: [Tables; 3] = [
    Tables::AccountsHistory,
    Tables::StoragesHistory,
    Tables::TransactionHashNumbers,
];

/// Small SST files, so every table spans several files and resumption has boundaries to cross.
fn request(to: EngineKind) -> MigrateRequest {
    let mut r = MigrateRequest::new(to);
    r.sst_file_bytes = 8 << 10;
    r.batch_rows = 300;
    r
}

fn assert_verifies(datadir: &std::path::Path) {
    let report = verify(datadir, &NoProgress).expect("verify runs");
    assert!(report.passed(), "verify failed: {:#?}", report.checks);
}

#[test]
fn default_tables_round_trip_row_for_row() {
    let dir = generated(4, 7);
    let d = dir.path();
    let before = all_rows(d);
    assert!(before[&Tables::TransactionHashNumbers].len() >= 3000);

    let report = migrate(d, &request(EngineKind::RocksDb), &NoProgress).expect("migrate");
    let mut migrated: Vec<Tables> = report.tables.iter().map(|t| t.table).collect();
    migrated.sort();
    let mut expected = DEFAULT_TABLES.to_vec();
    expected.sort();
    assert_eq!(migrated, expected);
    for t in &report.tables {
        assert_eq!(t.rows as usize, before[&t.table].len(), "{}", t.table);
    }
    for table in DEFAULT_TABLES {
        assert_eq!(counts(d, table), (0, before[&table].len()), "{table}");
    }
    assert!(
        all_rows(d) == before,
        "rows changed by the migration to RocksDB"
    );
    assert!(!Datadir::new(d).state_file().exists());
    assert!(!Datadir::new(d).staging().exists());
    assert_verifies(d);

    let back = migrate(d, &request(EngineKind::Mdbx), &NoProgress).expect("rollback");
    assert_eq!(back.tables.len(), 3);
    for table in DEFAULT_TABLES {
        assert_eq!(counts(d, table), (before[&table].len(), 0), "{table}");
    }
    assert!(all_rows(d) == before, "rows changed by the round trip");
    assert_verifies(d);
}

#[test]
fn every_table_including_dupsort_round_trips_and_the_hybrid_reads_it() {
    let dir = generated(2, 11);
    let d = dir.path();
    let before = all_rows(d);
    let tables: Vec<Tables> = Tables::ALL
        .into_iter()
        .filter(|t| *t != Tables::Metadata)
        .collect();
    let forward = request(EngineKind::RocksDb).with_tables(tables.clone());
    migrate(d, &forward, &NoProgress).expect("migrate all");
    assert!(all_rows(d) == before);
    assert_eq!(counts(d, Tables::PlainStorageState).0, 0);
    assert_verifies(d);

    // The hybrid opens the migrated datadir with its recorded layout and serves the rows.
    {
        let mdbx = MdbxEngine::open(d, MdbxOptions::read_write()).expect("mdbx");
        let rocks = RocksEngine::open_in_datadir(d).expect("rocksdb");
        let hybrid = HybridDb::open(mdbx, rocks, d, HybridOptions::default()).expect("hybrid");
        assert_eq!(
            hybrid.layout().engine_of(Tables::PlainStorageState),
            EngineKind::RocksDb
        );
        let db = TypedDatabase::new(hybrid);
        let tx = db.tx().expect("tx");
        let (hash, number) = &before[&Tables::TransactionHashNumbers][5];
        let hash = alloy_primitives::B256::from_slice(hash);
        let got = tx.get::<TransactionHashNumbers>(hash).expect("get");
        let expected = <u64 as reth_hybrid_api::Decompress>::decompress(number).expect("value");
        assert_eq!(got, Some(expected));
    }

    migrate(
        d,
        &request(EngineKind::Mdbx).with_tables(tables),
        &NoProgress,
    )
    .expect("back");
    assert!(all_rows(d) == before);
    assert_verifies(d);
}

#[test]
fn compact_returns_the_freed_pages() {
    let dir = generated(40, 3);
    let d = dir.path();
    let before = all_rows(d);
    let mut req = request(EngineKind::RocksDb);
    req.sst_file_bytes = 1 << 20;
    req.compact = true;
    let report = migrate(d, &req, &NoProgress).expect("migrate");
    let (old, new) = report.compacted.expect("compacted");
    assert!(new < old, "mdbx.dat {old} -> {new} bytes");
    assert!(new > 0);
    assert!(all_rows(d) == before);
    assert_verifies(d);
}

#[test]
fn default_set_skips_tables_already_moved_and_resumes_with_nothing_to_do() {
    let dir = generated(1, 5);
    let d = dir.path();
    migrate(
        d,
        &request(EngineKind::RocksDb).with_tables(vec![Tables::TransactionHashNumbers]),
        &NoProgress,
    )
    .expect("one table");
    let report = migrate(d, &request(EngineKind::RocksDb), &NoProgress).expect("the rest");
    assert_eq!(report.plan.skipped, vec![Tables::TransactionHashNumbers]);
    assert_eq!(report.tables.len(), 2);
    let again = migrate(d, &request(EngineKind::RocksDb), &NoProgress).expect("nothing left");
    assert!(again.tables.is_empty());
    assert_eq!(again.plan.skipped.len(), 3);
}

#[test]
fn rocksdb_engine_reports_sizes_after_ingestion() {
    let dir = generated(2, 9);
    let d = dir.path();
    migrate(d, &request(EngineKind::RocksDb), &NoProgress).expect("migrate");
    let stats = reth_hybrid_migrate::stats::stats(d, true).expect("stats");
    let tx_hashes = stats
        .tables
        .iter()
        .find(|t| t.table == Tables::TransactionHashNumbers)
        .expect("listed");
    assert_eq!(tx_hashes.engine, EngineKind::RocksDb);
    assert_eq!(tx_hashes.mdbx_entries, 0);
    assert_eq!(tx_hashes.rocksdb_entries, 1600);
    assert!(tx_hashes.rocksdb_bytes > 1600 * 40);
    assert!(stats.layout_recorded);
    let mdbx = MdbxEngine::open_read_only(d).expect("ro");
    assert_eq!(
        mdbx.begin_ro()
            .expect("ro")
            .entries(Tables::TransactionHashNumbers)
            .expect("entries"),
        0
    );
}

/// After power loss took RocksDB's unsynced WAL tail, RocksDB lacks deferred commits that MDBX
/// holds as pending rows. A rollback must replay them first: moving RocksDB's tables to MDBX as
/// they are would leave those commits' rows out for good.
#[test]
fn rollback_after_rocksdb_lost_deferred_commits_moves_them_too() {
    let dir = generated(2, 11);
    let d = dir.path();
    migrate(d, &request(EngineKind::RocksDb), &NoProgress).expect("migrate");
    let scratch = tempfile::tempdir().expect("tmp");
    let image = scratch.path().join("rocksdb-at-last-sync");
    let hash = |i: u64| reth_hybrid_api::models::B256::from([0xa0 ^ i as u8; 32]);
    {
        let mdbx = MdbxEngine::open(d, MdbxOptions::read_write()).expect("mdbx");
        let rocks = RocksEngine::open_in_datadir(d).expect("rocksdb");
        let hybrid = TypedDatabase::new(
            HybridDb::open(mdbx, rocks, d, HybridOptions::default()).expect("hybrid"),
        );
        // RocksDB's state at its last WAL sync (the open synced).
        rocksdb::checkpoint::Checkpoint::new(hybrid.engine().follower().db())
            .expect("checkpoint")
            .create_checkpoint(&image)
            .expect("create checkpoint");
        for i in 1..=3u64 {
            hybrid
                .update(|tx| {
                    reth_hybrid_api::DbTxMut::put::<TransactionHashNumbers>(
                        tx,
                        hash(i),
                        1_000_000 + i,
                    )
                })
                .expect("update")
                .expect("put");
        }
    }
    // Power loss: RocksDB opens at its last sync, without the three commits.
    let rocks_dir = d.join("hybrid-rocksdb");
    std::fs::remove_dir_all(&rocks_dir).expect("remove");
    std::fs::rename(&image, &rocks_dir).expect("restore image");

    migrate(d, &request(EngineKind::Mdbx), &NoProgress).expect("rollback");
    let mdbx = TypedDatabase::new(MdbxEngine::open_read_only(d).expect("mdbx"));
    let tx = mdbx.tx().expect("ro");
    for i in 1..=3u64 {
        assert_eq!(
            tx.get::<TransactionHashNumbers>(hash(i)).expect("get"),
            Some(1_000_000 + i),
            "deferred commit {i} is in MDBX after the rollback"
        );
    }
    drop(tx);
    drop(mdbx);
    assert_verifies(d);
}
