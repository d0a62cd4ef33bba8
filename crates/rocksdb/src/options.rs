//! Per-table RocksDB options, chosen for each table's access pattern (see
//! docs/rocksdb-tuning.md for the reasoning).

use reth_hybrid_api::Tables;
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, Cache, DBCompressionType, DataBlockIndexType, Options,
};

/// Engine-wide settings.
#[derive(Debug, Clone)]
pub struct RocksOptions {
    /// Shared LRU block cache for data, index and filter blocks. Default: a sixth of the
    /// machine's RAM, between 512 MiB and 8 GiB ([`default_block_cache_bytes`]); the cache
    /// takes memory only as it fills.
    pub block_cache_bytes: usize,
    /// Row cache for point lookups (`get`): a repeated get of a row in an SST file is one hash
    /// lookup instead of filter, index and data-block searches. 0 disables it; RocksDB refuses
    /// range deletions with a row cache, so the datadir tools that clear whole tables open
    /// with 0 ([`RocksOptions::for_bulk_tools`]).
    pub row_cache_bytes: usize,
    /// fsync the WAL on every commit (reth-hybrid's durability promise; off only in benchmarks).
    pub sync_writes: bool,
    pub create_if_missing: bool,
    /// Open read-only: writes fail, nothing on disk changes (no lock taken, no WAL replayed).
    pub read_only: bool,
    /// Bytes of uncommitted writes a write transaction keeps in memory before it moves them to
    /// disk (`spill.rs`); reth's pipeline writes millions of rows in one transaction. The
    /// environment variable `RETH_HYBRID_ROCKSDB_SPILL_BYTES` overrides the default.
    pub spill_bytes: usize,
    /// Bytes of live WAL past which RocksDB flushes the column families holding the oldest WAL
    /// file. A WAL file is deleted only once every column family with rows in it has flushed, and
    /// every hybrid commit writes its sequence row into `Metadata`, whose memtable never fills:
    /// left to RocksDB's default (4x all write buffers, ~16 GiB for our 32 column families),
    /// every WAL since the open would stay on disk and be replayed at the next open.
    pub max_total_wal_bytes: u64,
    /// Level-0 files that start a compaction of a history table. A seek searches every level-0
    /// file in full (under total order no filter can skip one), so the default, 1, compacts each
    /// flushed file into the level below at once; RocksDB's own default (and reth v2's) is 4,
    /// which rewrites that level a quarter as often. [`HISTORY_L0_TRIGGER_ENV`] overrides it
    /// (fewer compaction writes for slower history reads, or both settings on one binary).
    pub history_level0_compaction_trigger: i32,
}

/// Environment variable overriding the block cache's size, in MiB.
pub const BLOCK_CACHE_MIB_ENV: &str = "RETH_HYBRID_ROCKSDB_BLOCK_CACHE_MIB";

/// The block cache's default size: [`BLOCK_CACHE_MIB_ENV`], else [`block_cache_for_ram`] of
/// this machine's RAM.
pub fn default_block_cache_bytes() -> usize {
    if let Some(mib) = std::env::var(BLOCK_CACHE_MIB_ENV)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return mib.max(1) << 20;
    }
    // SAFETY: sysconf only reads system configuration.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGE_SIZE),
        )
    };
    let ram = if pages > 0 && page > 0 {
        (pages as u64).saturating_mul(page as u64)
    } else {
        0
    };
    block_cache_for_ram(ram)
}

/// A sixth of `ram_bytes`, between 512 MiB and 8 GiB. Measured at 100M transactions on a
/// 23 GiB machine (docs/benchmarks.md, "At scale"): with 512 MiB the warm pass's tx-hash blocks
/// evicted the history blocks, and a historical lookup took 1.70-1.81x MDBX's time; with 4 GiB,
/// 1.43-1.45x. MDBX needs the rest of RAM as page cache, hence a sixth, not more.
pub fn block_cache_for_ram(ram_bytes: u64) -> usize {
    const MIN: u64 = 512 << 20;
    const MAX: u64 = 8 << 30;
    (ram_bytes / 6).clamp(MIN, MAX) as usize
}

/// Environment variable overriding [`RocksOptions::history_level0_compaction_trigger`].
pub const HISTORY_L0_TRIGGER_ENV: &str = "RETH_HYBRID_ROCKSDB_HISTORY_L0_TRIGGER";

