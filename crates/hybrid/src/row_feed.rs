//! A reader thread handing rows to a writer: the reader walks a source (MDBX for `migrate`,
//! reth's RocksDB for adoption) and hashes each row while the caller's thread writes SST files.
//! Rows travel in batches packed into one buffer, so a row costs no allocation on either side
//! (measured: per-row `Vec`s and a lock per cursor step were a third of a copy's CPU).

use crate::digest::TableDigest;
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
pub struct CopiedRow<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub hash: u128,
}

/// The reader's end: rows pushed here reach the writer in batches, in order.
pub struct RowSink<E> {
    batch: RowBatch,
    sender: SyncSender<Result<RowBatch, E>>,
}

impl<E> std::fmt::Debug for RowSink<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowSink")
            .field("batched", &self.batch.rows.len())
            .finish()
    }
}

impl<E> RowSink<E> {
    /// Adds a row; `false` once the writer has gone (the reader should stop).
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> bool {
        self.batch.push(key, value);
        self.batch.rows.len() < BATCH_ROWS || self.flush()
    }

    /// Rows that fit before the current batch is sent (a reader that reads in runs asks).
    pub fn room(&self) -> usize {
        BATCH_ROWS - self.batch.rows.len()
    }

    fn flush(&mut self) -> bool {
        self.batch.rows.is_empty()
            || self
                .sender
                .send(Ok(std::mem::take(&mut self.batch)))
                .is_ok()
    }
}

/// Starts `read` on a thread of `scope`, pushing the source's rows in order into its sink;
/// returns the writer's end. An error `read` returns reaches the writer after the rows before
/// it.
pub fn spawn_reader<'scope, E: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    read: impl FnOnce(&mut RowSink<E>) -> Result<(), E> + Send + 'scope,
) -> RowFeed<E> {
    let (sender, receiver) = sync_channel(BATCHES_IN_FLIGHT);
    scope.spawn(move || {
        let mut sink = RowSink {
            batch: RowBatch::default(),
            sender,
        };
        match read(&mut sink) {
            Ok(()) => {
                sink.flush();
            }
            Err(e) => {
                // The rows before the error first.
                if sink.flush() {
                    let _ = sink.sender.send(Err(e));
                }
            }
        }
    });
    RowFeed {
        batch: RowBatch::default(),
        pos: 0,
        receiver,
    }
}

/// The writer's end: the current row, and a step to the next.
pub struct RowFeed<E> {
    batch: RowBatch,
    pos: usize,
    receiver: Receiver<Result<RowBatch, E>>,
}

impl<E> std::fmt::Debug for RowFeed<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowFeed")
            .field("batched", &self.batch.rows.len())
            .field("pos", &self.pos)
            .finish()
    }
}

impl<E> RowFeed<E> {
    /// The row the feed stands on; `None` once the reader finished.
    pub fn current(&mut self) -> Result<Option<CopiedRow<'_>>, E> {
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

    pub fn advance(&mut self) {
        self.pos += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows arrive in order across batch boundaries with their hashes, then the reader's error.
    #[test]
    fn rows_arrive_in_order_then_the_error() {
        let n = BATCH_ROWS * 2 + 17;
        std::thread::scope(|scope| {
            let mut feed = spawn_reader(scope, move |sink: &mut RowSink<String>| {
                for i in 0..n as u32 {
                    assert!(sink.push(&i.to_be_bytes(), &[i as u8; 3]));
                }
                Err("stopped".to_string())
            });
            for i in 0..n as u32 {
                let row = feed.current().expect("row").expect("some");
                assert_eq!(row.key, i.to_be_bytes());
                assert_eq!(row.value, [i as u8; 3]);
                assert_eq!(row.hash, TableDigest::row_hash(row.key, row.value));
                feed.advance();
            }
            assert_eq!(feed.current().err().as_deref(), Some("stopped"));
        });
    }

    /// A writer that hangs up stops the reader at its next batch.
    #[test]
    fn a_writer_that_hangs_up_stops_the_reader() {
        std::thread::scope(|scope| {
            let (done, pushed) = std::sync::mpsc::channel();
            let feed = spawn_reader(scope, move |sink: &mut RowSink<()>| {
                let mut rows = 0u64;
                while sink.push(b"k", b"v") {
                    rows += 1;
                }
                done.send(rows).expect("send");
                Ok(())
            });
            drop(feed);
            let rows = pushed.recv().expect("the reader stopped");
            assert!(
                rows < (BATCH_ROWS * (BATCHES_IN_FLIGHT + 2)) as u64,
                "{rows}"
            );
        });
    }
}
