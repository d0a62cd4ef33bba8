//! MDBX's table and cursor semantics, written once over any sorted store of `(key, value)`
//! pairs. Engines without MDBX's cursors (RocksDB, the BTreeMap model) implement [`PairStore`]
//! and get MDBX's behaviour from [`EmulatedCursor`] and [`TableWrites`].
//!
//! MDBX orders a table as pairs: by key, then (dupsort) by value bytes; a plain table has one
//! pair per key. Every positioning rule below was read off libmdbx and is pinned by the
//! conformance suite, which runs the same operations against real MDBX. Where libmdbx's
//! position after an operation is not pinned (marked "unpinned"), the cursor keeps a sensible
//! position, and [`EmulatedCursor::is_pinned`] tells the conformance harness not to compare.

use crate::{
    DatabaseError, DatabaseErrorInfo, DatabaseWriteOperation, Tables,
    error::codes,
    raw::{RawCursor, RawCursorMut, RawPair, RawResult},
};
use std::fmt::Debug;

/// `ENODATA`: MDBX's answer to deleting through an unpositioned cursor.
pub const NO_DATA: i32 = 61;

/// One table of an engine as a sorted set of pairs, read through the owning transaction (so a
/// write transaction sees its own writes).
pub trait PairStore: Send + Debug {
    fn table(&self) -> Tables;
    /// Name for errors (`rocksdb`, `model`).
    fn engine_name(&self) -> &'static str;
    /// First pair `>= (key, value)`.
    fn ge(&self, key: &[u8], value: &[u8]) -> RawResult<Option<RawPair>>;
    /// Last pair `< (key, value)`.
    fn lt(&self, key: &[u8], value: &[u8]) -> RawResult<Option<RawPair>>;
    /// First pair `> (key, value)`: a cursor's `next`. Stores may answer it in one step.
    fn gt(&self, key: &[u8], value: &[u8]) -> RawResult<Option<RawPair>> {
        self.ge(key, &succ_value(value))
    }
    /// The value at `key` in a table without duplicates: a cursor's `seek_exact` there. A store
    /// whose point lookup is cheaper than a seek overrides it (RocksDB: bloom filters and the
    /// row cache instead of an iterator).
    fn value_of(&self, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
        Ok(self.ge(key, &[])?.filter(|(k, _)| k == key).map(|(_, v)| v))
    }
    /// Last pair of the table.
    fn last(&self) -> RawResult<Option<RawPair>>;
    /// Adds a pair; on a plain table it replaces the key's value.
    fn insert(&self, key: &[u8], value: &[u8]) -> RawResult<()>;
    /// Removes exactly this pair; `Ok(false)` if absent.
    fn remove(&self, key: &[u8], value: &[u8]) -> RawResult<bool>;
    /// Removes every pair of `key`; `Ok(false)` if there was none.
    fn remove_key(&self, key: &[u8]) -> RawResult<bool>;
    fn count(&self) -> RawResult<usize>;
    fn clear(&self) -> RawResult<()>;
}

fn succ_value(value: &[u8]) -> Vec<u8> {
    let mut v = value.to_vec();
    v.push(0);
    v
}

/// The smallest key greater than `key`.
fn succ_key(key: &[u8]) -> Vec<u8> {
    succ_value(key)
}

/// Derived lookups every store gets.
pub trait PairStoreExt: PairStore {
    fn first(&self) -> RawResult<Option<RawPair>> {
        self.ge(&[], &[])
    }
    fn first_of_key(&self, key: &[u8]) -> RawResult<Option<RawPair>> {
        Ok(self.ge(key, &[])?.filter(|(k, _)| k == key))
    }
    fn last_of_key(&self, key: &[u8]) -> RawResult<Option<RawPair>> {
        Ok(self.lt(&succ_key(key), &[])?.filter(|(k, _)| k == key))
    }
    /// First pair of the first key greater than `key`.
    fn first_after_key(&self, key: &[u8]) -> RawResult<Option<RawPair>> {
        self.ge(&succ_key(key), &[])
    }
    fn contains(&self, key: &[u8], value: &[u8]) -> RawResult<bool> {
        Ok(self
            .ge(key, value)?
            .is_some_and(|(k, v)| k == key && v == value))
    }
}
impl<S: PairStore + ?Sized> PairStoreExt for S {}

