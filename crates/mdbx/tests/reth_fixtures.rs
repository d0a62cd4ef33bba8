//! Datadirs written by real reth v2.2 (`../shared/fixtures/`): every row of every table decodes
//! with our models and re-encodes to the exact bytes reth wrote; row counts match MDBX's own
//! statistics (`ENTRIES.txt`). Tests read a copy: opening MDBX writes its lock file.

use reth_hybrid_api::{
    Decode, DupSort, Encode, Table, TableViewer, Tables,
    models::{STORAGE_SETTINGS_KEY, StorageSettings},
    raw::{RawCursor, RawEngine, RawTx},
    table::compress_to_vec,
    tables::Metadata,
    test_support,
    typed::{Database, DbCursorRO, DbTx, TypedDatabase, decode_key, decode_value},
};
use reth_hybrid_mdbx::{MdbxEngine, MdbxTx};
use std::{collections::BTreeMap, fs, path::Path};

/// Copies `<fixture>/db` into a fresh temp datadir.
fn copy_datadir(fixture: &Path) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    let db = tmp.path().join("db");
    fs::create_dir_all(&db).expect("mkdir");
    for name in ["mdbx.dat", "database.version"] {
        fs::copy(fixture.join("db").join(name), db.join(name)).expect("copy fixture file");
    }
    tmp
}

fn expected_entries(fixture: &Path) -> BTreeMap<String, usize> {
    let text = fs::read_to_string(fixture.join("ENTRIES.txt")).expect("ENTRIES.txt");
    text.lines()
        .filter_map(|l| {
            let (name, n) = l.split_once(' ')?;
            Some((name.to_string(), n.trim().parse().ok()?))
        })
        .filter(|(name, _)| name != "Main")
        .collect()
}

/// Walks a table with a raw cursor; decodes and re-encodes every row; counts rows.
struct DecodeEveryRow<'a> {
    tx: &'a MdbxTx,
}

impl DecodeEveryRow<'_> {
    fn walk<T: Table>(
        &self,
        mut on_row: impl FnMut(&[u8], &[u8], &T::Value),
    ) -> Result<usize, String> {
        let table: Tables = T::NAME.parse().map_err(|e| format!("{e}"))?;
        let mut cursor = self.tx.cursor(table).map_err(|e| e.to_string())?;
        let mut rows = 0;
        let mut next = cursor.first().map_err(|e| e.to_string())?;
        while let Some((k, v)) = next {
            let key = decode_key::<T>(&k).map_err(|e| e.to_string())?;
            let value = decode_value::<T>(&k, &v).map_err(|e| e.to_string())?;
            let key_again = key.encode();
            if key_again.as_ref() != k.as_slice() {
                return Err(format!(
                    "{}: key {} re-encodes to {}",
                    T::NAME,
                    hex::encode(&k),
                    hex::encode(key_again.as_ref())
                ));
            }
            let value_again = compress_to_vec(&value);
            if value_again != v {
                return Err(format!(
                    "{}: value at {} re-encodes differently",
                    T::NAME,
                    hex::encode(&k)
                ));
            }
            on_row(&k, &v, &value);
            rows += 1;
            next = cursor.next().map_err(|e| e.to_string())?;
        }
        Ok(rows)
    }
}

impl TableViewer<usize> for DecodeEveryRow<'_> {
    type Error = String;

    fn view<T: Table>(&self) -> Result<usize, String> {
        self.walk::<T>(|_, _, _| {})
    }

    fn view_dupsort<T: DupSort>(&self) -> Result<usize, String> {
        let mut bad = None;
        let rows = self.walk::<T>(|k, v, _| {
            // The subkey is a prefix of the value; decoding that prefix must work.
            let Some(len) = subkey_len::<T>() else { return };
            if v.len() < len || T::SubKey::decode(&v[..len]).is_err() {
                bad.get_or_insert_with(|| {
                    format!(
                        "{}: value at {} has no valid subkey prefix",
                        T::NAME,
                        hex::encode(k)
                    )
                });
            }
        })?;
        bad.map_or(Ok(rows), Err)
    }
}

