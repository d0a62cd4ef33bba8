//! Shared helpers: generated datadirs, every row of a datadir whichever engine holds it, and a
//! snapshot of a datadir's files for "a refusal changes nothing".
#![allow(dead_code)]

use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawEngine, RawTx},
    typed::TypedDatabase,
};
use reth_hybrid_hybrid::layout::CONTROL_KEY_PREFIX;
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{GenerateSpec, generate};
use reth_hybrid_rocksdb::{HYBRID_ROCKSDB_DIR, RocksEngine};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

pub type Rows = BTreeMap<Tables, Vec<(Vec<u8>, Vec<u8>)>>;

/// A fresh reth v1-layout datadir (all rows in MDBX).
pub fn generated(scale: u64, seed: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tmp");
    let engine = MdbxEngine::open(
        dir.path(),
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )
    .expect("mdbx");
    generate(&TypedDatabase::new(engine), &GenerateSpec::new(scale, seed)).expect("generate");
    dir
}

/// Every user row of every table, from both engines (reth-hybrid's control rows left out).
pub fn all_rows(datadir: &Path) -> Rows {
    let mdbx = MdbxEngine::open_read_only(datadir).expect("mdbx");
    let tx = mdbx.begin_ro().expect("ro");
    let rocks_path = datadir.join(HYBRID_ROCKSDB_DIR);
    let rocks = reth_hybrid_rocksdb::is_initialized(&rocks_path)
        .then(|| RocksEngine::open_read_only(&rocks_path).expect("rocksdb"));
    let mut out = Rows::new();
    for table in Tables::ALL {
        let mut rows = Vec::new();
        if tx.table_stat(table).expect("stat").entries > 0 {
            let mut c = tx.cursor(table).expect("cursor");
            let mut next = c.first().expect("first");
            while let Some(row) = next {
                rows.push(row);
                next = c.next().expect("next");
            }
        }
        if let Some(r) = &rocks {
            r.scan_table(table, None, |k, v| {
                rows.push((k.to_vec(), v.to_vec()));
                Ok(true)
            })
            .expect("scan");
        }
        rows.retain(|(k, _)| {
            !(table == Tables::Metadata && k.starts_with(CONTROL_KEY_PREFIX.as_bytes()))
        });
        rows.sort();
        out.insert(table, rows);
    }
    out
}

/// Rows per engine of one table: (mdbx, rocksdb).
pub fn counts(datadir: &Path, table: Tables) -> (usize, usize) {
    let mdbx = MdbxEngine::open_read_only(datadir).expect("mdbx");
    let m = mdbx
        .begin_ro()
        .expect("ro")
        .table_stat(table)
        .expect("stat")
        .entries as usize;
    let rocks_path = datadir.join(HYBRID_ROCKSDB_DIR);
    let r = if reth_hybrid_rocksdb::is_initialized(&rocks_path) {
        let r = RocksEngine::open_read_only(&rocks_path).expect("rocksdb");
        let mut n = 0;
        r.scan_table(table, None, |_, _| {
            n += 1;
            Ok(true)
        })
        .expect("scan");
        n
    } else {
        0
    };
    (m, r)
}

/// Every file's bytes under `dir`, except those that reading a datadir rewrites by design:
/// libmdbx's lock file (reader slots) and RocksDB's info logs.
pub fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let entry = entry.expect("entry");
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if name != "mdbx.lck" && !name.starts_with("LOG") {
                out.insert(
                    path.strip_prefix(dir).expect("under dir").to_path_buf(),
                    std::fs::read(&path).expect("read"),
                );
            }
        }
    }
    out
}

/// Copies a directory tree (fixtures are read-only; tests work on copies).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
            let mut perms = std::fs::metadata(&target).expect("meta").permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&target, perms).expect("chmod");
        }
    }
}
