//! Bulk paths for datadir tools: a table's SST files built outside the database and ingested
//! whole (no WAL, no memtable, no compaction churn), ordered scans, clearing a table, sizes.

use crate::{
    env::RocksEngine,
    error::{RocksError, read_err},
    options::sst_file_options,
};
use reth_hybrid_api::{Tables, raw::RawResult};
use rocksdb::{
    ColumnFamily, DB, IngestExternalFileOptions, Options, ReadOptions, SstFileWriter, WriteBatch,
    WriteOptions,
};
use std::path::{Path, PathBuf};

/// Where [`RocksEngine::write_sst_file`]'s caller pushes rows, in table order.
pub struct SstSink<'w, 'o> {
    writer: &'w mut SstFileWriter<'o>,
    table: Tables,
    rows: u64,
    row_key: Vec<u8>,
}

impl std::fmt::Debug for SstSink<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstSink")
            .field("table", &self.table)
            .field("rows", &self.rows)
            .finish()
    }
}

impl SstSink<'_, '_> {
    /// Adds a row. Rows must come in the table's order (MDBX order: key, then duplicate).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> RawResult<()> {
        let result = match self.table.dupsort_key_len() {
            None => self.writer.put(key, value),
            Some(len) => {
                if key.len() != len {
                    return Err(RocksError::WrongDupKeyLength {
                        table: self.table,
                        len: key.len(),
                        expected: len,
                    }
                    .into());
                }
                self.row_key.clear();
                self.row_key.extend_from_slice(key);
                self.row_key.extend_from_slice(value);
                self.writer.put(&self.row_key, [])
            }
        };
        result.map_err(|e| read_err("SST write", self.table, e))?;
        self.rows += 1;
        Ok(())
    }

    /// Bytes written to the file so far.
    pub fn file_bytes(&self) -> u64 {
        self.writer.file_size()
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }
}

/// A finished SST file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SstFile {
    pub rows: u64,
    pub bytes: u64,
}

/// One SST file of a table, as RocksDB's metadata describes it (a migration checks where its
/// ingested files landed from these).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSstFile {
    pub name: String,
    pub level: i32,
    /// Smallest and largest stored key in the file.
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    pub entries: u64,
    pub deletions: u64,
}

/// A table's size in RocksDB (estimates: RocksDB counts keys only approximately).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableSize {
    pub estimated_rows: u64,
    pub sst_bytes: u64,
    pub memtable_bytes: u64,
}

