//! reth's own MDBX (`reth_db::DatabaseEnv`, libmdbx 0.13 through `reth-libmdbx`) as a reth-hybrid
//! raw engine. Inside a reth binary the hybrid's primary must be reth's MDBX: two libmdbx builds
//! in one process would clash, and reth opens the same files. Every move maps to the MDBX
//! operation of the same name, so the conformance suite holds here as on our own MDBX engine.

use crate::reth_db_metrics::{Mode, RethDbMetrics};
use reth_db::DatabaseEnv;
use reth_hybrid_api::{
    DatabaseError, DatabaseErrorInfo, DatabaseWriteError, DatabaseWriteOperation, Tables,
    raw::{Liveness, RawCursor, RawCursorMut, RawEngine, RawPair, RawResult, RawTx, RawTxMut},
};
use reth_libmdbx::{RO, RW, TransactionKind, WriteFlags};
use std::{
    path::PathBuf,
    sync::{Arc, OnceLock},
};

fn info(e: reth_libmdbx::Error, table: Option<Tables>) -> DatabaseErrorInfo {
    let message = match table {
        Some(t) => format!("{e} in table {t}"),
        None => e.to_string(),
    };
    DatabaseErrorInfo::new(message, e.to_err_code()).with_engine("mdbx")
}

fn write_err(
    e: reth_libmdbx::Error,
    op: DatabaseWriteOperation,
    table: Tables,
    key: &[u8],
) -> DatabaseError {
    DatabaseError::Write(Box::new(DatabaseWriteError {
        info: info(e, Some(table)),
        operation: op,
        table_name: table.name(),
        key: key.to_vec(),
    }))
}

/// reth's MDBX environment with a DBI per catalogued table (absent tables are `None`).
#[derive(Clone)]
pub struct RethMdbx {
    env: Arc<DatabaseEnv>,
    dbis: Arc<[Option<u32>; Tables::COUNT]>,
    /// Set once reth's database metrics are on: every commit records MDBX's latency breakdown.
    metrics: Arc<OnceLock<Arc<RethDbMetrics>>>,
}

impl std::fmt::Debug for RethMdbx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RethMdbx").finish_non_exhaustive()
    }
}

impl RethMdbx {
    /// Wraps an open environment whose tables exist (`DatabaseEnv::create_tables`).
    pub fn new(env: Arc<DatabaseEnv>) -> RawResult<Self> {
        let tx = env
            .begin_ro_txn()
            .map_err(|e| DatabaseError::InitTx(info(e, None)))?;
        let mut dbis = [None; Tables::COUNT];
        for table in Tables::ALL {
            match tx.open_db(Some(table.name())) {
                Ok(db) => dbis[table as usize] = Some(db.dbi()),
                Err(reth_libmdbx::Error::NotFound) => {}
                Err(e) => return Err(DatabaseError::Open(info(e, Some(table)))),
            }
        }
        drop(tx);
        Ok(Self {
            env,
            dbis: Arc::new(dbis),
            metrics: Arc::default(),
        })
    }

    /// Records MDBX's account of every commit from now on (`commit_*_duration_seconds`, as
    /// reth's `Tx` records them). A second call keeps the first metrics.
    pub fn record_commit_latency(&self, metrics: Arc<RethDbMetrics>) {
        let _ = self.metrics.set(metrics);
    }

    /// The wrapped environment.
    pub fn env(&self) -> &Arc<DatabaseEnv> {
        &self.env
    }

    fn dbi(dbis: &[Option<u32>; Tables::COUNT], table: Tables) -> RawResult<u32> {
        dbis[table as usize].ok_or_else(|| {
            DatabaseError::Open(
                DatabaseErrorInfo::new(format!("table {table} does not exist"), -30798)
                    .with_engine("mdbx"),
            )
        })
    }
}

