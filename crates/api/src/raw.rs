//! The raw byte-level engine interface. Engines implement it once; the typed reth-shaped layer
//! ([`crate::typed`]) is written once on top of it, generically.
//!
//! Tables are addressed by their catalogue entry ([`Tables`]), which carries the name and the
//! dupsort flag (and, for dupsort tables, the fixed key length a sorted-key engine needs).
//! Keys and values are the exact bytes reth writes. Every method follows MDBX's semantics, which
//! the conformance suite pins for every engine.
//!
//! Transactions and cursors are owned (`'static`, no borrowed environment): reth requires
//! `Database::TX: Send + Sync + 'static` and cursors without a lifetime.

use crate::{DatabaseError, tables::Tables};
use std::{fmt::Debug, path::PathBuf, sync::Arc};

/// A key and a value, owned.
pub type RawPair = (Vec<u8>, Vec<u8>);
/// Result of every raw operation.
pub type RawResult<T> = Result<T, DatabaseError>;

/// A storage engine holding reth's tables as bytes.
pub trait RawEngine: Send + Sync + Debug + 'static {
    type Tx: RawTx;
    type TxMut: RawTxMut;

    /// Short engine name used in errors and metrics (`mdbx`, `rocksdb`, `model`, `hybrid`).
    fn engine_name(&self) -> &'static str;

    /// Directory the engine lives in.
    fn path(&self) -> PathBuf;

    /// A read-only snapshot: commits that happen after this call are invisible to it.
    fn begin_ro(&self) -> RawResult<Self::Tx>;

    /// A read-write transaction; it sees its own uncommitted writes. Engines allow one at a time
    /// (a second `begin_rw` blocks until the first ends).
    fn begin_rw(&self) -> RawResult<Self::TxMut>;

    /// Whether the engine holds `table` at all. Only an engine opened read-only can lack one
    /// (an MDBX datadir written by an older reth: its read-write open would create it); reading
    /// a missing table is an error, so checks that must not create it ask here first.
    fn has_table(&self, _table: Tables) -> bool {
        true
    }

    /// Whether the engine was opened read-only (no write transaction can commit). The hybrid
    /// allows one handle per datadir and process only over engines that can write.
    fn is_read_only(&self) -> bool {
        false
    }

    /// Engine internals worth watching (compaction debt, memtable and SST sizes, cache hit
    /// rate...), read on demand for metrics. Engines without such numbers return none.
    fn gauges(&self) -> Vec<EngineGauge> {
        Vec::new()
    }

    /// Engine running totals since it opened (cache hits and misses, files opened, bytes
    /// compacted...), read on demand for metrics counters; a rate over them shows what a slow
    /// stretch of reads paid for. Engines without such numbers return none.
    fn counters(&self) -> Vec<EngineCounter> {
        Vec::new()
    }

    /// The id of the oldest transaction a live reader still sees (MDBX's reader table; with no
    /// reader, MDBX reports the last committed one), for reth's wait for readers older than an
    /// unwind's commit. `None`: the engine has no such number.
    fn oldest_reader_txnid(&self) -> Option<u64> {
        None
    }

    /// The id of the last committed transaction, comparable with `oldest_reader_txnid`.
    fn last_txnid(&self) -> Option<u64> {
        None
    }
}

/// One engine-internal number, optionally per table.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineGauge {
    pub name: &'static str,
    pub table: Option<Tables>,
    pub value: f64,
}

/// One engine-internal running total: it only grows while the engine is open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineCounter {
    pub name: &'static str,
    pub value: u64,
}

/// Reads. `get` on a dupsort table returns the first (smallest) duplicate.
pub trait RawTx: Send + Sync + Debug + 'static {
    type Cursor: RawCursor;

    /// `Ok(None)` when the key is absent.
    fn get(&self, table: Tables, key: &[u8]) -> RawResult<Option<Vec<u8>>>;

    /// A new, unpositioned cursor over `table` in this transaction.
    fn cursor(&self, table: Tables) -> RawResult<Self::Cursor>;

    /// Number of rows; on dupsort tables every duplicate counts.
    fn entries(&self, table: Tables) -> RawResult<usize>;

    /// Ends the transaction; for a read-write one, makes its writes durable and visible.
    /// Cursors still alive become unusable (their calls return an error).
    fn commit(self) -> RawResult<()>;

    /// Ends the transaction, dropping its writes.
    fn abort(self);

    /// Exempts this transaction from the engine's limit on long read transactions (reth's MDBX
    /// aborts readers open longer than 5 minutes; reth lifts it for its long scans: the startup
    /// consistency check, the static-file producer, unwinds). Engines without a limit ignore it.
    fn disable_long_read_safety(&mut self) {}

    /// Fails once the engine has ended this transaction on its own (reth's MDBX aborts a read
    /// transaction that outlived its limit). The hybrid asks the primary before every get,
    /// count and cursor open it routes to the follower, so a timed-out reader fails, as on
    /// reth's MDBX, instead of reading on in RocksDB while reth no longer counts it as a reader
    /// (a follower cursor opened before the timeout keeps stepping through its snapshot).
    fn check_alive(&self) -> RawResult<()> {
        Ok(())
    }

    /// [`RawTx::check_alive`] as a handle that outlives the call: the hybrid gives it to every
    /// follower cursor it opens, so a RocksDB cursor of a reader that reth's MDBX timed out
    /// fails on its next move, as that reader's MDBX cursors do. `None`: nothing can end this
    /// transaction on its own.
    fn liveness(&self) -> Option<Liveness> {
        None
    }
}