impl RocksEngine {
    /// Writes one SST file for `table` at `path` from the rows `fill` pushes, with the table's
    /// own options (compression, block size, filters), and syncs it. `Ok(None)` if `fill` pushed
    /// no row (RocksDB cannot write an empty SST file; none is left behind).
    pub fn write_sst_file(
        &self,
        table: Tables,
        path: &Path,
        fill: impl FnOnce(&mut SstSink<'_, '_>) -> RawResult<()>,
    ) -> RawResult<Option<SstFile>> {
        let options = sst_file_options(table, &self.inner.cache);
        let mut writer = SstFileWriter::create(&options);
        let io = |e| read_err("SST file", table, e);
        writer.open(path).map_err(io)?;
        let mut sink = SstSink {
            writer: &mut writer,
            table,
            rows: 0,
            row_key: Vec::new(),
        };
        fill(&mut sink)?;
        let rows = sink.rows;
        if rows == 0 {
            drop(writer);
            let _ = std::fs::remove_file(path);
            return Ok(None);
        }
        writer.finish().map_err(io)?;
        let bytes = writer.file_size();
        drop(writer);
        // SstFileWriter::finish syncs the file; sync its directory entry too.
        if let Some(dir) = path.parent() {
            sync_dir(dir).map_err(|source| RocksError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        Ok(Some(SstFile { rows, bytes }))
    }

    /// Ingests SST files built by [`Self::write_sst_file`] into `table`, atomically: after a crash
    /// either all of them are in the table or none. The files are moved (hard-linked) in.
    pub fn ingest_sst_files(&self, table: Tables, files: &[PathBuf]) -> RawResult<()> {
        if files.is_empty() {
            return Ok(());
        }
        let mut opts = IngestExternalFileOptions::default();
        opts.set_move_files(true);
        self.inner
            .db
            .ingest_external_file_cf_opts(self.inner.cf(table), &opts, files.to_vec())
            .map_err(|e| read_err("SST ingestion", table, e))
    }

    /// Calls `f` with every row of `table` in order (key, value as reth writes them), starting
    /// after the stored row `after` (see [`Self::stored_key`]); stops early when `f` says false.
    /// Reads one consistent snapshot.
    pub fn scan_table(
        &self,
        table: Tables,
        after: Option<&[u8]>,
        f: impl FnMut(&[u8], &[u8]) -> RawResult<bool>,
    ) -> RawResult<()> {
        self.scan_range(table, after, None, f)
    }

    /// [`Self::scan_table`] over the stored keys in `(after, up_to]` (`None`: unbounded), so
    /// disjoint ranges can be scanned by several threads.
    pub fn scan_range(
        &self,
        table: Tables,
        after: Option<&[u8]>,
        up_to: Option<&[u8]>,
        mut f: impl FnMut(&[u8], &[u8]) -> RawResult<bool>,
    ) -> RawResult<()> {
        let db = &self.inner.db;
        let snapshot = db.snapshot();
        let mut read = ReadOptions::default();
        read.set_snapshot(&snapshot);
        read.fill_cache(false);
        read.set_readahead_size(4 << 20);
        if let Some(k) = up_to {
            // The smallest key after `k` is `k ++ 0x00`: an exclusive bound that includes `k`.
            read.set_iterate_upper_bound([k, &[0u8][..]].concat());
        }
        let mut it = db.raw_iterator_cf_opt(self.inner.cf(table), read);
        match after {
            None => it.seek_to_first(),
            Some(k) => {
                it.seek(k);
                if it.key() == Some(k) {
                    it.next();
                }
            }
        }
        let dup_len = table.dupsort_key_len();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let more = match dup_len {
                None => f(k, v)?,
                Some(len) if k.len() >= len => f(&k[..len], &k[len..])?,
                Some(len) => {
                    return Err(RocksError::CorruptDupKey {
                        table,
                        len: k.len(),
                        expected: len,
                    }
                    .into());
                }
            };
            if !more {
                return Ok(());
            }
            it.next();
        }
        it.status().map_err(|e| read_err("scan", table, e))
    }

    /// The RocksDB key a row is stored under (`key ++ value` in dupsort tables).
    pub fn stored_key(table: Tables, key: &[u8], value: &[u8]) -> Vec<u8> {
        match table.dupsort_key_len() {
            None => key.to_vec(),
            Some(_) => [key, value].concat(),
        }
    }

    /// The live SST files of `table`.
    pub fn sst_files(&self, table: Tables) -> RawResult<Vec<TableSstFile>> {
        let files = self
            .inner
            .db
            .live_files()
            .map_err(|e| read_err("live files", table, e))?;
        Ok(files
            .into_iter()
            .filter(|f| f.column_family_name == table.name())
            .map(|f| TableSstFile {
                name: f.name,
                level: f.level,
                start: f.start_key.unwrap_or_default(),
                end: f.end_key.unwrap_or_default(),
                entries: f.num_entries,
                deletions: f.num_deletions,
            })
            .collect())
    }

    /// The stored key of `table`'s last row (see [`Self::stored_key`]), `None` when it is empty.
    /// A migration ingesting its files in key order learns from it which ones landed.
    pub fn last_stored_key(&self, table: Tables) -> RawResult<Option<Vec<u8>>> {
        let mut it = self.inner.db.raw_iterator_cf(self.inner.cf(table));
        it.seek_to_last();
        it.status().map_err(|e| read_err("scan", table, e))?;
        Ok(it.key().map(<[u8]>::to_vec))
    }

    /// Whether `table` holds any row (control rows included).
    pub fn table_has_rows(&self, table: Tables) -> RawResult<bool> {
        let mut it = self.inner.db.raw_iterator_cf(self.inner.cf(table));
        it.seek_to_first();
        let valid = it.valid();
        it.status().map_err(|e| read_err("scan", table, e))?;
        Ok(valid)
    }

    /// Removes every row of `table` in one synced batch (a range deletion, not a row-by-row
    /// delete), then compacts the table so its files are released.
    pub fn clear_table(&self, table: Tables) -> RawResult<()> {
        if self.inner.row_cache.is_some() {
            return Err(RocksError::ClearWithRowCache { table }.into());
        }
        let db = &self.inner.db;
        let cf = self.inner.cf(table);
        let Some(batch) = delete_everything(db, cf, table)? else {
            return Ok(());
        };
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        db.write_opt(batch, &wo).map_err(RocksError::Commit)?;
        db.compact_range_cf::<&[u8], &[u8]>(cf, None, None);
        Ok(())
    }

    /// `table`'s estimated rows and bytes (SST files plus memtables).
    pub fn table_size(&self, table: Tables) -> TableSize {
        column_family_size(&self.inner.db, self.inner.cf(table))
    }

    /// Flushes every table's memtable to SST files (so sizes on disk are complete).
    pub fn flush(&self) -> RawResult<()> {
        for table in Tables::ALL {
            self.inner
                .db
                .flush_cf(self.inner.cf(table))
                .map_err(|e| read_err("flush", table, e))?;
        }
        Ok(())
    }
}

/// A batch deleting every row of a column family (one range deletion and the last key, which
/// the range's exclusive end leaves); `None` when it is empty.
pub(crate) fn delete_everything(
    db: &DB,
    cf: &ColumnFamily,
    table: Tables,
) -> RawResult<Option<WriteBatch>> {
    let mut it = db.raw_iterator_cf(cf);
    it.seek_to_last();
    it.status().map_err(|e| read_err("scan", table, e))?;
    let Some(last) = it.key() else {
        return Ok(None);
    };
    let mut batch = WriteBatch::default();
    batch.delete_range_cf(cf, &[][..], last);
    batch.delete_cf(cf, last);
    Ok(Some(batch))
}

/// A column family's estimated rows, SST bytes and memtable bytes. An empty memtable still
/// reports its arena (~2 KiB), so memtables count only while they hold entries.
pub(crate) fn column_family_size(db: &DB, cf: &ColumnFamily) -> TableSize {
    let prop = |name: &str| {
        db.property_int_value_cf(cf, name)
            .ok()
            .flatten()
            .unwrap_or(0)
    };
    let memtable_entries =
        prop("rocksdb.num-entries-active-mem-table") + prop("rocksdb.num-entries-imm-mem-tables");
    TableSize {
        estimated_rows: prop("rocksdb.estimate-num-keys"),
        sst_bytes: prop("rocksdb.total-sst-files-size"),
        memtable_bytes: if memtable_entries > 0 {
            prop("rocksdb.cur-size-all-mem-tables")
        } else {
            0
        },
    }
}

/// Whether the RocksDB at `path` exists with a column family for every table. A process killed
/// while creating it (the first open creates the families one by one) leaves some missing; no
/// row can have been written then, since writes need a complete open.
pub fn is_initialized(path: &Path) -> bool {
    path.join("CURRENT").exists()
        && DB::list_cf(&Options::default(), path).is_ok_and(|names| {
            Tables::ALL
                .iter()
                .all(|t| names.iter().any(|n| n == t.name()))
        })
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}
