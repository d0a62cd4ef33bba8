//! RocksDB transactions. A read transaction is a snapshot. A write transaction reads the
//! snapshot it began on merged with its own writes (kept in memory, per table), and commits them
//! as one synced `WriteBatch`. One write transaction at a time (the engine's writer lock). A
//! frozen write transaction ([`RocksTxMut::freeze`]) is a read transaction over the snapshot and
//! those writes: what the commit will leave, readable before the batch is durable.

use crate::{
    env::EngineInner,
    error::RocksError,
    export,
    spill::decode_entry,
    view::{
        BaseLast, IterCache, IterPool, Merged, Overlay, OwnedSnapshot, RocksRow, snapshot_last_key,
    },
};
use parking_lot::{Mutex, RawMutex, RwLock, lock_api::ArcMutexGuard};
use reth_hybrid_api::{
    DatabaseError, Tables,
    raw::{RawPair, RawResult, RawTx, RawTxMut},
    sorted::{EmulatedCursor, PairStore, PairStoreExt, TableWrites},
};
use rocksdb::{WriteBatch, WriteOptions};
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

pub(crate) struct TxInner {
    /// ORDER: declared before `snap`, so the pooled iterators drop before the snapshot.
    iters: IterPool,
    snap: OwnedSnapshot,
    /// Per table (`Tables as usize`): the snapshot's last row, read at most once.
    base_last: Vec<BaseLast>,
    /// Uncommitted writes; `None` for read-only transactions. A lock, not a cell, because a
    /// frozen transaction is read by many threads at once.
    overlay: Option<RwLock<Overlay>>,
    /// Set once by `freeze`: the overlay is final and every write is refused.
    frozen: AtomicBool,
    /// Held for the life of a write transaction; released by `freeze`.
    writer: Mutex<Option<ArcMutexGuard<RawMutex, ()>>>,
}

/// A read-only RocksDB transaction (a snapshot).
#[derive(Clone)]
pub struct RocksTx {
    inner: Arc<TxInner>,
}

/// A read-write RocksDB transaction.
pub struct RocksTxMut {
    inner: Arc<TxInner>,
}

impl std::fmt::Debug for RocksTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RocksTx")
    }
}

impl std::fmt::Debug for RocksTxMut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RocksTxMut")
    }
}

impl RocksTx {
    pub(crate) fn begin(engine: Arc<EngineInner>) -> Self {
        Self {
            inner: Arc::new(TxInner {
                iters: IterPool::new(),
                snap: OwnedSnapshot::new(engine),
                base_last: (0..Tables::COUNT).map(|_| BaseLast::new()).collect(),
                overlay: None,
                frozen: AtomicBool::new(false),
                writer: Mutex::new(None),
            }),
        }
    }
}

impl RocksTxMut {
    pub(crate) fn begin(engine: Arc<EngineInner>, writer: ArcMutexGuard<RawMutex, ()>) -> Self {
        let overlay = Overlay::new();
        Self {
            inner: Arc::new(TxInner {
                iters: IterPool::new(),
                snap: OwnedSnapshot::new(engine),
                base_last: (0..Tables::COUNT).map(|_| BaseLast::new()).collect(),
                overlay: Some(RwLock::new(overlay)),
                frozen: AtomicBool::new(false),
                writer: Mutex::new(Some(writer)),
            }),
        }
    }

    /// Whether this transaction has written (or cleared) anything.
    pub fn is_dirty(&self) -> bool {
        self.inner.is_dirty()
    }

    /// A read transaction over this transaction's snapshot and writes, as they are now (see
    /// `RawReplay::freeze`). The engine's writer lock is released here.
    pub fn freeze(self) -> RocksTx {
        if let Some(overlay) = &self.inner.overlay {
            // Under the overlay's lock, which every write takes and checks the flag under: a
            // write from another thread's cursor lands before the freeze or is refused.
            let _no_writes = overlay.write();
            self.inner.frozen.store(true, Ordering::Release);
        }
        drop(self.inner.writer.lock().take());
        RocksTx { inner: self.inner }
    }

    /// Whether this transaction moved writes to disk (past the engine's spill budget), so its
    /// commit is made of SST files rather than a write batch.
    pub fn has_spilled(&self) -> bool {
        self.inner.has_spilled()
    }
}

impl RocksTx {
    /// Whether this (frozen) transaction holds writes; never for a snapshot.
    pub fn is_dirty(&self) -> bool {
        self.inner.is_dirty()
    }

