//! `bench run`'s datadir safety: every folder it must not reset is refused before anything is
//! touched (every file around it byte-identical afterwards), and a restore stopped after any of
//! its steps leaves one complete datadir under a known name, which the next run finishes or
//! undoes. Real generated MDBX datadirs throughout; the `.`/`..`/`~` cases need the process's
//! working and home folders, so they are in `bin/tests/cli_bench.rs`.

use reth_hybrid_api::typed::TypedDatabase;
use reth_hybrid_bench::reth_bench::{
    orchestrate::{Range, Reset, RunError, RunPlan, Setup, run},
    restore::{MARKER, RestoreError, Swap, SwapStep, leftovers, recover},
};
use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};
use reth_hybrid_migrate::{GenerateSpec, generate};
use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader, Read},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

fn generated(dir: &Path) {
    let engine =
        MdbxEngine::open(dir, MdbxOptions::create().with_geometry(Geometry::SMALL)).expect("mdbx");
    generate(&TypedDatabase::new(engine), &GenerateSpec::new(1, 9)).expect("generate");
}

fn cp_a(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

/// Every file, folder and symlink under `root`, by relative path: file bytes, `None` for a folder.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(root).expect("under root").to_path_buf();
            let meta = std::fs::symlink_metadata(&path).expect("metadata");
            if meta.is_dir() {
                out.insert(rel, None);
                walk(root, &path, out);
            } else if meta.is_symlink() {
                let target = std::fs::read_link(&path).expect("link");
                out.insert(rel, Some(target.as_os_str().as_encoded_bytes().to_vec()));
            } else {
                out.insert(rel, Some(std::fs::read(&path).expect("read")));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn setup(name: &str, datadir: &Path, restore: Option<&Path>) -> Setup {
    Setup {
        name: name.into(),
        datadir: datadir.to_path_buf(),
        layout: reth_hybrid_bench::reth_bench::preflight::Layout::Mdbx,
        // Never started: every plan here ends before the first run.
        node_command: "exit 1".into(),
        reset: match restore {
            Some(from) => Reset::Restore {
                from: from.to_path_buf(),
            },
            None => Reset::Unwind {
                reth: "false".into(),
                args: Vec::new(),
            },
        },
        jwt_secret: datadir.join("jwt.hex"),
    }
}

fn plan(baseline: Setup, candidate: Setup, output: &Path) -> RunPlan {
    RunPlan {
        baseline,
        candidate,
        reth_bench: "false".into(),
        rpc_url: "http://127.0.0.1:1".into(),
        engine_rpc_url: "http://127.0.0.1:1".into(),
        // Above the generated head (100): a plan that passes every check stops at the range.
        range: Range::FromTo {
            from: 1_000_000,
            to: 1_000_100,
        },
        pairs: 1,
        warmup_blocks: 0,
        output: output.to_path_buf(),
        extra_bench_args: Vec::new(),
        start_timeout: Duration::from_secs(1),
        stop_timeout: Duration::from_secs(1),
    }
}

const HOLD_ENV: &str = "RETH_HYBRID_TEST_HOLD_DATADIR";

/// Child process entry: opens a datadir read-write (taking its storage lock, as a running node
/// does) and keeps it open until its stdin closes.
#[test]
#[ignore = "entry point of the lock-holding child process; run by the tests below"]
fn hold_datadir_child() {
    let Ok(dir) = std::env::var(HOLD_ENV) else {
        return;
    };
    let _engine = MdbxEngine::open(Path::new(&dir), MdbxOptions::read_write()).expect("open");
    println!("held");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// A child process holding `datadir` open; it exits when dropped (its stdin closes).
struct Holder(std::process::Child);

impl Holder {
    fn new(datadir: &Path) -> Self {
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--ignored",
                "--exact",
                "hold_datadir_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(HOLD_ENV, datadir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        // (libtest may print the test's name on the same line.)
        let held = out
            .lines()
            .map_while(Result::ok)
            .any(|l| l.contains("held"));
        assert!(held, "the child did not open {}", datadir.display());
        Self(child)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

#[test]
fn refused_datadirs_and_sources_leave_every_file_byte_identical() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().canonicalize().expect("real");
    let good = root.join("good");
    generated(&good);
    let pristine = root.join("pristine");
    cp_a(&good, &pristine);
    // A folder that is not a datadir, with files someone would miss.
    let plain = root.join("plain");
    std::fs::create_dir_all(plain.join("sub")).expect("mkdir");
    std::fs::write(plain.join("notes.txt"), "keep me").expect("write");
    std::fs::write(plain.join("sub/data.bin"), [7u8; 4096]).expect("write");
    // A datadir holding its own pristine copy, and a datadir inside its pristine copy.
    let holds_copy = root.join("holds-copy");
    cp_a(&good, &holds_copy);
    cp_a(&good, &holds_copy.join("pristine"));
    let outer = root.join("outer");
    cp_a(&good, &outer);
    cp_a(&good, &outer.join("inner"));
    let other = root.join("other");
    cp_a(&good, &other);
    let locked = root.join("locked");
    cp_a(&good, &locked);
    let _holder = Holder::new(&locked);
    let out = root.join("out");

    let baseline = || setup("mdbx", &good, Some(&pristine));
    let cases: Vec<(&str, RunPlan, Vec<&str>)> = vec![
        (
            "datadir is not a reth datadir",
            plan(baseline(), setup("c", &plain, Some(&pristine)), &out),
            vec!["--candidate-datadir", "plain", "not a reth datadir", "db/"],
        ),
        (
            "baseline datadir is not a reth datadir (unwind)",
            plan(setup("b", &plain, None), setup("c", &other, None), &out),
            vec!["--baseline-datadir", "plain", "not a reth datadir"],
        ),
        (
            "datadir is /",
            plan(
                baseline(),
                setup("c", Path::new("/"), Some(&pristine)),
                &out,
            ),
            vec!["--candidate-datadir /", "root folder"],
        ),
        (
            "datadir given with a trailing /.",
            plan(
                baseline(),
                setup("c", &other.join("."), Some(&pristine)),
                &out,
            ),
            vec!["--candidate-datadir", "`.` or `..`", "own path"],
        ),
        (
            "datadir in use by a running process",
            plan(baseline(), setup("c", &locked, Some(&pristine)), &out),
            vec!["--candidate-datadir", "locked", "in use", "stop that node"],
        ),
        (
            "restore source inside the datadir",
            plan(
                baseline(),
                setup("c", &holds_copy, Some(&holds_copy.join("pristine"))),
                &out,
            ),
            vec![
                "--candidate-restore-from",
                "is inside",
                "--candidate-datadir",
            ],
        ),
        (
            "restore source containing the datadir",
            plan(
                baseline(),
                setup("c", &outer.join("inner"), Some(&outer)),
                &out,
            ),
            vec![
                "--candidate-restore-from",
                "contains",
                "outside both datadirs",
            ],
        ),
        (
            "restore source is the datadir",
            plan(baseline(), setup("c", &other, Some(&other)), &out),
            vec!["--candidate-restore-from", "is the same folder as"],
        ),
        (
            "restore source is the other side's datadir",
            plan(baseline(), setup("c", &other, Some(&good)), &out),
            vec!["--candidate-restore-from", "--baseline-datadir"],
        ),
        (
            "restore source is not a reth datadir",
            plan(baseline(), setup("c", &other, Some(&plain)), &out),
            vec!["--candidate-restore-from", "plain", "not a reth datadir"],
        ),
        (
            "restore source is missing",
            plan(
                baseline(),
                setup("c", &other, Some(&root.join("no-such-copy"))),
                &out,
            ),
            vec![
                "--candidate-restore-from",
                "no-such-copy",
                "existing folder",
            ],
        ),
        (
            "restore source in use",
            plan(baseline(), setup("c", &other, Some(&locked)), &out),
            vec!["--candidate-restore-from", "in use"],
        ),
        (
            "datadirs nested",
            plan(
                setup("b", &outer, Some(&pristine)),
                setup("c", &outer.join("inner"), Some(&pristine)),
                &out,
            ),
            vec!["nested", "two separate folders"],
        ),
        (
            "output inside a restored datadir",
            plan(
                baseline(),
                setup("c", &other, Some(&pristine)),
                &other.join("results"),
            ),
            vec![
                "--output",
                "inside --candidate-datadir",
                "outside the datadirs",
            ],
        ),
    ];
    for (case, plan, expected) in cases {
        let before = snapshot(&root);
        let err = run(&plan, &mut Vec::new()).expect_err(case);
        assert!(
            matches!(err, RunError::Guard(_)),
            "{case}: refused by the guard, got {err}"
        );
        let msg = err.to_string();
        for part in &expected {
            assert!(msg.contains(part), "{case}: {msg:?} lacks {part:?}");
        }
        assert!(
            snapshot(&root) == before,
            "{case}: a file changed, appeared or disappeared"
        );
    }
}

/// A datadir (`parent/dd`, the old state, with a file only it has) and a pristine copy to
/// restore from (the new state, with a file only it has); their snapshots.
struct Fixture {
    _tmp: tempfile::TempDir,
    parent: PathBuf,
    datadir: PathBuf,
    source: PathBuf,
    old: BTreeMap<PathBuf, Option<Vec<u8>>>,
    new: BTreeMap<PathBuf, Option<Vec<u8>>>,
}

fn fixture(template: &Path) -> Fixture {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = tmp.path().canonicalize().expect("real");
    let parent = base.join("data");
    std::fs::create_dir(&parent).expect("mkdir");
    let (datadir, source) = (parent.join("dd"), base.join("pristine"));
    cp_a(template, &datadir);
    cp_a(template, &source);
    std::fs::write(datadir.join("old-only.txt"), "old").expect("write");
    std::fs::write(source.join("new-only.txt"), "new").expect("write");
    let (old, new) = (snapshot(&datadir), snapshot(&source));
    Fixture {
        _tmp: tmp,
        parent,
        datadir,
        source,
        old,
        new,
    }
}

#[test]
fn a_restore_stopped_after_any_step_leaves_a_complete_datadir_and_recovery_settles_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let template = tmp.path().join("template");
    generated(&template);
    for (k, stopped_after) in SwapStep::ALL.iter().enumerate() {
        let f = fixture(&template);
        let log = f.parent.parent().expect("base").join("reset.log");
        let mut swap = Swap::new(&f.datadir, &f.source, &log).expect("swap");
        let work = swap.work_dir().to_path_buf();
        for step in &SwapStep::ALL[..=k] {
            assert_eq!(swap.step().expect("step"), Some(*step));
        }
        // Killed here: nothing more of this restore runs.
        drop(swap);
        let ctx = format!("stopped after {stopped_after:?}");
        // One complete datadir under a known name: the datadir itself, or the work folder's
        // copy and old datadir while the name is free.
        if f.datadir.exists() {
            let now = snapshot(&f.datadir);
            assert!(now == f.old || now == f.new, "{ctx}: the datadir is torn");
        } else {
            assert!(
                snapshot(&work.join("new")) == f.new,
                "{ctx}: no complete copy"
            );
            assert!(
                snapshot(&work.join("old")) == f.old,
                "{ctx}: no complete old"
            );
        }
        if k + 1 < SwapStep::ALL.len() {
            assert!(
                work.join(MARKER).is_file(),
                "{ctx}: the work folder is marked"
            );
        }

        let mut log = Vec::new();
        recover(&f.datadir, &mut log).expect("recover");
        let expected = if k < 2 { &f.old } else { &f.new };
        assert!(
            snapshot(&f.datadir) == *expected,
            "{ctx}: recovery left the wrong datadir"
        );
        assert_eq!(names(&f.parent), ["dd"], "{ctx}: leftovers remain");
        let log = String::from_utf8(log).expect("utf8");
        if k + 1 < SwapStep::ALL.len() {
            assert!(log.contains(&work.display().to_string()), "{ctx}: {log}");
        }
        // Recovery is idempotent, and the next restore runs from a clean state.
        recover(&f.datadir, &mut Vec::new()).expect("again");
        Swap::new(&f.datadir, &f.source, &f.parent.join("../reset2.log"))
            .expect("swap")
            .run()
            .expect("restore");
        assert!(snapshot(&f.datadir) == f.new, "{ctx}: restored");
        assert_eq!(names(&f.parent), ["dd"], "{ctx}");
    }
}

#[test]
fn recovery_settles_kills_inside_a_step_and_refuses_what_it_cannot_prove() {
    let tmp = tempfile::tempdir().expect("tmp");
    let template = tmp.path().join("template");
    generated(&template);
    let stopped = |f: &Fixture, steps: usize| {
        let mut swap =
            Swap::new(&f.datadir, &f.source, &f.parent.join("../reset.log")).expect("swap");
        for _ in 0..steps {
            swap.step().expect("step");
        }
        swap.work_dir().to_path_buf()
    };

    // Killed inside the copy: a partial copy.
    let f = fixture(&template);
    let work = stopped(&f, 1);
    std::fs::create_dir_all(work.join("partial/db")).expect("mkdir");
    std::fs::write(work.join("partial/db/mdbx.dat"), [1u8; 100]).expect("write");
    recover(&f.datadir, &mut Vec::new()).expect("recover");
    assert!(snapshot(&f.datadir) == f.old);
    assert_eq!(names(&f.parent), ["dd"]);

    // Killed inside the removal of the old datadir: part of it is left.
    let f = fixture(&template);
    let work = stopped(&f, 4);
    std::fs::remove_file(work.join("old/db/mdbx.dat")).expect("rm");
    recover(&f.datadir, &mut Vec::new()).expect("recover");
    assert!(snapshot(&f.datadir) == f.new);
    assert_eq!(names(&f.parent), ["dd"]);

    // Killed between creating the work folder and writing its marker, or after the removal took
    // the marker: an empty folder.
    let f = fixture(&template);
    let empty = f
        .parent
        .join(format!("dd.reth-hybrid-restore-{}", std::process::id()));
    std::fs::create_dir(&empty).expect("mkdir");
    recover(&f.datadir, &mut Vec::new()).expect("recover");
    assert_eq!(names(&f.parent), ["dd"]);

    // The old datadir aside and no copy (not a state a restore leaves): it is moved back.
    let f = fixture(&template);
    let work = stopped(&f, 3);
    std::fs::remove_dir_all(work.join("new")).expect("rm");
    recover(&f.datadir, &mut Vec::new()).expect("recover");
    assert!(snapshot(&f.datadir) == f.old);
    assert_eq!(names(&f.parent), ["dd"]);

    // Refused, every file left as it was: a look-alike folder without the marker, ...
    let f = fixture(&template);
    // (4194305 is above Linux's largest pid, so no process has it.)
    let alike = f.parent.join("dd.reth-hybrid-restore-4194305");
    std::fs::create_dir(&alike).expect("mkdir");
    std::fs::write(alike.join("precious.txt"), "mine").expect("write");
    let before = snapshot(&f.parent);
    let err = recover(&f.datadir, &mut Vec::new()).expect_err("unproven");
    assert!(matches!(err, RestoreError::Unproven { .. }), "{err}");
    assert!(
        err.to_string().contains("dd.reth-hybrid-restore-4194305"),
        "{err}"
    );
    assert!(snapshot(&f.parent) == before);

    // ... a work folder of a process that still runs, ...
    let f = fixture(&template);
    let mut sleeper = Command::new("sleep").arg("600").spawn().expect("sleep");
    let live = f
        .parent
        .join(format!("dd.reth-hybrid-restore-{}", sleeper.id()));
    std::fs::create_dir(&live).expect("mkdir");
    std::fs::write(live.join(MARKER), "").expect("write");
    let before = snapshot(&f.parent);
    let err = recover(&f.datadir, &mut Vec::new()).expect_err("concurrent");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(matches!(err, RestoreError::Concurrent { .. }), "{err}");
    assert!(err.to_string().contains("still running"), "{err}");
    assert!(snapshot(&f.parent) == before);

    // ... the datadir present next to both a copy and an old datadir, ...
    let f = fixture(&template);
    let work = stopped(&f, 3);
    cp_a(&work.join("new"), &f.datadir);
    let before = snapshot(&f.parent);
    let err = recover(&f.datadir, &mut Vec::new()).expect_err("ambiguous");
    assert!(matches!(err, RestoreError::Ambiguous { .. }), "{err}");
    assert!(snapshot(&f.parent) == before);

    // ... and the datadir missing with nothing complete to put back.
    let f = fixture(&template);
    let work = stopped(&f, 1);
    std::fs::remove_dir_all(&f.datadir).expect("rm");
    let before = snapshot(&f.parent);
    let err = recover(&f.datadir, &mut Vec::new()).expect_err("missing");
    assert!(matches!(err, RestoreError::Missing { .. }), "{err}");
    assert!(err.to_string().contains("cp -a --reflink=auto"), "{err}");
    assert!(snapshot(&f.parent) == before);
    assert_eq!(
        leftovers(&f.datadir).expect("list"),
        [(work, std::process::id())]
    );
}

#[test]
fn the_next_run_finishes_an_interrupted_restore_before_its_checks() {
    let tmp = tempfile::tempdir().expect("tmp");
    let template = tmp.path().join("template");
    generated(&template);
    let f = fixture(&template);
    let mut swap = Swap::new(&f.datadir, &f.source, &f.parent.join("../reset.log")).expect("swap");
    for _ in 0..3 {
        swap.step().expect("step");
    }
    drop(swap);
    assert!(!f.datadir.exists(), "killed with the datadir's name free");
    let baseline = f.parent.join("../baseline");
    cp_a(&template, &baseline);
    let p = plan(
        setup("mdbx", &baseline, None),
        setup("candidate", &f.datadir, Some(&f.source)),
        &f.parent.join("../out"),
    );
    let mut log = Vec::new();
    let err = run(&p, &mut log).expect_err("stops at the range");
    assert!(matches!(err, RunError::BadRange { .. }), "{err}");
    let log = String::from_utf8(log).expect("utf8");
    assert!(log.contains("finished an interrupted restore"), "{log}");
    assert!(snapshot(&f.datadir) == f.new);
    assert_eq!(names(&f.parent), ["dd"]);
}