fn write_err<S: PairStore + ?Sized>(
    s: &S,
    code: i32,
    op: DatabaseWriteOperation,
    key: &[u8],
) -> DatabaseError {
    let message = match code {
        codes::KEY_EXIST => "key/data pair already exists",
        codes::KEY_MISMATCH => "key is out of order for an append",
        _ => "write failed",
    };
    let info = DatabaseErrorInfo::new(format!("{message} in table {}", s.table()), code)
        .with_engine(s.engine_name());
    DatabaseError::write(info, op, s.table().name(), key)
}

fn no_data<S: PairStore + ?Sized>(s: &S) -> DatabaseError {
    DatabaseError::Delete(
        DatabaseErrorInfo::new(
            format!("cursor is not on a row in table {}", s.table()),
            NO_DATA,
        )
        .with_engine(s.engine_name()),
    )
}

/// MDBX's write rules for one table, on top of a [`PairStore`].
pub trait TableWrites: PairStore {
    /// Upsert: plain tables replace, dupsort tables add the pair (a no-op if present).
    fn put_pair(&self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.insert(key, value)
    }

    /// `MDBX_NOOVERWRITE` (plain) / `MDBX_NODUPDATA` (dupsort). On `KEY_EXIST` returns the
    /// existing pair so a cursor can sit on it, as MDBX's does.
    fn insert_new(&self, key: &[u8], value: &[u8]) -> Result<(), (DatabaseError, Option<RawPair>)> {
        let existing = if self.table().is_dupsort() {
            self.contains(key, value)
                .map_err(|e| (e, None))?
                .then(|| (key.to_vec(), value.to_vec()))
        } else {
            self.first_of_key(key).map_err(|e| (e, None))?
        };
        if let Some(pair) = existing {
            return Err((
                write_err(
                    self,
                    codes::KEY_EXIST,
                    DatabaseWriteOperation::CursorInsert,
                    key,
                ),
                Some(pair),
            ));
        }
        self.insert(key, value).map_err(|e| (e, None))
    }

    /// `MDBX_APPEND`. Plain tables and cursor appends: the key must be >= the table's last key
    /// (dupsort: only the key is checked). A transaction-level append on a dupsort table
    /// (`mdbx_put`) instead checks the key's own duplicates: the value must be >= the key's last
    /// duplicate (equal is a no-op), and the key may be anywhere.
    fn append_pair(&self, key: &[u8], value: &[u8], op: DatabaseWriteOperation) -> RawResult<()> {
        let out_of_order = if self.table().is_dupsort() && op == DatabaseWriteOperation::PutAppend {
            self.last_of_key(key)?
                .is_some_and(|(_, last)| value < last.as_slice())
        } else {
            self.last()?.is_some_and(|(last, _)| key < last.as_slice())
        };
        if out_of_order {
            return Err(write_err(self, codes::KEY_MISMATCH, op, key));
        }
        self.insert(key, value)
    }

    /// `MDBX_APPENDDUP`: the value must sort after the last duplicate of `key`.
    fn append_dup_pair(&self, key: &[u8], value: &[u8]) -> RawResult<()> {
        if let Some((_, last)) = self.last_of_key(key)?
            && value <= last.as_slice()
        {
            return Err(write_err(
                self,
                codes::KEY_MISMATCH,
                DatabaseWriteOperation::CursorAppendDup,
                key,
            ));
        }
        self.insert(key, value)
    }

    /// `delete(key, None)` removes the key; `Some(v)` exactly that pair.
    fn delete_pair(&self, key: &[u8], value: Option<&[u8]>) -> RawResult<bool> {
        match value {
            None => self.remove_key(key),
            Some(v) => self.remove(key, v),
        }
    }

    fn get_first(&self, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
        Ok(self.first_of_key(key)?.map(|(_, v)| v))
    }
}
impl<S: PairStore + ?Sized> TableWrites for S {}

