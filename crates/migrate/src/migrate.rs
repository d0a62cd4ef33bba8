//! Running a migration: each table is copied, verified on both sides, then switched in one step;
//! every step is durable and resumable (see docs/migration.md for the operator's view).
//!
//! MDBX -> RocksDB: the MDBX cursor (bytewise order, as RocksDB sorts) streams into SST files
//! written with the table's own options; each finished file is recorded in the state file and
//! ingested at once, and checker threads read it back through RocksDB beside the copy; then the
//! ingested files' key ranges, the source side and the rows past the last file are checked,
//! and one MDBX transaction clears the source table and records the new layout.
//!
//! RocksDB -> MDBX: rows stream from RocksDB into MDBX with `MDBX_APPEND` in batches; each batch
//! commits together with its position, so a crash loses nothing and repeats nothing. After the
//! verification one MDBX transaction records the layout, then RocksDB's copy is range-deleted.

use crate::{
    copy_feed,
    crash::crash_point,
    datadir::{Datadir, effective_layout, remove_durably, sync_parent},
    digest::TableDigest,
    error::{MigrateError, io},
    fault::{self, FaultPoint},
    file_check::{Checked, FileChecker, FileRange},
    plan::{MigrateRequest, Plan, plan},
    progress::Progress,
    state::{MigrationState, Phase, RollbackProgress, SstChunk, rollback_key},
};
use reth_hybrid_api::{
    EngineKind, Tables,
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_hybrid::{
    HybridDb, HybridOptions, Layout,
    control::{get_bytes, put_bytes},
    layout::LAYOUT_KEY,
};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions, lock::StorageLock};
use reth_hybrid_rocksdb::RocksEngine;
use serde::Serialize;
use std::{path::Path, time::Instant};

/// Parts each SST file is read back in (see `file_check`).
const FILE_PARTS: u64 = 4;

/// What one table's migration did.
#[derive(Debug, Clone, Serialize)]
pub struct TableReport {
    pub table: Tables,
    pub rows: u64,
    pub checksum: String,
    /// Bytes in the source engine before (MDBX pages or RocksDB files).
    pub source_bytes: u64,
    /// Bytes in the target engine after.
    pub target_bytes: u64,
    pub seconds: f64,
}

/// What a migration did.
#[derive(Debug, Clone, Serialize)]
pub struct MigrateReport {
    pub plan: Plan,
    pub tables: Vec<TableReport>,
    /// `mdbx.dat` bytes on disk before and after `--compact`.
    pub compacted: Option<(u64, u64)>,
    pub seconds: f64,
}

struct Run<'a> {
    /// What is being done now, for the error that says where a failure struck.
    step: String,
    dd: Datadir,
    mdbx: MdbxEngine,
    rocks: RocksEngine,
    state: MigrationState,
    request: &'a MigrateRequest,
    progress: &'a dyn Progress,
}

