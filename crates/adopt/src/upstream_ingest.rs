//! reth's RocksDB tables (`AccountsHistory`, `StoragesHistory`, `TransactionHashNumbers` of a v2
//! datadir) straight into reth-hybrid's RocksDB, for an adoption whose target is the hybrid
//! layout: the bytes are the same in both, so rows go into SST files in the order they come and
//! each file is ingested whole (no MDBX B-tree in between, and no `migrate` after). A run
//! resumes after the last row the table holds; an ingested file is all there or not at all.
//! The copy is then checked: rows and an order-independent checksum on both sides.

use crate::{
    error::{AdoptError, io},
    upstream_copy::HeadLimits,
};
use reth_hybrid_api::Tables;
use reth_hybrid_hybrid::{
    digest::TableDigest,
    durable::remove_durably,
    row_feed::{self, RowSink},
};
use reth_hybrid_rocksdb::{RocksEngine, UpstreamRocksDb};
use std::{
    path::Path,
    sync::atomic::{AtomicBool, Ordering},
};

/// Rows per SST file: one ingestion each, and what a resumed run may copy again at most.
const ROWS_PER_FILE: u64 = 4_000_000;

/// Copies `table` from reth's RocksDB into `rocks` through SST files written in `staging` (a
/// folder of the caller's, created if missing), resuming after the table's last row, then
/// checks both sides hold the same rows. Returns the table's rows. A row past the head
/// ([`HeadLimits`]) stops the copy before the file that holds it is ingested. `stop` set (by a
/// copy running beside this one that failed) ends it before its next file with
/// [`AdoptError::StoppedBeside`].
pub fn ingest_upstream_table(
    upstream: &UpstreamRocksDb,
    rocks: &RocksEngine,
    staging: &Path,
    table: Tables,
    limits: HeadLimits,
    stop: &AtomicBool,
    progress: &dyn crate::Progress,
) -> Result<u64, AdoptError> {
    progress.begin(
        &format!("{table} from reth's RocksDB into hybrid-rocksdb"),
        upstream.estimated_rows(table),
    );
    std::fs::create_dir_all(staging).map_err(io(staging))?;
    let after = rocks.last_stored_key(table)?;
    // Rows copied by this run, hashed as they are read: when it started from an empty table
    // they are the whole source, and the check then reads only the copy.
    let mut source = after.is_none().then(TableDigest::default);
    if after.is_some() {
        progress.advance(rocks.table_size(table).estimated_rows);
    }
    std::thread::scope(|scope| -> Result<(), AdoptError> {
        // One thread reads reth's RocksDB (and checks the head) while this one writes SST files.
        let mut feed = row_feed::spawn_reader(scope, |sink: &mut RowSink<AdoptError>| {
            upstream.for_each_row::<AdoptError>(table, after.as_deref(), |key, value| {
                if let Some(example) = limits.past(table, key, value)? {
                    return Err(AdoptError::RowsPastHead {
                        table,
                        head: limits.head,
                        example,
                    });
                }
                Ok(sink.push(key, value))
            })
        });
        for file_number in 0u64.. {
            if stop.load(Ordering::Relaxed) {
                return Err(AdoptError::StoppedBeside);
            }
            let path = staging.join(format!("{}-{file_number:06}.sst", table.name()));
            // A name left by a run killed inside an ingestion can still be a hard link to a
            // live SST file of the table: writing through it (RocksDB opens with O_TRUNC) would
            // destroy that file. Unlinking the name leaves the live file as it is.
            remove_durably(&path).map_err(io(&path))?;
            let mut failed = None;
            let written = rocks.write_sst_file(table, &path, |sink| {
                while sink.rows() < ROWS_PER_FILE {
                    let row = match feed.current() {
                        Ok(Some(row)) => row,
                        Ok(None) => break,
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    };
                    sink.put(row.key, row.value)?;
                    if let Some(d) = source.as_mut() {
                        d.add_hash(row.hash);
                    }
                    feed.advance();
                }
                Ok(())
            })?;
            if let Some(e) = failed {
                // Rows past the head (or a read error): the file holding them is not ingested.
                let _ = remove_durably(&path);
                return Err(e);
            }
            let Some(file) = written else {
                break;
            };
            rocks.ingest_sst_files(table, std::slice::from_ref(&path))?;
            // Ingestion linked the file in and unlinked this name, without syncing the folder:
            // made durable here (a name a crash leaves is unlinked before its next write).
            remove_durably(&path).map_err(io(&path))?;
            reth_hybrid_hybrid::durable::sync_parent(&path).map_err(io(&path))?;
            progress.advance(file.rows);
            crate::crash::crash_point!("AdoptIngestAfterFile");
            if file.rows < ROWS_PER_FILE {
                break;
            }
        }
        Ok(())
    })?;
    progress.end();
    check_copy(upstream, rocks, table, source, stop, progress)
}

/// Both sides' rows and checksums. The source is read again only when this run did not copy it
/// all (a resumed run); then both sides are read at once, one thread each. A mismatch removes
/// the copy (a rerun copies the table anew) and fails before the switch.
fn check_copy(
    upstream: &UpstreamRocksDb,
    rocks: &RocksEngine,
    table: Tables,
    source: Option<TableDigest>,
    stop: &AtomicBool,
    progress: &dyn crate::Progress,
) -> Result<u64, AdoptError> {
    progress.begin(
        &format!("{table} in hybrid-rocksdb checked against reth's RocksDB"),
        None,
    );
    // Checked every 64Ki rows: a copy beside this one that failed ends the scan early.
    let go_on = |rows: u64| !rows.is_multiple_of(65_536) || !stop.load(Ordering::Relaxed);
    let copy_digest = || -> Result<TableDigest, AdoptError> {
        let mut digest = TableDigest::default();
        rocks.scan_table(table, None, |k, v| {
            digest.add(k, v);
            Ok(go_on(digest.rows))
        })?;
        Ok(digest)
    };
    let (source, copy) = match source {
        Some(source) => (source, copy_digest()?),
        None => std::thread::scope(|scope| {
            let copy = scope.spawn(copy_digest);
            let mut source = TableDigest::default();
            let read = upstream.for_each_row::<AdoptError>(table, None, |k, v| {
                source.add(k, v);
                Ok(go_on(source.rows))
            });
            let copy = copy.join().expect("the checksum thread panicked");
            read.map(|()| source).and_then(|s| Ok((s, copy?)))
        })?,
    };
    progress.end();
    if stop.load(Ordering::Relaxed) {
        return Err(AdoptError::StoppedBeside);
    }
    if source != copy {
        rocks.clear_table(table)?;
        return Err(AdoptError::IngestMismatch {
            table,
            source_rows: source.rows,
            target_rows: copy.rows,
        });
    }
    Ok(source.rows)
}
