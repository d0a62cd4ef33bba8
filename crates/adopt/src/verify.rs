//! What adoption checks with reth's own data before it switches a datadir to v1:
//! - the state root of the head, recomputed from the hashed state (which the plain state then
//!   mirrors row for row), against the root the head's header commits to: a datadir reth would
//!   unwind, or whose state does not match its chain, is refused before anything is written;
//! - the stored tries against the branch nodes that same computation derives: reth's next block
//!   builds its root on the stored nodes, so a damaged node would adopt silently and fail there;
//! - the changeset rows of every block in MDBX against the counts the static files' offsets
//!   record for it (an index reth keeps beside the rows, so a row lost in the copy shows).

use crate::{error::AdoptError, static_files::V2StaticFiles};
use alloy_primitives::{B256, U256};
use alloy_trie::{
    BranchNodeCompact, EMPTY_ROOT_HASH, HashBuilder, KECCAK_EMPTY, Nibbles, TrieAccount,
};
use reth_hybrid_api::{
    DbCursorRO, DbDupCursorRO, DbTx, Tables,
    error::short_hex,
    models::{Account, BlockNumberAddress, PackedStoredNibbles},
    raw::{RawCursor, RawTx},
    table::compress_to_vec,
    tables,
    typed::TypedTx,
};
use std::sync::atomic::{AtomicBool, Ordering};

/// A branch node of the state's tries as a full rebuild from the hashed state derives it: the
/// nodes reth stores (it leaves out each trie's root, whose hash the parent or header holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrieNode {
    Account {
        path: Nibbles,
        node: BranchNodeCompact,
    },
    Storage {
        hashed_address: B256,
        path: Nibbles,
        node: BranchNodeCompact,
    },
}

/// Derived nodes are handed on in batches of at most this many: memory stays bounded however
/// large a trie is (they come in no particular order within a batch).
const NODE_BATCH: usize = 4096;

/// The root of the state trie over `HashedAccounts` and `HashedStorages`, computed from the rows
/// alone (no stored trie node is trusted), streaming: memory stays at one path of the trie and
/// a batch of nodes. Every branch node reth would store is handed to `on_node`.
pub fn state_trie_of_hashed_state<T: DbTx>(
    tx: &T,
    progress: &dyn crate::Progress,
    on_node: &mut dyn FnMut(TrieNode) -> Result<(), AdoptError>,
) -> Result<B256, AdoptError> {
    progress.begin(
        "state root and tries recomputed from the hashed state",
        Some(tx.entries::<tables::HashedAccounts>()? as u64),
    );
    let mut accounts = tx.cursor_read::<tables::HashedAccounts>()?;
    let mut slots = tx.cursor_read::<tables::HashedStorages>()?;
    let mut next_slot = slots.first()?;
    let mut builder = HashBuilder::default().with_updates(true);
    let mut leaf = Vec::with_capacity(128);
    let mut done = 0u64;
    for row in accounts.walk(None)? {
        let (hashed_address, account) = row?;
        let mut storage = HashBuilder::default().with_updates(true);
        let mut any = false;
        let mut storage_node = |path, node| TrieNode::Storage {
            hashed_address,
            path,
            node,
        };
        // Both tables are in hashed-address order; slots of an address without an account are
        // not part of the state (reth's own root skips them too).
        while let Some((key, entry)) = &next_slot {
            if *key > hashed_address {
                break;
            }
            if *key == hashed_address && entry.value != U256::ZERO {
                storage.add_leaf(
                    Nibbles::unpack(entry.key),
                    alloy_rlp::encode_fixed_size(&entry.value).as_ref(),
                );
                any = true;
                drain_nodes(&mut storage, NODE_BATCH, &mut storage_node, on_node)?;
            }
            next_slot = slots.next()?;
        }
        let storage_root = if any { storage.root() } else { EMPTY_ROOT_HASH };
        drain_nodes(&mut storage, 0, &mut storage_node, on_node)?;
        leaf.clear();
        alloy_rlp::Encodable::encode(&trie_account(account, storage_root), &mut leaf);
        builder.add_leaf(Nibbles::unpack(hashed_address), &leaf);
        drain_nodes(
            &mut builder,
            NODE_BATCH,
            &mut |path, node| TrieNode::Account { path, node },
            on_node,
        )?;
        done += 1;
        if done.is_multiple_of(100_000) {
            progress.advance(100_000);
        }
    }
    let root = builder.root();
    drain_nodes(
        &mut builder,
        0,
        &mut |path, node| TrieNode::Account { path, node },
        on_node,
    )?;
    progress.advance(done % 100_000);
    progress.end();
    Ok(root)
}