/// Fails once the transaction it was taken from has been ended by its engine.
pub type Liveness = Arc<dyn Fn() -> RawResult<()> + Send + Sync>;

/// Writes. All take `&self` (as reth's `DbTxMut`): engines serialize them internally.
pub trait RawTxMut: RawTx {
    type CursorMut: RawCursorMut;

    /// Upsert. On a plain table replaces the value; on a dupsort table adds the value as a
    /// duplicate (a no-op if that exact duplicate exists).
    fn put(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()>;

    /// `MDBX_APPEND` through the transaction. Plain tables: the key must be >= the table's last
    /// key. Dupsort tables (libmdbx quirk): the value must be >= the last duplicate of that key,
    /// wherever the key is. Otherwise `KEY_MISMATCH`, and nothing changes.
    fn append(&self, table: Tables, key: &[u8], value: &[u8]) -> RawResult<()>;

    /// `value: None` deletes the key (all duplicates); `Some(v)` deletes exactly that duplicate
    /// (on a plain table: the key, only if its value is `v`). `Ok(false)` when nothing matched.
    fn delete(&self, table: Tables, key: &[u8], value: Option<&[u8]>) -> RawResult<bool>;

    /// Removes every row of the table; the table itself stays.
    fn clear(&self, table: Tables) -> RawResult<()>;

    /// A new, unpositioned write cursor.
    fn cursor_mut(&self, table: Tables) -> RawResult<Self::CursorMut>;
}

/// A cursor with MDBX's positioning rules. Every move returns `Ok(None)` when there is nothing
/// there; what happens to the position then is MDBX's behaviour, pinned by the conformance suite.
pub trait RawCursor: Send + Debug {
    /// First row (first duplicate of the first key).
    fn first(&mut self) -> RawResult<Option<RawPair>>;
    /// Last row (last duplicate of the last key).
    fn last(&mut self) -> RawResult<Option<RawPair>>;
    /// First row whose key is >= `key` (MDBX `SET_RANGE`).
    fn seek(&mut self, key: &[u8]) -> RawResult<Option<RawPair>>;
    /// The row with exactly `key`, at its first duplicate (MDBX `SET_KEY`).
    fn seek_exact(&mut self, key: &[u8]) -> RawResult<Option<RawPair>>;
    /// Next row, duplicates included. On an unpositioned cursor: the first row.
    fn next(&mut self) -> RawResult<Option<RawPair>>;
    /// Previous row, duplicates included. On an unpositioned cursor: the last row.
    fn prev(&mut self) -> RawResult<Option<RawPair>>;
    /// The row under the cursor, without moving.
    fn current(&mut self) -> RawResult<Option<RawPair>>;

