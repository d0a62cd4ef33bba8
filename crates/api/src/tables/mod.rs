//! The catalogue: every reth v2.5.1 table, declared once. This is the only place a table name is
//! spelled; MDBX DBIs and RocksDB column families use [`Tables::name`] verbatim.

use crate::{
    models::*,
    table::{DupSort, Encode, Table, TableInfo},
};
use serde::{Deserialize, Serialize};
use std::{fmt, str::FromStr};

/// Which engine holds a table's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Mdbx,
    #[serde(rename = "rocksdb")]
    RocksDb,
}

impl EngineKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Mdbx => "mdbx",
            Self::RocksDb => "rocksdb",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// An engine name that is neither `mdbx` nor `rocksdb`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown engine {0:?}; expected mdbx or rocksdb")]
pub struct UnknownEngine(pub String);

impl FromStr for EngineKind {
    type Err = UnknownEngine;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "mdbx" => Ok(Self::Mdbx),
            "rocksdb" | "rocks" => Ok(Self::RocksDb),
            _ => Err(UnknownEngine(s.to_string())),
        }
    }
}

/// A table name that is not in the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown table {0:?}; `reth-hybrid tables` lists the {n} known tables", n = Tables::COUNT)]
pub struct UnknownTable(pub String);

/// Turns a run-time [`Tables`] value into a call to generic code over its table type.
pub trait TableViewer<R> {
    type Error;

    fn view<T: Table>(&self) -> Result<R, Self::Error>;

    /// Called instead of [`Self::view`] for dupsort tables; defaults to `view`.
    fn view_dupsort<T: DupSort>(&self) -> Result<R, Self::Error> {
        self.view::<T>()
    }
}

macro_rules! count {
    () => { 0usize };
    ($head:ident $($tail:ident)*) => { 1usize + count!($($tail)*) };
}

macro_rules! tables {
    ($(
        $(#[doc = $doc:expr])*
        table $name:ident {
            type Key = $key:ty;
            type Value = $value:ty;
            $(type SubKey = $subkey:ty;)?
            engine = $engine:ident;
        }
    )*) => {
        $(
            $(#[doc = $doc])*
            #[derive(Debug, Clone, Copy, Default)]
            pub struct $name;

            impl Table for $name {
                const NAME: &'static str = stringify!($name);
                const DUPSORT: bool = tables!(@dupsort $($subkey)?);
                type Key = $key;
                type Value = $value;
            }

            $(
                impl DupSort for $name {
                    type SubKey = $subkey;
                }
            )?
        )*

        /// Every table, in reth's declaration order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Tables {
            $($name,)*
        }

        impl Tables {
            pub const COUNT: usize = count!($($name)*);
            pub const ALL: [Tables; Self::COUNT] = [$(Tables::$name,)*];

            /// The table's name: MDBX DBI name and RocksDB column family name.
            pub const fn name(&self) -> &'static str {
                match self {
                    $(Tables::$name => <$name as Table>::NAME,)*
                }
            }

            pub const fn is_dupsort(&self) -> bool {
                match self {
                    $(Tables::$name => <$name as Table>::DUPSORT,)*
                }
            }

            /// Rust type of the key, as reth names it.
            pub const fn key_type(&self) -> &'static str {
                match self {
                    $(Tables::$name => stringify!($key),)*
                }
            }

            /// Rust type of the value, as reth names it.
            pub const fn value_type(&self) -> &'static str {
                match self {
                    $(Tables::$name => stringify!($value),)*
                }
            }

            /// Rust type of the dupsort subkey.
            pub const fn subkey_type(&self) -> Option<&'static str> {
                match self {
                    $(Tables::$name => tables!(@subkey_name $($subkey)?),)*
                }
            }

            /// Engine of reth-hybrid's default layout.
            pub const fn default_engine(&self) -> EngineKind {
                match self {
                    $(Tables::$name => EngineKind::$engine,)*
                }
            }

            /// For dupsort tables, the fixed byte length of the encoded key (every dupsort table
            /// of reth has a fixed-size key), which lets a sorted-key engine store `key ++ value`.
            pub const fn dupsort_key_len(&self) -> Option<usize> {
                match self {
                    $(Tables::$name => tables!(@keylen $key; $($subkey)?),)*
                }
            }

            /// The table with this exact name. A `const fn`, so a table type's catalogue entry
            /// is found at compile time (`typed::on_raw::table_of`), not on every read.
            pub const fn from_name(name: &str) -> Option<Tables> {
                let mut i = 0;
                while i < Self::COUNT {
                    if const_str_eq(Self::ALL[i].name(), name) {
                        return Some(Self::ALL[i]);
                    }
                    i += 1;
                }
                None
            }

            /// Calls the viewer with this table's type.
            pub fn view<V: TableViewer<R>, R>(&self, viewer: &V) -> Result<R, V::Error> {
                match self {
                    $(Tables::$name => tables!(@view viewer, $name; $($subkey)?),)*
                }
            }
        }
    };
    (@dupsort) => { false };
    (@dupsort $subkey:ty) => { true };
    (@subkey_name) => { None };
    (@subkey_name $subkey:ty) => { Some(stringify!($subkey)) };
    (@keylen $key:ty;) => { None };
    (@keylen $key:ty; $subkey:ty) => { Some(std::mem::size_of::<<$key as Encode>::Encoded>()) };
    (@view $viewer:ident, $name:ident;) => { $viewer.view::<$name>() };
    (@view $viewer:ident, $name:ident; $subkey:ty) => { $viewer.view_dupsort::<$name>() };
}

