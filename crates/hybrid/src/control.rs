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

/// Whether `table` holds any row other than reth-hybrid's own control rows.
pub fn has_user_rows<X: RawTx>(tx: &X, table: Tables) -> RawResult<bool> {
    let mut cursor = tx.cursor(table)?;
    let mut next = cursor.first()?;
    while let Some((key, _)) = next {
        if !(table == Tables::Metadata && key.starts_with(CONTROL_KEY_PREFIX.as_bytes())) {
            return Ok(true);
        }
        next = cursor.next()?;
    }
    Ok(false)
}
