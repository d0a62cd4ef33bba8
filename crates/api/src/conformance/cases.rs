//! Named conformance cases: each pins one sentence of the API docs to MDBX's behaviour, with the
//! expected values written out (not taken from the model).

use crate::{
    DbCursorRO, DbCursorRW, DbDupCursorRO, DbDupCursorRW, DbTx, DbTxMut, Tables,
    error::codes,
    models::{Address, B256, StorageEntry, U256},
    raw::{RawCursor, RawCursorMut, RawEngine, RawPair, RawTx, RawTxMut},
    sorted::NO_DATA,
    tables::{CanonicalHeaders, PlainStorageState},
    typed::{Database, TypedDatabase},
};

const PLAIN: Tables = Tables::CanonicalHeaders;
const DUP: Tables = Tables::PlainStorageState;

/// Plain-table key: 8-byte big-endian, as reth writes block numbers.
fn pk(n: u64) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

/// Dupsort-table key: a 20-byte address.
fn dk(b: u8) -> Vec<u8> {
    vec![b; 20]
}

fn pair(k: Vec<u8>, v: &[u8]) -> Option<RawPair> {
    Some((k, v.to_vec()))
}

fn code<T: std::fmt::Debug>(r: Result<T, crate::DatabaseError>) -> i32 {
    r.expect_err("operation must fail")
        .code()
        .expect("error carries an engine code")
}

/// Plain rows 2, 4, 6 (values 0x20, 0x40, 0x60), committed.
fn plain_246<E: RawEngine>(e: &E) {
    let tx = e.begin_rw().expect("rw");
    for n in [2u64, 4, 6] {
        tx.put(PLAIN, &pk(n), &[n as u8 * 0x10]).expect("put");
    }
    tx.commit().expect("commit");
}

/// Dupsort rows: key 1 -> [0a, 0c], key 3 -> [0b, 0d], committed.
fn dup_rows<E: RawEngine>(e: &E) {
    let tx = e.begin_rw().expect("rw");
    for (k, v) in [(1u8, 0x0au8), (1, 0x0c), (3, 0x0b), (3, 0x0d)] {
        tx.put(DUP, &dk(k), &[v]).expect("put");
    }
    tx.commit().expect("commit");
}

pub fn fresh_cursor_next_is_first_prev_is_last<E: RawEngine>(e: &E) {
    plain_246(e);
    let tx = e.begin_ro().expect("ro");
    assert_eq!(tx.cursor(PLAIN).expect("c").current().expect("cur"), None);
    assert_eq!(
        tx.cursor(PLAIN).expect("c").next().expect("next"),
        pair(pk(2), &[0x20])
    );
    assert_eq!(
        tx.cursor(PLAIN).expect("c").prev().expect("prev"),
        pair(pk(6), &[0x60])
    );
}

pub fn seek_past_end_then_step<E: RawEngine>(e: &E) {
    plain_246(e);
    let tx = e.begin_ro().expect("ro");
    let mut c = tx.cursor(PLAIN).expect("c");
    assert_eq!(c.seek(&pk(7)).expect("seek"), None);
    assert_eq!(
        c.prev().expect("prev"),
        pair(pk(6), &[0x60]),
        "prev after a seek past the end is the last row"
    );
    let mut c = tx.cursor(PLAIN).expect("c");
    c.seek(&pk(7)).expect("seek");
    assert_eq!(c.next().expect("next"), None);
}

pub fn seek_exact_miss_invalidates_cursor<E: RawEngine>(e: &E) {
    plain_246(e);
    let tx = e.begin_ro().expect("ro");
    let mut c = tx.cursor(PLAIN).expect("c");
    assert_eq!(c.seek_exact(&pk(3)).expect("seek_exact"), None);
    assert_eq!(c.next().expect("next"), None);
    assert_eq!(c.prev().expect("prev"), None);
    assert_eq!(c.current().expect("cur"), None);
    assert_eq!(
        c.first().expect("first"),
        pair(pk(2), &[0x20]),
        "an absolute move recovers"
    );
}

