//! Where a node's CPU went during a run, thread by thread: user and system time of every thread
//! of the node's process group, read from `/proc` before and after the measured blocks (each
//! time once the node has idled, [`wait_until_idle`]). Throughput alone cannot say why one layout persists slower on two cores; the threads
//! can (MDBX's commits run on `mdbx-rs-txn-mgr`, reth's persistence on `persistence`, RocksDB's
//! flushes and compactions on `rocksdb:*`).

use serde::{Deserialize, Serialize};
use std::{
    collections::BTreeMap,
    path::Path,
    time::{Duration, Instant},
};

/// One thread's counters, in clock ticks since it started.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ThreadTicks {
    name: String,
    user: u64,
    system: u64,
    /// When the thread started (ticks since boot): a thread id reused between two snapshots
    /// names another thread.
    start: u64,
}

/// The counters of a process group at one moment.
#[derive(Debug, Clone, Default)]
pub struct GroupSnapshot {
    /// By (process id, thread id).
    threads: BTreeMap<(i32, i32), ThreadTicks>,
    /// Each process's own totals (user, system), which keep the time of its threads that have
    /// exited.
    processes: BTreeMap<i32, (u64, u64)>,
}

impl GroupSnapshot {
    /// Whether any process of the group was found.
    pub fn is_empty(&self) -> bool {
        self.processes.is_empty()
    }

    fn total_ticks(&self) -> u64 {
        self.processes.values().map(|(u, s)| u + s).sum()
    }
}

/// CPU time of one kind of thread (same name, numbers aside) over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadCpu {
    /// The threads' name, their trailing numbers replaced by `*` (`reth-rayon-*`).
    pub name: String,
    /// Threads of that kind alive at the end of the run.
    pub threads: usize,
    /// User time, ms.
    pub user_ms: f64,
    /// System (kernel) time, ms: with MDBX's write map, a commit's writeback shows here.
    pub system_ms: f64,
}

impl ThreadCpu {
    pub fn total_ms(&self) -> f64 {
        self.user_ms + self.system_ms
    }
}

/// A node's CPU over a run: by kind of thread, and its processes' own totals, which also hold
/// the time of threads that exited during the run (the kinds alone would miss it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupCpu {
    /// Most CPU first.
    pub threads: Vec<ThreadCpu>,
    /// The processes' totals, named `all`.
    pub total: ThreadCpu,
}

/// The fields of one `/proc/<pid>[/task/<tid>]/stat` line this module reads.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stat {
    name: String,
    pgrp: i32,
    user: u64,
    system: u64,
    start: u64,
}

/// Parses `pid (comm) state ppid pgrp ...`. `comm` may hold spaces and parentheses, so the
/// fields are counted from its last `)`: after it, field n of proc(5) is at index n - 3.
fn parse_stat(line: &str) -> Option<Stat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let name = line.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).copied();
    Some(Stat {
        name,
        pgrp: field(5)?.parse().ok()?,
        user: field(14)?.parse().ok()?,
        system: field(15)?.parse().ok()?,
        start: field(22)?.parse().ok()?,
    })
}

fn read_stat(path: &Path) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(path).ok()?)
}

fn numeric_entries(dir: &Path) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Every thread of every process in group `pgid`. A thread that exits while it is read is
/// skipped (its process's totals keep its time); a process that exits between two snapshots
/// is not counted (a node is one process).
pub fn snapshot_group(pgid: i32) -> GroupSnapshot {
    let proc_root = Path::new("/proc");
    let mut snap = GroupSnapshot::default();
    for pid in numeric_entries(proc_root) {
        let dir = proc_root.join(pid.to_string());
        let Some(process) = read_stat(&dir.join("stat")) else {
            continue;
        };
        if process.pgrp != pgid {
            continue;
        }
        snap.processes.insert(pid, (process.user, process.system));
        let tasks = dir.join("task");
        for tid in numeric_entries(&tasks) {
            if let Some(t) = read_stat(&tasks.join(tid.to_string()).join("stat")) {
                snap.threads.insert(
                    (pid, tid),
                    ThreadTicks {
                        name: t.name,
                        user: t.user,
                        system: t.system,
                        start: t.start,
                    },
                );
            }
        }
    }
    snap
}