const fn const_str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl fmt::Display for Tables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Tables {
    type Err = UnknownTable;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| UnknownTable(s.to_string()))
    }
}

impl TableInfo for Tables {
    fn name(&self) -> &'static str {
        Tables::name(self)
    }

    fn is_dupsort(&self) -> bool {
        Tables::is_dupsort(self)
    }
}

impl Serialize for Tables {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Tables {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

tables! {
    /// Canonical block hash by number.
    table CanonicalHeaders {
        type Key = BlockNumber;
        type Value = HeaderHash;
        engine = Mdbx;
    }
    /// Total difficulty by block number (deprecated upstream, kept for old datadirs).
    table HeaderTerminalDifficulties {
        type Key = BlockNumber;
        type Value = CompactU256;
        engine = Mdbx;
    }
    /// Block number by block hash.
    table HeaderNumbers {
        type Key = BlockHash;
        type Value = BlockNumber;
        engine = Mdbx;
    }
    /// Block headers (static files hold them on current reth).
    table Headers {
        type Key = BlockNumber;
        type Value = Header;
        engine = Mdbx;
    }
    /// Where each block's transactions are.
    table BlockBodyIndices {
        type Key = BlockNumber;
        type Value = StoredBlockBodyIndices;
        engine = Mdbx;
    }
    /// Ommer headers by block number.
    table BlockOmmers {
        type Key = BlockNumber;
        type Value = StoredBlockOmmers;
        engine = Mdbx;
    }
    /// Withdrawals by block number.
    table BlockWithdrawals {
        type Key = BlockNumber;
        type Value = StoredBlockWithdrawals;
        engine = Mdbx;
    }
    /// Block access lists by (number, hash).
    table BlockAccessLists {
        type Key = StoredBlockAccessListKey;
        type Value = StoredBlockAccessList;
        engine = Mdbx;
    }
    /// Block number of a block access list by block hash.
    table BlockAccessListBlockNumbers {
        type Key = BlockHash;
        type Value = BlockNumber;
        engine = Mdbx;
    }
    /// Signed transactions by tx number (static files hold them on current reth).
    table Transactions {
        type Key = TxNumber;
        type Value = TransactionSigned;
        engine = Mdbx;
    }
    /// Tx number by tx hash: random 32-byte keys, point lookups.
    table TransactionHashNumbers {
        type Key = TxHash;
        type Value = TxNumber;
        engine = RocksDb;
    }
    /// Block number by the highest tx number of that block.
    table TransactionBlocks {
        type Key = TxNumber;
        type Value = BlockNumber;
        engine = Mdbx;
    }
    /// Receipts by tx number.
    table Receipts {
        type Key = TxNumber;
        type Value = Receipt;
        engine = Mdbx;
    }
    /// Contract code by code hash.
    table Bytecodes {
        type Key = B256;
        type Value = Bytecode;
        engine = Mdbx;
    }
    /// Current accounts by address.
    table PlainAccountState {
        type Key = Address;
        type Value = Account;
        engine = Mdbx;
    }
    /// Current storage by address; duplicates are slots.
    table PlainStorageState {
        type Key = Address;
        type Value = StorageEntry;
        type SubKey = B256;
        engine = Mdbx;
    }
    /// Blocks at which an account changed, in shards of up to 2000.
    table AccountsHistory {
        type Key = ShardedKey<Address>;
        type Value = BlockNumberList;
        engine = RocksDb;
    }
    /// Blocks at which a storage slot changed, in shards of up to 2000.
    table StoragesHistory {
        type Key = StorageShardedKey;
        type Value = BlockNumberList;
        engine = RocksDb;
    }
    /// Account states before each block; duplicates are addresses.
    table AccountChangeSets {
        type Key = BlockNumber;
        type Value = AccountBeforeTx;
        type SubKey = Address;
        engine = Mdbx;
    }
    /// Storage values before each block; duplicates are slots.
    table StorageChangeSets {
        type Key = BlockNumberAddress;
        type Value = StorageEntry;
        type SubKey = B256;
        engine = Mdbx;
    }
    /// Current accounts by hashed address.
    table HashedAccounts {
        type Key = B256;
        type Value = Account;
        engine = Mdbx;
    }
    /// Current storage by hashed address; duplicates are hashed slots.
    table HashedStorages {
        type Key = B256;
        type Value = StorageEntry;
        type SubKey = B256;
        engine = Mdbx;
    }
    /// Account trie branch nodes by path.
    table AccountsTrie {
        type Key = StoredNibbles;
        type Value = BranchNodeCompact;
        engine = Mdbx;
    }
    /// Storage trie branch nodes by hashed address; duplicates are paths.
    table StoragesTrie {
        type Key = B256;
        type Value = StorageTrieEntry;
        type SubKey = StoredNibblesSubKey;
        engine = Mdbx;
    }
    /// Transaction senders by tx number.
    table TransactionSenders {
        type Key = TxNumber;
        type Value = Address;
        engine = Mdbx;
    }
    /// Stage progress by stage name.
    table StageCheckpoints {
        type Key = StageId;
        type Value = StageCheckpoint;
        engine = Mdbx;
    }
    /// Opaque per-stage progress bytes by stage name.
    table StageCheckpointProgresses {
        type Key = StageId;
        type Value = Vec<u8>;
        engine = Mdbx;
    }
    /// Pruning progress by segment.
    table PruneCheckpoints {
        type Key = PruneSegment;
        type Value = PruneCheckpoint;
        engine = Mdbx;
    }
    /// Client versions that opened the database, by unix time.
    table VersionHistory {
        type Key = u64;
        type Value = ClientVersion;
        engine = Mdbx;
    }
    /// Last finalized and safe block numbers.
    table ChainState {
        type Key = ChainStateKey;
        type Value = BlockNumber;
        engine = Mdbx;
    }
    /// Free-form metadata (reth: `storage_settings`; reth-hybrid: its layout and commit state).
    table Metadata {
        type Key = String;
        type Value = Vec<u8>;
        engine = Mdbx;
    }
}
