//! reth's transaction and database traits (`reth-db-api/src/{transaction,database}.rs`).

use super::cursor::{DbCursorRO, DbCursorRW, DbDupCursorRO, DbDupCursorRW};
use crate::{
    DatabaseError,
    table::{DupSort, Encode, Table},
};
use std::{fmt::Debug, path::PathBuf};

/// Read transaction: a consistent snapshot.
pub trait DbTx: Debug + Send {
    type Cursor<T: Table>: DbCursorRO<T> + Send;
    type DupCursor<T: DupSort>: DbDupCursorRO<T> + DbCursorRO<T> + Send;

    /// Value of `key`; on dupsort tables the first duplicate. `Ok(None)` when absent.
    fn get<T: Table>(&self, key: T::Key) -> Result<Option<T::Value>, DatabaseError>;
    /// Like `get`, for a key already encoded.
    fn get_by_encoded_key<T: Table>(
        &self,
        key: &<T::Key as Encode>::Encoded,
    ) -> Result<Option<T::Value>, DatabaseError>;
    /// Commits (read-write) or releases (read-only) the transaction.
    fn commit(self) -> Result<(), DatabaseError>;
    /// Drops the transaction and its writes.
    fn abort(self);
    fn cursor_read<T: Table>(&self) -> Result<Self::Cursor<T>, DatabaseError>;
    fn cursor_dup_read<T: DupSort>(&self) -> Result<Self::DupCursor<T>, DatabaseError>;
    /// Rows in the table; duplicates count.
    fn entries<T: Table>(&self) -> Result<usize, DatabaseError>;
    /// Lifts the engine's long-read timeout for this transaction (no-op where there is none).
    fn disable_long_read_transaction_safety(&mut self);
}

/// Write transaction. Its reads (gets and cursors) see its own uncommitted writes.
pub trait DbTxMut: Send {
    type CursorMut<T: Table>: DbCursorRW<T> + DbCursorRO<T> + Send;
    type DupCursorMut<T: DupSort>: DbDupCursorRW<T>
        + DbCursorRW<T>
        + DbDupCursorRO<T>
        + DbCursorRO<T>
        + Send;

    /// Upsert; on dupsort tables adds a duplicate.
    fn put<T: Table>(&self, key: T::Key, value: T::Value) -> Result<(), DatabaseError>;
    /// Append: the key must sort at or after the last key.
    fn append<T: Table>(&self, key: T::Key, value: T::Value) -> Result<(), DatabaseError> {
        self.put::<T>(key, value)
    }
    /// `None` deletes the key with all its duplicates; `Some(v)` exactly that duplicate.
    /// `Ok(false)` when nothing matched.
    fn delete<T: Table>(&self, key: T::Key, value: Option<T::Value>)
    -> Result<bool, DatabaseError>;
    /// Removes all rows.
    fn clear<T: Table>(&self) -> Result<(), DatabaseError>;
    fn cursor_write<T: Table>(&self) -> Result<Self::CursorMut<T>, DatabaseError>;
    fn cursor_dup_write<T: DupSort>(&self) -> Result<Self::DupCursorMut<T>, DatabaseError>;
}

/// A database: hands out read snapshots and write transactions.
pub trait Database: Send + Sync + Debug {
    type TX: DbTx + Send + Sync + Debug + 'static;
    type TXMut: DbTxMut + DbTx + Send + Sync + Debug + 'static;

    fn tx(&self) -> Result<Self::TX, DatabaseError>;
    fn tx_mut(&self) -> Result<Self::TXMut, DatabaseError>;
    fn path(&self) -> PathBuf;

    /// MDBX reader bookkeeping; `None` on engines without it.
    fn oldest_reader_txnid(&self) -> Option<u64> {
        None
    }
    fn last_txnid(&self) -> Option<u64> {
        None
    }

    /// Runs `f` in a read transaction, then releases it.
    fn view<T, F>(&self, f: F) -> Result<T, DatabaseError>
    where
        F: FnOnce(&mut Self::TX) -> T,
    {
        let mut tx = self.tx()?;
        let res = f(&mut tx);
        tx.commit()?;
        Ok(res)
    }

    /// Runs `f` in a write transaction, then commits it.
    fn update<T, F>(&self, f: F) -> Result<T, DatabaseError>
    where
        F: FnOnce(&Self::TXMut) -> T,
    {
        let tx = self.tx_mut()?;
        let res = f(&tx);
        tx.commit()?;
        Ok(res)
    }
}
