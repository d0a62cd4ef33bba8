//! reth's RocksDB tables (`AccountsHistory`, `StoragesHistory`, `TransactionHashNumbers` of a
//! v2 datadir) into the MDBX tables of the same name: the bytes are the same in both layouts,
//! and RocksDB's order is MDBX's, so rows are appended as they come. Commits every
//! [`ROWS_PER_COMMIT`] rows; a run resumes after the last row MDBX holds. The copy is then read
//! back from both sides and compared (rows and an order-independent checksum).

use crate::{digest::TableDigest, error::MigrateError};
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawCursorMut, RawEngine, RawTx, RawTxMut},
};
use reth_hybrid_rocksdb::UpstreamRocksDb;

/// The tables storage v2 keeps in reth's RocksDB.
pub const UPSTREAM_TABLES: [Tables; 3] = [
    Tables::TransactionHashNumbers,
    Tables::AccountsHistory,
    Tables::StoragesHistory,
];

const ROWS_PER_COMMIT: u64 = 200_000;

/// Copies `table` from reth's RocksDB into `mdbx`, resuming after MDBX's last row, then checks
/// both sides hold the same rows. Returns the table's digest.
pub fn copy_upstream_table<E: RawEngine>(
    upstream: &UpstreamRocksDb,
    mdbx: &E,
    table: Tables,
    progress: &dyn crate::Progress,
) -> Result<TableDigest, MigrateError> {
    progress.begin(&format!("{table} from reth's RocksDB into MDBX"), None);
    let mut after = mdbx.begin_ro()?.cursor(table)?.last()?.map(|(k, _)| k);
    loop {
        let tx = mdbx.begin_rw()?;
        let mut cursor = tx.cursor_mut(table)?;
        let mut rows = 0u64;
        let mut last = None;
        upstream.for_each_row::<MigrateError>(table, after.as_deref(), |key, value| {
            cursor.append(key, value)?;
            rows += 1;
            if rows == ROWS_PER_COMMIT {
                last = Some(key.to_vec());
                return Ok(false);
            }
            Ok(true)
        })?;
        drop(cursor);
        tx.commit()?;
        progress.advance(rows);
        match last {
            Some(key) => after = Some(key),
            None => break,
        }
    }
    progress.end();
    compare(upstream, mdbx, table)
}

/// Both sides' rows and checksum; a difference fails, naming both.
fn compare<E: RawEngine>(
    upstream: &UpstreamRocksDb,
    mdbx: &E,
    table: Tables,
) -> Result<TableDigest, MigrateError> {
    let mut source = TableDigest::default();
    upstream.for_each_row::<MigrateError>(table, None, |k, v| {
        source.add(k, v);
        Ok(true)
    })?;
    let mut target = TableDigest::default();
    let tx = mdbx.begin_ro()?;
    let mut cursor = tx.cursor(table)?;
    let mut next = cursor.first()?;
    while let Some((k, v)) = next {
        target.add(&k, &v);
        next = cursor.next()?;
    }
    if source != target {
        return Err(MigrateError::VerifyFailed {
            table,
            source_rows: source.rows,
            source_sum: source.sum_hex(),
            target_rows: target.rows,
            target_sum: target.sum_hex(),
        });
    }
    Ok(source)
}
