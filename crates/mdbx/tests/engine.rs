//! The MDBX engine's own promises: reth's datadir format, the storage lock, snapshots, and
//! read-your-writes inside a write transaction.

use reth_hybrid_api::{
    DbCursorRO, DbCursorRW, DbDupCursorRO, DbTx, DbTxMut, Tables,
    error::codes,
    models::{Address, B256, StorageEntry, U256},
    raw::{RawCursorMut, RawEngine, RawTx, RawTxMut},
    tables::{CanonicalHeaders, PlainStorageState},
    typed::{Database, TypedDatabase},
};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxError, MdbxOptions};
use std::fs;

fn create(dir: &std::path::Path) -> TypedDatabase<MdbxEngine> {
    TypedDatabase::new(
        MdbxEngine::open(dir, MdbxOptions::create().with_geometry(Geometry::SMALL))
            .expect("create"),
    )
}

#[test]
fn create_writes_reth_datadir_layout() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = create(dir.path());
    assert_eq!(
        fs::read_to_string(dir.path().join("db/database.version")).expect("version"),
        "2"
    );
    assert!(dir.path().join("db/mdbx.dat").exists());
    let lock = fs::read_to_string(dir.path().join("db/lock")).expect("lock file");
    assert_eq!(
        lock.lines().next(),
        Some(std::process::id().to_string().as_str())
    );
    let engine = db.engine();
    assert!(Tables::ALL.iter().all(|t| engine.has_table(*t)));
    drop(db);
    assert!(
        !dir.path().join("db/lock").exists(),
        "lock removed when the engine closes"
    );
}

#[test]
fn write_transaction_reads_its_own_writes_and_readers_see_snapshots() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = create(dir.path());
    let before = db.tx().expect("ro");
    let tx = db.tx_mut().expect("rw");
    tx.put::<CanonicalHeaders>(1, B256::repeat_byte(1))
        .expect("put");
    assert_eq!(
        tx.get::<CanonicalHeaders>(1).expect("get"),
        Some(B256::repeat_byte(1))
    );
    let mut cursor = tx.cursor_read::<CanonicalHeaders>().expect("cursor");
    assert_eq!(
        cursor.first().expect("first"),
        Some((1, B256::repeat_byte(1)))
    );
    drop(cursor);
    tx.commit().expect("commit");
    assert_eq!(
        before.get::<CanonicalHeaders>(1).expect("get"),
        None,
        "older snapshot does not see the commit"
    );
    assert_eq!(
        db.tx()
            .expect("ro")
            .get::<CanonicalHeaders>(1)
            .expect("get"),
        Some(B256::repeat_byte(1))
    );
}

/// A tool's read-write open keeps the datadir's geometry: libmdbx preallocates each growth step,
/// so reth's 4 GiB step imposed on a small datadir would take 4 GiB of disk at its next commit.
#[test]
fn a_read_write_open_keeps_the_recorded_geometry() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().expect("tmp");
    drop(create(dir.path()));
    let db = TypedDatabase::new(
        MdbxEngine::open(dir.path(), MdbxOptions::read_write()).expect("reopen"),
    );
    let tx = db.tx_mut().expect("rw");
    for n in 0..20_000u64 {
        tx.put::<CanonicalHeaders>(n, B256::repeat_byte(7))
            .expect("put");
    }
    tx.commit().expect("commit");
    let stat = db.engine().env_stat().expect("stat");
    assert_eq!(
        stat.growth_step_bytes,
        Geometry::SMALL.growth_step_bytes as u64
    );
    let allocated = fs::metadata(dir.path().join("db/mdbx.dat"))
        .expect("mdbx.dat")
        .blocks()
        * 512;
    assert!(
        allocated < 64 << 20,
        "mdbx.dat takes {allocated} bytes of disk after a small commit"
    );
}