    /// Next duplicate of the current key; `None` at the last duplicate (MDBX `NEXT_DUP`).
    fn next_dup(&mut self) -> RawResult<Option<RawPair>>;
    /// Previous duplicate of the current key (MDBX `PREV_DUP`).
    fn prev_dup(&mut self) -> RawResult<Option<RawPair>>;
    /// First duplicate of the next key (MDBX `NEXT_NODUP`).
    fn next_no_dup(&mut self) -> RawResult<Option<RawPair>>;
    /// Moves to the last duplicate of the current key and returns its value (MDBX `LAST_DUP`).
    fn last_dup(&mut self) -> RawResult<Option<Vec<u8>>>;
    /// First duplicate of `key` whose value bytes are >= `subkey` (MDBX `GET_BOTH_RANGE`). The
    /// caller checks that the value really starts with the subkey.
    fn seek_by_key_subkey(&mut self, key: &[u8], subkey: &[u8]) -> RawResult<Option<Vec<u8>>>;
    /// How many rows hold the current key (its duplicates; 1 on a table without), 0 on a
    /// cursor that is on no row; the cursor never moves. MDBX keeps each key's count
    /// (`mdbx_cursor_count`), so counting a block's changesets there costs one call instead of a
    /// read of every row. Past the end and right after a delete MDBX's answer depends on its
    /// page layout, as its position does: the conformance suite pins the count only on a row or
    /// on no row (`dup_count_counts_the_current_keys_rows_without_moving`).
    fn dup_count(&mut self) -> RawResult<u64>;
}

/// A write cursor.
pub trait RawCursorMut: RawCursor {
    /// Like [`RawTxMut::put`], leaving the cursor on the written row.
    fn upsert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()>;
    /// Fails with `KEY_EXIST` if the key (dupsort: the exact pair) exists.
    fn insert(&mut self, key: &[u8], value: &[u8]) -> RawResult<()>;
    /// Fails with `KEY_MISMATCH` unless the key is >= the table's last key (dupsort tables: only
    /// the key is checked; the value lands in its sorted place). On failure the cursor is left on
    /// the table's last row.
    fn append(&mut self, key: &[u8], value: &[u8]) -> RawResult<()>;
    /// Adds a duplicate to `key`; fails with `KEY_MISMATCH` unless `value` sorts after the last
    /// duplicate **of that key** (the key itself may be anywhere in the table).
    fn append_dup(&mut self, key: &[u8], value: &[u8]) -> RawResult<()>;
    /// Adds a row the caller knows sorts after every row of the table (a copy of sorted rows):
    /// its key is >= the table's last key and, for that key, its value sorts after the last
    /// duplicate. An engine may rely on it: MDBX then skips the search for the key and fills
    /// pages before it splits them (`MDBX_APPEND | MDBX_APPENDDUP`), and refuses a row that does
    /// not sort last with `KEY_MISMATCH`, adding nothing (a row equal to the last one may be taken
    /// as a no-op instead, as `append_dup` may; the cursor's position after a refusal is not
    /// specified). Engines without such a path take it as [`RawCursorMut::append_dup`], which
    /// refuses only a value out of its key's order.
    fn append_last(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        self.append_dup(key, value)
    }
    /// Deletes the row under the cursor; the next `next()` returns the row after it.
    fn delete_current(&mut self) -> RawResult<()>;
    /// Deletes every duplicate of the current key.
    fn delete_current_duplicates(&mut self) -> RawResult<()>;
}

/// An engine whose write transactions can be exported as bytes and re-applied later, atomically
/// and durably. The hybrid commit protocol writes these bytes to its intent log before the
/// decision commit, so a crash between the two engines' commits can be finished by replay.
///
/// Read transactions are `Clone` so that one snapshot can be shared by many readers: the hybrid
/// hands every reader of one commit the same follower view instead of opening a snapshot under a
/// lock that the commit holds.
pub trait RawReplay: RawEngine<Tx: Clone> {
    /// Whether `tx` has written anything (a clean follower needs no intent and no fsync).
    fn is_dirty(tx: &Self::TxMut) -> bool;

    /// The writes a frozen transaction ([`RawReplay::freeze`]) holds, as opaque bytes (the
    /// engine's own batch format): exactly what readers of the frozen view see on top of its
    /// snapshot. Empty for a transaction that wrote nothing.
    fn export_writes(frozen: &Self::Tx) -> RawResult<Vec<u8>>;

    /// Applies exported writes as one atomic, durable step. Applying the same bytes twice gives
    /// the same state (they are absolute puts and deletes).
    fn apply_exported(&self, writes: &[u8]) -> RawResult<()>;

    /// Whether `writes` may be applied with deferred durability
    /// ([`RawReplay::apply_exported_deferred`]): a self-contained batch, small enough to be
    /// kept as a row of the primary engine until the follower made it durable.
    fn can_defer(_writes: &[u8]) -> bool {
        false
    }

    /// Applies exported writes as one atomic step that later reads see at once but that
    /// survives only a process crash, not power loss, until [`RawReplay::sync_applied`]. The
    /// hybrid keeps the writes in the primary's commit until then.
    fn apply_exported_deferred(&self, writes: &[u8]) -> RawResult<()> {
        self.apply_exported(writes)
    }

    /// Whether [`RawReplay::apply_exported`] of `writes` also makes every earlier
    /// [`RawReplay::apply_exported_deferred`] durable, so that no [`RawReplay::sync_applied`]
    /// has to follow it. `false` (always sync) unless the engine knows better.
    fn apply_syncs_earlier(&self, _writes: &[u8]) -> bool {
        false
    }

    /// Makes every write applied so far durable (power loss included).
    fn sync_applied(&self) -> RawResult<()> {
        Ok(())
    }

    /// Removes whatever exported writes left on disk (an engine may export large commits as
    /// files the payload names). Called once no intent can name them: after a commit's intent
    /// is cleared, and after recovery.
    fn discard_exports(&self) -> RawResult<()> {
        Ok(())
    }

    /// Ends `tx` without committing it and returns a read transaction that sees exactly what
    /// committing it would leave: its snapshot with its writes on top. It no longer holds the
    /// engine's writer lock, and every later write through `tx`'s cursors is refused (a write
    /// racing the freeze lands before it, or fails). Readers use it while those writes are
    /// made durable, so they never wait for the follower's fsync.
    fn freeze(tx: Self::TxMut) -> Self::Tx;

    /// Whether a frozen transaction holds any write.
    fn holds_writes(frozen: &Self::Tx) -> bool;
}
