//! The workloads of the documents this project grew from (../shared/seeds), run on our engines:
//! seed 000's Merkle-Patricia job ([`pmt`]), seed 003's read-modify-write counters
//! ([`counters`]) and seed 004's per-operation costs ([`micro`]). `benches/seeds.rs` runs them
//! at the seeds' sizes (`make bench-seeds`) and, under `cargo test`, at a tiny size.

pub mod counters;
pub mod micro;
pub mod pmt;

use reth_hybrid_api::{DatabaseError, EngineKind, Tables, typed::TypedDatabase};
use reth_hybrid_hybrid::{HybridDb, HybridError, HybridOptions, Layout};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxError, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksError, RocksOptions};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error(transparent)]
    Database(#[from] DatabaseError),
    #[error("rocksdb: {0}")]
    Rocks(#[from] rocksdb::Error),
    #[error("unexpected data: {0}")]
    Corrupt(String),
}

impl From<MdbxError> for SeedError {
    fn from(e: MdbxError) -> Self {
        Self::Database(e.into())
    }
}

impl From<RocksError> for SeedError {
    fn from(e: RocksError) -> Self {
        Self::Database(e.into())
    }
}

impl From<HybridError> for SeedError {
    fn from(e: HybridError) -> Self {
        Self::Database(e.into())
    }
}

/// Where the PMT job's two tables live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrieStore {
    Mdbx,
    RocksDb,
    /// The hybrid's default layout: trie and hashed state in MDBX.
    Hybrid,
    /// The hybrid with `AccountsTrie` and `HashedAccounts` routed to RocksDB.
    HybridTrieInRocksDb,
}

impl TrieStore {
    pub const ALL: [Self; 4] = [
        Self::Mdbx,
        Self::RocksDb,
        Self::Hybrid,
        Self::HybridTrieInRocksDb,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Mdbx => "mdbx",
            Self::RocksDb => "rocksdb",
            Self::Hybrid => "hybrid (trie in MDBX)",
            Self::HybridTrieInRocksDb => "hybrid (trie in RocksDB)",
        }
    }
}

/// One of the stores, opened fresh in `dir`, behind the typed reth API.
#[derive(Debug)]
pub enum OpenStore {
    Mdbx(TypedDatabase<MdbxEngine>),
    RocksDb(TypedDatabase<RocksEngine>),
    Hybrid(TypedDatabase<HybridDb<MdbxEngine, RocksEngine>>),
}

/// Runs `$body` with `$db` bound to the store's typed database, whichever engine it is.
#[macro_export]
macro_rules! with_store {
    ($store:expr, |$db:ident| $body:expr) => {
        match $store {
            $crate::seeds::OpenStore::Mdbx($db) => $body,
            $crate::seeds::OpenStore::RocksDb($db) => $body,
            $crate::seeds::OpenStore::Hybrid($db) => $body,
        }
    };
}

fn mdbx(dir: &Path) -> Result<MdbxEngine, SeedError> {
    Ok(MdbxEngine::open(
        dir,
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )?)
}

/// Opens `store` in the empty directory `dir`. RocksDB commits are synced like MDBX's.
pub fn open_store(store: TrieStore, dir: &Path) -> Result<OpenStore, SeedError> {
    let rocks =
        |dir: &Path| RocksEngine::open(&dir.join("hybrid-rocksdb"), &RocksOptions::default());
    Ok(match store {
        TrieStore::Mdbx => OpenStore::Mdbx(TypedDatabase::new(mdbx(dir)?)),
        TrieStore::RocksDb => OpenStore::RocksDb(TypedDatabase::new(rocks(dir)?)),
        TrieStore::Hybrid | TrieStore::HybridTrieInRocksDb => {
            let mut layout = Layout::default();
            if store == TrieStore::HybridTrieInRocksDb {
                layout.set(Tables::AccountsTrie, EngineKind::RocksDb);
                layout.set(Tables::HashedAccounts, EngineKind::RocksDb);
            }
            let hybrid = HybridDb::open(
                mdbx(dir)?,
                rocks(dir)?,
                dir,
                HybridOptions {
                    layout: Some(layout),
                    ..Default::default()
                },
            )?;
            OpenStore::Hybrid(TypedDatabase::new(hybrid))
        }
    })
}