#[test]
fn dupsort_upsert_adds_a_duplicate_and_seek_by_subkey_finds_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = create(dir.path());
    let addr = Address::repeat_byte(7);
    let slot = |b: u8| B256::repeat_byte(b);
    let tx = db.tx_mut().expect("rw");
    let mut cursor = tx.cursor_dup_write::<PlainStorageState>().expect("cursor");
    cursor
        .upsert(
            addr,
            &StorageEntry {
                key: slot(2),
                value: U256::from(20),
            },
        )
        .expect("upsert");
    cursor
        .upsert(
            addr,
            &StorageEntry {
                key: slot(1),
                value: U256::from(10),
            },
        )
        .expect("upsert");
    cursor
        .upsert(
            addr,
            &StorageEntry {
                key: slot(1),
                value: U256::from(11),
            },
        )
        .expect("upsert adds, not replaces");
    assert_eq!(tx.entries::<PlainStorageState>().expect("entries"), 3);
    let found = cursor
        .seek_by_key_subkey(addr, slot(2))
        .expect("seek")
        .expect("found");
    assert_eq!(
        found,
        StorageEntry {
            key: slot(2),
            value: U256::from(20)
        }
    );
    // The first duplicate >= subkey bytes: slot 1 with value 10 sorts before value 11.
    let first = cursor
        .seek_by_key_subkey(addr, slot(1))
        .expect("seek")
        .expect("found");
    assert_eq!(first.value, U256::from(10));
    let err = cursor
        .insert(
            addr,
            &StorageEntry {
                key: slot(2),
                value: U256::from(20),
            },
        )
        .expect_err("exact pair exists");
    assert_eq!(err.code(), Some(codes::KEY_EXIST));
}

#[test]
fn out_of_order_append_fails_with_key_mismatch() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = create(dir.path());
    let tx = db.tx_mut().expect("rw");
    let mut cursor = tx.cursor_write::<CanonicalHeaders>().expect("cursor");
    cursor.append(5, &B256::ZERO).expect("append");
    let err = cursor.append(4, &B256::ZERO).expect_err("out of order");
    assert_eq!(err.code(), Some(codes::KEY_MISMATCH));
    assert!(
        err.to_string().contains("CanonicalHeaders"),
        "error names the table: {err}"
    );
}

#[test]
fn second_read_write_open_is_refused_while_a_live_process_holds_the_lock() {
    let dir = tempfile::tempdir().expect("tmp");
    drop(create(dir.path()));
    // A lock written by a live process other than us (our parent, with its real start time).
    let parent = std::os::unix::process::parent_id();
    let uid =
        reth_hybrid_mdbx::lock::ProcessUid::of(parent).expect("parent process is visible in /proc");
    fs::write(
        dir.path().join("db/lock"),
        format!("{}\n{}", uid.pid, uid.start_time),
    )
    .expect("write lock");
    let before = fs::read(dir.path().join("db/mdbx.dat")).expect("read");
    match MdbxEngine::open(dir.path(), MdbxOptions::read_write()) {
        Err(MdbxError::Locked { pid, .. }) => assert_eq!(pid, parent),
        other => panic!("expected Locked, got {other:?}"),
    }
    assert_eq!(
        fs::read(dir.path().join("db/mdbx.dat")).expect("read"),
        before,
        "refusal changes nothing"
    );
    // Read-only opens refuse too (reth's libmdbx lock format differs from ours).
    match MdbxEngine::open_read_only(dir.path()) {
        Err(MdbxError::Locked { pid, .. }) => assert_eq!(pid, parent),
        other => panic!("expected Locked for a read-only open, got {other:?}"),
    }
    // A stale lock (same pid, another start time) is not live.
    fs::write(
        dir.path().join("db/lock"),
        format!("{}\n{}", uid.pid, uid.start_time + 1000),
    )
    .expect("write lock");
    MdbxEngine::open(dir.path(), MdbxOptions::read_write()).expect("stale lock is ignored");
}

#[test]
fn unsupported_database_version_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    drop(create(dir.path()));
    fs::write(dir.path().join("db/database.version"), "1").expect("write");
    match MdbxEngine::open(dir.path(), MdbxOptions::read_write()) {
        Err(e @ MdbxError::UnsupportedVersion { .. }) => {
            assert!(e.to_string().contains("version 1"))
        }
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
}

#[test]
fn missing_datadir_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tmp");
    let err = MdbxEngine::open_read_only(dir.path()).expect_err("nothing there");
    assert!(err.to_string().contains("no MDBX database"), "{err}");
    assert!(!dir.path().join("db").exists(), "refusal creates nothing");
}

#[test]
fn transactions_and_cursors_are_send_sync_static() {
    fn assert_send_sync_static<T: Send + Sync + 'static>() {}
    fn assert_send_static<T: Send + 'static>() {}
    assert_send_sync_static::<<TypedDatabase<MdbxEngine> as Database>::TX>();
    assert_send_sync_static::<<TypedDatabase<MdbxEngine> as Database>::TXMut>();
    assert_send_static::<<MdbxEngine as RawEngine>::Tx>();
    assert_send_static::<<<MdbxEngine as RawEngine>::Tx as RawTx>::Cursor>();
    // A read transaction used from another thread.
    let dir = tempfile::tempdir().expect("tmp");
    let db = create(dir.path());
    db.update(|tx| tx.put::<CanonicalHeaders>(3, B256::repeat_byte(3)))
        .expect("update")
        .expect("put");
    let tx = db.tx().expect("ro");
    let got = std::thread::spawn(move || tx.get::<CanonicalHeaders>(3))
        .join()
        .expect("join")
        .expect("get");
    assert_eq!(got, Some(B256::repeat_byte(3)));
}

