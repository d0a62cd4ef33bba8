//! The storage lock (`db/lock`) across processes and handles. Child processes (this test binary,
//! re-run with `lock_child`) are released together by a barrier and race for one datadir: for a
//! stale lock exactly one wins and keeps its pid in the file; while they take and release the lock
//! over and over, no two ever hold it at once. Within one process a second handle is refused and
//! never removes the first handle's lock.

use reth_hybrid_mdbx::{
    Geometry, MdbxEngine, MdbxError, MdbxOptions,
    lock::{ProcessUid, StorageLock},
};
use std::{
    fs::{self, File, OpenOptions},
    io::{BufRead, BufReader, Read, Write},
    os::fd::AsRawFd,
    path::Path,
    process::{Child, ChildStdout, Command, Stdio},
};

const CHILD_DIR: &str = "RETH_HYBRID_LOCK_CHILD_DIR";
const CHILD_MODE: &str = "RETH_HYBRID_LOCK_CHILD_MODE";
/// Processes racing for one stale lock, and rounds of that race.
const RACERS: usize = 8;
const RACE_ROUNDS: usize = 10;
/// Processes taking and releasing the lock, threads in each (each thread its own handle), and
/// attempts per thread.
const CHURNERS: usize = 4;
const CHURN_THREADS: usize = 2;
const CHURN_ATTEMPTS: usize = 200;

fn flock(file: &File, op: libc::c_int) {
    // SAFETY: flock on a descriptor the caller owns; it has no memory effects.
    let rc = unsafe { libc::flock(file.as_raw_fd(), op) };
    assert_eq!(rc, 0, "flock: {}", std::io::Error::last_os_error());
}

/// The first line of the lock file, i.e. the pid it names.
fn lock_pid(dir: &Path) -> Option<String> {
    let contents = fs::read_to_string(dir.join("lock")).ok()?;
    contents.lines().next().map(str::to_owned)
}

/// Entry point of the child processes. It prints `READY`, waits at the barrier (a shared flock
/// on `go`, which the parent holds exclusively until every child is ready), then:
/// - `race`: takes the lock once and prints `RESULT won` (then holds the lock until its stdin
///   closes) or `RESULT lost <error>`;
/// - `churn`: `CHURN_THREADS` threads each take and release the lock `CHURN_ATTEMPTS` times;
///   while holding it, a thread checks that it alone holds it (an exclusive marker file, and the
///   lock file names this process), and the child prints `RESULT held <n>` or what went wrong.
#[test]
#[ignore = "entry point of the storage lock tests' child processes; run by them"]
fn lock_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let dir = Path::new(&dir);
    let mode = std::env::var(CHILD_MODE).expect("mode");
    println!("READY");
    let go = File::open(dir.join("go")).expect("go");
    flock(&go, libc::LOCK_SH);
    drop(go);
    match mode.as_str() {
        "race" => match StorageLock::acquire(dir) {
            Ok(lock) => {
                println!("RESULT won");
                let mut rest = Vec::new();
                std::io::stdin().read_to_end(&mut rest).expect("stdin");
                drop(lock);
            }
            Err(e) => println!("RESULT lost {e}"),
        },
        "churn" => {
            let results: Vec<Result<usize, String>> = std::thread::scope(|scope| {
                let threads: Vec<_> = (0..CHURN_THREADS)
                    .map(|_| scope.spawn(|| churn(dir)))
                    .collect();
                threads
                    .into_iter()
                    .map(|t| t.join().expect("churn thread"))
                    .collect()
            });
            match results.into_iter().sum::<Result<usize, String>>() {
                Ok(held) => println!("RESULT held {held}"),
                Err(e) => println!("RESULT {e}"),
            }
        }
        other => panic!("unknown child mode {other}"),
    }
}

/// One thread of a churn child: takes and releases the lock `CHURN_ATTEMPTS` times and returns
/// how often it held it, or what showed that someone else held it at the same time.
fn churn(dir: &Path) -> Result<usize, String> {
    let me = std::process::id().to_string();
    let marker = dir.join("holder");
    let mut held = 0;
    for _ in 0..CHURN_ATTEMPTS {
        match StorageLock::acquire(dir) {
            Ok(lock) => {
                if let Err(e) = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&marker)
                {
                    return Err(format!("overlap: another holder's marker is there ({e})"));
                }
                for _ in 0..3 {
                    std::thread::yield_now();
                    let named = lock_pid(dir);
                    if named.as_deref() != Some(me.as_str()) {
                        return Err(format!("overlap: the lock file names {named:?}, not us"));
                    }
                }
                fs::remove_file(&marker).map_err(|e| format!("marker: {e}"))?;
                drop(lock);
                held += 1;
            }
            // Held by another process, or by another thread of this one.
            Err(
                MdbxError::Locked { .. }
                | MdbxError::LockBusy { .. }
                | MdbxError::AlreadyOpen { .. },
            ) => {}
            Err(e) => return Err(format!("error {e}")),
        }
    }
    Ok(held)
}

