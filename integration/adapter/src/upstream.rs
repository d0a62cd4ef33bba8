//! The bridge to reth's storage traits: any reth-hybrid raw engine (in the node, the hybrid
//! router over reth's MDBX and our RocksDB) becomes a `reth_db_api::Database`. Generic over
//! reth's `Table` types: each call finds the table by `T::NAME` in our catalogue and moves the
//! bytes reth's own codecs produce (`Encode`, `Compress`); nothing here knows any single table.

use crate::reth_db_metrics::{
    self, Mode, Operation, Outcome, RethDbMetrics, TableOperations, TxMetrics,
};
use reth_db_api::{
    common::{IterPairResult, PairResult, ValueOnlyResult},
    cursor::{
        DbCursorRO, DbCursorRW, DbDupCursorRO, DbDupCursorRW, DupWalker, RangeWalker,
        ReverseWalker, Walker,
    },
    database::Database,
    database_metrics::DatabaseMetrics,
    table::{Compress, Decode, Decompress, DupSort, Encode, Table, TableImporter},
    transaction::{DbTx, DbTxMut},
};
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawCursorMut, RawEngine, RawResult, RawTx, RawTxMut},
};
use reth_storage_errors::db::{
    DatabaseError, DatabaseErrorInfo, DatabaseWriteError, DatabaseWriteOperation,
};
use std::{
    marker::PhantomData,
    ops::{Bound, RangeBounds},
    path::PathBuf,
    sync::Arc,
};

/// Our error, as reth's (same variants; context kept in the message).
pub fn to_reth(e: reth_hybrid_api::DatabaseError) -> DatabaseError {
    use reth_hybrid_api::DatabaseError as E;
    let info = |i: reth_hybrid_api::DatabaseErrorInfo| DatabaseErrorInfo {
        message: match i.engine {
            Some(engine) => format!("{} [{engine}]", i.message).into(),
            None => i.message,
        },
        code: i.code,
    };
    match e {
        E::Open(i) => DatabaseError::Open(info(i)),
        E::CreateTable(i) => DatabaseError::CreateTable(info(i)),
        E::Write(w) => DatabaseError::Write(Box::new(DatabaseWriteError {
            info: info(w.info),
            operation: match w.operation {
                reth_hybrid_api::DatabaseWriteOperation::CursorAppend => {
                    DatabaseWriteOperation::CursorAppend
                }
                reth_hybrid_api::DatabaseWriteOperation::CursorUpsert => {
                    DatabaseWriteOperation::CursorUpsert
                }
                reth_hybrid_api::DatabaseWriteOperation::CursorInsert => {
                    DatabaseWriteOperation::CursorInsert
                }
                reth_hybrid_api::DatabaseWriteOperation::CursorAppendDup => {
                    DatabaseWriteOperation::CursorAppendDup
                }
                reth_hybrid_api::DatabaseWriteOperation::PutUpsert => {
                    DatabaseWriteOperation::PutUpsert
                }
                reth_hybrid_api::DatabaseWriteOperation::PutAppend => {
                    DatabaseWriteOperation::PutAppend
                }
                reth_hybrid_api::DatabaseWriteOperation::Flush => DatabaseWriteOperation::Flush,
            },
            table_name: w.table_name,
            key: w.key,
        })),
        E::Read(i) => DatabaseError::Read(info(i)),
        E::Delete(i) => DatabaseError::Delete(info(i)),
        E::Commit(i) => DatabaseError::Commit(info(i)),
        E::InitTx(i) => DatabaseError::InitTx(info(i)),
        E::InitCursor(i) => DatabaseError::InitCursor(info(i)),
        E::Decode { .. } => DatabaseError::Decode,
        E::Stats(i) => DatabaseError::Stats(info(i)),
        other => DatabaseError::Other(other.to_string()),
    }
}

/// The catalogue entry of reth's table type, found at compile time (every call goes through here).
fn table<T: Table>() -> Result<Tables, DatabaseError> {
    const { Tables::from_name(T::NAME) }.ok_or_else(|| {
        DatabaseError::Other(format!(
            "table {} is not in reth-hybrid's catalogue (a reth newer than v2.5.1?)",
            T::NAME
        ))
    })
}

fn decode_pair<T: Table>(row: RawResult<Option<(Vec<u8>, Vec<u8>)>>) -> PairResult<T> {
    match row.map_err(to_reth)? {
        None => Ok(None),
        Some((k, v)) => Ok(Some((
            T::Key::decode_owned(k)?,
            T::Value::decompress_owned(v)?,
        ))),
    }
}

