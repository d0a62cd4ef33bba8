//! Seed 000, the PMT job: random 32-byte keys written in batches, the Merkle-Patricia root
//! recomputed after each batch and persisted in the same commit, as reth's state root does.
//!
//! The shape is reth's account trie: leaves in `HashedAccounts` (hashed address -> account, the
//! seed's 32-byte value as the balance), branch nodes in `AccountsTrie` (`StoredNibbles ->
//! BranchNodeCompact`). A batch's root is computed incrementally: a stored branch hash is reused
//! for every subtree no key of the batch falls into, and only the changed subtrees are rebuilt
//! from their leaves ([`incremental_root`]). Every root is checked against [`reference_roots`],
//! built from scratch with alloy-trie's `HashBuilder`.

use crate::KeyGen;
use alloy_primitives::{B256, U256};
use alloy_trie::{
    BranchNodeCompact, EMPTY_ROOT_HASH, HashBuilder, KECCAK_EMPTY, Nibbles, TrieAccount,
};
use reth_hybrid_api::{
    DatabaseError, DbCursorRO, DbTx, DbTxMut,
    models::{Account, StoredNibbles},
    tables::{AccountsTrie, HashedAccounts},
    typed::Database,
};
use std::{
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

/// Branch nodes by path, as alloy-trie's `HashBuilder` hands them out.
pub type NodeMap = alloy_primitives::map::HashMap<Nibbles, BranchNodeCompact>;

/// The job's size. The seed: 40 batches of 100,000 keys.
#[derive(Debug, Clone, Copy)]
pub struct PmtConfig {
    pub batches: usize,
    pub keys_per_batch: usize,
    pub seed: u64,
    /// Write each batch in key order (as reth writes its sorted hashed state) instead of the
    /// seed's random order. The rows, roots and stored trie are the same either way.
    pub sorted_writes: bool,
    /// Where each batch's root is computed.
    pub root: RootMode,
}

/// Where a batch's root is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootMode {
    /// In the write transaction, after the leaves are written.
    InWriteTx,
    /// On a read snapshot of the previous commit with the batch laid over it in memory, while
    /// the leaves are written (as reth computes its state root from a read-only provider and
    /// the in-memory hashed state). With more than one thread, the root's 16 subtrees are
    /// shared out between them ([`parallel_root`]).
    Snapshot { threads: usize },
}

impl RootMode {
    /// A short description for reports.
    pub fn describe(self) -> String {
        match self {
            Self::InWriteTx => String::new(),
            Self::Snapshot { threads: 0 | 1 } => "root beside the writes".into(),
            Self::Snapshot { threads } => format!("root on {threads} threads beside the writes"),
        }
    }
}

impl PmtConfig {
    /// The seed's job: 4M keys in 40 batches.
    pub const SEED: Self = Self {
        batches: 40,
        keys_per_batch: 100_000,
        seed: 1,
        sorted_writes: false,
        root: RootMode::InWriteTx,
    };
}

/// One batch as the engine ran it.
#[derive(Debug, Clone)]
pub struct BatchReport {
    pub batch: usize,
    pub root: B256,
    /// Writes, root computation and the commit.
    pub elapsed: Duration,
    /// Where `elapsed` went.
    pub phases: BatchPhases,
    /// Leaves read back from `HashedAccounts` to rebuild changed subtrees.
    pub leaves_read: usize,
    /// Whether the root was built from its 16 subtrees on several threads (see
    /// [`RootMode::Snapshot`]).
    pub root_split: bool,
    /// Stored branch nodes reused without descending into them.
    pub hashes_reused: usize,
    /// Branch nodes written (new or changed) and removed.
    pub nodes_written: usize,
    pub nodes_removed: usize,
}

/// One batch's time by phase.
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchPhases {
    /// The batch's rows into `HashedAccounts`.
    pub leaf_writes: Duration,
    /// The incremental root: stored nodes and changed leaves read, hashed.
    pub root: Duration,
    /// The branch-node changes into `AccountsTrie`.
    pub trie_writes: Duration,
    /// The durable commit.
    pub commit: Duration,
}

impl BatchPhases {
    pub fn add(&mut self, other: &Self) {
        self.leaf_writes += other.leaf_writes;
        self.root += other.root;
        self.trie_writes += other.trie_writes;
        self.commit += other.commit;
    }
}

