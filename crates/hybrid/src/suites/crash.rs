//! SIGKILL crash tests: a child process (the test binary, re-run on its `crash_child` test)
//! makes hybrid commits and is killed at every crash point of the protocol and of recovery, and
//! at random times; the parent reopens (recovery runs) and checks that every commit is in both
//! engines or in neither, and that no acknowledged commit was lost.
//!
//! `RETH_HYBRID_CRASH_ROUNDS` sets the rounds per crash point (default 30: 210 kills with the
//! timer kills); the documented long run is `RETH_HYBRID_CRASH_ROUNDS=150` (1050 kills).

use super::{
    Open,
    workload::{visible, write_clearing_commit, write_commit},
};
use crate::crash::CrashPoint;
use reth_hybrid_api::raw::{RawEngine, RawReplay, RawTx};
use std::{
    fs::OpenOptions,
    io::Write,
    os::unix::process::ExitStatusExt,
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

const CHILD_DIR: &str = "RETH_HYBRID_CRASH_DIR";
const CHILD_COMMITS: &str = "RETH_HYBRID_CRASH_COMMITS";
/// `clear`: the child makes clearing commits (`workload::write_clearing_commit`).
const CHILD_WORKLOAD: &str = "RETH_HYBRID_CRASH_WORKLOAD";
const SIGKILL: i32 = 9;
/// Written by a child once its datadir is open.
const OPENED: &str = "opened";

fn rounds() -> u64 {
    std::env::var("RETH_HYBRID_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30)
}

/// The child's workload: open (recovery runs), then commit `n` more rows, acknowledging each
/// commit in `acks` (fsynced) only after `commit()` returned. Does nothing outside a crash test.
pub fn child<P: RawEngine, F: RawReplay>(open: Open<P, F>) {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let dir = Path::new(&dir);
    let n: u64 = std::env::var(CHILD_COMMITS)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let clearing = std::env::var(CHILD_WORKLOAD).is_ok_and(|w| w == "clear");
    let db = open(dir).expect("child opens the datadir");
    // The timer kills start counting from here: opening (reth's MDBX twice, RocksDB) can take
    // longer than the delay on a loaded machine, and a kill before any commit tests nothing.
    std::fs::write(dir.join(OPENED), b"").expect("opened marker");
    let start = visible(&db).0.last().copied().unwrap_or(0);
    let mut acks = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("acks"))
        .expect("acks");
    // A child killed inside an ack's write may leave a line without its newline; end it, so
    // this child's first ack does not run into it ("12" + "13\n" would read as 1213).
    let written = std::fs::read(dir.join("acks")).expect("read acks");
    if written.last().is_some_and(|&b| b != b'\n') {
        acks.write_all(b"\n").expect("end torn ack");
    }
    for i in start + 1..=start + n {
        let tx = db.begin_rw().expect("rw");
        match clearing {
            true => write_clearing_commit(&tx, i),
            false => write_commit(&tx, i),
        }
        tx.commit().expect("commit");
        // One write(2) per ack (`writeln!` makes two: the number, then the newline).
        acks.write_all(format!("{i}\n").as_bytes()).expect("ack");
        acks.sync_data().expect("sync ack");
    }
}

fn spawn_child(dir: &Path, crash_at: Option<String>, commits: u64) -> std::process::Child {
    spawn_workload(dir, crash_at, commits, "plain")
}

fn spawn_workload(
    dir: &Path,
    crash_at: Option<String>,
    commits: u64,
    workload: &str,
) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args(["--ignored", "--exact", "crash_child", "--test-threads=1"])
        .env(CHILD_DIR, dir)
        .env(CHILD_COMMITS, commits.to_string())
        .env(CHILD_WORKLOAD, workload)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match crash_at {
        Some(spec) => cmd.env("RETH_HYBRID_CRASH_AT", spec),
        None => cmd.env_remove("RETH_HYBRID_CRASH_AT"),
    };
    cmd.spawn().expect("spawn child")
}

/// The highest acknowledged commit: complete lines only (a torn last line is a prefix of an ack
/// whose commit returned, so ignoring it can only under-count).
fn last_ack(dir: &Path) -> u64 {
    let text = std::fs::read_to_string(dir.join("acks")).unwrap_or_default();
    text.split_inclusive('\n')
        .filter_map(|l| l.strip_suffix('\n'))
        .filter_map(|l| l.trim().parse().ok())
        .max()
        .unwrap_or(0)
}

