//! The generator writes a datadir that is deterministic per seed, decodes row by row, and follows
//! reth's history-shard rules.

use reth_hybrid_api::{
    DbCursorRO, DbTx, Encode, Table, TableViewer, Tables,
    raw::{RawCursor, RawEngine, RawTx},
    table::compress_to_vec,
    tables::{AccountsHistory, StoragesHistory},
    typed::{Database, TypedDatabase, decode_key, decode_value},
};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{GenerateSpec, generate};
use std::collections::BTreeMap;

fn generated(
    scale: u64,
    seed: u64,
) -> (
    tempfile::TempDir,
    MdbxEngine,
    reth_hybrid_migrate::GenerateReport,
) {
    let dir = tempfile::tempdir().expect("tmp");
    let engine = MdbxEngine::open(
        dir.path(),
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )
    .expect("mdbx");
    let report = generate(
        &TypedDatabase::new(engine.clone()),
        &GenerateSpec::new(scale, seed),
    )
    .expect("generate");
    (dir, engine, report)
}

/// Rows and a checksum of every key and value, per table.
fn fingerprint(engine: &MdbxEngine) -> BTreeMap<Tables, (usize, u32)> {
    let tx = engine.begin_ro().expect("ro");
    let mut out = BTreeMap::new();
    for t in Tables::ALL {
        let mut c = tx.cursor(t).expect("cursor");
        let (mut rows, mut crc) = (0, 0u32);
        let mut next = c.first().expect("first");
        while let Some((k, v)) = next {
            crc = crc32c::crc32c_append(crc32c::crc32c_append(crc, &k), &v);
            rows += 1;
            next = c.next().expect("next");
        }
        out.insert(t, (rows, crc));
    }
    out
}

#[test]
fn same_seed_gives_the_same_datadir_and_another_seed_does_not() {
    let (_a, ea, ra) = generated(1, 7);
    let (_b, eb, rb) = generated(1, 7);
    let (_c, ec, _) = generated(1, 8);
    assert_eq!(ra, rb);
    assert_eq!(fingerprint(&ea), fingerprint(&eb));
    assert_ne!(fingerprint(&ea), fingerprint(&ec));
    assert_eq!((ra.blocks, ra.transactions), (100, 800));
    let fp = fingerprint(&ea);
    assert_eq!(fp[&Tables::TransactionHashNumbers].0, 800);
    assert_eq!(
        fp[&Tables::BlockBodyIndices].0,
        101,
        "genesis and 100 blocks"
    );
    assert_eq!(fp[&Tables::PlainAccountState].0 as u64, ra.accounts);
    assert_eq!(fp[&Tables::PlainStorageState].0 as u64, ra.storage_slots);
    assert!(ra.storage_slots > 0 && fp[&Tables::StorageChangeSets].0 > 0);
}

struct DecodeAll<'a>(&'a <MdbxEngine as RawEngine>::Tx);

impl TableViewer<usize> for DecodeAll<'_> {
    type Error = String;
    fn view<T: Table>(&self) -> Result<usize, String> {
        let table: Tables = T::NAME.parse().map_err(|e| format!("{e}"))?;
        let mut c = self.0.cursor(table).map_err(|e| e.to_string())?;
        let mut rows = 0;
        let mut next = c.first().map_err(|e| e.to_string())?;
        while let Some((k, v)) = next {
            let key = decode_key::<T>(&k).map_err(|e| e.to_string())?;
            let value = decode_value::<T>(&k, &v).map_err(|e| e.to_string())?;
            if key.encode().as_ref() != k.as_slice() || compress_to_vec(&value) != v {
                return Err(format!("{}: row does not re-encode to its bytes", T::NAME));
            }
            rows += 1;
            next = c.next().map_err(|e| e.to_string())?;
        }
        Ok(rows)
    }
}

#[test]
fn every_row_decodes_and_history_follows_reths_shard_rules() {
    // Scale 25: 2500 blocks, so the coinbase (changed in every block) has a closed shard.
    let (_dir, engine, report) = generated(25, 1);
    let ro = engine.begin_ro().expect("ro");
    for t in Tables::ALL {
        t.view(&DecodeAll(&ro))
            .unwrap_or_else(|e| panic!("{t}: {e}"));
    }
    let db = TypedDatabase::new(engine);
    let tx = db.tx().expect("ro");
    let mut closed = 0;
    let mut last_per_key = BTreeMap::new();
    for row in tx
        .cursor_read::<AccountsHistory>()
        .expect("cursor")
        .walk(None)
        .expect("walk")
    {
        let (key, list) = row.expect("row");
        assert!(!list.is_empty() && list.len() <= 2000);
        if key.highest_block_number != u64::MAX {
            assert_eq!(
                (list.len(), list.max()),
                (2000, Some(key.highest_block_number))
            );
            closed += 1;
        }
        last_per_key.insert(key.key, key.highest_block_number);
    }
    assert!(closed >= 1, "the coinbase history spans two shards");
    assert!(
        last_per_key.values().all(|h| *h == u64::MAX),
        "every key ends at u64::MAX"
    );
    assert_eq!(
        tx.entries::<AccountsHistory>().expect("entries") as u64,
        report.account_history_shards
    );
    assert_eq!(
        tx.entries::<StoragesHistory>().expect("entries") as u64,
        report.storage_history_shards
    );
}
