//! A binary waits for its RocksDB engines to close before it exits (a RocksDB closing during
//! exit can abort the process). Its own test binary: the count is process-wide.

use reth_hybrid_api::raw::RawEngine;
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions, open_engines, wait_for_engines_closed};
use std::time::Duration;

#[test]
fn an_engine_counts_as_open_until_the_last_transaction_holding_it_ends() {
    let dir = tempfile::tempdir().expect("tmp");
    assert_eq!(open_engines(), 0);
    let engine = RocksEngine::open(dir.path(), &RocksOptions::default()).expect("open");
    assert_eq!(open_engines(), 1);
    // A read transaction keeps the database open after the engine handle is gone, as a task
    // of reth's runtime holding the provider does.
    let tx = engine.begin_ro().expect("ro");
    drop(engine);
    assert_eq!(open_engines(), 1);
    assert!(!wait_for_engines_closed(Duration::from_millis(50)));
    let holder = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        drop(tx);
    });
    assert!(wait_for_engines_closed(Duration::from_secs(30)));
    assert_eq!(open_engines(), 0);
    // The database closed before the count fell: a second open, before the holder's thread has
    // even finished, takes its lock.
    let again = RocksEngine::open(dir.path(), &RocksOptions::default()).expect("reopen");
    holder.join().expect("holder");
    assert_eq!(open_engines(), 1);
    drop(again);
    assert_eq!(open_engines(), 0);
}
