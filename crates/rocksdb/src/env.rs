//! Opening the RocksDB engine: one column family per table, named like the table.

use crate::{
    error::RocksError,
    options::{RocksOptions, column_family_options, db_options},
    tx::{RocksTx, RocksTxMut},
};
use parking_lot::Mutex;
use reth_hybrid_api::{
    Tables,
    raw::{EngineCounter, EngineGauge, RawEngine, RawReplay, RawResult},
};
use rocksdb::{Cache, ColumnFamily, ColumnFamilyDescriptor, DB, statistics::Ticker};
use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

/// Folder of reth-hybrid's RocksDB inside a reth datadir. reth itself creates `<datadir>/rocksdb`
/// even in its v1 layout, so ours must not share that name.
pub const HYBRID_ROCKSDB_DIR: &str = "hybrid-rocksdb";

pub(crate) struct EngineInner {
    pub(crate) db: DB,
    /// Every table's column family handle, by `Tables as usize`: `DB::cf_handle` looks the
    /// name up in a map, and every read names its table.
    cfs: Vec<CfHandle>,
    /// Kept for its statistics tickers.
    db_options: rocksdb::Options,
    pub(crate) path: PathBuf,
    pub(crate) writer: Arc<Mutex<()>>,
    pub(crate) sync_writes: bool,
    /// A write transaction's in-memory budget (`RocksOptions::spill_bytes`).
    pub(crate) spill_bytes: usize,
    /// `RocksOptions::history_level0_compaction_trigger`, as opened (nodes log it).
    history_level0_compaction_trigger: i32,
    pub(crate) read_only: bool,
    pub(crate) cache: Cache,
    /// `None` without one (`RocksOptions::row_cache_bytes` = 0).
    pub(crate) row_cache: Option<Cache>,
    /// A read-only open's info log, kept outside the datadir; removed after `db` closes (fields
    /// drop in order).
    _log_dir: Option<LogDir>,
    /// Last: counts the engine as open until `db` has closed.
    _open: OpenEngine,
}

/// Engines of this process whose RocksDB has not closed yet.
static OPEN_ENGINES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

struct OpenEngine;

impl OpenEngine {
    fn new() -> Self {
        OPEN_ENGINES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self
    }
}