    /// The writes a frozen write transaction holds, as `RawReplay` carries them: a write batch,
    /// or once it spilled, the manifest of SST files written under `<db>/spill/commit-*`.
    pub fn export(&self) -> RawResult<Vec<u8>> {
        self.inner.export()
    }
}

impl TxInner {
    fn is_dirty(&self) -> bool {
        self.overlay.as_ref().is_some_and(|o| o.read().is_dirty())
    }

    /// A point lookup in a table without duplicates: the transaction's own writes (in memory,
    /// then spilled), then RocksDB's `get` on the snapshot, which consults bloom filters and
    /// builds no iterator (a seek costs several times more; reth's tx-hash lookups are gets).
    fn get_plain(&self, table: Tables, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
        if let Some(overlay) = &self.overlay {
            let overlay = overlay.read();
            let t = &overlay.tables[table as usize];
            if let Some(written) = t.writes.get(key) {
                return Ok(written.clone());
            }
            if t.spilled
                && let Some(spill) = &overlay.spill
                && let Some(stored) = spill.get(table, key)?
            {
                return Ok(decode_entry(&stored).map(<[u8]>::to_vec));
            }
            if t.cleared {
                return Ok(None);
            }
        }
        self.snap.get(table, key)
    }

    fn has_spilled(&self) -> bool {
        self.overlay
            .as_ref()
            .is_some_and(|o| o.read().has_spilled())
    }

    fn export(&self) -> RawResult<Vec<u8>> {
        let Some(overlay) = &self.overlay else {
            return Ok(WriteBatch::default().data().to_vec());
        };
        let overlay = overlay.read();
        if self.commits_as_files(&overlay)? {
            self.export_files(&overlay)
        } else {
            Ok(self.write_batch(&overlay)?.data().to_vec())
        }
    }

    /// Whether the commit must be made of SST files rather than a write batch: the writes
    /// spilled, or a table with rows was cleared. A clear is one delete per row, and a batch
    /// would hold them all in memory (tens of GB for a node's tx-hash table, then copied into
    /// the intent); the files stream them from the snapshot, memory staying at the overlay's.
    /// (A range deletion would be one entry, but RocksDB refuses range deletions on a database
    /// with a row cache, which the node's engine has: docs/rocksdb-tuning.md.)
    fn commits_as_files(&self, overlay: &Overlay) -> RawResult<bool> {
        if overlay.has_spilled() {
            return Ok(true);
        }
        for table in Tables::ALL {
            if overlay.tables[table as usize].cleared
                && snapshot_last_key(&self.snap, table)?.is_some()
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The commit as one SST file per changed table (`Metadata`, holding the commit's
    /// sequence, last), streamed from the merged writes: memory stays at the overlay's.
    fn export_files(&self, overlay: &Overlay) -> RawResult<Vec<u8>> {
        let mut tables: Vec<Tables> = Tables::ALL
            .into_iter()
            .filter(|t| *t != Tables::Metadata)
            .collect();
        tables.push(Tables::Metadata);
        let engine = self.snap.engine();
        let mut export = export::Export::begin(&engine.path)?;
        for table in tables {
            let o = &overlay.tables[table as usize];
            if !(o.cleared || o.spilled || !o.writes.is_empty()) {
                continue;
            }
            let view = Merged {
                snap: &self.snap,
                overlay: Some(o),
                spill: overlay.spill.as_ref().filter(|_| o.spilled),
                table,
                cache: None,
                pool: &self.iters,
                base_last: &self.base_last[table as usize],
            };
            export.table(engine, table, |sink| {
                view.for_each_change(|k, v| sink.add(k, v))
            })?;
        }
        export.finish()
    }

    /// The commit as one write batch: the in-memory writes, at most the spill budget. Only for
    /// a transaction that neither spilled nor cleared a table with rows (`commits_as_files`).
    fn write_batch(&self, overlay: &Overlay) -> RawResult<WriteBatch> {
        let mut batch = WriteBatch::default();
        let engine = self.snap.engine();
        for table in Tables::ALL {
            let o = &overlay.tables[table as usize];
            let cf = engine.cf(table);
            debug_assert!(
                !o.cleared || snapshot_last_key(&self.snap, table).is_ok_and(|k| k.is_none()),
                "a clear of {table} with rows must commit as files (commits_as_files)"
            );
            for (k, v) in &o.writes {
                match v {
                    Some(v) => batch.put_cf(cf, k, v),
                    None => batch.delete_cf(cf, k),
                }
            }
        }
        Ok(batch)
    }
}

/// One table as sorted pairs, through a transaction.
pub struct RocksStore {
    /// ORDER: declared before `tx` so the cached iterator drops before the snapshot it reads.
    cache: IterCache,
    tx: Arc<TxInner>,
    table: Tables,
}

impl Clone for RocksStore {
    fn clone(&self) -> Self {
        Self {
            cache: IterCache::default(),
            tx: Arc::clone(&self.tx),
            table: self.table,
        }
    }
}

impl Drop for RocksStore {
    /// The cursor's iterator goes to the transaction's pool for its next cursor on this table.
    fn drop(&mut self) {
        if let Some(it) = self.cache.0.get_mut().take() {
            self.tx.iters.give_back(self.table, it);
        }
    }
}

impl std::fmt::Debug for RocksStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksStore")
            .field("table", &self.table)
            .finish()
    }
}

/// A RocksDB cursor: MDBX's cursor semantics over the merged view.
pub type RocksCursor = EmulatedCursor<RocksStore>;

/// The smallest `len`-byte string greater than `prefix` (`None` if `prefix` is all 0xff).
fn increment(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    for i in (0..out.len()).rev() {
        if out[i] < 0xff {
            out[i] += 1;
            out.truncate(i + 1);
            out.resize(prefix.len(), 0);
            return Some(out);
        }
    }
    None
}

/// The RocksDB key that sits exactly where the pair `(key, value)` would in a dupsort table with
/// `len`-byte keys: `key ++ value` for a well-formed key; for a shorter key every stored pair with
/// a greater key sorts after `key` itself; for a longer one, after the next `len`-byte prefix.
/// `None` means "past every possible row".
fn dup_bound(key: &[u8], value: &[u8], len: usize) -> Option<Vec<u8>> {
    match key.len().cmp(&len) {
        std::cmp::Ordering::Equal => Some([key, value].concat()),
        std::cmp::Ordering::Less => Some(key.to_vec()),
        std::cmp::Ordering::Greater => increment(&key[..len]),
    }
}

impl RocksStore {
    /// Fixed key length of a dupsort table (RocksDB key = key ++ value).
    fn dup_len(&self) -> Option<usize> {
        self.table.dupsort_key_len()
    }

