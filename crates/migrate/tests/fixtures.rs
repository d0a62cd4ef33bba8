//! Datadirs written by real reth v2.2 (in `../shared/fixtures`, v1 layout, reth's own empty
//! `<datadir>/rocksdb` beside `db/`): migrated and rolled back on a copy, every row identical,
//! `verify` passing at each step. Fails in CI without them; elsewhere skipped, saying so
//! (reth_hybrid_api::test_support).

mod common;

use common::{all_rows, copy_tree, counts};
use reth_hybrid_api::{EngineKind, Tables};
use reth_hybrid_migrate::{MigrateRequest, NoProgress, migrate, verify::verify};
use std::path::{Path, PathBuf};

fn fixtures(test: &str) -> Vec<PathBuf> {
    reth_hybrid_api::test_support::fixture_datadirs(test, Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_default()
}

#[test]
fn real_reth_datadirs_migrate_verify_and_roll_back_identical() {
    for fixture in fixtures("real_reth_datadirs_migrate_verify_and_roll_back_identical") {
        let name = fixture
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let work = tempfile::tempdir().expect("tmp");
        let d = work.path();
        copy_tree(&fixture, d);
        let before = all_rows(d);
        let report = verify(d, &NoProgress).expect("verify");
        assert!(report.passed(), "{name} before: {:#?}", report.checks);

        let forward = migrate(d, &MigrateRequest::new(EngineKind::RocksDb), &NoProgress)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(all_rows(d) == before, "{name}: rows changed");
        for t in &forward.tables {
            assert_eq!(
                counts(d, t.table),
                (0, before[&t.table].len()),
                "{name} {}",
                t.table
            );
        }
        let report = verify(d, &NoProgress).expect("verify");
        assert!(report.passed(), "{name} migrated: {:#?}", report.checks);

        migrate(d, &MigrateRequest::new(EngineKind::Mdbx), &NoProgress)
            .unwrap_or_else(|e| panic!("{name} rollback: {e}"));
        assert!(
            all_rows(d) == before,
            "{name}: rows changed by the round trip"
        );
        assert_eq!(counts(d, Tables::AccountsHistory).1, 0);
        let report = verify(d, &NoProgress).expect("verify");
        assert!(report.passed(), "{name} rolled back: {:#?}", report.checks);
        eprintln!(
            "{name}: migrated {:?}",
            forward
                .tables
                .iter()
                .map(|t| (t.table, t.rows))
                .collect::<Vec<_>>()
        );
    }
}