/// Migrates (or resumes migrating) tables between the engines. Preflight first: a refusal
/// changes nothing in the datadir.
pub fn migrate(
    datadir: &Path,
    request: &MigrateRequest,
    progress: &dyn Progress,
) -> Result<MigrateReport, MigrateError> {
    let started = Instant::now();
    let plan = plan(datadir, request)?;
    let dd = Datadir::new(datadir);
    let tables: Vec<Tables> = plan.tables.iter().map(|t| t.table).collect();
    if tables.is_empty() {
        return Ok(MigrateReport {
            plan,
            tables: Vec::new(),
            compacted: None,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    let resume = plan.command.as_str();
    let mdbx = MdbxEngine::open(datadir, MdbxOptions::read_write())?;
    let rocks = RocksEngine::open_in_datadir_for_bulk(datadir).map_err(|e| {
        step_failed(
            "opening (or creating) hybrid-rocksdb".into(),
            resume,
            e.into(),
        )
    })?;
    let replay_pending = dd.intent_pending() || {
        let tx = mdbx.begin_ro()?;
        crate::datadir::deferred_replay_pending(&dd, &tx, Some(&rocks))?
    };
    let (mdbx, rocks) = if replay_pending && !plan.resume {
        // A node stopped with a commit in flight, or RocksDB lost deferred commits (power
        // loss): settle them before moving any table, or stale rows would be moved.
        let hybrid = HybridDb::open(mdbx, rocks, datadir, HybridOptions::default())?;
        tracing::info!(action = ?hybrid.recovered().action, "recovered the commit in flight");
        let (m, r) = (hybrid.primary().clone(), hybrid.follower().clone());
        drop(hybrid);
        (m, r)
    } else {
        (mdbx, rocks)
    };
    let state = match MigrationState::read(&dd)? {
        Some(mut s) => {
            s.upgrade(&dd).map_err(|e| {
                step_failed(format!("writing {}", dd.state_file().display()), resume, e)
            })?;
            s
        }
        None => {
            let s = MigrationState::new(request.to, &tables, request.compact, plan.command.clone());
            s.write(&dd).map_err(|e| {
                step_failed(format!("writing {}", dd.state_file().display()), resume, e)
            })?;
            crash_point!("AfterStateWrite");
            s
        }
    };
    let mut run = Run {
        step: String::new(),
        dd,
        mdbx,
        rocks,
        state,
        request,
        progress,
    };
    let mut reports = Vec::new();
    for (idx, table_plan) in plan.tables.iter().enumerate() {
        let t0 = Instant::now();
        let moved = match request.to {
            EngineKind::RocksDb => run.move_to_rocksdb(idx),
            EngineKind::Mdbx => run.move_to_mdbx(idx),
        };
        let (digest, target_bytes) = moved.map_err(|e| {
            let step = format!("{} to {}: {}", table_plan.table, request.to, run.step);
            step_failed(step, resume, e)
        })?;
        reports.push(TableReport {
            table: table_plan.table,
            rows: digest.rows,
            checksum: digest.sum_hex(),
            source_bytes: table_plan.bytes,
            target_bytes,
            seconds: t0.elapsed().as_secs_f64(),
        });
    }
    let Run {
        dd,
        mdbx,
        rocks,
        mut state,
        ..
    } = run;
    drop(rocks);
    let compacted = if state.compact && !state.compacted {
        let sizes = compact_mdbx(mdbx, &dd, progress)
            .map_err(|e| step_failed("compacting mdbx.dat".into(), resume, e))?;
        state.compacted = true;
        state
            .write(&dd)
            .map_err(|e| step_failed("recording the compaction".into(), resume, e))?;
        Some(sizes)
    } else {
        drop(mdbx);
        None
    };
    crash_point!("BeforeStateRemove");
    let staging = dd.staging();
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .map_err(io(&staging))
            .map_err(|e| step_failed("removing the staging folder".into(), resume, e))?;
    }
    remove_durably(&dd.state_file())
        .map_err(|e| step_failed("removing the migration state".into(), resume, e))?;
    Ok(MigrateReport {
        plan,
        tables: reports,
        compacted,
        seconds: started.elapsed().as_secs_f64(),
    })
}

impl Run<'_> {
    fn table_state(&mut self, idx: usize) -> &mut crate::state::TableState {
        &mut self.state.tables[idx]
    }

    fn layout(&self) -> Result<Layout, MigrateError> {
        let tx = self.mdbx.begin_ro()?;
        Ok(effective_layout(&tx, Some(&self.rocks))?.0)
    }

    /// Records `table` in `engine` and, in the same MDBX transaction, runs `also`.
    fn switch_layout(
        &self,
        table: Tables,
        engine: EngineKind,
        also: impl FnOnce(&reth_hybrid_mdbx::MdbxTxMut) -> Result<(), MigrateError>,
    ) -> Result<(), MigrateError> {
        let mut layout = self.layout()?;
        layout.set(table, engine);
        let wtx = self.mdbx.begin_rw()?;
        also(&wtx)?;
        put_bytes(&wtx, LAYOUT_KEY, layout.to_json())?;
        // Dropping the transaction aborts it: a failed switch changes nothing.
        fault::inject(FaultPoint::Switch).map_err(io(&self.dd.mdbx_file()))?;
        wtx.commit()?;
        Ok(())
    }

    fn mdbx_digest(&self, table: Tables) -> Result<TableDigest, MigrateError> {
        let tx = self.mdbx.begin_ro()?;
        let total = tx.table_stat(table)?.entries;
        self.progress
            .begin(&format!("{table}: checksum in MDBX"), Some(total));
        let mut digest = TableDigest::default();
        let mut cursor = tx.cursor(table)?;
        let mut next = cursor.first()?;
        while let Some((k, v)) = next {
            digest.add(&k, &v);
            if digest.rows % 8192 == 0 {
                self.progress.advance(8192);
            }
            next = cursor.next()?;
        }
        self.progress.end();
        Ok(digest)
    }

    fn rocks_digest(&self, table: Tables) -> Result<TableDigest, MigrateError> {
        let total = self.rocks.table_size(table).estimated_rows;
        self.progress
            .begin(&format!("{table}: checksum in RocksDB"), Some(total));
        let mut digest = TableDigest::default();
        self.rocks.scan_table(table, None, |k, v| {
            digest.add(k, v);
            if digest.rows % 8192 == 0 {
                self.progress.advance(8192);
            }
            Ok(true)
        })?;
        self.progress.end();
        Ok(digest)
    }

    // ---- MDBX -> RocksDB ----

    fn move_to_rocksdb(&mut self, idx: usize) -> Result<(TableDigest, u64), MigrateError> {
        let table = self.state.tables[idx].table;
        let sst_bytes = |s: &crate::state::TableState| s.chunks.iter().map(|c| c.bytes).sum();
        if self.state.tables[idx].phase == Phase::Done {
            let d = self.state.tables[idx].copied();
            return Ok((d, sst_bytes(&self.state.tables[idx])));
        }
        if self.layout()?.engine_of(table) == EngineKind::RocksDb {
            // Interrupted right after the switch: the source was cleared in the same step.
            let tx = self.mdbx.begin_ro()?;
            if tx.table_stat(table)?.entries > 0 {
                return Err(self.bad_state(format!(
                    "{table} is recorded in RocksDB but MDBX still has rows"
                )));
            }
            let digest = self.rocks_digest(table)?;
            self.finish_table(idx)?;
            return Ok((digest, sst_bytes(&self.state.tables[idx])));
        }
        let dir = self.dd.staging().join(table.name());
        let copied = match self.copy_ingest_check(idx) {
            Err(e @ (MigrateError::VerifyFailed { .. } | MigrateError::MisplacedFiles { .. })) => {
                // What RocksDB serves is not what was copied: remove the copy, keep the source.
                // A crash between these steps leaves RocksDB empty with files recorded that
                // it consumed; the next run starts the table over (`copy_ingest_check`).
                self.rocks.clear_table(table)?;
                let st = self.table_state(idx);
                st.phase = Phase::Copying;
                st.chunks.clear();
                self.state.write(&self.dd)?;
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
            other => other?,
        };
        crash_point!("AfterVerify");
        self.progress.begin(
            &format!("{table}: switch (clear in MDBX, record the layout)"),
            None,
        );
        self.step = "switching (clearing MDBX's copy, recording the layout)".into();
        self.switch_layout(table, EngineKind::RocksDb, |wtx| Ok(wtx.clear(table)?))?;
        self.progress.end();
        crash_point!("AfterSwitch");
        self.finish_table(idx)?;
        Ok((copied, sst_bytes(&self.state.tables[idx])))
    }

    /// Copies the table into SST files, ingesting each into RocksDB as soon as it is written
    /// and recorded, while checker threads read each ingested file back and compare it with
    /// what was written. Then checks where the files landed, the source side, and that nothing
    /// lies past the last file. Returns the digest both sides agree on; `VerifyFailed` or
    /// `MisplacedFiles` when they do not.
    fn copy_ingest_check(&mut self, idx: usize) -> Result<TableDigest, MigrateError> {
        let table = self.state.tables[idx].table;
        let landed = self.landed_files(idx)?;
        let dir = self.dd.staging().join(table.name());
        let chunks = &self.state.tables[idx].chunks;
        if let Some(missing) = chunks[landed..]
            .iter()
            .map(|c| dir.join(&c.file))
            .find(|f| !f.exists())
        {
            if landed > 0 {
                return Err(self.bad_state(format!(
                    "SST file {} is missing and was not ingested into {table}",
                    missing.display()
                )));
            }
            // RocksDB holds none of the table, so the recorded files were consumed by an
            // ingestion that a failed verification then removed (a crash before the reset
            // was recorded): copy the table anew, the source is untouched.
            tracing::warn!(%table, missing = %missing.display(), "starting the table's copy over");
            let st = self.table_state(idx);
            st.phase = Phase::Copying;
            st.chunks.clear();
            self.step = "recording the table's fresh start".into();
            self.state.write(&self.dd)?;
        }
        let rocks = self.rocks.clone();
        let mut single_pass = false;
        std::thread::scope(|scope| -> Result<(), MigrateError> {
            let mut checker = FileChecker::spawn(scope, &rocks, table);
            // Files recorded by an interrupted run: ingest those RocksDB lacks, check those not
            // checked yet.
            for file in 0..self.state.tables[idx].chunks.len() {
                if file >= landed {
                    self.ingest_file(idx, file)?;
                }
                if !self.state.tables[idx].chunks[file].verified {
                    checker.queue(self.file_range(idx, file)?);
                }
                let ready = checker.ready();
                self.record_checks(idx, ready)?;
            }
            if self.state.tables[idx].phase == Phase::Copying {
                single_pass = self.copy_to_sst(idx, &mut checker)?;
                self.table_state(idx).phase = Phase::Written;
            }
            self.step = "reading the last SST files back from RocksDB".into();
            self.progress
                .begin(&format!("{table}: reading back the last SST files"), None);
            let checked = checker.finish();
            self.progress.end();
            self.record_checks(idx, checked)
        })?;
        self.step = "recording the checked files".into();
        self.state.write(&self.dd)?;

        self.step = "verifying both copies".into();
        let state = &self.state.tables[idx];
        let copied = state.copied();
        if let Some(unchecked) = state.chunks.iter().find(|c| !c.verified) {
            return Err(self.bad_state(format!(
                "SST file {} of {table} was not read back",
                unchecked.file
            )));
        }
        self.check_file_placement(idx)?;
        // Rows past the last file (there should be none; the first file's range is unbounded
        // below, so every row before it was counted).
        let last = match state.chunks.last() {
            Some(c) => Some(self.decode_key(&c.last_stored_key)?),
            None => None,
        };
        let mut extra = TableDigest::default();
        self.rocks
            .scan_range(table, last.as_deref(), None, |k, v| {
                extra.add(k, v);
                Ok(true)
            })?;
        // The source side: the copy's own checksum when the whole table was read in this run's
        // one transaction (we hold the storage lock, so nothing changed since); after an
        // interruption the source may have been opened in between, so it is read again.
        let source = if single_pass {
            let entries = self.mdbx.begin_ro()?.table_stat(table)?.entries;
            if entries != copied.rows {
                return Err(self.bad_state(format!(
                    "{table} has {entries} rows in MDBX but {} were copied",
                    copied.rows
                )));
            }
            copied
        } else {
            self.mdbx_digest(table)?
        };
        let mut target = copied;
        target.merge(&extra);
        if source != target {
            return Err(MigrateError::VerifyFailed {
                table,
                source_rows: source.rows,
                source_sum: source.sum_hex(),
                target_rows: target.rows,
                target_sum: target.sum_hex(),
            });
        }
        Ok(source)
    }

    /// How many of the table's recorded files RocksDB holds: files are ingested in key order,
    /// so its last row is the last row of the last file that landed.
    fn landed_files(&self, idx: usize) -> Result<usize, MigrateError> {
        let table = self.state.tables[idx].table;
        let Some(last) = self.rocks.last_stored_key(table)? else {
            return Ok(0);
        };
        let wanted = hex::encode(&last);
        self.state.tables[idx]
            .chunks
            .iter()
            .position(|c| c.last_stored_key == wanted)
            .map(|i| i + 1)
            .ok_or_else(|| {
                self.bad_state(format!(
                    "{table} has rows in RocksDB (up to key {wanted}) that no recorded SST file \
                     ends with"
                ))
            })
    }

    /// Where RocksDB placed the ingested files: they must not overlap, and each must lie inside
    /// the key ranges of the recorded files it stands for (one, or consecutive ones had RocksDB
    /// merged them), with as many rows and no deletions. A file whose rows were read back can
    /// still be overlapped by a later one (a staged file changed on disk) that would shadow or
    /// add rows in an already-read range; this catches it from the files' metadata.
    fn check_file_placement(&self, idx: usize) -> Result<(), MigrateError> {
        let table = self.state.tables[idx].table;
        let misplaced = |reason: String| MigrateError::MisplacedFiles { table, reason };
        let chunks = &self.state.tables[idx].chunks;
        let lasts = chunks
            .iter()
            .map(|c| self.decode_key(&c.last_stored_key))
            .collect::<Result<Vec<_>, _>>()?;
        let mut files = self.rocks.sst_files(table)?;
        files.sort_by(|a, b| a.start.cmp(&b.start));
        let mut next_chunk = 0;
        for f in &files {
            if f.deletions > 0 {
                return Err(misplaced(format!("SST file {} holds deletions", f.name)));
            }
            let first = next_chunk;
            let Some(end) = lasts[first..].iter().position(|l| *l == f.end) else {
                return Err(misplaced(format!(
                    "SST file {} ends at a key no recorded file ends at (or overlaps another)",
                    f.name
                )));
            };
            let end = first + end;
            if first > 0 && f.start <= lasts[first - 1] {
                return Err(misplaced(format!(
                    "SST file {} starts inside the range of recorded file {}",
                    f.name,
                    chunks[first - 1].file
                )));
            }
            let rows: u64 = chunks[first..=end].iter().map(|c| c.digest.rows).sum();
            if f.entries != rows {
                return Err(misplaced(format!(
                    "SST file {} holds {} rows where the recorded files held {rows}",
                    f.name, f.entries
                )));
            }
            next_chunk = end + 1;
        }
        if next_chunk != chunks.len() {
            return Err(misplaced(format!(
                "RocksDB holds {} SST files for {} recorded ones",
                files.len(),
                chunks.len()
            )));
        }
        Ok(())
    }

    fn ingest_file(&mut self, idx: usize, file: usize) -> Result<(), MigrateError> {
        let table = self.state.tables[idx].table;
        let dir = self.dd.staging().join(table.name());
        let path = dir.join(&self.state.tables[idx].chunks[file].file);
        if !path.exists() {
            return Err(self.bad_state(format!(
                "SST file {} is missing and was not ingested into {table}",
                path.display()
            )));
        }
        self.step = format!("ingesting SST file {} into RocksDB", path.display());
        fault::inject(FaultPoint::Ingest).map_err(io(&dir))?;
        self.rocks.ingest_sst_files(table, &[path])?;
        fault::inject(FaultPoint::IngestLanded).map_err(io(&dir))?;
        crash_point!("AfterIngest");
        Ok(())
    }

    /// The stored keys of recorded file `file`: after the previous file's last, up to its own.
    fn file_range(&self, idx: usize, file: usize) -> Result<FileRange, MigrateError> {
        let chunks = &self.state.tables[idx].chunks;
        let after = match file.checked_sub(1) {
            Some(prev) => Some(self.decode_key(&chunks[prev].last_stored_key)?),
            None => None,
        };
        let mut ends = chunks[file]
            .split_keys
            .iter()
            .map(|k| self.decode_key(k))
            .collect::<Result<Vec<_>, _>>()?;
        ends.push(self.decode_key(&chunks[file].last_stored_key)?);
        // Parts must follow each other inside the file's range, or rows would be counted twice.
        let mut previous = after.as_deref();
        for end in &ends {
            if previous.is_some_and(|p| end.as_slice() < p) {
                return Err(self.bad_state(format!(
                    "the split keys of SST file {} are out of order",
                    chunks[file].file
                )));
            }
            previous = Some(end);
        }
        Ok(FileRange { file, after, ends })
    }

    fn decode_key(&self, hex_key: &str) -> Result<Vec<u8>, MigrateError> {
        hex::decode(hex_key).map_err(|e| self.bad_state(format!("bad stored key {hex_key}: {e}")))
    }

    /// Marks the files whose rows RocksDB served as written (persisted with the next state
    /// write); a file that reads back differently fails the table's verification.
    fn record_checks(&mut self, idx: usize, checked: Vec<Checked>) -> Result<(), MigrateError> {
        let table = self.state.tables[idx].table;
        for (file, digest) in checked {
            let digest = digest?;
            let chunk = &mut self.state.tables[idx].chunks[file];
            if digest != chunk.digest {
                return Err(MigrateError::VerifyFailed {
                    table,
                    source_rows: chunk.digest.rows,
                    source_sum: chunk.digest.sum_hex(),
                    target_rows: digest.rows,
                    target_sum: digest.sum_hex(),
                });
            }
            chunk.verified = true;
        }
        Ok(())
    }

    fn finish_table(&mut self, idx: usize) -> Result<(), MigrateError> {
        let table = self.state.tables[idx].table;
        self.table_state(idx).phase = Phase::Done;
        self.step = "recording the finished table".into();
        self.state.write(&self.dd)?;
        let dir = self.dd.staging().join(table.name());
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        Ok(())
    }

    fn bad_state(&self, reason: String) -> MigrateError {
        MigrateError::BadState {
            path: self.dd.state_file(),
            reason,
        }
    }

    /// Streams the table from MDBX into SST files, resuming after the last recorded file; each
    /// file is recorded, ingested and queued for `checker`. Returns whether the whole table was
    /// copied in this one pass (one read transaction).
    fn copy_to_sst(&mut self, idx: usize, checker: &mut FileChecker) -> Result<bool, MigrateError> {
        let table = self.state.tables[idx].table;
        let dir = self.dd.staging().join(table.name());
        self.step = format!("preparing {}", dir.display());
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        sync_parent(&dir)?;
        // Files of an interrupted run that were never recorded are partial: remove them.
        let recorded: Vec<String> = self.state.tables[idx]
            .chunks
            .iter()
            .map(|c| c.file.clone())
            .collect();
        for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
            let entry = entry.map_err(io(&dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !recorded.contains(&name) {
                std::fs::remove_file(entry.path()).map_err(io(&entry.path()))?;
            }
        }
        let tx = self.mdbx.begin_ro()?;
        let total = tx.table_stat(table)?.entries;
        let done_rows: u64 = self.state.tables[idx]
            .chunks
            .iter()
            .map(|c| c.digest.rows)
            .sum();
        self.progress.begin(
            &format!("{table}: MDBX -> SST files -> RocksDB, each file read back"),
            Some(total),
        );
        self.progress.advance(done_rows);
        let mut cursor = tx.cursor(table)?;
        let resume_after = match self.state.tables[idx].chunks.last() {
            Some(chunk) => Some(self.decode_key(&chunk.last_stored_key)?),
            None => None,
        };
        let first = copy_feed::position(&mut cursor, table, resume_after.as_deref())?;
        let target = self.request.sst_file_bytes.max(1);
        let single_pass = self.state.tables[idx].chunks.is_empty();
        let dupsort = table.dupsort_key_len().is_some();
        std::thread::scope(|scope| -> Result<(), MigrateError> {
            let mut feed = copy_feed::spawn_reader(scope, cursor, first);
            while feed.current()?.is_some() {
                let file = format!("{:06}.sst", self.state.tables[idx].chunks.len());
                let path = dir.join(&file);
                self.step = format!("writing SST file {}", path.display());
                let mut digest = TableDigest::default();
                let (mut last_key, mut split_keys) = (Vec::new(), Vec::new());
                let part_bytes = (target / FILE_PARTS).max(1);
                let progress = self.progress;
                let written = self.rocks.write_sst_file(table, &path, |sink| {
                    while let Some(row) = feed.current()? {
                        sink.put(row.key, row.value)?;
                        if digest.rows == 0 {
                            // A fault after the file's first row leaves it half-written.
                            fault::inject(FaultPoint::SstWrite).map_err(|e| {
                                reth_hybrid_api::DatabaseError::Custom(std::sync::Arc::new(e))
                            })?;
                        }
                        digest.add_hash(row.hash);
                        last_key.clear();
                        last_key.extend_from_slice(row.key);
                        if dupsort {
                            last_key.extend_from_slice(row.value);
                        }
                        if digest.rows % 8192 == 0 {
                            progress.advance(8192);
                        }
                        feed.advance();
                        let bytes = sink.file_bytes();
                        if bytes >= target {
                            break;
                        }
                        if bytes >= part_bytes * (split_keys.len() as u64 + 1) {
                            split_keys.push(hex::encode(&last_key));
                        }
                    }
                    Ok(())
                })?;
                progress.advance(digest.rows % 8192);
                crash_point!("CopyAfterSstFile");
                let Some(sst) = written else { break };
                self.table_state(idx).chunks.push(SstChunk {
                    file,
                    bytes: sst.bytes,
                    digest,
                    last_stored_key: hex::encode(&last_key),
                    split_keys,
                    verified: false,
                });
                self.step = format!("recording SST file {}", path.display());
                self.state.write(&self.dd)?;
                crash_point!("CopyAfterCheckpoint");
                let recorded = self.state.tables[idx].chunks.len() - 1;
                self.ingest_file(idx, recorded)?;
                checker.queue(self.file_range(idx, recorded)?);
                let ready = checker.ready();
                self.record_checks(idx, ready)?;
            }
            Ok(())
        })?;
        self.progress.end();
        Ok(single_pass)
    }

    // ---- RocksDB -> MDBX ----

    fn rollback_progress(&self, table: Tables) -> Result<Option<RollbackProgress>, MigrateError> {
        let tx = self.mdbx.begin_ro()?;
        get_bytes(&tx, &rollback_key(table))?
            .map(|b| {
                serde_json::from_slice(&b)
                    .map_err(|e| self.bad_state(format!("unreadable rollback position: {e}")))
            })
            .transpose()
    }

    fn move_to_mdbx(&mut self, idx: usize) -> Result<(TableDigest, u64), MigrateError> {
        let table = self.state.tables[idx].table;
        let mdbx_bytes = |run: &Self| -> Result<u64, MigrateError> {
            Ok(run.mdbx.begin_ro()?.table_stat(table)?.bytes())
        };
        if self.state.tables[idx].phase == Phase::Done {
            let d = self.mdbx_digest(table)?;
            return Ok((d, mdbx_bytes(self)?));
        }
        let progress = self.rollback_progress(table)?;
        if self.layout()?.engine_of(table) == EngineKind::Mdbx {
            // Switched already: finish removing RocksDB's copy.
            match progress {
                Some(p) if p.clearing => self.clear_rocks_copy(table)?,
                _ if self.rocks.table_has_rows(table)? => {
                    return Err(self.bad_state(format!(
                        "{table} is recorded in MDBX but RocksDB still has rows"
                    )));
                }
                _ => {}
            }
            let d = self.mdbx_digest(table)?;
            self.table_state(idx).phase = Phase::Done;
            self.step = "recording the finished table".into();
            self.state.write(&self.dd)?;
            return Ok((d, mdbx_bytes(self)?));
        }
        let mut position = match progress {
            Some(p) => p,
            None => {
                let tx = self.mdbx.begin_ro()?;
                if crate::datadir::mdbx_has_rows(&tx, table)? {
                    return Err(MigrateError::RowsInTarget {
                        table,
                        engine: EngineKind::Mdbx,
                    });
                }
                RollbackProgress::default()
            }
        };
        if !position.clearing {
            self.copy_to_mdbx(table, &mut position)?;
        }
        self.step = "verifying both copies".into();
        let source = self.rocks_digest(table)?;
        let target = self.mdbx_digest(table)?;
        if source != target || position.digest != source {
            let wtx = self.mdbx.begin_rw()?;
            wtx.clear(table)?;
            wtx.delete(Tables::Metadata, rollback_key(table).as_bytes(), None)?;
            wtx.commit()?;
            return Err(MigrateError::VerifyFailed {
                table,
                source_rows: source.rows,
                source_sum: source.sum_hex(),
                target_rows: target.rows,
                target_sum: target.sum_hex(),
            });
        }
        position.clearing = true;
        self.step = "switching (recording the layout)".into();
        self.switch_layout(table, EngineKind::Mdbx, |wtx| {
            put_bytes(
                wtx,
                &rollback_key(table),
                serde_json::to_vec(&position).expect("serializes"),
            )?;
            Ok(())
        })?;
        crash_point!("RollbackAfterSwitch");
        self.clear_rocks_copy(table)?;
        self.table_state(idx).phase = Phase::Done;
        self.step = "recording the finished table".into();
        self.state.write(&self.dd)?;
        Ok((target, mdbx_bytes(self)?))
    }

    fn clear_rocks_copy(&mut self, table: Tables) -> Result<(), MigrateError> {
        self.step = "removing RocksDB's copy".into();
        self.progress
            .begin(&format!("{table}: removing RocksDB's copy"), None);
        self.rocks.clear_table(table)?;
        self.progress.end();
        crash_point!("RollbackAfterClear");
        let wtx = self.mdbx.begin_rw()?;
        wtx.delete(Tables::Metadata, rollback_key(table).as_bytes(), None)?;
        wtx.commit()?;
        Ok(())
    }

    /// Copies rows from RocksDB into MDBX in batches, each committed with its position.
    fn copy_to_mdbx(
        &mut self,
        table: Tables,
        position: &mut RollbackProgress,
    ) -> Result<(), MigrateError> {
        self.step = "copying a batch of rows into MDBX".into();
        let total = self.rocks.table_size(table).estimated_rows;
        self.progress
            .begin(&format!("{table}: RocksDB -> MDBX"), Some(total));
        self.progress.advance(position.digest.rows);
        let batch = self.request.batch_rows.max(1);
        loop {
            let after = position
                .after
                .as_deref()
                .map(hex::decode)
                .transpose()
                .map_err(|e| self.bad_state(format!("bad rollback position: {e}")))?;
            let wtx = self.mdbx.begin_rw()?;
            let (mut n, mut exhausted) = (0u64, true);
            let mut last = None;
            self.rocks.scan_table(table, after.as_deref(), |k, v| {
                wtx.append(table, k, v)?;
                position.digest.add(k, v);
                n += 1;
                if n >= batch {
                    last = Some(RocksEngine::stored_key(table, k, v));
                    exhausted = false;
                    return Ok(false);
                }
                last = Some(RocksEngine::stored_key(table, k, v));
                Ok(true)
            })?;
            if let Some(last) = last {
                position.after = Some(hex::encode(last));
            }
            put_bytes(
                &wtx,
                &rollback_key(table),
                serde_json::to_vec(&*position).expect("serializes"),
            )?;
            // Dropping the transaction aborts the batch with its position.
            fault::inject(FaultPoint::RollbackBatch).map_err(io(&self.dd.mdbx_file()))?;
            wtx.commit()?;
            self.progress.advance(n);
            crash_point!("RollbackAfterBatch");
            if exhausted {
                break;
            }
        }
        self.progress.end();
        Ok(())
    }
}

/// Bytes a file occupies on disk. `mdbx.dat` is sparse beyond its last page (its apparent
/// length follows the geometry), so blocks, not length, tell what compaction returned.
fn allocated_bytes(path: &Path) -> Result<u64, MigrateError> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata(path).map_err(io(path))?.blocks() * 512)
}

/// Rewrites `mdbx.dat` without its free pages; returns its bytes on disk before and after. Takes the
/// engine to close it: the file is replaced while no environment has it open.
fn compact_mdbx(
    mdbx: MdbxEngine,
    dd: &Datadir,
    progress: &dyn Progress,
) -> Result<(u64, u64), MigrateError> {
    let db_dir = dd.root.join("db");
    let file = dd.mdbx_file();
    let tmp = db_dir.join("mdbx.dat.compacting");
    let before = allocated_bytes(&file)?;
    let _ = std::fs::remove_file(&tmp);
    // The copy's size is rounded up to the environment's growth step and preallocated; with
    // reth's 4 GiB step a small datadir would grow. Copy from an environment opened with a
    // small step; reth applies its own geometry again when it opens the datadir.
    drop(mdbx);
    let mdbx = MdbxEngine::open(
        &dd.root,
        MdbxOptions::read_write().with_geometry(Geometry {
            max_size_bytes: Geometry::RETH.max_size_bytes,
            growth_step_bytes: 1 << 20,
        }),
    )?;
    progress.begin("MDBX: writing a compacted copy", None);
    if let Err(e) = fault::inject(FaultPoint::CompactCopy) {
        // As a full disk would: a partial copy is left behind.
        std::fs::write(&tmp, [0u8; 4096]).map_err(io(&tmp))?;
        return Err(io(&tmp)(e));
    }
    mdbx.copy_compacted(&tmp)?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(io(&tmp))?;
    progress.end();
    crash_point!("CompactAfterCopy");
    let compacted = allocated_bytes(&tmp)?;
    if compacted >= before {
        // Nothing to return (a small or already dense file): keep the original.
        std::fs::remove_file(&tmp).map_err(io(&tmp))?;
        return Ok((before, before));
    }
    // ORDER: close the environment (releasing its lock), take the storage lock again at once so
    // no node can open the datadir, then replace the file atomically.
    drop(mdbx);
    let lock = StorageLock::acquire(&db_dir)?;
    std::fs::rename(&tmp, &file).map_err(io(&file))?;
    sync_parent(&file)?;
    crash_point!("CompactAfterRename");
    drop(lock);
    let after = allocated_bytes(&file)?;
    Ok((before, after))
}

/// Wraps the failure of a step that touches the disk (a full disk, a file-size limit, an I/O
/// error) with what was being done and how to go on. Errors that already say what to do (a
/// failed verification, an inconsistent state, a refusal) pass unchanged.
fn step_failed(step: String, resume: &str, source: MigrateError) -> MigrateError {
    if !matches!(
        source,
        MigrateError::Io { .. }
            | MigrateError::Mdbx(_)
            | MigrateError::Rocks(_)
            | MigrateError::Database(_)
    ) {
        return source;
    }
    let (cause, fix) = classify(&source);
    MigrateError::StepFailed {
        step,
        cause,
        fix,
        resume: resume.to_string(),
        source: Box::new(source),
    }
}

/// What an operator can do about the errno at the bottom of `error`, found through `source()`
/// and through the engine errors kept inside `DatabaseError` (RocksDB reports errno as text).
fn classify(error: &(dyn std::error::Error + 'static)) -> (&'static str, &'static str) {
    const NO_SPACE: (&str, &str) = (
        "no space left on device",
        "Free disk space (or move the datadir to a larger disk)",
    );
    const TOO_LARGE: (&str, &str) = (
        "file too large: the file-size limit (`ulimit -f`) was reached",
        "Raise the limit (`ulimit -f unlimited`)",
    );
    const EIO: (&str, &str) = (
        "I/O error reported by the disk",
        "Check the disk and its filesystem (`dmesg`, SMART) before going on",
    );
    let by_errno = |errno: i32| match errno {
        libc::ENOSPC | libc::EDQUOT => Some(NO_SPACE),
        libc::EFBIG => Some(TOO_LARGE),
        libc::EIO => Some(EIO),
        _ => None,
    };
    let mut stack: Vec<&(dyn std::error::Error + 'static)> = vec![error];
    while let Some(e) = stack.pop() {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && let Some(found) = io.raw_os_error().and_then(by_errno)
        {
            return found;
        }
        // `#[error(transparent)]` skips the wrapped error itself in `source()`.
        if let Some(MigrateError::Database(db)) = e.downcast_ref::<MigrateError>() {
            stack.push(db);
        }
        if let Some(db) = e.downcast_ref::<reth_hybrid_api::DatabaseError>() {
            if let Some(found) = db.code().filter(|c| *c > 0).and_then(by_errno) {
                return found;
            }
            if let Some(inner) = database_error_source(db) {
                stack.push(inner);
            }
        }
        let text = e.to_string();
        for (needle, found) in [
            ("No space left on device", NO_SPACE),
            ("Disk quota exceeded", NO_SPACE),
            ("File too large", TOO_LARGE),
            ("Input/output error", EIO),
        ] {
            if text.contains(needle) {
                return found;
            }
        }
        if let Some(next) = e.source() {
            stack.push(next);
        }
    }
    ("see the cause below", "Fix the cause below")
}

/// The engine error a `DatabaseError` keeps (not reachable through `source()` for every variant).
fn database_error_source(
    e: &reth_hybrid_api::DatabaseError,
) -> Option<&(dyn std::error::Error + 'static)> {
    use reth_hybrid_api::DatabaseError as D;
    let info = match e {
        D::Open(i)
        | D::CreateTable(i)
        | D::Read(i)
        | D::Delete(i)
        | D::Commit(i)
        | D::InitTx(i)
        | D::InitCursor(i)
        | D::Stats(i) => i,
        D::Write(w) => &w.info,
        D::Custom(inner) => return Some(inner.as_ref()),
        _ => return None,
    };
    info.source
        .as_deref()
        .map(|e| e as &(dyn std::error::Error + 'static))
}