/// Byte length of a fixed-size subkey encoding (all of reth's subkeys are fixed size).
fn subkey_len<T: DupSort>() -> Option<usize> {
    let len = std::mem::size_of::<<T::SubKey as Encode>::Encoded>();
    (len <= 65).then_some(len)
}

#[test]
fn reth_v2_2_fixtures_decode_every_row() {
    let Some(fixtures) = test_support::fixture_datadirs(
        "reth_v2_2_fixtures_decode_every_row",
        Path::new(env!("CARGO_MANIFEST_DIR")),
    ) else {
        return;
    };
    for fixture in fixtures {
        let expected = expected_entries(&fixture);
        let copy = copy_datadir(&fixture);
        let engine = MdbxEngine::open_read_only(copy.path()).expect("open fixture copy read-only");
        let tx = engine.begin_ro().expect("read tx");
        let mut total = 0;
        println!(
            "fixture {}:",
            fixture.file_name().unwrap_or_default().to_string_lossy()
        );
        for table in Tables::ALL {
            if !engine.has_table(table) {
                // reth v2.2 predates the two block-access-list tables.
                assert!(
                    !expected.contains_key(table.name()),
                    "{table} listed in ENTRIES.txt but not opened"
                );
                println!("  {table:<28} absent (table added after reth v2.2)");
                continue;
            }
            let rows = table
                .view(&DecodeEveryRow { tx: &tx })
                .unwrap_or_else(|e| panic!("{}: {e}", fixture.display()));
            assert_eq!(
                tx.entries(table).expect("entries"),
                rows,
                "{table}: MDBX entries vs walked rows"
            );
            assert_eq!(
                Some(&rows),
                expected.get(table.name()),
                "{table}: rows vs ENTRIES.txt"
            );
            println!("  {table:<28} {rows:>6} rows decoded");
            total += rows;
        }
        assert!(total > 0, "{}: no rows at all", fixture.display());

        // reth's v1 layout: storage_settings says storage_v2 = false.
        let db = TypedDatabase::new(engine.clone());
        let settings = db
            .view(|tx| tx.get::<Metadata>(STORAGE_SETTINGS_KEY.to_string()))
            .expect("view")
            .expect("read")
            .expect("storage_settings row");
        assert_eq!(
            StorageSettings::from_json_bytes(&settings).expect("json"),
            StorageSettings { storage_v2: false }
        );
    }
}

#[test]
fn dev_fixture_history_shards_follow_reths_rules() {
    let Some(fixture) = test_support::fixture_datadir(
        "dev_fixture_history_shards_follow_reths_rules",
        Path::new(env!("CARGO_MANIFEST_DIR")),
        "reth-v2.2-dev-v1",
    ) else {
        return;
    };
    let copy = copy_datadir(&fixture);
    let db = TypedDatabase::new(MdbxEngine::open_read_only(copy.path()).expect("open"));
    let tx = db.tx().expect("tx");
    let mut cursor = tx
        .cursor_read::<reth_hybrid_api::tables::AccountsHistory>()
        .expect("cursor");
    let mut last_shard_per_address = BTreeMap::new();
    let mut closed_shards = 0;
    for row in cursor.walk(None).expect("walk") {
        let (key, list) = row.expect("row decodes");
        assert!(
            !list.is_empty() && list.len() <= 2000,
            "shard sizes are 1..=2000"
        );
        if key.highest_block_number != u64::MAX {
            assert_eq!(
                list.max(),
                Some(key.highest_block_number),
                "a closed shard is keyed by its highest block"
            );
            assert_eq!(list.len(), 2000, "only full shards are closed");
            closed_shards += 1;
        }
        last_shard_per_address.insert(key.key, key.highest_block_number);
    }
    assert!(
        closed_shards >= 1,
        "the sender's history spans two shards in this fixture"
    );
    assert!(
        last_shard_per_address.values().all(|h| *h == u64::MAX),
        "every address ends with its u64::MAX shard"
    );
}