pub fn delete_current_then_next_returns_following_row<E: RawEngine>(e: &E) {
    plain_246(e);
    let tx = e.begin_rw().expect("rw");
    let mut c = tx.cursor_mut(PLAIN).expect("c");
    c.seek(&pk(4)).expect("seek");
    c.delete_current().expect("delete");
    assert_eq!(
        c.next().expect("next"),
        pair(pk(6), &[0x60]),
        "the row after the deleted one"
    );
    assert_eq!(c.prev().expect("prev"), pair(pk(2), &[0x20]));
    let mut c = tx.cursor_mut(PLAIN).expect("c");
    c.first().expect("first");
    c.delete_current().expect("delete");
    assert_eq!(
        c.current().expect("cur"),
        pair(pk(6), &[0x60]),
        "current after delete is the following row"
    );
}

pub fn delete_last_row_then_current_returns_previous<E: RawEngine>(e: &E) {
    plain_246(e);
    let tx = e.begin_rw().expect("rw");
    let mut c = tx.cursor_mut(PLAIN).expect("c");
    c.last().expect("last");
    c.delete_current().expect("delete");
    assert_eq!(c.current().expect("cur"), pair(pk(4), &[0x40]));
    assert_eq!(
        code(c.delete_current()),
        NO_DATA,
        "nothing after the hole to delete"
    );
    drop(c);
    tx.abort();
    let tx = e.begin_rw().expect("rw");
    let mut c = tx.cursor_mut(PLAIN).expect("c");
    c.last().expect("last");
    c.delete_current().expect("delete");
    assert_eq!(c.next().expect("next"), None);
    assert_eq!(
        c.prev().expect("prev"),
        pair(pk(2), &[0x20]),
        "next left the cursor on the new last row (4)"
    );
}

pub fn dupsort_upsert_adds_duplicate_and_put_is_idempotent<E: RawEngine>(e: &E) {
    dup_rows(e);
    let tx = e.begin_rw().expect("rw");
    let mut c = tx.cursor_mut(DUP).expect("c");
    c.upsert(&dk(1), &[0x0b]).expect("upsert");
    assert_eq!(c.current().expect("cur"), pair(dk(1), &[0x0b]));
    tx.put(DUP, &dk(1), &[0x0a])
        .expect("existing pair is a no-op");
    assert_eq!(tx.entries(DUP).expect("entries"), 5);
    let mut c = tx.cursor(DUP).expect("c");
    c.seek_exact(&dk(1)).expect("seek");
    assert_eq!(c.next_dup().expect("nd"), pair(dk(1), &[0x0b]));
    assert_eq!(c.next_dup().expect("nd"), pair(dk(1), &[0x0c]));
}

pub fn seek_by_key_subkey_returns_first_value_at_or_after_subkey<E: RawEngine>(e: &E) {
    dup_rows(e);
    let tx = e.begin_ro().expect("ro");
    let mut c = tx.cursor(DUP).expect("c");
    assert_eq!(
        c.seek_by_key_subkey(&dk(1), &[0x0b]).expect("sbks"),
        Some(vec![0x0c]),
        "not an exact match"
    );
    assert_eq!(c.current().expect("cur"), pair(dk(1), &[0x0c]));
    assert_eq!(
        c.seek_by_key_subkey(&dk(1), &[0x0d]).expect("sbks"),
        None,
        "never spills into the next key"
    );
    assert_eq!(
        c.seek_by_key_subkey(&dk(2), &[0x00]).expect("sbks"),
        None,
        "absent key"
    );
}

pub fn next_dup_stays_within_key<E: RawEngine>(e: &E) {
    dup_rows(e);
    let tx = e.begin_ro().expect("ro");
    let mut c = tx.cursor(DUP).expect("c");
    c.first().expect("first");
    assert_eq!(c.next_dup().expect("nd"), pair(dk(1), &[0x0c]));
    assert_eq!(c.next_dup().expect("nd"), None);
    assert_eq!(
        c.current().expect("cur"),
        pair(dk(1), &[0x0c]),
        "stays on the last duplicate"
    );
    assert_eq!(c.next().expect("next"), pair(dk(3), &[0x0b]));
    assert_eq!(c.prev_dup().expect("pd"), None);
    assert_eq!(c.last_dup().expect("ld"), Some(vec![0x0d]));
    let mut c = tx.cursor(DUP).expect("c");
    c.first().expect("first");
    assert_eq!(c.next_no_dup().expect("nnd"), pair(dk(3), &[0x0b]));
    assert_eq!(c.next_no_dup().expect("nnd"), None);
}

