//! A history seek first searches within its key's prefix (the address, or address ++ slot),
//! skipping the files whose prefix filter rules the prefix out, and falls back to a total-order
//! seek when the prefix has no row at or after the target. These tests hold it to the model on
//! rows spread over every place RocksDB keeps them (bottom level, a flushed level-0 file, the
//! memtable), and check that the skipping happens.

use proptest::prelude::*;
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::collections::BTreeMap;

const ACCOUNT_PREFIX: usize = 20;
const STORAGE_PREFIX: usize = 52;

/// A key of `table` around a few shared prefixes: full keys (prefix ++ block), keys that end
/// inside the prefix, and keys of neighbouring prefixes, so seeks cross prefix boundaries.
fn key(prefix_len: usize) -> impl Strategy<Value = Vec<u8>> {
    (
        0u8..3,
        0usize..=prefix_len + 9,
        proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xff)], 9),
    )
        .prop_map(move |(owner, len, tail)| {
            let mut k = vec![owner; prefix_len];
            k.extend_from_slice(&tail);
            k.truncate(len.max(1));
            k
        })
}

/// One layer's writes: `Some(value)` puts, `None` deletes.
fn layer(prefix_len: usize) -> impl Strategy<Value = Vec<(Vec<u8>, Option<u8>)>> {
    proptest::collection::vec(
        (
            key(prefix_len),
            proptest::option::weighted(0.8, any::<u8>()),
        ),
        0..40,
    )
}

fn engine(dir: &std::path::Path) -> RocksEngine {
    RocksEngine::open(
        dir,
        &RocksOptions {
            sync_writes: false,
            ..RocksOptions::default()
        },
    )
    .expect("open")
}

/// Writes `layers` into `table` and the model: the first compacted into the bottom level, the
/// second flushed into a level-0 file, the third left in the memtable.
fn spread(
    rocks: &RocksEngine,
    table: Tables,
    layers: &[Vec<(Vec<u8>, Option<u8>)>; 3],
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
) {
    for (i, writes) in layers.iter().enumerate() {
        let tx = rocks.begin_rw().expect("rw");
        for (k, v) in writes {
            match v {
                Some(v) => {
                    tx.put(table, k, &[*v]).expect("put");
                    model.insert(k.clone(), vec![*v]);
                }
                None => {
                    tx.delete(table, k, None).expect("delete");
                    model.remove(k);
                }
            }
        }
        tx.commit().expect("commit");
        match i {
            0 => {
                rocks.flush().expect("flush");
                rocks
                    .db()
                    .compact_range_cf::<&[u8], &[u8]>(rocks.column_family(table), None, None);
            }
            1 => rocks.flush().expect("flush"),
            _ => {}
        }
    }
}

