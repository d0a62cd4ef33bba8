//! `reth-hybrid bench compare`, `bench preflight` and `bench rpc-report` as engineers run them.

mod common;

use common::{Out, reth_hybrid};
use std::{fmt::Write, path::Path, process::Command};

/// A reth-bench output folder: 2.x (ten columns) or 1.x (seven), `np_us` newPayload latency.
fn write_run(dir: &Path, v2: bool, np_us: u64) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut c = String::from(
        "block_number,gas_limit,transaction_count,gas_used,new_payload_latency,fcu_latency,total_latency",
    );
    if v2 {
        c.push_str(",persistence_wait,execution_cache_wait,sparse_trie_wait");
    }
    let mut g = String::from("block_number,transaction_count,gas_used,time");
    let mut t = 0;
    for b in 1000..1200u64 {
        let np = np_us + (b * 7919) % 300;
        t += np + 500;
        write!(
            c,
            "\n{b},36000000,100,{},{np},500,{}",
            20_000_000 + b,
            np + 500
        )
        .expect("fmt");
        if v2 {
            c.push_str(",0,0,0");
        }
        write!(g, "\n{b},100,{},{t}", 20_000_000 + b).expect("fmt");
    }
    std::fs::write(dir.join("combined_latency.csv"), c + "\n").expect("write");
    std::fs::write(dir.join("total_gas.csv"), g + "\n").expect("write");
}

fn font_available() -> bool {
    reth_hybrid_bench::reth_bench::charts::font_available()
}

