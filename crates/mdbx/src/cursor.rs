//! Owned MDBX cursors (no lifetime): they keep their transaction alive through an `Arc` and are
//! closed on drop, which libmdbx requires whether or not the transaction has ended.

use crate::{
    error::{info, write_error},
    tx::{TxInner, to_vec, val},
};
use mdbx_sys as ffi;
use reth_hybrid_api::{
    DatabaseError, DatabaseWriteOperation, Tables,
    raw::{RawCursor, RawCursorMut, RawPair, RawResult},
};
use std::{ptr, sync::Arc};

pub struct MdbxCursor {
    tx: Arc<TxInner>,
    cursor: *mut ffi::MDBX_cursor,
    table: Tables,
}

// SAFETY: the cursor is only used under its transaction's mutex (NOSTICKYTHREADS env).
unsafe impl Send for MdbxCursor {}

impl std::fmt::Debug for MdbxCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MdbxCursor")
            .field("table", &self.table)
            .finish()
    }
}

impl MdbxCursor {
    pub(crate) fn open(tx: Arc<TxInner>, table: Tables) -> RawResult<Self> {
        let dbi = tx.env.dbi(table)?;
        let mut cursor = ptr::null_mut();
        {
            let (_g, txn) = tx.lock()?;
            // SAFETY: txn is live under the lock.
            let rc = unsafe { ffi::mdbx_cursor_open(txn, dbi, &mut cursor) };
            if rc != ffi::MDBX_SUCCESS {
                return Err(DatabaseError::InitCursor(info(rc, Some(table))));
            }
        }
        Ok(Self { tx, cursor, table })
    }

    /// One `mdbx_cursor_get`; `NOTFOUND`/`ENODATA` are `Ok(None)`.
    fn get(
        &mut self,
        op: ffi::MDBX_cursor_op,
        key: Option<&[u8]>,
        data: Option<&[u8]>,
    ) -> RawResult<Option<RawPair>> {
        let (_g, _txn) = self.tx.lock()?;
        let mut k = key.map_or(val(&[]), val);
        let mut v = data.map_or(val(&[]), val);
        // SAFETY: the cursor belongs to the live txn held under the lock; returned pointers are
        // copied before the lock is released.
        let rc = unsafe { ffi::mdbx_cursor_get(self.cursor, &mut k, &mut v, op) };
        match rc {
            ffi::MDBX_SUCCESS | ffi::MDBX_RESULT_TRUE => {
                Ok(Some(unsafe { (to_vec(&k), to_vec(&v)) }))
            }
            ffi::MDBX_NOTFOUND | ffi::MDBX_ENODATA => Ok(None),
            rc => Err(DatabaseError::Read(info(rc, Some(self.table)))),
        }
    }

    /// Moves to the next row up to `limit` times under one lock, handing each row to `f` as
    /// borrowed bytes (valid only during the call). Returns how many rows `f` saw; fewer than
    /// `limit` means the table ended. For bulk readers (the migration's copy), which would
    /// otherwise pay a lock and two allocations per row. `f` runs under the transaction's lock:
    /// it must not use another cursor of the same transaction (that would deadlock).
    pub fn next_rows(&mut self, limit: usize, mut f: impl FnMut(&[u8], &[u8])) -> RawResult<usize> {
        let (_g, _txn) = self.tx.lock()?;
        for seen in 0..limit {
            let (mut k, mut v) = (val(&[]), val(&[]));
            // SAFETY: the cursor belongs to the live txn held under the lock; the returned
            // pointers stay valid until the next operation, and `f` only borrows them until then.
            let rc = unsafe { ffi::mdbx_cursor_get(self.cursor, &mut k, &mut v, ffi::MDBX_NEXT) };
            match rc {
                ffi::MDBX_SUCCESS | ffi::MDBX_RESULT_TRUE => unsafe { f(slice(&k), slice(&v)) },
                ffi::MDBX_NOTFOUND | ffi::MDBX_ENODATA => return Ok(seen),
                rc => return Err(DatabaseError::Read(info(rc, Some(self.table)))),
            }
        }
        Ok(limit)
    }

    fn put(
        &mut self,
        key: &[u8],
        value: &[u8],
        flags: u32,
        op: DatabaseWriteOperation,
    ) -> RawResult<()> {
        let (_g, _txn) = self.tx.lock()?;
        let k = val(key);
        let mut v = val(value);
        // SAFETY: cursor of the live txn under the lock.
        let rc = unsafe { ffi::mdbx_cursor_put(self.cursor, &k, &mut v, flags) };
        if rc == ffi::MDBX_SUCCESS {
            Ok(())
        } else {
            Err(write_error(rc, op, self.table, key))
        }
    }

