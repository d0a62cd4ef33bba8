//! RETH_HYBRID_ROCKSDB_HISTORY_L0_TRIGGER: a valid value sets the history tables' trigger, a
//! mistyped one is refused before anything is opened. Alone in its test binary: it sets the
//! process's environment.

use reth_hybrid_rocksdb::{HISTORY_L0_TRIGGER_ENV, RocksEngine, RocksError, RocksOptions};

fn set(value: &str) {
    // SAFETY: the only test of this binary; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var(HISTORY_L0_TRIGGER_ENV, value) };
}

#[test]
fn the_history_trigger_comes_from_the_environment_and_a_bad_value_is_refused() {
    set("4");
    assert_eq!(RocksOptions::default().history_level0_compaction_trigger, 4);
    let dir = tempfile::tempdir().expect("tmp");
    let rocks = RocksEngine::open(&dir.path().join("ok"), &RocksOptions::default()).expect("open");
    assert_eq!(rocks.history_level0_compaction_trigger(), 4);
    drop(rocks);

    for bad in ["four", "0", "-1"] {
        set(bad);
        let path = dir.path().join(format!("refused-{bad}"));
        let err = RocksEngine::open(&path, &RocksOptions::default()).expect_err(bad);
        assert!(matches!(err, RocksError::Setting { .. }), "{err}");
        let message = err.to_string();
        assert!(
            message.contains(HISTORY_L0_TRIGGER_ENV) && message.contains(">= 1"),
            "{message}"
        );
        assert!(!path.exists(), "nothing was created for {bad}");
    }
}
