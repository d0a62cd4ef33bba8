//! reth's cursor traits and walkers (`reth-db-api/src/cursor.rs`), same names and semantics.

use crate::{
    DatabaseError,
    table::{DupSort, Table, TableRow},
};
use std::ops::{Bound, RangeBounds};

/// `(key, value)` of a table.
pub type KeyValue<T> = (<T as Table>::Key, <T as Table>::Value);
/// A positioned row or nothing.
pub type PairResult<T> = Result<Option<KeyValue<T>>, DatabaseError>;
/// An iterator item.
pub type IterPairResult<T> = Option<Result<KeyValue<T>, DatabaseError>>;
/// A value or nothing.
pub type ValueOnlyResult<T> = Result<Option<<T as Table>::Value>, DatabaseError>;

/// Read cursor. Every move returns `Ok(None)` when there is no row there.
pub trait DbCursorRO<T: Table> {
    /// First row of the table (first duplicate of the first key on dupsort tables).
    fn first(&mut self) -> PairResult<T>;
    /// Row with exactly `key`; on dupsort tables its first duplicate.
    fn seek_exact(&mut self, key: T::Key) -> PairResult<T>;
    /// First row whose key is >= `key`.
    fn seek(&mut self, key: T::Key) -> PairResult<T>;
    /// Next row, duplicates included; on a fresh cursor the first row.
    fn next(&mut self) -> PairResult<T>;
    /// Previous row, duplicates included; on a fresh cursor the last row.
    fn prev(&mut self) -> PairResult<T>;
    /// Last row of the table.
    fn last(&mut self) -> PairResult<T>;
    /// Row under the cursor, without moving.
    fn current(&mut self) -> PairResult<T>;

    /// Forward from the first key >= `start_key` (or from the first row).
    fn walk(&mut self, start_key: Option<T::Key>) -> Result<Walker<'_, T, Self>, DatabaseError>
    where
        Self: Sized;

    /// Forward over a key range. Unlike reth's MDBX cursor (which panics), an `Excluded` start
    /// bound is honoured.
    fn walk_range(
        &mut self,
        range: impl RangeBounds<T::Key>,
    ) -> Result<RangeWalker<'_, T, Self>, DatabaseError>
    where
        Self: Sized;

    /// Backward. MDBX quirk kept: `walk_back(Some(k))` starts at the first key **>= k** (not
    /// <= k), then moves backwards; `None` starts at the last row.
    fn walk_back(
        &mut self,
        start_key: Option<T::Key>,
    ) -> Result<ReverseWalker<'_, T, Self>, DatabaseError>
    where
        Self: Sized;
}

/// Read cursor over duplicates.
pub trait DbDupCursorRO<T: DupSort> {
    /// Previous duplicate of the current key; `None` at the first one.
    fn prev_dup(&mut self) -> PairResult<T>;
    /// Next duplicate of the current key; `None` at the last one.
    fn next_dup(&mut self) -> PairResult<T>;
    /// Moves to the last duplicate of the current key and returns its value.
    fn last_dup(&mut self) -> ValueOnlyResult<T>;
    /// First duplicate of the next key.
    fn next_no_dup(&mut self) -> PairResult<T>;
    /// Value of the next duplicate of the current key.
    fn next_dup_val(&mut self) -> ValueOnlyResult<T>;
    /// First duplicate of `key` whose **value bytes** are >= the subkey's bytes. It may belong to
    /// another subkey: callers check that the returned value's subkey equals the one asked for.
    fn seek_by_key_subkey(&mut self, key: T::Key, subkey: T::SubKey) -> ValueOnlyResult<T>;

    /// Walks the duplicates of one key. Start position:
    ///
    /// | key  | subkey | starts at                                        |
    /// |------|--------|--------------------------------------------------|
    /// | None | None   | first row of the table                           |
    /// | Some | None   | first duplicate of `key`                         |
    /// | Some | Some   | `seek_by_key_subkey(key, subkey)`                |
    /// | None | Some   | `seek_by_key_subkey(first key, subkey)`          |
    fn walk_dup(
        &mut self,
        key: Option<T::Key>,
        subkey: Option<T::SubKey>,
    ) -> Result<DupWalker<'_, T, Self>, DatabaseError>
    where
        Self: Sized;
}

