//! The scale generator and reth's historical lookup, checked on real MDBX against answers
//! counted straight from the changesets, and on the migrated hybrid against MDBX.

use reth_hybrid_api::{
    DbCursorRO, DbTx, EngineKind,
    models::{Address, B256, U256},
    tables,
    typed::{Database, TypedDatabase},
};
use reth_hybrid_bench::{
    KeyGen,
    scale::{ScaleSpec, account_nonce_at, generate_scale, slot_value_at},
};
use reth_hybrid_hybrid::{HybridDb, HybridOptions};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{MigrateRequest, NoProgress, migrate, verify::verify};
use reth_hybrid_rocksdb::RocksEngine;
use std::collections::BTreeMap;

/// Change blocks per account and per slot, from the changesets alone.
type Changes = (
    BTreeMap<Address, Vec<u64>>,
    BTreeMap<(Address, B256), Vec<u64>>,
);

fn changes<D: Database>(db: &D) -> Changes {
    let tx = db.tx().expect("tx");
    let mut accounts: BTreeMap<Address, Vec<u64>> = BTreeMap::new();
    for row in tx
        .cursor_read::<tables::AccountChangeSets>()
        .expect("cursor")
        .walk(None)
        .expect("walk")
    {
        let (block, change) = row.expect("row");
        accounts.entry(change.address).or_default().push(block);
    }
    let mut slots: BTreeMap<(Address, B256), Vec<u64>> = BTreeMap::new();
    for row in tx
        .cursor_read::<tables::StorageChangeSets>()
        .expect("cursor")
        .walk(None)
        .expect("walk")
    {
        let (key, entry) = row.expect("row");
        slots
            .entry((key.address(), entry.key))
            .or_default()
            .push(key.block_number());
    }
    (accounts, slots)
}

#[test]
fn historical_lookups_answer_what_the_changesets_say_on_mdbx_and_on_the_hybrid() {
    let dir = tempfile::tempdir().expect("tmp");
    let stock = dir.path().join("stock");
    let spec = ScaleSpec {
        transactions: 450_000,
        seed: 3,
    };
    let data = {
        let engine = MdbxEngine::open(&stock, MdbxOptions::create().with_geometry(Geometry::SMALL))
            .expect("create");
        generate_scale(&TypedDatabase::new(engine), &spec, 1_000).expect("generate")
    };
    assert_eq!(data.blocks, 2_250);
    assert_eq!(data.hits.len(), 1_000);
    assert_eq!(data.addresses.len(), spec.accounts());
    assert!(
        data.account_shards > data.addresses.len() as u64,
        "hot accounts have several shards"
    );
    let mdbx =
        TypedDatabase::new(MdbxEngine::open(&stock, MdbxOptions::read_write()).expect("open"));
    let (account_changes, slot_changes) = changes(&mdbx);
    assert_eq!(
        account_changes.values().map(Vec::len).sum::<usize>() as u64,
        data.account_changes
    );

    // Draw lookups, including blocks right at a change, and check each against the count of
    // changes before the block (the generator's before-values count them).
    let mut g = KeyGen::new(11);
    let mut queries = Vec::new();
    for _ in 0..3_000 {
        let a = data.addresses[(g.next_u64() % data.addresses.len() as u64) as usize];
        let blocks = &account_changes[&a];
        let block = match g.next_u64() % 3 {
            0 => blocks[(g.next_u64() % blocks.len() as u64) as usize],
            _ => 1 + g.next_u64() % (data.blocks + 1),
        };
        queries.push((a, block));
    }
    let tx = mdbx.tx().expect("tx");
    let mut answers = Vec::new();
    for (a, block) in &queries {
        let want = account_changes[a].iter().filter(|b| **b < *block).count() as u64;
        let got = account_nonce_at(&tx, *a, *block).expect("lookup");
        assert_eq!(got, Some(want), "account {a} at block {block}");
        answers.push(got.map(U256::from));
    }
    for i in 0..2_000 {
        let (a, s) = data.slots[i % data.slots.len()];
        let block = 1 + g.next_u64() % (data.blocks + 1);
        let want = slot_changes[&(a, s)].iter().filter(|b| **b < block).count();
        let got = slot_value_at(&tx, a, s, block).expect("lookup");
        assert_eq!(got, Some(U256::from(want)), "slot {a}/{s} at block {block}");
        queries.push((a, block));
        answers.push(got);
    }
    for (hash, n) in &data.hits {
        assert_eq!(
            tx.get::<tables::TransactionHashNumbers>(*hash)
                .expect("get"),
            Some(*n)
        );
    }
    drop(tx);
    drop(mdbx);

    // Migrated: verify passes, and the hybrid answers the same.
    migrate(
        &stock,
        &MigrateRequest::new(EngineKind::RocksDb),
        &NoProgress,
    )
    .expect("migrate");
    assert!(verify(&stock, &NoProgress).expect("verify").passed());
    let hybrid = TypedDatabase::new(
        HybridDb::open(
            MdbxEngine::open(&stock, MdbxOptions::read_write()).expect("mdbx"),
            RocksEngine::open_in_datadir(&stock).expect("rocksdb"),
            &stock,
            HybridOptions::default(),
        )
        .expect("hybrid"),
    );
    let tx = hybrid.tx().expect("tx");
    for (i, (a, block)) in queries[..3_000].iter().enumerate() {
        let got = account_nonce_at(&tx, *a, *block).expect("lookup");
        assert_eq!(got.map(U256::from), answers[i]);
    }
    for i in 0..2_000 {
        let (a, s) = data.slots[i % data.slots.len()];
        let block = queries[3_000 + i].1;
        assert_eq!(
            slot_value_at(&tx, a, s, block).expect("lookup"),
            answers[3_000 + i]
        );
    }
    for (hash, n) in &data.hits {
        assert_eq!(
            tx.get::<tables::TransactionHashNumbers>(*hash)
                .expect("get"),
            Some(*n)
        );
    }
}
