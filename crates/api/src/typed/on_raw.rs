//! The typed layer, written once over any [`RawEngine`]: encodes keys, compresses values,
//! decodes rows with the table named in every error, and resolves `T::NAME` to the catalogue.

use super::{
    cursor::{
        DbCursorRO, DbCursorRW, DbDupCursorRO, DbDupCursorRW, DupWalker, IterPairResult,
        PairResult, RangeWalker, ReverseWalker, ValueOnlyResult, Walker,
    },
    transaction::{Database, DbTx, DbTxMut},
};
use crate::{
    DatabaseError,
    error::short_hex,
    raw::{RawCursor, RawCursorMut, RawEngine, RawPair, RawTx, RawTxMut},
    table::{Decode, Decompress, DupSort, Encode, Table, compress_to_vec},
    tables::{Tables, UnknownTable},
};
use std::{
    fmt,
    marker::PhantomData,
    ops::{Bound, RangeBounds},
    panic::{AssertUnwindSafe, catch_unwind},
    path::PathBuf,
    sync::Arc,
};

/// The catalogue entry of a table type. Every table type of this crate is in the catalogue; a
/// foreign `Table` impl whose name is not is an error, not a panic.
#[inline]
pub fn table_of<T: Table>() -> Result<Tables, DatabaseError> {
    // Evaluated once per table type at compile time: every read goes through here.
    const { Tables::from_name(T::NAME) }
        .ok_or_else(|| DatabaseError::Other(UnknownTable(T::NAME.to_string()).to_string()))
}

/// Decodes a key, naming the table and key in the error.
pub fn decode_key<T: Table>(key: &[u8]) -> Result<T::Key, DatabaseError> {
    T::Key::decode(key).map_err(|_| DatabaseError::Decode {
        table: T::NAME,
        what: "key",
        key: short_hex(key),
    })
}

/// Decodes a value, naming the table and key in the error. reth's compact decoders panic on
/// truncated input; a corrupt row must be an error, so the panic is caught and reported.
pub fn decode_value<T: Table>(key: &[u8], value: &[u8]) -> Result<T::Value, DatabaseError> {
    let err = || DatabaseError::Decode {
        table: T::NAME,
        what: "value",
        key: short_hex(key),
    };
    match catch_unwind(AssertUnwindSafe(|| T::Value::decompress(value))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(_)) | Err(_) => Err(err()),
    }
}

fn decode_pair<T: Table>(pair: Option<RawPair>) -> PairResult<T> {
    match pair {
        None => Ok(None),
        Some((k, v)) => Ok(Some((decode_key::<T>(&k)?, decode_value::<T>(&k, &v)?))),
    }
}

/// A reth-shaped [`Database`] over a raw engine.
pub struct TypedDatabase<E> {
    engine: Arc<E>,
}

impl<E> Clone for TypedDatabase<E> {
    fn clone(&self) -> Self {
        Self {
            engine: Arc::clone(&self.engine),
        }
    }
}

impl<E: RawEngine> fmt::Debug for TypedDatabase<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedDatabase")
            .field("engine", &self.engine)
            .finish()
    }
}

impl<E: RawEngine> TypedDatabase<E> {
    pub fn new(engine: E) -> Self {
        Self {
            engine: Arc::new(engine),
        }
    }

    pub fn from_arc(engine: Arc<E>) -> Self {
        Self { engine }
    }

    pub fn engine(&self) -> &Arc<E> {
        &self.engine
    }
}

impl<E: RawEngine> Database for TypedDatabase<E> {
    type TX = TypedTx<E::Tx>;
    type TXMut = TypedTx<E::TxMut>;

    fn tx(&self) -> Result<Self::TX, DatabaseError> {
        Ok(TypedTx::new(self.engine.begin_ro()?))
    }

    fn tx_mut(&self) -> Result<Self::TXMut, DatabaseError> {
        Ok(TypedTx::new(self.engine.begin_rw()?))
    }

    fn path(&self) -> PathBuf {
        self.engine.path()
    }

