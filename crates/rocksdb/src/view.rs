//! A transaction's view of one column family: the RocksDB snapshot it began on, overlaid with
//! its own uncommitted writes (read-your-writes without RocksDB transactions).

use crate::{env::EngineInner, error::read_err};
use reth_hybrid_api::{Tables, raw::RawResult};
use rocksdb::{DB, ReadOptions, SnapshotWithThreadMode};
use std::{collections::BTreeMap, ops::Bound, sync::Arc};

/// An owned snapshot: the `Arc` keeps the database alive, and the snapshot field is declared
/// first so it is released before the `Arc`.
pub(crate) struct OwnedSnapshot {
    snap: SnapshotWithThreadMode<'static, DB>,
    engine: Arc<EngineInner>,
}

// SAFETY: a RocksDB snapshot is an immutable handle usable from any thread.
unsafe impl Send for OwnedSnapshot {}
// SAFETY: as above; all access is through &self.
unsafe impl Sync for OwnedSnapshot {}

impl OwnedSnapshot {
    pub(crate) fn new(engine: Arc<EngineInner>) -> Self {
        let snap = engine.db.snapshot();
        // SAFETY: the snapshot borrows `engine.db`; `engine` is stored alongside and dropped
        // after the snapshot (field order), so the borrow never dangles.
        let snap: SnapshotWithThreadMode<'static, DB> = unsafe { std::mem::transmute(snap) };
        Self { snap, engine }
    }

    pub(crate) fn engine(&self) -> &Arc<EngineInner> {
        &self.engine
    }

    fn iter(&self, table: Tables) -> rocksdb::DBRawIteratorWithThreadMode<'_, DB> {
        let mut ro = ReadOptions::default();
        ro.set_total_order_seek(true);
        self.snap.raw_iterator_cf_opt(self.engine.cf(table), ro)
    }

    /// An iterator whose borrow of this snapshot is erased. Callers keep it only where it is
    /// dropped before this snapshot (per call, or in an `IterCache` owned next to the snapshot's
    /// `Arc`).
    fn iter_static(&self, table: Tables) -> SnapIter {
        let it = self.iter(table);
        // SAFETY: see above; the snapshot (and the DB behind it) outlive every such iterator.
        unsafe { std::mem::transmute::<rocksdb::DBRawIteratorWithThreadMode<'_, DB>, SnapIter>(it) }
    }
}

/// Uncommitted writes of one table, by RocksDB key. `None` is a tombstone.
#[derive(Debug, Default, Clone)]
pub(crate) struct TableOverlay {
    /// `clear` was called: nothing of the snapshot is visible any more.
    pub(crate) cleared: bool,
    pub(crate) writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

/// Rows as RocksDB stores them: `(rocks key, rocks value)`.
pub(crate) type RocksRow = (Vec<u8>, Vec<u8>);

fn base_row(it: &rocksdb::DBRawIteratorWithThreadMode<'_, DB>) -> Option<RocksRow> {
    match (it.key(), it.value()) {
        (Some(k), Some(v)) if it.valid() => Some((k.to_vec(), v.to_vec())),
        _ => None,
    }
}

/// Merged reads over the snapshot and an overlay (or the snapshot alone).
pub(crate) struct Merged<'a> {
    pub(crate) snap: &'a OwnedSnapshot,
    pub(crate) overlay: Option<&'a TableOverlay>,
    pub(crate) table: Tables,
    /// The cursor's iterator cache, if the caller is a cursor.
    pub(crate) cache: Option<&'a IterCache>,
    /// The transaction's memo of the snapshot's last row of this table.
    pub(crate) base_last: &'a BaseLast,
}

/// A snapshot iterator whose borrow of the snapshot is erased; see [`IterCache`].
pub(crate) type SnapIter = rocksdb::DBRawIteratorWithThreadMode<'static, DB>;

/// One cursor's positioned snapshot iterator, kept between its calls. It must be declared (and
/// so dropped) before the `Arc` that keeps the snapshot alive, which `RocksStore` does.
#[derive(Default)]
pub(crate) struct IterCache(pub(crate) parking_lot::Mutex<Option<SnapIter>>);

