//! The model-based property test: random sequences of every operation, applied to an engine and
//! to the BTreeMap model side by side; the first divergence fails with the shrunk sequence.

use super::{OPS_PER_CASE, random_cases, tempdir};
use crate::{
    Tables,
    model_engine::{ModelEngine, ModelStore, ModelTx, ModelTxMut},
    raw::{RawCursor, RawCursorMut, RawEngine, RawPair, RawResult, RawTx, RawTxMut},
    sorted::{CursorOp, EmulatedCursor},
};
use proptest::{prelude::*, test_runner::TestRunner};
use std::path::Path;

const PLAIN: Tables = Tables::CanonicalHeaders;
const DUP: Tables = Tables::PlainStorageState;
/// Cursor slots 0 and 1 are on the plain table, 2 and 3 on the dupsort table.
const SLOTS: usize = 4;

fn table(dup: bool) -> Tables {
    if dup { DUP } else { PLAIN }
}

/// Keys from a small alphabet with shared prefixes (plain) or fixed 20 bytes (dupsort), so that
/// collisions, neighbours and prefix ordering all happen.
fn key(dup: bool, x: u8) -> Vec<u8> {
    if dup {
        let mut k = vec![0u8; 20];
        k[19] = x % 5;
        k
    } else if x.is_multiple_of(3) {
        vec![x / 3]
    } else {
        vec![x / 3, x % 3]
    }
}

/// Values with prefix relations: `[1] < [1, 7] < [2]`.
fn value(v: u8) -> Vec<u8> {
    if v < 5 { vec![v] } else { vec![v - 5, 7] }
}

/// One cursor call.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum CursorCall {
    First,
    Last,
    Seek(u8),
    SeekExact(u8),
    Next,
    Prev,
    Current,
    NextDup,
    PrevDup,
    NextNoDup,
    LastDup,
    SeekBySubkey(u8, u8),
    DupCount,
    Upsert(u8, u8),
    Insert(u8, u8),
    Append(u8, u8),
    AppendDup(u8, u8),
    DeleteCurrent,
    DeleteCurrentDuplicates,
}

/// One operation of a random sequence.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Op {
    Put {
        dup: bool,
        k: u8,
        v: u8,
    },
    Append {
        dup: bool,
        k: u8,
        v: u8,
    },
    Delete {
        dup: bool,
        k: u8,
        v: Option<u8>,
    },
    Clear {
        dup: bool,
    },
    Get {
        dup: bool,
        k: u8,
    },
    Entries {
        dup: bool,
    },
    Cursor {
        slot: usize,
        call: CursorCall,
    },
    Commit,
    Abort,
    OpenReader,
    CheckReader,
    /// A cursor call (reads only) on the open read transaction: slot 0 plain, 1 dupsort.
    ReaderCursor {
        slot: usize,
        call: CursorCall,
    },
}

fn cursor_call() -> impl Strategy<Value = CursorCall> {
    let k = 0u8..15;
    let v = 0u8..10;
    prop_oneof![
        2 => Just(CursorCall::First),
        2 => Just(CursorCall::Last),
        4 => k.clone().prop_map(CursorCall::Seek),
        3 => k.clone().prop_map(CursorCall::SeekExact),
        8 => Just(CursorCall::Next),
        5 => Just(CursorCall::Prev),
        3 => Just(CursorCall::Current),
        4 => Just(CursorCall::NextDup),
        2 => Just(CursorCall::PrevDup),
        3 => Just(CursorCall::NextNoDup),
        2 => Just(CursorCall::LastDup),
        3 => (k.clone(), v.clone()).prop_map(|(k, v)| CursorCall::SeekBySubkey(k, v)),
        2 => Just(CursorCall::DupCount),
        4 => (k.clone(), v.clone()).prop_map(|(k, v)| CursorCall::Upsert(k, v)),
        2 => (k.clone(), v.clone()).prop_map(|(k, v)| CursorCall::Insert(k, v)),
        2 => (k.clone(), v.clone()).prop_map(|(k, v)| CursorCall::Append(k, v)),
        2 => (k, v).prop_map(|(k, v)| CursorCall::AppendDup(k, v)),
        3 => Just(CursorCall::DeleteCurrent),
        1 => Just(CursorCall::DeleteCurrentDuplicates),
    ]
}

/// The calls a read transaction's cursor offers.
fn read_call() -> impl Strategy<Value = CursorCall> {
    cursor_call().prop_filter("reads only", |c| !is_write(c))
}