impl Drop for OpenEngine {
    fn drop(&mut self) {
        OPEN_ENGINES.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// How many engines of this process are still open (their RocksDB not yet closed).
pub fn open_engines() -> usize {
    OPEN_ENGINES.load(std::sync::atomic::Ordering::SeqCst)
}

/// Waits up to `timeout` for every engine of this process to close; returns whether they did.
///
/// A RocksDB that closes while the process exits can abort it ("pthread lock: Invalid
/// argument", facebook/rocksdb#11349): C++ static destructors tear down RocksDB's shared timer
/// while the close still uses it. reth's command runner drops its runtime, and with it the
/// tasks holding the database, on a thread of its own without waiting, so a binary calls this
/// before it exits.
pub fn wait_for_engines_closed(timeout: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    while open_engines() > 0 {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    true
}

/// A folder under the system temporary directory, removed on drop.
struct LogDir(PathBuf);

impl LogDir {
    fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self(
            std::env::temp_dir().join(format!("reth-hybrid-rocksdb-ro-{}-{n}", std::process::id())),
        )
    }
}

impl Drop for LogDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A column family handle owned by `EngineInner::db`.
struct CfHandle(*const ColumnFamily);

// SAFETY: a `ColumnFamily` is a handle RocksDB lets any thread use; `DB` itself is Send + Sync.
unsafe impl Send for CfHandle {}
// SAFETY: as above; only shared references are handed out.
unsafe impl Sync for CfHandle {}

impl EngineInner {
    pub(crate) fn cf(&self, table: Tables) -> &ColumnFamily {
        // SAFETY: the handle points into `self.db`'s map of column families, whose entries
        // live on the heap and change only through `create_cf`/`drop_cf` (which take `&mut DB`,
        // never given out), so it stays valid, unmoved, for as long as `self`.
        unsafe { &*self.cfs[table as usize].0 }
    }
}

/// The RocksDB engine.
#[derive(Clone)]
pub struct RocksEngine {
    pub(crate) inner: Arc<EngineInner>,
}

impl std::fmt::Debug for RocksEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksEngine")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl RocksEngine {
    /// Opens (creating if needed) reth-hybrid's RocksDB inside a reth datadir.
    pub fn open_in_datadir(datadir: &Path) -> Result<Self, RocksError> {
        Self::open(&datadir.join(HYBRID_ROCKSDB_DIR), &RocksOptions::default())
    }

    /// Opens reth-hybrid's RocksDB inside a reth datadir for an offline tool that clears whole
    /// tables ([`RocksOptions::for_bulk_tools`]).
    pub fn open_in_datadir_for_bulk(datadir: &Path) -> Result<Self, RocksError> {
        Self::open(
            &datadir.join(HYBRID_ROCKSDB_DIR),
            &RocksOptions::for_bulk_tools(),
        )
    }

    /// Opens the RocksDB at `path` with a column family for every table.
    pub fn open(path: &Path, options: &RocksOptions) -> Result<Self, RocksError> {
        // A mistyped setting is refused before anything opens, not silently replaced.
        crate::options::history_l0_trigger_from_env()?;
        let cache = Cache::new_lru_cache(options.block_cache_bytes);
        let mut db_opts = db_options(options);
        let row_cache =
            (options.row_cache_bytes > 0).then(|| Cache::new_lru_cache(options.row_cache_bytes));
        if let Some(row_cache) = &row_cache {
            db_opts.set_row_cache(row_cache);
        }
        // A read-only open must change nothing in the datadir, and RocksDB would otherwise
        // rotate the info log (`LOG` -> `LOG.old.<time>`) there.
        let log_dir = options.read_only.then(LogDir::new);
        if let Some(dir) = &log_dir {
            db_opts.set_db_log_dir(&dir.0);
        }
        let descriptors = Tables::ALL.iter().map(|t| {
            ColumnFamilyDescriptor::new(t.name(), column_family_options(*t, &cache, options))
        });
        let opened = if options.read_only {
            DB::open_cf_descriptors_read_only(&db_opts, path, descriptors, false)
        } else {
            DB::open_cf_descriptors(&db_opts, path, descriptors)
        };
        let db = opened.map_err(|source| RocksError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let mut cfs = Vec::with_capacity(Tables::COUNT);
        for table in Tables::ALL {
            let Some(cf) = db.cf_handle(table.name()) else {
                return Err(RocksError::MissingColumnFamily {
                    path: path.to_path_buf(),
                    table,
                });
            };
            cfs.push(CfHandle(cf));
        }
        if !options.read_only {
            // Only this process writes now: spill stores under `spill/` are a killed one's.
            let removed = crate::spill::remove_scratch_stores(path)?;
            if removed > 0 {
                tracing::info!(removed, path = %path.display(), "removed spill stores of an interrupted process");
            }
        }
        Ok(Self {
            inner: Arc::new(EngineInner {
                db,
                cfs,
                db_options: db_opts,
                path: path.to_path_buf(),
                writer: Arc::new(Mutex::new(())),
                sync_writes: options.sync_writes,
                spill_bytes: options.spill_bytes,
                history_level0_compaction_trigger: options.history_level0_compaction_trigger.max(1),
                read_only: options.read_only,
                cache,
                row_cache,
                _log_dir: log_dir,
                _open: OpenEngine::new(),
            }),
        })
    }

    /// Opens reth-hybrid's RocksDB read-only (for inspection tools: nothing on disk changes).
    pub fn open_read_only(path: &Path) -> Result<Self, RocksError> {
        Self::open(
            path,
            &RocksOptions {
                read_only: true,
                create_if_missing: false,
                ..RocksOptions::default()
            },
        )
    }

    /// The history tables' level-0 compaction trigger this engine opened with.
    pub fn history_level0_compaction_trigger(&self) -> i32 {
        self.inner.history_level0_compaction_trigger
    }

    /// The underlying database, for tools (stats, SST ingestion).
    pub fn db(&self) -> &DB {
        &self.inner.db
    }

    /// A table's column family handle.
    pub fn column_family(&self, table: Tables) -> &ColumnFamily {
        self.inner.cf(table)
    }

    /// Bytes of the live write-ahead log: RocksDB has no property for it, so the `*.log` files in
    /// the directory are summed (a file deleted meanwhile counts as 0).
    pub fn wal_bytes(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.inner.path) else {
            return 0;
        };
        entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum()
    }
}

impl RawReplay for RocksEngine {
    fn is_dirty(tx: &RocksTxMut) -> bool {
        tx.is_dirty()
    }

    fn export_writes(tx: &RocksTx) -> RawResult<Vec<u8>> {
        tx.export()
    }

    fn apply_exported(&self, writes: &[u8]) -> RawResult<()> {
        match crate::export::decode(writes)? {
            Some(files) => crate::export::apply(&self.inner, &files),
            None => crate::tx::write_batch(&self.inner, rocksdb::WriteBatch::from_data(writes)),
        }
    }

    /// A write batch, not a manifest of exported SST files (whose ingestion is durable anyway).
    fn can_defer(writes: &[u8]) -> bool {
        !crate::export::is_manifest(writes)
    }