fn decode_value<T: Table>(v: RawResult<Option<Vec<u8>>>) -> ValueOnlyResult<T> {
    match v.map_err(to_reth)? {
        None => Ok(None),
        Some(v) => Ok(Some(T::Value::decompress_owned(v)?)),
    }
}

fn compress<T: Table>(value: &T::Value, buf: &mut Vec<u8>) {
    buf.clear();
    match value.uncompressable_ref() {
        Some(bytes) => buf.extend_from_slice(bytes),
        None => value.compress_to_buf(buf),
    }
}

/// Gauges in reth's shape (name, value, labels).
pub type RethGauges = Vec<(&'static str, f64, Vec<metrics::Label>)>;

/// A raw engine behind reth's `Database`.
pub struct UpstreamDatabase<E> {
    engine: Arc<E>,
    /// Gauges reported before the engine's own (in the node: reth's MDBX gauges, exactly as a
    /// stock node reports them).
    extra_gauges: Option<Arc<dyn Fn() -> RethGauges + Send + Sync>>,
    /// reth's `reth_database_*` metrics, recorded as reth's MDBX `Tx` records them.
    reth_metrics: Option<Arc<RethDbMetrics>>,
}

impl<E: std::fmt::Debug> std::fmt::Debug for UpstreamDatabase<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamDatabase")
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

impl<E> Clone for UpstreamDatabase<E> {
    fn clone(&self) -> Self {
        Self {
            engine: Arc::clone(&self.engine),
            extra_gauges: self.extra_gauges.clone(),
            reth_metrics: self.reth_metrics.clone(),
        }
    }
}

impl<E: RawEngine> UpstreamDatabase<E> {
    pub fn new(engine: E) -> Self {
        Self {
            engine: Arc::new(engine),
            extra_gauges: None,
            reth_metrics: None,
        }
    }

    /// Records reth's own database metrics (`reth_database_transaction_*`,
    /// `reth_database_operation_*`) at every trait call, as reth's MDBX `Tx` does unless the
    /// node runs with `--db.disable-metrics`.
    pub fn with_reth_metrics(mut self, metrics: Arc<RethDbMetrics>) -> Self {
        self.reth_metrics = Some(metrics);
        self
    }

    /// Reports `gauges()` ahead of the engine's own gauges.
    pub fn with_extra_gauges(
        mut self,
        gauges: impl Fn() -> RethGauges + Send + Sync + 'static,
    ) -> Self {
        self.extra_gauges = Some(Arc::new(gauges));
        self
    }

    pub fn engine(&self) -> &E {
        &self.engine
    }
}

/// A transaction of the engine behind reth's `DbTx`/`DbTxMut`.
#[derive(Debug)]
pub struct UpstreamTx<X> {
    raw: X,
    metrics: Option<TxMetrics>,
}

impl<X> UpstreamTx<X> {
    fn new(raw: X, metrics: &Option<Arc<RethDbMetrics>>, mode: Mode) -> Self {
        Self {
            raw,
            metrics: metrics
                .as_ref()
                .map(|m| TxMetrics::open(Arc::clone(m), mode)),
        }
    }

    /// Runs `f` as reth's `operation` on `table`, counted when metrics are on.
    fn measured<R>(
        &self,
        table: Tables,
        operation: Operation,
        value_size: Option<usize>,
        f: impl FnOnce(&X) -> R,
    ) -> R {
        match &self.metrics {
            Some(m) => m.operation(table, operation, value_size, || f(&self.raw)),
            None => f(&self.raw),
        }
    }

    /// Ends the transaction with `f`, recorded as `outcome`.
    fn close<R>(self, outcome: Outcome, f: impl FnOnce(X) -> R) -> R {
        let Self { raw, metrics } = self;
        match metrics {
            Some(m) => m.close(outcome, || f(raw)),
            None => f(raw),
        }
    }
}

/// A cursor of the engine behind reth's cursor traits.
#[derive(Debug)]
pub struct UpstreamCursor<C, T> {
    raw: C,
    buf: Vec<u8>,
    /// The table's operation metrics, for cursor writes (reth counts no cursor reads).
    ops: Option<TableOperations>,
    _table: PhantomData<T>,
}

impl<C, T> UpstreamCursor<C, T> {
    fn new(raw: C, ops: Option<TableOperations>) -> Self {
        Self {
            raw,
            buf: Vec::new(),
            ops,
            _table: PhantomData,
        }
    }

    fn measured<R>(
        &mut self,
        operation: Operation,
        value_size: Option<usize>,
        f: impl FnOnce(&mut C) -> R,
    ) -> R {
        match &self.ops {
            Some(ops) => reth_db_metrics::record(ops, operation, value_size, || f(&mut self.raw)),
            None => f(&mut self.raw),
        }
    }
}

impl<E: RawEngine> Database for UpstreamDatabase<E> {
    type TX = UpstreamTx<E::Tx>;
    type TXMut = UpstreamTx<E::TxMut>;

    fn tx(&self) -> Result<Self::TX, DatabaseError> {
        let raw = self.engine.begin_ro().map_err(to_reth)?;
        Ok(UpstreamTx::new(raw, &self.reth_metrics, Mode::ReadOnly))
    }

    fn tx_mut(&self) -> Result<Self::TXMut, DatabaseError> {
        let raw = self.engine.begin_rw().map_err(to_reth)?;
        Ok(UpstreamTx::new(raw, &self.reth_metrics, Mode::ReadWrite))
    }

    fn path(&self) -> PathBuf {
        self.engine.path()
    }

    /// The engine's (the hybrid's are its MDBX's, whose reader table covers every hybrid
    /// reader), so reth's wait for older readers before unwinding static files works.
    fn oldest_reader_txnid(&self) -> Option<u64> {
        self.engine.oldest_reader_txnid()
    }

    fn last_txnid(&self) -> Option<u64> {
        self.engine.last_txnid()
    }
}

impl<E: RawEngine> DatabaseMetrics for UpstreamDatabase<E> {
    fn gauge_metrics(&self) -> RethGauges {
        let mut out = self.extra_gauges.as_ref().map(|f| f()).unwrap_or_default();
        // Labelled as ours: reth's own RocksDB (storage v2, opened even on v1 datadirs) reports
        // `rocksdb_*` metrics of its own next to these.
        out.extend(self.engine.gauges().into_iter().map(|g| {
            let mut labels = vec![metrics::Label::new("source", "reth-hybrid")];
            labels.extend(g.table.map(|t| metrics::Label::new("table", t.name())));
            (g.name, g.value, labels)
        }));
        out
    }
}

impl<X: RawTx> DbTx for UpstreamTx<X> {
    type Cursor<T: Table> = UpstreamCursor<X::Cursor, T>;
    type DupCursor<T: DupSort> = UpstreamCursor<X::Cursor, T>;

    fn get<T: Table>(&self, key: T::Key) -> Result<Option<T::Value>, DatabaseError> {
        self.get_by_encoded_key::<T>(&key.encode())
    }

    fn get_by_encoded_key<T: Table>(
        &self,
        key: &<T::Key as Encode>::Encoded,
    ) -> Result<Option<T::Value>, DatabaseError> {
        let table = table::<T>()?;
        decode_value::<T>(self.measured(table, Operation::Get, None, |raw| {
            raw.get(table, key.as_ref())
        }))
    }

    fn commit(self) -> Result<(), DatabaseError> {
        self.close(Outcome::Commit, |raw| raw.commit())
            .map_err(to_reth)
    }

    fn abort(self) {
        self.close(Outcome::Abort, |raw| raw.abort())
    }

    fn cursor_read<T: Table>(&self) -> Result<Self::Cursor<T>, DatabaseError> {
        Ok(UpstreamCursor::new(
            self.raw.cursor(table::<T>()?).map_err(to_reth)?,
            None,
        ))
    }

    fn cursor_dup_read<T: DupSort>(&self) -> Result<Self::DupCursor<T>, DatabaseError> {
        self.cursor_read::<T>()
    }

    fn entries<T: Table>(&self) -> Result<usize, DatabaseError> {
        self.raw.entries(table::<T>()?).map_err(to_reth)
    }

    fn disable_long_read_transaction_safety(&mut self) {
        self.raw.disable_long_read_safety();
        if let Some(m) = &self.metrics {
            m.disable_long_read_warning();
        }
    }
}

impl<X: RawTxMut> DbTxMut for UpstreamTx<X> {
    type CursorMut<T: Table> = UpstreamCursor<X::CursorMut, T>;
    type DupCursorMut<T: DupSort> = UpstreamCursor<X::CursorMut, T>;

    fn put<T: Table>(&self, key: T::Key, value: T::Value) -> Result<(), DatabaseError> {
        let table = table::<T>()?;
        let mut buf = Vec::new();
        compress::<T>(&value, &mut buf);
        let key = key.encode();
        self.measured(table, Operation::PutUpsert, Some(buf.len()), |raw| {
            raw.put(table, key.as_ref(), &buf)
        })
        .map_err(to_reth)
    }

    fn append<T: Table>(&self, key: T::Key, value: T::Value) -> Result<(), DatabaseError> {
        let table = table::<T>()?;
        let mut buf = Vec::new();
        compress::<T>(&value, &mut buf);
        let key = key.encode();
        self.measured(table, Operation::PutAppend, Some(buf.len()), |raw| {
            raw.append(table, key.as_ref(), &buf)
        })
        .map_err(to_reth)
    }

    fn delete<T: Table>(
        &self,
        key: T::Key,
        value: Option<T::Value>,
    ) -> Result<bool, DatabaseError> {
        let buf = value.map(|v| {
            let mut buf = Vec::new();
            compress::<T>(&v, &mut buf);
            buf
        });
        let table = table::<T>()?;
        let key = key.encode();
        self.measured(table, Operation::Delete, None, |raw| {
            raw.delete(table, key.as_ref(), buf.as_deref())
        })
        .map_err(to_reth)
    }

    fn clear<T: Table>(&self) -> Result<(), DatabaseError> {
        self.raw.clear(table::<T>()?).map_err(to_reth)
    }

    fn cursor_write<T: Table>(&self) -> Result<Self::CursorMut<T>, DatabaseError> {
        let table = table::<T>()?;
        Ok(UpstreamCursor::new(
            self.raw.cursor_mut(table).map_err(to_reth)?,
            self.metrics.as_ref().map(|m| m.table(table)),
        ))
    }

    fn cursor_dup_write<T: DupSort>(&self) -> Result<Self::DupCursorMut<T>, DatabaseError> {
        self.cursor_write::<T>()
    }
}

impl<X: RawTxMut> TableImporter for UpstreamTx<X> {}

impl<C: RawCursor, T: Table> DbCursorRO<T> for UpstreamCursor<C, T> {
    fn first(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.first())
    }

    fn seek_exact(&mut self, key: T::Key) -> PairResult<T> {
        decode_pair::<T>(self.raw.seek_exact(key.encode().as_ref()))
    }

    fn seek(&mut self, key: T::Key) -> PairResult<T> {
        decode_pair::<T>(self.raw.seek(key.encode().as_ref()))
    }

    fn next(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.next())
    }

    fn prev(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.prev())
    }

    fn last(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.last())
    }

    fn current(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.current())
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
            // As reth's MDBX cursor, an excluded start is not supported by Rust ranges.
            Bound::Excluded(key) => {
                let first = self.seek(key.clone())?;
                match first {
                    Some((k, _)) if k == key => self.next(),
                    other => Ok(other),
                }
            }
            Bound::Unbounded => self.first(),
        }
        .transpose();
        Ok(RangeWalker::new(self, start, range.end_bound().cloned()))
    }

    fn walk_back(
        &mut self,
        start_key: Option<T::Key>,
    ) -> Result<ReverseWalker<'_, T, Self>, DatabaseError> {
        // MDBX's behaviour, kept: a start key positions at the first key >= it.
        let start = match start_key {
            Some(key) => self.seek(key),
            None => self.last(),
        }
        .transpose();
        Ok(ReverseWalker::new(self, start))
    }
}

