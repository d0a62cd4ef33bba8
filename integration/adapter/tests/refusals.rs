//! A datadir the hybrid node refuses is left as it was: reth's MDBX compared by every row of
//! every table and by which tables exist, every other file by its bytes, every folder by its
//! presence (only `db/mdbx.lck`, libmdbx's reader slots, is left out). In particular no
//! `hybrid-rocksdb/`, no intent log and no reth table or client-version row is created.

use alloy_primitives::B256;
use reth_db::mdbx::DatabaseArguments;
use reth_db_api::{
    database::Database,
    models::ClientVersion,
    tables,
    transaction::{DbTx, DbTxMut},
};
use reth_hybrid_adapter::{RethMdbx, open_hybrid};
use reth_hybrid_api::{
    Tables,
    raw::RawPair,
    test_support::{copy_of_mdbx, datadir_files, mdbx_rows},
};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
};

fn args() -> DatabaseArguments {
    DatabaseArguments::new(ClientVersion::default())
}

/// A reth v1 datadir written by reth alone: reth's own init, rows through reth's own traits.
fn reth_datadir(d: &Path, f: impl FnOnce(&<reth_db::DatabaseEnv as Database>::TXMut)) {
    let env = reth_db::init_db(d.join("db"), args()).expect("init");
    let tx = env.tx_mut().expect("rw");
    f(&tx);
    tx.commit().expect("commit");
}

#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    files: BTreeMap<PathBuf, Option<Vec<u8>>>,
    mdbx: Vec<(Tables, Option<Vec<RawPair>>)>,
}

fn snapshot(d: &Path) -> Snapshot {
    // Rows read through reth's read-only open of a copy, so the datadir itself is not opened.
    let copy = copy_of_mdbx(d);
    let env = reth_db::open_db_read_only(&copy.path().join("db"), args()).expect("read-only copy");
    Snapshot {
        files: datadir_files(d),
        mdbx: mdbx_rows(&RethMdbx::new(Arc::new(env)).expect("mdbx")),
    }
}

/// Builds the datadir, opens it as the node does, and requires a refusal that says `says` and
/// leaves the datadir unchanged.
fn refused_unchanged(build: impl FnOnce(&Path), says: &str) {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    build(d);
    let before = snapshot(d);
    let err = match open_hybrid(d, args()) {
        Ok(_) => panic!("opened, expected a refusal saying {says:?}"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains(says), "{err}");
    let after = snapshot(d);
    let changed: Vec<String> = before
        .files
        .keys()
        .chain(after.files.keys())
        .filter(|p| before.files.get(*p) != after.files.get(*p))
        .map(|p| p.display().to_string())
        .collect();
    assert!(changed.is_empty(), "files changed: {changed:?}");
    assert!(before.mdbx == after.mdbx, "MDBX tables or rows changed");
}

#[test]
fn a_storage_v2_datadir_is_refused_unchanged() {
    refused_unchanged(
        |d| {
            reth_datadir(d, |tx| {
                tx.put::<tables::Metadata>(
                    "storage_settings".to_string(),
                    br#"{"storage_v2":true}"#.to_vec(),
                )
                .expect("put");
            })
        },
        "storage v2",
    );
}

#[test]
fn a_reth_datadir_with_tx_hashes_in_mdbx_is_refused_unchanged() {
    refused_unchanged(
        |d| {
            reth_datadir(d, |tx| {
                for i in 0..10u64 {
                    tx.put::<tables::TransactionHashNumbers>(
                        B256::left_padding_from(&i.to_be_bytes()),
                        i,
                    )
                    .expect("put");
                }
            })
        },
        "TransactionHashNumbers is routed to rocksdb but has rows in mdbx",
    );
}

#[test]
fn a_datadir_mid_migration_is_refused_unchanged() {
    refused_unchanged(
        |d| {
            reth_datadir(d, |_| {});
            std::fs::write(d.join("hybrid-migration.json"), b"\x00garbage{").expect("write");
        },
        "hybrid-migration.json",
    );
}
