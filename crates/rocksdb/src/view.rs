//! A transaction's view of one column family: the RocksDB snapshot it began on, overlaid with
//! its own uncommitted writes (read-your-writes without RocksDB transactions).

use crate::{
    env::EngineInner,
    error::read_err,
    spill::{SpillStore, decode_entry},
};
use reth_hybrid_api::{Tables, raw::RawResult};
use rocksdb::{DB, ReadOptions, SnapshotWithThreadMode};
use std::{collections::BTreeMap, ops::Bound, sync::Arc};

/// An owned snapshot: the `Arc` keeps the database alive, and the snapshot field is declared
/// first so it is released before the `Arc` (its read options only name it, and are freed after).
pub(crate) struct OwnedSnapshot {
    snap: SnapshotWithThreadMode<'static, DB>,
    /// Read options naming `snap`, built once: a point read otherwise allocates and frees a
    /// fresh set per call.
    get_opts: ReadOptions,
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
        let mut get_opts = ReadOptions::default();
        get_opts.set_snapshot(&snap);
        Self {
            snap,
            get_opts,
            engine,
        }
    }

    pub(crate) fn engine(&self) -> &Arc<EngineInner> {
        &self.engine
    }

    /// The snapshot's value at `key` (a point lookup: bloom filters, no iterator).
    pub(crate) fn get(&self, table: Tables, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
        self.engine
            .db
            .get_cf_opt(self.engine.cf(table), key, &self.get_opts)
            .map_err(|e| read_err("get", table, e))
    }

    fn iter(&self, table: Tables) -> rocksdb::DBRawIteratorWithThreadMode<'_, DB> {
        let mut ro = ReadOptions::default();
        ro.set_total_order_seek(true);
        self.snap.raw_iterator_cf_opt(self.engine.cf(table), ro)
    }

    /// An iterator for one pass over the whole table (a clear's deletes): its blocks are not
    /// kept in the block cache, so a scan of a large table neither grows the process by the
    /// cache's size nor evicts the rows readers use.
    pub(crate) fn scan_iter(&self, table: Tables) -> rocksdb::DBRawIteratorWithThreadMode<'_, DB> {
        let mut ro = ReadOptions::default();
        ro.set_total_order_seek(true);
        ro.fill_cache(false);
        self.snap.raw_iterator_cf_opt(self.engine.cf(table), ro)
    }

    /// An iterator whose borrow of this snapshot is erased. Callers keep it only where it is
    /// dropped before this snapshot: per call, in an `IterCache` owned next to the snapshot's
    /// `Arc`, or in the transaction's `IterPool`, declared before the snapshot.
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
    /// Some writes were moved to the transaction's spill store (older than `writes`).
    pub(crate) spilled: bool,
    /// The spill store's last entry of this table (a tombstone is `None`), so appends, which
    /// ask for the last row at every call, need no merge.
    pub(crate) spill_last: Option<(Vec<u8>, Option<Vec<u8>>)>,
    pub(crate) writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

/// Heap bytes a write is counted for: its key and value plus the map's and vectors' overhead
/// (measured ~150 bytes per 32-byte-key row on glibc; counted generously).
const WRITE_OVERHEAD: usize = 128;

impl TableOverlay {
    /// Records a write; returns the bytes it is counted for towards the spill budget.
    pub(crate) fn record(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) -> usize {
        let bytes = key.len() + value.as_ref().map_or(0, Vec::len) + WRITE_OVERHEAD;
        self.writes.insert(key, value);
        bytes
    }
}

/// A write transaction's uncommitted writes: per table (`Tables as usize`), what is in memory,
/// and the spill store holding what no longer fits.
#[derive(Default)]
pub(crate) struct Overlay {
    pub(crate) tables: Vec<TableOverlay>,
    /// Bytes counted for the in-memory writes since the last spill.
    pub(crate) bytes: usize,
    pub(crate) spill: Option<SpillStore>,
}

impl Overlay {
    pub(crate) fn new() -> Self {
        Self {
            tables: vec![TableOverlay::default(); Tables::COUNT],
            bytes: 0,
            spill: None,
        }
    }

    pub(crate) fn is_dirty(&self) -> bool {
        self.tables
            .iter()
            .any(|t| t.cleared || t.spilled || !t.writes.is_empty())
    }