impl<C: RawCursor, T: DupSort> DbDupCursorRO<T> for UpstreamCursor<C, T> {
    fn prev_dup(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.prev_dup())
    }

    fn next_dup(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.next_dup())
    }

    fn last_dup(&mut self) -> ValueOnlyResult<T> {
        decode_value::<T>(self.raw.last_dup())
    }

    fn next_no_dup(&mut self) -> PairResult<T> {
        decode_pair::<T>(self.raw.next_no_dup())
    }

    fn next_dup_val(&mut self) -> ValueOnlyResult<T> {
        decode_value::<T>(self.raw.next_dup().map(|p| p.map(|(_, v)| v)))
    }

    fn seek_by_key_subkey(&mut self, key: T::Key, subkey: T::SubKey) -> ValueOnlyResult<T> {
        decode_value::<T>(
            self.raw
                .seek_by_key_subkey(key.encode().as_ref(), subkey.encode().as_ref()),
        )
    }

    fn walk_dup(
        &mut self,
        key: Option<T::Key>,
        subkey: Option<T::SubKey>,
    ) -> Result<DupWalker<'_, T, Self>, DatabaseError> {
        let start: IterPairResult<T> = match (key, subkey) {
            (Some(key), Some(subkey)) => {
                let encoded = key.clone().encode();
                match self.seek_by_key_subkey(key.clone(), subkey) {
                    Ok(Some(v)) => Some(T::Key::decode(encoded.as_ref()).map(|k| (k, v))),
                    Ok(None) => None,
                    Err(e) => Some(Err(e)),
                }
            }
            (Some(key), None) => self.seek_exact(key).transpose(),
            (None, Some(subkey)) => match self.first()? {
                Some((key, _)) => match self.seek_by_key_subkey(key.clone(), subkey) {
                    Ok(Some(v)) => Some(Ok((key, v))),
                    Ok(None) => None,
                    Err(e) => Some(Err(e)),
                },
                None => Some(Err(DatabaseError::Read(DatabaseErrorInfo {
                    message: "no rows (MDBX_NOTFOUND)".into(),
                    code: -30798,
                }))),
            },
            (None, None) => self.first().transpose(),
        };
        Ok(DupWalker {
            cursor: self,
            start,
        })
    }
}