    fn oldest_reader_txnid(&self) -> Option<u64> {
        self.engine.oldest_reader_txnid()
    }

    fn last_txnid(&self) -> Option<u64> {
        self.engine.last_txnid()
    }
}

/// A typed transaction over a raw one (read-only or read-write, by `X`).
#[derive(Debug)]
pub struct TypedTx<X> {
    raw: X,
}

impl<X> TypedTx<X> {
    pub const fn new(raw: X) -> Self {
        Self { raw }
    }

    pub fn raw(&self) -> &X {
        &self.raw
    }

    pub fn into_raw(self) -> X {
        self.raw
    }
}

impl<X: RawTx> DbTx for TypedTx<X> {
    type Cursor<T: Table> = TypedCursor<T, X::Cursor>;
    type DupCursor<T: DupSort> = TypedCursor<T, X::Cursor>;

    fn get<T: Table>(&self, key: T::Key) -> Result<Option<T::Value>, DatabaseError> {
        self.get_by_encoded_key::<T>(&key.encode())
    }

    fn get_by_encoded_key<T: Table>(
        &self,
        key: &<T::Key as Encode>::Encoded,
    ) -> Result<Option<T::Value>, DatabaseError> {
        let key = key.as_ref();
        self.raw
            .get(table_of::<T>()?, key)?
            .map(|v| decode_value::<T>(key, &v))
            .transpose()
    }

    fn commit(self) -> Result<(), DatabaseError> {
        self.raw.commit()
    }

    fn abort(self) {
        self.raw.abort()
    }

    fn cursor_read<T: Table>(&self) -> Result<Self::Cursor<T>, DatabaseError> {
        Ok(TypedCursor::new(self.raw.cursor(table_of::<T>()?)?))
    }

    fn cursor_dup_read<T: DupSort>(&self) -> Result<Self::DupCursor<T>, DatabaseError> {
        Ok(TypedCursor::new(self.raw.cursor(table_of::<T>()?)?))
    }

    fn entries<T: Table>(&self) -> Result<usize, DatabaseError> {
        self.raw.entries(table_of::<T>()?)
    }

    fn disable_long_read_transaction_safety(&mut self) {
        self.raw.disable_long_read_safety();
    }
}

impl<X: RawTxMut> DbTxMut for TypedTx<X> {
    type CursorMut<T: Table> = TypedCursor<T, X::CursorMut>;
    type DupCursorMut<T: DupSort> = TypedCursor<T, X::CursorMut>;

    fn put<T: Table>(&self, key: T::Key, value: T::Value) -> Result<(), DatabaseError> {
        self.raw.put(
            table_of::<T>()?,
            key.encode().as_ref(),
            &compress_to_vec(&value),
        )
    }

    fn append<T: Table>(&self, key: T::Key, value: T::Value) -> Result<(), DatabaseError> {
        self.raw.append(
            table_of::<T>()?,
            key.encode().as_ref(),
            &compress_to_vec(&value),
        )
    }

    fn delete<T: Table>(
        &self,
        key: T::Key,
        value: Option<T::Value>,
    ) -> Result<bool, DatabaseError> {
        let value = value.map(|v| compress_to_vec(&v));
        self.raw
            .delete(table_of::<T>()?, key.encode().as_ref(), value.as_deref())
    }

    fn clear<T: Table>(&self) -> Result<(), DatabaseError> {
        self.raw.clear(table_of::<T>()?)
    }

    fn cursor_write<T: Table>(&self) -> Result<Self::CursorMut<T>, DatabaseError> {
        Ok(TypedCursor::new(self.raw.cursor_mut(table_of::<T>()?)?))
    }

    fn cursor_dup_write<T: DupSort>(&self) -> Result<Self::DupCursorMut<T>, DatabaseError> {
        Ok(TypedCursor::new(self.raw.cursor_mut(table_of::<T>()?)?))
    }
}

/// A typed cursor over a raw one.
pub struct TypedCursor<T, C> {
    raw: C,
    _table: PhantomData<fn() -> T>,
}