/// The rows of one batch: `(hashed key, value)`, deterministic in `config.seed`.
pub fn batch_rows(config: &PmtConfig, batch: usize) -> Vec<(B256, U256)> {
    let mut keys = KeyGen::new(
        config
            .seed
            .wrapping_mul(1_000_003)
            .wrapping_add(batch as u64),
    );
    (0..config.keys_per_batch)
        .map(|_| {
            let key = B256::from(keys.bytes::<32>());
            let value = U256::from_be_bytes(keys.bytes::<32>());
            (key, value)
        })
        .collect()
}

/// The account a row stands for: the seed's value as its balance.
pub fn account(value: U256) -> Account {
    Account {
        nonce: 0,
        balance: value,
        bytecode_hash: None,
    }
}

/// The trie leaf of an account, encoded as reth encodes it for the state root.
pub fn leaf_value(account: &Account, buf: &mut Vec<u8>) {
    buf.clear();
    let trie_account = TrieAccount::new(
        account.nonce,
        account.balance,
        EMPTY_ROOT_HASH,
        account.bytecode_hash.unwrap_or(KECCAK_EMPTY),
    );
    alloy_rlp::Encodable::encode(&trie_account, buf);
}

/// The root after each batch, computed from scratch over every row written so far (rows of a
/// later batch replace an earlier one's with the same key).
pub fn reference_roots(config: &PmtConfig) -> Vec<B256> {
    let mut rows: Vec<(B256, U256)> = Vec::new();
    let mut roots = Vec::with_capacity(config.batches);
    for batch in 0..config.batches {
        rows.extend(batch_rows(config, batch));
        // Stable: among equal keys the last written stays last, and dedup keeps it.
        rows.sort_by_key(|(k, _)| *k);
        rows.reverse();
        rows.dedup_by_key(|(k, _)| *k);
        rows.reverse();
        roots.push(root_of(rows.iter().map(|(k, v)| (k, v))));
    }
    roots
}

/// The root over `rows`, given in key order, built from scratch.
pub fn root_of<'a>(rows: impl IntoIterator<Item = (&'a B256, &'a U256)>) -> B256 {
    let mut hb = HashBuilder::default();
    let mut buf = Vec::new();
    for (key, value) in rows {
        leaf_value(&account(*value), &mut buf);
        hb.add_leaf(Nibbles::unpack(key), &buf);
    }
    hb.root()
}

/// Runs the job on `db`: each batch's rows and its root's branch-node updates in one commit.
/// `on_batch` sees each batch as it completes (the bench prints it, tests check the root).
pub fn run<D: Database + Sync>(
    db: &D,
    config: &PmtConfig,
    mut on_batch: impl FnMut(&BatchReport),
) -> Result<Vec<BatchReport>, DatabaseError> {
    let mut reports = Vec::with_capacity(config.batches);
    for batch in 0..config.batches {
        let mut rows: Vec<_> = batch_rows(config, batch)
            .into_iter()
            .map(|(key, value)| (key, Some(value)))
            .collect();
        let started = Instant::now();
        if config.sorted_writes {
            // Stable: of two writes to one key the later stays later.
            rows.sort_by_key(|(key, _)| *key);
        }
        let (computed, (nodes_written, nodes_removed), phases) = match config.root {
            RootMode::Snapshot { threads } => commit_batch_root_beside(db, &rows, threads)?,
            RootMode::InWriteTx => commit_batch(db, &rows)?,
        };
        let report = BatchReport {
            batch,
            root: computed.root,
            elapsed: started.elapsed(),
            phases,
            leaves_read: computed.leaves_read,
            root_split: computed.root_split,
            hashes_reused: computed.hashes_reused,
            nodes_written,
            nodes_removed,
        };
        on_batch(&report);
        reports.push(report);
    }
    Ok(reports)
}

/// One commit: the rows written (`Some`) or deleted (`None`), the new root computed over them
/// and its branch-node changes stored. Returns the root, (nodes written, nodes removed) and the
/// time of each phase.
pub fn commit_batch<D: Database>(
    db: &D,
    rows: &[(B256, Option<U256>)],
) -> Result<(ComputedRoot, (usize, usize), BatchPhases), DatabaseError> {
    let mut phases = BatchPhases::default();
    let mut started = Instant::now();
    let mut lap = |phase: &mut Duration| {
        *phase = started.elapsed();
        started = Instant::now();
    };
    let tx = db.tx_mut()?;
    let mut changed = Vec::with_capacity(rows.len());
    for (key, value) in rows {
        match value {
            Some(value) => tx.put::<HashedAccounts>(*key, account(*value))?,
            None => {
                tx.delete::<HashedAccounts>(*key, None)?;
            }
        }
        changed.push(Nibbles::unpack(key));
    }
    lap(&mut phases.leaf_writes);
    let computed = incremental_root(&tx, ChangedKeys::new(changed))?;
    lap(&mut phases.root);
    let written = computed.write(&tx)?;
    lap(&mut phases.trie_writes);
    tx.commit()?;
    lap(&mut phases.commit);
    Ok((computed, written, phases))
}