fn is_write(call: &CursorCall) -> bool {
    matches!(
        call,
        CursorCall::Upsert(..)
            | CursorCall::Insert(..)
            | CursorCall::Append(..)
            | CursorCall::AppendDup(..)
            | CursorCall::DeleteCurrent
            | CursorCall::DeleteCurrentDuplicates
    )
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..15;
    let v = 0u8..10;
    prop_oneof![
        10 => (any::<bool>(), k.clone(), v.clone()).prop_map(|(dup, k, v)| Op::Put { dup, k, v }),
        2 => (any::<bool>(), k.clone(), v.clone()).prop_map(|(dup, k, v)| Op::Append { dup, k, v }),
        3 => (any::<bool>(), k.clone(), prop::option::of(v)).prop_map(|(dup, k, v)| Op::Delete { dup, k, v }),
        1 => any::<bool>().prop_map(|dup| Op::Clear { dup }),
        3 => (any::<bool>(), k).prop_map(|(dup, k)| Op::Get { dup, k }),
        1 => any::<bool>().prop_map(|dup| Op::Entries { dup }),
        40 => (0..SLOTS, cursor_call()).prop_map(|(slot, call)| Op::Cursor { slot, call }),
        2 => Just(Op::Commit),
        1 => Just(Op::Abort),
        1 => Just(Op::OpenReader),
        1 => Just(Op::CheckReader),
        10 => (0..2usize, read_call()).prop_map(|(slot, call)| Op::ReaderCursor { slot, call }),
    ]
}

/// What an operation returned, with errors reduced to their engine code.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Pair(Option<RawPair>),
    Value(Option<Vec<u8>>),
    Flag(bool),
    Count(usize),
    Done,
    Failed(Option<i32>),
    Skipped,
}

fn outcome<T>(r: RawResult<T>, f: impl FnOnce(T) -> Outcome) -> Outcome {
    match r {
        Ok(t) => f(t),
        Err(e) => Outcome::Failed(e.code()),
    }
}

fn scan<C: RawCursor>(mut c: C) -> RawResult<Vec<RawPair>> {
    let mut rows = Vec::new();
    let mut next = c.first()?;
    while let Some(p) = next {
        rows.push(p);
        next = c.next()?;
    }
    Ok(rows)
}

/// An engine cursor and the model cursor it is compared with.
type CursorPair<E> = (
    <<E as RawEngine>::TxMut as RawTxMut>::CursorMut,
    EmulatedCursor<ModelStore>,
);
/// A read transaction's cursor and the model's.
type ReaderCursorPair<E> = (
    <<E as RawEngine>::Tx as RawTx>::Cursor,
    EmulatedCursor<ModelStore>,
);

struct Harness<E: RawEngine> {
    engine: E,
    model: ModelEngine,
    tx: Option<(E::TxMut, ModelTxMut)>,
    cursors: Vec<Option<CursorPair<E>>>,
    reader: Option<(E::Tx, ModelTx)>,
    reader_cursors: Vec<Option<ReaderCursorPair<E>>>,
}

impl<E: RawEngine> Harness<E> {
    fn new(engine: E) -> Self {
        let model = ModelEngine::new();
        let tx = Some((
            engine.begin_rw().expect("engine rw"),
            model.begin_rw().expect("model rw"),
        ));
        Self {
            engine,
            model,
            tx,
            cursors: (0..SLOTS).map(|_| None).collect(),
            reader: None,
            reader_cursors: vec![None, None],
        }
    }

    fn txs(&self) -> &(E::TxMut, ModelTxMut) {
        self.tx
            .as_ref()
            .expect("a write transaction is always open")
    }

    fn invalidate(&mut self, table: Tables, except: Option<usize>) {
        for (slot, c) in self.cursors.iter_mut().enumerate() {
            if Some(slot) != except
                && slot_table(slot) == table
                && let Some((_, m)) = c
            {
                m.invalidate();
            }
        }
    }

    fn end_tx(&mut self, commit: bool) -> Result<(), String> {
        self.cursors.iter_mut().for_each(|c| *c = None);
        let (etx, mtx) = self.tx.take().expect("open tx");
        if commit {
            etx.commit()
                .map_err(|e| format!("engine commit failed: {e}"))?;
            mtx.commit()
                .map_err(|e| format!("model commit failed: {e}"))?;
        } else {
            etx.abort();
            mtx.abort();
        }
        self.tx = Some((
            self.engine.begin_rw().map_err(|e| e.to_string())?,
            self.model.begin_rw().map_err(|e| e.to_string())?,
        ));
        self.compare_committed()
    }

    fn compare_committed(&self) -> Result<(), String> {
        let (etx, mtx) = (
            self.engine.begin_ro().map_err(|e| e.to_string())?,
            self.model.begin_ro().map_err(|e| e.to_string())?,
        );
        compare_snapshots(&etx, &mtx, "committed state")
    }