struct Racer {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Racer {
    /// What follows `tag` on the next stdout line that has it (the test harness prints its own
    /// text, also in front of ours on the same line).
    fn next(&mut self, tag: &str) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.out.read_line(&mut line).expect("child stdout");
            assert!(n > 0, "child exited before printing {tag}");
            if let Some(at) = line.find(tag) {
                return line[at + tag.len()..].trim().to_owned();
            }
        }
    }
}

/// Starts `n` children in `mode` and releases them together once all are ready.
fn start_children(dir: &Path, mode: &str, n: usize) -> Vec<Racer> {
    let go = File::create(dir.join("go")).expect("go");
    flock(&go, libc::LOCK_EX);
    let mut racers: Vec<Racer> = (0..n)
        .map(|_| {
            let mut child = Command::new(std::env::current_exe().expect("test binary"))
                .args([
                    "--ignored",
                    "--exact",
                    "lock_child",
                    "--test-threads=1",
                    "--nocapture",
                ])
                .env(CHILD_DIR, dir)
                .env(CHILD_MODE, mode)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn child");
            let out = BufReader::new(child.stdout.take().expect("stdout"));
            Racer { child, out }
        })
        .collect();
    for racer in &mut racers {
        racer.next("READY");
    }
    // Every child is at (or right before) its blocking shared flock: release them all.
    drop(go);
    racers
}

/// A lock file left by a process that no longer runs (its real pid and start time).
fn write_stale_lock(dir: &Path) {
    let mut sleeper = Command::new("sleep").arg("60").spawn().expect("sleep");
    let uid = ProcessUid::of(sleeper.id()).expect("sleeper visible in /proc");
    sleeper.kill().expect("kill");
    sleeper.wait().expect("wait");
    assert!(!uid.is_live());
    fs::write(dir.join("lock"), format!("{}\n{}", uid.pid, uid.start_time)).expect("lock");
}

#[test]
fn racers_for_a_stale_lock_get_exactly_one_winner() {
    for round in 0..RACE_ROUNDS {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path();
        write_stale_lock(dir);
        let mut racers = start_children(dir, "race", RACERS);
        let mut winners = Vec::new();
        let mut losers = Vec::new();
        for (i, racer) in racers.iter_mut().enumerate() {
            let result = racer.next("RESULT");
            match result.strip_prefix("lost ") {
                Some(err) => losers.push(err.to_owned()),
                None => {
                    assert_eq!(result, "won", "round {round}");
                    winners.push(i);
                }
            }
        }
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one of {RACERS} racers wins; losers said {losers:?}"
        );
        let winner_pid = racers[winners[0]].child.id();
        for err in &losers {
            assert!(
                err.contains(&format!("locked by running process {winner_pid};"))
                    || err.contains("is being locked by another reth-hybrid process"),
                "round {round}: a loser names the winner or the lock in progress: {err}"
            );
        }
        for (i, racer) in racers.iter_mut().enumerate() {
            if i != winners[0] {
                assert!(racer.child.wait().expect("wait").success());
            }
        }
        // Every loser has exited: the lock still names the winner (pid and start time).
        let uid = ProcessUid::of(winner_pid).expect("winner still runs");
        let contents = fs::read_to_string(dir.join("lock")).expect("lock file");
        let lines: Vec<&str> = contents.lines().map(str::trim).collect();
        assert_eq!(
            lines[..2],
            [uid.pid.to_string(), uid.start_time.to_string()],
            "round {round}: the winner's lock survives the losers"
        );
        let mut winner = racers.swap_remove(winners[0]);
        drop(winner.child.stdin.take());
        assert!(winner.child.wait().expect("wait").success());
        assert!(
            !dir.join("lock").exists(),
            "round {round}: the winner removes its lock on release"
        );
    }
}

#[test]
fn holders_taking_and_releasing_the_lock_never_overlap() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let mut churners = start_children(dir, "churn", CHURNERS);
    let mut total = 0;
    for churner in &mut churners {
        let result = churner.next("RESULT");
        let held: usize = result
            .strip_prefix("held ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("a churner failed: {result}"));
        total += held;
        assert!(churner.child.wait().expect("wait").success());
    }
    assert!(total > 0, "some attempts took the lock");
    assert!(
        !dir.join("lock").exists(),
        "the last holder removed the lock"
    );
}

