//! reth-hybrid's own `Metadata` rows (`reth_hybrid.*`) through the router: a `Metadata` clear
//! keeps them, and a write or delete of one is refused with nothing changed, so no caller of the
//! database (reth's `db clear`, a stage, a tool) can leave a datadir that no longer opens.

use super::{
    Open,
    workload::{commit, visible},
};
use crate::{CONTROL_KEY_PREFIX, control::is_control_key};
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawCursorMut, RawEngine, RawReplay, RawTx, RawTxMut},
};
use std::collections::BTreeMap;

/// reth's rows in `Metadata` as the test writes them (SCALE-framed like reth's values).
const RETH_ROWS: [&[u8]; 2] = [b"prune_modes", b"storage_settings"];

/// `Metadata` rows by key.
type Rows = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every `Metadata` row of one engine, by key.
fn metadata<E: RawEngine>(engine: &E) -> Rows {
    let tx = engine.begin_ro().expect("ro");
    let mut cursor = tx.cursor(Tables::Metadata).expect("cursor");
    let mut rows = BTreeMap::new();
    let mut next = cursor.first().expect("first");
    while let Some((k, v)) = next {
        rows.insert(k, v);
        next = cursor.next().expect("next");
    }
    rows
}

/// The control rows of both engines.
fn control_rows<P: RawEngine, F: RawReplay>(db: &crate::HybridDb<P, F>) -> (Rows, Rows) {
    let only_control = |rows: Rows| {
        rows.into_iter()
            .filter(|(k, _)| is_control_key(k))
            .collect()
    };
    (
        only_control(metadata(db.primary())),
        only_control(metadata(db.follower())),
    )
}

fn refused(result: Result<impl std::fmt::Debug, reth_hybrid_api::DatabaseError>, what: &str) {
    match result {
        Ok(v) => panic!("{what} was allowed ({v:?})"),
        Err(e) => assert!(
            e.to_string().contains("is reth-hybrid's own"),
            "{what}: the error names the cause: {e}"
        ),
    }
}

/// Commits, reth's rows in `Metadata`, a `Metadata` clear in a transaction of its own (no
/// RocksDB writes beside it) and then one with cross-engine writes: reth's rows go, every
/// control row stays (those the clear's own commit moves on excepted), and the datadir reopens
/// with all its commits. Then each way of writing or deleting a control row is refused, and the
/// transaction that tried commits nothing of it.
pub fn survive_a_metadata_clear_and_refuse_writes<P: RawEngine, F: RawReplay>(open: Open<P, F>) {
    let dir = tempfile::tempdir().expect("tmp");
    let db = open(dir.path()).expect("open");
    for i in 1..=3 {
        commit(&db, i).expect("commit");
    }
    let tx = db.begin_rw().expect("rw");
    for key in RETH_ROWS {
        tx.put(Tables::Metadata, key, &[4, 1, 2, 3, 4])
            .expect("reth's row");
    }
    tx.commit().expect("commit reth's rows");
    let (primary_before, follower_before) = control_rows(&db);
    assert!(
        !primary_before.is_empty(),
        "MDBX holds the commit sequences and the layout"
    );

    // A clear alone: the commit touches nothing in RocksDB.
    let tx = db.begin_rw().expect("rw");
    tx.clear(Tables::Metadata).expect("clear Metadata");
    for key in RETH_ROWS {
        assert_eq!(tx.get(Tables::Metadata, key).expect("get"), None);
    }
    tx.commit().expect("commit the clear");
    let (primary_after, follower_after) = control_rows(&db);
    // Every control row is still there (the clear's own commit moves the sequences and the
    // applied ring on, and may retire pending rows a RocksDB sync made needless), the layout
    // unchanged.
    let kept = |before: &Rows, after: &Rows, engine| {
        for key in before.keys() {
            if key.starts_with(crate::control::PENDING_KEY_PREFIX.as_bytes()) {
                continue;
            }
            assert!(
                after.contains_key(key),
                "{engine}'s control row {} survives a Metadata clear",
                String::from_utf8_lossy(key)
            );
        }
    };
    kept(&primary_before, &primary_after, "MDBX");
    kept(&follower_before, &follower_after, "RocksDB");
    let layout_key = crate::layout::LAYOUT_KEY.as_bytes();
    assert_eq!(
        primary_after.get(layout_key),
        primary_before.get(layout_key),
        "the layout is unchanged"
    );
    for key in RETH_ROWS {
        let tx = db.begin_ro().expect("ro");
        assert_eq!(
            tx.get(Tables::Metadata, key).expect("get"),
            None,
            "reth's rows go"
        );
    }

    // A clear beside a cross-engine commit.
    let tx = db.begin_rw().expect("rw");
    tx.put(Tables::Metadata, RETH_ROWS[0], &[4, 9, 9, 9, 9])
        .expect("reth's row");
    tx.clear(Tables::Metadata).expect("clear Metadata");
    crate::suites::workload::write_commit(&tx, 4);
    tx.commit().expect("commit the clear with writes");

    // Each way of changing a control row through the router is refused.
    let tx = db.begin_rw().expect("rw");
    refused(
        tx.delete(Tables::Metadata, layout_key, None),
        "deleting the layout",
    );
    refused(
        tx.put(
            Tables::Metadata,
            crate::control::FOLLOWER_SEQ_KEY.as_bytes(),
            &[8, 0, 0, 0, 0, 0, 0, 0, 0],
        ),
        "overwriting follower_seq",
    );
    refused(
        tx.append(Tables::Metadata, b"reth_hybrid.zzz", &[0]),
        "appending a control row",
    );
    let mut cursor = tx.cursor_mut(Tables::Metadata).expect("cursor");
    let at = cursor
        .seek(CONTROL_KEY_PREFIX.as_bytes())
        .expect("seek")
        .expect("a control row");
    assert!(is_control_key(&at.0));
    refused(
        cursor.delete_current(),
        "deleting a control row at a cursor",
    );
    refused(
        cursor.upsert(layout_key, b"{}"),
        "upserting the layout at a cursor",
    );
    drop(cursor);
    tx.commit()
        .expect("the refused writes left nothing to commit");
    let (primary_now, _) = control_rows(&db);
    assert_eq!(
        primary_now.get(layout_key),
        primary_before.get(layout_key),
        "the layout is unchanged"
    );
    drop(db);

    let db = open(dir.path()).expect("the datadir opens after Metadata clears");
    let (blocks, txs) = visible(&db);
    assert_eq!(blocks, (1..=4).collect(), "every commit survived");
    assert_eq!(txs, (1..=4).collect());
    commit(&db, 5).expect("commits go on");
}
