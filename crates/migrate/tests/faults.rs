//! Faults, not just kills: a migration step that fails with EIO or ENOSPC (injected at each
//! fault point, or real: a file-size limit, a full tmpfs) returns an error naming the step and
//! the fix, leaves every table readable from one complete copy and the state file readable,
//! and a rerun without the fault ends with the same rows, in the same engines, as a migration
//! that was never interrupted.

mod common;

use common::{Rows, all_rows, copy_tree, counts, files, generated};
use reth_hybrid_api::{EngineKind, Tables, raw::RawCursor, raw::RawEngine, raw::RawTx};
use reth_hybrid_hybrid::{HybridDb, HybridError, HybridOptions, layout::CONTROL_KEY_PREFIX};
use reth_hybrid_mdbx::{MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{
    MigrateError, MigrateRequest, NoProgress,
    datadir::{Datadir, effective_layout, recorded_layout},
    fault::{self, FaultPoint},
    migrate,
    state::MigrationState,
    verify::{Outcome, verify},
};
use reth_hybrid_rocksdb::{HYBRID_ROCKSDB_DIR, RocksEngine};
use std::{
    os::unix::process::ExitStatusExt,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

/// Small SST files, so the copy crosses file boundaries; `--compact` for the compaction's fault.
fn request(to: EngineKind) -> MigrateRequest {
    let mut r = MigrateRequest::new(to);
    // The disk these tests run on is shared: its free space is not theirs to depend on (a nearly
    // full disk made the free-space preflight refuse before a fault point was reached). The
    // preflight's own refusals are tested on a tmpfs below and in `preflight.rs`.
    r.assume_free_bytes = Some(1 << 40);
    r.sst_file_bytes = 8 << 10;
    r.batch_rows = 300;
    r.compact = to == EngineKind::RocksDb;
    r
}

/// [`request`] with the preflight measuring the disk's free space (the tiny-disk test's tmpfs).
fn measuring_disk(to: EngineKind) -> MigrateRequest {
    let mut r = request(to);
    r.assume_free_bytes = None;
    r
}

/// What a finished migration leaves: every row, where each table's rows are, the layout.
#[derive(Debug, PartialEq)]
struct Ended {
    rows: Rows,
    placement: Vec<(Tables, usize, usize)>,
    layout: String,
}

fn outcome(d: &Path) -> Ended {
    let mdbx = MdbxEngine::open_read_only(d).expect("mdbx");
    let layout = recorded_layout(&mdbx.begin_ro().expect("ro"))
        .expect("layout readable")
        .map(|l| String::from_utf8(l.to_json()).expect("utf8"))
        .unwrap_or_default();
    drop(mdbx);
    Ended {
        rows: all_rows(d),
        placement: Tables::ALL
            .into_iter()
            .map(|t| {
                let (m, r) = counts(d, t);
                (t, m, r)
            })
            .collect(),
        layout,
    }
}

/// A generated datadir and what an uninterrupted migration of a copy of it ends with.
struct Case {
    template: tempfile::TempDir,
    original: Rows,
    forward: Ended,
    /// The template after the forward migration (start of the rollback cases).
    migrated: tempfile::TempDir,
    back: Ended,
}

fn case(seed: u64) -> Case {
    case_at_scale(2, seed)
}

fn case_at_scale(scale: u64, seed: u64) -> Case {
    let template = generated(scale, seed);
    let original = all_rows(template.path());
    let migrated = tempfile::tempdir().expect("tmp");
    copy_tree(template.path(), migrated.path());
    migrate(migrated.path(), &request(EngineKind::RocksDb), &NoProgress).expect("reference");
    let forward = outcome(migrated.path());
    assert!(
        forward.rows == original,
        "the reference migration lost rows"
    );
    let back_dir = tempfile::tempdir().expect("tmp");
    copy_tree(migrated.path(), back_dir.path());
    migrate(back_dir.path(), &request(EngineKind::Mdbx), &NoProgress).expect("reference back");
    let back = outcome(back_dir.path());
    Case {
        template,
        original,
        forward,
        migrated,
        back,
    }
}

/// Every user row as the hybrid would read it: each table from the engine the layout names.
fn rows_by_layout(d: &Path) -> Rows {
    let mdbx = MdbxEngine::open_read_only(d).expect("mdbx");
    let tx = mdbx.begin_ro().expect("ro");
    let rocks_path = d.join(HYBRID_ROCKSDB_DIR);
    let rocks = reth_hybrid_rocksdb::is_initialized(&rocks_path)
        .then(|| RocksEngine::open_read_only(&rocks_path).expect("rocksdb"));
    let (layout, _) = effective_layout(&tx, rocks.as_ref()).expect("layout");
    let mut out = Rows::new();
    for table in Tables::ALL {
        let mut rows = Vec::new();
        match layout.engine_of(table) {
            EngineKind::Mdbx => {
                if tx.table_stat(table).expect("stat").entries > 0 {
                    let mut c = tx.cursor(table).expect("cursor");
                    let mut next = c.first().expect("first");
                    while let Some(row) = next {
                        rows.push(row);
                        next = c.next().expect("next");
                    }
                }
            }
            EngineKind::RocksDb => {
                if let Some(r) = &rocks {
                    r.scan_table(table, None, |k, v| {
                        rows.push((k.to_vec(), v.to_vec()));
                        Ok(true)
                    })
                    .expect("scan");
                }
            }
        }
        rows.retain(|(k, _)| {
            !(table == Tables::Metadata && k.starts_with(CONTROL_KEY_PREFIX.as_bytes()))
        });
        rows.sort();
        out.insert(table, rows);
    }
    out
}

/// After a failed step: the state file reads, every table reads whole from the engine its
/// layout names (the source untouched until its switch), `verify` finds nothing but the
/// migration in progress (and, before a switch, the copy in the other engine), and the hybrid
/// refuses the datadir as mid-migration rather than as corrupt.
fn assert_consistent(d: &Path, original: &Rows, what: &str) {
    let state = MigrationState::read(&Datadir::new(d))
        .unwrap_or_else(|e| panic!("{what}: the state file is torn: {e}"));
    assert!(
        rows_by_layout(d) == *original,
        "{what}: a table no longer reads whole from the engine its layout names"
    );
    let report = verify(d, &NoProgress).expect("verify runs");
    let failed: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| c.outcome == Outcome::Fail)
        .map(|c| c.name)
        .collect();
    assert!(
        failed
            .iter()
            .all(|c| ["migration", "placement"].contains(c)),
        "{what}: {:#?}",
        report.checks
    );
    assert_eq!(failed.contains(&"migration"), state.is_some(), "{what}");
    if state.is_some() {
        let mdbx = MdbxEngine::open(d, MdbxOptions::read_write()).expect("mdbx");
        let rocks = RocksEngine::open_in_datadir(d).expect("rocksdb");
        let opened = HybridDb::open(mdbx, rocks, d, HybridOptions::default());
        assert!(
            matches!(opened, Err(HybridError::MigrationInProgress { .. })),
            "{what}: the hybrid must refuse a datadir mid-migration"
        );
    }
}

/// After the resumed run: the same rows, in the same engines, with the same layout as the
/// uninterrupted migration, `verify` passes and nothing of the migration is left behind.
fn assert_same_as_uninterrupted(d: &Path, expected: &Ended, what: &str) {
    let got = outcome(d);
    assert!(got.rows == expected.rows, "{what}: rows differ");
    assert_eq!(got.placement, expected.placement, "{what}");
    assert_eq!(got.layout, expected.layout, "{what}");
    let report = verify(d, &NoProgress).expect("verify runs");
    assert!(report.passed(), "{what}: {:#?}", report.checks);
    let dd = Datadir::new(d);
    for leftover in [
        dd.state_file(),
        dd.state_file().with_extension("tmp"),
        dd.staging(),
        d.join("db/mdbx.dat.compacting"),
    ] {
        assert!(!leftover.exists(), "{what}: {} left", leftover.display());
    }
}

/// The error chain as the CLI prints it.
fn chain(e: &MigrateError) -> String {
    let mut out = e.to_string();
    let mut next = std::error::Error::source(e);
    while let Some(s) = next {
        out.push_str(&format!("\n  caused by: {s}"));
        next = s.source();
    }
    out
}

/// Injects `errno` at the `nth` arrival at `point` of a migration toward `to`, checks the
/// failure and the datadir, resumes, and compares with the uninterrupted migration.
fn fault_then_resume(c: &Case, to: EngineKind, point: FaultPoint, nth: u64, errno: i32) {
    let what = format!("{point:?}:{nth} {to} errno {errno}");
    let work = tempfile::tempdir().expect("tmp");
    let d = work.path();
    let (start, expected) = match to {
        EngineKind::RocksDb => (c.template.path(), &c.forward),
        EngineKind::Mdbx => (c.migrated.path(), &c.back),
    };
    copy_tree(start, d);
    let err = {
        let _armed = fault::arm(point, nth, errno);
        let result = migrate(d, &request(to), &NoProgress);
        assert!(
            fault::fired(),
            "{what}: the fault point was not reached: {:?}",
            result.as_ref().map_err(chain)
        );
        result.expect_err("the injected fault must fail the migration")
    };
    let msg = err.to_string();
    let (cause, fix) = match errno {
        libc::ENOSPC => ("no space left on device", "Free disk space"),
        _ => ("I/O error", "Check the disk"),
    };
    assert!(
        matches!(err, MigrateError::StepFailed { .. })
            && msg.contains(cause)
            && msg.contains(fix)
            && msg.contains("run the same command again to resume: reth-hybrid migrate"),
        "{what}: the error must name the step, the cause and the fix: {}",
        chain(&err)
    );
    assert_consistent(d, &c.original, &what);
    migrate(d, &request(to), &NoProgress).unwrap_or_else(|e| panic!("{what}: resume: {e}"));
    assert_same_as_uninterrupted(d, expected, &what);
}

/// Each point with both errnos; `nths` picks arrivals (the first state write is the plan's).
fn each_errno(to: EngineKind, point: FaultPoint, nths: &[u64], seed: u64) {
    let c = case(seed);
    for &nth in nths {
        for errno in [libc::EIO, libc::ENOSPC] {
            fault_then_resume(&c, to, point, nth, errno);
        }
    }
}

#[test]
fn sst_write_fault_fails_cleanly_and_resumes_identical() {
    each_errno(EngineKind::RocksDb, FaultPoint::SstWrite, &[1, 5], 31);
}

/// How often a whole migration toward `to` reaches `point`.
fn arrivals(c: &Case, to: EngineKind, point: FaultPoint) -> u64 {
    let work = tempfile::tempdir().expect("tmp");
    let start = match to {
        EngineKind::RocksDb => c.template.path(),
        EngineKind::Mdbx => c.migrated.path(),
    };
    copy_tree(start, work.path());
    let _counting = fault::arm(point, u64::MAX, libc::EIO);
    migrate(work.path(), &request(to), &NoProgress).expect("counting run");
    fault::arrivals()
}

#[test]
fn state_write_fault_fails_cleanly_and_resumes_identical() {
    let c = case(32);
    for to in [EngineKind::RocksDb, EngineKind::Mdbx] {
        // The plan itself, the first SST file's record (forward), the middle, the last two
        // (the last table's record, and forward the compaction's).
        let n = arrivals(&c, to, FaultPoint::StateWrite);
        assert!(n >= 4, "{to}: {n} state writes");
        for nth in [1, 2, n / 2, n - 1, n] {
            for errno in [libc::EIO, libc::ENOSPC] {
                fault_then_resume(&c, to, FaultPoint::StateWrite, nth, errno);
            }
        }
    }
}

#[test]
fn ingest_fault_fails_cleanly_and_resumes_identical() {
    each_errno(EngineKind::RocksDb, FaultPoint::Ingest, &[1, 2], 33);
    // The ingestion landed, but the call failed: the rerun verifies instead of ingesting.
    each_errno(EngineKind::RocksDb, FaultPoint::IngestLanded, &[1, 3], 33);
}

#[test]
fn switch_fault_fails_cleanly_and_resumes_identical() {
    each_errno(EngineKind::RocksDb, FaultPoint::Switch, &[1, 2], 34);
    each_errno(EngineKind::Mdbx, FaultPoint::Switch, &[1], 34);
}

#[test]
fn rollback_batch_fault_fails_cleanly_and_resumes_identical() {
    each_errno(EngineKind::Mdbx, FaultPoint::RollbackBatch, &[1, 4], 35);
}

#[test]
fn compaction_fault_fails_cleanly_and_resumes_identical() {
    each_errno(EngineKind::RocksDb, FaultPoint::CompactCopy, &[1], 36);
}

/// A copy of `c`'s template whose migration toward RocksDB stopped at the `nth` ingestion
/// (files before it ingested, that file recorded and staged).
fn stopped_at_ingestion(c: &Case, nth: u64) -> tempfile::TempDir {
    let work = tempfile::tempdir().expect("tmp");
    copy_tree(c.template.path(), work.path());
    let _armed = fault::arm(FaultPoint::Ingest, nth, libc::EIO);
    migrate(work.path(), &request(EngineKind::RocksDb), &NoProgress).expect_err("ingestion fault");
    work
}

/// A staged SST file that no longer holds what the copy wrote into it (changed on disk after it
/// was recorded, before it was ingested) is caught when RocksDB serves its rows back: the
/// migration fails with `VerifyFailed`, removes RocksDB's copy and the staged files, leaves the
/// source whole, and a rerun migrates as if nothing had happened.
#[test]
fn a_changed_sst_file_fails_verification_and_a_rerun_recovers() {
    let c = case(37);
    // The first file is written and recorded; its ingestion fails before landing.
    let work = stopped_at_ingestion(&c, 1);
    let d = work.path();
    let dd = Datadir::new(d);
    let state = MigrationState::read(&dd)
        .expect("state")
        .expect("in progress");
    let (table, chunk) = (state.tables[0].table, &state.tables[0].chunks[0]);
    let mut rows = file_rows(d, &state, 0);
    assert_eq!(rows.len() as u64, chunk.digest.rows);
    // The same keys, one value changed: a well-formed file RocksDB ingests without complaint.
    let changed = rows.len() / 2;
    rows[changed].1.push(0x5a);
    rewrite_staged_file(d, &state, 0, &rows);
    let err = migrate(d, &request(EngineKind::RocksDb), &NoProgress)
        .expect_err("the changed file must fail verification");
    assert!(
        matches!(
            err,
            MigrateError::VerifyFailed {
                table: t,
                source_rows,
                target_rows,
                ..
            } if t == table && source_rows == chunk.digest.rows && target_rows == source_rows
        ),
        "{}",
        chain(&err)
    );
    assert!(
        err.to_string().contains("run the same command again"),
        "{err}"
    );
    assert_consistent(d, &c.original, "after VerifyFailed");
    assert_eq!(counts(d, table).1, 0, "RocksDB's copy was not removed");
    assert!(
        !dd.staging().join(table.name()).exists(),
        "staged files left"
    );
    migrate(d, &request(EngineKind::RocksDb), &NoProgress).expect("rerun");
    assert_same_as_uninterrupted(d, &c.forward, "rerun after VerifyFailed");
}

/// The rows of the first table's recorded file `file`, from MDBX (the source).
fn file_rows(d: &Path, state: &MigrationState, file: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let table = state.tables[0].table;
    let bound = |i: usize| hex::decode(&state.tables[0].chunks[i].last_stored_key).expect("hex");
    let after = file.checked_sub(1).map(bound);
    let last = bound(file);
    let mdbx = MdbxEngine::open_read_only(d).expect("mdbx");
    let tx = mdbx.begin_ro().expect("ro");
    let mut cursor = tx.cursor(table).expect("cursor");
    let mut next = cursor.first().expect("first");
    let mut rows = Vec::new();
    while let Some((k, v)) = next {
        let stored = RocksEngine::stored_key(table, &k, &v);
        if stored > last {
            break;
        }
        if after.as_ref().is_none_or(|a| stored > *a) {
            rows.push((k, v));
        }
        next = cursor.next().expect("next");
    }
    rows
}

/// Replaces the first table's staged file `file` with a well-formed SST file of `rows`.
fn rewrite_staged_file(d: &Path, state: &MigrationState, file: usize, rows: &[(Vec<u8>, Vec<u8>)]) {
    let table = state.tables[0].table;
    let path = Datadir::new(d)
        .staging()
        .join(table.name())
        .join(&state.tables[0].chunks[file].file);
    let rocks = RocksEngine::open_in_datadir_for_bulk(d).expect("rocksdb");
    rocks
        .write_sst_file(table, &path, |sink| {
            for (k, v) in rows {
                sink.put(k, v)?;
            }
            Ok(())
        })
        .expect("rewrite")
        .expect("rows");
}

/// A staged file changed on disk so that it also holds a row inside an earlier file's range
/// (already ingested and read back): RocksDB ingests it above the earlier file, where its row
/// would shadow the copied one, and the read-back of its own range sees nothing wrong. Where
/// the files landed gives it away: the migration fails with `MisplacedFiles`, removes the copy,
/// and a rerun ends as an uninterrupted migration.
#[test]
fn a_staged_file_reaching_into_an_earlier_range_is_caught() {
    let c = case(39);
    // File 0 is ingested; file 1 is recorded, its ingestion fails.
    let work = stopped_at_ingestion(&c, 2);
    let d = work.path();
    let dd = Datadir::new(d);
    let mut state = MigrationState::read(&dd)
        .expect("state")
        .expect("in progress");
    // File 0 was read back before the stop. On a loaded machine its read-back may still have
    // been queued; the rerun would then read file 0 back after file 1 landed over it, and see
    // the shadowing row itself (`VerifyFailed`). This test is about what no read-back sees.
    state.tables[0].chunks[0].verified = true;
    state.write(&dd).expect("write the state");
    let table = state.tables[0].table;
    assert!(
        table.dupsort_key_len().is_none(),
        "the case needs a plain first table"
    );
    let (mut shadow, _) = file_rows(d, &state, 0).swap_remove(0);
    let mut rows = file_rows(d, &state, 1);
    // File 0's first key again, with another value, first in file 1 (keys stay sorted).
    let value = {
        let mut v = rows[0].1.clone();
        v.push(0x5a);
        v
    };
    rows.insert(0, (std::mem::take(&mut shadow), value));
    rewrite_staged_file(d, &state, 1, &rows);
    let err = migrate(d, &request(EngineKind::RocksDb), &NoProgress)
        .expect_err("the misplaced file must fail verification");
    assert!(
        matches!(err, MigrateError::MisplacedFiles { table: t, .. } if t == table),
        "{}",
        chain(&err)
    );
    assert!(
        err.to_string().contains("run the same command again"),
        "{err}"
    );
    assert_consistent(d, &c.original, "after MisplacedFiles");
    assert_eq!(counts(d, table).1, 0, "RocksDB's copy was not removed");
    migrate(d, &request(EngineKind::RocksDb), &NoProgress).expect("rerun");
    assert_same_as_uninterrupted(d, &c.forward, "rerun after MisplacedFiles");
}

/// A crash inside a failed verification's clean-up, after RocksDB's copy was removed and before
/// the reset was recorded, leaves recorded files that the ingestion consumed and a RocksDB
/// without the table: the next run starts the table's copy over instead of refusing.
#[test]
fn recorded_files_consumed_by_a_removed_copy_start_the_table_over() {
    let c = case(40);
    // Files 0 and 1 are ingested (their staged links gone); file 2 is recorded only.
    let work = stopped_at_ingestion(&c, 3);
    let d = work.path();
    let dd = Datadir::new(d);
    let state = MigrationState::read(&dd)
        .expect("state")
        .expect("in progress");
    let table = state.tables[0].table;
    let staged = dd.staging().join(table.name());
    assert!(!staged.join(&state.tables[0].chunks[0].file).exists());
    {
        let rocks = RocksEngine::open_in_datadir_for_bulk(d).expect("rocksdb");
        rocks.clear_table(table).expect("clear");
    }
    migrate(d, &request(EngineKind::RocksDb), &NoProgress).expect("starts the table over");
    assert_same_as_uninterrupted(d, &c.forward, "after a removed copy");
}

/// A migration interrupted by the previous version (state version 1: files recorded without
/// read-back marks or split keys, none ingested before all were written) resumes with this one
/// and ends as an uninterrupted migration.
#[test]
fn a_version_1_state_resumes() {
    let c = case(38);
    // The first file is written and recorded; its ingestion fails (nothing else happened
    // before, as in a version-1 run interrupted there).
    let work = stopped_at_ingestion(&c, 1);
    let d = work.path();
    let path = Datadir::new(d).state_file();
    let mut state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("state")).expect("json");
    state["version"] = 1.into();
    for table in state["tables"].as_array_mut().expect("tables") {
        for chunk in table["chunks"].as_array_mut().expect("chunks") {
            let chunk = chunk.as_object_mut().expect("chunk");
            assert!(chunk.remove("verified").is_some() && chunk.remove("split_keys").is_some());
        }
    }
    std::fs::write(&path, serde_json::to_vec(&state).expect("json")).expect("write");
    migrate(d, &request(EngineKind::RocksDb), &NoProgress).expect("resume");
    assert_same_as_uninterrupted(d, &c.forward, "resumed from a version-1 state");
}