    fn del(&mut self, flags: u32) -> RawResult<()> {
        let (_g, _txn) = self.tx.lock()?;
        // SAFETY: cursor of the live txn under the lock.
        let rc = unsafe { ffi::mdbx_cursor_del(self.cursor, flags) };
        if rc == ffi::MDBX_SUCCESS {
            Ok(())
        } else {
            Err(DatabaseError::Delete(info(rc, Some(self.table))))
        }
    }
}

/// # Safety
/// `v` must point to `iov_len` readable bytes for the returned lifetime.
unsafe fn slice<'a>(v: &ffi::MDBX_val) -> &'a [u8] {
    if v.iov_len == 0 {
        return &[];
    }
    // SAFETY: caller's contract.
    unsafe { std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len) }
}

impl Drop for MdbxCursor {
    fn drop(&mut self) {
        let _guard = self.tx.state.lock();
        // SAFETY: the cursor is closed exactly once; libmdbx allows closing after txn end.
        unsafe { ffi::mdbx_cursor_close(self.cursor) };
    }
}

impl RawCursor for MdbxCursor {
    fn first(&mut self) -> RawResult<Option<RawPair>> {
        self.get(ffi::MDBX_FIRST, None, None)
    }

    fn last(&mut self) -> RawResult<Option<RawPair>> {
        self.get(ffi::MDBX_LAST, None, None)
    }

    fn seek(&mut self, key: &[u8]) -> RawResult<Option<RawPair>> {
        self.get(ffi::MDBX_SET_RANGE, Some(key), None)
    }

    fn seek_exact(&mut self, key: &[u8]) -> RawResult<Option<RawPair>> {
        self.get(ffi::MDBX_SET_KEY, Some(key), None)
    }

    fn next(&mut self) -> RawResult<Option<RawPair>> {
        self.get(ffi::MDBX_NEXT, None, None)
    }

    fn prev(&mut self) -> RawResult<Option<RawPair>> {
        self.get(ffi::MDBX_PREV, None, None)
    }

    fn current(&mut self) -> RawResult<Option<RawPair>> {
        self.get(ffi::MDBX_GET_CURRENT, None, None)
    }

    fn next_dup(&mut self) -> RawResult<Option<RawPair>> {
        self.get(ffi::MDBX_NEXT_DUP, None, None)
    }

    fn prev_dup(&mut self) -> RawResult<Option<RawPair>> {
        self.get(ffi::MDBX_PREV_DUP, None, None)
    }

    fn next_no_dup(&mut self) -> RawResult<Option<RawPair>> {
        self.get(ffi::MDBX_NEXT_NODUP, None, None)
    }

    fn last_dup(&mut self) -> RawResult<Option<Vec<u8>>> {
        Ok(self.get(ffi::MDBX_LAST_DUP, None, None)?.map(|(_, v)| v))
    }

    fn seek_by_key_subkey(&mut self, key: &[u8], subkey: &[u8]) -> RawResult<Option<Vec<u8>>> {
        Ok(self
            .get(ffi::MDBX_GET_BOTH_RANGE, Some(key), Some(subkey))?
            .map(|(_, v)| v))
    }

    fn dup_count(&mut self) -> RawResult<u64> {
        let (_g, _txn) = self.tx.lock()?;
        let mut count = 0usize;
        // SAFETY: cursor of the live txn under the lock; MDBX writes only `count`.
        let rc = unsafe { ffi::mdbx_cursor_count(self.cursor, &mut count) };
        if rc == ffi::MDBX_SUCCESS {
            Ok(count as u64)
        } else {
            Err(DatabaseError::Read(info(rc, Some(self.table))))
        }
    }
}

impl RawCursorMut for MdbxCursor {
    fn upsert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.put(
            key,
            value,
            ffi::MDBX_UPSERT,
            DatabaseWriteOperation::CursorUpsert,
        )
    }

    fn insert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        let flags = if self.table.is_dupsort() {
            ffi::MDBX_NODUPDATA
        } else {
            ffi::MDBX_NOOVERWRITE
        };
        self.put(key, value, flags, DatabaseWriteOperation::CursorInsert)
    }

    fn append(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.put(
            key,
            value,
            ffi::MDBX_APPEND,
            DatabaseWriteOperation::CursorAppend,
        )
    }

    fn append_dup(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.put(
            key,
            value,
            ffi::MDBX_APPENDDUP,
            DatabaseWriteOperation::CursorAppendDup,
        )
    }

    fn append_last(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.put(
            key,
            value,
            ffi::MDBX_APPEND | ffi::MDBX_APPENDDUP,
            DatabaseWriteOperation::CursorAppendDup,
        )
    }

    fn delete_current(&mut self) -> RawResult<()> {
        self.del(ffi::MDBX_CURRENT)
    }

    fn delete_current_duplicates(&mut self) -> RawResult<()> {
        self.del(ffi::MDBX_ALLDUPS)
    }
}