/// [`commit_batch`] with the root computed on `root_threads` other threads, from a read snapshot
/// of the last commit with `rows` laid over it, while this thread writes the leaves.
/// `phases.root` is the time the commit then still waited for the root.
pub fn commit_batch_root_beside<D: Database + Sync>(
    db: &D,
    rows: &[(B256, Option<U256>)],
    root_threads: usize,
) -> Result<(ComputedRoot, (usize, usize), BatchPhases), DatabaseError> {
    let mut overlay = rows.to_vec();
    // Stable: of two writes to one key the later stays, as in the write transaction.
    overlay.sort_by_key(|(key, _)| *key);
    overlay.reverse();
    overlay.dedup_by_key(|(key, _)| *key);
    overlay.reverse();
    let changed = ChangedKeys::new(overlay.iter().map(|(k, _)| Nibbles::unpack(k)).collect());
    let mut phases = BatchPhases::default();
    std::thread::scope(|scope| {
        let root = scope.spawn(|| {
            if root_threads > 1 {
                return parallel_root(db, &overlay, changed, root_threads);
            }
            let snapshot = db.tx()?;
            let leaves = OverlayLeaves::new(
                StoredLeaves(snapshot.cursor_read::<HashedAccounts>()?),
                &overlay,
            );
            incremental_root_with(snapshot.cursor_read::<AccountsTrie>()?, leaves, changed)
        });
        let started = Instant::now();
        let tx = db.tx_mut()?;
        for (key, value) in rows {
            match value {
                Some(value) => tx.put::<HashedAccounts>(*key, account(*value))?,
                None => {
                    tx.delete::<HashedAccounts>(*key, None)?;
                }
            }
        }
        phases.leaf_writes = started.elapsed();
        let started = Instant::now();
        let computed = root.join().expect("the root thread panicked")?;
        phases.root = started.elapsed();
        let started = Instant::now();
        let written = computed.write(&tx)?;
        phases.trie_writes = started.elapsed();
        let started = Instant::now();
        tx.commit()?;
        phases.commit = started.elapsed();
        Ok((computed, written, phases))
    })
}

/// Where the root computation reads leaves from, in key order.
pub trait LeafSource {
    fn seek(&mut self, key: B256) -> Result<Option<(B256, Account)>, DatabaseError>;
    fn next(&mut self) -> Result<Option<(B256, Account)>, DatabaseError>;
}

/// The leaves a transaction shows in `HashedAccounts`.
#[derive(Debug)]
pub struct StoredLeaves<C>(pub C);

impl<C: DbCursorRO<HashedAccounts>> LeafSource for StoredLeaves<C> {
    fn seek(&mut self, key: B256) -> Result<Option<(B256, Account)>, DatabaseError> {
        self.0.seek(key)
    }

    fn next(&mut self) -> Result<Option<(B256, Account)>, DatabaseError> {
        self.0.next()
    }
}

/// Stored leaves with a sorted batch laid over them: a batch row replaces the stored row of its
/// key, and `None` deletes it.
#[derive(Debug)]
pub struct OverlayLeaves<'a, L> {
    stored: L,
    stored_row: Option<(B256, Account)>,
    batch: &'a [(B256, Option<U256>)],
    pos: usize,
    /// The key last returned, so `next` knows which side(s) to advance.
    last: Option<B256>,
}

impl<'a, L: LeafSource> OverlayLeaves<'a, L> {
    /// `batch` sorted by key, one row per key.
    pub fn new(stored: L, batch: &'a [(B256, Option<U256>)]) -> Self {
        Self {
            stored,
            stored_row: None,
            batch,
            pos: batch.len(),
            last: None,
        }
    }

