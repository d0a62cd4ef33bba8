//! The MDBX side of a copy into SST files: a reader thread walks the table and hashes each row
//! while the caller's thread writes SST files. Rows travel in batches packed into one buffer, so
//! a row costs no allocation on either side (measured: the per-row `Vec`s and the lock of each
//! cursor step were a third of the copy's CPU).

use crate::digest::TableDigest;
use reth_hybrid_api::raw::{RawCursor, RawResult};
use reth_hybrid_mdbx::MdbxCursor;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Rows per batch handed from the reader to the writer.
const BATCH_ROWS: usize = 4096;
/// Batches the reader may run ahead of the writer.
const BATCHES_IN_FLIGHT: usize = 8;

/// Rows packed into one buffer: each row's key, then its value.
#[derive(Default)]
struct RowBatch {
    bytes: Vec<u8>,
    rows: Vec<PackedRow>,
}

struct PackedRow {
    start: usize,
    key_len: usize,
    value_len: usize,
    hash: u128,
}

impl RowBatch {
    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.rows.push(PackedRow {
            start: self.bytes.len(),
            key_len: key.len(),
            value_len: value.len(),
            hash: TableDigest::row_hash(key, value),
        });
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
    }

    fn row(&self, i: usize) -> Option<CopiedRow<'_>> {
        let r = self.rows.get(i)?;
        let key_end = r.start + r.key_len;
        Some(CopiedRow {
            key: &self.bytes[r.start..key_end],
            value: &self.bytes[key_end..key_end + r.value_len],
            hash: r.hash,
        })
    }
}

/// One row as the writer sees it, with the hash the reader computed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CopiedRow<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub hash: u128,
}

/// Starts the reader thread in `scope`: `first` (the row the cursor stands on, where the copy
/// starts) and every row after it. Returns the writer's end.
pub(crate) fn spawn_reader<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    cursor: MdbxCursor,
    first: Option<(Vec<u8>, Vec<u8>)>,
) -> RowFeed {
    let (sender, receiver) = sync_channel(BATCHES_IN_FLIGHT);
    scope.spawn(move || read_rows(cursor, first, sender));
    RowFeed {
        batch: RowBatch::default(),
        pos: 0,
        receiver,
    }
}

/// The reader thread: stops at the end of the table, on an error (sent on), or when the
/// writer hung up.
fn read_rows(
    mut cursor: MdbxCursor,
    first: Option<(Vec<u8>, Vec<u8>)>,
    sender: SyncSender<RawResult<RowBatch>>,
) {
    let Some((k, v)) = first else { return };
    let mut batch = RowBatch::default();
    batch.push(&k, &v);
    loop {
        let want = BATCH_ROWS - batch.rows.len();
        match cursor.next_rows(want, |k, v| batch.push(k, v)) {
            Ok(seen) => {
                let ended = seen < want;
                if sender.send(Ok(std::mem::take(&mut batch))).is_err() || ended {
                    return;
                }
            }
            Err(e) => {
                let _ = sender.send(Err(e));
                return;
            }
        }
    }
}

/// The writer's end: the current row, and a step to the next.
pub(crate) struct RowFeed {
    batch: RowBatch,
    pos: usize,
    receiver: Receiver<RawResult<RowBatch>>,
}

impl RowFeed {
    /// The row the feed stands on; `None` once the reader finished.
    pub(crate) fn current(&mut self) -> RawResult<Option<CopiedRow<'_>>> {
        while self.pos >= self.batch.rows.len() {
            match self.receiver.recv() {
                Ok(batch) => {
                    self.batch = batch?;
                    self.pos = 0;
                }
                // The reader finished and hung up.
                Err(_) => return Ok(None),
            }
        }
        Ok(self.batch.row(self.pos))
    }

    pub(crate) fn advance(&mut self) {
        self.pos += 1;
    }
}

/// Where a copy starts: the first row, or after `last` (a stored key as
/// [`reth_hybrid_rocksdb::RocksEngine::stored_key`] builds it) when resuming.
pub(crate) fn position(
    cursor: &mut MdbxCursor,
    table: reth_hybrid_api::Tables,
    last: Option<&[u8]>,
) -> RawResult<Option<(Vec<u8>, Vec<u8>)>> {
    let Some(last) = last else {
        return cursor.first();
    };
    let seek_key = match table.dupsort_key_len() {
        Some(len) => &last[..len.min(last.len())],
        None => last,
    };
    let mut row = cursor.seek(seek_key)?;
    while let Some((k, v)) = &row {
        if reth_hybrid_rocksdb::RocksEngine::stored_key(table, k, v).as_slice() > last {
            break;
        }
        row = cursor.next()?;
    }
    Ok(row)
}
