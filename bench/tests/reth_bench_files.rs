//! Parsing reth-bench output folders (2.x and 1.x formats) and comparing them: pairing by block
//! number, statistics, intervals and the verdict, and errors that name the file and line.

use reth_hybrid_bench::reth_bench::{
    files::{Format, read_run},
    stats::{CompareError, CompareOptions, Resampling, Verdict, compare},
};
use std::{fmt::Write, path::Path};

const V2_HEADER: &str = "block_number,gas_limit,transaction_count,gas_used,new_payload_latency,fcu_latency,total_latency,persistence_wait,execution_cache_wait,sparse_trie_wait";
const V1_HEADER: &str = "block_number,gas_limit,transaction_count,gas_used,new_payload_latency,fcu_latency,total_latency";

/// Writes a run folder: blocks `(number, gas, new_payload_us, fcu_us)`, total = np + fcu.
fn write_run(dir: &Path, v2: bool, blocks: &[(u64, u64, u64, u64)]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut combined = String::from(if v2 { V2_HEADER } else { V1_HEADER });
    let mut gas = String::from("block_number,transaction_count,gas_used,time");
    let mut time = 0;
    for (n, g, np, fcu) in blocks {
        let total = np + fcu;
        time += total;
        write!(
            combined,
            "\n{n},30000000,{},{g},{np},{fcu},{total}",
            g / 21000
        )
        .expect("fmt");
        if v2 {
            combined.push_str(",0,0,0");
        }
        write!(gas, "\n{n},{},{g},{time}", g / 21000).expect("fmt");
    }
    combined.push('\n');
    gas.push('\n');
    std::fs::write(dir.join("combined_latency.csv"), combined).expect("write");
    std::fs::write(dir.join("total_gas.csv"), gas).expect("write");
}

/// Blocks 100..100+n with a deterministic wobble; `speed` scales the latencies.
fn blocks(n: u64, speed: f64, seed: u64) -> Vec<(u64, u64, u64, u64)> {
    let mut s = seed;
    (0..n)
        .map(|i| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let wobble = 0.9 + (s >> 33) as f64 / (1u64 << 31) as f64 * 0.2;
            let gas = 10_000_000 + (i % 7) * 1_000_000;
            let np = (gas as f64 / 100.0 * wobble * speed) as u64;
            (100 + i, gas, np, (2000.0 * speed) as u64)
        })
        .collect()
}

