//! Where a node's CPU went during a run, thread by thread: user and system time of every thread
//! of the node's process group, read from `/proc` right before and right after the measured
//! blocks. Throughput alone cannot say why one layout persists slower on two cores; the threads
//! can (MDBX's commits run on `mdbx-rs-txn-mgr`, reth's persistence on `persistence`, RocksDB's
//! flushes and compactions on `rocksdb:*`).

use serde::{Deserialize, Serialize};
use std::{collections::BTreeMap, path::Path};

/// One thread's counters, in clock ticks since it started.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ThreadTicks {
    name: String,
    user: u64,
    system: u64,
}

/// The counters of a process group at one moment.
#[derive(Debug, Clone, Default)]
pub struct GroupSnapshot {
    /// By (process id, thread id).
    threads: BTreeMap<(i32, i32), ThreadTicks>,
    /// Each process's own totals, which keep the time of its threads that have exited.
    processes: BTreeMap<i32, (u64, u64)>,
}

/// CPU time of one group of threads (same name, numbers aside) over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadCpu {
    /// The threads' name, their trailing numbers replaced by `*` (`reth-rayon-*`).
    pub name: String,
    /// Threads of that name seen in the run.
    pub threads: usize,
    pub user_ms: f64,
    pub system_ms: f64,
}

impl ThreadCpu {
    pub fn total_ms(&self) -> f64 {
        self.user_ms + self.system_ms
    }
}

/// The name threads that exited during the run are counted under (their time is known only
/// from their process's totals).
pub const EXITED: &str = "(threads that exited)";

/// `comm`, user and system ticks, and the process group of one `stat` line
/// (`pid (comm) state ppid pgrp ...`). `comm` may hold spaces and parentheses, so the fields
/// are counted from its last `)`.
fn parse_stat(line: &str) -> Option<(String, u64, u64, i32)> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let name = line.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // After the name: state (field 3), ppid, pgrp (5) ... utime (14), stime (15).
    let pgrp = rest.get(2)?.parse().ok()?;
    let user = rest.get(11)?.parse().ok()?;
    let system = rest.get(12)?.parse().ok()?;
    Some((name, user, system, pgrp))
}

