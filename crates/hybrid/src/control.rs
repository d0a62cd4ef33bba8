//! reth-hybrid's control rows in each engine's `Metadata` table: commit sequences and the layout.
//! Values use the table's own encoding (SCALE `Vec<u8>`), so reth can decode every row.

use reth_hybrid_api::{
    Decompress, Tables,
    raw::{RawCursor, RawResult, RawTx, RawTxMut},
    table::compress_to_vec,
};

use crate::layout::CONTROL_KEY_PREFIX;

/// Last hybrid commit (primary), or last commit that wrote to the follower (follower).
pub const SEQ_KEY: &str = "reth_hybrid.commit_seq";
/// In the primary: the last commit whose writes went to the follower.
pub const FOLLOWER_SEQ_KEY: &str = "reth_hybrid.follower_seq";

/// In the primary: a deferred commit's RocksDB writes (an intent record, framed and checksummed
/// as in the intent log), kept until RocksDB synced them. The 20-digit sequence makes the keys
/// sort by sequence.
pub const PENDING_KEY_PREFIX: &str = "reth_hybrid.pending.";

pub fn pending_key(seq: u64) -> String {
    format!("{PENDING_KEY_PREFIX}{seq:020}")
}

/// In the follower: every commit that writes to it also stamps its sequence into slot
/// `seq % APPLIED_RING` of this ring, inside the same batch. Recovery reads a pending row's slot
/// to check that RocksDB holds that commit, not only a later one: power loss in the window after
/// a WAL switch can keep a newer WAL file and lose an older one's unsynced tail (a hole that
/// point-in-time WAL recovery does not see).
pub const APPLIED_KEY_PREFIX: &str = "reth_hybrid.applied.";
/// Slots of the ring: more than the deferred commits between two syncs can ever be.
pub const APPLIED_RING: u64 = 1024;

pub fn applied_key(seq: u64) -> String {
    format!("{APPLIED_KEY_PREFIX}{:04}", seq % APPLIED_RING)
}

/// A pending row as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRow {
    /// The sequence its key names (`None`: an unreadable key).
    pub seq: Option<u64>,
    pub key: String,
    /// The intent record's bytes.
    pub record: Vec<u8>,
}

/// Every pending row, by sequence.
pub fn pending_rows<X: RawTx>(tx: &X) -> RawResult<Vec<PendingRow>> {
    let mut cursor = tx.cursor(Tables::Metadata)?;
    let mut next = cursor.seek(PENDING_KEY_PREFIX.as_bytes())?;
    let mut rows = Vec::new();
    while let Some((key, raw)) = next {
        let Some(suffix) = key.strip_prefix(PENDING_KEY_PREFIX.as_bytes()) else {
            break;
        };
        let key = String::from_utf8_lossy(&key).into_owned();
        let seq = std::str::from_utf8(suffix)
            .ok()
            .filter(|s| s.len() == 20)
            .and_then(|s| s.parse().ok());
        let bytes =
            Vec::<u8>::decompress(&raw).map_err(|_| reth_hybrid_api::DatabaseError::Decode {
                table: "Metadata",
                what: "value",
                key: key.clone(),
            })?;
        rows.push(PendingRow {
            seq,
            key,
            record: bytes,
        });
        next = cursor.next()?;
    }
    Ok(rows)
}

/// The sequences of the pending rows (ascending); unreadable keys are left out.
pub fn pending_seqs<X: RawTx>(tx: &X) -> RawResult<Vec<u64>> {
    Ok(pending_rows(tx)?
        .into_iter()
        .filter_map(|row| row.seq)
        .collect())
}

pub fn get_bytes<X: RawTx>(tx: &X, key: &str) -> RawResult<Option<Vec<u8>>> {
    match tx.get(Tables::Metadata, key.as_bytes())? {
        None => Ok(None),
        Some(raw) => Ok(Some(Vec::<u8>::decompress(&raw).map_err(|_| {
            reth_hybrid_api::DatabaseError::Decode {
                table: "Metadata",
                what: "value",
                key: key.to_string(),
            }
        })?)),
    }
}

pub fn put_bytes<X: RawTxMut>(tx: &X, key: &str, value: Vec<u8>) -> RawResult<()> {
    tx.put(Tables::Metadata, key.as_bytes(), &compress_to_vec(&value))
}

pub fn get_u64<X: RawTx>(tx: &X, key: &str) -> RawResult<u64> {
    Ok(get_bytes(tx, key)?
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
        .unwrap_or(0))
}

pub fn put_u64<X: RawTxMut>(tx: &X, key: &str, value: u64) -> RawResult<()> {
    put_bytes(tx, key, value.to_be_bytes().to_vec())
}

/// Whether a `Metadata` key is one of reth-hybrid's own rows.
pub fn is_control_key(key: &[u8]) -> bool {
    key.starts_with(CONTROL_KEY_PREFIX.as_bytes())
}

/// Whether `table` holds any row other than reth-hybrid's own control rows.
pub fn has_user_rows<X: RawTx>(tx: &X, table: Tables) -> RawResult<bool> {
    let mut cursor = tx.cursor(table)?;
    let mut next = cursor.first()?;
    while let Some((key, _)) = next {
        if !(table == Tables::Metadata && is_control_key(&key)) {
            return Ok(true);
        }
        next = cursor.next()?;
    }
    Ok(false)
}