/// A transaction (`RO` or `RW`) of reth's MDBX.
pub struct RethTx<K: TransactionKind> {
    tx: reth_libmdbx::Transaction<K>,
    dbis: Arc<[Option<u32>; Tables::COUNT]>,
    metrics: Option<Arc<RethDbMetrics>>,
}

impl<K: TransactionKind> std::fmt::Debug for RethTx<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RethTx").finish_non_exhaustive()
    }
}

/// A cursor of reth's MDBX.
pub struct RethCursor<K: TransactionKind> {
    cursor: reth_libmdbx::Cursor<K>,
    /// The cursor's transaction, for the one call reth-libmdbx does not wrap (`dup_count`).
    tx: reth_libmdbx::Transaction<K>,
    table: Tables,
}

impl<K: TransactionKind> std::fmt::Debug for RethCursor<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RethCursor")
            .field("table", &self.table)
            .finish()
    }
}

impl RawEngine for RethMdbx {
    type Tx = RethTx<RO>;
    type TxMut = RethTx<RW>;

    fn engine_name(&self) -> &'static str {
        "mdbx"
    }

    /// reth's environment opened read-only (an environment that cannot say counts as writable,
    /// so the hybrid treats it as a writer: the safe side).
    fn is_read_only(&self) -> bool {
        self.env.is_read_only().unwrap_or(false)
    }

    fn path(&self) -> PathBuf {
        reth_db_api::database::Database::path(&*self.env)
    }

    fn has_table(&self, table: Tables) -> bool {
        self.dbis[table as usize].is_some()
    }

    fn begin_ro(&self) -> RawResult<RethTx<RO>> {
        let tx = self
            .env
            .begin_ro_txn()
            .map_err(|e| DatabaseError::InitTx(info(e, None)))?;
        Ok(RethTx {
            tx,
            dbis: Arc::clone(&self.dbis),
            metrics: self.metrics.get().cloned(),
        })
    }

    /// reth's own numbers (`DatabaseEnv`): MDBX's reader table.
    fn oldest_reader_txnid(&self) -> Option<u64> {
        reth_db_api::database::Database::oldest_reader_txnid(&*self.env)
    }

    fn last_txnid(&self) -> Option<u64> {
        reth_db_api::database::Database::last_txnid(&*self.env)
    }

    fn begin_rw(&self) -> RawResult<RethTx<RW>> {
        let tx = self
            .env
            .begin_rw_txn()
            .map_err(|e| DatabaseError::InitTx(info(e, None)))?;
        Ok(RethTx {
            tx,
            dbis: Arc::clone(&self.dbis),
            metrics: self.metrics.get().cloned(),
        })
    }
}

impl<K: TransactionKind> RawTx for RethTx<K> {
    type Cursor = RethCursor<K>;

    fn get(&self, table: Tables, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
        let dbi = RethMdbx::dbi(&self.dbis, table)?;
        self.tx
            .get::<Vec<u8>>(dbi, key)
            .map_err(|e| DatabaseError::Read(info(e, Some(table))))
    }

    fn cursor(&self, table: Tables) -> RawResult<RethCursor<K>> {
        let dbi = RethMdbx::dbi(&self.dbis, table)?;
        let cursor = self
            .tx
            .cursor_with_dbi(dbi)
            .map_err(|e| DatabaseError::InitCursor(info(e, Some(table))))?;
        Ok(RethCursor {
            cursor,
            tx: self.tx.clone(),
            table,
        })
    }

    fn entries(&self, table: Tables) -> RawResult<usize> {
        let dbi = RethMdbx::dbi(&self.dbis, table)?;
        self.tx
            .db_stat_with_dbi(dbi)
            .map(|s| s.entries())
            .map_err(|e| DatabaseError::Stats(info(e, Some(table))))
    }

    fn commit(self) -> RawResult<()> {
        let latency = self
            .tx
            .commit()
            .map_err(|e| DatabaseError::Commit(info(e, None)))?;
        if let Some(metrics) = &self.metrics {
            let mode = if K::IS_READ_ONLY {
                Mode::ReadOnly
            } else {
                Mode::ReadWrite
            };
            metrics.commit_latency(mode).record(&latency);
        }
        Ok(())
    }