    pub(crate) fn has_spilled(&self) -> bool {
        self.tables.iter().any(|t| t.spilled)
    }

    /// Moves every in-memory write into the spill store (created at the first spill). Table by
    /// table: a failure leaves each table's writes either in memory or in the store, never lost.
    pub(crate) fn spill(&mut self, engine_path: &std::path::Path) -> RawResult<()> {
        if self.spill.is_none() {
            self.spill = Some(SpillStore::create(engine_path)?);
        }
        let store = self.spill.as_mut().expect("created above");
        for table in Tables::ALL {
            let t = &mut self.tables[table as usize];
            if t.writes.is_empty() {
                continue;
            }
            store.write_run(table, &t.writes)?;
            let writes = std::mem::take(&mut t.writes);
            // A newer run's entry replaces an older one's at the same key.
            if let Some((k, v)) = writes.into_iter().next_back()
                && t.spill_last.as_ref().is_none_or(|(last, _)| k >= *last)
            {
                t.spill_last = Some((k, v));
            }
            t.spilled = true;
        }
        self.bytes = 0;
        Ok(())
    }
}

/// Rows as RocksDB stores them: `(rocks key, rocks value)`.
pub(crate) type RocksRow = (Vec<u8>, Vec<u8>);

fn base_row(it: &rocksdb::DBRawIteratorWithThreadMode<'_, DB>) -> Option<RocksRow> {
    it.item().map(|(k, v)| (k.to_vec(), v.to_vec()))
}

/// Merged reads over the snapshot and an overlay (or the snapshot alone).
pub(crate) struct Merged<'a> {
    pub(crate) snap: &'a OwnedSnapshot,
    pub(crate) overlay: Option<&'a TableOverlay>,
    /// The transaction's spill store, when this table has spilled writes.
    pub(crate) spill: Option<&'a SpillStore>,
    pub(crate) table: Tables,
    /// The cursor's iterator cache, if the caller is a cursor.
    pub(crate) cache: Option<&'a IterCache>,
    /// The transaction's spare iterators, taken when the cursor has none yet.
    pub(crate) pool: &'a IterPool,
    /// The transaction's memo of the snapshot's last row of this table.
    pub(crate) base_last: &'a BaseLast,
}

/// A snapshot iterator whose borrow of the snapshot is erased; see [`IterCache`].
pub(crate) type SnapIter = rocksdb::DBRawIteratorWithThreadMode<'static, DB>;

/// One cursor's positioned snapshot iterator, kept between its calls. It must be declared (and
/// so dropped) before the `Arc` that keeps the snapshot alive, which `RocksStore` does.
#[derive(Default)]
pub(crate) struct IterCache(pub(crate) parking_lot::Mutex<Option<SnapIter>>);

/// Iterators that a transaction's dropped cursors left, per table, for its next cursors.
/// Creating a RocksDB iterator (pinning the memtables and a file iterator per level) costs more
/// than a seek, and reth opens a new cursor for every historical lookup. Owned by the
/// transaction and declared before its snapshot, so every pooled iterator drops first.
pub(crate) struct IterPool(Vec<parking_lot::Mutex<Vec<SnapIter>>>);

/// Iterators kept per table: more than the cursors reth holds open on one table at once.
const POOLED_PER_TABLE: usize = 4;

impl IterPool {
    pub(crate) fn new() -> Self {
        Self(
            (0..Tables::COUNT)
                .map(|_| parking_lot::Mutex::new(Vec::new()))
                .collect(),
        )
    }

    fn take(&self, table: Tables) -> Option<SnapIter> {
        self.0[table as usize].lock().pop()
    }

    /// Keeps `it` for the table's next cursor (dropped when the pool is full).
    pub(crate) fn give_back(&self, table: Tables, it: SnapIter) {
        let mut pool = self.0[table as usize].lock();
        if pool.len() < POOLED_PER_TABLE {
            pool.push(it);
        }
    }
}

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

/// Positions `it` at the last key <= `target`, staying when it already sits on `target`.
fn position_le(it: &mut SnapIter, target: &[u8]) {
    if it.valid() && it.key() == Some(target) {
        return;
    }
    it.seek_for_prev(target);
}