pub fn delete_current_duplicates_removes_every_value_of_key<E: RawEngine>(e: &E) {
    dup_rows(e);
    let tx = e.begin_rw().expect("rw");
    let mut c = tx.cursor_mut(DUP).expect("c");
    c.first().expect("first");
    c.delete_current_duplicates().expect("delete dups");
    assert_eq!(c.current().expect("cur"), pair(dk(3), &[0x0b]));
    assert_eq!(tx.entries(DUP).expect("entries"), 2);
    assert_eq!(tx.get(DUP, &dk(1)).expect("get"), None);
}

pub fn append_out_of_order_fails_with_key_mismatch<E: RawEngine>(e: &E) {
    plain_246(e);
    let tx = e.begin_rw().expect("rw");
    let mut c = tx.cursor_mut(PLAIN).expect("c");
    assert_eq!(code(c.append(&pk(5), &[1])), codes::KEY_MISMATCH);
    assert_eq!(
        c.current().expect("cur"),
        pair(pk(6), &[0x60]),
        "a failed append leaves the cursor on the last row"
    );
    c.append(&pk(6), &[0x61])
        .expect("equal to the last key replaces it");
    c.append(&pk(9), &[0x90]).expect("append past the end");
    assert_eq!(code(tx.append(PLAIN, &pk(1), &[1])), codes::KEY_MISMATCH);
    tx.append(PLAIN, &pk(10), &[0xa0]).expect("tx append");
    // Dupsort: only the key order counts.
    for (k, v) in [(1u8, 0x0au8), (3, 0x0b), (3, 0x0d)] {
        tx.put(DUP, &dk(k), &[v]).expect("put");
    }
    let mut d = tx.cursor_mut(DUP).expect("c");
    d.append(&dk(3), &[0x0c])
        .expect("same key as the last, any value");
    assert_eq!(code(d.append(&dk(2), &[0x01])), codes::KEY_MISMATCH);
    assert_eq!(tx.entries(DUP).expect("entries"), 4);
}

pub fn append_dup_checks_only_the_keys_own_duplicates<E: RawEngine>(e: &E) {
    dup_rows(e);
    let tx = e.begin_rw().expect("rw");
    let mut c = tx.cursor_mut(DUP).expect("c");
    // Equal to the key's last duplicate: libmdbx 0.14 refuses it (KEY_MISMATCH); 0.13, which
    // reth v2.5.1 bundles, accepts it as a no-op. Either way no row is added (counted below).
    if let Err(e) = c.append_dup(&dk(3), &[0x0d]) {
        assert_eq!(
            e.code(),
            Some(codes::KEY_MISMATCH),
            "equal to the last duplicate"
        );
    }
    assert_eq!(code(c.append_dup(&dk(3), &[0x0c])), codes::KEY_MISMATCH);
    c.append_dup(&dk(1), &[0x0f])
        .expect("key 1 is not the last key, but 0f > 0c");
    c.append_dup(&dk(2), &[0x00]).expect("a new key anywhere");
    assert_eq!(tx.entries(DUP).expect("entries"), 6);
}

/// What every engine does with `append_last`: rows that sort last are added, a value out of its
/// key's order is refused. (MDBX also refuses a key below the table's last; its own tests.)
pub fn append_last_adds_rows_that_sort_last<E: RawEngine>(e: &E) {
    dup_rows(e);
    let tx = e.begin_rw().expect("rw");
    let mut c = tx.cursor_mut(DUP).expect("c");
    c.append_last(&dk(3), &[0x0e])
        .expect("the last key, after its last duplicate");
    c.append_last(&dk(4), &[0x01]).expect("a new last key");
    c.append_last(&dk(4), &[0x02])
        .expect("and its next duplicate");
    assert_eq!(code(c.append_last(&dk(4), &[0x00])), codes::KEY_MISMATCH);
    assert_eq!(tx.entries(DUP).expect("entries"), 7);
    let mut r = tx.cursor(DUP).expect("c");
    assert_eq!(r.last().expect("last"), pair(dk(4), &[0x02]));
    assert_eq!(r.prev().expect("prev"), pair(dk(4), &[0x01]));
    assert_eq!(r.prev().expect("prev"), pair(dk(3), &[0x0e]));
}