/// Hands on the builder's derived nodes once there are more than `above`, the root's left out.
fn drain_nodes(
    builder: &mut HashBuilder,
    above: usize,
    wrap: &mut dyn FnMut(Nibbles, BranchNodeCompact) -> TrieNode,
    on_node: &mut dyn FnMut(TrieNode) -> Result<(), AdoptError>,
) -> Result<(), AdoptError> {
    if builder.updates_len() <= above {
        return Ok(());
    }
    let Some(nodes) = builder.updated_branch_nodes.as_mut() else {
        return Ok(());
    };
    for (path, node) in nodes.drain() {
        if !path.is_empty() {
            on_node(wrap(path, node))?;
        }
    }
    Ok(())
}

// alloy-trie's `account-ext` feature (chains with extra account fields) adds a field.
#[allow(clippy::needless_update)]
fn trie_account(account: Account, storage_root: B256) -> TrieAccount {
    TrieAccount {
        nonce: account.nonce,
        balance: account.balance,
        storage_root,
        code_hash: account.bytecode_hash.unwrap_or(KECCAK_EMPTY),
        ..Default::default()
    }
}

/// What [`check_state`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateCheck {
    /// The state root recomputed from the hashed state.
    pub root: B256,
    /// The first way a stored trie differs from the one the hashed state derives, if any.
    pub trie_mismatch: Option<TrieMismatch>,
}

/// How a stored trie (storage v2's packed keys) differs from the derived one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrieMismatch {
    pub table: Tables,
    pub problem: String,
}

/// The state root from the hashed state, and the stored tries (under v2's packed keys) compared
/// with the nodes it derives: each derived node must be stored with the same bytes, and each
/// table must hold no more rows than were derived. The whole state is read even after a
/// mismatch, since a wrong root is the more telling refusal.
pub fn check_state<R: RawTx>(
    tx: R,
    progress: &dyn crate::Progress,
) -> Result<StateCheck, AdoptError> {
    let typed = TypedTx::new(tx);
    let tx = typed.raw();
    let mut storages_trie = tx.cursor(Tables::StoragesTrie)?;
    let mut derived = (0u64, 0u64);
    let mut first_mismatch: Option<TrieMismatch> = None;
    let root = state_trie_of_hashed_state(&typed, progress, &mut |node| {
        let (table, found, expected, at) = match node {
            TrieNode::Account { path, node } => {
                derived.0 += 1;
                let key = PackedStoredNibbles(path).to_array();
                let found = tx.get(Tables::AccountsTrie, &key)?;
                (
                    Tables::AccountsTrie,
                    found,
                    compress_to_vec(&node),
                    key_hex(&key),
                )
            }
            TrieNode::Storage {
                hashed_address,
                path,
                node,
            } => {
                derived.1 += 1;
                let subkey = PackedStoredNibbles(path).to_array();
                let found = storages_trie
                    .seek_by_key_subkey(hashed_address.as_slice(), &subkey)?
                    .filter(|v| v.starts_with(&subkey))
                    .map(|v| v[subkey.len()..].to_vec());
                let at = format!("{} of account {hashed_address}", key_hex(&subkey));
                (Tables::StoragesTrie, found, compress_to_vec(&node), at)
            }
        };
        if first_mismatch.is_none() {
            let problem = match found {
                None => Some(format!("no node at path {at}, where the state has one")),
                Some(stored) if stored != expected => Some(format!(
                    "the node at path {at} is {} where the state gives {}",
                    short_hex(&stored),
                    short_hex(&expected)
                )),
                Some(_) => None,
            };
            first_mismatch = problem.map(|problem| TrieMismatch { table, problem });
        }
        Ok(())
    })?;
    if first_mismatch.is_none() {
        for (table, derived) in [
            (Tables::AccountsTrie, derived.0),
            (Tables::StoragesTrie, derived.1),
        ] {
            let stored = tx.entries(table)? as u64;
            if stored != derived {
                first_mismatch = Some(TrieMismatch {
                    table,
                    problem: format!(
                        "{stored} rows, where the state derives {derived} (every derived node is \
                         stored; the others are stale)"
                    ),
                });
                break;
            }
        }
    }
    Ok(StateCheck {
        root,
        trie_mismatch: first_mismatch,
    })
}