/// Whether `next == key ++ [0]`, the smallest key after `key`.
fn is_successor(key: &[u8], next: &[u8]) -> bool {
    next.len() == key.len() + 1 && next.starts_with(key) && next[key.len()] == 0
}

/// A transaction's own writes to one table, walked in one direction: the in-memory writes over
/// the spilled ones (the in-memory entry wins where both hold a key). Entries are
/// `(rocks key, Some(value))` or `(rocks key, None)` for a tombstone.
struct Upper<'a> {
    mem: MemWrites<'a>,
    mem_cur: Option<MemWrite<'a>>,
    spill: Option<rocksdb::DBRawIteratorWithThreadMode<'a, DB>>,
    forward: bool,
    table: Tables,
}

/// One in-memory write: a RocksDB key and its value (`None`: a tombstone).
type MemWrite<'a> = (&'a Vec<u8>, &'a Option<Vec<u8>>);
/// The in-memory writes in one direction from a bound.
type MemWrites<'a> = Box<dyn Iterator<Item = MemWrite<'a>> + 'a>;

static NO_WRITES: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();

impl<'a> Upper<'a> {
    /// Whether `a` comes before `b` in the walk's direction.
    fn before(&self, a: &[u8], b: &[u8]) -> bool {
        if self.forward { a < b } else { a > b }
    }

    fn check_spill(&self) -> RawResult<()> {
        match &self.spill {
            Some(it) => it
                .status()
                .map_err(|e| read_err("spill read", self.table, e)),
            None => Ok(()),
        }
    }

    fn peek(&self) -> Option<(&[u8], Option<&[u8]>)> {
        let mem = self.mem_cur.map(|(k, v)| (k.as_slice(), v.as_deref()));
        let spilled = self
            .spill
            .as_ref()
            .and_then(|it| Some((it.key()?, decode_entry(it.value()?))));
        match (mem, spilled) {
            (Some(m), Some(s)) if self.before(s.0, m.0) => Some(s),
            (Some(m), _) => Some(m),
            (None, s) => s,
        }
    }

    /// Steps past the entry `peek` shows (in both layers, when both hold its key).
    fn advance(&mut self) -> RawResult<()> {
        let mem_key = self.mem_cur.map(|(k, _)| k.as_slice());
        let spill_key = self.spill.as_ref().and_then(|it| it.key());
        let (step_mem, step_spill) = match (mem_key, spill_key) {
            (Some(m), Some(s)) if m == s => (true, true),
            (Some(m), Some(s)) => (self.before(m, s), !self.before(m, s)),
            (m, s) => (m.is_some(), s.is_some()),
        };
        if step_mem {
            self.mem_cur = self.mem.next();
        }
        if step_spill && let Some(it) = self.spill.as_mut() {
            if self.forward { it.next() } else { it.prev() }
        }
        self.check_spill()
    }
}

impl<'a> Merged<'a> {
    fn base_visible(&self) -> bool {
        !self.overlay.is_some_and(|o| o.cleared)
    }

    /// Whether the snapshot alone answers: the transaction has no writes to this table to
    /// merge (every read transaction, and a write transaction's untouched tables).
    pub(crate) fn snapshot_only(&self) -> bool {
        !self
            .overlay
            .is_some_and(|o| o.cleared || o.spilled || !o.writes.is_empty())
    }

    /// First row of a plain table after the pair `(key, value)` (`strict`) or at it, from the
    /// snapshot alone ([`Self::snapshot_only`]): the row at `key` counts only if its value is
    /// greater than (or equal to) `value`. One positioning, so a cursor's `next` is one
    /// iterator step.
    pub(crate) fn ge_pair_snapshot(
        &self,
        key: &[u8],
        value: &[u8],
        strict: bool,
    ) -> RawResult<Option<RocksRow>> {
        debug_assert!(self.snapshot_only());
        self.with_snapshot_iter(|it| {
            position_ge(it, key);
            if let Some((k, v)) = it.item()
                && k == key
                && (v < value || (strict && v == value))
            {
                it.next();
            }
        })
    }

    /// First row with a key > `target`, from the snapshot alone.
    pub(crate) fn gt_snapshot(&self, target: &[u8]) -> RawResult<Option<RocksRow>> {
        debug_assert!(self.snapshot_only());
        self.with_snapshot_iter(|it| {
            position_ge(it, target);
            if it.key() == Some(target) {
                it.next();
            }
        })
    }