    fn apply(&mut self, op: &Op) -> Result<(), String> {
        let (e, m) = match op {
            Op::Put { dup, k, v } => self.write(*dup, |tx, t| {
                tx.put(t, &key(*dup, *k), &value(*v)).map(|_| Outcome::Done)
            }),
            Op::Append { dup, k, v } => {
                // Appending a dupsort pair equal to the key's last duplicate: libmdbx accepts it
                // for a key with one value and refuses it for a key with several; not pinned.
                let probe = self
                    .txs()
                    .1
                    .cursor(table(*dup))
                    .map_err(|e| e.to_string())?;
                if *dup
                    && !probe
                        .is_append_dup_pinned(&key(*dup, *k), &value(*v))
                        .map_err(|e| e.to_string())?
                {
                    return Ok(());
                }
                self.write(*dup, |tx, t| {
                    tx.append(t, &key(*dup, *k), &value(*v))
                        .map(|_| Outcome::Done)
                })
            }
            Op::Delete { dup, k, v } => {
                let v = v.map(value);
                self.write(*dup, |tx, t| {
                    tx.delete(t, &key(*dup, *k), v.as_deref())
                        .map(Outcome::Flag)
                })
            }
            Op::Clear { dup } => self.write(*dup, |tx, t| tx.clear(t).map(|_| Outcome::Done)),
            Op::Get { dup, k } => {
                let (etx, mtx) = self.txs();
                let key = key(*dup, *k);
                (
                    outcome(etx.get(table(*dup), &key), Outcome::Value),
                    outcome(mtx.get(table(*dup), &key), Outcome::Value),
                )
            }
            Op::Entries { dup } => {
                let (etx, mtx) = self.txs();
                (
                    outcome(etx.entries(table(*dup)), Outcome::Count),
                    outcome(mtx.entries(table(*dup)), Outcome::Count),
                )
            }
            Op::Cursor { slot, call } => self.cursor(*slot, call)?,
            Op::Commit => return self.end_tx(true),
            Op::Abort => return self.end_tx(false),
            Op::ReaderCursor { slot, call } => self.reader_cursor(*slot, call)?,
            Op::OpenReader => {
                self.reader_cursors.iter_mut().for_each(|c| *c = None);
                self.reader = Some((
                    self.engine.begin_ro().map_err(|e| e.to_string())?,
                    self.model.begin_ro().map_err(|e| e.to_string())?,
                ));
                return Ok(());
            }
            Op::CheckReader => {
                if let Some((er, mr)) = &self.reader {
                    compare_snapshots(er, mr, "an older read transaction")?;
                }
                return Ok(());
            }
        };
        if e == m {
            Ok(())
        } else {
            Err(format!(
                "{op:?}: engine returned {e:?}, model returned {m:?}"
            ))
        }
    }

    /// A transaction-level write, applied to both, invalidating cursors on the table.
    fn write<F>(&mut self, dup: bool, f: F) -> (Outcome, Outcome)
    where
        F: Fn(&dyn DynTxMut, Tables) -> RawResult<Outcome>,
    {
        let t = table(dup);
        let (etx, mtx) = self.txs();
        let out = (outcome(f(etx, t), |o| o), outcome(f(mtx, t), |o| o));
        self.invalidate(t, None);
        out
    }

    /// A read-only cursor call on the open read transaction (its snapshot never changes, so
    /// every position is pinned as in a write transaction without writes).
    fn reader_cursor(
        &mut self,
        slot: usize,
        call: &CursorCall,
    ) -> Result<(Outcome, Outcome), String> {
        let t = table(slot == 1);
        let dup = t.is_dupsort();
        if is_dup_only(call) && !dup {
            return Ok((Outcome::Skipped, Outcome::Skipped));
        }
        let Some((er, mr)) = &self.reader else {
            return Ok((Outcome::Skipped, Outcome::Skipped));
        };
        if self.reader_cursors[slot].is_none() {
            let ec = er.cursor(t).map_err(|e| format!("engine cursor: {e}"))?;
            let mc = mr.cursor(t).map_err(|e| format!("model cursor: {e}"))?;
            self.reader_cursors[slot] = Some((ec, mc));
        }
        let (ec, mc) = self.reader_cursors[slot].as_mut().expect("opened above");
        if let Some(op) = relative_op(call)
            && !mc.is_pinned(op)
        {
            return Ok((Outcome::Skipped, Outcome::Skipped));
        }
        Ok((run_read_call(ec, call, dup), run_read_call(mc, call, dup)))
    }