    fn with_view<R>(&self, f: impl FnOnce(&Merged<'_>) -> RawResult<R>) -> RawResult<R> {
        let cache = Some(&self.cache);
        let base_last = &self.tx.base_last[self.table as usize];
        match &self.tx.overlay {
            None => f(&Merged {
                snap: &self.tx.snap,
                overlay: None,
                spill: None,
                table: self.table,
                cache,
                pool: &self.tx.iters,
                base_last,
            }),
            Some(o) => {
                let guard = o.read();
                let table = &guard.tables[self.table as usize];
                f(&Merged {
                    snap: &self.tx.snap,
                    overlay: Some(table),
                    spill: guard.spill.as_ref().filter(|_| table.spilled),
                    table: self.table,
                    cache,
                    pool: &self.tx.iters,
                    base_last,
                })
            }
        }
    }

    /// Applies a write to the overlay under its lock; `f` returns the bytes it added. Past the
    /// engine's spill budget, the in-memory writes move to the spill store.
    fn write(&self, f: impl FnOnce(&mut Overlay) -> RawResult<usize>) -> RawResult<()> {
        // A frozen overlay is shared by readers: refuse before taking its write lock (and again
        // under it, for a write racing the freeze).
        let frozen = self.tx.frozen.load(Ordering::Acquire);
        let mut guard = self
            .tx
            .overlay
            .as_ref()
            .filter(|_| !frozen)
            .map(|o| o.write());
        match guard.as_deref_mut() {
            // Checked under the overlay's lock, which `freeze` takes to set the flag.
            Some(overlay) if !self.tx.frozen.load(Ordering::Acquire) => {
                overlay.bytes += f(overlay)?;
                let engine = self.tx.snap.engine();
                if overlay.bytes > engine.spill_bytes {
                    overlay.spill(&engine.path)?;
                }
                Ok(())
            }
            _ => Err(DatabaseError::Write(Box::new(
                reth_hybrid_api::DatabaseWriteError {
                    info: reth_hybrid_api::DatabaseErrorInfo::new(
                        "read-only transaction",
                        reth_hybrid_api::error::codes::ACCESS,
                    )
                    .with_engine("rocksdb"),
                    operation: reth_hybrid_api::DatabaseWriteOperation::PutUpsert,
                    table_name: self.table.name(),
                    key: Vec::new(),
                },
            ))),
        }
    }

    fn decode(&self, row: Option<RocksRow>) -> RawResult<Option<RawPair>> {
        let Some((rk, rv)) = row else { return Ok(None) };
        match self.dup_len() {
            None => Ok(Some((rk, rv))),
            Some(len) if rk.len() >= len => {
                let mut k = rk;
                let v = k.split_off(len);
                Ok(Some((k, v)))
            }
            Some(len) => Err(RocksError::CorruptDupKey {
                table: self.table,
                len: rk.len(),
                expected: len,
            }
            .into()),
        }
    }

    fn check_dup_key(&self, key: &[u8]) -> RawResult<()> {
        match self.dup_len() {
            Some(len) if key.len() != len => Err(RocksError::WrongDupKeyLength {
                table: self.table,
                len: key.len(),
                expected: len,
            }
            .into()),
            _ => Ok(()),
        }
    }
}

impl PairStore for RocksStore {
    fn table(&self) -> Tables {
        self.table
    }

