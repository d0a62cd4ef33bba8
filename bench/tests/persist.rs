//! The block-persistence workload on real MDBX and on the hybrid: the same blocks give the same
//! rows on both, and the history indices it maintains are exactly what the changesets say.

use reth_hybrid_api::{
    DbCursorRO, DbTx, Tables,
    models::{Address, B256, NUM_OF_INDICES_IN_SHARD},
    raw::{RawCursor, RawEngine, RawTx},
    tables,
    typed::{Database, TypedDatabase},
};
use reth_hybrid_bench::persist::{ChainTip, PersistSpec, chain_tip, persist_blocks};
use reth_hybrid_hybrid::{HybridDb, HybridOptions};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{GenerateSpec, generate};
use reth_hybrid_rocksdb::RocksEngine;
use std::collections::{BTreeMap, BTreeSet};

fn mdbx(dir: &std::path::Path) -> MdbxEngine {
    MdbxEngine::open(dir, MdbxOptions::create().with_geometry(Geometry::SMALL)).expect("mdbx")
}

/// Every table's rows as stored bytes.
type TableRows = BTreeMap<Tables, Vec<(Vec<u8>, Vec<u8>)>>;
/// Blocks per account, and per (account, slot).
type Histories = (
    BTreeMap<Address, Vec<u64>>,
    BTreeMap<(Address, B256), Vec<u64>>,
);

/// The tables the hybrid keeps in RocksDB by default.
const ROUTED: [Tables; 3] = [
    Tables::TransactionHashNumbers,
    Tables::AccountsHistory,
    Tables::StoragesHistory,
];

/// Every row of every table, as stored bytes, read through the raw engine.
fn rows<E: RawEngine>(engine: &E) -> TableRows {
    rows_of(engine, &Tables::ALL)
}

fn rows_of<E: RawEngine>(engine: &E, tables: &[Tables]) -> TableRows {
    let tx = engine.begin_ro().expect("ro");
    tables
        .iter()
        .map(|t| {
            let mut c = tx.cursor(*t).expect("cursor");
            let mut out = Vec::new();
            let mut next = c.first().expect("first");
            while let Some(row) = next {
                out.push(row);
                next = c.next().expect("next");
            }
            (*t, out)
        })
        .collect()
}

/// Each account's and slot's history, read back from the shards: (blocks, shard keys in order).
fn history<D: Database>(db: &D) -> Histories {
    let tx = db.tx().expect("tx");
    let mut accounts: BTreeMap<Address, Vec<u64>> = BTreeMap::new();
    let mut c = tx.cursor_read::<tables::AccountsHistory>().expect("cursor");
    let mut next = c.first().expect("first");
    while let Some((k, shard)) = next {
        let blocks: Vec<u64> = shard.iter().collect();
        // A full shard is keyed by its highest block; only the last may be smaller.
        if k.highest_block_number != u64::MAX {
            assert_eq!(blocks.len(), NUM_OF_INDICES_IN_SHARD, "full shard {k:?}");
            assert_eq!(blocks.last(), Some(&k.highest_block_number));
        }
        accounts.entry(k.key).or_default().extend(blocks);
        next = c.next().expect("next");
    }
    let mut slots: BTreeMap<(Address, B256), Vec<u64>> = BTreeMap::new();
    let mut c = tx.cursor_read::<tables::StoragesHistory>().expect("cursor");
    let mut next = c.first().expect("first");
    while let Some((k, shard)) = next {
        slots
            .entry((k.address, k.sharded_key.key))
            .or_default()
            .extend(shard.iter());
        next = c.next().expect("next");
    }
    (accounts, slots)
}

/// What the changesets say the history must be.
fn changeset_history<D: Database>(db: &D) -> Histories {
    let tx = db.tx().expect("tx");
    let mut accounts: BTreeMap<Address, BTreeSet<u64>> = BTreeMap::new();
    let mut c = tx
        .cursor_read::<tables::AccountChangeSets>()
        .expect("cursor");
    let mut next = c.first().expect("first");
    while let Some((block, change)) = next {
        accounts.entry(change.address).or_default().insert(block);
        next = c.next().expect("next");
    }
    let mut slots: BTreeMap<(Address, B256), BTreeSet<u64>> = BTreeMap::new();
    let mut c = tx
        .cursor_read::<tables::StorageChangeSets>()
        .expect("cursor");
    let mut next = c.first().expect("first");
    while let Some((key, entry)) = next {
        slots
            .entry((key.address(), entry.key))
            .or_default()
            .insert(key.block_number());
        next = c.next().expect("next");
    }
    (flat(accounts), flat(slots))
}