// ---- RLIMIT_FSIZE: a real EFBIG from write(2) ----

const FSIZE_CHILD_DIR: &str = "RETH_HYBRID_FSIZE_CHILD_DIR";
const FSIZE_CHILD_LIMIT: &str = "RETH_HYBRID_FSIZE_CHILD_LIMIT_BYTES";
/// Exit code of a child whose migration returned an error (a clean failure).
const CHILD_FAILED_CLEANLY: i32 = 3;

/// One SST file per table (files of up to 64 MiB), so the transaction-hash table's file
/// outgrows the limit.
fn fsize_request() -> MigrateRequest {
    let mut r = request(EngineKind::RocksDb);
    r.sst_file_bytes = 64 << 20;
    r
}

#[test]
#[ignore = "entry point of the file-size-limit test's child process; run by it"]
fn fsize_child() {
    let dir = std::env::var(FSIZE_CHILD_DIR).expect("run by the file-size-limit test");
    let limit: u64 = std::env::var(FSIZE_CHILD_LIMIT)
        .expect("limit")
        .parse()
        .expect("number");
    // SAFETY: plain system calls on this process; SIGXFSZ ignored so write(2) returns EFBIG
    // instead of killing the process, as a shell's `ulimit -f` with a trapped signal would.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: limit,
            rlim_max: limit,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0, "setrlimit");
    }
    match migrate(Path::new(&dir), &fsize_request(), &NoProgress) {
        Ok(_) => std::process::exit(0),
        Err(e) => {
            eprintln!("{}", chain(&e));
            std::process::exit(CHILD_FAILED_CLEANLY);
        }
    }
}

