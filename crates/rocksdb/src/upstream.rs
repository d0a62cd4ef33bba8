//! reth's own RocksDB (`<datadir>/rocksdb`): where storage v2 keeps `AccountsHistory`,
//! `StoragesHistory` and `TransactionHashNumbers` with the MDBX tables' bytes. reth-hybrid never
//! routes a table there; it only looks (stats, refusals), reads it whole when adopting a v2
//! datadir, and clears those tables once the adoption moved them out.

use crate::{bulk::column_family_size, error::RocksError};
use reth_hybrid_api::Tables;
use rocksdb::{DB, Direction, IteratorMode, Options, ReadOptions};
use std::path::{Path, PathBuf};

/// One column family of reth's own `<datadir>/rocksdb`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamColumnFamily {
    pub name: String,
    pub has_rows: bool,
    pub estimated_rows: u64,
    pub sst_bytes: u64,
    /// Memtable bytes of rows only in the WAL, replayed by the read-only open (reth flushes
    /// every table when it stops cleanly, so a killed node's). Counted as `TableSize` counts
    /// our own: only memtables holding entries, since an empty one still reports its arena.
    pub unflushed_bytes: u64,
}

/// reth's RocksDB opened read-only: the WAL's rows are replayed into memory, nothing on disk
/// changes (the info log goes to a temporary folder).
pub struct UpstreamRocksDb {
    db: DB,
    path: PathBuf,
    log_dir: PathBuf,
}

impl std::fmt::Debug for UpstreamRocksDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamRocksDb")
            .field("path", &self.path)
            .finish()
    }
}

impl Drop for UpstreamRocksDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.log_dir);
    }
}

fn open_err(path: &Path) -> impl Fn(rocksdb::Error) -> RocksError + '_ {
    move |source| RocksError::Open {
        path: path.to_path_buf(),
        source,
    }
}

/// Options that leave the datadir as it was: the info log elsewhere, nothing created.
fn outside_options() -> (Options, PathBuf) {
    let log_dir = std::env::temp_dir().join(format!(
        "reth-hybrid-upstream-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let mut opts = Options::default();
    opts.set_db_log_dir(&log_dir);
    (opts, log_dir)
}

impl UpstreamRocksDb {
    /// `Ok(None)` when `path` holds no RocksDB.
    pub fn open_read_only(path: &Path) -> Result<Option<Self>, RocksError> {
        if !path.join("CURRENT").exists() {
            return Ok(None);
        }
        let (opts, log_dir) = outside_options();
        let names = DB::list_cf(&opts, path).map_err(open_err(path))?;
        let db = DB::open_cf_for_read_only(&opts, path, &names, false).map_err(open_err(path))?;
        Ok(Some(Self {
            db,
            path: path.to_path_buf(),
            log_dir,
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every column family with its size and whether it holds rows.
    pub fn column_families(&self) -> Result<Vec<UpstreamColumnFamily>, RocksError> {
        let names = DB::list_cf(&Options::default(), &self.path).map_err(open_err(&self.path))?;
        let mut out = Vec::new();
        for name in names {
            let Some(cf) = self.db.cf_handle(&name) else {
                continue;
            };
            let has_rows = self
                .db
                .iterator_cf(cf, IteratorMode::From(&[], Direction::Forward))
                .next()
                .transpose()
                .map_err(open_err(&self.path))?
                .is_some();
            let size = column_family_size(&self.db, cf);
            out.push(UpstreamColumnFamily {
                name,
                has_rows,
                estimated_rows: size.estimated_rows,
                sst_bytes: size.sst_bytes,
                unflushed_bytes: size.memtable_bytes,
            });
        }
        Ok(out)
    }

    /// RocksDB's estimate of `table`'s rows (for progress; `None` without a column family).
    pub fn estimated_rows(&self, table: Tables) -> Option<u64> {
        let cf = self.db.cf_handle(table.name())?;
        Some(column_family_size(&self.db, cf).estimated_rows)
    }

    /// Whether reth's RocksDB has a column family for `table`.
    pub fn has_table(&self, table: Tables) -> bool {
        self.db.cf_handle(table.name()).is_some()
    }

    /// Calls `row` for `table`'s rows in key order, starting after `after` (from the first row
    /// when `None`), until it returns `Ok(false)` or the rows end. Reads bypass the block cache:
    /// a whole-table scan would only evict. A table without a column family has no rows.
    pub fn for_each_row<E: From<RocksError>>(
        &self,
        table: Tables,
        after: Option<&[u8]>,
        mut row: impl FnMut(&[u8], &[u8]) -> Result<bool, E>,
    ) -> Result<(), E> {
        let Some(cf) = self.db.cf_handle(table.name()) else {
            return Ok(());
        };
        let mut opts = ReadOptions::default();
        opts.fill_cache(false);
        opts.set_readahead_size(4 << 20);
        let mut iter = self.db.raw_iterator_cf_opt(cf, opts);
        match after {
            None => iter.seek_to_first(),
            Some(key) => {
                iter.seek(key);
                if iter.key() == Some(key) {
                    iter.next();
                }
            }
        }
        let read = |source| RocksError::Operation {
            table,
            operation: "scan of reth's RocksDB",
            source,
        };
        while let (Some(k), Some(v)) = (iter.key(), iter.value()) {
            if !row(k, v)? {
                return Ok(());
            }
            iter.next();
        }
        iter.status().map_err(read)?;
        Ok(())
    }
}

/// Looks into reth's own RocksDB read-only: which column families it has and whether they hold
/// rows. `Ok(None)` when there is no such folder.
pub fn inspect_upstream_rocksdb(
    path: &Path,
) -> Result<Option<Vec<UpstreamColumnFamily>>, RocksError> {
    UpstreamRocksDb::open_read_only(path)?
        .map(|db| db.column_families())
        .transpose()
}

/// Removes every row of `tables` from reth's RocksDB at `path`: each column family with rows is
/// dropped and created anew, empty (reth opens its families by name and creates missing ones),
/// which returns its files' space without reading them (a delete-range and a compaction of a
/// large table took seconds to minutes). Idempotent; a table without a column family is skipped.
/// Takes RocksDB's lock: refused while reth runs.
pub fn clear_upstream_tables(path: &Path, tables: &[Tables]) -> Result<(), RocksError> {
    let (opts, log_dir) = outside_options();
    let names = DB::list_cf(&opts, path).map_err(open_err(path))?;
    let mut db = DB::open_cf(&opts, path, &names).map_err(open_err(path))?;
    let result = (|| {
        for table in tables {
            let Some(cf) = db.cf_handle(table.name()) else {
                continue;
            };
            let write = |source| RocksError::Operation {
                table: *table,
                operation: "clear of reth's RocksDB table",
                source,
            };
            let empty = {
                let mut iter = db.raw_iterator_cf(cf);
                iter.seek_to_first();
                iter.status().map_err(write)?;
                !iter.valid()
            };
            if empty {
                continue;
            }
            // One manifest record each: a kill between the two leaves the family missing, which
            // reth creates at its next open and our tools read as empty.
            db.drop_cf(table.name()).map_err(write)?;
            db.create_cf(table.name(), &Options::default())
                .map_err(write)?;
        }
        db.flush_wal(true).map_err(open_err(path))
    })();
    drop(db);
    let _ = std::fs::remove_dir_all(&log_dir);
    result
}