/// The numbers reth's unwind waits on (`ReaderTxnTracker`): MDBX's reader table, as reth's
/// `DatabaseEnv` reports it, through the raw engine, the typed database and the hybrid alike.
#[test]
fn reader_txnids_are_mdbx_s_reader_table() {
    use reth_hybrid_api::raw::{RawEngine, RawTx, RawTxMut};
    let dir = tempfile::tempdir().expect("tmp");
    let db = create(dir.path());
    let engine = db.engine();
    let commit = |i: u8| {
        let tx = engine.begin_rw().expect("rw");
        tx.put(reth_hybrid_api::Tables::CanonicalHeaders, &[i; 8], &[i; 32])
            .expect("put");
        tx.commit().expect("commit");
    };
    commit(1);
    let reader = engine.begin_ro().expect("ro");
    commit(2);
    let last = engine.last_txnid().expect("last committed txnid");
    let oldest = engine.oldest_reader_txnid().expect("a reader is open");
    assert!(
        oldest < last,
        "the reader predates the last commit ({oldest} vs {last})"
    );
    assert_eq!(
        (db.oldest_reader_txnid(), db.last_txnid()),
        (Some(oldest), Some(last)),
        "the typed database reports the engine's numbers"
    );
    reader.abort();
    assert!(
        engine.oldest_reader_txnid().is_none_or(|o| o >= last),
        "with no reader left, nothing older than the last commit is reported"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// The bulk read hands over exactly the rows `next` walks, in order, across batch ends, in a
    /// plain and a dupsort table.
    #[test]
    fn next_rows_walks_what_next_walks(
        rows in proptest::collection::btree_set(
            (proptest::collection::vec(0u8..4, 1..3), proptest::collection::vec(0u8..4, 0..3)),
            0..60,
        ),
        limit in 1usize..9,
    ) {
        use reth_hybrid_api::raw::{RawCursor, RawTxMut};
        let dir = tempfile::tempdir().expect("tmp");
        let engine = MdbxEngine::open(dir.path(), MdbxOptions::create().with_geometry(Geometry::SMALL))
            .expect("create");
        // AccountChangeSets is dupsort (any value bytes); Bytecodes is a plain table.
        for table in [Tables::Bytecodes, Tables::AccountChangeSets] {
            let tx = engine.begin_rw().expect("rw");
            for (k, v) in &rows {
                tx.put(table, k, v).expect("put");
            }
            tx.commit().expect("commit");
            let tx = engine.begin_ro().expect("ro");
            let mut expected = Vec::new();
            let mut c = tx.cursor(table).expect("cursor");
            let mut next = c.first().expect("first");
            while let Some(row) = next {
                expected.push(row);
                next = c.next().expect("next");
            }
            let mut bulk = tx.cursor(table).expect("cursor");
            let mut got: Vec<(Vec<u8>, Vec<u8>)> = bulk.first().expect("first").into_iter().collect();
            loop {
                let seen = bulk
                    .next_rows(limit, |k, v| got.push((k.to_vec(), v.to_vec())))
                    .expect("next_rows");
                if seen < limit {
                    break;
                }
            }
            proptest::prop_assert_eq!(&got, &expected, "{}", table);
        }
    }
}

/// MDBX relies on `append_last`'s promise (`MDBX_APPEND | MDBX_APPENDDUP`): a row whose key sorts
/// below the table's last key is refused with `KEY_MISMATCH` and changes nothing, where
/// `append_dup` would add it.
#[test]
fn append_last_refuses_a_key_below_the_last() {
    let dir = tempfile::tempdir().expect("tmp");
    let engine = MdbxEngine::open(
        dir.path(),
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )
    .expect("create");
    let table = Tables::PlainStorageState;
    let (low, high) = (vec![1u8; 20], vec![3u8; 20]);
    let tx = engine.begin_rw().expect("rw");
    let mut c = tx.cursor_mut(table).expect("cursor");
    c.append_last(&high, &[0x0b]).expect("into an empty table");
    let err = c
        .append_last(&low, &[0x0f])
        .expect_err("below the last key");
    assert_eq!(err.code(), Some(codes::KEY_MISMATCH), "{err}");
    assert_eq!(tx.entries(table).expect("entries"), 1, "nothing added");
    c.append_dup(&low, &[0x0f])
        .expect("append_dup adds a key anywhere");
    assert_eq!(tx.entries(table).expect("entries"), 2);
}
