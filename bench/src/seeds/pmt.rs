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
use std::time::{Duration, Instant};

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
    /// Compute each root on a read snapshot of the previous commit with the batch laid over it
    /// in memory, on a second thread while the leaves are written (as reth computes its state
    /// root from a read-only provider and the in-memory hashed state).
    pub root_beside_writes: bool,
}

impl PmtConfig {
    /// The seed's job: 4M keys in 40 batches.
    pub const SEED: Self = Self {
        batches: 40,
        keys_per_batch: 100_000,
        seed: 1,
        sorted_writes: false,
        root_beside_writes: false,
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
        let (computed, (nodes_written, nodes_removed), phases) = match config.root_beside_writes {
            true => commit_batch_root_beside(db, &rows)?,
            false => commit_batch(db, &rows)?,
        };
        let report = BatchReport {
            batch,
            root: computed.root,
            elapsed: started.elapsed(),
            phases,
            leaves_read: computed.leaves_read,
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

/// [`commit_batch`] with the root computed on a second thread, from a read snapshot of the last
/// commit with `rows` laid over it, while this thread writes the leaves. `phases.root` is the
/// time the commit then still waited for the root.
pub fn commit_batch_root_beside<D: Database + Sync>(
    db: &D,
    rows: &[(B256, Option<U256>)],
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
    let mut walk = Walk {
        trie,
        leaves,
        changed,
        hb: HashBuilder::default().with_updates(true),
        visited: Vec::new(),
        leaves_read: 0,
        hashes_reused: 0,
        buf: Vec::new(),
    };
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
    })
}

struct Walk<TC, LC> {
    trie: TC,
    leaves: LC,
    changed: ChangedKeys,
    hb: HashBuilder,
    visited: Vec<Nibbles>,
    leaves_read: usize,
    hashes_reused: usize,
    buf: Vec<u8>,
}

impl<TC: DbCursorRO<AccountsTrie>, LC: LeafSource> Walk<TC, LC> {
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
                self.hb
                    .add_branch(child, node.hash_for_nibble(nibble), in_trie);
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