#[test]
fn reads_both_formats_and_sorts_rows_by_block() {
    let dir = tempfile::tempdir().expect("tmp");
    write_run(
        &dir.path().join("v2"),
        true,
        &[(3, 100, 10, 1), (1, 300, 30, 3), (2, 200, 20, 2)],
    );
    let run = read_run(&dir.path().join("v2")).expect("v2");
    assert_eq!(run.format, Format::V2);
    assert_eq!(
        run.blocks
            .iter()
            .map(|b| b.block_number)
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(run.blocks[0].total_us, 33);
    assert_eq!(run.blocks[0].persistence_wait_us, Some(0));
    assert_eq!(run.wall_clock_us, Some(66));

    write_run(&dir.path().join("v1"), false, &[(7, 50, 5, 1)]);
    let run = read_run(&dir.path().join("v1")).expect("v1");
    assert_eq!(run.format, Format::V1);
    assert_eq!(run.blocks[0].persistence_wait_us, None);
}

#[test]
fn total_gas_csv_is_optional() {
    let dir = tempfile::tempdir().expect("tmp");
    write_run(dir.path(), true, &[(1, 100, 10, 1)]);
    std::fs::remove_file(dir.path().join("total_gas.csv")).expect("rm");
    assert_eq!(read_run(dir.path()).expect("ok").wall_clock_us, None);
}

fn error_of(setup: impl FnOnce(&Path)) -> String {
    let dir = tempfile::tempdir().expect("tmp");
    write_run(
        dir.path(),
        true,
        &[(1, 100, 10, 1), (2, 200, 20, 2), (3, 300, 30, 3)],
    );
    setup(dir.path());
    read_run(dir.path()).expect_err("must fail").to_string()
}

#[test]
fn malformed_files_name_the_file_line_and_problem() {
    let combined = |d: &Path| d.join("combined_latency.csv");
    let e = error_of(|d| {
        let s = std::fs::read_to_string(combined(d)).expect("read");
        std::fs::write(combined(d), &s[..s.len() - 9]).expect("truncate");
    });
    assert!(
        e.contains("combined_latency.csv:4") && e.contains("truncated"),
        "{e}"
    );

    let e = error_of(|d| {
        std::fs::write(combined(d), "block,gas\n1,2\n").expect("write");
    });
    assert!(
        e.contains("combined_latency.csv:1") && e.contains("unexpected header"),
        "{e}"
    );

    let e = error_of(|d| {
        let s = std::fs::read_to_string(combined(d))
            .expect("read")
            .replace("\n2,30000000", "\n2,3e7");
        std::fs::write(combined(d), s).expect("write");
    });
    assert!(
        e.contains("combined_latency.csv:3") && e.contains("gas_limit"),
        "{e}"
    );

    let e = error_of(|d| {
        let s = std::fs::read_to_string(combined(d)).expect("read");
        std::fs::write(combined(d), format!("{s}2,30000000,0,200,20,2,22,0,0,0\n")).expect("write");
    });
    assert!(
        e.contains("combined_latency.csv:5") && e.contains("block 2 appears twice"),
        "{e}"
    );

    let e = error_of(|d| std::fs::write(combined(d), format!("{V2_HEADER}\n")).expect("write"));
    assert!(e.contains("no rows"), "{e}");

    let e = error_of(|d| std::fs::remove_file(combined(d)).expect("rm"));
    assert!(e.contains("combined_latency.csv"), "{e}");

    let e = error_of(|d| {
        let s = std::fs::read_to_string(d.join("total_gas.csv")).expect("read");
        let cut: Vec<&str> = s.lines().take(3).collect();
        std::fs::write(d.join("total_gas.csv"), cut.join("\n")).expect("write");
    });
    assert!(
        e.contains("total_gas.csv") && e.contains("block 3") && e.contains("missing"),
        "{e}"
    );

    let e = error_of(|d| {
        let s = std::fs::read_to_string(d.join("total_gas.csv"))
            .expect("read")
            .replace("\n2,0,200,", "\n2,0,999,");
        std::fs::write(d.join("total_gas.csv"), s).expect("write");
    });
    assert!(
        e.contains("total_gas.csv") && e.contains("block 2 used 999 gas"),
        "{e}"
    );
}

fn opts() -> CompareOptions {
    CompareOptions {
        bootstrap_iterations: 2000,
        ..CompareOptions::default()
    }
}

#[test]
fn a_clearly_faster_candidate_wins_with_an_interval_around_the_true_change() {
    let dir = tempfile::tempdir().expect("tmp");
    // The candidate takes 80% of the baseline's time on every block: +25% Ggas/s.
    write_run(&dir.path().join("a"), true, &blocks(300, 1.0, 1));
    write_run(&dir.path().join("b"), true, &blocks(300, 0.8, 1));
    let a = read_run(&dir.path().join("a")).expect("a");
    let b = read_run(&dir.path().join("b")).expect("b");
    let c = compare(&[a], &[b], &opts()).expect("compare");
    assert_eq!(c.resampling, Resampling::PairedBlocks);
    assert_eq!(c.matched_blocks, 300);
    let g = &c.metrics[0];
    assert_eq!(g.metric, "Ggas/s");
    assert!((g.change_pct - 25.0).abs() < 0.5, "{g:?}");
    assert!(
        g.ci_low_pct <= g.change_pct && g.change_pct <= g.ci_high_pct,
        "{g:?}"
    );
    assert_eq!(g.verdict, Verdict::CandidateBetter);
    assert!((c.per_block_change_median_pct + 20.0).abs() < 0.5);
    let mean = c
        .metrics
        .iter()
        .find(|m| m.metric == "total latency mean")
        .expect("metric");
    assert_eq!(mean.verdict, Verdict::CandidateBetter);
    assert!(c.verdict.starts_with("candidate wins"), "{}", c.verdict);
}

#[test]
fn noise_gives_no_winner() {
    let dir = tempfile::tempdir().expect("tmp");
    // Same speed, independent wobble of +-10% per block: no real difference.
    write_run(&dir.path().join("a"), true, &blocks(200, 1.0, 1));
    write_run(&dir.path().join("b"), true, &blocks(200, 1.0, 2));
    let a = read_run(&dir.path().join("a")).expect("a");
    let b = read_run(&dir.path().join("b")).expect("b");
    let c = compare(&[a], &[b], &opts()).expect("compare");
    assert_eq!(
        c.metrics[0].verdict,
        Verdict::WithinNoise,
        "{:?}",
        c.metrics[0]
    );
    assert!(c.verdict.starts_with("no winner"), "{}", c.verdict);
}

#[test]
fn pairs_by_block_number_and_reports_blocks_missing_on_one_side() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut a = blocks(50, 1.0, 3);
    let mut b = blocks(50, 0.5, 3);
    a.remove(10); // block 110 missing in the baseline
    b.remove(20); // block 120 missing in the candidate
    b.reverse(); // unordered rows: pairing must not depend on row order
    write_run(&dir.path().join("a"), true, &a);
    write_run(&dir.path().join("b"), false, &b);
    let ra = read_run(&dir.path().join("a")).expect("a");
    let rb = read_run(&dir.path().join("b")).expect("b");
    let c = compare(&[ra], &[rb], &opts()).expect("compare");
    assert_eq!(c.matched_blocks, 48);
    assert_eq!(c.only_in_baseline, [120]);
    assert_eq!(c.only_in_candidate, [110]);
    assert!(
        c.per_block
            .iter()
            .all(|p| (p.change_pct + 50.0).abs() < 0.5),
        "paired by number"
    );
}

