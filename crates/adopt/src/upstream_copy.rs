//! reth's RocksDB tables (`AccountsHistory`, `StoragesHistory`, `TransactionHashNumbers` of a
//! v2 datadir) into the MDBX tables of the same name: the bytes are the same in both layouts,
//! and RocksDB's order is MDBX's, so rows are appended as they come. Commits every
//! [`ROWS_PER_COMMIT`] rows; a run resumes after the last row MDBX holds. The copy is then read
//! back from both sides and compared (rows and an order-independent checksum).

use crate::error::AdoptError;
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

/// Where the datadir's head is: reth writes its RocksDB before MDBX, so a v2 node stopped in
/// the middle of saving blocks leaves rows past the head there (healed at its next start). The
/// copy refuses them rather than carry them into a v1 datadir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadLimits {
    pub head: u64,
    /// The head's last transaction number (`None`: no transaction at all).
    pub last_tx: Option<u64>,
}

impl HeadLimits {
    /// `Some(what)` when the row is past the head.
    pub(crate) fn past(
        &self,
        table: Tables,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<String>, AdoptError> {
        use reth_hybrid_api::{Decompress, models::IntegerList};
        let decode = |_| AdoptError::Database(reth_hybrid_api::DatabaseError::decode());
        Ok(match table {
            Tables::TransactionHashNumbers => {
                let tx_num = u64::decompress(value).map_err(decode)?;
                self.last_tx
                    .is_none_or(|last| tx_num > last)
                    .then(|| format!("tx hash {} -> tx {tx_num}", hex::encode(key)))
            }
            _ => {
                // A shard key ends with its highest block (u64::MAX for the open shard).
                let Some(highest) = key
                    .len()
                    .checked_sub(8)
                    .map(|at| u64::from_be_bytes(key[at..].try_into().unwrap_or_default()))
                else {
                    return Ok(None);
                };
                let highest = if highest == u64::MAX {
                    IntegerList::decompress(value)
                        .map_err(decode)?
                        .max()
                        .unwrap_or(0)
                } else {
                    highest
                };
                (highest > self.head)
                    .then(|| format!("key {} lists block {highest}", hex::encode(key)))
            }
        })
    }
}

/// Copies `table` from reth's RocksDB into `mdbx`, resuming after MDBX's last row, then checks
/// both sides hold the same rows, row by row. Returns the table's rows. A row past the head
/// ([`HeadLimits`]) stops the copy before its commit.
pub fn copy_upstream_table<E: RawEngine>(
    upstream: &UpstreamRocksDb,
    mdbx: &E,
    table: Tables,
    limits: HeadLimits,
    progress: &dyn crate::Progress,
) -> Result<u64, AdoptError> {
    progress.begin(
        &format!("{table} from reth's RocksDB into MDBX"),
        upstream.estimated_rows(table),
    );
    let tx = mdbx.begin_ro()?;
    let mut after = tx.cursor(table)?.last()?.map(|(k, _)| k);
    // A resumed copy starts where the last one committed.
    progress.advance(tx.entries(table)? as u64);
    drop(tx);
    loop {
        let tx = mdbx.begin_rw()?;
        let mut cursor = tx.cursor_mut(table)?;
        let mut rows = 0u64;
        let mut last = None;
        upstream.for_each_row::<AdoptError>(table, after.as_deref(), |key, value| {
            if let Some(example) = limits.past(table, key, value)? {
                return Err(AdoptError::RowsPastHead {
                    table,
                    head: limits.head,
                    example,
                });
            }
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
        crate::crash::crash_point!("AdoptCopyAfterCommit");
        match last {
            Some(key) => after = Some(key),
            None => break,
        }
    }
    progress.end();
    compare(upstream, mdbx, table, progress)
}

/// Both sides in key order, row by row; the first difference (or a count mismatch) fails.
fn compare<E: RawEngine>(
    upstream: &UpstreamRocksDb,
    mdbx: &E,
    table: Tables,
    progress: &dyn crate::Progress,
) -> Result<u64, AdoptError> {
    let tx = mdbx.begin_ro()?;
    progress.begin(
        &format!("{table} in MDBX compared row by row with reth's RocksDB"),
        Some(tx.entries(table)? as u64),
    );
    let mut cursor = tx.cursor(table)?;
    let mut next = cursor.first()?;
    let (mut source_rows, mut target_rows, mut differ) = (0u64, 0u64, None);
    upstream.for_each_row::<AdoptError>(table, None, |k, v| {
        source_rows += 1;
        match &next {
            Some((mk, mv)) if mk.as_slice() == k && mv.as_slice() == v => {}
            other => {
                differ.get_or_insert_with(|| {
                    other.as_ref().map_or_else(Vec::new, |(mk, _)| mk.clone())
                });
            }
        }
        if next.is_some() {
            target_rows += 1;
            next = cursor.next()?;
        }
        if source_rows.is_multiple_of(1 << 20) {
            progress.advance(1 << 20);
        }
        Ok(true)
    })?;
    progress.advance(source_rows % (1 << 20));
    progress.end();
    while next.is_some() {
        target_rows += 1;
        differ.get_or_insert_with(Vec::new);
        next = cursor.next()?;
    }
    match differ {
        None => Ok(source_rows),
        Some(key) => Err(AdoptError::CopyMismatch {
            table,
            source_rows,
            target_rows,
            first_difference: hex::encode(key),
        }),
    }
}