    fn resolve(&mut self) -> Result<Option<(B256, Account)>, DatabaseError> {
        loop {
            let stored = self.stored_row.as_ref().map(|(k, _)| *k);
            let batch = self.batch.get(self.pos).copied();
            let (key, row) = match (stored, batch) {
                (None, None) => return Ok(None),
                (Some(s), b) if b.is_none_or(|(k, _)| s < k) => (s, self.stored_row),
                (s, Some((k, value))) => {
                    if value.is_none() {
                        // Deleted: skip it and the stored row it hides.
                        self.pos += 1;
                        if s == Some(k) {
                            self.stored_row = self.stored.next()?;
                        }
                        continue;
                    }
                    (k, value.map(|v| (k, account(v))))
                }
                (Some(_), None) => unreachable!("matched by the first stored arm"),
            };
            self.last = Some(key);
            return Ok(row);
        }
    }
}

impl<L: LeafSource> LeafSource for OverlayLeaves<'_, L> {
    fn seek(&mut self, key: B256) -> Result<Option<(B256, Account)>, DatabaseError> {
        self.stored_row = self.stored.seek(key)?;
        self.pos = self.batch.partition_point(|(k, _)| *k < key);
        self.resolve()
    }

    fn next(&mut self) -> Result<Option<(B256, Account)>, DatabaseError> {
        let Some(last) = self.last else {
            return Ok(None);
        };
        if self.stored_row.as_ref().is_some_and(|(k, _)| *k == last) {
            self.stored_row = self.stored.next()?;
        }
        if self.batch.get(self.pos).is_some_and(|(k, _)| *k == last) {
            self.pos += 1;
        }
        self.resolve()
    }
}

/// The full keys changed since the stored trie was computed (reth's prefix set), sorted.
#[derive(Debug, Clone, Default)]
pub struct ChangedKeys(Vec<Nibbles>);

impl ChangedKeys {
    pub fn new(mut keys: Vec<Nibbles>) -> Self {
        keys.sort_unstable();
        keys.dedup();
        Self(keys)
    }

    /// Whether any changed key lies in the subtree at `prefix`.
    pub fn touches(&self, prefix: &Nibbles) -> bool {
        let first = self.0.partition_point(|k| k < prefix);
        self.0.get(first).is_some_and(|k| k.starts_with(prefix))
    }
}

/// A root and the branch-node changes that make the stored trie match it.
#[derive(Debug)]
pub struct ComputedRoot {
    pub root: B256,
    /// Nodes to write: every branch node the computation rebuilt.
    pub updated: NodeMap,
    /// Stored nodes the computation descended into that no longer exist.
    pub removed: Vec<Nibbles>,
    pub leaves_read: usize,
    pub hashes_reused: usize,
    /// Whether the root branch was built from its 16 subtrees ([`parallel_root`]); false when
    /// one walk built the whole trie.
    pub root_split: bool,
}

impl ComputedRoot {
    /// Writes the updates into `AccountsTrie`; returns (written, removed).
    pub fn write<TX: DbTxMut>(&self, tx: &TX) -> Result<(usize, usize), DatabaseError> {
        for key in &self.removed {
            tx.delete::<AccountsTrie>(StoredNibbles(*key), None)?;
        }
        let mut updated: Vec<_> = self.updated.iter().collect();
        updated.sort_unstable_by_key(|(k, _)| **k);
        for (key, node) in updated {
            tx.put::<AccountsTrie>(StoredNibbles(*key), node.clone())?;
        }
        Ok((self.updated.len(), self.removed.len()))
    }
}

/// The root of the trie `tx` shows: the stored branch nodes of `AccountsTrie` reused wherever
/// `changed` does not reach, the leaves of `HashedAccounts` hashed where it does. reth's
/// `StateRoot` does the same with its trie walker; this is our own depth-first form of it.
pub fn incremental_root<TX: DbTx>(
    tx: &TX,
    changed: ChangedKeys,
) -> Result<ComputedRoot, DatabaseError> {
    incremental_root_with(
        tx.cursor_read::<AccountsTrie>()?,
        StoredLeaves(tx.cursor_read::<HashedAccounts>()?),
        changed,
    )
}

