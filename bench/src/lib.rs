//! Shared helpers for reth-hybrid's benchmarks: realistic keys and side-by-side ratio reports.

use std::path::PathBuf;

pub mod persist;
pub mod raw_copy;
pub mod reth_bench;
pub mod scale;
pub mod seeds;
pub mod v2_twin;

/// A deterministic stream of pseudo-random bytes (splitmix64), so every engine sees the same keys.
#[derive(Debug, Clone)]
pub struct KeyGen(u64);

impl KeyGen {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        for chunk in out.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        out
    }
}

/// A 28-byte `ShardedKey<Address>`: address ++ highest block (BE).
pub fn sharded_key(address: [u8; 20], block: u64) -> [u8; 28] {
    let mut k = [0u8; 28];
    k[..20].copy_from_slice(&address);
    k[20..].copy_from_slice(&block.to_be_bytes());
    k
}

/// A 60-byte `StorageShardedKey`: address ++ slot ++ highest block (BE).
pub fn storage_sharded_key(address: [u8; 20], slot: [u8; 32], block: u64) -> [u8; 60] {
    let mut k = [0u8; 60];
    k[..20].copy_from_slice(&address);
    k[20..52].copy_from_slice(&slot);
    k[52..].copy_from_slice(&block.to_be_bytes());
    k
}

/// Where criterion keeps its results.
pub fn criterion_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("criterion")
}

/// Mean time in nanoseconds of one criterion benchmark (`group/function`), from its last run.
pub fn criterion_mean_ns(group: &str, function: &str) -> Option<f64> {
    let path = criterion_dir()
        .join(group)
        .join(function)
        .join("new")
        .join("estimates.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    json["mean"]["point_estimate"].as_f64()
}

/// Prints one markdown row per group: both engines' means and the `numerator/denominator` ratio.
pub fn print_ratio_table(
    groups: &[&str],
    numerator: &str,
    denominator: &str,
) -> Vec<(String, f64, f64)> {
    println!("\n| operation | {numerator} | {denominator} | {numerator}/{denominator} |");
    println!("|---|---:|---:|---:|");
    let mut rows = Vec::new();
    for group in groups {
        if let (Some(a), Some(b)) = (
            criterion_mean_ns(group, numerator),
            criterion_mean_ns(group, denominator),
        ) {
            println!(
                "| {group} | {} | {} | {:.2}x |",
                fmt_ns(a),
                fmt_ns(b),
                a / b
            );
            rows.push((group.to_string(), a, b));
        }
    }
    rows
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Bytes of every file under `dir` (apparent sizes), 0 where it cannot be read.
pub fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => dir_bytes(&e.path()),
                    Ok(_) => e.metadata().map_or(0, |m| m.len()),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// The bytes `path` takes on disk, as `du` counts them: allocated blocks, so a sparse file
/// (MDBX grows `mdbx.dat` by truncating it larger) counts what it holds, not its length; a file
/// hard-linked more than once inside `path` counts once. Symlinks below `path` are not followed
/// (`path` itself may be one, as a datadir often is).
pub fn allocated_bytes(path: &std::path::Path) -> u64 {
    fn walk(
        path: &std::path::Path,
        top: bool,
        seen: &mut std::collections::HashSet<(u64, u64)>,
    ) -> u64 {
        use std::os::unix::fs::MetadataExt;
        let meta = match top {
            true => std::fs::metadata(path),
            false => std::fs::symlink_metadata(path),
        };
        let Ok(meta) = meta else {
            return 0;
        };
        if meta.nlink() > 1 && !meta.is_dir() && !seen.insert((meta.dev(), meta.ino())) {
            return 0;
        }
        let own = meta.blocks() * 512;
        if !meta.is_dir() {
            return own;
        }
        own + std::fs::read_dir(path)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| walk(&e.path(), false, seen))
                    .sum::<u64>()
            })
            .unwrap_or(0)
    }
    walk(path, true, &mut std::collections::HashSet::new())
}

/// An environment variable parsed as `T`, else `default`.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Where a datadir benchmark keeps its data, and how large a datadir it starts from.
/// `cargo bench` passes `--bench`; `cargo test --all-targets` does not: then a small smoke run in
/// a temporary folder checks the harness without the 10M-transaction datadir.
#[derive(Debug)]
pub struct BenchData {
    /// A smoke run (from `cargo test`).
    pub smoke: bool,
    /// `RETH_HYBRID_BENCH_DIR`, else `~/.cache/reth-hybrid/bench-data` (a temporary folder for a
    /// smoke run); created.
    pub root: PathBuf,
    /// Millions of transactions of the generated datadir: `RETH_HYBRID_BENCH_TX_MILLIONS`, else
    /// 10 (0.02 for a smoke run).
    pub tx_millions: f64,
    _smoke_dir: Option<tempfile::TempDir>,
}

impl BenchData {
    pub fn from_args() -> Self {
        let smoke = !std::env::args().any(|a| a == "--bench");
        let smoke_dir = smoke.then(|| tempfile::tempdir().expect("tmp"));
        let root: PathBuf = match &smoke_dir {
            Some(d) => d.path().to_path_buf(),
            None => std::env::var_os("RETH_HYBRID_BENCH_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                        .join(".cache/reth-hybrid/bench-data")
                }),
        };
        std::fs::create_dir_all(&root).expect("bench dir");
        let tx_millions = if smoke {
            0.02
        } else {
            env_or("RETH_HYBRID_BENCH_TX_MILLIONS", 10.0)
        };
        Self {
            smoke,
            root,
            tx_millions,
            _smoke_dir: smoke_dir,
        }
    }
}

/// The generated v1 template datadir of about `tx_millions` million transactions at
/// `txs_per_block`, made once per size under `root` (a `GENERATED` marker says it is complete)
/// and shared by the benchmarks that start from it.
pub fn generated_template(root: &std::path::Path, tx_millions: f64, txs_per_block: u64) -> PathBuf {
    use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
    let txs = (tx_millions * 1e6) as u64;
    let scale = txs.div_ceil(txs_per_block * 100).max(1);
    let dir = root.join(format!("template-{scale}x{txs_per_block}"));
    let done = dir.join("GENERATED");
    if done.exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "generating {} blocks x {txs_per_block} txs into {} (once)",
        scale * 100,
        dir.display()
    );
    let t = std::time::Instant::now();
    let engine = MdbxEngine::open(&dir, MdbxOptions::create().with_geometry(Geometry::SMALL))
        .expect("create datadir");
    let report = reth_hybrid_migrate::generate(
        &reth_hybrid_api::typed::TypedDatabase::new(engine),
        &reth_hybrid_migrate::GenerateSpec {
            txs_per_block,
            ..reth_hybrid_migrate::GenerateSpec::new(scale, 1)
        },
    )
    .expect("generate");
    eprintln!("generated {report:?} in {:.0} s", t.elapsed().as_secs_f64());
    std::fs::write(&done, format!("{report:?}")).expect("marker");
    dir
}

/// Drops `dir`'s files from the page cache (after syncing them, as dirty pages stay), so the
/// next reader reads them from disk.
pub fn evict_from_page_cache(dir: &std::path::Path) {
    use std::os::fd::AsRawFd;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            evict_from_page_cache(&path);
        } else if let Ok(file) = std::fs::File::open(&path) {
            let _ = file.sync_all();
            // SAFETY: a valid descriptor; advice has no memory effects.
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
}

/// Copies the tree `from` into the new folder `to`, each file synced.
pub fn copy_tree_synced(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree_synced(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
            std::fs::File::open(&target)?.sync_all()?;
        }
    }
    Ok(())
}