/// The snapshot's last row of a table, read once per transaction: the snapshot never changes,
/// and appends ask for the table's last row on every call.
pub(crate) type BaseLast = std::sync::OnceLock<Option<RocksRow>>;

/// Positions `it` at the first key >= `target`, stepping instead of seeking when `it` already
/// sits on `target` or on its immediate predecessor (`target == key ++ [0]`).
fn position_ge(it: &mut SnapIter, target: &[u8]) {
    if it.valid()
        && let Some(k) = it.key()
    {
        if k == target {
            return;
        }
        if is_successor(k, target) {
            it.next();
            return;
        }
    }
    it.seek(target);
}

/// Positions `it` at the last key < `target` (`None`: the last key), stepping when possible.
fn position_lt(it: &mut SnapIter, target: Option<&[u8]>) {
    let Some(target) = target else {
        it.seek_to_last();
        return;
    };
    if it.valid()
        && let Some(k) = it.key()
    {
        if k == target {
            it.prev();
            return;
        }
        if is_successor(k, target) {
            return;
        }
    }
    it.seek_for_prev(target);
    if it.valid() && it.key() == Some(target) {
        it.prev();
    }
}

/// Whether `next == key ++ [0]`, the smallest key after `key`.
fn is_successor(key: &[u8], next: &[u8]) -> bool {
    next.len() == key.len() + 1 && next.starts_with(key) && next[key.len()] == 0
}

