//! Cursor seeks, their `next`/`prev`, and gets over rows spread across every place RocksDB
//! keeps them (the bottom level, a flushed level-0 file, the memtable), with puts and deletes in
//! each layer, held to the `BTreeMap` model. History keys cluster around a few prefixes and some
//! end inside the prefix, so seeks cross prefix boundaries as reth's history lookups do. (Written
//! for a prefix-first seek path that was measured and not kept: docs/benchmarks.md, "History
//! seeks and the LSM's shape".)

use proptest::prelude::*;
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::collections::BTreeMap;

/// An address.
const ACCOUNT_PREFIX: usize = 20;
/// An address and a storage slot.
const STORAGE_PREFIX: usize = 52;

/// A key of `table` around a few shared prefixes: full keys (prefix ++ block), keys that end
/// inside the prefix, and keys of neighbouring prefixes, so seeks cross prefix boundaries.
fn key(prefix_len: usize) -> impl Strategy<Value = Vec<u8>> {
    (
        0u8..3,
        0usize..=prefix_len + 8,
        proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xff)], 8),
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

/// The shipped trigger, whatever valid value the environment holds (a developer comparing
/// triggers may set RETH_HYBRID_ROCKSDB_HISTORY_L0_TRIGGER).
fn open(dir: &std::path::Path) -> RocksEngine {
    RocksEngine::open(
        dir,
        &RocksOptions {
            sync_writes: false,
            history_level0_compaction_trigger: 1,
            ..RocksOptions::default()
        },
    )
    .expect("open")
}

/// An engine whose history tables hold the shape `spread` builds: the shipped options compact
/// a flushed file away at once, so automatic compactions are off here.
fn engine(dir: &std::path::Path) -> RocksEngine {
    let rocks = open(dir);
    for table in [Tables::AccountsHistory, Tables::StoragesHistory] {
        rocks
            .db()
            .set_options_cf(
                rocks.column_family(table),
                &[("disable_auto_compactions", "true")],
            )
            .expect("a dynamic option");
    }
    rocks
}

fn level0_files(rocks: &RocksEngine, table: Tables) -> u64 {
    rocks
        .db()
        .property_int_value_cf(rocks.column_family(table), "rocksdb.num-files-at-level0")
        .expect("property")
        .expect("known property")
}

/// A commit to `tables`, flushed into a level-0 file of each.
fn commit_and_flush(rocks: &RocksEngine, tables: &[Tables], round: u8) {
    let tx = rocks.begin_rw().expect("rw");
    for &table in tables {
        for i in 0u8..50 {
            tx.put(table, &[round, i, 0, 0, 0, 0, 0, 0, 0, 0], &[i])
                .expect("put");
        }
    }
    tx.commit().expect("commit");
    for &table in tables {
        rocks
            .db()
            .flush_cf(rocks.column_family(table))
            .expect("flush");
    }
}

/// Until RocksDB has no flush or compaction pending or running.
fn settle(rocks: &RocksEngine) {
    rocks
        .db()
        .wait_for_compact(&rocksdb::WaitForCompactOptions::default())
        .expect("compactions finish");
}

const HISTORY_AND_TX_HASHES: [Tables; 3] = [
    Tables::AccountsHistory,
    Tables::StoragesHistory,
    Tables::TransactionHashNumbers,
];

/// A seek searches every level-0 file, so the history tables compact each flushed file into the
/// levels below as soon as it lands; other tables keep RocksDB's default and wait for four.
#[test]
fn history_tables_compact_each_flushed_file_away() {
    let dir = tempfile::tempdir().expect("tmp");
    let rocks = open(dir.path());
    for round in 0u8..2 {
        commit_and_flush(&rocks, &HISTORY_AND_TX_HASHES, round);
        settle(&rocks);
        for table in [Tables::AccountsHistory, Tables::StoragesHistory] {
            assert_eq!(
                level0_files(&rocks, table),
                0,
                "{} after flush {round}",
                table.name()
            );
        }
    }
    assert_eq!(
        level0_files(&rocks, Tables::TransactionHashNumbers),
        2,
        "a table with the default trigger keeps its flushed files in level 0"
    );
    for table in [Tables::AccountsHistory, Tables::StoragesHistory] {
        let tx = rocks.begin_ro().expect("ro");
        let mut cur = tx.cursor(table).expect("cursor");
        let mut rows = 0;
        let mut row = cur.first().expect("first");
        while row.is_some() {
            rows += 1;
            row = cur.next().expect("next");
        }
        assert_eq!(
            rows,
            100,
            "{}: every row survives the compaction",
            table.name()
        );
    }
}

/// With `history_level0_compaction_trigger` at 4 (RocksDB's default) the history tables keep
/// their flushed files in level 0 like any table.
#[test]
fn history_tables_keep_level0_files_with_trigger_4() {
    let dir = tempfile::tempdir().expect("tmp");
    let rocks = RocksEngine::open(
        dir.path(),
        &RocksOptions {
            sync_writes: false,
            history_level0_compaction_trigger: 4,
            ..RocksOptions::default()
        },
    )
    .expect("open");
    assert_eq!(rocks.history_level0_compaction_trigger(), 4);
    for round in 0u8..2 {
        commit_and_flush(&rocks, &HISTORY_AND_TX_HASHES, round);
    }
    settle(&rocks);
    for table in HISTORY_AND_TX_HASHES {
        assert_eq!(level0_files(&rocks, table), 2, "{}", table.name());
    }
}

/// Writes `layers` into `table` and the model: the first compacted into the bottom level, the
/// second flushed into a level-0 file, the third left in the memtable (only `table` is flushed,
/// so another table's memtable stays where its own `spread` left it). Checks that shape.
fn spread(
    rocks: &RocksEngine,
    table: Tables,
    layers: &[Vec<(Vec<u8>, Option<u8>)>; 3],
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
) {
    let cf = rocks.column_family(table);
    let property = |name: &str| {
        rocks
            .db()
            .property_int_value_cf(cf, name)
            .expect("property")
            .expect("known property")
    };
    for (i, writes) in layers.iter().enumerate() {
        let tx = rocks.begin_rw().expect("rw");
        // Keys this layer's commit writes: every put, and deletes of rows that exist.
        let mut written = std::collections::BTreeSet::new();
        for (k, v) in writes {
            match v {
                Some(v) => {
                    tx.put(table, k, &[*v]).expect("put");
                    model.insert(k.clone(), vec![*v]);
                    written.insert(k.clone());
                }
                None => {
                    tx.delete(table, k, None).expect("delete");
                    if model.remove(k).is_some() {
                        written.insert(k.clone());
                    }
                }
            }
        }
        tx.commit().expect("commit");
        match i {
            0 => {
                rocks.db().flush_cf(cf).expect("flush");
                rocks.db().compact_range_cf::<&[u8], &[u8]>(cf, None, None);
            }
            1 => {
                rocks.db().flush_cf(cf).expect("flush");
                let files = u64::from(!written.is_empty());
                assert_eq!(property("rocksdb.num-files-at-level0"), files);
            }
            _ => assert_eq!(
                property("rocksdb.num-entries-active-mem-table"),
                written.len() as u64
            ),
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
    fn history_reads_over_the_bottom_level_a_level0_file_and_the_memtable_match_the_model(
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