fn flat<K: Ord>(m: BTreeMap<K, BTreeSet<u64>>) -> BTreeMap<K, Vec<u64>> {
    m.into_iter()
        .map(|(k, v)| (k, v.into_iter().collect()))
        .collect()
}

#[test]
fn mdbx_and_hybrid_persist_the_same_rows_and_consistent_history() {
    let (mdir, hdir) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let spec = GenerateSpec::new(1, 9);
    let mdbx_db = TypedDatabase::new(mdbx(mdir.path()));
    generate(&mdbx_db, &spec).expect("generate");
    let hybrid = TypedDatabase::new(
        HybridDb::open(
            mdbx(hdir.path()),
            RocksEngine::open_in_datadir(hdir.path()).expect("rocksdb"),
            hdir.path(),
            HybridOptions::default(),
        )
        .expect("hybrid"),
    );
    generate(&hybrid, &spec).expect("generate");

    // Two accounts touched in nearly every block, so their last shards fill and split.
    let full = chain_tip(&mdbx_db).expect("tip");
    assert_eq!(chain_tip(&hybrid).expect("tip"), full);
    assert!(
        !full.slots.is_empty(),
        "the generated datadir has storage history"
    );
    let tip = ChainTip {
        accounts: full.accounts[..2].to_vec(),
        slots: full.slots[..2].to_vec(),
        ..full
    };
    let blocks = 2 * NUM_OF_INDICES_IN_SHARD as u64 + 150;
    let persist = PersistSpec {
        blocks,
        txs_per_block: 2,
        blocks_per_commit: 97,
        slot_every: 2,
        seed: 5,
    };
    let m = persist_blocks(&mdbx_db, &tip, &persist).expect("persist on mdbx");
    let h = persist_blocks(&hybrid, &tip, &persist).expect("persist on hybrid");
    assert_eq!(
        (m.blocks, m.transactions, m.commits),
        (blocks, 2 * blocks, blocks.div_ceil(97))
    );
    assert_eq!(
        (h.blocks, h.transactions, h.commits),
        (m.blocks, m.transactions, m.commits)
    );

    // The tip moved by exactly the persisted blocks and transactions.
    let after = chain_tip(&mdbx_db).expect("tip");
    assert_eq!(after.next_block, tip.next_block + blocks);
    assert_eq!(after.next_tx, tip.next_tx + 2 * blocks);

    // History equals the changesets, on both; and some shard did split.
    for (name, got, want) in [
        ("mdbx", history(&mdbx_db), changeset_history(&mdbx_db)),
        ("hybrid", history(&hybrid), changeset_history(&hybrid)),
    ] {
        assert_eq!(
            got.0, want.0,
            "{name}: account history != account changesets"
        );
        assert_eq!(
            got.1, want.1,
            "{name}: storage history != storage changesets"
        );
    }
    let split = mdbx_db
        .tx()
        .expect("tx")
        .cursor_read::<tables::AccountsHistory>()
        .expect("cursor")
        .walk(None)
        .expect("walk")
        .filter_map(Result::ok)
        .any(|(k, _)| {
            k.highest_block_number > tip.next_block && k.highest_block_number != u64::MAX
        });
    assert!(split, "a last shard filled during the run and was split");

    // Row for row the same datadir, whichever layout took the writes.
    drop(mdbx_db);
    let hybrid_rows = {
        let engine = hybrid.engine();
        let mut all = rows(engine.primary());
        for (table, r) in rows_of(engine.follower(), &ROUTED) {
            all.get_mut(&table).expect("every table").extend(r);
        }
        all
    };
    let mut mdbx_rows =
        rows(&MdbxEngine::open(mdir.path(), MdbxOptions::read_write()).expect("reopen"));
    for (table, r) in &mut mdbx_rows {
        // The hybrid records its own control rows in Metadata.
        if *table == Tables::Metadata {
            r.retain(|(k, _)| !k.starts_with(b"reth_hybrid."));
        }
    }
    let mut hybrid_rows = hybrid_rows;
    for (table, r) in &mut hybrid_rows {
        r.sort();
        if *table == Tables::Metadata {
            r.retain(|(k, _)| !k.starts_with(b"reth_hybrid."));
        }
    }
    assert_eq!(mdbx_rows, hybrid_rows);
}
