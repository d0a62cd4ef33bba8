//! Helpers the test suites of every crate share: where the real-reth fixtures are, how a test
//! that cannot run says so where a person sees it, and what "a refusal changed nothing" compares
//! (a datadir's files and its MDBX rows).
//!
//! `cargo test` hides what a passing test prints, so a skip alone would look like a pass. A
//! skipped test therefore also appends a line to the file named by `RETH_HYBRID_SKIP_LOG`, which
//! `make test` empties before and prints after the run.

use crate::{
    Tables,
    raw::{RawCursor, RawEngine, RawPair, RawTx},
};
use std::{
    collections::BTreeMap,
    fs::{self, OpenOptions},
    io::Write,
    path::{Path, PathBuf},
};

/// Environment variable naming the file where skipped tests are recorded.
pub const SKIP_LOG_ENV: &str = "RETH_HYBRID_SKIP_LOG";
/// Environment variable pointing at a folder of datadirs written by real reth.
pub const FIXTURES_ENV: &str = "RETH_HYBRID_FIXTURES";

/// Records that `test` did not run and why: on stderr and in the skip log.
pub fn report_skip(test: &str, reason: &str) {
    let line = format!("SKIPPED {test}: {reason}");
    eprintln!("{line}");
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV)
        && let Ok(mut file) = OpenOptions::new().create(true).append(true).open(&path)
    {
        // One write per line so concurrent test threads do not interleave.
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }
}

/// The folder of real-reth fixtures: `RETH_HYBRID_FIXTURES`, else `../shared/fixtures` beside
/// the checkout (the workspace root is two levels above a crate).
pub fn fixtures_root(crate_dir: &Path) -> PathBuf {
    std::env::var_os(FIXTURES_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_dir.join("../../../shared/fixtures"))
}

/// The reth datadirs (folders holding `db/mdbx.dat`) in the fixtures folder, sorted.
///
/// Fixtures are required where they must be there: in CI (`CI` set) or when
/// `RETH_HYBRID_FIXTURES` names a folder, a missing folder panics; a folder that holds no
/// datadir always panics. Elsewhere (a clone without `../shared`) the test is skipped through
/// [`report_skip`] and `None` is returned.
pub fn fixture_datadirs(test: &str, crate_dir: &Path) -> Option<Vec<PathBuf>> {
    let root = fixtures_root(crate_dir);
    let required = std::env::var_os("CI").is_some() || std::env::var_os(FIXTURES_ENV).is_some();
    let Ok(entries) = fs::read_dir(&root) else {
        if required {
            panic!(
                "{test}: no fixtures folder at {} (CI or {FIXTURES_ENV} requires the datadirs \
                 written by real reth; point {FIXTURES_ENV} at them)",
                root.display()
            );
        }
        report_skip(
            test,
            &format!(
                "no fixtures folder at {} (set {FIXTURES_ENV} to run it)",
                root.display()
            ),
        );
        return None;
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("db/mdbx.dat").is_file())
        .collect();
    dirs.sort();
    assert!(
        !dirs.is_empty(),
        "{test}: the fixtures folder {} holds no reth datadir (no <name>/db/mdbx.dat)",
        root.display()
    );
    Some(dirs)
}

/// One named fixture datadir, with the same rules as [`fixture_datadirs`]; a fixtures folder
/// that lacks this datadir panics.
pub fn fixture_datadir(test: &str, crate_dir: &Path, name: &str) -> Option<PathBuf> {
    let dirs = fixture_datadirs(test, crate_dir)?;
    let found = dirs
        .into_iter()
        .find(|d| d.file_name().is_some_and(|n| n == name));
    Some(found.unwrap_or_else(|| {
        panic!(
            "{test}: the fixtures folder {} has no datadir named {name}",
            fixtures_root(crate_dir).display()
        )
    }))
}

/// Every file of a datadir by its bytes, and every folder (as `None`), by path relative to `d`;
/// `db/mdbx.dat` and `db/mdbx.lck` are left out (an MDBX open rewrites their pages without
/// changing a row: compare [`mdbx_rows`] instead).
pub fn datadir_files(d: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![d.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(d).expect("under d").to_path_buf();
            if path.is_dir() {
                files.insert(rel, None);
                stack.push(path);
            } else if rel != Path::new("db/mdbx.dat") && rel != Path::new("db/mdbx.lck") {
                files.insert(rel, Some(fs::read(&path).expect("read")));
            }
        }
    }
    files
}

/// A copy of a datadir's MDBX files (`db/mdbx.dat`, `db/database.version`) in a new temporary
/// folder, to read rows from without opening the datadir itself (its lock may be held, its
/// files immutable, and an open would change them).
pub fn copy_of_mdbx(d: &Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().expect("tmp");
    fs::create_dir(copy.path().join("db")).expect("mkdir");
    for name in ["mdbx.dat", "database.version"] {
        fs::copy(d.join("db").join(name), copy.path().join("db").join(name)).expect("copy");
    }
    copy
}

/// Every row of `table` in `tx`, in order.
pub fn table_rows<X: RawTx>(tx: &X, table: Tables) -> Vec<RawPair> {
    let mut rows = Vec::new();
    let mut c = tx.cursor(table).expect("cursor");
    let mut next = c.first().expect("first");
    while let Some(row) = next {
        rows.push(row);
        next = c.next().expect("next");
    }
    rows
}

/// Every table of `engine`: `None` if it lacks the table, else every row.
pub fn mdbx_rows<E: RawEngine>(engine: &E) -> Vec<(Tables, Option<Vec<RawPair>>)> {
    let tx = engine.begin_ro().expect("ro");
    Tables::ALL
        .into_iter()
        .map(|table| {
            (
                table,
                engine.has_table(table).then(|| table_rows(&tx, table)),
            )
        })
        .collect()
}
