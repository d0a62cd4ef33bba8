//! Owned MDBX transactions: `'static`, `Send + Sync`, usable from any thread (NOSTICKYTHREADS),
//! with every use of the handle serialised by a mutex.

use crate::{
    cursor::MdbxCursor,
    env::EnvInner,
    error::{info, write_error},
};
use mdbx_sys as ffi;
use parking_lot::{Mutex, MutexGuard};
use reth_hybrid_api::{
    DatabaseError, DatabaseWriteOperation, Tables,
    raw::{RawResult, RawTx, RawTxMut},
};
use std::{ptr, sync::Arc};

pub(crate) fn val(bytes: &[u8]) -> ffi::MDBX_val {
    ffi::MDBX_val {
        iov_base: bytes.as_ptr() as *mut _,
        iov_len: bytes.len(),
    }
}

/// # Safety
/// `v` must point to `iov_len` readable bytes (MDBX guarantees this until the next write).
pub(crate) unsafe fn to_vec(v: &ffi::MDBX_val) -> Vec<u8> {
    if v.iov_len == 0 {
        return Vec::new();
    }
    // SAFETY: caller's contract.
    unsafe { std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len) }.to_vec()
}

/// The transaction handle; null once committed or aborted.
pub(crate) struct TxState {
    pub(crate) txn: *mut ffi::MDBX_txn,
}

pub(crate) struct TxInner {
    pub(crate) env: Arc<EnvInner>,
    pub(crate) state: Mutex<TxState>,
    pub(crate) read_only: bool,
}

// SAFETY: the txn handle is only used under `state`'s mutex, and the env has NOSTICKYTHREADS.
unsafe impl Send for TxInner {}
// SAFETY: as above.
unsafe impl Sync for TxInner {}

impl TxInner {
    /// The live handle, or an error if the transaction has ended.
    pub(crate) fn lock(&self) -> RawResult<(MutexGuard<'_, TxState>, *mut ffi::MDBX_txn)> {
        let guard = self.state.lock();
        let txn = guard.txn;
        if txn.is_null() {
            return Err(DatabaseError::InitCursor(info(ffi::MDBX_BAD_TXN, None)));
        }
        Ok((guard, txn))
    }
}

impl Drop for TxInner {
    fn drop(&mut self) {
        let txn = self.state.get_mut().txn;
        if !txn.is_null() {
            // SAFETY: the handle is live and nobody else can reach it any more.
            unsafe { ffi::mdbx_txn_abort_ex(txn, ptr::null_mut()) };
        }
    }
}

/// A read-only (or, wrapped in [`MdbxTxMut`], read-write) MDBX transaction.
#[derive(Clone)]
pub struct MdbxTx {
    pub(crate) inner: Arc<TxInner>,
}

impl std::fmt::Debug for MdbxTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MdbxTx")
            .field("read_only", &self.inner.read_only)
            .finish()
    }
}

/// A read-write MDBX transaction.
#[derive(Debug)]
pub struct MdbxTxMut(pub(crate) MdbxTx);

impl MdbxTx {
    pub(crate) fn begin(env: Arc<EnvInner>, read_only: bool) -> RawResult<Self> {
        let mut txn = ptr::null_mut();
        let flags = if read_only {
            ffi::MDBX_TXN_RDONLY
        } else {
            ffi::MDBX_TXN_READWRITE
        };
        // SAFETY: env is open while the Arc lives.
        let rc = unsafe {
            ffi::mdbx_txn_begin_ex(env.env, ptr::null_mut(), flags, &mut txn, ptr::null_mut())
        };
        if rc != ffi::MDBX_SUCCESS {
            return Err(DatabaseError::InitTx(info(rc, None)));
        }
        Ok(Self {
            inner: Arc::new(TxInner {
                env,
                state: Mutex::new(TxState { txn }),
                read_only,
            }),
        })
    }

    /// MDBX's id of this transaction (the snapshot it reads).
    pub fn id(&self) -> RawResult<u64> {
        let (_g, txn) = self.inner.lock()?;
        // SAFETY: txn is live under the lock.
        Ok(unsafe { ffi::mdbx_txn_id(txn) })
    }

    fn end(&self, commit: bool) -> RawResult<()> {
        let mut state = self.inner.state.lock();
        let txn = std::mem::replace(&mut state.txn, ptr::null_mut());
        if txn.is_null() {
            return Ok(());
        }
        // SAFETY: txn is live; it is ended exactly once (the field is now null).
        let rc = unsafe {
            if commit {
                ffi::mdbx_txn_commit_ex(txn, ptr::null_mut())
            } else {
                ffi::mdbx_txn_abort_ex(txn, ptr::null_mut())
            }
        };
        if rc == ffi::MDBX_SUCCESS || (!commit && rc == ffi::MDBX_RESULT_TRUE) {
            Ok(())
        } else {
            Err(DatabaseError::Commit(info(rc, None)))
        }
    }
}

