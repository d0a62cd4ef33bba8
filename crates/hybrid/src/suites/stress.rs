//! Readers under a committing writer: N reader threads each hold one hybrid read transaction
//! across at least 50 commits (puts, overwrites, deletes and clears, in MDBX tables and in
//! RocksDB tables) and check that every row they see, in both engines, matches the commit they
//! started at and never changes during their life.
//!
//! The writer publishes the whole expected content (a BTreeMap model) of each commit before it
//! commits; a marker row in each engine names the commit a reader sees. A reader that saw the
//! MDBX marker of one commit and the RocksDB marker of another, a row of a later commit, or a row
//! a later commit deleted, fails the test.
//!
//! Size (CI): `RETH_HYBRID_STRESS_READERS` readers (default 4), each across
//! `RETH_HYBRID_STRESS_SPAN` commits (default 50), started every 15 commits; a few seconds.

use super::Open;
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawEngine, RawReplay, RawTx, RawTxMut},
};
use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

/// Tables the workload writes: two served by MDBX and two by RocksDB in the default layout.
const TABLES: [Tables; 4] = [
    Tables::CanonicalHeaders,
    Tables::PlainAccountState,
    Tables::TransactionHashNumbers,
    Tables::AccountsHistory,
];
const MDBX_MARKER_KEY: [u8; 8] = u64::MAX.to_be_bytes();
const ROCKS_MARKER_KEY: [u8; 32] = [0xff; 32];

type Model = BTreeMap<(Tables, Vec<u8>), Vec<u8>>;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn address(n: u64) -> Vec<u8> {
    let mut a = vec![0x11u8; 20];
    a[12..].copy_from_slice(&n.to_be_bytes());
    a
}

fn tx_hash(n: u64) -> Vec<u8> {
    let mut h = vec![0xabu8; 32];
    h[..8].copy_from_slice(&n.to_be_bytes());
    h
}

fn history_key(addr: u64, block: u64) -> Vec<u8> {
    let mut k = address(addr);
    k.extend_from_slice(&block.to_be_bytes());
    k
}

/// Commit `i`'s writes, applied to the transaction and to the model alike.
fn commit_writes<X: RawTxMut>(tx: &X, model: &mut Model, i: u64) {
    let mut put = |table: Tables, key: Vec<u8>, value: Vec<u8>| {
        tx.put(table, &key, &value).expect("put");
        model.insert((table, key), value);
    };
    put(
        Tables::CanonicalHeaders,
        i.to_be_bytes().to_vec(),
        vec![i as u8; 32],
    );
    put(
        Tables::TransactionHashNumbers,
        tx_hash(i),
        i.to_be_bytes().to_vec(),
    );
    // Overwrites: a few hot accounts change again and again.
    put(
        Tables::PlainAccountState,
        address(i % 7),
        [i.to_be_bytes(), [7; 8]].concat(),
    );
    put(
        Tables::AccountsHistory,
        history_key(i % 5, i),
        vec![i as u8; 12],
    );
    if i.is_multiple_of(3) && i >= 3 {
        for (table, key) in [
            (Tables::CanonicalHeaders, (i - 2).to_be_bytes().to_vec()),
            (Tables::TransactionHashNumbers, tx_hash(i - 1)),
            (Tables::AccountsHistory, history_key((i - 3) % 5, i - 3)),
        ] {
            let existed = tx.delete(table, &key, None).expect("delete");
            assert_eq!(
                existed,
                model.remove(&(table, key)).is_some(),
                "delete of commit {i}"
            );
        }
    }
    if i % 40 == 20 {
        // A clear in each engine: a reader from before it must still see every row.
        for table in [Tables::PlainAccountState, Tables::AccountsHistory] {
            tx.clear(table).expect("clear");
            model.retain(|(t, _), _| *t != table);
        }
    }
    tx.put(Tables::CanonicalHeaders, &MDBX_MARKER_KEY, &i.to_be_bytes())
        .expect("marker");
    tx.put(
        Tables::TransactionHashNumbers,
        &ROCKS_MARKER_KEY,
        &i.to_be_bytes(),
    )
    .expect("marker");
}

/// Every row of the workload's tables as the read transaction sees it, markers removed; and
/// the commit each engine's marker names.
fn read_all<T: RawTx>(tx: &T) -> (Model, Option<u64>, Option<u64>) {
    let mut rows = Model::new();
    for table in TABLES {
        let mut cursor = tx.cursor(table).expect("cursor");
        let mut next = cursor.first().expect("first");
        while let Some((k, v)) = next {
            rows.insert((table, k), v);
            next = cursor.next().expect("next");
        }
    }
    let mut marker = |table: Tables, key: &[u8]| {
        rows.remove(&(table, key.to_vec()))
            .map(|v| u64::from_be_bytes(v.try_into().expect("8-byte marker")))
    };
    let mdbx = marker(Tables::CanonicalHeaders, &MDBX_MARKER_KEY);
    let rocks = marker(Tables::TransactionHashNumbers, &ROCKS_MARKER_KEY);
    (rows, mdbx, rocks)
}