    fn engine_name(&self) -> &'static str {
        "rocksdb"
    }

    fn value_of(&self, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
        match self.dup_len() {
            None => self.tx.get_plain(self.table, key),
            Some(_) => Ok(self.get_first(key)?),
        }
    }

    fn ge(&self, key: &[u8], value: &[u8]) -> RawResult<Option<RawPair>> {
        match self.dup_len() {
            Some(len) => {
                let Some(target) = dup_bound(key, value, len) else {
                    return Ok(None);
                };
                let row = self.with_view(|v| v.ge(&target))?;
                self.decode(row)
            }
            None => self.with_view(|view| {
                if view.snapshot_only() {
                    return view.ge_pair_snapshot(key, value, false);
                }
                let found = view.ge(key)?;
                match found {
                    Some((k, v)) if k == key && v.as_slice() < value => {
                        let mut next = key.to_vec();
                        next.push(0);
                        view.ge(&next)
                    }
                    other => Ok(other),
                }
            }),
        }
    }

    fn gt(&self, key: &[u8], value: &[u8]) -> RawResult<Option<RawPair>> {
        let fast = self.with_view(|view| {
            if !view.snapshot_only() {
                return Ok(None);
            }
            match self.dup_len() {
                Some(len) if key.len() == len => view.gt_snapshot(&[key, value].concat()).map(Some),
                Some(_) => Ok(None),
                None => view.ge_pair_snapshot(key, value, true).map(Some),
            }
        })?;
        match fast {
            Some(row) => self.decode(row),
            None => {
                let mut after = value.to_vec();
                after.push(0);
                self.ge(key, &after)
            }
        }
    }

    fn lt(&self, key: &[u8], value: &[u8]) -> RawResult<Option<RawPair>> {
        match self.dup_len() {
            Some(len) => {
                let target = dup_bound(key, value, len);
                let row = self.with_view(|v| v.lt(target.as_deref()))?;
                self.decode(row)
            }
            None => self.with_view(|view| {
                if view.snapshot_only() {
                    return view.lt_pair_snapshot(key, value);
                }
                // Last row with key <= `key`; the row at `key` counts only if its value < `value`.
                let mut next = key.to_vec();
                next.push(0);
                match view.lt(Some(&next))? {
                    Some((k, v)) if k == key && v.as_slice() >= value => view.lt(Some(key)),
                    other => Ok(other),
                }
            }),
        }
    }

    fn last(&self) -> RawResult<Option<RawPair>> {
        let row = self.with_view(|v| v.lt(None))?;
        self.decode(row)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.check_dup_key(key)?;
        let table = self.table as usize;
        match self.dup_len() {
            Some(_) => {
                self.write(|o| Ok(o.tables[table].record([key, value].concat(), Some(Vec::new()))))
            }
            None => self.write(|o| Ok(o.tables[table].record(key.to_vec(), Some(value.to_vec())))),
        }
    }

    fn remove(&self, key: &[u8], value: &[u8]) -> RawResult<bool> {
        if !self.contains(key, value)? {
            return Ok(false);
        }
        let rocks_key = if self.dup_len().is_some() {
            [key, value].concat()
        } else {
            key.to_vec()
        };
        let table = self.table as usize;
        self.write(|o| Ok(o.tables[table].record(rocks_key, None)))?;
        Ok(true)
    }

    fn remove_key(&self, key: &[u8]) -> RawResult<bool> {
        let mut pairs = Vec::new();
        let mut next = self.first_of_key(key)?;
        while let Some((k, v)) = next {
            next = self.gt(&k, &v)?.filter(|(nk, _)| *nk == k);
            pairs.push((k, v));
        }
        if pairs.is_empty() {
            return Ok(false);
        }
        let dup = self.dup_len().is_some();
        let table = self.table as usize;
        self.write(|o| {
            let mut bytes = 0;
            for (k, v) in pairs {
                let rocks_key = if dup { [k, v].concat() } else { k };
                bytes += o.tables[table].record(rocks_key, None);
            }
            Ok(bytes)
        })?;
        Ok(true)
    }

