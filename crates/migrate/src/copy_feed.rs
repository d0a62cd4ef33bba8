//! The MDBX side of a copy into SST files: a reader thread walks the table (in runs, one lock
//! per run) and hashes each row while the caller's thread writes SST files, through the shared
//! row feed (`reth_hybrid_hybrid::row_feed`).

use reth_hybrid_api::raw::{RawCursor, RawResult};
use reth_hybrid_hybrid::row_feed::{self, RowSink};
use reth_hybrid_mdbx::MdbxCursor;

pub(crate) type RowFeed = row_feed::RowFeed<reth_hybrid_api::DatabaseError>;

/// Starts the reader thread in `scope`: `first` (the row the cursor stands on, where the copy
/// starts) and every row after it. Returns the writer's end.
pub(crate) fn spawn_reader<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    mut cursor: MdbxCursor,
    first: Option<(Vec<u8>, Vec<u8>)>,
) -> RowFeed {
    row_feed::spawn_reader(scope, move |sink: &mut RowSink<_>| {
        let Some((k, v)) = first else { return Ok(()) };
        if !sink.push(&k, &v) {
            return Ok(());
        }
        loop {
            let want = sink.room();
            let mut writer_gone = false;
            let seen = cursor.next_rows(want, |k, v| writer_gone |= !sink.push(k, v))?;
            if seen < want || writer_gone {
                return Ok(());
            }
        }
    })
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