/// Write cursor.
pub trait DbCursorRW<T: Table> {
    /// Plain tables: insert or replace. **Dupsort tables: adds a duplicate** (existing values of
    /// the key stay); to replace one, `seek_by_key_subkey` + `delete_current` first.
    fn upsert(&mut self, key: T::Key, value: &T::Value) -> Result<(), DatabaseError>;
    /// Fails (code `KEY_EXIST`) if the key (dupsort: the exact pair) exists.
    fn insert(&mut self, key: T::Key, value: &T::Value) -> Result<(), DatabaseError>;
    /// Fails (code `KEY_MISMATCH`) unless the key sorts at or after the table's last key.
    fn append(&mut self, key: T::Key, value: &T::Value) -> Result<(), DatabaseError>;
    /// Deletes the row under the cursor.
    fn delete_current(&mut self) -> Result<(), DatabaseError>;
}

/// Write cursor over duplicates.
pub trait DbDupCursorRW<T: DupSort> {
    /// Deletes every duplicate of the current key.
    fn delete_current_duplicates(&mut self) -> Result<(), DatabaseError>;
    /// Appends a duplicate; fails (code `KEY_MISMATCH`) unless the pair sorts last.
    fn append_dup(&mut self, key: T::Key, value: T::Value) -> Result<(), DatabaseError>;
}

/// Forward iterator: yields the prefetched start, then `cursor.next()`.
pub struct Walker<'cursor, T: Table, CURSOR: DbCursorRO<T>> {
    cursor: &'cursor mut CURSOR,
    start: IterPairResult<T>,
}

impl<T: Table, CURSOR: DbCursorRO<T> + std::fmt::Debug> std::fmt::Debug for Walker<'_, T, CURSOR> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walker")
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}

impl<'cursor, T: Table, CURSOR: DbCursorRO<T>> Walker<'cursor, T, CURSOR> {
    pub const fn new(cursor: &'cursor mut CURSOR, start: IterPairResult<T>) -> Self {
        Self { cursor, start }
    }

    /// Turns around: continues backwards from the current row.
    pub fn rev(self) -> ReverseWalker<'cursor, T, CURSOR> {
        let start = self.cursor.current().transpose();
        ReverseWalker::new(self.cursor, start)
    }
}

impl<T: Table, CURSOR: DbCursorRW<T> + DbCursorRO<T>> Walker<'_, T, CURSOR> {
    pub fn delete_current(&mut self) -> Result<(), DatabaseError> {
        self.start.take();
        self.cursor.delete_current()
    }
}

impl<T: Table, CURSOR: DbCursorRO<T>> Iterator for Walker<'_, T, CURSOR> {
    type Item = Result<TableRow<T>, DatabaseError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.start.take().or_else(|| self.cursor.next().transpose())
    }
}

/// Backward iterator: yields the prefetched start, then `cursor.prev()`.
pub struct ReverseWalker<'cursor, T: Table, CURSOR: DbCursorRO<T>> {
    cursor: &'cursor mut CURSOR,
    start: IterPairResult<T>,
}

impl<T: Table, CURSOR: DbCursorRO<T> + std::fmt::Debug> std::fmt::Debug
    for ReverseWalker<'_, T, CURSOR>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReverseWalker")
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}

impl<'cursor, T: Table, CURSOR: DbCursorRO<T>> ReverseWalker<'cursor, T, CURSOR> {
    pub const fn new(cursor: &'cursor mut CURSOR, start: IterPairResult<T>) -> Self {
        Self { cursor, start }
    }

    /// Turns around: continues forwards from the current row.
    pub fn forward(self) -> Walker<'cursor, T, CURSOR> {
        let start = self.cursor.current().transpose();
        Walker::new(self.cursor, start)
    }
}

impl<T: Table, CURSOR: DbCursorRW<T> + DbCursorRO<T>> ReverseWalker<'_, T, CURSOR> {
    pub fn delete_current(&mut self) -> Result<(), DatabaseError> {
        self.start.take();
        self.cursor.delete_current()
    }
}