    fn cursor(&mut self, slot: usize, call: &CursorCall) -> Result<(Outcome, Outcome), String> {
        let t = slot_table(slot);
        let dup = t.is_dupsort();
        if is_dup_only(call) && !dup {
            // reth's type system offers these only on dupsort tables.
            return Ok((Outcome::Skipped, Outcome::Skipped));
        }
        if self.cursors[slot].is_none() {
            let (etx, mtx) = self.txs();
            let ec = etx
                .cursor_mut(t)
                .map_err(|e| format!("engine cursor: {e}"))?;
            let mc = mtx
                .cursor_mut(t)
                .map_err(|e| format!("model cursor: {e}"))?;
            self.cursors[slot] = Some((ec, mc));
        }
        let (ec, mc) = self.cursors[slot].as_mut().expect("opened above");
        if let Some(op) = relative_op(call)
            && !mc.is_pinned(op)
        {
            return Ok((Outcome::Skipped, Outcome::Skipped));
        }
        if let CursorCall::AppendDup(k, v) = call
            && !mc
                .is_append_dup_pinned(&key(dup, *k), &value(*v))
                .map_err(|e| e.to_string())?
        {
            return Ok((Outcome::Skipped, Outcome::Skipped));
        }
        let out = (run_call(ec, call, dup), run_call(mc, call, dup));
        if is_write(call) {
            self.invalidate(t, Some(slot));
        }
        Ok(out)
    }
}

fn config_rng() -> proptest::test_runner::RngAlgorithm {
    proptest::test_runner::RngAlgorithm::ChaCha
}

fn slot_table(slot: usize) -> Tables {
    table(slot >= SLOTS / 2)
}

/// Calls reth offers only on dupsort tables.
fn is_dup_only(call: &CursorCall) -> bool {
    matches!(
        call,
        CursorCall::NextDup
            | CursorCall::PrevDup
            | CursorCall::NextNoDup
            | CursorCall::LastDup
            | CursorCall::SeekBySubkey(..)
            | CursorCall::AppendDup(..)
            | CursorCall::DeleteCurrentDuplicates
    )
}

/// The relative move a call makes, whose outcome may be unpinned.
fn relative_op(call: &CursorCall) -> Option<CursorOp> {
    match call {
        CursorCall::Next => Some(CursorOp::Next),
        CursorCall::Prev => Some(CursorOp::Prev),
        CursorCall::Current => Some(CursorOp::Current),
        CursorCall::NextDup => Some(CursorOp::NextDup),
        CursorCall::PrevDup => Some(CursorOp::PrevDup),
        CursorCall::NextNoDup => Some(CursorOp::NextNoDup),
        CursorCall::LastDup => Some(CursorOp::LastDup),
        CursorCall::DupCount => Some(CursorOp::DupCount),
        CursorCall::DeleteCurrent => Some(CursorOp::DeleteCurrent),
        CursorCall::DeleteCurrentDuplicates => Some(CursorOp::DeleteCurrentDuplicates),
        _ => None,
    }
}

/// A read call on any cursor.
fn run_read_call<C: RawCursor>(c: &mut C, call: &CursorCall, dup: bool) -> Outcome {
    let pair = |r: RawResult<Option<RawPair>>| outcome(r, Outcome::Pair);
    let val = |r: RawResult<Option<Vec<u8>>>| outcome(r, Outcome::Value);
    match call {
        CursorCall::First => pair(c.first()),
        CursorCall::Last => pair(c.last()),
        CursorCall::Seek(k) => pair(c.seek(&key(dup, *k))),
        CursorCall::SeekExact(k) => pair(c.seek_exact(&key(dup, *k))),
        CursorCall::Next => pair(c.next()),
        CursorCall::Prev => pair(c.prev()),
        CursorCall::Current => pair(c.current()),
        CursorCall::NextDup => pair(c.next_dup()),
        CursorCall::PrevDup => pair(c.prev_dup()),
        CursorCall::NextNoDup => pair(c.next_no_dup()),
        CursorCall::LastDup => val(c.last_dup()),
        CursorCall::SeekBySubkey(k, s) => val(c.seek_by_key_subkey(&key(dup, *k), &value(*s))),
        CursorCall::DupCount => outcome(c.dup_count(), |n| Outcome::Count(n as usize)),
        _ => Outcome::Skipped,
    }
}