#[test]
fn zero_gas_blocks_and_several_runs_per_side() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut base = blocks(60, 1.0, 5);
    base[3].1 = 0; // an empty block
    let mut cand = blocks(60, 0.7, 5);
    cand[3].1 = 0;
    let mut runs = (Vec::new(), Vec::new());
    for i in 0..3 {
        write_run(&dir.path().join(format!("a{i}")), true, &base);
        write_run(&dir.path().join(format!("b{i}")), true, &cand);
        runs.0
            .push(read_run(&dir.path().join(format!("a{i}"))).expect("a"));
        runs.1
            .push(read_run(&dir.path().join(format!("b{i}"))).expect("b"));
    }
    let c = compare(&runs.0, &runs.1, &opts()).expect("compare");
    assert_eq!(c.resampling, Resampling::Runs);
    assert_eq!(c.baseline.runs, 3);
    assert!(
        c.metrics
            .iter()
            .all(|m| m.change_pct.is_finite() && m.ci_low_pct.is_finite())
    );
    assert_eq!(c.metrics[0].verdict, Verdict::CandidateBetter);
}

#[test]
fn different_chains_or_ranges_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    write_run(&dir.path().join("a"), true, &blocks(10, 1.0, 1));
    let mut other = blocks(10, 1.0, 1);
    other[4].1 += 1;
    write_run(&dir.path().join("b"), true, &other);
    let far: Vec<_> = blocks(10, 1.0, 1)
        .into_iter()
        .map(|(n, g, np, f)| (n + 1000, g, np, f))
        .collect();
    write_run(&dir.path().join("c"), true, &far);
    let run = |n: &str| read_run(&dir.path().join(n)).expect("run");
    assert!(matches!(
        compare(&[run("a")], &[run("b")], &opts()),
        Err(CompareError::DifferentBlocks { block: 104, .. })
    ));
    assert!(matches!(
        compare(&[run("a")], &[run("c")], &opts()),
        Err(CompareError::NoOverlap { .. })
    ));
}

