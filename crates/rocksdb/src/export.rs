//! A spilled write transaction's commit: one SST file per changed table, written and synced
//! under `<db>/spill/commit-*` before anything is decided, and a small manifest naming them,
//! which is what the hybrid's intent log holds instead of the rows. Applying the manifest
//! ingests each file (the `Metadata` file, holding the commit's sequence, last). Applying it
//! again gives the same state: the files hold absolute puts and deletes, and each is ingested
//! through a fresh hard link, so the file the manifest names survives its own ingestion.

use crate::{
    crash::crash_point,
    env::EngineInner,
    error::{RocksError, read_err},
    options::sst_file_options,
    spill::{EXPORT_PREFIX, SPILL_DIR, unique_name},
};
use reth_hybrid_api::{Tables, raw::RawResult};
use rocksdb::{IngestExternalFileOptions, SstFileWriter};
use std::path::{Path, PathBuf};

/// First bytes of a manifest. A write batch's first 8 bytes are its sequence number, zero for
/// every batch this engine exports, so the two never collide.
const MAGIC: &[u8; 8] = b"RHSST001";

/// One exported file, as the manifest names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExportedFile {
    pub(crate) table: Tables,
    /// Relative to the engine's folder, so a datadir moved between crash and recovery works.
    pub(crate) path: String,
    pub(crate) bytes: u64,
}

/// Writes a commit's files; [`Export::finish`] returns the manifest.
pub(crate) struct Export {
    engine_path: PathBuf,
    dir_name: String,
    files: Vec<ExportedFile>,
    rows: u64,
}

/// Where a table's changes are pushed, in key order.
pub(crate) struct ChangeSink<'w, 'o> {
    writer: &'w mut SstFileWriter<'o>,
    table: Tables,
    rows: u64,
}

impl ChangeSink<'_, '_> {
    /// A put (`Some`) or a tombstone (`None`) of a RocksDB key.
    pub(crate) fn add(&mut self, key: &[u8], value: Option<&[u8]>) -> RawResult<()> {
        let written = match value {
            Some(v) => self.writer.put(key, v),
            None => self.writer.delete(key),
        };
        written.map_err(|e| read_err("commit export", self.table, e))?;
        self.rows += 1;
        Ok(())
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RocksError + '_ {
    move |source| RocksError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn sync_dir(dir: &Path) -> Result<(), RocksError> {
    #[cfg(test)]
    tests::SYNCED_DIRS.with(|synced| synced.borrow_mut().push(dir.to_path_buf()));
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

impl Export {
    pub(crate) fn begin(engine_path: &Path) -> RawResult<Self> {
        let dir_name = unique_name(EXPORT_PREFIX);
        let dir = engine_path.join(SPILL_DIR).join(&dir_name);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        Ok(Self {
            engine_path: engine_path.to_path_buf(),
            dir_name,
            files: Vec::new(),
            rows: 0,
        })
    }

    /// Writes `table`'s file from the changes `fill` pushes (in key order) and syncs it. A
    /// table with no change gets no file.
    pub(crate) fn table(
        &mut self,
        engine: &EngineInner,
        table: Tables,
        fill: impl FnOnce(&mut ChangeSink<'_, '_>) -> RawResult<()>,
    ) -> RawResult<()> {
        let relative = format!("{SPILL_DIR}/{}/{}.sst", self.dir_name, table.name());
        let path = self.engine_path.join(&relative);
        let options = sst_file_options(table, &engine.cache);
        let mut writer = SstFileWriter::create(&options);
        writer
            .open(&path)
            .map_err(|e| read_err("commit export", table, e))?;
        let mut sink = ChangeSink {
            writer: &mut writer,
            table,
            rows: 0,
        };
        fill(&mut sink)?;
        let rows = sink.rows;
        self.rows += rows;
        if rows == 0 {
            drop(writer);
            let _ = std::fs::remove_file(&path);
            return Ok(());
        }
        // SstFileWriter::finish syncs the file.
        writer
            .finish()
            .map_err(|e| read_err("commit export", table, e))?;
        let bytes = std::fs::metadata(&path).map_err(io(&path))?.len();
        self.files.push(ExportedFile {
            table,
            path: relative,
            bytes,
        });
        crash_point!(ExportAfterTable);
        Ok(())
    }

    /// Makes the files' names durable and returns the manifest.
    pub(crate) fn finish(self) -> RawResult<Vec<u8>> {
        let dir = self.engine_path.join(SPILL_DIR).join(&self.dir_name);
        if self.files.is_empty() {
            // Nothing to ingest (a cleared table that was empty): no folder to keep.
            let _ = std::fs::remove_dir_all(&dir);
            return Ok(encode(&self.files));
        }
        // Each level's entry, down from the engine's folder: `spill/` itself may be new (the
        // first spill of this datadir), and power loss could otherwise take it with the files.
        sync_dir(&dir)?;
        sync_dir(&self.engine_path.join(SPILL_DIR))?;
        sync_dir(&self.engine_path)?;
        let bytes: u64 = self.files.iter().map(|f| f.bytes).sum();
        tracing::info!(
            files = self.files.len(),
            rows = self.rows,
            bytes,
            "write transaction past the spill budget exported as SST files"
        );
        Ok(encode(&self.files))
    }
}

pub(crate) fn encode(files: &[ExportedFile]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(files.len() as u32).to_le_bytes());
    for f in files {
        let name = f.table.name().as_bytes();
        out.push(name.len() as u8);
        out.extend_from_slice(name);
        out.extend_from_slice(&(f.path.len() as u16).to_le_bytes());
        out.extend_from_slice(f.path.as_bytes());
        out.extend_from_slice(&f.bytes.to_le_bytes());
    }
    out
}

/// Reads a manifest front to back.
struct ManifestReader<'a> {
    rest: &'a [u8],
}

fn bad(what: impl Into<String>) -> RocksError {
    RocksError::BadManifest { what: what.into() }
}

impl<'a> ManifestReader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], RocksError> {
        if self.rest.len() < n {
            return Err(bad("cut short"));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn str(&mut self, n: usize, what: &str) -> Result<&'a str, RocksError> {
        std::str::from_utf8(self.take(n)?).map_err(|_| bad(what))
    }
}