/// [`incremental_root`] over any trie cursor and leaf source.
pub fn incremental_root_with<TC: DbCursorRO<AccountsTrie>, L: LeafSource>(
    trie: TC,
    leaves: L,
    changed: ChangedKeys,
) -> Result<ComputedRoot, DatabaseError> {
    let mut walk = Walk::new(trie, leaves, &changed, 0);
    walk.subtree(Nibbles::default())?;
    let root = walk.hb.root();
    let (_, updated) = walk.hb.split();
    let removed = walk
        .visited
        .into_iter()
        .filter(|k| !updated.contains_key(k))
        .collect();
    Ok(ComputedRoot {
        root,
        updated,
        removed,
        leaves_read: walk.leaves_read,
        hashes_reused: walk.hashes_reused,
        root_split: false,
    })
}

/// [`incremental_root`] on a read snapshot with `overlay` (sorted, one row per key) laid over
/// it, the root's 16 subtrees shared out between `threads` threads.
///
/// Each thread opens its own snapshot. They must all show the same commit: the caller is the
/// only writer and commits after this returns ([`commit_batch_root_beside`]).
///
/// Each subtree is built on its own with its first nibble left out, so the root of that build is
/// the child node the root branch refers to, and its branch nodes are the whole trie's. The root
/// branch is then built from the 16 child hashes. Where a child is a lone leaf or an extension,
/// or the root has fewer than two children (small tries), the root's masks would differ from a
/// whole build's, so the one-thread walk computes the root instead, the threads' work unused.
/// Like the one-thread walk, it takes every child node to be hashed (32 bytes or more), which
/// holds for account leaves.
pub fn parallel_root<D: Database + Sync>(
    db: &D,
    overlay: &[(B256, Option<U256>)],
    changed: ChangedKeys,
    threads: usize,
) -> Result<ComputedRoot, DatabaseError> {
    let snapshot = db.tx()?;
    let stored_root = match snapshot
        .cursor_read::<AccountsTrie>()?
        .seek(StoredNibbles(Nibbles::default()))?
    {
        Some((StoredNibbles(key), node)) if key.is_empty() => Some(node),
        _ => None,
    };
    // (nibble, hash, stored in `AccountsTrie`) of every child that is a branch node.
    let mut branches: Vec<(u8, B256, bool)> = Vec::new();
    let mut todo: Vec<u8> = Vec::new();
    for nibble in 0..16u8 {
        let child = Nibbles::from_nibbles_unchecked([nibble]);
        let touched = changed.touches(&child);
        match &stored_root {
            Some(node) if !touched && !node.state_mask.is_bit_set(nibble) => {}
            Some(node) if !touched && node.hash_mask.is_bit_set(nibble) => branches.push((
                nibble,
                node.hash_for_nibble(nibble),
                node.tree_mask.is_bit_set(nibble),
            )),
            _ => todo.push(nibble),
        }
    }
    let hashes_reused = branches.len();
    let next = AtomicUsize::new(0);
    let subtrees: Vec<Subtree> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.clamp(1, todo.len().max(1)))
            .map(|_| {
                scope.spawn(|| {
                    let tx = db.tx()?;
                    let mut done = Vec::new();
                    while let Some(&nibble) = todo.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let leaves = OverlayLeaves::new(
                            StoredLeaves(tx.cursor_read::<HashedAccounts>()?),
                            overlay,
                        );
                        let mut walk =
                            Walk::new(tx.cursor_read::<AccountsTrie>()?, leaves, &changed, 1);
                        walk.subtree(Nibbles::from_nibbles_unchecked([nibble]))?;
                        done.push(walk.into_subtree(nibble));
                    }
                    Ok::<_, DatabaseError>(done)
                })
            })
            .collect();
        let mut subtrees = Vec::new();
        for worker in workers {
            subtrees.extend(worker.join().expect("a root thread panicked")?);
        }
        Ok::<_, DatabaseError>(subtrees)
    })?;
    let not_branch = subtrees
        .iter()
        .any(|s| matches!(s.top, SubtreeTop::LeafOrExtension));
    let children = branches.len()
        + subtrees
            .iter()
            .filter(|s| matches!(s.top, SubtreeTop::Branch { .. }))
            .count();
    if not_branch || children < 2 {
        let leaves = OverlayLeaves::new(
            StoredLeaves(snapshot.cursor_read::<HashedAccounts>()?),
            overlay,
        );
        return incremental_root_with(snapshot.cursor_read::<AccountsTrie>()?, leaves, changed);
    }
    let mut computed = ComputedRoot {
        root: B256::ZERO,
        updated: NodeMap::default(),
        removed: Vec::new(),
        leaves_read: 0,
        hashes_reused,
        root_split: true,
    };
    let mut visited: Vec<Nibbles> = stored_root.iter().map(|_| Nibbles::default()).collect();
    for subtree in subtrees {
        if let SubtreeTop::Branch { hash, stored } = subtree.top {
            branches.push((subtree.nibble, hash, stored));
        }
        computed.updated.extend(subtree.updated);
        visited.extend(subtree.visited);
        computed.leaves_read += subtree.leaves_read;
        computed.hashes_reused += subtree.hashes_reused;
    }
    branches.sort_unstable_by_key(|(nibble, _, _)| *nibble);
    let mut hb = HashBuilder::default().with_updates(true);
    for (nibble, hash, stored) in branches {
        hb.add_branch(Nibbles::from_nibbles_unchecked([nibble]), hash, stored);
    }
    computed.root = hb.root();
    computed.updated.extend(hb.split().1);
    computed.removed = visited
        .into_iter()
        .filter(|k| !computed.updated.contains_key(k))
        .collect();
    Ok(computed)
}

