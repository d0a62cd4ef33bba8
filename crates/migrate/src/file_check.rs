//! Reading back each ingested SST file through RocksDB, on threads beside the copy: the rows
//! in the file's key range are hashed and the digest compared with what the copy wrote into
//! it. Checking file by file while the next file is written overlaps the verification with the
//! copy instead of scanning the whole table after it (docs/migration.md, "Verification"); a
//! file is read in parts, so the last one is read by every thread once the copy is done.

use crate::digest::TableDigest;
use reth_hybrid_api::{Tables, raw::RawResult};
use reth_hybrid_rocksdb::RocksEngine;
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
    mpsc::{Receiver, Sender, channel},
};

/// Threads reading files back: during the copy they share the cores with the copy's two
/// threads; after it, the last files are read in parallel.
const CHECK_THREADS: usize = 2;

/// One recorded SST file's rows as RocksDB serves them, in consecutive parts: the stored keys
/// in `(after, ends[0]]`, `(ends[0], ends[1]]`, and so on.
#[derive(Debug, Clone)]
pub(crate) struct FileRange {
    /// Index of the file among the table's recorded files.
    pub file: usize,
    /// The previous file's last stored key (`None` for the first file: unbounded below).
    pub after: Option<Vec<u8>>,
    /// Where each part ends; the last is the file's last stored key.
    pub ends: Vec<Vec<u8>>,
}

/// One part of a file, as a checker thread reads it.
struct Part {
    file: usize,
    after: Option<Vec<u8>>,
    up_to: Vec<u8>,
}

/// What the checker found in one whole file.
pub(crate) type Checked = (usize, RawResult<TableDigest>);

/// The checker threads' handle: queue files, collect each file's digest once all its parts
/// are read.
pub(crate) struct FileChecker {
    jobs: Option<Sender<Part>>,
    /// Set when the handle is dropped without `finish` (the migration stopped on an error):
    /// the threads skip what is still queued instead of reading it all first.
    cancelled: Arc<AtomicBool>,
    results: Receiver<Checked>,
    /// Per queued file not yet complete: parts still out, and the digest of those read.
    open: std::collections::HashMap<usize, (usize, RawResult<TableDigest>)>,
}

impl FileChecker {
    /// Starts the checker threads for `table` in `scope`.
    pub(crate) fn spawn<'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        rocks: &'scope RocksEngine,
        table: Tables,
    ) -> Self {
        let (jobs, job_rx) = channel::<Part>();
        let job_rx = Arc::new(std::sync::Mutex::new(job_rx));
        let (result_tx, results) = channel();
        let cancelled = Arc::new(AtomicBool::new(false));
        for _ in 0..CHECK_THREADS {
            let (job_rx, result_tx) = (job_rx.clone(), result_tx.clone());
            let cancelled = cancelled.clone();
            scope.spawn(move || {
                yield_to_the_copy();
                loop {
                    let next = job_rx.lock().map(|rx| rx.recv());
                    let Ok(Ok(part)) = next else { return };
                    if cancelled.load(Ordering::Relaxed) {
                        return;
                    }
                    let digest = part_digest(rocks, table, &part);
                    if result_tx.send((part.file, digest)).is_err() {
                        return;
                    }
                }
            });
        }
        Self {
            jobs: Some(jobs),
            cancelled,
            results,
            open: Default::default(),
        }
    }

    pub(crate) fn queue(&mut self, range: FileRange) {
        let jobs = self.jobs.as_ref().expect("queued after finish");
        self.open
            .insert(range.file, (range.ends.len(), Ok(TableDigest::default())));
        let mut after = range.after;
        for up_to in range.ends {
            // The threads only stop when the jobs end or this handle is gone: a send cannot
            // fail while both live.
            let _ = jobs.send(Part {
                file: range.file,
                after: after.replace(up_to.clone()),
                up_to,
            });
        }
    }

    /// The files finished so far, without waiting.
    pub(crate) fn ready(&mut self) -> Vec<Checked> {
        let parts: Vec<Checked> = self.results.try_iter().collect();
        parts.into_iter().filter_map(|p| self.add(p)).collect()
    }

    /// Waits for every queued file.
    pub(crate) fn finish(mut self) -> Vec<Checked> {
        self.jobs = None;
        let mut out = Vec::new();
        while !self.open.is_empty() {
            match self.results.recv() {
                Ok(part) => out.extend(self.add(part)),
                // A thread panicked: the scope re-raises it when it joins.
                Err(_) => break,
            }
        }
        out
    }

    /// Adds one part's digest to its file; returns the file once all its parts are in.
    fn add(&mut self, (file, digest): Checked) -> Option<Checked> {
        let (left, sum) = self.open.get_mut(&file)?;
        *left -= 1;
        match (sum.as_mut(), digest) {
            (Ok(sum), Ok(d)) => sum.merge(&d),
            (Ok(_), Err(e)) => *sum = Err(e),
            (Err(_), _) => {}
        }
        if *left > 0 {
            return None;
        }
        let (_, sum) = self.open.remove(&file)?;
        Some((file, sum))
    }
}

impl Drop for FileChecker {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

/// Lowers this thread's scheduling priority (Linux: per thread): the copy's writer is the
/// migration's critical path, so on a machine with few cores the read-back takes the CPU time
/// the copy leaves, and all of it once the copy is done.
fn yield_to_the_copy() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on the calling thread; a failure only leaves the priority.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        *libc::__errno_location() = 0;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        if current != -1 || *libc::__errno_location() == 0 {
            libc::setpriority(libc::PRIO_PROCESS, tid, (current + 10).min(19));
        }
    }
}

/// The digest of the rows RocksDB holds in one part of a file.
fn part_digest(rocks: &RocksEngine, table: Tables, part: &Part) -> RawResult<TableDigest> {
    let mut digest = TableDigest::default();
    rocks.scan_range(table, part.after.as_deref(), Some(&part.up_to), |k, v| {
        digest.add(k, v);
        Ok(true)
    })?;
    Ok(digest)
}
