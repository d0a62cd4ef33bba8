//! `ModelEngine`: every table a `BTreeSet` of `(key, value)` pairs, with MDBX's semantics from
//! [`crate::sorted`]. It is the conformance suite's oracle and the skeleton that proves the raw
//! traits need no real engine. It is not a stub: it must be right, because it judges the others.

use crate::{
    DatabaseError, DatabaseErrorInfo, Tables,
    error::codes,
    raw::{RawEngine, RawPair, RawResult, RawTx, RawTxMut},
    sorted::{EmulatedCursor, PairStore, TableWrites},
};
use parking_lot::{Mutex, RawMutex, lock_api::ArcMutexGuard};
use std::{collections::BTreeSet, ops::Bound, path::PathBuf, sync::Arc};

type TableData = BTreeSet<RawPair>;

/// All tables at one point in time; tables are shared copy-on-write between snapshots.
#[derive(Debug, Clone, Default)]
pub struct ModelState {
    tables: Vec<Arc<TableData>>,
}

impl ModelState {
    fn new() -> Self {
        Self {
            tables: (0..Tables::COUNT).map(|_| Arc::default()).collect(),
        }
    }

    /// Every pair of a table, in order (for comparing engines with the model).
    pub fn pairs(&self, table: Tables) -> Vec<RawPair> {
        self.tables[table as usize].iter().cloned().collect()
    }
}

/// The BTreeMap model engine.
#[derive(Debug, Clone)]
pub struct ModelEngine {
    committed: Arc<Mutex<Arc<ModelState>>>,
    writer: Arc<Mutex<()>>,
}

impl Default for ModelEngine {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelEngine {
    pub fn new() -> Self {
        Self {
            committed: Arc::new(Mutex::new(Arc::new(ModelState::new()))),
            writer: Arc::new(Mutex::new(())),
        }
    }

    /// The last committed state.
    pub fn committed(&self) -> Arc<ModelState> {
        Arc::clone(&self.committed.lock())
    }
}

/// Where a model transaction reads from.
#[derive(Debug, Clone)]
enum View {
    Snapshot(Arc<ModelState>),
    Working(Arc<Mutex<ModelState>>),
}

impl View {
    fn read<R>(&self, table: Tables, f: impl FnOnce(&TableData) -> R) -> R {
        match self {
            View::Snapshot(s) => f(&s.tables[table as usize]),
            View::Working(w) => f(&w.lock().tables[table as usize]),
        }
    }

    fn write<R>(&self, table: Tables, f: impl FnOnce(&mut TableData) -> R) -> RawResult<R> {
        match self {
            View::Snapshot(_) => Err(DatabaseError::Write(Box::new(crate::DatabaseWriteError {
                info: DatabaseErrorInfo::new("read-only transaction", codes::ACCESS)
                    .with_engine("model"),
                operation: crate::DatabaseWriteOperation::PutUpsert,
                table_name: table.name(),
                key: Vec::new(),
            }))),
            View::Working(w) => Ok(f(Arc::make_mut(&mut w.lock().tables[table as usize]))),
        }
    }
}

/// One table of a model transaction.
#[derive(Debug, Clone)]
pub struct ModelStore {
    view: View,
    table: Tables,
}

fn key_range(key: &[u8]) -> (Bound<RawPair>, Bound<RawPair>) {
    let mut next = key.to_vec();
    next.push(0);
    (
        Bound::Included((key.to_vec(), Vec::new())),
        Bound::Excluded((next, Vec::new())),
    )
}

impl PairStore for ModelStore {
    fn table(&self) -> Tables {
        self.table
    }

    fn engine_name(&self) -> &'static str {
        "model"
    }

    fn ge(&self, key: &[u8], value: &[u8]) -> RawResult<Option<RawPair>> {
        let from = (key.to_vec(), value.to_vec());
        Ok(self
            .view
            .read(self.table, |t| t.range(from..).next().cloned()))
    }

    fn lt(&self, key: &[u8], value: &[u8]) -> RawResult<Option<RawPair>> {
        let to = (key.to_vec(), value.to_vec());
        Ok(self
            .view
            .read(self.table, |t| t.range(..to).next_back().cloned()))
    }