fn check_seeks(
    rocks: &RocksEngine,
    table: Tables,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    targets: &[Vec<u8>],
) -> Result<(), TestCaseError> {
    let tx = rocks.begin_ro().expect("ro");
    // Point lookups check the prefix filter (there is no whole-key one).
    for (k, v) in model {
        prop_assert_eq!(
            tx.get(table, k).expect("get"),
            Some(v.clone()),
            "get of {:?}",
            k
        );
    }
    for target in targets {
        prop_assert_eq!(
            tx.get(table, target).expect("get"),
            model.get(target).cloned()
        );
        let mut after = model.range(target.clone()..);
        let expected = after.next().map(|(k, v)| (k.clone(), v.clone()));
        let mut cur = tx.cursor(table).expect("cursor");
        prop_assert_eq!(
            cur.seek(target).expect("seek"),
            expected.clone(),
            "seek {:?}",
            target
        );
        // The cursor steps on from where the seek put it, in both directions.
        match &expected {
            Some((k, _)) => {
                let next = model
                    .range::<Vec<u8>, _>((
                        std::ops::Bound::Excluded(k.clone()),
                        std::ops::Bound::Unbounded,
                    ))
                    .next()
                    .map(|(k, v)| (k.clone(), v.clone()));
                prop_assert_eq!(
                    cur.next().expect("next"),
                    next,
                    "next after seek {:?}",
                    target
                );
                let mut back = tx.cursor(table).expect("cursor");
                back.seek(target).expect("seek");
                let prev = model
                    .range(..k.clone())
                    .next_back()
                    .map(|(k, v)| (k.clone(), v.clone()));
                prop_assert_eq!(
                    back.prev().expect("prev"),
                    prev,
                    "prev after seek {:?}",
                    target
                );
            }
            None => prop_assert_eq!(cur.next().expect("next"), None),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn history_seeks_over_the_bottom_level_a_level0_file_and_the_memtable_match_the_model(
        accounts in [layer(ACCOUNT_PREFIX), layer(ACCOUNT_PREFIX), layer(ACCOUNT_PREFIX)],
        storages in [layer(STORAGE_PREFIX), layer(STORAGE_PREFIX), layer(STORAGE_PREFIX)],
        account_targets in proptest::collection::vec(key(ACCOUNT_PREFIX), 1..24),
        storage_targets in proptest::collection::vec(key(STORAGE_PREFIX), 1..24),
    ) {
        let dir = tempfile::tempdir().expect("tmp");
        let rocks = engine(dir.path());
        let (mut account_model, mut storage_model) = (BTreeMap::new(), BTreeMap::new());
        spread(&rocks, Tables::AccountsHistory, &accounts, &mut account_model);
        spread(&rocks, Tables::StoragesHistory, &storages, &mut storage_model);
        check_seeks(&rocks, Tables::AccountsHistory, &account_model, &account_targets)?;
        check_seeks(&rocks, Tables::StoragesHistory, &storage_model, &storage_targets)?;
    }
}

fn counter(rocks: &RocksEngine, name: &str) -> u64 {
    rocks
        .counters()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .value
}

/// Two level-0 files, each with other addresses' shards: a seek of one address reads one file
/// and skips the other by its prefix filter (a total-order seek searches both).
#[test]
fn a_history_seek_skips_the_files_without_its_address() {
    let dir = tempfile::tempdir().expect("tmp");
    let rocks = engine(dir.path());
    let shard = |address: u8, block: u64| [&[address; 20][..], &block.to_be_bytes()].concat();
    for address in [1u8, 2] {
        let tx = rocks.begin_rw().expect("rw");
        for block in [100, 200, u64::MAX] {
            tx.put(Tables::AccountsHistory, &shard(address, block), &[address])
                .expect("put");
        }
        tx.commit().expect("commit");
        rocks.flush().expect("flush");
    }
    let filtered = || counter(&rocks, "rocksdb_seek_filtered_upper_levels");
    let before = filtered();
    let tx = rocks.begin_ro().expect("ro");
    for address in [1u8, 2] {
        let mut cur = tx.cursor(Tables::AccountsHistory).expect("cursor");
        assert_eq!(
            cur.seek(&shard(address, 150)).expect("seek"),
            Some((shard(address, 200), vec![address])),
        );
    }
    assert_eq!(
        filtered() - before,
        2,
        "each seek skipped the level-0 file of the other address"
    );
    // An address with no shard at or after the target falls back to the next address's row.
    let mut cur = tx.cursor(Tables::AccountsHistory).expect("cursor");
    assert_eq!(
        cur.seek(&shard(0, 5)).expect("seek"),
        Some((shard(1, 100), vec![1])),
    );
    assert_eq!(cur.seek(&shard(3, 0)).expect("seek"), None);
}

/// With one sorted run there is nothing to skip: seeks go in total order and check no filter.
/// Once a flush adds a level-0 file (seen at the next open here; within a second on a node),
/// they check the prefix first again.
#[test]
fn a_history_seek_checks_prefix_filters_only_over_several_sorted_runs() {
    let dir = tempfile::tempdir().expect("tmp");
    let shard = |address: u8, block: u64| [&[address; 20][..], &block.to_be_bytes()].concat();
    let write = |rocks: &RocksEngine, address: u8| {
        let tx = rocks.begin_rw().expect("rw");
        tx.put(
            Tables::AccountsHistory,
            &shard(address, u64::MAX),
            &[address],
        )
        .expect("put");
        tx.commit().expect("commit");
        rocks.flush().expect("flush");
    };
    let checks = |rocks: &RocksEngine| {
        counter(rocks, "rocksdb_seek_filtered_upper_levels")
            + counter(rocks, "rocksdb_seek_filtered_last_level")
            + counter(rocks, "rocksdb_seek_filter_matched_last_level")
    };
    let seek_first = |rocks: &RocksEngine| {
        let tx = rocks.begin_ro().expect("ro");
        let mut cur = tx.cursor(Tables::AccountsHistory).expect("cursor");
        assert_eq!(
            cur.seek(&shard(1, 7)).expect("seek"),
            Some((shard(1, u64::MAX), vec![1]))
        );
    };
    let rocks = engine(dir.path());
    write(&rocks, 1);
    rocks.db().compact_range_cf::<&[u8], &[u8]>(
        rocks.column_family(Tables::AccountsHistory),
        None,
        None,
    );
    drop(rocks);
    let rocks = engine(dir.path());
    seek_first(&rocks);
    assert_eq!(checks(&rocks), 0, "one sorted run: no filter checked");
    write(&rocks, 2);
    drop(rocks);
    let rocks = engine(dir.path());
    seek_first(&rocks);
    assert_eq!(
        counter(&rocks, "rocksdb_seek_filtered_upper_levels"),
        1,
        "the level-0 file without address 1 skipped"
    );
    assert_eq!(
        counter(&rocks, "rocksdb_seek_filter_matched_last_level"),
        1,
        "the bottom level's filter let the seek in"
    );
}
