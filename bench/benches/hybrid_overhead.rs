//! The hybrid's cost over driving both engines directly, on the same workload in one run:
//! (a) reads: history seeks (RocksDB) and account gets (MDBX) through the typed reth API over
//!     `HybridDb` vs the same raw calls on each engine, decoding the same values;
//! (b) commits: one hybrid commit vs committing each engine alone (MDBX's durable commit, then a
//!     synced RocksDB write), with deferred RocksDB syncs (the default: the RocksDB writes ride
//!     in MDBX's commit, RocksDB's WAL is synced about once a second) and with `EveryCommit`
//!     (intent fsync + MDBX + synced RocksDB write).
//! (c) commit size: 100 to 48,000 history rows a commit, every one deferred against every one
//!     through the intent log (`HYBRID_OVERHEAD_AGED_ROWS=N` first writes N accounts in random
//!     order and deletes a random half, to scatter MDBX's free pages as a node's are).
//! Prints `hybrid/raw` for (a) and (b) (goals: reads <= 1.10x, commits <= 1.10x) and
//! `every-commit/deferred` for (c).

use criterion::Criterion;
use reth_hybrid_api::{
    DbCursorRO, DbTx, Decode, Decompress, Tables,
    models::{Account, Address, IntegerList, ShardedKey, U256},
    raw::{RawCursor, RawEngine, RawTx, RawTxMut},
    table::compress_to_vec,
    tables::{AccountsHistory, PlainAccountState},
    typed::{Database, TypedDatabase},
};
use reth_hybrid_bench::{KeyGen, print_ratio_table};
use reth_hybrid_hybrid::{FollowerSync, HybridDb, HybridOptions};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_rocksdb::{RocksEngine, RocksOptions};
use std::{hint::black_box, path::Path};

const ADDRESSES: usize = 50_000;
const LOOKUPS: usize = 100;

fn engines(dir: &Path) -> (MdbxEngine, RocksEngine) {
    let mdbx =
        MdbxEngine::open(dir, MdbxOptions::create().with_geometry(Geometry::SMALL)).expect("mdbx");
    let rocks =
        RocksEngine::open(&dir.join("hybrid-rocksdb"), &RocksOptions::default()).expect("rocksdb");
    (mdbx, rocks)
}

fn addresses() -> Vec<Address> {
    let mut g = KeyGen::new(3);
    (0..ADDRESSES)
        .map(|_| Address::from(g.bytes::<20>()))
        .collect()
}