/// One of the root's children, built on its own by [`parallel_root`].
struct Subtree {
    nibble: u8,
    top: SubtreeTop,
    /// Its branch nodes, at their paths in the whole trie.
    updated: NodeMap,
    visited: Vec<Nibbles>,
    leaves_read: usize,
    hashes_reused: usize,
}

enum SubtreeTop {
    Empty,
    /// A branch node: its hash, and whether `AccountsTrie` stores it.
    Branch {
        hash: B256,
        stored: bool,
    },
    LeafOrExtension,
}

struct Walk<'a, TC, LC> {
    trie: TC,
    leaves: LC,
    changed: &'a ChangedKeys,
    hb: HashBuilder,
    /// Leading nibbles left out of the paths fed to `hb`: 1 when it builds one of the root's
    /// subtrees on its own, whose root is then that child's node ([`parallel_root`]).
    strip: usize,
    /// Whether the paths fed to `hb` differ in their first nibble after `strip`, i.e. whether
    /// the node `hb` builds at its top is a branch.
    top: Option<u8>,
    top_is_branch: bool,
    visited: Vec<Nibbles>,
    leaves_read: usize,
    hashes_reused: usize,
    buf: Vec<u8>,
}

impl<'a, TC: DbCursorRO<AccountsTrie>, LC: LeafSource> Walk<'a, TC, LC> {
    fn new(trie: TC, leaves: LC, changed: &'a ChangedKeys, strip: usize) -> Self {
        Self {
            trie,
            leaves,
            changed,
            hb: HashBuilder::default().with_updates(true),
            strip,
            top: None,
            top_is_branch: false,
            visited: Vec::new(),
            leaves_read: 0,
            hashes_reused: 0,
            buf: Vec::new(),
        }
    }

    /// The root's child at `nibble`, as this walk (with `strip == 1`) built it.
    fn into_subtree(mut self, nibble: u8) -> Subtree {
        let top = match (self.top, self.top_is_branch) {
            (None, _) => SubtreeTop::Empty,
            (Some(_), false) => SubtreeTop::LeafOrExtension,
            (Some(_), true) => SubtreeTop::Branch {
                hash: self.hb.root(),
                stored: false,
            },
        };
        let prefix = Nibbles::from_nibbles_unchecked([nibble]);
        let mut top = top;
        let updated = self
            .hb
            .split()
            .1
            .into_iter()
            .map(|(path, mut node)| {
                if path.is_empty() {
                    // Stored at the child's path, not the root's: no root hash.
                    node.root_hash = None;
                    if let SubtreeTop::Branch { stored, .. } = &mut top {
                        *stored = true;
                    }
                }
                (prefix.join(&path), node)
            })
            .collect();
        Subtree {
            nibble,
            top,
            updated,
            visited: self.visited,
            leaves_read: self.leaves_read,
            hashes_reused: self.hashes_reused,
        }
    }

    /// The path as `hb` sees it, noting where it starts.
    fn fed_path(&mut self, path: &Nibbles) -> Nibbles {
        let first = path.get_unchecked(self.strip);
        match self.top {
            None => self.top = Some(first),
            Some(top) => self.top_is_branch |= top != first,
        }
        if self.strip == 0 {
            *path
        } else {
            path.slice(self.strip..)
        }
    }