impl Merged<'_> {
    fn base_visible(&self) -> bool {
        !self.overlay.is_some_and(|o| o.cleared)
    }

    fn check(&self, it: &rocksdb::DBRawIteratorWithThreadMode<'_, DB>) -> RawResult<()> {
        it.status().map_err(|e| read_err("iterator", self.table, e))
    }

    /// The snapshot iterator for this call: the cursor's cached one if it has one (so a step
    /// from the row it sits on is a `next`/`prev`, not a new seek), else a fresh one.
    fn take_iter(&self) -> Option<SnapIter> {
        if !self.base_visible() {
            return None;
        }
        self.cache
            .and_then(|c| c.0.lock().take())
            .or_else(|| Some(self.snap.iter_static(self.table)))
    }

    fn put_back(&self, it: Option<SnapIter>) {
        if let (Some(cache), Some(it)) = (self.cache, it) {
            *cache.0.lock() = Some(it);
        }
    }

    /// The last visible row from the cached snapshot last row and the overlay's last write,
    /// when that decides it; `None` when a tombstone at the top needs the full merge.
    fn last_fast(&self) -> RawResult<Option<Option<RocksRow>>> {
        let base = if self.base_visible() {
            if let Some(b) = self.base_last.get() {
                b.clone()
            } else {
                let mut it = self.snap.iter(self.table);
                it.seek_to_last();
                self.check(&it)?;
                let b = base_row(&it);
                let _ = self.base_last.set(b.clone());
                b
            }
        } else {
            None
        };
        let top = self.overlay.and_then(|o| o.writes.last_key_value());
        Ok(match (base, top) {
            (base, None) => Some(base),
            (Some(b), Some((k, _))) if b.0 > *k => Some(Some(b)),
            (_, Some((k, Some(v)))) => Some(Some((k.clone(), v.clone()))),
            (_, Some((_, None))) => None,
        })
    }

    /// First visible row with key >= `target`.
    pub(crate) fn ge(&self, target: &[u8]) -> RawResult<Option<RocksRow>> {
        let mut it = self.take_iter();
        let found = self.ge_with(&mut it, target);
        self.put_back(it);
        found
    }

    fn ge_with(&self, it: &mut Option<SnapIter>, target: &[u8]) -> RawResult<Option<RocksRow>> {
        if let Some(it) = it.as_mut() {
            position_ge(it, target);
            self.check(it)?;
        }
        let empty = BTreeMap::new();
        let writes = self.overlay.map_or(&empty, |o| &o.writes);
        let mut ov = writes
            .range::<[u8], _>((Bound::Included(target), Bound::Unbounded))
            .peekable();
        loop {
            let base = it.as_ref().and_then(base_row);
            match (base, ov.peek()) {
                (None, None) => return Ok(None),
                (Some(b), Some((ok, _))) if b.0 < **ok => return Ok(Some(b)),
                (Some(b), None) => return Ok(Some(b)),
                (b, Some((ok, ov_val))) => {
                    let same = b.as_ref().is_some_and(|b| b.0 == **ok);
                    if let Some(v) = ov_val {
                        return Ok(Some(((*ok).clone(), v.clone())));
                    }
                    // A tombstone: skip it, and the base row it hides.
                    ov.next();
                    if same && let Some(it) = it.as_mut() {
                        it.next();
                        self.check(it)?;
                    }
                }
            }
        }
    }

    /// Last visible row with key < `target` (`None` target: the last row).
    pub(crate) fn lt(&self, target: Option<&[u8]>) -> RawResult<Option<RocksRow>> {
        if target.is_none()
            && let Some(last) = self.last_fast()?
        {
            return Ok(last);
        }
        let mut it = self.take_iter();
        let found = self.lt_with(&mut it, target);
        self.put_back(it);
        found
    }

    fn lt_with(
        &self,
        it: &mut Option<SnapIter>,
        target: Option<&[u8]>,
    ) -> RawResult<Option<RocksRow>> {
        if let Some(it) = it.as_mut() {
            position_lt(it, target);
            self.check(it)?;
        }
        let empty = BTreeMap::new();
        let writes = self.overlay.map_or(&empty, |o| &o.writes);
        let upper = target.map_or(Bound::Unbounded, Bound::Excluded);
        let mut ov = writes
            .range::<[u8], _>((Bound::Unbounded, upper))
            .rev()
            .peekable();
        loop {
            let base = it.as_ref().and_then(base_row);
            match (base, ov.peek()) {
                (None, None) => return Ok(None),
                (Some(b), Some((ok, _))) if b.0 > **ok => return Ok(Some(b)),
                (Some(b), None) => return Ok(Some(b)),
                (b, Some((ok, ov_val))) => {
                    let same = b.as_ref().is_some_and(|b| b.0 == **ok);
                    if let Some(v) = ov_val {
                        return Ok(Some(((*ok).clone(), v.clone())));
                    }
                    ov.next();
                    if same && let Some(it) = it.as_mut() {
                        it.prev();
                        self.check(it)?;
                    }
                }
            }
        }
    }

    /// Calls `f` for every visible row in order, in one pass.
    pub(crate) fn scan(&self, mut f: impl FnMut(&[u8], &[u8])) -> RawResult<()> {
        let mut it = self.base_visible().then(|| self.snap.iter(self.table));
        if let Some(it) = it.as_mut() {
            it.seek_to_first();
            self.check(it)?;
        }
        let empty = BTreeMap::new();
        let writes = self.overlay.map_or(&empty, |o| &o.writes);
        let mut ov = writes.iter().peekable();
        loop {
            let base = it.as_ref().and_then(base_row);
            match (base, ov.peek()) {
                (None, None) => return Ok(()),
                (Some((bk, bv)), Some((ok, _))) if bk < **ok => {
                    f(&bk, &bv);
                    advance(&mut it);
                }
                (Some((bk, bv)), None) => {
                    f(&bk, &bv);
                    advance(&mut it);
                }
                (b, Some((ok, ov_val))) => {
                    if b.is_some_and(|(bk, _)| bk == **ok) {
                        advance(&mut it);
                    }
                    if let Some(v) = ov_val {
                        f(ok, v);
                    }
                    ov.next();
                }
            }
            if let Some(it) = it.as_ref() {
                self.check(it)?;
            }
        }
    }
}

fn advance(it: &mut Option<rocksdb::DBRawIteratorWithThreadMode<'_, DB>>) {
    if let Some(it) = it.as_mut() {
        it.next();
    }
}

/// Every key of a table in the snapshot (for committing a `clear`).
pub(crate) fn snapshot_keys(
    snap: &OwnedSnapshot,
    table: Tables,
    mut f: impl FnMut(&[u8]),
) -> RawResult<()> {
    let mut it = snap.iter(table);
    it.seek_to_first();
    while it.valid() {
        if let Some(k) = it.key() {
            f(k);
        }
        it.next();
    }
    it.status().map_err(|e| read_err("scan", table, e))
}