/// Where a cursor is, in MDBX's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CursorState {
    /// Fresh: `next` goes to the first row, `prev` to the last.
    Unset,
    /// On a row.
    At(RawPair),
    /// On the hole left by deleting `deleted` (all its duplicates when `all_dups`): `next` and
    /// `current` give the row after it, `prev` the row before it.
    AfterDelete { deleted: RawPair, all_dups: bool },
    /// After a `seek` past the last key: `prev` gives the last row, `next` nothing.
    PastEnd,
    /// After a failed `seek_exact`: every relative move gives nothing.
    Invalid,
    /// libmdbx's position is not pinned here; we keep an anchor and move from it.
    Unpinned(Option<RawPair>),
}

/// Cursor operations, for asking whether an outcome is pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorOp {
    Current,
    Next,
    Prev,
    NextDup,
    PrevDup,
    NextNoDup,
    LastDup,
    DupCount,
    DeleteCurrent,
    DeleteCurrentDuplicates,
}

/// An MDBX-semantics cursor over a [`PairStore`].
#[derive(Debug)]
pub struct EmulatedCursor<S> {
    store: S,
    state: CursorState,
}

impl<S: PairStore> EmulatedCursor<S> {
    pub fn new(store: S) -> Self {
        Self {
            store,
            state: CursorState::Unset,
        }
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn state(&self) -> &CursorState {
        &self.state
    }

    /// Another handle wrote to this table: MDBX adjusts tracked cursors in ways we do not pin,
    /// so the position becomes unpinned (the anchor stays, for engines that keep going).
    pub fn invalidate(&mut self) {
        let anchor = match &self.state {
            CursorState::At(p) | CursorState::AfterDelete { deleted: p, .. } => Some(p.clone()),
            CursorState::Unpinned(a) => a.clone(),
            _ => None,
        };
        self.state = CursorState::Unpinned(anchor);
    }

    /// Whether MDBX's outcome of `op` in the current state is pinned by the conformance suite.
    pub fn is_pinned(&self, op: CursorOp) -> bool {
        use CursorOp::*;
        match &self.state {
            CursorState::Unset | CursorState::Invalid | CursorState::At(_) => true,
            // `current` past the end depends on libmdbx's page layout (one row or several), and
            // so does the count of the key it may still be on.
            CursorState::PastEnd => !matches!(op, DeleteCurrentDuplicates | Current | DupCount),
            // Right after a delete, as past the end.
            CursorState::AfterDelete { .. } if op == DupCount => false,
            CursorState::AfterDelete {
                deleted: (k, v),
                all_dups,
            } => {
                // With nothing after the hole, libmdbx's `current` and `last_dup` depend on how
                // the deleted key's duplicates were stored.
                let has_successor = || self.store.gt(k, v).is_ok_and(|s| s.is_some());
                // On dupsort tables libmdbx's duplicate sub-cursor after a delete depends on how
                // many duplicates the key had, so only moves that leave the hole are pinned.
                match (op, all_dups, self.dupsort()) {
                    (Next | Prev | NextNoDup, _, _) => true,
                    (NextDup, false, _) => true,
                    // A second delete without moving: fine on plain tables; on dupsort tables it
                    // trips a libmdbx assertion (node_shrink) when the first delete left a key
                    // with one duplicate, so it is never issued there.
                    (DeleteCurrent, false, false) => true,
                    (Current, false, false) | (PrevDup, false, false) => true,
                    (LastDup, true, _) | (Current, true, _) => has_successor(),
                    _ => false,
                }
            }
            CursorState::Unpinned(_) => false,
        }
    }

    /// `append_dup` of a pair equal to the key's last duplicate: libmdbx fails it from an
    /// unpositioned cursor and accepts it (a no-op) from a cursor sitting on that pair; not pinned.
    pub fn is_append_dup_pinned(&self, key: &[u8], value: &[u8]) -> RawResult<bool> {
        Ok(self
            .store
            .last_of_key(key)?
            .is_none_or(|(_, last)| last != value))
    }

    /// From a fresh cursor libmdbx positions the main tree but not always the duplicates, so on
    /// dupsort tables the position after such a move is not pinned.
    fn unpin_on_dupsort(&mut self) {
        if self.dupsort()
            && let CursorState::At(p) = &self.state
        {
            self.state = CursorState::Unpinned(Some(p.clone()));
        }
    }

    fn dupsort(&self) -> bool {
        self.store.table().is_dupsort()
    }

    fn land(&mut self, pair: Option<RawPair>) -> Option<RawPair> {
        if let Some((k, v)) = &pair {
            match &mut self.state {
                // A walk: the row's copy reuses the buffers of the row the cursor leaves.
                CursorState::At((sk, sv)) => {
                    sk.clear();
                    sk.extend_from_slice(k);
                    sv.clear();
                    sv.extend_from_slice(v);
                }
                state => *state = CursorState::At((k.clone(), v.clone())),
            }
        }
        pair
    }

    /// Unpinned states behave like the row they anchor on (or like a fresh cursor).
    fn resolve_unpinned(&mut self) {
        if let CursorState::Unpinned(anchor) = &self.state {
            self.state = match anchor {
                Some(p) => CursorState::At(p.clone()),
                None => CursorState::Unset,
            };
        }
    }

    fn move_next(&mut self, op: CursorOp) -> RawResult<Option<RawPair>> {
        self.resolve_unpinned();
        let same_key_only = op == CursorOp::NextDup;
        let next_key = op == CursorOp::NextNoDup;
        // The hot path (a walk) borrows the row it sits on instead of cloning it.
        if let CursorState::At((k, v)) = &self.state {
            let found = if next_key {
                self.store.first_after_key(k)?
            } else {
                self.store.gt(k, v)?
            };
            return match found.filter(|(fk, _)| !same_key_only || fk == k) {
                Some(p) => Ok(self.land(Some(p))),
                None => {
                    // Plain next and any next_dup stay on the row; the rest are unpinned.
                    if !(same_key_only || (op == CursorOp::Next && !self.dupsort())) {
                        self.state = CursorState::Unpinned(Some((k.clone(), v.clone())));
                    }
                    Ok(None)
                }
            };
        }
        match self.state.clone() {
            CursorState::Unset => {
                let first = self.store.first()?;
                self.state = CursorState::Unpinned(None);
                let found = self.land(first);
                self.unpin_on_dupsort();
                Ok(found)
            }
            CursorState::Invalid => Ok(None),
            CursorState::PastEnd => {
                // Forward moves past the end give nothing; where they leave libmdbx's cursor
                // depends on its page layout, so it is not pinned.
                self.state = CursorState::Unpinned(self.store.last()?);
                Ok(None)
            }
            CursorState::AfterDelete {
                deleted: (k, v), ..
            } => {
                let found = if next_key {
                    self.store.first_after_key(&k)?
                } else {
                    self.store.gt(&k, &v)?
                };
                let found = found.filter(|(fk, _)| !same_key_only || *fk == k);
                match found {
                    Some(p) => Ok(self.land(Some(p))),
                    None => {
                        let before = self.store.lt(&k, &v)?;
                        let plain = !self.dupsort();
                        self.state = match (&self.state, op) {
                            (
                                CursorState::AfterDelete {
                                    all_dups: false, ..
                                },
                                CursorOp::Next,
                            ) if plain && before.is_some() => {
                                CursorState::At(before.expect("checked"))
                            }
                            _ => CursorState::Unpinned(before),
                        };
                        Ok(None)
                    }
                }
            }
            CursorState::At(_) | CursorState::Unpinned(_) => unreachable!("handled above"),
        }
    }

    fn move_prev(&mut self, op: CursorOp) -> RawResult<Option<RawPair>> {
        self.resolve_unpinned();
        let same_key_only = op == CursorOp::PrevDup;
        if let CursorState::At((k, v)) = &self.state {
            let found = self
                .store
                .lt(k, v)?
                .filter(|(fk, _)| !same_key_only || fk == k);
            return match found {
                Some(p) => Ok(self.land(Some(p))),
                None => {
                    if !same_key_only && self.dupsort() {
                        self.state = CursorState::Unpinned(Some((k.clone(), v.clone())));
                    }
                    Ok(None)
                }
            };
        }
        match self.state.clone() {
            CursorState::Unset => {
                let last = self.store.last()?;
                self.state = CursorState::Unpinned(None);
                let found = self.land(last);
                self.unpin_on_dupsort();
                Ok(found)
            }
            CursorState::Invalid => Ok(None),
            CursorState::PastEnd => {
                if same_key_only {
                    self.state = CursorState::Unpinned(self.store.last()?);
                    return Ok(None);
                }
                let last = self.store.last()?;
                Ok(self.land(last))
            }
            CursorState::AfterDelete {
                deleted: (k, v), ..
            } => {
                let found = self
                    .store
                    .lt(&k, &v)?
                    .filter(|(fk, _)| !same_key_only || *fk == k);
                match found {
                    Some(p) => Ok(self.land(Some(p))),
                    None => {
                        let after = self.store.gt(&k, &v)?;
                        self.state = CursorState::Unpinned(after);
                        Ok(None)
                    }
                }
            }
            CursorState::At(_) | CursorState::Unpinned(_) => unreachable!("handled above"),
        }
    }

    /// Removes the row (or all rows of its key) under the cursor.
    fn delete_here(&mut self, all_dups: bool) -> RawResult<()> {
        self.resolve_unpinned();
        let target = match self.state.clone() {
            CursorState::At(p) => p,
            CursorState::AfterDelete {
                deleted: (k, v), ..
            } => match self.store.gt(&k, &v)? {
                Some(p) => p,
                None => return Err(no_data(&self.store)),
            },
            _ => return Err(no_data(&self.store)),
        };
        let deleted = if all_dups {
            let last = self
                .store
                .last_of_key(&target.0)?
                .unwrap_or_else(|| target.clone());
            self.store.remove_key(&target.0)?;
            last
        } else {
            self.store.remove(&target.0, &target.1)?;
            target
        };
        self.state = CursorState::AfterDelete { deleted, all_dups };
        Ok(())
    }
}

impl<S: PairStore> RawCursor for EmulatedCursor<S> {
    fn first(&mut self) -> RawResult<Option<RawPair>> {
        let first = self.store.first()?;
        self.state = CursorState::Unpinned(None);
        Ok(self.land(first))
    }

