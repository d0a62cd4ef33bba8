//! A mistyped RETH_HYBRID_ROCKSDB_HISTORY_L0_TRIGGER is refused before a migration changes
//! anything. Alone in its test binary: it sets the process's environment.

mod common;

use common::{files, generated};
use reth_hybrid_api::EngineKind;
use reth_hybrid_migrate::{MigrateError, MigrateRequest, NoProgress, migrate};
use reth_hybrid_rocksdb::{HISTORY_L0_TRIGGER_ENV, RocksError};

#[test]
fn a_mistyped_rocksdb_setting_is_refused_before_anything_changes() {
    let dir = generated(1, 5);
    let before = files(dir.path());
    // SAFETY: the only test of this binary; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var(HISTORY_L0_TRIGGER_ENV, "one") };
    let err = migrate(
        dir.path(),
        &MigrateRequest::new(EngineKind::RocksDb),
        &NoProgress,
    )
    .expect_err("a mistyped setting");
    assert!(
        matches!(err, MigrateError::Rocks(RocksError::Setting { .. })),
        "{err}"
    );
    assert_eq!(files(dir.path()), before, "nothing changed");

    unsafe { std::env::set_var(HISTORY_L0_TRIGGER_ENV, "4") };
    migrate(
        dir.path(),
        &MigrateRequest::new(EngineKind::RocksDb),
        &NoProgress,
    )
    .expect("a valid setting migrates");
}