    /// The batch goes to the WAL and the memtables without an fsync: a process crash keeps it
    /// (the WAL is in the page cache), power loss may take it with the WAL's unsynced tail, and
    /// RocksDB's point-in-time WAL recovery then opens at an earlier whole batch.
    fn apply_exported_deferred(&self, writes: &[u8]) -> RawResult<()> {
        if crate::export::is_manifest(writes) {
            return self.apply_exported(writes);
        }
        crate::tx::write_batch_unsynced(&self.inner, rocksdb::WriteBatch::from_data(writes))
    }

    /// A synced write batch fsyncs every live WAL file, not just the tail it wrote (RocksDB
    /// 10.4, `db_impl_write.cc`: a write with `sync` syncs each of `logs_`), and so every
    /// unsynced batch before it. An SST ingestion writes no WAL and syncs none of it.
    fn apply_syncs_earlier(&self, writes: &[u8]) -> bool {
        self.inner.sync_writes && !crate::export::is_manifest(writes)
    }

    fn sync_applied(&self) -> RawResult<()> {
        if self.inner.read_only {
            return Ok(());
        }
        self.inner
            .db
            .flush_wal(true)
            .map_err(|e| RocksError::Commit(e).into())
    }

    fn discard_exports(&self) -> RawResult<()> {
        if self.inner.read_only {
            return Ok(());
        }
        crate::spill::remove_leftovers(&self.inner.path, crate::spill::EXPORT_PREFIX)?;
        Ok(())
    }

    fn freeze(tx: RocksTxMut) -> RocksTx {
        tx.freeze()
    }

    fn holds_writes(frozen: &RocksTx) -> bool {
        frozen.is_dirty()
    }
}

impl RawEngine for RocksEngine {
    type Tx = RocksTx;
    type TxMut = RocksTxMut;

    fn engine_name(&self) -> &'static str {
        "rocksdb"
    }

    fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    fn path(&self) -> PathBuf {
        self.inner.path.clone()
    }

    fn begin_ro(&self) -> RawResult<RocksTx> {
        Ok(RocksTx::begin(Arc::clone(&self.inner)))
    }

    fn begin_rw(&self) -> RawResult<RocksTxMut> {
        let guard = self.inner.writer.lock_arc();
        Ok(RocksTxMut::begin(Arc::clone(&self.inner), guard))
    }

    fn gauges(&self) -> Vec<EngineGauge> {
        let db = &self.inner.db;
        let mut out = Vec::new();
        for table in Tables::ALL {
            let cf = self.inner.cf(table);
            for (name, property) in TABLE_GAUGES {
                if let Ok(Some(v)) = db.property_int_value_cf(cf, property) {
                    out.push(EngineGauge {
                        name,
                        table: Some(table),
                        value: v as f64,
                    });
                }
            }
        }
        for (name, property) in DB_GAUGES {
            if let Ok(Some(v)) = db.property_int_value(property) {
                out.push(EngineGauge {
                    name,
                    table: None,
                    value: v as f64,
                });
            }
        }
        out.push(EngineGauge {
            name: "rocksdb_block_cache_usage_bytes",
            table: None,
            value: self.inner.cache.get_usage() as f64,
        });
        if let Some(row_cache) = &self.inner.row_cache {
            out.push(EngineGauge {
                name: "rocksdb_row_cache_usage_bytes",
                table: None,
                value: row_cache.get_usage() as f64,
            });
        }
        let opts = &self.inner.db_options;
        for (name, hit, miss) in [
            (
                "rocksdb_block_cache_hit_ratio",
                Ticker::BlockCacheHit,
                Ticker::BlockCacheMiss,
            ),
            (
                "rocksdb_row_cache_hit_ratio",
                Ticker::RowCacheHit,
                Ticker::RowCacheMiss,
            ),
        ] {
            let (hit, miss) = (opts.get_ticker_count(hit), opts.get_ticker_count(miss));
            if hit + miss > 0 {
                out.push(EngineGauge {
                    name,
                    table: None,
                    value: hit as f64 / (hit + miss) as f64,
                });
            }
        }
        out.push(EngineGauge {
            name: "rocksdb_wal_bytes",
            table: None,
            value: self.wal_bytes() as f64,
        });
        out.push(EngineGauge {
            name: "rocksdb_write_stall_seconds",
            table: None,
            value: opts.get_ticker_count(Ticker::StallMicros) as f64 / 1e6,
        });
        out
    }

    fn counters(&self) -> Vec<EngineCounter> {
        let opts = &self.inner.db_options;
        TICKER_COUNTERS
            .iter()
            .map(|&(name, ticker)| EngineCounter {
                name,
                value: opts.get_ticker_count(ticker),
            })
            .collect()
    }
}