fn assert_rows_match(seen: &Model, expected: &Model, context: &str) {
    if seen == expected {
        return;
    }
    let extra: Vec<_> = seen
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .take(3)
        .collect();
    let missing: Vec<_> = expected
        .keys()
        .filter(|k| !seen.contains_key(*k))
        .take(3)
        .collect();
    let changed: Vec<_> = seen
        .iter()
        .filter(|(k, v)| expected.get(*k).is_some_and(|e| e != *v))
        .map(|(k, _)| k)
        .take(3)
        .collect();
    panic!(
        "{context}: rows differ from the model (extra {extra:?}, missing {missing:?}, changed {changed:?})"
    );
}

/// Runs the stress workload (see the module's documentation).
pub fn readers_see_one_commit_in_both_engines_across_many_commits<P: RawEngine, F: RawReplay>(
    open: Open<P, F>,
) {
    let readers = env_or("RETH_HYBRID_STRESS_READERS", 4);
    let span = env_or("RETH_HYBRID_STRESS_SPAN", 50);
    let stagger = 15;
    let dir = tempfile::tempdir().expect("tmp");
    let db = Arc::new(open(dir.path()).expect("open"));
    let layout = db.layout();
    assert_eq!(
        layout.engine_of(Tables::CanonicalHeaders),
        reth_hybrid_api::EngineKind::Mdbx
    );
    assert_eq!(
        layout.engine_of(Tables::AccountsHistory),
        reth_hybrid_api::EngineKind::RocksDb
    );

    // snapshots[i] = the content after commit i; published before commit i is made.
    let snapshots: Arc<Mutex<Vec<Model>>> = Arc::new(Mutex::new(vec![Model::new()]));
    let acked = Arc::new(AtomicU64::new(0));
    let readers_done = Arc::new(AtomicU64::new(0));

    let mut handles = Vec::new();
    for r in 0..readers {
        let (db, snapshots, acked, done) = (
            db.clone(),
            snapshots.clone(),
            acked.clone(),
            readers_done.clone(),
        );
        handles.push(std::thread::spawn(move || {
            while acked.load(Ordering::Acquire) < r * stagger {
                std::thread::sleep(Duration::from_millis(1));
            }
            let acked_before = acked.load(Ordering::Acquire);
            let tx = db.begin_ro().expect("read tx");
            let (first, mdbx, rocks) = read_all(&tx);
            let start = mdbx.unwrap_or(0);
            assert_eq!(
                mdbx, rocks,
                "reader {r}: MDBX and RocksDB show different commits"
            );
            assert!(
                start >= acked_before,
                "reader {r} sees commit {start}, older than the acknowledged {acked_before}"
            );
            let expected = snapshots.lock().expect("lock")[start as usize].clone();
            assert_rows_match(&first, &expected, &format!("reader {r} at commit {start}"));
            let mut checks = 1;
            loop {
                let now = acked.load(Ordering::Acquire);
                let (rows, mdbx, rocks) = read_all(&tx);
                let marker = (start > 0).then_some(start);
                assert_eq!(
                    (mdbx, rocks),
                    (marker, marker),
                    "reader {r}: its snapshot moved while commit {now} was made"
                );
                assert_rows_match(
                    &rows,
                    &expected,
                    &format!("reader {r} (commit {start}) after commit {now}"),
                );
                checks += 1;
                if now >= start + span {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            tx.abort();
            done.fetch_add(1, Ordering::AcqRel);
            (start, checks)
        }));
    }

    let mut model = Model::new();
    let max_commits = readers * stagger + span + 400;
    let mut i = 0;
    while readers_done.load(Ordering::Acquire) < readers {
        i += 1;
        assert!(
            i <= max_commits,
            "readers did not finish after {max_commits} commits"
        );
        let tx = db.begin_rw().expect("rw");
        commit_writes(&tx, &mut model, i);
        snapshots.lock().expect("lock").push(model.clone());
        tx.commit().expect("commit");
        acked.store(i, Ordering::Release);
    }
    for (r, handle) in handles.into_iter().enumerate() {
        let (start, checks) = handle
            .join()
            .unwrap_or_else(|_| panic!("reader {r} failed"));
        println!("reader {r}: held commit {start} across {span}+ commits, {checks} full reads");
    }
    // And the writer's own final state is what a new reader sees.
    let (rows, mdbx, rocks) = read_all(&db.begin_ro().expect("ro"));
    assert_eq!((mdbx, rocks), (Some(i), Some(i)));
    assert_rows_match(&rows, &model, "a new reader after the last commit");
}