impl RawTx for MdbxTx {
    type Cursor = MdbxCursor;

    fn get(&self, table: Tables, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
        let dbi = self.inner.env.dbi(table)?;
        let (_g, txn) = self.inner.lock()?;
        let k = val(key);
        let mut data = val(&[]);
        // SAFETY: txn is live under the lock; data points into the map until the next write,
        // which cannot happen while we hold the lock.
        let rc = unsafe { ffi::mdbx_get(txn, dbi, &k, &mut data) };
        match rc {
            ffi::MDBX_SUCCESS => Ok(Some(unsafe { to_vec(&data) })),
            ffi::MDBX_NOTFOUND => Ok(None),
            rc => Err(DatabaseError::Read(info(rc, Some(table)))),
        }
    }

    fn cursor(&self, table: Tables) -> RawResult<MdbxCursor> {
        MdbxCursor::open(Arc::clone(&self.inner), table)
    }

    fn entries(&self, table: Tables) -> RawResult<usize> {
        let dbi = self.inner.env.dbi(table)?;
        let (_g, txn) = self.inner.lock()?;
        // SAFETY: MDBX_stat is plain data; txn is live under the lock.
        let mut stat: ffi::MDBX_stat = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            ffi::mdbx_dbi_stat(txn, dbi, &mut stat, std::mem::size_of::<ffi::MDBX_stat>())
        };
        if rc != ffi::MDBX_SUCCESS {
            return Err(DatabaseError::Stats(info(rc, Some(table))));
        }
        Ok(stat.ms_entries as usize)
    }

    fn commit(self) -> RawResult<()> {
        self.end(true)
    }

    fn abort(self) {
        let _ = self.end(false);
    }
}

impl RawTx for MdbxTxMut {
    type Cursor = MdbxCursor;

    fn get(&self, table: Tables, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
        self.0.get(table, key)
    }

    fn cursor(&self, table: Tables) -> RawResult<MdbxCursor> {
        self.0.cursor(table)
    }

    fn entries(&self, table: Tables) -> RawResult<usize> {
        self.0.entries(table)
    }

    fn commit(self) -> RawResult<()> {
        self.0.commit()
    }

    fn abort(self) {
        self.0.abort()
    }
}

impl MdbxTxMut {
    fn put_with(
        &self,
        table: Tables,
        key: &[u8],
        value: &[u8],
        flags: u32,
        op: DatabaseWriteOperation,
    ) -> RawResult<()> {
        let dbi = self.0.inner.env.dbi(table)?;
        let (_g, txn) = self.0.inner.lock()?;
        let k = val(key);
        let mut v = val(value);
        // SAFETY: txn is live under the lock; key and value outlive the call.
        let rc = unsafe { ffi::mdbx_put(txn, dbi, &k, &mut v, flags) };
        if rc == ffi::MDBX_SUCCESS {
            Ok(())
        } else {
            Err(write_error(rc, op, table, key))
        }
    }
}

impl RawTxMut for MdbxTxMut {
    type CursorMut = MdbxCursor;

    fn put(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.put_with(
            table,
            key,
            value,
            ffi::MDBX_UPSERT,
            DatabaseWriteOperation::PutUpsert,
        )
    }

    fn append(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()> {
        let flags = if table.is_dupsort() {
            ffi::MDBX_APPENDDUP
        } else {
            ffi::MDBX_APPEND
        };
        self.put_with(table, key, value, flags, DatabaseWriteOperation::PutAppend)
    }

    fn delete(&self, table: Tables, key: &[u8], value: Option<&[u8]>) -> RawResult<bool> {
        let dbi = self.0.inner.env.dbi(table)?;
        let (_g, txn) = self.0.inner.lock()?;
        let k = val(key);
        let v = value.map(val);
        let vp = v.as_ref().map_or(ptr::null(), |v| v as *const _);
        // SAFETY: txn is live under the lock; pointers outlive the call.
        let rc = unsafe { ffi::mdbx_del(txn, dbi, &k, vp) };
        match rc {
            ffi::MDBX_SUCCESS => Ok(true),
            ffi::MDBX_NOTFOUND => Ok(false),
            rc => Err(DatabaseError::Delete(info(rc, Some(table)))),
        }
    }

    fn clear(&self, table: Tables) -> RawResult<()> {
        let dbi = self.0.inner.env.dbi(table)?;
        let (_g, txn) = self.0.inner.lock()?;
        // SAFETY: txn is live under the lock; `false` empties the table and keeps it.
        let rc = unsafe { ffi::mdbx_drop(txn, dbi, false) };
        if rc == ffi::MDBX_SUCCESS {
            Ok(())
        } else {
            Err(DatabaseError::Delete(info(rc, Some(table))))
        }
    }

    fn cursor_mut(&self, table: Tables) -> RawResult<MdbxCursor> {
        self.0.cursor(table)
    }
}
