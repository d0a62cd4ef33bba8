//! What an operator reads when a command fails: the error and its causes, no source locations
//! unless asked for with `--verbose` or `RUST_BACKTRACE`.

use std::process::Command;

fn failing_run(extra: &[&str], backtrace: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reth-hybrid"));
    cmd.args(["verify", "--datadir", "/nonexistent/reth-hybrid-datadir"])
        .args(extra)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    if let Some(value) = backtrace {
        cmd.env("RUST_BACKTRACE", value);
    }
    let out = cmd.output().expect("run reth-hybrid");
    assert_eq!(out.status.code(), Some(1), "a failed command exits 1");
    String::from_utf8(out.stderr).expect("utf8")
}

#[test]
fn an_error_names_the_problem_and_the_fix_without_source_locations() {
    let stderr = failing_run(&[], None);
    assert!(stderr.starts_with("Error: "), "{stderr}");
    assert!(
        stderr.contains("/nonexistent/reth-hybrid-datadir"),
        "{stderr}"
    );
    assert!(stderr.contains("pass the reth datadir"), "{stderr}");
    assert!(!stderr.contains("Location"), "{stderr}");
    assert!(!stderr.contains("bin/src/"), "{stderr}");
}

#[test]
fn verbose_or_rust_backtrace_shows_where_it_was_raised() {
    for (extra, backtrace) in [(&["--verbose"][..], None), (&[][..], Some("1"))] {
        let stderr = failing_run(extra, backtrace);
        assert!(stderr.contains("Location"), "{stderr}");
        assert!(stderr.contains("pass the reth datadir"), "{stderr}");
    }
    let stderr = failing_run(&[], Some("0"));
    assert!(!stderr.contains("Location"), "{stderr}");
}