/// Per-table gauges from RocksDB's column family properties.
const TABLE_GAUGES: [(&str, &str); 5] = [
    (
        "rocksdb_pending_compaction_bytes",
        "rocksdb.estimate-pending-compaction-bytes",
    ),
    ("rocksdb_memtable_bytes", "rocksdb.cur-size-all-mem-tables"),
    ("rocksdb_sst_bytes", "rocksdb.total-sst-files-size"),
    // Every L0 file is one more place a read looks: a read's cost grows with it.
    ("rocksdb_level0_files", "rocksdb.num-files-at-level0"),
    // Index and filter blocks held outside the block cache by open table readers.
    (
        "rocksdb_table_readers_bytes",
        "rocksdb.estimate-table-readers-mem",
    ),
];

/// Database-wide gauges: background work in flight, sampled to line up with slow reads.
const DB_GAUGES: [(&str, &str); 2] = [
    (
        "rocksdb_running_compactions",
        "rocksdb.num-running-compactions",
    ),
    ("rocksdb_running_flushes", "rocksdb.num-running-flushes"),
];

/// RocksDB's statistics tickers worth a rate: where reads were answered (row cache, memtable,
/// which level), what they paid on the way (block cache misses by block kind, filter checks,
/// table files opened, iterator seeks) and the background work beside them.
const TICKER_COUNTERS: [(&str, Ticker); 22] = [
    ("rocksdb_row_cache_hit", Ticker::RowCacheHit),
    ("rocksdb_row_cache_miss", Ticker::RowCacheMiss),
    ("rocksdb_block_cache_index_hit", Ticker::BlockCacheIndexHit),
    (
        "rocksdb_block_cache_index_miss",
        Ticker::BlockCacheIndexMiss,
    ),
    (
        "rocksdb_block_cache_filter_hit",
        Ticker::BlockCacheFilterHit,
    ),
    (
        "rocksdb_block_cache_filter_miss",
        Ticker::BlockCacheFilterMiss,
    ),
    ("rocksdb_block_cache_data_hit", Ticker::BlockCacheDataHit),
    ("rocksdb_block_cache_data_miss", Ticker::BlockCacheDataMiss),
    // A filter that ruled a file out, and one that let a read into a file.
    ("rocksdb_bloom_filter_useful", Ticker::BloomFilterUseful),
    (
        "rocksdb_bloom_filter_full_positive",
        Ticker::BloomFilterFullPositive,
    ),
    (
        "rocksdb_bloom_filter_full_true_positive",
        Ticker::BloomFilterFullTruePositive,
    ),
    ("rocksdb_memtable_hit", Ticker::MemtableHit),
    ("rocksdb_memtable_miss", Ticker::MemtableMiss),
    ("rocksdb_get_hit_l0", Ticker::GetHitL0),
    ("rocksdb_get_hit_l1", Ticker::GetHitL1),
    ("rocksdb_get_hit_l2_and_up", Ticker::GetHitL2AndUp),
    ("rocksdb_table_file_opens", Ticker::NoFileOpens),
    ("rocksdb_iterator_seeks", Ticker::NumberDbSeek),
    ("rocksdb_stall_micros", Ticker::StallMicros),
    ("rocksdb_compaction_read_bytes", Ticker::CompactReadBytes),
    ("rocksdb_compaction_write_bytes", Ticker::CompactWriteBytes),
    ("rocksdb_flush_write_bytes", Ticker::FlushWriteBytes),
];

#[cfg(test)]
mod tests {
    use super::*;
    use reth_hybrid_api::raw::{RawTx, RawTxMut};
    use rocksdb::statistics::Histogram;

    /// The gauges' tickers keep counting while point reads time nothing (the level's number is
    /// easy to get wrong: rust-rocksdb's are one above RocksDB's).
    #[test]
    fn statistics_count_cache_hits_without_timing_reads() {
        let dir = tempfile::tempdir().expect("tmp");
        let engine = RocksEngine::open(dir.path(), &RocksOptions::default()).expect("open");
        let keys: Vec<[u8; 32]> = (0u8..100).map(|i| [i; 32]).collect();
        let tx = engine.begin_rw().expect("rw");
        for (i, key) in keys.iter().enumerate() {
            tx.put(
                Tables::TransactionHashNumbers,
                key,
                &(i as u64).to_be_bytes(),
            )
            .expect("put");
        }
        tx.commit().expect("commit");
        engine.flush().expect("flush");
        for _ in 0..2 {
            let ro = engine.begin_ro().expect("ro");
            for key in &keys {
                assert!(
                    ro.get(Tables::TransactionHashNumbers, key)
                        .expect("get")
                        .is_some()
                );
            }
        }
        let opts = &engine.inner.db_options;
        let hits = opts.get_ticker_count(Ticker::BlockCacheHit)
            + opts.get_ticker_count(Ticker::RowCacheHit);
        assert!(hits > 0, "tickers count");
        assert_eq!(
            opts.get_histogram_data(Histogram::DbGet).count(),
            0,
            "point reads are not timed"
        );
    }
}