fn main() {
    // No charts: the ratios printed are the result, and a chart backend must never end a run
    // (criterion's plotters charts panicked with FontUnavailable when plotters' ab_glyph text,
    // enabled for our own reports, had no registered font).
    let mut c = Criterion::default().without_plots().configure_from_args();
    let addrs = addresses();
    let account = Account {
        nonce: 7,
        balance: U256::from(1_000_000u64),
        bytecode_hash: None,
    };
    let shard = IntegerList::new([100, 200, 300, 400]).expect("sorted");
    // A shard as long as reth's on a busy account (tens of blocks), for the payload sweep.
    let wide_shard = IntegerList::new((0..24u64).map(|i| 1_000 + i * 37)).expect("sorted");

    // Hybrid datadir, loaded through the typed API.
    let hdir = tempfile::tempdir().expect("tmp");
    let (m, r) = engines(hdir.path());
    let hybrid = TypedDatabase::new(
        HybridDb::open(m, r, hdir.path(), HybridOptions::default()).expect("hybrid"),
    );
    hybrid
        .update(|tx| {
            for a in &addrs {
                reth_hybrid_api::DbTxMut::put::<PlainAccountState>(tx, *a, account)?;
                reth_hybrid_api::DbTxMut::put::<AccountsHistory>(
                    tx,
                    ShardedKey::last(*a),
                    shard.clone(),
                )?;
            }
            Ok::<_, reth_hybrid_api::DatabaseError>(())
        })
        .expect("update")
        .expect("load");

    // A second hybrid whose every commit syncs RocksDB (commits only).
    let edir = tempfile::tempdir().expect("tmp");
    let every_commit = open_hybrid(edir.path(), FollowerSync::EveryCommit);

    // The same rows written straight into two engines.
    let rdir = tempfile::tempdir().expect("tmp");
    let (mdbx, rocks) = engines(rdir.path());
    {
        let (mt, rt) = (mdbx.begin_rw().expect("rw"), rocks.begin_rw().expect("rw"));
        for a in &addrs {
            mt.put(
                Tables::PlainAccountState,
                a.as_slice(),
                &compress_to_vec(&account),
            )
            .expect("put");
            let key = reth_hybrid_api::Encode::encode(ShardedKey::last(*a));
            rt.put(Tables::AccountsHistory, &key, &compress_to_vec(&shard))
                .expect("put");
        }
        mt.commit().expect("commit");
        rt.commit().expect("commit");
    }

    let mut g = KeyGen::new(9);
    let mut pick = move || addrs[(g.next_u64() as usize) % addrs.len()];
    let mut pick2 = pick.clone();
    let mut group = c.benchmark_group("reads_100_history_seeks_100_account_gets");
    group.bench_function("hybrid", |b| {
        b.iter(|| {
            let tx = hybrid.tx().expect("ro");
            let mut cur = tx.cursor_read::<AccountsHistory>().expect("cursor");
            for _ in 0..LOOKUPS {
                let a = pick();
                black_box(cur.seek(ShardedKey::new(a, 150)).expect("seek"));
                black_box(tx.get::<PlainAccountState>(a).expect("get"));
            }
        })
    });
    group.bench_function("raw", |b| {
        b.iter(|| {
            let (mt, rt) = (mdbx.begin_ro().expect("ro"), rocks.begin_ro().expect("ro"));
            let mut cur = rt.cursor(Tables::AccountsHistory).expect("cursor");
            for _ in 0..LOOKUPS {
                let a = pick2();
                let key = reth_hybrid_api::Encode::encode(ShardedKey::new(a, 150));
                if let Some((k, v)) = cur.seek(&key).expect("seek") {
                    black_box((
                        ShardedKey::<Address>::decode(&k).expect("key"),
                        IntegerList::decompress(&v).expect("value"),
                    ));
                }
                if let Some(v) = mt
                    .get(Tables::PlainAccountState, a.as_slice())
                    .expect("get")
                {
                    black_box(Account::decompress(&v).expect("value"));
                }
            }
        })
    });
    group.finish();

    let mut n = 0u64;
    let mut group = c.benchmark_group("commit_100_rows_each_engine");
    group.sample_size(20);
    for (name, db) in [("hybrid", &hybrid), ("hybrid-every-commit", &every_commit)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let tx = db.tx_mut().expect("rw");
                for _ in 0..100 {
                    n += 1;
                    let a = Address::from_word(U256::from(n).into());
                    reth_hybrid_api::DbTxMut::put::<PlainAccountState>(&tx, a, account)
                        .expect("put");
                    reth_hybrid_api::DbTxMut::put::<AccountsHistory>(
                        &tx,
                        ShardedKey::last(a),
                        shard.clone(),
                    )
                    .expect("put");
                }
                tx.commit().expect("commit");
            })
        });
    }
    group.bench_function("raw", |b| {
        b.iter(|| {
            let (mt, rt) = (mdbx.begin_rw().expect("rw"), rocks.begin_rw().expect("rw"));
            for _ in 0..100 {
                n += 1;
                let a = Address::from_word(U256::from(n).into());
                mt.put(
                    Tables::PlainAccountState,
                    a.as_slice(),
                    &compress_to_vec(&account),
                )
                .expect("put");
                let key = reth_hybrid_api::Encode::encode(ShardedKey::last(a));
                rt.put(Tables::AccountsHistory, &key, &compress_to_vec(&shard))
                    .expect("put");
            }
            mt.commit().expect("commit");
            rt.commit().expect("commit");
        })
    });
    group.finish();

    // Whether deferring stops paying as commits grow: every one deferred vs every one through
    // the intent log and a synced RocksDB write. (The default's 64 KiB bound comes from a node's
    // persistence waits, which this sweep has not reproduced: docs/benchmarks.md.)
    let always_deferred = match FollowerSync::default() {
        FollowerSync::Deferred {
            max_commits,
            max_delay,
            ..
        } => FollowerSync::Deferred {
            max_commits,
            max_delay,
            max_row_bytes: usize::MAX,
        },
        FollowerSync::EveryCommit => unreachable!("the default defers"),
    };
    let ddir = tempfile::tempdir().expect("tmp");
    let sweep_modes = [
        ("deferred", open_hybrid(ddir.path(), always_deferred)),
        ("every-commit", every_commit),
    ];
    // A node's MDBX is large and churned, so its free pages are scattered; a fresh one is not.
    let aged_rows = reth_hybrid_bench::env_or("HYBRID_OVERHEAD_AGED_ROWS", 0usize);
    if aged_rows > 0 {
        for (_, db) in &sweep_modes {
            age(db, aged_rows);
        }
    }
    let mut sweep_groups = Vec::new();
    for rows in PAYLOAD_SWEEP_ROWS {
        let group_name = format!("commit_history_rows_{rows}");
        let mut group = c.benchmark_group(&group_name);
        group.sample_size(10);
        for (name, db) in &sweep_modes {
            group.bench_function(*name, |b| {
                b.iter(|| {
                    let tx = db.tx_mut().expect("rw");
                    n += 1;
                    let a = Address::from_word(U256::from(n).into());
                    reth_hybrid_api::DbTxMut::put::<PlainAccountState>(&tx, a, account)
                        .expect("put");
                    for _ in 0..rows {
                        n += 1;
                        let a = Address::from_word(U256::from(n).into());
                        reth_hybrid_api::DbTxMut::put::<AccountsHistory>(
                            &tx,
                            ShardedKey::last(a),
                            wide_shard.clone(),
                        )
                        .expect("put");
                    }
                    tx.commit().expect("commit");
                })
            });
        }
        group.finish();
        sweep_groups.push(group_name);
    }
    c.final_summary();
    println!(
        "\nhybrid/raw time ratio (goals <= 1.10x; deferred RocksDB syncs, the default: one durable \
         commit, MDBX's):"
    );
    print_ratio_table(
        &[
            "reads_100_history_seeks_100_account_gets",
            "commit_100_rows_each_engine",
        ],
        "hybrid",
        "raw",
    );
    println!(
        "\nwith FollowerSync::EveryCommit (intent fsync + MDBX + synced RocksDB write per commit):"
    );
    print_ratio_table(
        &["commit_100_rows_each_engine"],
        "hybrid-every-commit",
        "raw",
    );
    println!(
        "\ncommits by RocksDB payload ({} B a row): every-commit/deferred (> 1: deferring pays; \
         the default defers payloads up to {} KiB):",
        sweep_row_bytes(&wide_shard),
        deferred_defaults_max_row_kib()
    );
    let sweep_refs: Vec<&str> = sweep_groups.iter().map(String::as_str).collect();
    print_ratio_table(&sweep_refs, "every-commit", "deferred");
}