/// `dup_count` counts the current key's rows (1 on a plain table, 0 on no row) and leaves the
/// cursor where it was, in a read transaction and over a write transaction's own rows.
pub fn dup_count_counts_the_current_keys_rows_without_moving<E: RawEngine>(e: &E) {
    dup_rows(e);
    plain_246(e);
    let tx = e.begin_ro().expect("ro");
    let mut c = tx.cursor(DUP).expect("c");
    assert_eq!(
        c.dup_count().expect("count"),
        0,
        "a fresh cursor is on no row"
    );
    assert_eq!(c.seek_exact(&dk(3)).expect("seek"), pair(dk(3), &[0x0b]));
    assert_eq!(c.dup_count().expect("count"), 2);
    assert_eq!(
        c.current().expect("cur"),
        pair(dk(3), &[0x0b]),
        "did not move"
    );
    assert_eq!(c.next_dup().expect("next_dup"), pair(dk(3), &[0x0d]));
    assert_eq!(c.dup_count().expect("count"), 2);
    assert_eq!(
        c.prev().expect("prev"),
        pair(dk(3), &[0x0b]),
        "still on the second duplicate"
    );
    let mut p = tx.cursor(PLAIN).expect("c");
    p.seek(&pk(3)).expect("seek");
    assert_eq!(p.dup_count().expect("count"), 1);
    assert_eq!(
        p.next().expect("next"),
        pair(pk(6), &[0x60]),
        "still on key 4"
    );
    drop((c, p, tx));

    let tx = e.begin_rw().expect("rw");
    tx.put(DUP, &dk(1), &[0x0b]).expect("put");
    tx.put(DUP, &dk(2), &[0x01]).expect("put");
    let mut c = tx.cursor_mut(DUP).expect("c");
    assert_eq!(c.seek_exact(&dk(1)).expect("seek"), pair(dk(1), &[0x0a]));
    c.next_dup().expect("next_dup");
    assert_eq!(
        c.dup_count().expect("count"),
        3,
        "the transaction's own duplicate counts"
    );
    assert_eq!(c.current().expect("cur"), pair(dk(1), &[0x0b]));
    assert_eq!(c.next_no_dup().expect("next_no_dup"), pair(dk(2), &[0x01]));
    assert_eq!(c.dup_count().expect("count"), 1);
    assert_eq!(c.next().expect("next"), pair(dk(3), &[0x0b]));

    // Past the end and after a delete the count is MDBX's page layout's business, but the
    // cursor still does not move.
    let mut p = tx.cursor_mut(PLAIN).expect("c");
    assert_eq!(p.seek(&pk(7)).expect("seek"), None);
    p.dup_count().expect("count");
    assert_eq!(p.prev().expect("prev"), pair(pk(6), &[0x60]));
    p.seek_exact(&pk(4)).expect("seek");
    p.delete_current().expect("delete");
    p.dup_count().expect("count");
    assert_eq!(p.next().expect("next"), pair(pk(6), &[0x60]));
}

pub fn insert_existing_fails_and_positions_on_existing<E: RawEngine>(e: &E) {
    plain_246(e);
    let tx = e.begin_rw().expect("rw");
    let mut c = tx.cursor_mut(PLAIN).expect("c");
    assert_eq!(code(c.insert(&pk(4), &[1])), codes::KEY_EXIST);
    assert_eq!(c.current().expect("cur"), pair(pk(4), &[0x40]));
    c.insert(&pk(5), &[0x50]).expect("new key");
    assert_eq!(c.next().expect("next"), pair(pk(6), &[0x60]));
}