    /// Feeds the hash builder everything under `prefix`, in key order.
    fn subtree(&mut self, prefix: Nibbles) -> Result<(), DatabaseError> {
        // The shallowest stored node under `prefix` is the first stored key with that prefix:
        // a branch with any stored descendant is itself stored (its tree mask is not empty).
        let stored = match self.trie.seek(StoredNibbles(prefix))? {
            Some((StoredNibbles(key), node)) if key.starts_with(&prefix) => Some((key, node)),
            _ => None,
        };
        let Some((key, node)) = stored else {
            return self.leaves(prefix, None);
        };
        // Between `prefix` and the node sits an extension; a changed key there splits it.
        let touched = key != prefix && self.changed.touches(&prefix);
        if touched {
            self.leaves(prefix, Some(key))?;
        }
        self.node(key, &node)?;
        if touched && let Some(after) = key.increment() {
            self.leaves_from(after, prefix)?;
        }
        Ok(())
    }

    fn node(&mut self, key: Nibbles, node: &BranchNodeCompact) -> Result<(), DatabaseError> {
        self.visited.push(key);
        for nibble in 0..16u8 {
            let mut child = key;
            child.push(nibble);
            let exists = node.state_mask.is_bit_set(nibble);
            let in_trie = node.tree_mask.is_bit_set(nibble);
            if exists && node.hash_mask.is_bit_set(nibble) && !self.changed.touches(&child) {
                let path = self.fed_path(&child);
                self.hb
                    .add_branch(path, node.hash_for_nibble(nibble), in_trie);
                self.hashes_reused += 1;
            } else if in_trie {
                self.subtree(child)?;
            } else if exists || self.changed.touches(&child) {
                self.leaves(child, None)?;
            }
        }
        Ok(())
    }

    /// The leaves under `prefix`, stopping before `until` when given.
    fn leaves(&mut self, prefix: Nibbles, until: Option<Nibbles>) -> Result<(), DatabaseError> {
        self.leaves_in(lower_bound(&prefix), prefix, until)
    }

    /// The leaves under `prefix` from the path `from` on.
    fn leaves_from(&mut self, from: Nibbles, prefix: Nibbles) -> Result<(), DatabaseError> {
        self.leaves_in(lower_bound(&from), prefix, None)
    }

    fn leaves_in(
        &mut self,
        start: B256,
        prefix: Nibbles,
        until: Option<Nibbles>,
    ) -> Result<(), DatabaseError> {
        let mut row = self.leaves.seek(start)?;
        while let Some((key, account)) = row {
            let path = Nibbles::unpack(key);
            if !path.starts_with(&prefix) || until.is_some_and(|u| path >= u) {
                break;
            }
            leaf_value(&account, &mut self.buf);
            let path = self.fed_path(&path);
            self.hb.add_leaf(path, &self.buf);
            self.leaves_read += 1;
            row = self.leaves.next()?;
        }
        Ok(())
    }
}

/// The smallest hashed key in the subtree at `path`.
fn lower_bound(path: &Nibbles) -> B256 {
    let mut out = [0u8; 32];
    for i in 0..path.len() {
        let nibble = path.get_unchecked(i);
        out[i / 2] |= if i % 2 == 0 { nibble << 4 } else { nibble };
    }
    B256::from(out)
}

/// Every branch node a from-scratch build of the trie over `HashedAccounts` stores, for
/// comparing with `AccountsTrie` after incremental updates (they must be equal).
pub fn from_scratch_nodes<TX: DbTx>(tx: &TX) -> Result<(B256, NodeMap), DatabaseError> {
    let mut hb = HashBuilder::default().with_updates(true);
    let mut cursor = tx.cursor_read::<HashedAccounts>()?;
    let mut buf = Vec::new();
    let mut row = cursor.first()?;
    while let Some((key, account)) = row {
        leaf_value(&account, &mut buf);
        hb.add_leaf(Nibbles::unpack(key), &buf);
        row = cursor.next()?;
    }
    let root = hb.root();
    Ok((root, hb.split().1))
}

/// Every node `AccountsTrie` stores.
pub fn stored_nodes<TX: DbTx>(tx: &TX) -> Result<NodeMap, DatabaseError> {
    let mut cursor = tx.cursor_read::<AccountsTrie>()?;
    let mut nodes = NodeMap::default();
    let mut row = cursor.first()?;
    while let Some((StoredNibbles(key), node)) = row {
        nodes.insert(key, node);
        row = cursor.next()?;
    }
    Ok(nodes)
}