    /// Positions this call's snapshot iterator with `position` and copies out its row. A
    /// cursor's iterator is used in place, under one lock of its cache.
    fn with_snapshot_iter(
        &self,
        position: impl FnOnce(&mut SnapIter),
    ) -> RawResult<Option<RocksRow>> {
        if let Some(cache) = self.cache
            && self.base_visible()
        {
            let mut cached = cache.0.lock();
            let it = match &mut *cached {
                Some(it) => it,
                empty => empty.insert(
                    self.pool
                        .take(self.table)
                        .unwrap_or_else(|| self.snap.iter_static(self.table)),
                ),
            };
            position(it);
            return self.check(it).map(|()| base_row(it));
        }
        let mut it = self.take_iter();
        let found = match it.as_mut() {
            Some(it) => {
                position(it);
                self.check(it).map(|()| base_row(it))
            }
            None => Ok(None),
        };
        self.put_back(it);
        found
    }

    /// Last row of a plain table before the pair `(key, value)`, from the snapshot alone: the
    /// row at `key` counts only if its value is < `value`. One positioning, so a cursor's
    /// `prev` is one iterator step.
    pub(crate) fn lt_pair_snapshot(&self, key: &[u8], value: &[u8]) -> RawResult<Option<RocksRow>> {
        debug_assert!(self.snapshot_only());
        self.with_snapshot_iter(|it| {
            position_le(it, key);
            if let Some((k, v)) = it.item()
                && k == key
                && v >= value
            {
                it.prev();
            }
        })
    }

    fn check(&self, it: &rocksdb::DBRawIteratorWithThreadMode<'_, DB>) -> RawResult<()> {
        it.status().map_err(|e| read_err("iterator", self.table, e))
    }

