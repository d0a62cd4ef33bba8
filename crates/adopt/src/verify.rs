//! What adoption checks with reth's own data before it switches a datadir to v1:
//! - the state root of the head, recomputed from the hashed state (which the plain state then
//!   mirrors row for row), against the root the head's header commits to: a datadir reth would
//!   unwind, or whose state does not match its chain, is refused before anything is written;
//! - the changeset rows of every block in MDBX against the counts the static files' offsets
//!   record for it (an index reth keeps beside the rows, so a row lost in the copy shows).

use crate::{error::AdoptError, static_files::V2StaticFiles};
use alloy_primitives::{B256, U256};
use alloy_trie::{EMPTY_ROOT_HASH, HashBuilder, KECCAK_EMPTY, Nibbles, TrieAccount};
use reth_hybrid_api::{
    DbCursorRO, DbTx, Tables,
    models::{Account, BlockNumberAddress},
    tables,
};

/// The root of the state trie over `HashedAccounts` and `HashedStorages`, computed from the rows
/// alone (no stored trie node is trusted), streaming: memory stays at one path of the trie.
pub fn state_root_of_hashed_state<T: DbTx>(
    tx: &T,
    progress: &dyn crate::Progress,
) -> Result<B256, AdoptError> {
    progress.begin(
        "state root recomputed from the hashed state",
        Some(tx.entries::<tables::HashedAccounts>()? as u64),
    );
    let mut accounts = tx.cursor_read::<tables::HashedAccounts>()?;
    let mut slots = tx.cursor_read::<tables::HashedStorages>()?;
    let mut next_slot = slots.first()?;
    let mut builder = HashBuilder::default();
    let mut leaf = Vec::with_capacity(128);
    let mut done = 0u64;
    for row in accounts.walk(None)? {
        let (hashed_address, account) = row?;
        let mut storage = HashBuilder::default();
        let mut any = false;
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
            }
            next_slot = slots.next()?;
        }
        let storage_root = if any { storage.root() } else { EMPTY_ROOT_HASH };
        leaf.clear();
        alloy_rlp::Encodable::encode(&trie_account(account, storage_root), &mut leaf);
        builder.add_leaf(Nibbles::unpack(hashed_address), &leaf);
        done += 1;
        if done.is_multiple_of(100_000) {
            progress.advance(100_000);
        }
    }
    progress.advance(done % 100_000);
    progress.end();
    Ok(builder.root())
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

/// Each block's changeset rows in MDBX, for `0..=tip`, against the static files' counts.
pub fn changeset_counts_match<T: DbTx>(
    tx: &T,
    source: &dyn V2StaticFiles,
    tip: u64,
    progress: &dyn crate::Progress,
) -> Result<(), AdoptError> {
    progress.begin(
        "changeset rows per block against the static files",
        Some(tip + 1),
    );
    let mut accounts = tx.cursor_read::<tables::AccountChangeSets>()?;
    let mut storage = tx.cursor_read::<tables::StorageChangeSets>()?;
    let mut next_account = accounts.first()?.map(|(block, _)| block);
    let mut next_storage = storage
        .first()?
        .map(|(key, _): (BlockNumberAddress, _)| key.block_number());
    for block in 0..=tip {
        let mut in_mdbx = (0u64, 0u64);
        while next_account == Some(block) {
            in_mdbx.0 += 1;
            next_account = accounts.next()?.map(|(b, _)| b);
        }
        while next_storage == Some(block) {
            in_mdbx.1 += 1;
            next_storage = storage.next()?.map(|(key, _)| key.block_number());
        }
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
        let mut mdbx = 0;
        while next_account == Some(block) {
            mdbx += 1;
            next_account = accounts.next()?.map(|(b, _)| b);
        }
        return Err(AdoptError::ChangesetCount {
            table: Tables::AccountChangeSets,
            block,
            mdbx,
            files: 0,
        });
    }
    if let Some(block) = next_storage {
        let mut mdbx = 0;
        while next_storage == Some(block) {
            mdbx += 1;
            next_storage = storage.next()?.map(|(key, _)| key.block_number());
        }
        return Err(AdoptError::ChangesetCount {
            table: Tables::StorageChangeSets,
            block,
            mdbx,
            files: 0,
        });
    }
    Ok(())
}