/// History rows per commit in the payload sweep (about 100 bytes each): from `make demo`'s size
/// (10 KiB) to 5 MiB, past what a persistence commit of a few full blocks writes to RocksDB.
const PAYLOAD_SWEEP_ROWS: [usize; 5] = [100, 1_000, 4_000, 16_000, 48_000];

fn open_hybrid(
    dir: &Path,
    follower_sync: FollowerSync,
) -> TypedDatabase<HybridDb<MdbxEngine, RocksEngine>> {
    let (m, r) = engines(dir);
    TypedDatabase::new(
        HybridDb::open(
            m,
            r,
            dir,
            HybridOptions {
                follower_sync,
                ..HybridOptions::default()
            },
        )
        .expect("hybrid"),
    )
}

fn deferred_defaults_max_row_kib() -> usize {
    match FollowerSync::default() {
        FollowerSync::Deferred { max_row_bytes, .. } => max_row_bytes >> 10,
        FollowerSync::EveryCommit => 0,
    }
}

/// Writes `rows` accounts in random order in commits of 10,000, then deletes a random half of
/// them: MDBX's free pages end up scattered as in a long-running node's.
fn age(db: &TypedDatabase<HybridDb<MdbxEngine, RocksEngine>>, rows: usize) {
    let mut g = KeyGen::new(77);
    let keys: Vec<Address> = (0..rows).map(|_| Address::from(g.bytes::<20>())).collect();
    for chunk in keys.chunks(10_000) {
        db.update(|tx| {
            for a in chunk {
                let account = Account {
                    nonce: g.next_u64(),
                    balance: U256::from(g.next_u64()),
                    bytecode_hash: None,
                };
                reth_hybrid_api::DbTxMut::put::<PlainAccountState>(tx, *a, account)?;
            }
            Ok::<_, reth_hybrid_api::DatabaseError>(())
        })
        .expect("update")
        .expect("age");
    }
    for chunk in keys.chunks(10_000) {
        db.update(|tx| {
            for a in chunk.iter().filter(|_| g.next_u64().is_multiple_of(2)) {
                reth_hybrid_api::DbTxMut::delete::<PlainAccountState>(tx, *a, None)?;
            }
            Ok::<_, reth_hybrid_api::DatabaseError>(())
        })
        .expect("update")
        .expect("age");
    }
}

/// Bytes one history row adds to a payload: its key and value (framing aside).
fn sweep_row_bytes(shard: &IntegerList) -> usize {
    28 + compress_to_vec(shard).len()
}