impl<C: RawCursorMut, T: Table> DbCursorRW<T> for UpstreamCursor<C, T> {
    fn upsert(&mut self, key: T::Key, value: &T::Value) -> Result<(), DatabaseError> {
        let mut buf = std::mem::take(&mut self.buf);
        compress::<T>(value, &mut buf);
        let r = self.measured(Operation::CursorUpsert, Some(buf.len()), |raw| {
            raw.upsert(key.encode().as_ref(), &buf)
        });
        self.buf = buf;
        r.map_err(to_reth)
    }

    /// `MDBX_NOOVERWRITE`, as reth's MDBX cursor, on every table: a dupsort key with any
    /// duplicate refuses another (the raw `insert` refuses only the exact pair).
    fn insert(&mut self, key: T::Key, value: &T::Value) -> Result<(), DatabaseError> {
        let key = key.encode();
        if table::<T>()?.is_dupsort()
            && self
                .raw
                .seek_exact(key.as_ref())
                .map_err(to_reth)?
                .is_some()
        {
            return Err(DatabaseWriteError {
                info: DatabaseErrorInfo {
                    message: "key already exists (MDBX_KEYEXIST)".into(),
                    code: reth_hybrid_api::error::codes::KEY_EXIST,
                },
                operation: DatabaseWriteOperation::CursorInsert,
                table_name: T::NAME,
                key: key.as_ref().to_vec(),
            }
            .into());
        }
        let mut buf = std::mem::take(&mut self.buf);
        compress::<T>(value, &mut buf);
        let r = self.measured(Operation::CursorInsert, Some(buf.len()), |raw| {
            raw.insert(key.as_ref(), &buf)
        });
        self.buf = buf;
        r.map_err(to_reth)
    }