    fn last(&self) -> RawResult<Option<RawPair>> {
        Ok(self
            .view
            .read(self.table, |t| t.iter().next_back().cloned()))
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> RawResult<()> {
        let dupsort = self.table.is_dupsort();
        self.view.write(self.table, |t| {
            if !dupsort {
                let old: Vec<_> = t.range(key_range(key)).cloned().collect();
                for p in old {
                    t.remove(&p);
                }
            }
            t.insert((key.to_vec(), value.to_vec()));
        })
    }

    fn remove(&self, key: &[u8], value: &[u8]) -> RawResult<bool> {
        self.view
            .write(self.table, |t| t.remove(&(key.to_vec(), value.to_vec())))
    }

    fn remove_key(&self, key: &[u8]) -> RawResult<bool> {
        self.view.write(self.table, |t| {
            let old: Vec<_> = t.range(key_range(key)).cloned().collect();
            for p in &old {
                t.remove(p);
            }
            !old.is_empty()
        })
    }

    fn count(&self) -> RawResult<usize> {
        Ok(self.view.read(self.table, |t| t.len()))
    }

    fn clear(&self) -> RawResult<()> {
        self.view.write(self.table, |t| t.clear())
    }
}

/// The committed state a write transaction replaces, and the writer lock it holds.
type CommitTarget = (Arc<Mutex<Arc<ModelState>>>, ArcMutexGuard<RawMutex, ()>);

/// A model transaction (read-only snapshot, or read-write working copy).
pub struct ModelTx {
    view: View,
    /// Where a write transaction commits, and the single-writer lock it holds until it ends.
    commit_to: Option<CommitTarget>,
}

impl std::fmt::Debug for ModelTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelTx")
            .field("read_write", &self.commit_to.is_some())
            .finish()
    }
}

impl ModelTx {
    fn store(&self, table: Tables) -> ModelStore {
        ModelStore {
            view: self.view.clone(),
            table,
        }
    }
}

/// Read-write model transaction.
#[derive(Debug)]
pub struct ModelTxMut(ModelTx);

impl RawEngine for ModelEngine {
    type Tx = ModelTx;
    type TxMut = ModelTxMut;

    fn engine_name(&self) -> &'static str {
        "model"
    }

    fn path(&self) -> PathBuf {
        PathBuf::from("<model>")
    }

    fn begin_ro(&self) -> RawResult<ModelTx> {
        Ok(ModelTx {
            view: View::Snapshot(self.committed()),
            commit_to: None,
        })
    }

    fn begin_rw(&self) -> RawResult<ModelTxMut> {
        let guard = self.writer.lock_arc();
        let working = (*self.committed()).clone();
        Ok(ModelTxMut(ModelTx {
            view: View::Working(Arc::new(Mutex::new(working))),
            commit_to: Some((Arc::clone(&self.committed), guard)),
        }))
    }
}

impl RawTx for ModelTx {
    type Cursor = EmulatedCursor<ModelStore>;

    fn get(&self, table: Tables, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
        self.store(table).get_first(key)
    }

    fn cursor(&self, table: Tables) -> RawResult<Self::Cursor> {
        Ok(EmulatedCursor::new(self.store(table)))
    }

    fn entries(&self, table: Tables) -> RawResult<usize> {
        self.store(table).count()
    }

    fn commit(self) -> RawResult<()> {
        if let (View::Working(w), Some((committed, _guard))) = (&self.view, &self.commit_to) {
            *committed.lock() = Arc::new(w.lock().clone());
        }
        Ok(())
    }

    fn abort(self) {}
}

impl RawTx for ModelTxMut {
    type Cursor = EmulatedCursor<ModelStore>;

    fn get(&self, table: Tables, key: &[u8]) -> RawResult<Option<Vec<u8>>> {
        self.0.get(table, key)
    }

    fn cursor(&self, table: Tables) -> RawResult<Self::Cursor> {
        self.0.cursor(table)
    }

    fn entries(&self, table: Tables) -> RawResult<usize> {
        self.0.entries(table)
    }

    fn commit(self) -> RawResult<()> {
        self.0.commit()
    }

    fn abort(self) {}
}

impl RawTxMut for ModelTxMut {
    type CursorMut = EmulatedCursor<ModelStore>;

    fn put(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.0.store(table).put_pair(key, value)
    }

    fn append(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.0
            .store(table)
            .append_pair(key, value, crate::DatabaseWriteOperation::PutAppend)
    }

    fn delete(&self, table: Tables, key: &[u8], value: Option<&[u8]>) -> RawResult<bool> {
        self.0.store(table).delete_pair(key, value)
    }

    fn clear(&self, table: Tables) -> RawResult<()> {
        self.0.store(table).clear()
    }

    fn cursor_mut(&self, table: Tables) -> RawResult<Self::CursorMut> {
        Ok(EmulatedCursor::new(self.0.store(table)))
    }
}
