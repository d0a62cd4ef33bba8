//! Adopting a reth storage-v2 datadir (issue 35). v2 keeps history and tx hashes in reth's own
//! RocksDB, changesets and senders in static files, no plain state, and its tries under packed
//! keys. Adoption first turns it into a stock v1 datadir (every table in MDBX, in v1's bytes),
//! which stock reth runs as it is, and then `migrate` moves the three tables to the hybrid's
//! RocksDB, verified and resumable as for any v1 datadir. See docs/migration.md.
//!
//! The pieces, each resumable from what the datadir already holds:
//! - [`upstream_copy`]: reth's RocksDB tables into the MDBX tables of the same name;
//! - [`plain_state`]: `PlainAccountState`/`PlainStorageState` rebuilt from the hashed state, the
//!   addresses and slots behind the hashes taken from the history keys;
//! - [`trie`]: `AccountsTrie`/`StoragesTrie` rewritten under v1's keys, in the one write
//!   transaction that also switches the storage settings to v1.

pub mod plain_state;
pub mod trie;
pub mod upstream_copy;
