//! The floor for any migration that reads MDBX in key order and writes once: the moved tables'
//! rows, as length-prefixed bytes, streamed into one flat file and fsynced. The migration
//! benchmarks divide by it (`ours / raw copy` throughput).

use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawEngine, RawTx},
};
use reth_hybrid_mdbx::MdbxEngine;
use std::{io::Write, path::Path, time::Instant};

/// What one raw copy read and how long it took.
#[derive(Debug, Clone, Copy)]
pub struct RawCopy {
    pub seconds: f64,
    pub rows: u64,
    /// Key and value bytes (the file also holds a 4-byte length before each).
    pub bytes: u64,
}

/// Streams every row of `tables` to `f`, in key order; returns (rows, key+value bytes).
pub fn scan_tables(
    engine: &MdbxEngine,
    tables: &[Tables],
    mut f: impl FnMut(Tables, &[u8], &[u8]),
) -> (u64, u64) {
    let tx = engine.begin_ro().expect("ro");
    let (mut rows, mut bytes) = (0, 0);
    for &table in tables {
        let mut c = tx.cursor(table).expect("cursor");
        let mut next = c.first().expect("first");
        while let Some((k, v)) = next {
            rows += 1;
            bytes += (k.len() + v.len()) as u64;
            f(table, &k, &v);
            next = c.next().expect("next");
        }
    }
    (rows, bytes)
}

/// One row as the raw copy writes it: each of key and value after its 4-byte length.
pub fn write_row(out: &mut impl Write, key: &[u8], value: &[u8]) {
    for part in [key, value] {
        out.write_all(&(part.len() as u32).to_le_bytes())
            .expect("write");
        out.write_all(part).expect("write");
    }
}

/// Copies the rows of `tables` in `datadir` into the file `out` (removed afterwards).
pub fn raw_copy(datadir: &Path, tables: &[Tables], out: &Path) -> RawCopy {
    let engine = MdbxEngine::open_read_only(datadir).expect("ro");
    let t = Instant::now();
    let mut file =
        std::io::BufWriter::with_capacity(8 << 20, std::fs::File::create(out).expect("create"));
    let (rows, bytes) = scan_tables(&engine, tables, |_, k, v| write_row(&mut file, k, v));
    let file = file.into_inner().expect("flush");
    file.sync_all().expect("fsync");
    let seconds = t.elapsed().as_secs_f64();
    drop(file);
    let _ = std::fs::remove_file(out);
    RawCopy {
        seconds,
        rows,
        bytes,
    }
}