/// A txgen `send-blocks` report (the fields txgen's `BlockStats` and `RunStats` write).
fn txgen_report(blocks: &[(u64, u64, Option<u64>, u64, u64)]) -> String {
    let rows: Vec<String> = blocks
        .iter()
        .map(|(n, gas, server_us, np_ms, fcu_ms)| {
            let server = server_us.map_or(String::new(), |us| {
                format!(r#", "new_payload_server_latency_us": {us}, "persistence_wait_us": 7"#)
            });
            format!(
                r#"{{"number": {n}, "timestamp_ms": 1730000000000, "tx_count": 3, "gas_used": {gas},
                   "gas_limit": 30000000, "block_time_ms": null, "new_payload_ms": {np_ms},
                   "forkchoice_updated_ms": {fcu_ms}{server}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"benchmark_id": "3f2b6c1e-8a4d-4e1b-9c2a-5d7e8f901234", "blocks": [{}],
            "run_stats": {{"start_block": 1, "end_block": 2, "total_blocks": 2, "total_txs": 6,
            "total_gas": 1, "duration_ms": 80, "avg_blocks_per_second": 25.0, "avg_tps": 75.0,
            "avg_gas_per_second": 1.0, "block_time_p50_ms": 12000, "block_time_p95_ms": 12000,
            "block_time_p99_ms": 12000}}}}"#,
        rows.join(",")
    )
}

#[test]
fn reads_txgen_reports_as_reth_s_converter_does() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("run-1.json");
    // Block 2 before 1: rows are keyed by number. Block 1 has the server's latency, block 2 only
    // the client's whole milliseconds.
    std::fs::write(
        &file,
        txgen_report(&[
            (2, 9_000_000, None, 30, 2),
            (1, 15_000_000, Some(40_213), 41, 1),
        ]),
    )
    .expect("write");
    let run = read_run(&file).expect("a txgen report");
    assert_eq!(run.format, Format::Txgen);
    assert_eq!(run.wall_clock_us, Some(80_000));
    let [first, second] = run.blocks.as_slice() else {
        panic!("two blocks: {:?}", run.blocks)
    };
    assert_eq!(
        (
            first.block_number,
            first.new_payload_us,
            first.fcu_us,
            first.total_us
        ),
        (1, 40_213, 1000, 41_213),
        "the server's newPayload latency, the client's forkchoiceUpdated"
    );
    assert_eq!(first.persistence_wait_us, Some(7));
    assert_eq!(
        (
            second.block_number,
            second.new_payload_us,
            second.total_us,
            second.persistence_wait_us
        ),
        (2, 30_000, 32_000, None),
        "without the server's latency, the client's milliseconds"
    );
    // A folder holding `report.json` is a run too, and compares with reth-bench folders.
    let folder = dir.path().join("txgen");
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::copy(&file, folder.join("report.json")).expect("copy");
    assert_eq!(read_run(&folder).expect("folder").blocks.len(), 2);
    assert!(reth_hybrid_bench::reth_bench::files::is_run(&folder));
}

#[test]
fn a_bad_txgen_report_is_named_with_its_problem() {
    let dir = tempfile::tempdir().expect("tmp");
    let over = dir.path().join("over.json");
    std::fs::write(&over, txgen_report(&[(1, 40_000_000, Some(1), 1, 1)])).expect("write");
    let err = read_run(&over).expect_err("gas over the limit").to_string();
    assert!(
        err.contains("over.json") && err.contains("exceeds gas_limit"),
        "{err}"
    );

    let twice = dir.path().join("twice.json");
    std::fs::write(
        &twice,
        txgen_report(&[(1, 1, Some(1), 1, 1), (1, 1, Some(1), 1, 1)]),
    )
    .expect("write");
    let err = read_run(&twice).expect_err("a block twice").to_string();
    assert!(err.contains("block 1 appears twice"), "{err}");

    let garbage = dir.path().join("cut.json");
    std::fs::write(&garbage, r#"{"blocks": [{"number": 1"#).expect("write");
    let err = read_run(&garbage).expect_err("truncated").to_string();
    assert!(
        err.contains("cut.json") && err.contains("not a txgen send-blocks report"),
        "{err}"
    );

    // `bench compare`'s own report.json in a run folder is not taken for a txgen report.
    let out = dir.path().join("compare-out");
    std::fs::create_dir_all(&out).expect("mkdir");
    std::fs::write(
        out.join("report.json"),
        r#"{"baseline": {}, "changes": {}}"#,
    )
    .expect("write");
    assert!(!reth_hybrid_bench::reth_bench::files::is_run(&out));
}

#[test]
fn with_persistence_waits_the_headline_counts_them() {
    let dir = tempfile::tempdir().expect("tmp");
    // Same latency on both sides; the baseline's node also waited for persistence before each
    // block as long as the block took, the candidate's never.
    write_run(&dir.path().join("a"), true, &blocks(200, 1.0, 1));
    write_run(&dir.path().join("b"), true, &blocks(200, 1.0, 2));
    let mut a = read_run(&dir.path().join("a")).expect("a");
    let mut b = read_run(&dir.path().join("b")).expect("b");
    for row in &mut a.blocks {
        row.persistence_wait_us = Some(row.total_us);
    }
    for row in &mut b.blocks {
        row.persistence_wait_us = Some(0);
    }
    let c = compare(&[a], &[b], &opts()).expect("compare");
    assert_eq!(
        c.metrics[0].verdict,
        Verdict::WithinNoise,
        "latency alone: no winner"
    );
    assert!(
        c.verdict.starts_with("candidate wins")
            && c.verdict.contains("Ggas/s incl. persistence waits"),
        "{}",
        c.verdict
    );
}