    fn abort(self) {
        drop(self.tx);
    }

    /// Takes the transaction off reth's read-timeout monitor, as reth's own `Tx` does.
    fn disable_long_read_safety(&mut self) {
        self.tx.disable_timeout();
    }

    /// reth's monitor resets a timed-out read transaction; every call on it then fails.
    fn check_alive(&self) -> RawResult<()> {
        alive(&self.tx)
    }

    /// A clone of the transaction handle (as reth-libmdbx's own cursors hold one), so a RocksDB
    /// cursor of this reader fails once the monitor reset it.
    fn liveness(&self) -> Option<Liveness> {
        if !K::IS_READ_ONLY {
            return None;
        }
        let tx = self.tx.clone();
        Some(Arc::new(move || alive(&tx)))
    }
}

/// Every call on a transaction reth's monitor reset fails with `ReadTransactionTimeout`.
fn alive<K: TransactionKind>(tx: &reth_libmdbx::Transaction<K>) -> RawResult<()> {
    tx.id()
        .map(|_| ())
        .map_err(|e| DatabaseError::Read(info(e, None)))
}

impl RawTxMut for RethTx<RW> {
    type CursorMut = RethCursor<RW>;

    fn put(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()> {
        let dbi = RethMdbx::dbi(&self.dbis, table)?;
        self.tx
            .put(dbi, key, value, WriteFlags::UPSERT)
            .map_err(|e| write_err(e, DatabaseWriteOperation::PutUpsert, table, key))
    }

    fn append(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()> {
        let dbi = RethMdbx::dbi(&self.dbis, table)?;
        let flags = if table.is_dupsort() {
            WriteFlags::APPEND_DUP
        } else {
            WriteFlags::APPEND
        };
        self.tx
            .put(dbi, key, value, flags)
            .map_err(|e| write_err(e, DatabaseWriteOperation::PutAppend, table, key))
    }

    fn delete(&self, table: Tables, key: &[u8], value: Option<&[u8]>) -> RawResult<bool> {
        let dbi = RethMdbx::dbi(&self.dbis, table)?;
        self.tx
            .del(dbi, key, value)
            .map_err(|e| DatabaseError::Delete(info(e, Some(table))))
    }

    fn clear(&self, table: Tables) -> RawResult<()> {
        let dbi = RethMdbx::dbi(&self.dbis, table)?;
        self.tx
            .clear_db(dbi)
            .map_err(|e| DatabaseError::Delete(info(e, Some(table))))
    }

    fn cursor_mut(&self, table: Tables) -> RawResult<RethCursor<RW>> {
        self.cursor(table)
    }
}

type Pair = Option<(Vec<u8>, Vec<u8>)>;

impl<K: TransactionKind> RethCursor<K> {
    fn read(&self, r: reth_libmdbx::Result<Pair>) -> RawResult<Option<RawPair>> {
        r.map_err(|e| DatabaseError::Read(info(e, Some(self.table))))
    }
}

impl<K: TransactionKind> RawCursor for RethCursor<K> {
    fn first(&mut self) -> RawResult<Option<RawPair>> {
        let r = self.cursor.first();
        self.read(r)
    }
    fn last(&mut self) -> RawResult<Option<RawPair>> {
        let r = self.cursor.last();
        self.read(r)
    }
    fn seek(&mut self, key: &[u8]) -> RawResult<Option<RawPair>> {
        let r = self.cursor.set_range(key);
        self.read(r)
    }
    fn seek_exact(&mut self, key: &[u8]) -> RawResult<Option<RawPair>> {
        let r = self.cursor.set_key(key);
        self.read(r)
    }
    fn next(&mut self) -> RawResult<Option<RawPair>> {
        let r = self.cursor.next();
        self.read(r)
    }
    fn prev(&mut self) -> RawResult<Option<RawPair>> {
        let r = self.cursor.prev();
        self.read(r)
    }
    fn current(&mut self) -> RawResult<Option<RawPair>> {
        let r = self.cursor.get_current();
        self.read(r)
    }
    fn next_dup(&mut self) -> RawResult<Option<RawPair>> {
        let r = self.cursor.next_dup();
        self.read(r)
    }
    fn prev_dup(&mut self) -> RawResult<Option<RawPair>> {
        let r = self.cursor.prev_dup();
        self.read(r)
    }
    fn next_no_dup(&mut self) -> RawResult<Option<RawPair>> {
        let r = self.cursor.next_nodup();
        self.read(r)
    }
    fn last_dup(&mut self) -> RawResult<Option<Vec<u8>>> {
        self.cursor
            .last_dup::<Vec<u8>>()
            .map_err(|e| DatabaseError::Read(info(e, Some(self.table))))
    }
    fn seek_by_key_subkey(&mut self, key: &[u8], subkey: &[u8]) -> RawResult<Option<Vec<u8>>> {
        self.cursor
            .get_both_range::<Vec<u8>>(key, subkey)
            .map_err(|e| DatabaseError::Read(info(e, Some(self.table))))
    }
    fn dup_count(&mut self) -> RawResult<u64> {
        let cursor = self.cursor.cursor();
        let mut count = 0usize;
        let rc = self
            .tx
            // SAFETY: the cursor belongs to `tx`, which `txn_execute` holds (locked, not timed
            // out) for the call, as reth-libmdbx's own cursor calls do; MDBX writes only `count`.
            .txn_execute(|_| unsafe { reth_libmdbx::ffi::mdbx_cursor_count(cursor, &mut count) })
            .map_err(|e| DatabaseError::Read(info(e, Some(self.table))))?;
        if rc != 0 {
            let e = reth_libmdbx::Error::from_err_code(rc);
            return Err(DatabaseError::Read(info(e, Some(self.table))));
        }
        Ok(count as u64)
    }
}

impl RethCursor<RW> {
    fn put_with(
        &mut self,
        key: &[u8],
        value: &[u8],
        flags: WriteFlags,
        op: DatabaseWriteOperation,
    ) -> RawResult<()> {
        let table = self.table;
        self.cursor
            .put(key, value, flags)
            .map_err(|e| write_err(e, op, table, key))
    }
}

impl RawCursorMut for RethCursor<RW> {
    fn upsert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.put_with(
            key,
            value,
            WriteFlags::UPSERT,
            DatabaseWriteOperation::CursorUpsert,
        )
    }
    fn insert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        let flags = if self.table.is_dupsort() {
            WriteFlags::NO_DUP_DATA
        } else {
            WriteFlags::NO_OVERWRITE
        };
        self.put_with(key, value, flags, DatabaseWriteOperation::CursorInsert)
    }
    fn append(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.put_with(
            key,
            value,
            WriteFlags::APPEND,
            DatabaseWriteOperation::CursorAppend,
        )
    }
    fn append_dup(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.put_with(
            key,
            value,
            WriteFlags::APPEND_DUP,
            DatabaseWriteOperation::CursorAppendDup,
        )
    }
    fn append_last(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.put_with(
            key,
            value,
            WriteFlags::APPEND | WriteFlags::APPEND_DUP,
            DatabaseWriteOperation::CursorAppendDup,
        )
    }
    fn delete_current(&mut self) -> RawResult<()> {
        let table = self.table;
        self.cursor
            .del(WriteFlags::CURRENT)
            .map_err(|e| DatabaseError::Delete(info(e, Some(table))))
    }
    fn delete_current_duplicates(&mut self) -> RawResult<()> {
        let table = self.table;
        self.cursor
            .del(WriteFlags::NO_DUP_DATA)
            .map_err(|e| DatabaseError::Delete(info(e, Some(table))))
    }
}
