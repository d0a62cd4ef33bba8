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
}

impl Merged<'_> {
    fn base_visible(&self) -> bool {
        !self.overlay.is_some_and(|o| o.cleared)
    }

    fn check(&self, it: &rocksdb::DBRawIteratorWithThreadMode<'_, DB>) -> RawResult<()> {
        it.status().map_err(|e| read_err("iterator", self.table, e))
    }

    /// First visible row with key >= `target`.
    pub(crate) fn ge(&self, target: &[u8]) -> RawResult<Option<RocksRow>> {
        let mut it = self.base_visible().then(|| self.snap.iter(self.table));
        if let Some(it) = it.as_mut() {
            it.seek(target);
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
        let mut it = self.base_visible().then(|| self.snap.iter(self.table));
        if let Some(it) = it.as_mut() {
            match target {
                Some(t) => {
                    it.seek_for_prev(t);
                    if it.valid() && it.key() == Some(t) {
                        it.prev();
                    }
                }
                None => it.seek_to_last(),
            }
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