/// Waits until group `pgid` has been idle for `window` (under 5% of one core), at most
/// `timeout`; returns whether it settled. reth-bench returns once its last block is accepted,
/// while the node may still be persisting blocks (most when nothing waited for persistence):
/// a node that has caught up idles.
pub fn wait_until_idle(pgid: i32, window: Duration, timeout: Duration) -> bool {
    let started = Instant::now();
    let idle_ticks = (ticks_per_second() * window.as_secs_f64() * 0.05).max(1.0) as u64;
    let mut last = snapshot_group(pgid).total_ticks();
    while started.elapsed() < timeout {
        std::thread::sleep(window);
        let now = snapshot_group(pgid);
        if now.is_empty() {
            return false;
        }
        let ticks = now.total_ticks();
        if ticks.saturating_sub(last) < idle_ticks {
            return true;
        }
        last = ticks;
    }
    false
}

/// `tokio-runtime-w` stays, `reth-rayon-12` becomes `reth-rayon-*`: one row per kind of thread.
pub fn thread_kind(name: &str) -> String {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if stem.len() == name.len() || stem.is_empty() {
        name.to_string()
    } else {
        format!("{stem}*")
    }
}

/// This machine's clock ticks per second (`/proc`'s unit), 100 if unknown.
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads system configuration.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// CPU time per kind of thread between two snapshots of one group, most first, and the
/// processes' totals. A thread present in both counts its difference, one started in between
/// (or a reused thread id) all of its time.
pub fn cpu_between(before: &GroupSnapshot, after: &GroupSnapshot, ticks_per_s: f64) -> GroupCpu {
    let ms = |ticks: u64| ticks as f64 * 1000.0 / ticks_per_s;
    let mut kinds: BTreeMap<String, ThreadCpu> = BTreeMap::new();
    for (id, now) in &after.threads {
        let (user, system) = match before.threads.get(id) {
            Some(then) if then.start == now.start => (
                now.user.saturating_sub(then.user),
                now.system.saturating_sub(then.system),
            ),
            _ => (now.user, now.system),
        };
        let kind = thread_kind(&now.name);
        let row = kinds.entry(kind.clone()).or_insert_with(|| ThreadCpu {
            name: kind,
            ..ThreadCpu::default()
        });
        row.threads += 1;
        row.user_ms += ms(user);
        row.system_ms += ms(system);
    }
    let mut total = ThreadCpu {
        name: "all".into(),
        threads: after.threads.len(),
        ..ThreadCpu::default()
    };
    for (pid, &(user, system)) in &after.processes {
        let (user0, system0) = before.processes.get(pid).copied().unwrap_or((0, 0));
        total.user_ms += ms(user.saturating_sub(user0));
        total.system_ms += ms(system.saturating_sub(system0));
    }
    let mut threads: Vec<ThreadCpu> = kinds.into_values().collect();
    threads.sort_by(|a, b| {
        b.total_ms()
            .total_cmp(&a.total_ms())
            .then(a.name.cmp(&b.name))
    });
    GroupCpu { threads, total }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{os::unix::process::CommandExt, process::Command};

    /// (pid, tid), name, user, system, start.
    type Row<'a> = ((i32, i32), &'a str, u64, u64, u64);

    fn snap(threads: &[Row], processes: &[(i32, u64, u64)]) -> GroupSnapshot {
        GroupSnapshot {
            threads: threads
                .iter()
                .map(|&(id, name, user, system, start)| {
                    let name = name.to_string();
                    (
                        id,
                        ThreadTicks {
                            name,
                            user,
                            system,
                            start,
                        },
                    )
                })
                .collect(),
            processes: processes.iter().map(|&(p, u, s)| (p, (u, s))).collect(),
        }
    }

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let line = "4242 (tokio (rt) 1) S 1 4200 4200 0 -1 4194560 1 0 0 0 731 29 0 0 20 0 9 0 \
                    8813 0 0";
        let stat = parse_stat(line).expect("parses");
        assert_eq!(stat.name, "tokio (rt) 1");
        assert_eq!(
            (stat.pgrp, stat.user, stat.system, stat.start),
            (4200, 731, 29, 8813)
        );
        assert_eq!(parse_stat("4242 (truncated) S 1"), None);
    }

    #[test]
    fn numbered_threads_share_a_kind() {
        assert_eq!(thread_kind("reth-rayon-12"), "reth-rayon-*");
        assert_eq!(thread_kind("rocksdb:low"), "rocksdb:low");
        assert_eq!(thread_kind("mdbx-rs-txn-mgr"), "mdbx-rs-txn-mgr");
        assert_eq!(thread_kind("42"), "42");
    }

    #[test]
    fn differences_and_new_threads_count_once_and_exited_ones_in_the_total() {
        let before = snap(
            &[
                ((1, 1), "reth", 100, 10, 5),
                ((1, 2), "persistence", 50, 5, 6),
                ((1, 3), "worker-1", 7, 0, 7),
            ],
            &[(1, 157, 15)],
        );
        // persistence ran 30 + 20 ticks, a new worker-2 8 + 1, worker-1 exited after 3 more
        // user ticks: only the process's totals hold those.
        let after = snap(
            &[
                ((1, 1), "reth", 100, 10, 5),
                ((1, 2), "persistence", 80, 25, 6),
                ((1, 4), "worker-2", 8, 1, 90),
            ],
            &[(1, 157 + 30 + 8 + 3, 15 + 20 + 1)],
        );
        let cpu = cpu_between(&before, &after, 100.0);
        let by_name: BTreeMap<_, _> = cpu.threads.iter().map(|r| (r.name.as_str(), r)).collect();
        assert_eq!(by_name["persistence"].user_ms, 300.0);
        assert_eq!(by_name["persistence"].system_ms, 200.0);
        assert_eq!(by_name["worker-*"].threads, 1);
        assert_eq!(by_name["worker-*"].total_ms(), 90.0);
        assert_eq!(by_name["reth"].total_ms(), 0.0);
        assert_eq!(cpu.threads[0].name, "persistence", "most CPU first");
        assert_eq!((cpu.total.user_ms, cpu.total.system_ms), (410.0, 210.0));
    }

    #[test]
    fn a_reused_thread_id_counts_the_new_thread_whole() {
        let before = snap(&[((1, 9), "worker", 500, 0, 10)], &[(1, 500, 0)]);
        let after = snap(&[((1, 9), "worker", 520, 0, 600)], &[(1, 1020, 0)]);
        let cpu = cpu_between(&before, &after, 100.0);
        assert_eq!(cpu.threads.len(), 1, "{cpu:?}");
        assert_eq!(
            cpu.threads[0].user_ms, 5200.0,
            "started after the first snapshot"
        );
    }

    /// A real process group on this machine: a shell burning CPU in its own group is found and
    /// its time shows between two snapshots, it is not idle, and another group does not see it.
    #[test]
    fn a_busy_process_group_shows_its_cpu() {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("while :; do :; done")
            .process_group(0)
            .spawn()
            .expect("sh starts");
        let pgid = child.id() as i32;
        let before = snapshot_group(pgid);
        // At least one tick of CPU, however loaded the machine (a long timeout, not a rate).
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut cpu = cpu_between(&before, &snapshot_group(pgid), ticks_per_second());
        while cpu.total.total_ms() == 0.0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            cpu = cpu_between(&before, &snapshot_group(pgid), ticks_per_second());
        }
        let busy = !wait_until_idle(pgid, Duration::from_millis(300), Duration::from_millis(700));
        let _ = child.kill();
        let _ = child.wait();
        assert!(cpu.total.total_ms() > 0.0, "{cpu:?}");
        assert!(
            cpu.threads
                .iter()
                .any(|r| r.name == "sh" && r.total_ms() > 0.0),
            "{cpu:?}"
        );
        assert!(busy, "a shell in a busy loop is not idle");
        // SAFETY: getpgrp only reads this process's group id.
        let own = snapshot_group(unsafe { libc::getpgrp() });
        assert!(!own.processes.contains_key(&pgid));
    }

    #[test]
    fn a_sleeping_group_is_idle_and_a_gone_one_does_not_settle() {
        let mut child = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("sleep starts");
        let pgid = child.id() as i32;
        assert!(wait_until_idle(
            pgid,
            Duration::from_millis(200),
            Duration::from_secs(30)
        ));
        let _ = child.kill();
        let _ = child.wait();
        assert!(!wait_until_idle(
            pgid,
            Duration::from_millis(50),
            Duration::from_secs(1)
        ));
    }
}