/// [`HISTORY_L0_TRIGGER_ENV`]'s value, `None` when it is unset.
pub(crate) fn history_l0_trigger_from_env() -> Result<Option<i32>, crate::RocksError> {
    let Ok(value) = std::env::var(HISTORY_L0_TRIGGER_ENV) else {
        return Ok(None);
    };
    match value.trim().parse::<i32>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(crate::RocksError::Setting {
            name: HISTORY_L0_TRIGGER_ENV,
            value,
            expected: "a whole number >= 1 (1, the default, compacts each flushed history file \
                       at once; 4 is RocksDB's default)",
        }),
    }
}

/// Environment variable overriding [`RocksOptions::spill_bytes`]'s default (tests and the
/// end-to-end check set it small to make every large commit spill).
pub const SPILL_BYTES_ENV: &str = "RETH_HYBRID_ROCKSDB_SPILL_BYTES";

/// 128 MiB counted (about 180 MiB of heap): room for ~800k tx-hash rows between spills.
const DEFAULT_SPILL_BYTES: usize = 128 << 20;

/// Four 64 MiB memtables' worth: large tables still flush when their memtable fills, and only
/// the small, often-written ones (`Metadata`) are flushed early, into tiny SST files.
const DEFAULT_MAX_TOTAL_WAL_BYTES: u64 = 256 << 20;

impl Default for RocksOptions {
    fn default() -> Self {
        let spill_bytes = std::env::var(SPILL_BYTES_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_SPILL_BYTES);
        Self {
            block_cache_bytes: default_block_cache_bytes(),
            row_cache_bytes: 64 << 20,
            sync_writes: true,
            create_if_missing: true,
            read_only: false,
            spill_bytes,
            max_total_wal_bytes: DEFAULT_MAX_TOTAL_WAL_BYTES,
            // A bad value is refused by the engine's open (`history_l0_trigger_from_env`).
            history_level0_compaction_trigger: history_l0_trigger_from_env()
                .ok()
                .flatten()
                .unwrap_or(1),
        }
    }
}

impl RocksOptions {
    /// Refuses a mistyped reth-hybrid RocksDB setting in the environment
    /// ([`HISTORY_L0_TRIGGER_ENV`]). Commands call it before they change anything; the engine's
    /// open checks again.
    pub fn check_environment() -> Result<(), crate::RocksError> {
        history_l0_trigger_from_env().map(|_| ())
    }

    /// Defaults for offline datadir tools (migration, rollback): no row cache, since they clear
    /// tables with one range deletion and read by scans.
    pub fn for_bulk_tools() -> Self {
        Self {
            row_cache_bytes: 0,
            ..Self::default()
        }
    }
}

/// `-1` (keep every SST open) when the process may open plenty of files, else a safe share.
fn max_open_files() -> i32 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes into the struct we pass.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    if ok && (lim.rlim_cur == libc::RLIM_INFINITY || lim.rlim_cur >= 65_536) {
        -1
    } else if ok {
        (lim.rlim_cur / 2).clamp(256, 32_768) as i32
    } else {
        1024
    }
}

pub(crate) fn db_options(opts: &RocksOptions) -> Options {
    let mut o = Options::default();
    o.create_if_missing(opts.create_if_missing);
    o.create_missing_column_families(opts.create_if_missing);
    o.set_max_open_files(max_open_files());
    o.increase_parallelism(2);
    o.set_max_background_jobs(4);
    o.set_bytes_per_sync(1 << 20);
    o.set_keep_log_file_num(4);
    o.set_max_total_wal_size(opts.max_total_wal_bytes);
    // Tickers for the block-cache hit rate and write-stall time gauges, without timers: the
    // default level reads the clock twice per point read for a histogram nothing here reads.
    // rust-rocksdb numbers its levels one above RocksDB's (reth#27212): its
    // `ExceptHistogramOrTimers` (2) is RocksDB's `kExceptTimers`, and its `ExceptTimers` (3) is
    // RocksDB's default, `kExceptDetailedTimers`.
    o.enable_statistics();
    o.set_statistics_level(rocksdb::statistics::StatsLevel::ExceptHistogramOrTimers);
    o
}