impl<T: Table, C: fmt::Debug> fmt::Debug for TypedCursor<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedCursor")
            .field("table", &T::NAME)
            .field("raw", &self.raw)
            .finish()
    }
}

impl<T, C> TypedCursor<T, C> {
    pub const fn new(raw: C) -> Self {
        Self {
            raw,
            _table: PhantomData,
        }
    }

    pub fn raw_mut(&mut self) -> &mut C {
        &mut self.raw
    }
}

impl<T: Table, C: RawCursor> DbCursorRO<T> for TypedCursor<T, C> {
    fn first(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.first()?)
    }

    fn seek_exact(&mut self, key: T::Key) -> PairResult<T> {
        decode_pair::<T>(self.raw.seek_exact(key.encode().as_ref())?)
    }

    fn seek(&mut self, key: T::Key) -> PairResult<T> {
        decode_pair::<T>(self.raw.seek(key.encode().as_ref())?)
    }

    fn next(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.next()?)
    }

    fn prev(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.prev()?)
    }

    fn last(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.last()?)
    }

    fn current(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.current()?)
    }

    fn walk(&mut self, start_key: Option<T::Key>) -> Result<Walker<'_, T, Self>, DatabaseError> {
        let start = match start_key {
            Some(key) => self.seek(key),
            None => self.first(),
        }
        .transpose();
        Ok(Walker::new(self, start))
    }

    fn walk_range(
        &mut self,
        range: impl RangeBounds<T::Key>,
    ) -> Result<RangeWalker<'_, T, Self>, DatabaseError> {
        let start = match range.start_bound().cloned() {
            Bound::Included(key) => self.seek(key),
            Bound::Excluded(key) => match self.seek(key.clone()) {
                Ok(Some((found, _))) if found == key => self.next_no_dup_any(),
                other => other,
            },
            Bound::Unbounded => self.first(),
        }
        .transpose();
        Ok(RangeWalker::new(self, start, range.end_bound().cloned()))
    }

    fn walk_back(
        &mut self,
        start_key: Option<T::Key>,
    ) -> Result<ReverseWalker<'_, T, Self>, DatabaseError> {
        let start = match start_key {
            Some(key) => self.seek(key),
            None => self.last(),
        }
        .transpose();
        Ok(ReverseWalker::new(self, start))
    }
}

impl<T: Table, C: RawCursor> TypedCursor<T, C> {
    /// Skips the remaining duplicates of the current key (plain tables: plain `next`).
    fn next_no_dup_any(&mut self) -> PairResult<T> {
        if T::DUPSORT {
            decode_pair::<T>(self.raw.next_no_dup()?)
        } else {
            decode_pair::<T>(self.raw.next()?)
        }
    }
}

impl<T: DupSort, C: RawCursor> DbDupCursorRO<T> for TypedCursor<T, C> {
    fn prev_dup(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.prev_dup()?)
    }

    fn next_dup(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.next_dup()?)
    }

    fn last_dup(&mut self) -> ValueOnlyResult<T> {
        match self.raw.last_dup()? {
            None => Ok(None),
            Some(v) => Ok(Some(decode_value::<T>(&[], &v)?)),
        }
    }

    fn next_no_dup(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.next_no_dup()?)
    }

    fn next_dup_val(&mut self) -> ValueOnlyResult<T> {
        match self.raw.next_dup()? {
            None => Ok(None),
            Some((k, v)) => Ok(Some(decode_value::<T>(&k, &v)?)),
        }
    }

    fn seek_by_key_subkey(&mut self, key: T::Key, subkey: T::SubKey) -> ValueOnlyResult<T> {
        let key = key.encode();
        match self
            .raw
            .seek_by_key_subkey(key.as_ref(), subkey.encode().as_ref())?
        {
            None => Ok(None),
            Some(v) => Ok(Some(decode_value::<T>(key.as_ref(), &v)?)),
        }
    }

    fn walk_dup(
        &mut self,
        key: Option<T::Key>,
        subkey: Option<T::SubKey>,
    ) -> Result<DupWalker<'_, T, Self>, DatabaseError> {
        let start = match (key, subkey) {
            (Some(key), Some(subkey)) => self.start_at_subkey(key, subkey),
            (Some(key), None) => self.seek_exact(key).transpose(),
            (None, Some(subkey)) => match self.first() {
                Ok(Some((key, _))) => self.start_at_subkey(key, subkey),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            },
            (None, None) => self.first().transpose(),
        };
        Ok(DupWalker {
            cursor: self,
            start,
        })
    }
}