fn run_call<C: RawCursorMut>(c: &mut C, call: &CursorCall, dup: bool) -> Outcome {
    let done = |r: RawResult<()>| outcome(r, |_| Outcome::Done);
    match call {
        CursorCall::Upsert(k, v) => done(c.upsert(&key(dup, *k), &value(*v))),
        CursorCall::Insert(k, v) => done(c.insert(&key(dup, *k), &value(*v))),
        CursorCall::Append(k, v) => done(c.append(&key(dup, *k), &value(*v))),
        CursorCall::AppendDup(k, v) => done(c.append_dup(&key(dup, *k), &value(*v))),
        CursorCall::DeleteCurrent => done(c.delete_current()),
        CursorCall::DeleteCurrentDuplicates => done(c.delete_current_duplicates()),
        read => run_read_call(c, read, dup),
    }
}

fn compare_snapshots<A: RawTx, B: RawTx>(a: &A, b: &B, what: &str) -> Result<(), String> {
    for t in [PLAIN, DUP] {
        let ea = scan(a.cursor(t).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        let eb = scan(b.cursor(t).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        if ea != eb {
            return Err(format!(
                "{what}: table {t} differs\n engine: {ea:?}\n model:  {eb:?}"
            ));
        }
        let (ca, cb) = (
            a.entries(t).map_err(|e| e.to_string())?,
            b.entries(t).map_err(|e| e.to_string())?,
        );
        if ca != cb || ca != ea.len() {
            return Err(format!(
                "{what}: table {t} entries: engine {ca}, model {cb}, rows {}",
                ea.len()
            ));
        }
    }
    Ok(())
}

/// Object-safe slice of [`RawTxMut`], so one closure writes to both transactions.
trait DynTxMut {
    fn put(&self, t: Tables, k: &[u8], v: &[u8]) -> RawResult<()>;
    fn append(&self, t: Tables, k: &[u8], v: &[u8]) -> RawResult<()>;
    fn delete(&self, t: Tables, k: &[u8], v: Option<&[u8]>) -> RawResult<bool>;
    fn clear(&self, t: Tables) -> RawResult<()>;
}

impl<X: RawTxMut> DynTxMut for X {
    fn put(&self, t: Tables, k: &[u8], v: &[u8]) -> RawResult<()> {
        RawTxMut::put(self, t, k, v)
    }
    fn append(&self, t: Tables, k: &[u8], v: &[u8]) -> RawResult<()> {
        RawTxMut::append(self, t, k, v)
    }
    fn delete(&self, t: Tables, k: &[u8], v: Option<&[u8]>) -> RawResult<bool> {
        RawTxMut::delete(self, t, k, v)
    }
    fn clear(&self, t: Tables) -> RawResult<()> {
        RawTxMut::clear(self, t)
    }
}

/// Replays one recorded sequence (from `RETH_HYBRID_CONFORMANCE_TRACE`) against a fresh engine.
pub fn replay_operations<E: RawEngine>(
    factory: &dyn Fn(&Path) -> E,
    ops: &[Op],
) -> Result<(), String> {
    let dir = tempdir();
    let mut h = Harness::new(factory(dir.path()));
    for (i, op) in ops.iter().enumerate() {
        h.apply(op).map_err(|e| format!("operation {i}: {e}"))?;
    }
    h.end_tx(true)
}

/// Runs [`random_cases`] sequences of [`OPS_PER_CASE`] operations against a fresh engine each.
pub fn run_random_operations<E: RawEngine>(factory: &dyn Fn(&Path) -> E) {
    let config = ProptestConfig {
        cases: random_cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    // CI runs a fixed sequence of cases so a red build reproduces; long runs pick fresh ones.
    let mut runner = if std::env::var("RETH_HYBRID_CONFORMANCE_SEED").is_ok_and(|s| s == "random") {
        TestRunner::new(config)
    } else {
        TestRunner::new_with_rng(
            config,
            proptest::test_runner::TestRng::deterministic_rng(config_rng()),
        )
    };
    let result = runner.run(&proptest::collection::vec(op(), 1..=OPS_PER_CASE), |ops| {
        let dir = tempdir();
        let mut h = Harness::new(factory(dir.path()));
        // A crash inside an engine cannot be shrunk; with RETH_HYBRID_CONFORMANCE_TRACE=<file>
        // the sequence being run is on disk when the process dies.
        if let Ok(path) = std::env::var("RETH_HYBRID_CONFORMANCE_TRACE") {
            let _ = std::fs::write(path, serde_json::to_string(&ops).unwrap_or_default());
        }
        for (i, op) in ops.iter().enumerate() {
            h.apply(op)
                .map_err(|e| TestCaseError::fail(format!("operation {i}: {e}")))?;
        }
        h.end_tx(true).map_err(TestCaseError::fail)?;
        Ok(())
    });
    if let Err(e) = result {
        panic!("engine diverged from the model: {e}");
    }
}