/// The files a manifest names; `Ok(None)` for a write batch (not a manifest).
/// Whether a payload is a manifest of exported files (else it is a write batch).
pub(crate) fn is_manifest(payload: &[u8]) -> bool {
    payload.starts_with(MAGIC)
}

pub(crate) fn decode(payload: &[u8]) -> Result<Option<Vec<ExportedFile>>, RocksError> {
    let Some(rest) = payload.strip_prefix(MAGIC.as_slice()) else {
        return Ok(None);
    };
    let mut r = ManifestReader { rest };
    let count = u32::from_le_bytes(r.take(4)?.try_into().expect("4 bytes"));
    let mut files = Vec::new();
    for _ in 0..count {
        let name_len = r.take(1)?[0] as usize;
        let name = r.str(name_len, "table name")?;
        let table = Tables::from_name(name).ok_or_else(|| bad(format!("unknown table {name}")))?;
        let path_len = u16::from_le_bytes(r.take(2)?.try_into().expect("2 bytes")) as usize;
        let path = r.str(path_len, "file path")?;
        if !path.starts_with(&format!("{SPILL_DIR}/{EXPORT_PREFIX}")) || path.contains("..") {
            return Err(bad(format!("file path {path} outside {SPILL_DIR}/")));
        }
        let bytes = u64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"));
        files.push(ExportedFile {
            table,
            path: path.to_string(),
            bytes,
        });
    }
    if !r.rest.is_empty() {
        return Err(bad("trailing bytes"));
    }
    Ok(Some(files))
}

/// Ingests every file, in manifest order. All are checked first, so a missing or cut file
/// changes nothing.
pub(crate) fn apply(engine: &EngineInner, files: &[ExportedFile]) -> RawResult<()> {
    for f in files {
        let path = engine.path.join(&f.path);
        let found = std::fs::metadata(&path).map(|m| m.len());
        if found.as_ref().ok() != Some(&f.bytes) {
            return Err(RocksError::ExportedFileMissing {
                path,
                expected_bytes: f.bytes,
                found: found.map_or_else(|e| e.to_string(), |n| format!("{n} bytes")),
            }
            .into());
        }
    }
    for f in files {
        let path = engine.path.join(&f.path);
        // RocksDB removes the name it ingests; a second link keeps the manifest's file for a
        // replay after a crash part way through this loop.
        let link = path.with_extension("ingest");
        let _ = std::fs::remove_file(&link);
        if std::fs::hard_link(&path, &link).is_err() {
            // A filesystem without hard links: ingest a synced copy (slower, same result).
            std::fs::copy(&path, &link)
                .and_then(|_| std::fs::File::open(&link)?.sync_all())
                .map_err(io(&link))?;
        }
        let mut opts = IngestExternalFileOptions::default();
        opts.set_move_files(true);
        let ingested = engine
            .db
            .ingest_external_file_cf_opts(engine.cf(f.table), &opts, vec![link.clone()])
            .map_err(|e| read_err("commit ingestion", f.table, e));
        let _ = std::fs::remove_file(&link);
        ingested?;
        crash_point!(IngestAfterTable);
    }
    Ok(())
}

/// Removes a manifest's folder (after a standalone commit applied it).
pub(crate) fn remove(engine_path: &Path, files: &[ExportedFile]) {
    if let Some(dir) = files
        .first()
        .and_then(|f| engine_path.join(&f.path).parent().map(Path::to_path_buf))
        && let Err(e) = std::fs::remove_dir_all(&dir)
    {
        tracing::warn!(path = %dir.display(), error = %e, "could not remove an applied commit's files");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RocksEngine, RocksOptions};
    use std::cell::RefCell;

    thread_local! {
        /// The folders `sync_dir` synced on this thread, in order.
        pub(super) static SYNCED_DIRS: RefCell<Vec<PathBuf>> = const { RefCell::new(Vec::new()) };
    }

    /// An exported commit names its files from the engine's folder down; every folder on that
    /// path must be durable before the intent naming them is, `spill/` included (a datadir's
    /// first spill creates it).
    #[test]
    fn an_export_syncs_every_folder_down_from_the_engines() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("hybrid-rocksdb");
        let engine = RocksEngine::open(&path, &RocksOptions::default()).expect("open");
        assert!(
            !path.join(SPILL_DIR).exists(),
            "the first spill creates spill/"
        );
        SYNCED_DIRS.with(|s| s.borrow_mut().clear());
        let mut export = Export::begin(&path).expect("begin");
        let commit_dir = path.join(SPILL_DIR).join(&export.dir_name);
        export
            .table(&engine.inner, Tables::TransactionHashNumbers, |sink| {
                sink.add(&[1; 32], Some(&[2; 8]))
            })
            .expect("table");
        let manifest = export.finish().expect("finish");
        assert!(is_manifest(&manifest));
        let synced = SYNCED_DIRS.with(|s| s.borrow().clone());
        for wanted in [commit_dir, path.join(SPILL_DIR), path.clone()] {
            assert!(
                synced.contains(&wanted),
                "{} was not synced (synced: {synced:?})",
                wanted.display()
            );
        }
    }
}