/// Bytes of the table's rows (keys and values), a lower bound of its SST file's size: the
/// transaction hashes are random, so the file's blocks do not compress.
fn row_bytes(rows: &Rows, table: Tables) -> u64 {
    rows.get(&table)
        .map(|r| r.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum())
        .unwrap_or(0)
}

#[test]
fn file_size_limit_fails_cleanly_and_resumes_identical() {
    // Scale 64: 51,200 transaction hashes, ~1.8 MB of rows in one SST file (libmdbx's lock
    // file, below which the limit cannot go, is ~1 MB: reth's 32,000 reader slots).
    let c = case_at_scale(64, 41);
    let work = tempfile::tempdir().expect("tmp");
    let d = work.path();
    copy_tree(c.template.path(), d);
    // The limit leaves room for the files a migration extends before it writes SST files
    // (libmdbx's lock file, which every open extends with ftruncate: under a smaller limit the
    // first open fails with EFBIG before anything changes, which would not test the copy;
    // RocksDB's MANIFEST, OPTIONS and LOG files), and is far below the transaction-hash
    // table's SST file, so the failing write is an SST write in the middle of the copy.
    let lck_bytes = {
        let _open = MdbxEngine::open_read_only(d).expect("mdbx");
        std::fs::metadata(d.join("db/mdbx.lck")).expect("lck").len()
    };
    let limit_bytes = lck_bytes + (64 << 10);
    let sst_lower_bound = row_bytes(&c.original, Tables::TransactionHashNumbers);
    assert!(
        sst_lower_bound > limit_bytes + (256 << 10),
        "the generated table ({sst_lower_bound} bytes) must be well above the limit \
         ({limit_bytes} bytes) for the SST write to hit it; raise the scale"
    );
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--ignored", "--exact", "fsize_child", "--nocapture"])
        .env(FSIZE_CHILD_DIR, d)
        .env(FSIZE_CHILD_LIMIT, limit_bytes.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("child");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        (out.status.code(), out.status.signal()),
        (Some(CHILD_FAILED_CLEANLY), None),
        "the migration under RLIMIT_FSIZE (limit {limit_bytes} bytes) must return an error, \
         not finish or die: {stderr}"
    );
    assert!(
        stderr.contains("file too large") && stderr.contains("ulimit -f"),
        "the error must name the file-size limit and the fix: {stderr}"
    );
    assert!(
        stderr.contains("writing SST file"),
        "the failing write must be the SST copy, not an earlier file: {stderr}"
    );
    assert_consistent(d, &c.original, "RLIMIT_FSIZE");
    migrate(d, &fsize_request(), &NoProgress).expect("resume without the limit");
    assert_same_as_uninterrupted(d, &c.forward, "RLIMIT_FSIZE");
}