impl<T: Table, CURSOR: DbCursorRO<T>> Iterator for ReverseWalker<'_, T, CURSOR> {
    type Item = Result<TableRow<T>, DatabaseError>;
    fn next(&mut self) -> Option<Self::Item> {
        let start = self.start.take();
        if start.is_some() {
            return start;
        }
        self.cursor.prev().transpose()
    }
}

/// Forward iterator that stops at the end bound.
pub struct RangeWalker<'cursor, T: Table, CURSOR: DbCursorRO<T>> {
    cursor: &'cursor mut CURSOR,
    start: IterPairResult<T>,
    end_key: Bound<T::Key>,
    is_done: bool,
}

impl<T: Table, CURSOR: DbCursorRO<T> + std::fmt::Debug> std::fmt::Debug
    for RangeWalker<'_, T, CURSOR>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeWalker")
            .field("cursor", &self.cursor)
            .field("end_key", &self.end_key)
            .field("is_done", &self.is_done)
            .finish_non_exhaustive()
    }
}

fn past_end<K: Ord>(key: &K, end: &Bound<K>) -> bool {
    match end {
        Bound::Included(end) => key > end,
        Bound::Excluded(end) => key >= end,
        Bound::Unbounded => false,
    }
}

impl<'cursor, T: Table, CURSOR: DbCursorRO<T>> RangeWalker<'cursor, T, CURSOR> {
    pub fn new(
        cursor: &'cursor mut CURSOR,
        start: IterPairResult<T>,
        end_key: Bound<T::Key>,
    ) -> Self {
        let is_done = match &start {
            Some(Ok((key, _))) => past_end(key, &end_key),
            Some(Err(_)) => false,
            None => true,
        };
        Self {
            cursor,
            start,
            end_key,
            is_done,
        }
    }
}

impl<T: Table, CURSOR: DbCursorRW<T> + DbCursorRO<T>> RangeWalker<'_, T, CURSOR> {
    pub fn delete_current(&mut self) -> Result<(), DatabaseError> {
        self.start.take();
        self.cursor.delete_current()
    }
}

impl<T: DupSort, CURSOR: DbDupCursorRW<T> + DbCursorRO<T>> RangeWalker<'_, T, CURSOR> {
    pub fn delete_current_duplicates(&mut self) -> Result<(), DatabaseError> {
        self.start.take();
        self.cursor.delete_current_duplicates()
    }
}

impl<T: Table, CURSOR: DbCursorRO<T>> Iterator for RangeWalker<'_, T, CURSOR> {
    type Item = Result<TableRow<T>, DatabaseError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.is_done {
            return None;
        }
        let next = match self.start.take() {
            Some(start) => Some(start),
            None => self.cursor.next().transpose(),
        };
        match next {
            Some(Ok((key, value))) if !past_end(&key, &self.end_key) => Some(Ok((key, value))),
            Some(Err(e)) => Some(Err(e)),
            _ => {
                self.is_done = true;
                None
            }
        }
    }
}

/// Iterator over the duplicates of one key: yields the start, then `cursor.next_dup()`.
pub struct DupWalker<'cursor, T: DupSort, CURSOR: DbDupCursorRO<T>> {
    pub cursor: &'cursor mut CURSOR,
    pub start: IterPairResult<T>,
}

impl<T: DupSort, CURSOR: DbDupCursorRO<T> + std::fmt::Debug> std::fmt::Debug
    for DupWalker<'_, T, CURSOR>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DupWalker")
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}

impl<T: DupSort, CURSOR: DbCursorRW<T> + DbDupCursorRO<T>> DupWalker<'_, T, CURSOR> {
    pub fn delete_current(&mut self) -> Result<(), DatabaseError> {
        self.start.take();
        self.cursor.delete_current()
    }
}

impl<T: DupSort, CURSOR: DbDupCursorRO<T>> Iterator for DupWalker<'_, T, CURSOR> {
    type Item = Result<TableRow<T>, DatabaseError>;
    fn next(&mut self) -> Option<Self::Item> {
        let start = self.start.take();
        if start.is_some() {
            return start;
        }
        self.cursor.next_dup().transpose()
    }
}