    fn last(&mut self) -> RawResult<Option<RawPair>> {
        let last = self.store.last()?;
        self.state = CursorState::Unpinned(None);
        Ok(self.land(last))
    }

    fn seek(&mut self, key: &[u8]) -> RawResult<Option<RawPair>> {
        let found = self.store.ge(key, &[])?;
        if found.is_none() {
            self.state = CursorState::PastEnd;
        }
        Ok(self.land(found))
    }

    fn seek_exact(&mut self, key: &[u8]) -> RawResult<Option<RawPair>> {
        // The cursor's position is the row's key and value, not an engine iterator, so a point
        // lookup positions it as well as a seek would (reth's history indexing calls this for
        // every changed address and slot).
        let found = match self.store.table().is_dupsort() {
            false => self.store.value_of(key)?.map(|v| (key.to_vec(), v)),
            true => self.store.first_of_key(key)?,
        };
        if found.is_none() {
            self.state = CursorState::Invalid;
        }
        Ok(self.land(found))
    }

    fn next(&mut self) -> RawResult<Option<RawPair>> {
        self.move_next(CursorOp::Next)
    }

    fn prev(&mut self) -> RawResult<Option<RawPair>> {
        self.move_prev(CursorOp::Prev)
    }

    fn current(&mut self) -> RawResult<Option<RawPair>> {
        self.resolve_unpinned();
        match self.state.clone() {
            CursorState::Unset | CursorState::Invalid => Ok(None),
            CursorState::PastEnd => {
                if self.dupsort() {
                    Ok(None)
                } else {
                    self.store.last()
                }
            }
            CursorState::At(p) => Ok(Some(p)),
            CursorState::AfterDelete {
                deleted: (k, v),
                all_dups,
            } => match self.store.gt(&k, &v)? {
                Some(p) => Ok(self.land(Some(p))),
                None if all_dups => {
                    self.state = CursorState::Unpinned(self.store.lt(&k, &v)?);
                    Ok(None)
                }
                // Nothing after the hole: plain tables answer with the row before it, and the
                // cursor stays on the hole (a second delete still finds nothing to delete).
                None => self.store.lt(&k, &v),
            },
            CursorState::Unpinned(_) => unreachable!("resolved above"),
        }
    }