/// Reopens, recovers, and checks the all-or-nothing and no-lost-ack promises.
fn verify<P: RawEngine, F: RawReplay>(open: Open<P, F>, dir: &Path, context: &str) -> u64 {
    let db = open(dir).unwrap_or_else(|e| panic!("{context}: reopen failed: {e}"));
    let (blocks, txs) = visible(&db);
    assert_eq!(
        blocks, txs,
        "{context}: a commit is in one engine only (torn commit)"
    );
    // The clearing workload leaves one header number (its last commit's); a lost MDBX clear
    // leaves more.
    let header_numbers = db
        .begin_ro()
        .and_then(|tx| tx.entries(reth_hybrid_api::Tables::HeaderNumbers))
        .expect("entries");
    assert!(
        header_numbers <= 1,
        "{context}: {header_numbers} header numbers: an MDBX clear was torn"
    );
    let max = blocks.last().copied().unwrap_or(0);
    assert_eq!(
        blocks.len() as u64,
        max,
        "{context}: commits are not a prefix 1..={max}"
    );
    let acked = last_ack(dir);
    assert!(
        max >= acked,
        "{context}: acknowledged commit {acked} lost (max {max})"
    );
    db.begin_ro().expect("ro").abort();
    // A killed commit's spill store and exported files are needed by nothing once recovery
    // resolved the intent: none may be left to fill the disk.
    let spill = db.follower().path().join("spill");
    let leftovers: Vec<_> = std::fs::read_dir(&spill)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        leftovers.is_empty(),
        "{context}: {} still holds {leftovers:?} after recovery",
        spill.display()
    );
    max
}

fn expect_killed(status: std::process::ExitStatus, context: &str) {
    assert_eq!(
        status.signal(),
        Some(SIGKILL),
        "{context}: the child was not killed at its crash point ({status})"
    );
}

/// Kills at each crash point of the commit (on its 1st, 2nd or 3rd commit), and inside
/// recovery's replay; every reopen must find whole commits and every acknowledged one. With
/// deferred syncs the intent is the pending row written into MDBX's transaction, and it is
/// retired by RocksDB's WAL sync after the commit (`super::deferred`).
pub fn kills_at_every_crash_point<P: RawEngine, F: RawReplay>(open: Open<P, F>) {
    super::deferred(open);
    let points = [
        CrashPoint::AfterIntentWrite,
        CrashPoint::AfterPrimaryCommit,
        CrashPoint::AfterFollowerApply,
        CrashPoint::AfterIntentClear,
    ];
    let mut kills = 0;
    let mut committed = 0;
    for point in points {
        let (k, c) = kill_rounds(open, point.name());
        kills += k;
        committed = committed.max(c);
    }
    // Kill recovery itself: leave MDBX ahead (crash after the decision), then crash while
    // recovery replays; the next open must still converge.
    let dir = tempfile::tempdir().expect("tmp");
    for round in 0..rounds() {
        let context = format!("RecoveryAfterReplay round {round}");
        expect_killed(
            spawn_child(dir.path(), Some("AfterPrimaryCommit:1".into()), 2)
                .wait()
                .expect("wait"),
            &context,
        );
        expect_killed(
            spawn_child(dir.path(), Some("RecoveryAfterReplay:1".into()), 1)
                .wait()
                .expect("wait"),
            &context,
        );
        kills += 2;
        verify(open, dir.path(), &context);
    }
    assert!(kills >= 6 * rounds(), "ran {kills} kills");
    assert!(
        committed >= rounds(),
        "the children made commits between their kills (at most {committed} in one datadir)"
    );
    println!("{kills} deterministic kills, no torn commit, no lost acknowledgement");
}

/// Kills children at the `hit`-th pass (1 to 3, by round) of the crash point `name`, one datadir
/// for all rounds; returns the kills and the most commits the datadir reached.
fn kill_rounds<P: RawEngine, F: RawReplay>(open: Open<P, F>, name: &str) -> (u64, u64) {
    kill_workload_rounds(open, name, "plain", rounds())
}

