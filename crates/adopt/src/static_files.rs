//! What storage v2 keeps in static files and v1 in MDBX: account and storage changesets and
//! transaction senders. Only reth reads static files, so the caller supplies them (the node
//! binary's `db adopt-v2` through reth's static-file provider); this module writes them into
//! MDBX's tables block by block, resumable, in whole blocks per commit.

use crate::error::AdoptError;
use alloy_primitives::{Address, B256};
use reth_hybrid_api::{
    Database, DatabaseError, DbCursorRO, DbCursorRW, DbTx, DbTxMut,
    error::codes,
    models::{AccountBeforeTx, BlockNumberAddress, StorageEntry},
    raw::RawEngine,
    tables,
    typed::TypedDatabase,
};
use std::sync::atomic::{AtomicBool, Ordering};

/// An error from the caller's static-file reader.
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// A v2 datadir's static files, read by block (from a thread of adoption's own, hence `Sync`).
/// Rows come as reth stores them: a block's account changes sorted by address, its storage
/// changes by address then slot, senders in transaction order.
pub trait V2StaticFiles: Sync {
    fn account_changesets(&self, block: u64) -> Result<Vec<AccountBeforeTx>, SourceError>;
    fn storage_changesets(&self, block: u64) -> Result<Vec<(Address, StorageEntry)>, SourceError>;
    /// The senders of transactions `first..first + count`.
    fn senders(&self, first: u64, count: u64) -> Result<Vec<Address>, SourceError>;
    /// The last block both changeset segments hold (`None`: no changesets at all). reth's
    /// readers answer "no changes" for a block past the files, so adoption checks this first.
    fn changesets_end(&self) -> Option<u64>;
    /// The last transaction the senders segment holds (`None`: no senders at all); adoption
    /// checks it against the head's last transaction before it stages anything.
    fn senders_end(&self) -> Option<u64>;
    /// The account and storage changes the static files record for `block` in their own
    /// index (reth's changeset offsets), to check the copied rows against.
    fn changeset_counts(&self, block: u64) -> Result<(u64, u64), SourceError>;
    /// The state root `block`'s header commits to (headers live in static files).
    fn state_root(&self, block: u64) -> Result<B256, SourceError>;
    /// Bytes the three segments take on disk, for the free-space estimate.
    fn bytes(&self) -> u64;
    /// Removes the three segments once MDBX holds them and the datadir is v1 (reth v1 ignores
    /// them, but they hold disk and `db migrate-v2` refuses a datadir that has them).
    fn remove(&self) -> Result<(), SourceError>;
}

/// Blocks per write transaction.
const BLOCKS_PER_COMMIT: u64 = 1_000;

/// Rows written by [`copy_static_files`] over the whole copy (earlier runs included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StaticRows {
    pub account_changesets: u64,
    pub storage_changesets: u64,
    pub senders: u64,
}

fn source_err(what: &str, block: u64) -> impl FnOnce(SourceError) -> AdoptError + '_ {
    move |source| AdoptError::StaticFiles {
        what: format!("{what} of block {block}"),
        source,
    }
}

/// A row refused as not sorting last (`KEY_MISMATCH`): the static files handed a block's rows
/// out of reth's order, which the error says with the block; other errors pass as they are.
fn out_of_order(what: &str, block: u64) -> impl FnOnce(DatabaseError) -> AdoptError + '_ {
    move |e| {
        if e.code() == Some(codes::KEY_MISMATCH) {
            AdoptError::StaticFiles {
                what: format!("{what} of block {block}"),
                source: format!(
                    "a row out of reth's order (by address, then slot) or a repeated row ({e}); \
                     nothing was switched and the datadir is still a working v2 datadir"
                )
                .into(),
            }
        } else {
            e.into()
        }
    }
}

/// The first block not yet copied: after the highest block any of the three tables holds
/// (whole blocks are committed together, so every block up to it is complete).
fn resume_block<E: RawEngine>(db: &TypedDatabase<E>) -> Result<u64, AdoptError> {
    let tx = db.tx()?;
    let accounts = tx
        .cursor_read::<tables::AccountChangeSets>()?
        .last()?
        .map(|(b, _)| b);
    let storage = tx
        .cursor_read::<tables::StorageChangeSets>()?
        .last()?
        .map(|(k, _)| k.block_number());
    let senders = match tx.cursor_read::<tables::TransactionSenders>()?.last()? {
        Some((tx_num, _)) => tx
            .cursor_read::<tables::TransactionBlocks>()?
            .seek(tx_num)?
            .map(|(_, block)| block),
        None => None,
    };
    Ok([accounts, storage, senders]
        .into_iter()
        .flatten()
        .max()
        .map_or(0, |b| b.saturating_add(1)))
}

/// Blocks the reader thread may read ahead of the writer: bounded memory (a block's rows), and
/// enough that neither side waits on the other's jitter.
const READ_AHEAD_BLOCKS: usize = 256;

/// One block's rows as the static files hold them.
struct BlockRows {
    block: u64,
    accounts: Vec<AccountBeforeTx>,
    storage: Vec<(Address, StorageEntry)>,
    /// The block's first transaction number and its senders.
    senders: Option<(u64, Vec<Address>)>,
}