    fn next_dup(&mut self) -> RawResult<Option<RawPair>> {
        self.move_next(CursorOp::NextDup)
    }

    fn prev_dup(&mut self) -> RawResult<Option<RawPair>> {
        self.move_prev(CursorOp::PrevDup)
    }

    fn next_no_dup(&mut self) -> RawResult<Option<RawPair>> {
        self.move_next(CursorOp::NextNoDup)
    }

    fn last_dup(&mut self) -> RawResult<Option<Vec<u8>>> {
        self.resolve_unpinned();
        let key = match self.state.clone() {
            CursorState::At((k, _)) => Some(k),
            CursorState::AfterDelete {
                deleted: (k, v), ..
            } => self.store.gt(&k, &v)?.map(|(k, _)| k),
            _ => None,
        };
        let Some(key) = key else { return Ok(None) };
        let from_hole = matches!(self.state, CursorState::AfterDelete { .. });
        let last = self.store.last_of_key(&key)?;
        let found = self.land(last);
        if from_hole {
            // libmdbx returns the value but keeps its after-delete flag: the next `next` repeats
            // this row. Not pinned; we stay on the row.
            self.state = CursorState::Unpinned(found.clone());
        }
        Ok(found.map(|(_, v)| v))
    }

    fn seek_by_key_subkey(&mut self, key: &[u8], subkey: &[u8]) -> RawResult<Option<Vec<u8>>> {
        let found = self.store.ge(key, subkey)?.filter(|(k, _)| k == key);
        if found.is_none() {
            // After a miss libmdbx's position depends on how the key's duplicates are stored
            // (one value inline, several in a nested tree): not pinned.
            self.state = CursorState::Unpinned(None);
        }
        Ok(self.land(found).map(|(_, v)| v))
    }