impl<T: DupSort, C: RawCursor> TypedCursor<T, C> {
    /// [`RawCursor::dup_count`]: how many duplicates the current key has, without moving (not
    /// one of reth's trait methods; adoption's per-block changeset check uses it).
    pub fn dup_count(&mut self) -> Result<u64, DatabaseError> {
        self.raw.dup_count()
    }

    fn start_at_subkey(&mut self, key: T::Key, subkey: T::SubKey) -> IterPairResult<T> {
        let encoded = key.clone().encode();
        match self
            .raw
            .seek_by_key_subkey(encoded.as_ref(), subkey.encode().as_ref())
        {
            Ok(None) => None,
            Ok(Some(v)) => Some(decode_value::<T>(encoded.as_ref(), &v).map(|v| (key, v))),
            Err(e) => Some(Err(e)),
        }
    }
}

impl<T: Table, C: RawCursorMut> DbCursorRW<T> for TypedCursor<T, C> {
    fn upsert(&mut self, key: T::Key, value: &T::Value) -> Result<(), DatabaseError> {
        self.raw
            .upsert(key.encode().as_ref(), &compress_to_vec(value))
    }

    /// reth inserts with `MDBX_NOOVERWRITE` on every table: on a dupsort table a key that has
    /// any duplicate already is refused (`KEY_EXIST`, the cursor on its first duplicate), while
    /// the raw `insert` refuses only the exact pair (`MDBX_NODUPDATA`).
    fn insert(&mut self, key: T::Key, value: &T::Value) -> Result<(), DatabaseError> {
        let key = key.encode();
        if table_of::<T>()?.is_dupsort() && self.raw.seek_exact(key.as_ref())?.is_some() {
            return Err(DatabaseError::Write(Box::new(crate::DatabaseWriteError {
                info: crate::DatabaseErrorInfo::new(
                    "key already exists",
                    crate::error::codes::KEY_EXIST,
                ),
                operation: crate::DatabaseWriteOperation::CursorInsert,
                table_name: T::NAME,
                key: key.as_ref().to_vec(),
            })));
        }
        self.raw.insert(key.as_ref(), &compress_to_vec(value))
    }

    fn append(&mut self, key: T::Key, value: &T::Value) -> Result<(), DatabaseError> {
        self.raw
            .append(key.encode().as_ref(), &compress_to_vec(value))
    }

    fn delete_current(&mut self) -> Result<(), DatabaseError> {
        self.raw.delete_current()
    }
}

impl<T: DupSort, C: RawCursorMut> TypedCursor<T, C> {
    /// [`RawCursorMut::append_last`]: a row the caller knows sorts after every row of the table
    /// (not one of reth's trait methods; adoption's copies of sorted rows use it).
    pub fn append_last(&mut self, key: T::Key, value: T::Value) -> Result<(), DatabaseError> {
        self.raw
            .append_last(key.encode().as_ref(), &compress_to_vec(&value))
    }
}

impl<T: DupSort, C: RawCursorMut> DbDupCursorRW<T> for TypedCursor<T, C> {
    fn delete_current_duplicates(&mut self) -> Result<(), DatabaseError> {
        self.raw.delete_current_duplicates()
    }

    fn append_dup(&mut self, key: T::Key, value: T::Value) -> Result<(), DatabaseError> {
        self.raw
            .append_dup(key.encode().as_ref(), &compress_to_vec(&value))
    }
}
