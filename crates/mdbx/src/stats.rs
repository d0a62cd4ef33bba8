//! Size figures for datadir tools (`stats`, migration planning) and the compacting copy that
//! returns pages freed by a migration to the filesystem.

use crate::{
    env::MdbxEngine,
    error::{MdbxCode, MdbxError, info},
    tx::MdbxTx,
};
use mdbx_sys as ffi;
use reth_hybrid_api::{DatabaseError, Tables, raw::RawResult};
use std::{ffi::CString, path::Path};

/// One table's size in MDBX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableStat {
    /// Rows (every duplicate counts); exact.
    pub entries: u64,
    /// Branch, leaf and overflow pages.
    pub pages: u64,
    pub page_size: u32,
}

impl TableStat {
    /// Bytes of pages the table occupies in `mdbx.dat`.
    pub fn bytes(&self) -> u64 {
        self.pages * u64::from(self.page_size)
    }
}

/// The environment's data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvStat {
    /// Current size of `mdbx.dat` as MDBX sees it (its geometry).
    pub file_bytes: u64,
    /// Bytes up to the last used page; pages below it may be free (reusable, not returned).
    pub used_bytes: u64,
    pub page_size: u32,
    /// Bytes each growth adds (and libmdbx preallocates).
    pub growth_step_bytes: u64,
}

impl MdbxTx {
    /// The table's entries and pages in this transaction's snapshot. A table the datadir lacks
    /// (reth v2.2 has no BAL tables) is empty.
    pub fn table_stat(&self, table: Tables) -> RawResult<TableStat> {
        let Ok(dbi) = self.inner.env.dbi(table) else {
            return Ok(TableStat::default());
        };
        let (_g, txn) = self.inner.lock()?;
        // SAFETY: MDBX_stat is plain data; txn is live under the lock.
        let mut stat: ffi::MDBX_stat = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            ffi::mdbx_dbi_stat(txn, dbi, &mut stat, std::mem::size_of::<ffi::MDBX_stat>())
        };
        if rc != ffi::MDBX_SUCCESS {
            return Err(DatabaseError::Stats(info(rc, Some(table))));
        }
        Ok(TableStat {
            entries: stat.ms_entries,
            pages: stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages,
            page_size: stat.ms_psize,
        })
    }
}

impl MdbxEngine {
    pub fn env_stat(&self) -> RawResult<EnvStat> {
        let env_info = self.env_info()?;
        let page_size = env_info.mi_dxb_pagesize;
        Ok(EnvStat {
            file_bytes: env_info.mi_geo.current,
            used_bytes: (env_info.mi_last_pgno + 1) * u64::from(page_size),
            page_size,
            growth_step_bytes: env_info.mi_geo.grow,
        })
    }

    pub(crate) fn env_info(&self) -> RawResult<ffi::MDBX_envinfo> {
        // SAFETY: MDBX_envinfo is plain data; the env is open for the lifetime of self.
        let mut env_info: ffi::MDBX_envinfo = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            ffi::mdbx_env_info_ex(
                self.inner.env,
                std::ptr::null(),
                &mut env_info,
                std::mem::size_of::<ffi::MDBX_envinfo>(),
            )
        };
        if rc != ffi::MDBX_SUCCESS {
            return Err(DatabaseError::Stats(info(rc, None)));
        }
        Ok(env_info)
    }

    /// Writes a compacted copy of the environment (free pages omitted, pages renumbered) to the
    /// new file `dest`. The copy is a consistent snapshot and is flushed before this returns.
    pub fn copy_compacted(&self, dest: &Path) -> Result<(), MdbxError> {
        let c_dest =
            CString::new(dest.to_string_lossy().as_bytes()).map_err(|_| MdbxError::Missing {
                path: dest.to_path_buf(),
            })?;
        // SAFETY: the env is open; c_dest is NUL-terminated and outlives the call.
        let rc = unsafe {
            ffi::mdbx_env_copy(
                self.inner.env,
                c_dest.as_ptr(),
                ffi::MDBX_CP_COMPACT | ffi::MDBX_CP_FORCE_DYNAMIC_SIZE,
            )
        };
        if rc == ffi::MDBX_SUCCESS {
            Ok(())
        } else {
            Err(MdbxError::Open {
                path: dest.to_path_buf(),
                code: MdbxCode { code: rc },
            })
        }
    }
}

impl crate::tx::MdbxTxMut {
    /// See [`MdbxTx::table_stat`]; counts this transaction's own writes.
    pub fn table_stat(&self, table: Tables) -> RawResult<TableStat> {
        self.0.table_stat(table)
    }
}