/// Copies changesets and senders of blocks `0..=tip` from `source` into MDBX. A second thread
/// reads the static files (reth's decompress and decode) while this one writes MDBX; the writes
/// and their commits are the same as one thread's, so a kill leaves whole blocks either way.
/// `stop` set (by a copy running beside this one that failed) ends it at its next commit with
/// [`AdoptError::StoppedBeside`].
pub fn copy_static_files<E: RawEngine>(
    db: &TypedDatabase<E>,
    source: &dyn V2StaticFiles,
    tip: u64,
    stop: &AtomicBool,
    progress: &dyn crate::Progress,
) -> Result<StaticRows, AdoptError> {
    let start = resume_block(db)?;
    progress.begin(
        "changesets and senders from static files into MDBX",
        Some(tip + 1),
    );
    progress.advance(start.min(tip + 1));
    std::thread::scope(|scope| {
        let (send, receive) = std::sync::mpsc::sync_channel(READ_AHEAD_BLOCKS);
        let reader = scope.spawn(move || read_blocks(db, source, start, tip, &send));
        // The writer returns (dropping `receive`) on its first error, which stops the reader.
        let written = write_blocks(db, &receive, start, tip, stop, progress);
        drop(receive);
        let read = reader
            .join()
            .expect("the static-file reader thread panicked");
        // A reader that failed before sending says why; the writer then only saw it stop.
        read.and(written)
    })?;
    progress.end();
    let tx = db.tx()?;
    Ok(StaticRows {
        account_changesets: tx.entries::<tables::AccountChangeSets>()? as u64,
        storage_changesets: tx.entries::<tables::StorageChangeSets>()? as u64,
        senders: tx.entries::<tables::TransactionSenders>()? as u64,
    })
}

/// Reads blocks `start..=tip` in order into `send`; stops early when the writer has gone. A
/// failure is sent on as the next item, so the writer reports it after the blocks before it.
fn read_blocks<E: RawEngine>(
    db: &TypedDatabase<E>,
    source: &dyn V2StaticFiles,
    start: u64,
    tip: u64,
    send: &std::sync::mpsc::SyncSender<Result<BlockRows, AdoptError>>,
) -> Result<(), AdoptError> {
    let tx = db.tx()?;
    let mut bodies = tx.cursor_read::<tables::BlockBodyIndices>()?;
    for block in start..=tip {
        let rows = (|| {
            let accounts = source
                .account_changesets(block)
                .map_err(source_err("account changesets", block))?;
            let storage = source
                .storage_changesets(block)
                .map_err(source_err("storage changesets", block))?;
            let senders = match bodies.seek_exact(block)?.map(|(_, body)| body) {
                Some(body) if body.tx_count > 0 => {
                    let senders = source
                        .senders(body.first_tx_num, body.tx_count)
                        .map_err(source_err("senders", block))?;
                    if senders.len() as u64 != body.tx_count {
                        return Err(AdoptError::StaticFiles {
                            what: format!("senders of block {block}"),
                            source: format!(
                                "{} senders for {} transactions",
                                senders.len(),
                                body.tx_count
                            )
                            .into(),
                        });
                    }
                    Some((body.first_tx_num, senders))
                }
                _ => None,
            };
            Ok(BlockRows {
                block,
                accounts,
                storage,
                senders,
            })
        })();
        let failed = rows.is_err();
        if send.send(rows).is_err() || failed {
            break;
        }
    }
    Ok(())
}

/// Writes the blocks `start..=tip` from `receive`, whole blocks per commit.
fn write_blocks<E: RawEngine>(
    db: &TypedDatabase<E>,
    receive: &std::sync::mpsc::Receiver<Result<BlockRows, AdoptError>>,
    start: u64,
    tip: u64,
    stop: &AtomicBool,
    progress: &dyn crate::Progress,
) -> Result<(), AdoptError> {
    let mut block = start;
    while block <= tip {
        if stop.load(Ordering::Relaxed) {
            return Err(AdoptError::StoppedBeside);
        }
        let last = (block + BLOCKS_PER_COMMIT - 1).min(tip);
        let tx = db.tx_mut()?;
        {
            let mut accounts = tx.cursor_dup_write::<tables::AccountChangeSets>()?;
            let mut storage = tx.cursor_dup_write::<tables::StorageChangeSets>()?;
            let mut senders_rows = tx.cursor_write::<tables::TransactionSenders>()?;
            // Appended in tx order; a resumed run skips the senders an earlier one committed.
            let copied = senders_rows.last()?.map(|(tx_num, _)| tx_num);
            for b in block..=last {
                let rows = receive.recv().map_err(|_| AdoptError::StaticFiles {
                    what: format!("rows of block {b}"),
                    source: "the reader stopped early".into(),
                })??;
                debug_assert_eq!(rows.block, b, "blocks arrive in order");
                // The rows sort after everything copied before them (blocks in order, each
                // block's rows as reth sorts them), so they go at each table's end.
                for entry in rows.accounts {
                    accounts
                        .append_last(b, entry)
                        .map_err(out_of_order("account changesets", b))?;
                }
                for (address, entry) in rows.storage {
                    storage
                        .append_last(BlockNumberAddress((b, address)), entry)
                        .map_err(out_of_order("storage changesets", b))?;
                }
                if let Some((first, senders)) = rows.senders {
                    for (tx_num, sender) in (first..).zip(senders) {
                        if copied.is_none_or(|last| tx_num > last) {
                            senders_rows.append(tx_num, &sender)?;
                        }
                    }
                }
            }
        }
        tx.commit()?;
        progress.advance(last + 1 - block);
        crate::crash::crash_point!("AdoptStaticAfterCommit");
        block = last + 1;
    }
    Ok(())
}