/// A packed path as the nibbles it holds, for messages.
fn key_hex(packed: &[u8; PackedStoredNibbles::LEN]) -> String {
    match PackedStoredNibbles::from_bytes(packed) {
        Ok(p) if p.0.is_empty() => "(root)".into(),
        Ok(p) => format!(
            "0x{}",
            p.0.iter().map(|n| format!("{n:x}")).collect::<String>()
        ),
        Err(_) => short_hex(packed),
    }
}

/// Each block's changeset rows in MDBX, for `0..=tip`, against the static files' counts. Rows
/// are counted per key (`dup_count`: one call per block and per changed address in MDBX, which
/// keeps each key's count) rather than read one by one. `stop` set (by a copy running beside
/// this check that failed) ends it with [`AdoptError::StoppedBeside`].
pub fn changeset_counts_match<X: RawTx>(
    tx: &TypedTx<X>,
    source: &dyn V2StaticFiles,
    tip: u64,
    stop: &AtomicBool,
    progress: &dyn crate::Progress,
) -> Result<(), AdoptError> {
    progress.begin(
        "changeset rows per block against the static files",
        Some(tip + 1),
    );
    let mut accounts = tx.cursor_dup_read::<tables::AccountChangeSets>()?;
    let mut storage = tx.cursor_dup_read::<tables::StorageChangeSets>()?;
    let mut next_account = accounts.first()?.map(|(block, _)| block);
    let mut next_storage = storage
        .first()?
        .map(|(key, _): (BlockNumberAddress, _)| key.block_number());
    // The rows of `block` from the key under each cursor on, leaving the cursor on the next
    // block's first key.
    let mut account_rows = |block: u64, next: &mut Option<u64>| -> Result<u64, AdoptError> {
        let mut rows = 0;
        while *next == Some(block) {
            rows += accounts.dup_count()?;
            *next = accounts.next_no_dup()?.map(|(b, _)| b);
        }
        Ok(rows)
    };
    let mut storage_rows = |block: u64, next: &mut Option<u64>| -> Result<u64, AdoptError> {
        let mut rows = 0;
        while *next == Some(block) {
            rows += storage.dup_count()?;
            *next = storage.next_no_dup()?.map(|(key, _)| key.block_number());
        }
        Ok(rows)
    };
    for block in 0..=tip {
        if block.is_multiple_of(1_000) && stop.load(Ordering::Relaxed) {
            return Err(AdoptError::StoppedBeside);
        }
        let in_mdbx = (
            account_rows(block, &mut next_account)?,
            storage_rows(block, &mut next_storage)?,
        );
        let in_files =
            source
                .changeset_counts(block)
                .map_err(|source| AdoptError::StaticFiles {
                    what: format!("changeset counts of block {block}"),
                    source,
                })?;
        for (table, mdbx, files) in [
            (Tables::AccountChangeSets, in_mdbx.0, in_files.0),
            (Tables::StorageChangeSets, in_mdbx.1, in_files.1),
        ] {
            if mdbx != files {
                return Err(AdoptError::ChangesetCount {
                    table,
                    block,
                    mdbx,
                    files,
                });
            }
        }
        if block % 10_000 == 9_999 {
            progress.advance(10_000);
        }
    }
    progress.advance((tip + 1) % 10_000);
    progress.end();
    // A row past the head would be a block the static files do not describe.
    if let Some(block) = next_account {
        return Err(AdoptError::ChangesetCount {
            table: Tables::AccountChangeSets,
            block,
            mdbx: account_rows(block, &mut next_account)?,
            files: 0,
        });
    }
    if let Some(block) = next_storage {
        return Err(AdoptError::ChangesetCount {
            table: Tables::StorageChangeSets,
            block,
            mdbx: storage_rows(block, &mut next_storage)?,
            files: 0,
        });
    }
    Ok(())
}