    /// Counts the key's rows in the store and leaves the state as it is: past the end and after
    /// a delete (not pinned) it answers 0.
    fn dup_count(&mut self) -> RawResult<u64> {
        let key = match &self.state {
            CursorState::At((k, _)) | CursorState::Unpinned(Some((k, _))) => k.clone(),
            _ => return Ok(0),
        };
        if !self.dupsort() {
            return Ok(1);
        }
        let mut count = 0;
        let mut row = self.store.first_of_key(&key)?;
        while let Some((k, v)) = row.take().filter(|(k, _)| *k == key) {
            count += 1;
            row = self.store.gt(&k, &v)?;
        }
        Ok(count)
    }
}

impl<S: PairStore> RawCursorMut for EmulatedCursor<S> {
    fn upsert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.store.put_pair(key, value)?;
        self.state = CursorState::At((key.to_vec(), value.to_vec()));
        Ok(())
    }

    fn insert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        match self.store.insert_new(key, value) {
            Ok(()) => {
                self.state = CursorState::At((key.to_vec(), value.to_vec()));
                Ok(())
            }
            Err((e, existing)) => {
                if let Some(p) = existing {
                    self.state = CursorState::At(p);
                }
                Err(e)
            }
        }
    }

    fn append(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        match self
            .store
            .append_pair(key, value, DatabaseWriteOperation::CursorAppend)
        {
            Ok(()) => {
                let written = (key.to_vec(), value.to_vec());
                // On dupsort tables libmdbx's duplicate position after an append is not pinned.
                self.state = if self.dupsort() {
                    CursorState::Unpinned(Some(written))
                } else {
                    CursorState::At(written)
                };
                Ok(())
            }
            Err(e) => {
                // MDBX checks the order from the last row and stays there.
                let last = self.store.last()?;
                self.state = CursorState::Unpinned(None);
                self.land(last);
                Err(e)
            }
        }
    }

    fn append_dup(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        match self.store.append_dup_pair(key, value) {
            Ok(()) => {
                self.state = CursorState::At((key.to_vec(), value.to_vec()));
                Ok(())
            }
            Err(e) => {
                self.state = CursorState::Unpinned(self.store.last_of_key(key)?);
                Err(e)
            }
        }
    }

    fn delete_current(&mut self) -> RawResult<()> {
        self.delete_here(false)
    }

    fn delete_current_duplicates(&mut self) -> RawResult<()> {
        self.delete_here(true)
    }
}