// ---- a tiny disk: a tmpfs of a few MiB ----

const NO_TMPFS: &str = "RETH_HYBRID_TEST_NO_TMPFS";

/// A tmpfs mounted for one test; unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` only when mounting is impossible and `RETH_HYBRID_TEST_NO_TMPFS=1` says so.
    fn mount(size_bytes: u64) -> Option<Self> {
        let dir = tempfile::tempdir().expect("mount point");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={size_bytes}"))
            .arg("tmpfs")
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Self { dir }),
            other => {
                let why = format!("{other:?}");
                if std::env::var(NO_TMPFS).is_ok_and(|v| v == "1") {
                    eprintln!("tiny-disk test NOT RUN ({NO_TMPFS}=1): mount failed: {why}");
                    None
                } else {
                    panic!(
                        "the tiny-disk test mounts a tmpfs and could not ({why}); run it as \
                         root, or set {NO_TMPFS}=1 to skip it knowingly"
                    )
                }
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn resize(&self, size_bytes: u64) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,size={size_bytes}")])
            .arg(self.path())
            .status()
            .expect("mount")
            .success();
        assert!(ok, "remounting the tmpfs with size {size_bytes}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Bytes in use on the filesystem holding `dir`.
fn used_bytes(dir: &Path) -> u64 {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: statvfs writes only into the struct passed; `c` is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0, "statvfs");
    (st.f_blocks - st.f_bfree) * st.f_frsize
}

/// Every entry of a datadir with its size, for the message of a failure.
fn listing(dir: &Path) -> Vec<(PathBuf, usize)> {
    files(dir).into_iter().map(|(p, b)| (p, b.len())).collect()
}

#[test]
fn tiny_disk_refuses_or_fails_cleanly_and_resumes_identical() {
    let c = case(51);
    let mut failures = 0;
    // From "the copy cannot start" to "only the compacted mdbx.dat does not fit".
    for extra_bytes in [256 << 10, 1 << 20, 3 << 20] {
        let Some(fs) = Tmpfs::mount(64 << 20) else {
            return;
        };
        let d = fs.path().join("datadir");
        copy_tree(c.template.path(), &d);
        // libmdbx truncates its lock file on close and sets it up again through a memory map on
        // every open: with no room for it that is SIGBUS, not ENOSPC (a gap of libmdbx, noted in
        // docs/migration.md), so room for the lock file is kept on top of `extra_bytes`.
        let lck_bytes = {
            use std::os::unix::fs::MetadataExt;
            let _open = MdbxEngine::open_read_only(&d).expect("mdbx");
            std::fs::metadata(d.join("db/mdbx.lck"))
                .expect("lck")
                .blocks()
                * 512
        };
        let size = used_bytes(fs.path()) + lck_bytes + extra_bytes;
        fs.resize(size);
        let what = format!("tmpfs of {size} bytes");

        // The preflight sees the small disk and refuses, changing nothing.
        let before = files(&d);
        let err = migrate(&d, &measuring_disk(EngineKind::RocksDb), &NoProgress)
            .expect_err("the preflight must refuse a disk this small");
        assert!(
            matches!(err, MigrateError::DiskSpace { .. }),
            "{what}: {}",
            chain(&err)
        );
        assert!(before == files(&d), "{what}: the refusal changed files");

        // The disk fills while the migration runs (the preflight told to assume it is large).
        let mut fill = request(EngineKind::RocksDb);
        fill.assume_free_bytes = Some(1 << 40);
        match migrate(&d, &fill, &NoProgress) {
            Ok(_) => {
                assert_same_as_uninterrupted(&d, &c.forward, &what);
                continue;
            }
            Err(err) => {
                failures += 1;
                assert!(
                    matches!(err, MigrateError::StepFailed { .. })
                        && err.to_string().contains("no space left on device")
                        && err.to_string().contains("Free disk space"),
                    "{what}: {}\n{:?}",
                    chain(&err),
                    listing(&d)
                );
            }
        }
        // Enlarged (the preflight's 256 MiB margin included), the same command resumes; the
        // datadir is checked first, on the larger disk (opening engines writes files).
        fs.resize(size + (512 << 20));
        assert_consistent(&d, &c.original, &what);
        migrate(&d, &measuring_disk(EngineKind::RocksDb), &NoProgress)
            .unwrap_or_else(|e| panic!("{what}: resume: {}", chain(&e)));
        assert_same_as_uninterrupted(&d, &c.forward, &what);
    }
    assert!(failures > 0, "no disk size was small enough to fail");
}
