//! The tries under v1's keys. v2 stores `AccountsTrie` keys and `StoragesTrie` subkeys packed
//! (33 bytes); v1 one nibble per byte (a variable-length key; a 65-byte subkey). The branch
//! nodes are the same bytes, and both key forms sort alike, so a table converts row by row in
//! its own order.
//!
//! [`convert_tries`] reads the packed rows from a read snapshot taken before it writes, and
//! rewrites both tables in the caller's write transaction: nothing is visible until that
//! transaction commits, so an interruption leaves the packed tries as they were.

use crate::error::AdoptError;
use reth_hybrid_api::{
    DatabaseError, Encode, Tables,
    error::short_hex,
    models::{PackedStoredNibbles, StoredNibbles, StoredNibblesSubKey},
    raw::{RawCursor, RawCursorMut, RawTx, RawTxMut},
};

/// `AccountsTrie`'s key: packed path -> one nibble per byte.
pub fn account_key_to_v1(packed: &[u8]) -> Result<Vec<u8>, DatabaseError> {
    Ok(StoredNibbles(PackedStoredNibbles::from_bytes(packed)?.0)
        .encode()
        .to_vec())
}

/// `StoragesTrie`'s value: packed subkey, node -> 65-byte subkey, the same node.
pub fn storage_value_to_v1(packed: &[u8]) -> Result<Vec<u8>, DatabaseError> {
    if packed.len() < PackedStoredNibbles::LEN {
        return Err(DatabaseError::decode());
    }
    let (subkey, node) = packed.split_at(PackedStoredNibbles::LEN);
    let path = PackedStoredNibbles::from_bytes(subkey)?.0;
    let mut out = StoredNibblesSubKey(path).encode().to_vec();
    out.extend_from_slice(node);
    Ok(out)
}

/// Rows rewritten per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrieRows {
    pub accounts_trie: u64,
    pub storages_trie: u64,
}

/// Rewrites both tries from `packed` (a snapshot holding v2's rows) into `tx` under v1's keys.
/// A row that is not a packed path fails the whole conversion, naming the table and key.
pub fn convert_tries<R: RawTx, W: RawTxMut>(packed: &R, tx: &W) -> Result<TrieRows, AdoptError> {
    Ok(TrieRows {
        accounts_trie: convert_table(packed, tx, Tables::AccountsTrie)?,
        storages_trie: convert_table(packed, tx, Tables::StoragesTrie)?,
    })
}

fn convert_table<R: RawTx, W: RawTxMut>(
    packed: &R,
    tx: &W,
    table: Tables,
) -> Result<u64, AdoptError> {
    let malformed = |key: &[u8]| {
        AdoptError::Database(DatabaseError::Decode {
            table: table.name(),
            what: "storage v2 packed trie path",
            key: short_hex(key),
        })
    };
    tx.clear(table)?;
    let mut read = packed.cursor(table)?;
    let mut write = tx.cursor_mut(table)?;
    let mut rows = 0;
    let mut next = read.first()?;
    while let Some((key, value)) = next {
        if table.is_dupsort() {
            let value = storage_value_to_v1(&value).map_err(|_| malformed(&key))?;
            write.append_dup(&key, &value)?;
        } else {
            let key_v1 = account_key_to_v1(&key).map_err(|_| malformed(&key))?;
            write.append(&key_v1, &value)?;
        }
        rows += 1;
        next = read.next()?;
    }
    Ok(rows)
}