pub fn delete_with_value_removes_exactly_that_duplicate<E: RawEngine>(e: &E) {
    dup_rows(e);
    plain_246(e);
    let tx = e.begin_rw().expect("rw");
    assert!(tx.delete(DUP, &dk(1), Some(&[0x0c])).expect("delete"));
    assert!(
        !tx.delete(DUP, &dk(1), Some(&[0x0c])).expect("delete"),
        "already gone"
    );
    assert_eq!(tx.get(DUP, &dk(1)).expect("get"), Some(vec![0x0a]));
    assert!(
        !tx.delete(PLAIN, &pk(4), Some(&[0x99])).expect("delete"),
        "plain: value must match"
    );
    assert!(tx.delete(PLAIN, &pk(4), None).expect("delete"));
    assert!(!tx.delete(PLAIN, &pk(5), None).expect("delete"));
    assert!(tx.delete(DUP, &dk(3), None).expect("delete all dups"));
    assert_eq!(tx.entries(DUP).expect("entries"), 1);
}

pub fn write_transaction_reads_its_own_writes<E: RawEngine>(e: &E) {
    plain_246(e);
    let tx = e.begin_rw().expect("rw");
    tx.put(PLAIN, &pk(3), &[0x30]).expect("put");
    tx.delete(PLAIN, &pk(4), None).expect("delete");
    assert_eq!(tx.get(PLAIN, &pk(3)).expect("get"), Some(vec![0x30]));
    let mut c = tx.cursor(PLAIN).expect("c");
    let mut rows = vec![];
    let mut next = c.first().expect("first");
    while let Some((k, _)) = next {
        rows.push(k[7]);
        next = c.next().expect("next");
    }
    assert_eq!(rows, vec![2, 3, 6]);
    assert_eq!(tx.entries(PLAIN).expect("entries"), 3);
}

pub fn read_transaction_is_a_snapshot<E: RawEngine>(e: &E) {
    plain_246(e);
    let reader = e.begin_ro().expect("ro");
    let tx = e.begin_rw().expect("rw");
    tx.put(PLAIN, &pk(8), &[0x80]).expect("put");
    tx.delete(PLAIN, &pk(2), None).expect("delete");
    tx.commit().expect("commit");
    assert_eq!(reader.get(PLAIN, &pk(8)).expect("get"), None);
    assert_eq!(reader.get(PLAIN, &pk(2)).expect("get"), Some(vec![0x20]));
    assert_eq!(reader.entries(PLAIN).expect("entries"), 3);
    let fresh = e.begin_ro().expect("ro");
    assert_eq!(fresh.get(PLAIN, &pk(8)).expect("get"), Some(vec![0x80]));
}

pub fn abort_discards_writes<E: RawEngine>(e: &E) {
    plain_246(e);
    let tx = e.begin_rw().expect("rw");
    tx.put(PLAIN, &pk(9), &[0x90]).expect("put");
    tx.clear(PLAIN).expect("clear");
    tx.abort();
    let ro = e.begin_ro().expect("ro");
    assert_eq!(ro.entries(PLAIN).expect("entries"), 3);
    assert_eq!(ro.get(PLAIN, &pk(9)).expect("get"), None);
}

pub fn clear_removes_all_rows_and_keeps_table<E: RawEngine>(e: &E) {
    dup_rows(e);
    let tx = e.begin_rw().expect("rw");
    tx.clear(DUP).expect("clear");
    assert_eq!(tx.entries(DUP).expect("entries"), 0);
    tx.put(DUP, &dk(5), &[1]).expect("table still usable");
    tx.commit().expect("commit");
    assert_eq!(e.begin_ro().expect("ro").entries(DUP).expect("entries"), 1);
}

pub fn entries_counts_duplicates<E: RawEngine>(e: &E) {
    dup_rows(e);
    assert_eq!(e.begin_ro().expect("ro").entries(DUP).expect("entries"), 4);
}

pub fn delete_on_unpositioned_cursor_fails_with_no_data<E: RawEngine>(e: &E) {
    plain_246(e);
    let tx = e.begin_rw().expect("rw");
    assert_eq!(
        code(tx.cursor_mut(PLAIN).expect("c").delete_current()),
        NO_DATA
    );
    let mut c = tx.cursor_mut(PLAIN).expect("c");
    c.seek(&pk(100)).expect("seek");
    assert_eq!(code(c.delete_current()), NO_DATA);
}