    fn count(&self) -> RawResult<usize> {
        let mut n = 0;
        self.with_view(|v| v.scan(|_, _| n += 1))?;
        Ok(n)
    }

    fn clear(&self) -> RawResult<()> {
        let table = self.table;
        self.write(|o| {
            // ORDER: the spilled writes go first; if that fails, nothing changed.
            if let Some(spill) = &o.spill {
                spill.clear_table(table)?;
            }
            let t = &mut o.tables[table as usize];
            t.cleared = true;
            t.spilled = false;
            t.spill_last = None;
            t.writes.clear();
            Ok(0)
        })
    }
}

fn store(inner: &Arc<TxInner>, table: Tables) -> RocksStore {
    RocksStore {
        cache: IterCache::default(),
        tx: Arc::clone(inner),
        table,
    }
}

macro_rules! impl_raw_tx {
    ($ty:ty) => {
        impl RawTx for $ty {
            type Cursor = RocksCursor;

            fn get(&self, table: Tables, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
                match table.dupsort_key_len() {
                    None => self.inner.get_plain(table, key),
                    Some(_) => store(&self.inner, table).get_first(key),
                }
            }

            fn cursor(&self, table: Tables) -> RawResult<RocksCursor> {
                Ok(EmulatedCursor::new(store(&self.inner, table)))
            }

            fn entries(&self, table: Tables) -> RawResult<usize> {
                store(&self.inner, table).count()
            }

            fn commit(self) -> RawResult<()> {
                self.finish()
            }

            fn abort(self) {}
        }
    };
}

impl_raw_tx!(RocksTx);
impl_raw_tx!(RocksTxMut);

impl RocksTx {
    fn finish(self) -> RawResult<()> {
        Ok(())
    }
}

impl RocksTxMut {
    /// A commit on this engine alone. A transaction that spilled is ingested table by table
    /// (RocksDB's Rust API has no atomic multi-column-family ingestion): a crash in between
    /// leaves the first tables committed. In reth-hybrid every RocksDB commit goes through the
    /// hybrid instead, whose intent log names the files and replays them all after a crash.
    fn finish(self) -> RawResult<()> {
        let engine = self.inner.snap.engine();
        let Some(overlay) = &self.inner.overlay else {
            return Ok(());
        };
        let overlay = overlay.read();
        if self.inner.commits_as_files(&overlay)? {
            let manifest = self.inner.export_files(&overlay)?;
            let files = export::decode(&manifest)?.expect("export_files writes a manifest");
            let applied = export::apply(engine, &files);
            export::remove(&engine.path, &files);
            applied
        } else {
            write_batch(engine, self.inner.write_batch(&overlay)?)
        }
    }
}

/// Writes one batch atomically, synced when the engine promises durability.
pub(crate) fn write_batch(engine: &EngineInner, batch: WriteBatch) -> RawResult<()> {
    write_batch_with(engine, batch, engine.sync_writes)
}

/// Writes one batch atomically without syncing the WAL (see `apply_exported_deferred`).
pub(crate) fn write_batch_unsynced(engine: &EngineInner, batch: WriteBatch) -> RawResult<()> {
    write_batch_with(engine, batch, false)
}

fn write_batch_with(engine: &EngineInner, batch: WriteBatch, sync: bool) -> RawResult<()> {
    let mut wo = WriteOptions::default();
    wo.set_sync(sync);
    engine
        .db
        .write_opt(batch, &wo)
        .map_err(|e| RocksError::Commit(e).into())
}

impl RawTxMut for RocksTxMut {
    type CursorMut = RocksCursor;

    fn put(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()> {
        store(&self.inner, table).put_pair(key, value)
    }

    fn append(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()> {
        store(&self.inner, table).append_pair(
            key,
            value,
            reth_hybrid_api::DatabaseWriteOperation::PutAppend,
        )
    }

    fn delete(&self, table: Tables, key: &[u8], value: Option<&[u8]>) -> RawResult<bool> {
        store(&self.inner, table).delete_pair(key, value)
    }

    fn clear(&self, table: Tables) -> RawResult<()> {
        store(&self.inner, table).clear()
    }

    fn cursor_mut(&self, table: Tables) -> RawResult<RocksCursor> {
        Ok(EmulatedCursor::new(store(&self.inner, table)))
    }
}
