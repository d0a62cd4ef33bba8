//! `reth-hybrid migrate --abandon` as an operator runs it: the real binary on a generated datadir
//! whose migration state file was damaged.

mod common;

use common::{Out, reth_hybrid};
use std::path::Path;

#[test]
fn a_garbage_state_file_is_refused_and_abandon_is_the_way_forward() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("datadir");
    let d = d.to_str().expect("utf8");
    let Out {
        code,
        stdout: _,
        stderr: err,
    } = reth_hybrid(&["generate", "--datadir", d, "--scale", "1"]);
    assert_eq!(code, 0, "{err}");
    let Out {
        code,
        stdout: _,
        stderr: err,
    } = reth_hybrid(&[
        "migrate",
        "--datadir",
        d,
        "--tables",
        "TransactionHashNumbers",
    ]);
    assert_eq!(code, 0, "{err}");
    let state = Path::new(d).join("hybrid-migration.json");
    std::fs::write(&state, b"{\"version\":1,\"to\":\"rock").expect("a torn state file");
    let mdbx = std::fs::read(Path::new(d).join("db/mdbx.dat")).expect("read");

    let Out {
        code,
        stdout: _,
        stderr: err,
    } = reth_hybrid(&["migrate", "--datadir", d]);
    assert_ne!(code, 0);
    assert!(
        err.contains("cannot be read") && err.contains(&format!("--datadir {d} --abandon")),
        "{err}"
    );
    let Out {
        code,
        stdout: out,
        stderr: err,
    } = reth_hybrid(&["migrate", "--datadir", d, "--abandon", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("dry run: nothing was changed") && out.contains("TransactionHashNumbers"),
        "{out}"
    );
    assert!(state.exists());
    assert!(std::fs::read(Path::new(d).join("db/mdbx.dat")).expect("read") == mdbx);

    let Out {
        code,
        stdout: out,
        stderr: err,
    } = reth_hybrid(&["migrate", "--datadir", d, "--abandon"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the migration was abandoned"), "{out}");
    assert!(!state.exists());
    let Out {
        code,
        stdout: out,
        stderr: err,
    } = reth_hybrid(&["verify", "--datadir", d]);
    assert_eq!(code, 0, "{out}{err}");
    let Out {
        code,
        stdout: out,
        stderr: _,
    } = reth_hybrid(&["migrate", "--datadir", d, "--abandon"]);
    assert_eq!(code, 0);
    assert!(out.contains("nothing to abandon"), "{out}");
    let Out {
        code,
        stdout: _,
        stderr: err,
    } = reth_hybrid(&["migrate", "--datadir", d]);
    assert_eq!(code, 0, "the default migration runs again: {err}");
}