/// The typed layer over this engine: reth's walkers, including `walk_back(Some(k))` starting at
/// the first key >= k and a walker deleting as it goes.
pub fn typed_walkers_follow_reth_semantics<E: RawEngine + Clone>(e: &E) {
    let db = TypedDatabase::new(e.clone());
    let tx = db.tx_mut().expect("rw");
    for n in [10u64, 20, 30, 40] {
        tx.put::<CanonicalHeaders>(n, B256::repeat_byte(n as u8))
            .expect("put");
    }
    let mut c = tx.cursor_write::<CanonicalHeaders>().expect("c");
    let back: Vec<u64> = c
        .walk_back(Some(25))
        .expect("walk_back")
        .map(|r| r.expect("row").0)
        .collect();
    assert_eq!(back, vec![30, 20, 10], "walk_back(Some(25)) starts at 30");
    let range: Vec<u64> = c
        .walk_range(15..=30)
        .expect("range")
        .map(|r| r.expect("row").0)
        .collect();
    assert_eq!(range, vec![20, 30]);
    let excl: Vec<u64> = c
        .walk_range((std::ops::Bound::Excluded(20), std::ops::Bound::Unbounded))
        .expect("range")
        .map(|r| r.expect("row").0)
        .collect();
    assert_eq!(excl, vec![30, 40]);
    let mut walker = c.walk(Some(20)).expect("walk");
    let mut seen = vec![];
    while let Some(row) = walker.next() {
        let (n, _) = row.expect("row");
        seen.push(n);
        if n == 20 || n == 30 {
            walker.delete_current().expect("delete while walking");
        }
    }
    assert_eq!(
        seen,
        vec![20, 30, 40],
        "deleting while walking skips nothing"
    );
    drop(c);
    assert_eq!(tx.entries::<CanonicalHeaders>().expect("entries"), 2);

    let addr = Address::repeat_byte(1);
    let mut d = tx.cursor_dup_write::<PlainStorageState>().expect("c");
    for s in [3u8, 1, 2] {
        d.upsert(
            addr,
            &StorageEntry {
                key: B256::repeat_byte(s),
                value: U256::from(s),
            },
        )
        .expect("upsert");
    }
    d.upsert(
        Address::repeat_byte(2),
        &StorageEntry {
            key: B256::repeat_byte(9),
            value: U256::from(9),
        },
    )
    .expect("upsert");
    let dups: Vec<u8> = d
        .walk_dup(Some(addr), None)
        .expect("walk_dup")
        .map(|r| r.expect("row").1.key.0[0])
        .collect();
    assert_eq!(
        dups,
        vec![1, 2, 3],
        "duplicates in value order, one key only"
    );
    let from2: Vec<u8> = d
        .walk_dup(Some(addr), Some(B256::repeat_byte(2)))
        .expect("walk_dup")
        .map(|r| r.expect("row").1.key.0[0])
        .collect();
    assert_eq!(from2, vec![2, 3]);
    d.seek_exact(addr).expect("seek");
    d.delete_current_duplicates().expect("delete dups");
    assert_eq!(tx.entries::<PlainStorageState>().expect("entries"), 1);
    drop(d);
    tx.commit().expect("commit");
}

/// reth's `DbCursorRW::insert` is `MDBX_NOOVERWRITE` on every table: a dupsort key that already
/// has a duplicate refuses another one (reth's own test `db_cursor_insert_dup`).
pub fn typed_dupsort_insert_refuses_an_existing_key<E: RawEngine + Clone>(e: &E) {
    let db = TypedDatabase::new(e.clone());
    let tx = db.tx_mut().expect("rw");
    let mut c = tx.cursor_dup_write::<PlainStorageState>().expect("c");
    let addr = Address::repeat_byte(1);
    let entry = |k: u8| StorageEntry {
        key: B256::repeat_byte(k),
        value: U256::from(k),
    };
    c.insert(addr, &entry(1)).expect("first duplicate");
    assert_eq!(
        code(c.insert(addr, &entry(2))),
        codes::KEY_EXIST,
        "a second duplicate of an existing key"
    );
    assert_eq!(
        c.next_dup_val().expect("dup"),
        None,
        "no duplicate was added"
    );
    c.insert(Address::repeat_byte(2), &entry(3))
        .expect("another key");
    drop(c);
    assert_eq!(tx.entries::<PlainStorageState>().expect("entries"), 2);
}