#[test]
fn second_handle_in_one_process_is_refused_and_keeps_the_first_lock() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let first = StorageLock::acquire(dir).expect("first handle");
    let own = ProcessUid::own().expect("own process in /proc");
    let expected = format!("{}\n{}\n", own.pid, own.start_time);
    match StorageLock::acquire(dir) {
        Err(MdbxError::AlreadyOpen { path }) => assert_eq!(path, dir),
        other => panic!("expected AlreadyOpen, got {other:?}"),
    }
    assert_eq!(
        fs::read_to_string(dir.join("lock")).expect("lock survives the refused handle"),
        expected
    );
    drop(first);
    assert!(!dir.join("lock").exists(), "the first handle removes it");
    drop(StorageLock::acquire(dir).expect("free again"));
}

#[test]
fn racer_that_locks_a_removed_lock_file_does_not_hold_the_lock() {
    // The racer opens db/lock; before it takes the flock, the holder releases (removing the
    // file) and a third handle takes the lock on a new file. The racer's flock on the removed
    // inode succeeds, but that file guards nothing: it must reopen and find the lock taken.
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let mut holder = Some(StorageLock::acquire(dir).expect("holder"));
    let mut third = None;
    let racer = StorageLock::acquire_with_hook(dir, &mut || {
        if let Some(h) = holder.take() {
            drop(h);
            third = Some(StorageLock::acquire(dir).expect("third handle takes the free lock"));
        }
    });
    match racer {
        Err(MdbxError::AlreadyOpen { .. }) => {}
        other => panic!("expected AlreadyOpen (the third handle holds it), got {other:?}"),
    }
    assert!(third.is_some() && dir.join("lock").exists());
    drop(third);
    assert!(!dir.join("lock").exists());

    // Without a third handle the racer reopens, creates the file anew and holds it there.
    let mut holder = Some(StorageLock::acquire(dir).expect("holder"));
    let racer = StorageLock::acquire_with_hook(dir, &mut || drop(holder.take()))
        .expect("the lock is free once the holder released it");
    assert_eq!(
        lock_pid(dir),
        Some(std::process::id().to_string()),
        "the racer's lock is the file at db/lock"
    );
    drop(racer);
    assert!(!dir.join("lock").exists());
}

#[test]
fn second_read_write_engine_in_one_process_keeps_the_first_lock() {
    let tmp = tempfile::tempdir().expect("tmp");
    let first = MdbxEngine::open(
        tmp.path(),
        MdbxOptions::create().with_geometry(Geometry::SMALL),
    )
    .expect("first open");
    let lock = tmp.path().join("db/lock");
    let before = fs::read_to_string(&lock).expect("lock file");
    match MdbxEngine::open(tmp.path(), MdbxOptions::read_write()) {
        Err(e @ MdbxError::AlreadyOpen { .. }) => {
            assert!(
                e.to_string()
                    .contains("already open read-write in this process")
            )
        }
        other => panic!("expected AlreadyOpen, got {other:?}"),
    }
    assert_eq!(
        fs::read_to_string(&lock).expect("lock survives the refused open"),
        before
    );
    drop(first);
    assert!(!lock.exists());
}

#[test]
fn lock_of_a_live_process_without_flock_is_refused_and_left_alone() {
    // reth takes no flock: only its pid and start time say the datadir is taken.
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let parent = std::os::unix::process::parent_id();
    let uid = ProcessUid::of(parent).expect("parent visible in /proc");
    let reth_lock = format!("{}\n{}", uid.pid, uid.start_time);
    fs::write(dir.join("lock"), &reth_lock).expect("lock");
    match StorageLock::acquire(dir) {
        Err(MdbxError::Locked { pid, .. }) => assert_eq!(pid, parent),
        other => panic!("expected Locked, got {other:?}"),
    }
    assert_eq!(
        fs::read_to_string(dir.join("lock")).expect("lock"),
        reth_lock
    );
    // Our lock file is what reth's parser reads: the pid and start time on two lines.
    let mut file = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(dir.join("lock"))
        .expect("lock");
    file.write_all(format!("{}\n{}", uid.pid, uid.start_time + 1000).as_bytes())
        .expect("stale");
    drop(file);
    let ours = StorageLock::acquire(dir).expect("a stale lock is taken over");
    let own = ProcessUid::own().expect("own");
    let contents = fs::read_to_string(dir.join("lock")).expect("lock");
    let mut lines = contents.lines().map(str::trim);
    assert_eq!(lines.next(), Some(own.pid.to_string().as_str()));
    assert_eq!(lines.next(), Some(own.start_time.to_string().as_str()));
    drop(ours);
}
