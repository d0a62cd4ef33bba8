//! Migrations killed with SIGKILL resume and end row-for-row identical. Each round copies a
//! generated datadir, kills the forward migration (with `--compact`) several times at crash
//! points between its durable steps and at random moments, finishes it, checks every row and
//! `verify`; then does the same for the rollback.
//!
//! `RETH_HYBRID_MIGRATE_CRASH_ROUNDS` (default 5, about 30 kills) sets the rounds; the long run
//! in docs/testing.md uses more.

mod common;

use common::{all_rows, copy_tree, counts, generated};
use reth_hybrid_api::{EngineKind, Tables};
use reth_hybrid_migrate::{MigrateRequest, NoProgress, datadir::Datadir, migrate, verify::verify};
use std::{
    os::unix::process::ExitStatusExt,
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

const CHILD_DIR: &str = "RETH_HYBRID_MIGRATE_CHILD_DIR";
const CHILD_TO: &str = "RETH_HYBRID_MIGRATE_CHILD_TO";

const FORWARD_POINTS: [(&str, u64); 8] = [
    ("AfterStateWrite", 1),
    ("CopyAfterSstFile", 8),
    ("CopyAfterCheckpoint", 8),
    ("AfterIngest", 2),
    ("AfterVerify", 2),
    ("AfterSwitch", 2),
    ("CompactAfterCopy", 1),
    ("CompactAfterRename", 1),
];
const ROLLBACK_POINTS: [(&str, u64); 5] = [
    ("AfterStateWrite", 1),
    ("RollbackAfterBatch", 4),
    ("RollbackAfterSwitch", 2),
    ("RollbackAfterClear", 2),
    ("BeforeStateRemove", 1),
];

fn request(to: EngineKind) -> MigrateRequest {
    let mut r = MigrateRequest::new(to);
    r.sst_file_bytes = 4 << 10;
    r.batch_rows = 400;
    r.compact = to == EngineKind::RocksDb;
    r
}

#[test]
#[ignore = "entry point of the crash tests' child process; run by them"]
fn migration_child() {
    let dir = std::env::var(CHILD_DIR).expect("run by the crash tests, which set the datadir");
    let to: EngineKind = std::env::var(CHILD_TO)
        .expect("direction")
        .parse()
        .expect("engine");
    migrate(Path::new(&dir), &request(to), &NoProgress).expect("migration finishes");
}

enum Outcome {
    Killed,
    Finished,
}

fn run_child(
    dir: &Path,
    to: EngineKind,
    crash_at: Option<String>,
    kill_after: Option<Duration>,
) -> Outcome {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args([
        "--ignored",
        "--exact",
        "migration_child",
        "--test-threads=1",
        "--nocapture",
    ])
    .env(CHILD_DIR, dir)
    .env(CHILD_TO, to.as_str())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    match &crash_at {
        Some(spec) => cmd.env("RETH_HYBRID_CRASH_AT", spec),
        None => cmd.env_remove("RETH_HYBRID_CRASH_AT"),
    };
    let mut child = cmd.spawn().expect("spawn child");
    if let Some(delay) = kill_after {
        std::thread::sleep(delay);
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("child output");
    if out.status.signal() == Some(libc_sigkill()) {
        return Outcome::Killed;
    }
    assert!(
        out.status.success(),
        "child failed ({}, crash_at {crash_at:?}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Outcome::Finished
}

fn libc_sigkill() -> i32 {
    9
}

/// splitmix64, so a failing round can be replayed from its printed seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Kills the migration toward `to` up to `kills` times, at crash points taken in the order the
/// migration reaches them (so each kill lands ahead of the resumed run) or at random moments,
/// then lets it finish. Returns the number of kills that happened.
fn kill_and_finish(
    dir: &Path,
    to: EngineKind,
    points: &[(&str, u64)],
    kills: usize,
    rng: &mut Rng,
    log: &mut Vec<String>,
) -> usize {
    let mut chosen: Vec<usize> = Vec::new();
    while chosen.len() < kills.min(points.len()) {
        let i = rng.below(points.len() as u64) as usize;
        if !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    chosen.sort();
    let mut killed = 0;
    for i in chosen {
        let (spec, delay) = if rng.below(5) == 0 {
            (None, Some(Duration::from_millis(10 + rng.below(60))))
        } else {
            let (name, max) = points[i];
            (Some(format!("{name}:{}", 1 + rng.below(max))), None)
        };
        let outcome = run_child(dir, to, spec.clone(), delay);
        log.push(format!(
            "{to}: {spec:?} {delay:?} -> {}",
            if matches!(outcome, Outcome::Killed) {
                "killed"
            } else {
                "finished"
            }
        ));
        match outcome {
            Outcome::Killed => killed += 1,
            Outcome::Finished => break,
        }
    }
    assert!(matches!(run_child(dir, to, None, None), Outcome::Finished));
    killed
}

#[test]
fn killed_migrations_resume_and_end_identical() {
    let rounds: u64 = std::env::var("RETH_HYBRID_MIGRATE_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let seed: u64 = std::env::var("RETH_HYBRID_MIGRATE_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let template = generated(2, 21);
    let expected = all_rows(template.path());
    let default_tables = [
        Tables::AccountsHistory,
        Tables::StoragesHistory,
        Tables::TransactionHashNumbers,
    ];
    let mut total_kills = 0;
    for round in 0..rounds {
        let mut rng = Rng(seed ^ round.wrapping_mul(0x1000_0001));
        let work = tempfile::tempdir().expect("tmp");
        let d = work.path();
        copy_tree(template.path(), d);
        let mut log = Vec::new();

        total_kills += kill_and_finish(
            d,
            EngineKind::RocksDb,
            &FORWARD_POINTS,
            5,
            &mut rng,
            &mut log,
        );
        assert!(
            all_rows(d) == expected,
            "round {round} forward: rows differ; kills {log:?}"
        );
        for table in default_tables {
            assert_eq!(
                counts(d, table),
                (0, expected[&table].len()),
                "round {round} {table} {log:?}"
            );
        }
        let report = verify(d, &NoProgress).expect("verify");
        assert!(
            report.passed(),
            "round {round} forward: {:#?} {log:?}",
            report.checks
        );
        assert!(!Datadir::new(d).state_file().exists());
        assert!(!Datadir::new(d).staging().exists());

        total_kills +=
            kill_and_finish(d, EngineKind::Mdbx, &ROLLBACK_POINTS, 3, &mut rng, &mut log);
        assert!(
            all_rows(d) == expected,
            "round {round} rollback: rows differ; kills {log:?}"
        );
        for table in default_tables {
            assert_eq!(
                counts(d, table),
                (expected[&table].len(), 0),
                "round {round} {table} {log:?}"
            );
        }
        let report = verify(d, &NoProgress).expect("verify");
        assert!(
            report.passed(),
            "round {round} rollback: {:#?} {log:?}",
            report.checks
        );
        if std::env::var_os("RETH_HYBRID_MIGRATE_CRASH_LOG").is_some() {
            eprintln!("round {round}: {log:#?}");
        }
    }
    eprintln!("{total_kills} SIGKILLs over {rounds} rounds, every migration resumed identical");
    assert!(
        total_kills as u64 >= rounds * 3,
        "too few kills happened ({total_kills}); the crash points are not being reached"
    );
}