fn read_stat(path: &Path) -> Option<(String, u64, u64, i32)> {
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

/// Every thread of every process in group `pgid`. Processes and threads that vanish while they
/// are read are skipped: the next snapshot's process totals still hold their time.
pub fn snapshot_group(pgid: i32) -> GroupSnapshot {
    snapshot_group_in(Path::new("/proc"), pgid)
}

fn snapshot_group_in(proc_root: &Path, pgid: i32) -> GroupSnapshot {
    let mut snap = GroupSnapshot::default();
    for pid in numeric_entries(proc_root) {
        let dir = proc_root.join(pid.to_string());
        let Some((_, user, system, pgrp)) = read_stat(&dir.join("stat")) else {
            continue;
        };
        if pgrp != pgid {
            continue;
        }
        snap.processes.insert(pid, (user, system));
        let tasks = dir.join("task");
        for tid in numeric_entries(&tasks) {
            if let Some((name, user, system, _)) =
                read_stat(&tasks.join(tid.to_string()).join("stat"))
            {
                snap.threads
                    .insert((pid, tid), ThreadTicks { name, user, system });
            }
        }
    }
    snap
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

/// CPU time per kind of thread between two snapshots of one group, most first. A thread present
/// in both counts its difference, one started in between all of its time; what a process's
/// totals grew beyond its live threads' (threads that exited) counts under [`EXITED`].
pub fn cpu_between(
    before: &GroupSnapshot,
    after: &GroupSnapshot,
    ticks_per_s: f64,
) -> Vec<ThreadCpu> {
    let ms = |ticks: u64| ticks as f64 * 1000.0 / ticks_per_s;
    let mut kinds: BTreeMap<String, ThreadCpu> = BTreeMap::new();
    let mut live_per_process: BTreeMap<i32, (u64, u64)> = BTreeMap::new();
    for (&(pid, tid), now) in &after.threads {
        let (user, system) = match before.threads.get(&(pid, tid)) {
            // The same thread (a reused id would have a smaller count or another name).
            Some(then)
                if then.name == now.name && then.user <= now.user && then.system <= now.system =>
            {
                (now.user - then.user, now.system - then.system)
            }
            _ => (now.user, now.system),
        };
        let live = live_per_process.entry(pid).or_default();
        live.0 += user;
        live.1 += system;
        let kind = thread_kind(&now.name);
        let row = kinds.entry(kind.clone()).or_insert_with(|| ThreadCpu {
            name: kind,
            ..ThreadCpu::default()
        });
        row.threads += 1;
        row.user_ms += ms(user);
        row.system_ms += ms(system);
    }
    let (mut gone_user, mut gone_system) = (0u64, 0u64);
    for (pid, &(user, system)) in &after.processes {
        let (user0, system0) = before.processes.get(pid).copied().unwrap_or((0, 0));
        let (live_user, live_system) = live_per_process.get(pid).copied().unwrap_or((0, 0));
        gone_user += user.saturating_sub(user0).saturating_sub(live_user);
        gone_system += system.saturating_sub(system0).saturating_sub(live_system);
    }
    let mut rows: Vec<ThreadCpu> = kinds.into_values().collect();
    if gone_user + gone_system > 0 {
        rows.push(ThreadCpu {
            name: EXITED.to_string(),
            threads: 0,
            user_ms: ms(gone_user),
            system_ms: ms(gone_system),
        });
    }
    rows.sort_by(|a, b| {
        b.total_ms()
            .total_cmp(&a.total_ms())
            .then(a.name.cmp(&b.name))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{os::unix::process::CommandExt, process::Command, time::Duration};

    fn snap(
        threads: &[((i32, i32), &str, u64, u64)],
        processes: &[(i32, u64, u64)],
    ) -> GroupSnapshot {
        GroupSnapshot {
            threads: threads
                .iter()
                .map(|&(id, name, user, system)| {
                    (
                        id,
                        ThreadTicks {
                            name: name.to_string(),
                            user,
                            system,
                        },
                    )
                })
                .collect(),
            processes: processes.iter().map(|&(p, u, s)| (p, (u, s))).collect(),
        }
    }

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let line =
            "4242 (tokio (rt) 1) S 1 4200 4200 0 -1 4194560 1 0 0 0 731 29 0 0 20 0 9 0 100 0 0";
        assert_eq!(
            parse_stat(line),
            Some(("tokio (rt) 1".to_string(), 731, 29, 4200))
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
    fn differences_new_threads_and_exited_ones_each_count_once() {
        let before = snap(
            &[
                ((1, 1), "reth", 100, 10),
                ((1, 2), "persistence", 50, 5),
                ((1, 3), "worker-1", 7, 0),
            ],
            &[(1, 157, 15)],
        );
        // persistence ran 30 + 20 ticks, a new worker-2 8 + 1, worker-1 exited after 3 more
        // user ticks, and the process's totals hold all of it.
        let after = snap(
            &[
                ((1, 1), "reth", 100, 10),
                ((1, 2), "persistence", 80, 25),
                ((1, 4), "worker-2", 8, 1),
            ],
            &[(1, 157 + 30 + 8 + 3, 15 + 20 + 1)],
        );
        let rows = cpu_between(&before, &after, 100.0);
        let by_name: BTreeMap<_, _> = rows.iter().map(|r| (r.name.as_str(), r)).collect();
        assert_eq!(by_name["persistence"].user_ms, 300.0);
        assert_eq!(by_name["persistence"].system_ms, 200.0);
        assert_eq!(by_name["worker-*"].threads, 1);
        assert_eq!(by_name["worker-*"].total_ms(), 90.0);
        assert_eq!(by_name["reth"].total_ms(), 0.0);
        assert_eq!(by_name[EXITED].user_ms, 30.0);
        assert_eq!(by_name[EXITED].system_ms, 0.0);
        assert_eq!(rows[0].name, "persistence", "most CPU first");
    }

    #[test]
    fn a_reused_thread_id_counts_the_new_thread_whole() {
        let before = snap(&[((1, 9), "old", 500, 0)], &[(1, 500, 0)]);
        let after = snap(&[((1, 9), "new", 20, 0)], &[(1, 520, 0)]);
        let rows = cpu_between(&before, &after, 100.0);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].name, "new");
        assert_eq!(rows[0].user_ms, 200.0);
    }

    /// A real process group on this machine: a shell burning CPU in its own group is found,
    /// and its time shows between two snapshots; another group's snapshot does not see it.
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
        std::thread::sleep(Duration::from_millis(1500));
        let after = snapshot_group(pgid);
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            after.processes.contains_key(&pgid),
            "the group's leader is seen"
        );
        let rows = cpu_between(&before, &after, ticks_per_second());
        let total: f64 = rows.iter().map(ThreadCpu::total_ms).sum();
        assert!(total >= 200.0, "a busy shell used CPU for 1.5 s: {rows:?}");
        assert!(rows.iter().any(|r| r.name == "sh"), "{rows:?}");
        let own = snapshot_group(unsafe { libc::getpgrp() });
        assert!(!own.processes.contains_key(&pgid));
    }
}