#[test]
fn compare_prints_a_report_with_intervals_and_writes_charts() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b, out) = (
        tmp.path().join("mdbx"),
        tmp.path().join("rocksdb"),
        tmp.path().join("report"),
    );
    write_run(&a, true, 10_000);
    write_run(&b, false, 8_000);
    let Out {
        stdout,
        stderr,
        code,
    } = reth_hybrid(&[
        "bench",
        "compare",
        a.to_str().expect("utf8"),
        b.to_str().expect("utf8"),
        "--baseline-name",
        "mdbx",
        "--candidate-name",
        "rocksdb",
        "--iterations",
        "2000",
        "--out",
        out.to_str().expect("utf8"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("## reth-bench: rocksdb vs mdbx"),
        "{stdout}"
    );
    assert!(stdout.contains("**rocksdb wins"), "{stdout}");
    assert!(stdout.contains("95% CI"), "{stdout}");
    assert!(stdout.contains("| Total gas |"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).expect("json"))
            .expect("parse");
    assert_eq!(json["matched_blocks"], 200);
    assert!(json["metrics"][0]["ci_low_pct"].as_f64().expect("ci") > 1.2);
    assert!(out.join("report.md").exists());
    if font_available() {
        for f in [
            "latency.svg",
            "latency.png",
            "ggas_distribution.svg",
            "ggas_distribution.png",
        ] {
            let len = std::fs::metadata(out.join(f)).map(|m| m.len()).unwrap_or(0);
            assert!(len > 1000, "{f} missing or empty");
        }
    } else {
        assert!(stderr.contains("charts skipped"), "{stderr}");
    }

    let Out {
        stdout,
        stderr: _,
        code,
    } = reth_hybrid(&[
        "bench",
        "compare",
        a.to_str().expect("utf8"),
        b.to_str().expect("utf8"),
        "--json",
        "--iterations",
        "500",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("json on stdout");
    assert_eq!(v["resampling"], "paired_blocks");
}

#[test]
fn compare_names_the_file_and_line_of_a_malformed_input() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    write_run(&a, true, 10_000);
    write_run(&b, true, 10_000);
    let file = b.join("combined_latency.csv");
    let text = std::fs::read_to_string(&file).expect("read");
    std::fs::write(&file, text.replace("\n1050,36000000", "\n1050,lots")).expect("write");
    let Out {
        stdout: _,
        stderr,
        code,
    } = reth_hybrid(&[
        "bench",
        "compare",
        a.to_str().expect("utf8"),
        b.to_str().expect("utf8"),
    ]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("combined_latency.csv:52") && stderr.contains("gas_limit"),
        "{stderr}"
    );
}

#[test]
fn preflight_refuses_an_unmigrated_rocksdb_datadir() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path().join("datadir");
    let Out {
        stdout: _,
        stderr,
        code,
    } = reth_hybrid(&[
        "generate",
        "--datadir",
        d.to_str().expect("utf8"),
        "--scale",
        "1",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let Out {
        stdout: _,
        stderr,
        code,
    } = reth_hybrid(&[
        "bench",
        "preflight",
        "--baseline-datadir",
        d.to_str().expect("utf8"),
        "--candidate-datadir",
        d.to_str().expect("utf8"),
    ]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("invalid hybrid") && stderr.contains("reth-hybrid migrate"),
        "{stderr}"
    );
}

/// Every file under `root` with its bytes (folders as `None`), by relative path.
fn snapshot(root: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Option<Vec<u8>>> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(root).expect("under root").to_path_buf();
            if path.is_dir() {
                out.insert(rel, None);
                todo.push(path);
            } else {
                out.insert(rel, Some(std::fs::read(&path).expect("read")));
            }
        }
    }
    out
}

/// `bench run` with a candidate datadir as typed, run in `cwd` with `HOME` set to `home`.
fn bench_run_in(
    cwd: &Path,
    home: &Path,
    baseline: &Path,
    pristine: &Path,
    candidate: &str,
) -> (String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_reth-hybrid"))
        .current_dir(cwd)
        .env("HOME", home)
        .args(["bench", "run", "--baseline-datadir"])
        .arg(baseline)
        .arg("--baseline-restore-from")
        .arg(pristine)
        .args([
            "--baseline-node",
            "exit 1",
            "--candidate-datadir",
            candidate,
        ])
        .arg("--candidate-restore-from")
        .arg(pristine)
        .args(["--candidate-node", "exit 1", "--candidate-layout", "mdbx"])
        .args([
            "--rpc-url",
            "http://127.0.0.1:1",
            "--from",
            "100",
            "--to",
            "150",
        ])
        .arg("--output")
        .arg(baseline.with_file_name("out"))
        .output()
        .expect("run reth-hybrid");
    (
        String::from_utf8(out.stderr).expect("utf8"),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn run_refuses_the_working_folder_its_ancestors_home_and_root_touching_nothing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().canonicalize().expect("real");
    let (baseline, pristine) = (root.join("baseline"), root.join("pristine"));
    let Out {
        stdout: _,
        stderr,
        code,
    } = reth_hybrid(&[
        "generate",
        "--datadir",
        baseline.to_str().expect("utf8"),
        "--scale",
        "1",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let cp = Command::new("cp")
        .arg("-a")
        .arg(&baseline)
        .arg(&pristine)
        .status()
        .expect("cp");
    assert!(cp.success());
    // The reported case: a folder holding one file, used as the working folder.
    let work = root.join("work");
    std::fs::create_dir_all(work.join("sub")).expect("mkdir");
    std::fs::write(work.join("only-file.txt"), "it was deleted once").expect("write");
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let work_dot = format!("{}/.", work.display());
    let work_str = work.to_str().expect("utf8").to_string();
    // (case, working folder, HOME, --candidate-datadir as typed, what the error says)
    let cases: [(&str, &Path, &Path, &str, &str); 6] = [
        (
            ".",
            &work,
            &elsewhere,
            ".",
            "the folder this command runs in",
        ),
        (
            "..",
            &work.join("sub"),
            &elsewhere,
            "..",
            "the folder this command runs in",
        ),
        (
            "./",
            &work,
            &elsewhere,
            "./",
            "the folder this command runs in",
        ),
        (
            "<cwd>/.",
            &work,
            &elsewhere,
            &work_dot,
            "the folder this command runs in",
        ),
        (
            "~ (as the shell expands it)",
            &elsewhere,
            &work,
            &work_str,
            "home folder",
        ),
        ("/", &elsewhere, &elsewhere, "/", "root folder /"),
    ];
    for (case, cwd, home, candidate, says) in cases {
        let before = snapshot(&root);
        let (stderr, code) = bench_run_in(cwd, home, &baseline, &pristine, candidate);
        assert_ne!(code, 0, "{case}: not refused");
        assert!(
            stderr.contains(says) && stderr.contains("--candidate-datadir"),
            "{case}: {stderr}"
        );
        assert!(snapshot(&root) == before, "{case}: a file changed");
    }
}

/// An `rpc-latency` run: `label`'s calls of two kinds, `scale` times the base latencies.
fn write_rpc_run(path: &Path, label: &str, scale: f64) {
    let calls = |kind_scale: f64| -> Vec<f64> {
        (1..=200)
            .map(|i| (100.0 + f64::from(i)) * scale * kind_scale)
            .collect()
    };
    let run = serde_json::json!({
        "label": label,
        "latencies_us": {
            "eth_getBalance": calls(1.0),
            "debug_traceTransaction prestateTracer": calls(50.0),
        },
        "cold_latencies_us": { "eth_getBalance": calls(3.0) },
    });
    std::fs::write(path, serde_json::to_vec(&run).expect("json")).expect("write");
}

#[test]
fn rpc_report_sets_three_variants_side_by_side_with_ratios_at_every_percentile() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("report");
    let mut runs = Vec::new();
    for (label, scale) in [("stock-v1", 1.0), ("hybrid", 1.5), ("stock-v2", 6.0)] {
        for k in 1..=2 {
            let path = tmp.path().join(format!("rpc-{label}-{k}.json"));
            write_rpc_run(&path, label, scale);
            runs.push(path.to_str().expect("utf8").to_string());
        }
    }
    let mut args = vec![
        "bench",
        "rpc-report",
        "--reference",
        "stock-v1",
        "--reference",
        "stock-v2",
        "--out",
        out.to_str().expect("utf8"),
    ];
    args.extend(runs.iter().map(String::as_str));
    let Out {
        stdout,
        stderr,
        code,
    } = reth_hybrid(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("| hybrid / stock-v1 | stock-v2 / stock-v1 | hybrid / stock-v2 |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| `eth_getBalance` | 201 / 281 / 299 / 300 |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("**1.50x** / 1.50x / 1.50x / 1.50x | **6.00x** / 6.00x / 6.00x / 6.00x | **0.25x** / 0.25x / 0.25x / 0.25x |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("cold (first pass after the node started)"),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("rpc.json")).expect("rpc.json"))
            .expect("parse");
    let hybrid = &json["passes"]["warm"]["debug_traceTransaction prestateTracer"]["hybrid"];
    assert_eq!(hybrid["calls"], 400, "two runs pooled");
    assert_eq!(hybrid["ratios"]["stock-v2"]["p99"], 0.25);
    assert!(out.join("rpc.md").exists());
    if font_available() {
        for f in [
            "rpc_latency_warm.svg",
            "rpc_latency_warm.png",
            "rpc_latency_cold.svg",
            "rpc_latency_cold.png",
        ] {
            let len = std::fs::metadata(out.join(f)).map(|m| m.len()).unwrap_or(0);
            assert!(len > 1000, "{f} missing or empty");
        }
        let svg = std::fs::read_to_string(out.join("rpc_latency_warm.svg")).expect("svg");
        for text in ["eth_getBalance", "hybrid", "stock-v2", "p99"] {
            assert!(svg.contains(text), "the chart shows no {text}");
        }
    } else {
        assert!(stderr.contains("charts skipped"), "{stderr}");
    }

    let Out { stderr, code, .. } = reth_hybrid(&[
        "bench",
        "rpc-report",
        "--reference",
        "stock",
        &runs[0],
        &runs[2],
    ]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("no run is labelled \"stock\" (the runs' labels: stock-v1, hybrid)"),
        "{stderr}"
    );
}
