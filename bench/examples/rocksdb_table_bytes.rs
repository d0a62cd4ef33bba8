//! A hybrid RocksDB's table bytes in files: as opened (RocksDB's default open flushes the rows a
//! stopped node left in its WAL), after a flush, and after a full compaction. It writes to the
//! RocksDB it is given: run it on a copy (`cp -a <datadir>/hybrid-rocksdb /tmp/copy`).
//!
//! `cargo run -p reth-hybrid-bench --example rocksdb_table_bytes -- /tmp/copy`
use rocksdb::{DB, Options};
fn main() {
    let path = std::env::args().nth(1).expect("rocksdb path");
    let cfs = DB::list_cf(&Options::default(), &path).expect("list");
    let db = DB::open_cf(&Options::default(), &path, &cfs).expect("open");
    let show = |stage: &str| {
        let mut total = 0;
        for name in [
            "TransactionHashNumbers",
            "AccountsHistory",
            "StoragesHistory",
            "Metadata",
        ] {
            let cf = db.cf_handle(name).expect("cf");
            let p = |k: &str| db.property_int_value_cf(cf, k).ok().flatten().unwrap_or(0);
            let sst = p("rocksdb.total-sst-files-size");
            let mem = p("rocksdb.cur-size-all-mem-tables");
            if name != "Metadata" {
                total += sst;
            }
            println!(
                "{stage:10} {name:24} sst {:8.1} MiB  memtable {:6.1} MiB  L0 files {}",
                sst as f64 / 1048576.0,
                mem as f64 / 1048576.0,
                p("rocksdb.num-files-at-level0")
            );
        }
        println!(
            "{stage:10} three tables' SSTs: {:.1} MiB",
            total as f64 / 1048576.0
        );
    };
    show("opened");
    for n in &cfs {
        db.flush_cf(db.cf_handle(n).expect("cf")).expect("flush");
    }
    show("flushed");
    for n in &cfs {
        db.compact_range_cf::<&[u8], &[u8]>(db.cf_handle(n).expect("cf"), None, None);
    }
    show("compacted");
}