fn kill_workload_rounds<P: RawEngine, F: RawReplay>(
    open: Open<P, F>,
    name: &str,
    workload: &str,
    rounds: u64,
) -> (u64, u64) {
    let dir = tempfile::tempdir().expect("tmp");
    let (mut kills, mut committed) = (0, 0);
    for round in 0..rounds {
        let hit = round % 3 + 1;
        let context = format!("{workload} {name}:{hit} round {round}");
        let status = spawn_workload(dir.path(), Some(format!("{name}:{hit}")), 3, workload)
            .wait()
            .expect("wait");
        expect_killed(status, &context);
        kills += 1;
        committed = committed.max(verify(open, dir.path(), &context));
    }
    (kills, committed)
}

/// Kills inside commits that clear a RocksDB table and an MDBX table with writes before and after
/// each clear (`workload::write_clearing_commit`), at every crash point of the commit and inside
/// recovery's replay: every reopen finds each clearing commit whole in both engines (a cleared
/// RocksDB table is one range deletion in the commit's batch, replayed as such) and every
/// acknowledged one. A third of [`kills_at_every_crash_point`]'s rounds per point.
pub fn kills_in_clearing_commits<P: RawEngine, F: RawReplay>(open: Open<P, F>) {
    super::deferred(open);
    let rounds = rounds().div_ceil(3).max(3);
    let mut kills = 0;
    let mut committed = 0;
    for point in [
        CrashPoint::AfterIntentWrite,
        CrashPoint::AfterPrimaryCommit,
        CrashPoint::AfterFollowerApply,
        CrashPoint::AfterIntentClear,
    ] {
        let (k, c) = kill_workload_rounds(open, point.name(), "clear", rounds);
        kills += k;
        committed = committed.max(c);
    }
    let dir = tempfile::tempdir().expect("tmp");
    for round in 0..rounds {
        let context = format!("clear RecoveryAfterReplay round {round}");
        for (spec, commits) in [("AfterPrimaryCommit:1", 2), ("RecoveryAfterReplay:1", 1)] {
            let status = spawn_workload(dir.path(), Some(spec.into()), commits, "clear")
                .wait()
                .expect("wait");
            expect_killed(status, &context);
            kills += 1;
        }
        committed = committed.max(verify(open, dir.path(), &context));
    }
    assert!(
        committed >= rounds,
        "the children made clearing commits between their kills (at most {committed})"
    );
    println!("{kills} kills in clearing commits, no torn commit, no lost acknowledgement");
}

/// Kills at crash points an engine of the pair defines itself (`RETH_HYBRID_CRASH_AT` names
/// them as it names the protocol's), each passed at least 3 times in 3 commits; every reopen
/// must find whole commits and every acknowledged one.
pub fn kills_at_named_points<P: RawEngine, F: RawReplay>(open: Open<P, F>, names: &[&str]) {
    let mut kills = 0;
    for name in names {
        let (k, committed) = kill_rounds(open, name);
        // A point passed several times per commit kills most rounds before their first commit
        // is decided; every third round (hit 3) gets past one.
        assert!(
            committed >= rounds() / 3,
            "{name}: the children made commits between their kills (at most {committed})"
        );
        kills += k;
    }
    println!("{kills} kills at {names:?}, no torn commit, no lost acknowledgement");
}

/// Waits for a child to have opened its datadir (or to have ended, which `verify` then judges).
fn wait_until_opened(child: &mut std::process::Child, dir: &Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !dir.join(OPENED).exists() && std::time::Instant::now() < deadline {
        if child.try_wait().expect("poll child").is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Kills a committing child after a random delay from its open, over and over in one datadir.
pub fn kills_at_random_times<P: RawEngine, F: RawReplay>(open: Open<P, F>) {
    let dir = tempfile::tempdir().expect("tmp");
    let mut x: u64 = 0x9e37;
    for round in 0..rounds() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = Duration::from_millis(30 + (x >> 33) % 250);
        let _ = std::fs::remove_file(dir.path().join(OPENED));
        let mut c = spawn_child(dir.path(), None, 1000);
        wait_until_opened(&mut c, dir.path());
        std::thread::sleep(delay);
        let _ = c.kill();
        c.wait().expect("wait");
        verify(
            open,
            dir.path(),
            &format!("timer kill round {round} after {delay:?}"),
        );
    }
    assert!(
        last_ack(dir.path()) > 0,
        "the children committed something before being killed"
    );
}