    fn append(&mut self, key: T::Key, value: &T::Value) -> Result<(), DatabaseError> {
        let mut buf = std::mem::take(&mut self.buf);
        compress::<T>(value, &mut buf);
        let r = self.measured(Operation::CursorAppend, Some(buf.len()), |raw| {
            raw.append(key.encode().as_ref(), &buf)
        });
        self.buf = buf;
        r.map_err(to_reth)
    }

    fn delete_current(&mut self) -> Result<(), DatabaseError> {
        self.measured(Operation::CursorDeleteCurrent, None, |raw| {
            raw.delete_current()
        })
        .map_err(to_reth)
    }
}

impl<C: RawCursorMut, T: DupSort> DbDupCursorRW<T> for UpstreamCursor<C, T> {
    fn delete_current_duplicates(&mut self) -> Result<(), DatabaseError> {
        self.measured(Operation::CursorDeleteCurrentDuplicates, None, |raw| {
            raw.delete_current_duplicates()
        })
        .map_err(to_reth)
    }

    fn append_dup(&mut self, key: T::Key, value: T::Value) -> Result<(), DatabaseError> {
        let mut buf = std::mem::take(&mut self.buf);
        compress::<T>(&value, &mut buf);
        let r = self.measured(Operation::CursorAppendDup, Some(buf.len()), |raw| {
            raw.append_dup(key.encode().as_ref(), &buf)
        });
        self.buf = buf;
        r.map_err(to_reth)
    }
}