/// Options of one table's column family.
pub(crate) fn cf_options(table: Tables, cache: &Cache) -> Options {
    let mut o = Options::default();
    let mut t = BlockBasedOptions::default();
    t.set_block_cache(cache);
    t.set_cache_index_and_filter_blocks(true);
    t.set_pin_l0_filter_and_index_blocks_in_cache(true);
    t.set_format_version(5);
    match table {
        // Read by seek ("first shard >= (key, block)"), written in bulk by the history stages:
        // larger blocks, partitioned index and filters, LZ4 upper / ZSTD bottom levels.
        Tables::AccountsHistory | Tables::StoragesHistory => {
            t.set_block_size(16 << 10);
            t.set_bloom_filter(10.0, false);
            t.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
            t.set_partition_filters(true);
            t.set_pin_top_level_index_and_filter(true);
            o.set_compression_type(DBCompressionType::Lz4);
            o.set_bottommost_compression_type(DBCompressionType::Zstd);
            o.set_level_compaction_dynamic_level_bytes(true);
        }
        // Random 32-byte hashes, point lookups, values of 8 bytes: compression gains nothing;
        // whole-key bloom lets inserts and misses skip disk.
        Tables::TransactionHashNumbers => {
            t.set_block_size(4 << 10);
            t.set_bloom_filter(10.0, false);
            t.set_whole_key_filtering(true);
            // Measured at 100M hashes (docs/benchmarks.md, "At scale"): a file's whole filter
            // (~6 MB per 256 MB migrated file) evicted by data blocks made a miss cost milliseconds.
            // Partitioned, a lookup loads one small filter and index partition; the top levels
            // stay pinned (and index and filter blocks are cached with high priority, RocksDB's
            // default). A hash index in each data block spares the binary search of a hit.
            t.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
            t.set_partition_filters(true);
            t.set_pin_top_level_index_and_filter(true);
            t.set_data_block_index_type(DataBlockIndexType::BinaryAndHash);
            o.set_compression_type(DBCompressionType::None);
        }
        _ => {
            t.set_block_size(16 << 10);
            t.set_bloom_filter(10.0, false);
            o.set_compression_type(DBCompressionType::Lz4);
            o.set_bottommost_compression_type(DBCompressionType::Zstd);
        }
    }
    // Gets of rows already in SST files (most of them, on a node) miss the memtable: a
    // whole-key bloom there answers the miss without searching the skiplist.
    o.set_memtable_prefix_bloom_ratio(0.1);
    o.set_memtable_whole_key_filtering(true);
    o.set_block_based_table_factory(&t);
    o
}

/// A table's column family as the engine opens it: [`cf_options`] and the engine-wide settings
/// that apply per table.
pub(crate) fn column_family_options(table: Tables, cache: &Cache, opts: &RocksOptions) -> Options {
    let mut o = cf_options(table, cache);
    if matches!(table, Tables::AccountsHistory | Tables::StoragesHistory) {
        // Measured (`history_reads`): with two level-0 files a lookup took 1.68-1.72x its time
        // without them; the price is the level below rewritten at every flush.
        o.set_level_zero_file_num_compaction_trigger(opts.history_level0_compaction_trigger.max(1));
    }
    o
}

/// Options for SST files built outside the database and ingested into `table`. Ingested files
/// of an empty table land on the bottommost level, so they use its compression (ZSTD where the
/// table has one), as a full compaction would.
pub(crate) fn sst_file_options(table: Tables, cache: &Cache) -> Options {
    let mut o = cf_options(table, cache);
    if !matches!(table, Tables::TransactionHashNumbers) {
        o.set_compression_type(DBCompressionType::Zstd);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::block_cache_for_ram;

    #[test]
    fn block_cache_is_a_sixth_of_ram_within_bounds() {
        const GIB: u64 = 1 << 30;
        assert_eq!(block_cache_for_ram(0), 512 << 20);
        assert_eq!(block_cache_for_ram(2 * GIB), 512 << 20);
        assert_eq!(block_cache_for_ram(24 * GIB), 4 << 30);
        assert_eq!(block_cache_for_ram(30 * GIB), 5 << 30);
        assert_eq!(block_cache_for_ram(512 * GIB), 8 << 30);
    }
}
