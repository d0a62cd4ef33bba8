//! The seed workloads are correct on every engine: the PMT job's incremental roots equal
//! from-scratch roots and leave the stored trie equal to a from-scratch build (also under random
//! overwrites and deletions, against a `BTreeMap` model); every counter variant ends with
//! `sum + keys == operations`; a Rust comparator orders like RocksDB's own.

use alloy_primitives::{B256, U256};
use alloy_trie::Nibbles;
use proptest::prelude::*;
use reth_hybrid_api::typed::Database;
use reth_hybrid_bench::{
    seeds::{
        TrieStore,
        counters::{self, CounterConfig, CounterVariant},
        micro::{self, Comparator},
        open_store,
        pmt::{self, ChangedKeys, PmtConfig, RootMode},
    },
    with_store,
};
use std::collections::BTreeMap;

const SMALL: PmtConfig = PmtConfig {
    batches: 4,
    keys_per_batch: 1_500,
    seed: 7,
    sorted_writes: false,
    root: RootMode::InWriteTx,
};

#[test]
fn pmt_roots_match_from_scratch_on_every_store() {
    let reference = pmt::reference_roots(&SMALL);
    for store in TrieStore::ALL {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = open_store(store, dir.path()).expect("open");
        with_store!(&open, |db| {
            let reports = pmt::run(db, &SMALL, |_| {}).expect("run");
            let roots: Vec<B256> = reports.iter().map(|r| r.root).collect();
            assert_eq!(roots, reference, "{}", store.name());
            // Later batches reuse stored hashes instead of rehashing everything.
            assert!(
                reports[3].hashes_reused > 0,
                "{}: no stored hash reused",
                store.name()
            );
            assert!(
                reports[3].leaves_read < SMALL.batches * SMALL.keys_per_batch,
                "{}: batch 3 read every leaf",
                store.name()
            );

            let tx = db.tx().expect("tx");
            let (root, expected) = pmt::from_scratch_nodes(&tx).expect("rebuild");
            assert_eq!(root, reference[3]);
            assert!(
                pmt::stored_nodes(&tx).expect("stored") == expected,
                "{}: stored trie differs from a from-scratch build",
                store.name()
            );
            // Nothing changed: the root comes from the stored root node alone.
            let again = pmt::incremental_root(&tx, ChangedKeys::default()).expect("root");
            assert_eq!(again.root, reference[3]);
            assert_eq!(again.leaves_read, 0);
        });
    }
}

#[test]
fn pmt_sorted_writes_and_the_root_beside_them_give_the_same_roots_and_trie() {
    let reference = pmt::reference_roots(&SMALL);
    let sorted = PmtConfig {
        sorted_writes: true,
        ..SMALL
    };
    let beside = PmtConfig {
        root: RootMode::Snapshot { threads: 1 },
        ..sorted
    };
    let parallel = PmtConfig {
        root: RootMode::Snapshot { threads: 2 },
        ..sorted
    };
    for (store, config) in [
        (TrieStore::Mdbx, sorted),
        (TrieStore::Hybrid, sorted),
        (TrieStore::Mdbx, beside),
        (TrieStore::Hybrid, beside),
        (TrieStore::RocksDb, beside),
        (TrieStore::Mdbx, parallel),
        (TrieStore::Hybrid, parallel),
        (TrieStore::RocksDb, parallel),
        (TrieStore::HybridTrieInRocksDb, parallel),
    ] {
        let name = format!("{} {:?}", store.name(), config.root);
        let dir = tempfile::tempdir().expect("tempdir");
        let open = open_store(store, dir.path()).expect("open");
        with_store!(&open, |db| {
            let reports = pmt::run(db, &config, |_| {}).expect("run");
            let roots: Vec<B256> = reports.iter().map(|r| r.root).collect();
            assert_eq!(roots, reference, "{name}");
            // 1,500 random keys give the root 16 branch children: the split is taken every
            // batch (no fallback to one thread).
            if let RootMode::Snapshot { threads: 2.. } = config.root {
                assert!(
                    reports.iter().all(|r| r.root_split),
                    "{name}: a batch's root fell back to one thread"
                );
            }
            let phases = &reports[3].phases;
            assert!(
                phases.leaf_writes + phases.root + phases.trie_writes + phases.commit
                    <= reports[3].elapsed,
                "{name}: the phases add up to more than the batch took"
            );
            let tx = db.tx().expect("tx");
            let (_, expected) = pmt::from_scratch_nodes(&tx).expect("rebuild");
            assert!(
                pmt::stored_nodes(&tx).expect("stored") == expected,
                "{name}: stored trie differs from a from-scratch build"
            );
        });
    }
}