    /// The transaction's writes from `target` on (`None`: from the first), forward; or before
    /// `target` (`None`: from the last), backward.
    fn upper(&self, target: Option<&[u8]>, forward: bool) -> RawResult<Upper<'a>> {
        let writes: &'a BTreeMap<Vec<u8>, Option<Vec<u8>>> =
            self.overlay.map_or(&NO_WRITES, |o| &o.writes);
        let mut mem: MemWrites<'a> = match (forward, target) {
            (true, None) => Box::new(writes.iter()),
            (true, Some(t)) => {
                Box::new(writes.range::<[u8], _>((Bound::Included(t), Bound::Unbounded)))
            }
            (false, None) => Box::new(writes.iter().rev()),
            (false, Some(t)) => Box::new(
                writes
                    .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(t)))
                    .rev(),
            ),
        };
        let spill = self
            .spill
            .and_then(|store| store.iter(self.table))
            .map(|mut it| {
                match (forward, target) {
                    (true, None) => it.seek_to_first(),
                    (true, Some(t)) => it.seek(t),
                    (false, None) => it.seek_to_last(),
                    (false, Some(t)) => {
                        it.seek_for_prev(t);
                        if it.valid() && it.key() == Some(t) {
                            it.prev();
                        }
                    }
                }
                it
            });
        let upper = Upper {
            mem_cur: mem.next(),
            mem,
            spill,
            forward,
            table: self.table,
        };
        upper.check_spill()?;
        Ok(upper)
    }

    /// The snapshot iterator for this call: the cursor's cached one if it has one (so a step
    /// from the row it sits on is a `next`/`prev`, not a new seek), else a spare one of the
    /// transaction's, else a new one.
    fn take_iter(&self) -> Option<SnapIter> {
        if !self.base_visible() {
            return None;
        }
        self.cache
            .and_then(|c| c.0.lock().take())
            .or_else(|| self.pool.take(self.table))
            .or_else(|| Some(self.snap.iter_static(self.table)))
    }

    fn put_back(&self, it: Option<SnapIter>) {
        match (self.cache, it) {
            (Some(cache), Some(it)) => *cache.0.lock() = Some(it),
            (None, Some(it)) => self.pool.give_back(self.table, it),
            (_, None) => {}
        }
    }

    /// The last visible row from the cached snapshot last row and the transaction's last write
    /// (in memory or spilled), when that decides it; `None` when a tombstone at the top needs
    /// the full merge.
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
        let in_memory = self.overlay.and_then(|o| o.writes.last_key_value());
        let spilled = self
            .spill
            .and(self.overlay)
            .and_then(|o| o.spill_last.as_ref().map(|(k, v)| (k, v)));
        let top = match (in_memory, spilled) {
            (Some(m), Some(s)) if s.0 > m.0 => Some(s),
            (Some(m), _) => Some(m),
            (None, s) => s,
        };
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
        if self.snapshot_only() {
            return Ok(it.as_ref().and_then(base_row));
        }
        let mut upper = self.upper(Some(target), true)?;
        loop {
            let base = it.as_ref().and_then(base_row);
            match (base, upper.peek()) {
                (None, None) => return Ok(None),
                (Some(b), Some((k, _))) if b.0.as_slice() < k => return Ok(Some(b)),
                (Some(b), None) => return Ok(Some(b)),
                (b, Some((k, value))) => {
                    if let Some(v) = value {
                        return Ok(Some((k.to_vec(), v.to_vec())));
                    }
                    // A tombstone: skip it, and the base row it hides.
                    let same = b.as_ref().is_some_and(|b| b.0 == k);
                    upper.advance()?;
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
        if self.snapshot_only() {
            return Ok(it.as_ref().and_then(base_row));
        }
        let mut upper = self.upper(target, false)?;
        loop {
            let base = it.as_ref().and_then(base_row);
            match (base, upper.peek()) {
                (None, None) => return Ok(None),
                (Some(b), Some((k, _))) if b.0.as_slice() > k => return Ok(Some(b)),
                (Some(b), None) => return Ok(Some(b)),
                (b, Some((k, value))) => {
                    if let Some(v) = value {
                        return Ok(Some((k.to_vec(), v.to_vec())));
                    }
                    let same = b.as_ref().is_some_and(|b| b.0 == k);
                    upper.advance()?;
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
        let mut upper = self.upper(None, true)?;
        loop {
            let base = it.as_ref().and_then(base_row);
            match (base, upper.peek()) {
                (None, None) => return Ok(()),
                (Some((bk, bv)), Some((k, _))) if bk.as_slice() < k => {
                    f(&bk, &bv);
                    advance(&mut it);
                }
                (Some((bk, bv)), None) => {
                    f(&bk, &bv);
                    advance(&mut it);
                }
                (b, Some((k, value))) => {
                    if b.is_some_and(|(bk, _)| bk == k) {
                        advance(&mut it);
                    }
                    if let Some(v) = value {
                        f(k, v);
                    }
                    upper.advance()?;
                }
            }
            if let Some(it) = it.as_ref() {
                self.check(it)?;
            }
        }
    }

    /// Every change committing this transaction makes to the table, in key order: its puts
    /// (`Some`) and tombstones (`None`), and after a `clear` a tombstone for every snapshot row
    /// it did not write again.
    pub(crate) fn for_each_change(
        &self,
        mut f: impl FnMut(&[u8], Option<&[u8]>) -> RawResult<()>,
    ) -> RawResult<()> {
        let cleared = !self.base_visible();
        let mut it = cleared.then(|| self.snap.scan_iter(self.table));
        if let Some(it) = it.as_mut() {
            it.seek_to_first();
            self.check(it)?;
        }
        let mut upper = self.upper(None, true)?;
        loop {
            let base = it
                .as_ref()
                .filter(|it| it.valid())
                .and_then(|it| it.key())
                .map(<[u8]>::to_vec);
            match (base, upper.peek()) {
                (None, None) => return Ok(()),
                (Some(bk), Some((k, _))) if bk.as_slice() < k => {
                    f(&bk, None)?;
                    advance(&mut it);
                }
                (Some(bk), None) => {
                    f(&bk, None)?;
                    advance(&mut it);
                }
                (b, Some((k, value))) => {
                    if b.is_some_and(|bk| bk == k) {
                        advance(&mut it);
                    }
                    f(k, value)?;
                    upper.advance()?;
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

/// The snapshot's last key in `table` (`None`: the table is empty there).
pub(crate) fn snapshot_last_key(snap: &OwnedSnapshot, table: Tables) -> RawResult<Option<Vec<u8>>> {
    let mut it = snap.iter(table);
    it.seek_to_last();
    it.status().map_err(|e| read_err("scan", table, e))?;
    Ok(it.key().map(<[u8]>::to_vec))
}