/// Keys that share prefixes of several lengths, so batches split and merge extensions.
fn key(pool: u8, tail: u8) -> B256 {
    let mut k = [0u8; 32];
    match pool % 4 {
        0 => k[0] = tail,
        1 => {
            k[0] = 0x12;
            k[1] = 0x30 | (tail & 0x0f);
            k[31] = tail;
        }
        2 => {
            k[..8].copy_from_slice(&[0xab; 8]);
            k[8] = tail;
        }
        _ => {
            k[0] = 0xab;
            k[1] = tail;
            k[20] = pool;
        }
    }
    B256::from(k)
}

fn batches() -> impl Strategy<Value = Vec<Vec<(u8, u8, Option<u64>)>>> {
    let row = (
        any::<u8>(),
        0u8..24,
        prop::option::weighted(0.75, any::<u64>()),
    );
    prop::collection::vec(prop::collection::vec(row, 0..40), 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random overwrites and deletions, checked against a model after every commit.
    #[test]
    fn incremental_roots_follow_a_model(
        batches in batches(),
        rocks in any::<bool>(),
        root_threads in 0usize..3,
    ) {
        let store = if rocks { TrieStore::RocksDb } else { TrieStore::Mdbx };
        let dir = tempfile::tempdir().expect("tempdir");
        let open = open_store(store, dir.path()).expect("open");
        let mut model = BTreeMap::<B256, U256>::new();
        with_store!(&open, |db| {
            for batch in &batches {
                let rows: Vec<_> = batch
                    .iter()
                    .map(|(pool, tail, value)| (key(*pool, *tail), value.map(U256::from)))
                    .collect();
                for (k, v) in &rows {
                    match v {
                        Some(v) => model.insert(*k, *v),
                        None => model.remove(k),
                    };
                }
                // The root from a snapshot with the batch laid over it (on one thread or split
                // over two) must be the same.
                let (computed, _, _) = match root_threads {
                    0 => pmt::commit_batch(db, &rows),
                    threads => pmt::commit_batch_root_beside(db, &rows, threads),
                }
                .expect("commit");
                prop_assert_eq!(computed.root, pmt::root_of(&model));
                let tx = db.tx().expect("tx");
                let (_, expected) = pmt::from_scratch_nodes(&tx).expect("rebuild");
                prop_assert!(pmt::stored_nodes(&tx).expect("stored") == expected);
            }
        });
    }
}

/// Random keys, enough for the root's 16 children to be branches: the split root is taken.
fn pool_key(index: u16) -> B256 {
    alloy_primitives::keccak256(index.to_be_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// The root split over threads, under random overwrites and deletions of a populated trie,
    /// checked against a model. (Each root child keeps enough keys to stay a branch; the
    /// children's other shapes are scripted in `split_root_handles_every_child_shape`.)
    #[test]
    fn split_roots_follow_a_model(
        batches in prop::collection::vec(
            prop::collection::vec((0u16..800, prop::option::weighted(0.6, any::<u64>())), 0..300),
            1..5,
        ),
        rocks in any::<bool>(),
    ) {
        let store = if rocks { TrieStore::RocksDb } else { TrieStore::Mdbx };
        let dir = tempfile::tempdir().expect("tempdir");
        let open = open_store(store, dir.path()).expect("open");
        let mut model = BTreeMap::<B256, U256>::new();
        let first: Vec<(u16, Option<u64>)> = (0..600).map(|i| (i, Some(u64::from(i)))).collect();
        with_store!(&open, |db| {
            for (n, batch) in std::iter::once(&first).chain(&batches).enumerate() {
                let rows: Vec<_> = batch
                    .iter()
                    .map(|(index, value)| (pool_key(*index), value.map(U256::from)))
                    .collect();
                for (k, v) in &rows {
                    match v {
                        Some(v) => model.insert(*k, *v),
                        None => model.remove(k),
                    };
                }
                let (computed, _, _) =
                    pmt::commit_batch_root_beside(db, &rows, 2).expect("commit");
                if n == 0 {
                    prop_assert!(computed.root_split);
                }
                prop_assert_eq!(computed.root, pmt::root_of(&model));
                let tx = db.tx().expect("tx");
                let (_, expected) = pmt::from_scratch_nodes(&tx).expect("rebuild");
                prop_assert!(pmt::stored_nodes(&tx).expect("stored") == expected);
            }
        });
    }
}

/// A key whose first two nibbles are `first` and `second`, the rest distinct per `tail`.
fn key_under(first: u8, second: u8, tail: u16) -> B256 {
    let mut key = alloy_primitives::keccak256([&tail.to_be_bytes()[..], &[first, second]].concat());
    key.0[0] = (first << 4) | second;
    key
}

/// The split root's every case, scripted: a previous root that was an extension, a child that
/// is a branch too small to be stored, children reused from the stored root, an empty batch, a
/// child emptied in one batch (its stored nodes removed), a child shrunk to one leaf (one-thread
/// fallback) and then emptied.
#[test]
fn split_root_handles_every_child_shape() {
    type Rows = Vec<(B256, Option<U256>)>;
    let spread = |first: u8, keys: u16| -> Rows {
        (0..keys)
            .map(|i| (key_under(first, (i % 16) as u8, i), Some(U256::from(i))))
            .collect()
    };
    let mut others: Rows = (0..16u8)
        .filter(|n| ![3, 7].contains(n))
        .flat_map(|n| spread(n, 20))
        .collect();
    // Two leaves under 7: a branch at [7] whose children are leaves, so it is not stored.
    others.extend([
        (key_under(7, 0, 1), Some(U256::from(70))),
        (key_under(7, 1, 2), Some(U256::from(71))),
    ]);
    let under_5: Vec<B256> = spread(5, 20).iter().map(|(k, _)| *k).collect();
    let steps: Vec<(&str, Rows, bool)> = vec![
        (
            "all keys under 3: the root is an extension",
            spread(3, 40),
            false,
        ),
        (
            "the other nibbles filled, no stored root node",
            others,
            true,
        ),
        (
            "one key under 5 overwritten",
            vec![(under_5[0], Some(U256::from(9)))],
            true,
        ),
        ("an empty batch", vec![], true),
        (
            "every key under 9 deleted: an empty child",
            spread(9, 20).into_iter().map(|(k, _)| (k, None)).collect(),
            true,
        ),
        (
            "all but one key under 5 deleted: a lone leaf",
            under_5[1..].iter().map(|k| (*k, None)).collect(),
            false,
        ),
        (
            "the last key under 5 deleted",
            vec![(under_5[0], None)],
            true,
        ),
    ];
    for store in [TrieStore::Mdbx, TrieStore::RocksDb] {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = open_store(store, dir.path()).expect("open");
        let mut model = BTreeMap::<B256, U256>::new();
        with_store!(&open, |db| {
            for (step, rows, split) in &steps {
                for (k, v) in rows {
                    match v {
                        Some(v) => model.insert(*k, *v),
                        None => model.remove(k),
                    };
                }
                let (computed, _, _) = pmt::commit_batch_root_beside(db, rows, 2).expect("commit");
                let name = format!("{}: {step}", store.name());
                assert_eq!(computed.root, pmt::root_of(&model), "{name}");
                assert_eq!(computed.root_split, *split, "{name}");
                let tx = db.tx().expect("tx");
                let (_, expected) = pmt::from_scratch_nodes(&tx).expect("rebuild");
                let stored = pmt::stored_nodes(&tx).expect("stored");
                assert!(stored == expected, "{name}: stored trie differs");
                let has = |path: &[u8]| stored.contains_key(&Nibbles::from_nibbles(path));
                match *step {
                    "all keys under 3: the root is an extension" => {
                        assert!(
                            has(&[3]) && !has(&[]),
                            "{name}: expected [3] stored, no root"
                        )
                    }
                    "the other nibbles filled, no stored root node" => {
                        assert!(has(&[]) && has(&[9]), "{name}: expected the root and [9]");
                        assert!(!has(&[7]), "{name}: [7] has only leaf children");
                    }
                    "one key under 5 overwritten" => {
                        assert!(computed.hashes_reused >= 15, "{name}: siblings not reused")
                    }
                    "an empty batch" => assert_eq!(computed.leaves_read, 0, "{name}"),
                    "every key under 9 deleted: an empty child" => assert!(
                        stored.keys().all(|k| k.first() != Some(9)),
                        "{name}: nodes under [9] left behind"
                    ),
                    "the last key under 5 deleted" => assert!(
                        stored.keys().all(|k| k.first() != Some(5)),
                        "{name}: nodes under [5] left behind"
                    ),
                    _ => {}
                }
            }
        });
    }
}

#[test]
fn every_counter_variant_counts_every_operation() {
    let config = CounterConfig {
        threads: 3,
        key_range: 500,
        ops_per_thread: 1_200,
        ops_per_commit: 150,
        cache_bytes: 1 << 20,
        seed: 11,
    };
    for variant in CounterVariant::ALL {
        let dir = tempfile::tempdir().expect("tempdir");
        let report = counters::run(variant, dir.path(), &config).expect("run");
        assert_eq!(report.ops, 3_600);
        assert!(
            report.is_consistent(),
            "{}: {} keys + sum {} != {} operations",
            variant.name(),
            report.keys,
            report.sum,
            report.ops
        );
        // 3600 draws over 500 keys touch nearly all of them; most operations are updates.
        assert!(
            report.keys > 450 && report.keys <= 500,
            "{}: {} keys",
            variant.name(),
            report.keys
        );
        if let Some(inserts) = report.inserts {
            assert_eq!(
                inserts,
                report.keys,
                "{}: every insert left one key",
                variant.name()
            );
        }
    }
}

#[test]
fn a_rust_comparator_orders_like_the_native_one() {
    let keys: Vec<[u8; 3]> = vec![
        [0, 0, 1],
        [0, 1, 0],
        [1, 0, 0],
        [0, 0, 0],
        [255, 0, 0],
        [0, 255, 9],
    ];
    let mut order = Vec::new();
    for comparator in Comparator::ALL {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = micro::open_with_comparator(dir.path(), comparator).expect("open");
        for k in &keys {
            db.put(k, b"v").expect("put");
        }
        let seen: Vec<Vec<u8>> = db
            .iterator(rocksdb::IteratorMode::Start)
            .map(|row| row.expect("row").0.to_vec())
            .collect();
        order.push(seen);
    }
    let mut sorted: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
    sorted.sort();
    assert_eq!(order[0], sorted, "native bytewise");
    assert_eq!(order[1], sorted, "rust bytewise");
    sorted.reverse();
    assert_eq!(order[2], sorted, "rust reverse bytewise");
}
