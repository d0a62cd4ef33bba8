//! Block persistence in reth's write pattern, on any [`Database`] (MDBX alone or the hybrid), so
//! both layouts take the same blocks and their throughput and bytes written compare.
//!
//! Per block, what reth's persistence writes for it (`save_blocks`): a tx-hash row per
//! transaction at a random key (`TransactionHashNumbers`), senders, tx blocks, body indices and a
//! header number appended, account and storage changesets, the new plain state. Per commit, the
//! history indices of the batch (`update_history_indices`): each touched account's or slot's last
//! shard (`u64::MAX`) is read, removed and written back with the new block numbers, split at 2000.
//! reth commits every 3 blocks in the steady state (it persists when more than 7 blocks are in
//! memory, down to 5: `DEFAULT_PERSISTENCE_THRESHOLD`, `DEFAULT_MEMORY_BLOCK_BUFFER_TARGET`).

use crate::{KeyGen, scale::shards};
use reth_hybrid_api::{
    DatabaseError, DbCursorRO, DbCursorRW, DbDupCursorRO, DbDupCursorRW, DbTx, DbTxMut,
    models::{
        AccountBeforeTx, Address, B256, BlockNumberAddress, ShardedKey, StorageEntry,
        StorageShardedKey, StoredBlockBodyIndices, U256,
    },
    tables,
    typed::Database,
};
use std::{
    collections::{BTreeMap, BTreeSet},
    time::Instant,
};

/// reth's steady-state persistence batch (see the module docs).
pub const RETH_BLOCKS_PER_COMMIT: u64 = 3;

/// What to persist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersistSpec {
    pub blocks: u64,
    pub txs_per_block: u64,
    pub blocks_per_commit: u64,
    /// Every transaction sets one storage slot in `1 / slot_every` of the cases.
    pub slot_every: u64,
    pub seed: u64,
}

impl PersistSpec {
    /// `blocks` mainnet-like blocks (~200 transactions) committed as reth does.
    pub fn new(blocks: u64, seed: u64) -> Self {
        Self {
            blocks,
            txs_per_block: 200,
            blocks_per_commit: RETH_BLOCKS_PER_COMMIT,
            slot_every: 4,
            seed,
        }
    }
}

/// What a run did and cost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PersistReport {
    pub blocks: u64,
    pub transactions: u64,
    pub commits: u64,
    pub seconds: f64,
    /// Bytes this process sent towards the disk while it ran (`/proc/self/io` write_bytes: pages
    /// dirtied through `write` and through MDBX's memory map alike); `None` where unavailable.
    pub bytes_written: Option<u64>,
}

impl PersistReport {
    pub fn blocks_per_second(&self) -> f64 {
        self.blocks as f64 / self.seconds.max(f64::EPSILON)
    }
}

/// Where the chain ends and whom its blocks may touch, read from the datadir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainTip {
    pub next_block: u64,
    pub next_tx: u64,
    pub accounts: Vec<Address>,
    /// Contract slots that already have history (`StoragesHistory` keys).
    pub slots: Vec<(Address, B256)>,
}

/// Reads the tip (last body indices) and the accounts and slots with history.
pub fn chain_tip<D: Database>(db: &D) -> Result<ChainTip, DatabaseError> {
    let tx = db.tx()?;
    let (next_block, next_tx) = match tx.cursor_read::<tables::BlockBodyIndices>()?.last()? {
        Some((n, b)) => (n + 1, b.first_tx_num + b.tx_count),
        None => (0, 0),
    };
    let mut accounts = Vec::new();
    let mut c = tx.cursor_read::<tables::PlainAccountState>()?;
    let mut next = c.first()?;
    while let Some((a, _)) = next {
        accounts.push(a);
        next = c.next()?;
    }
    let mut slots = Vec::new();
    let mut c = tx.cursor_read::<tables::StoragesHistory>()?;
    let mut next = c.first()?;
    while let Some((k, _)) = next {
        if k.sharded_key.highest_block_number == u64::MAX {
            slots.push((k.address, k.sharded_key.key));
        }
        next = c.next()?;
    }
    Ok(ChainTip {
        next_block,
        next_tx,
        accounts,
        slots,
    })
}

/// Persists `spec.blocks` new blocks on top of `tip`, committing every `blocks_per_commit`.
/// The same `(tip, spec)` writes the same rows on any database.
pub fn persist_blocks<D: Database>(
    db: &D,
    tip: &ChainTip,
    spec: &PersistSpec,
) -> Result<PersistReport, DatabaseError> {
    if tip.accounts.len() < 2 {
        return Err(DatabaseError::Other(
            "persisting blocks needs a datadir with at least two accounts".into(),
        ));
    }
    let mut rng = KeyGen::new(spec.seed);
    let mut below = move |n: usize| (rng.next_u64() % n as u64) as usize;
    let mut hashes = KeyGen::new(spec.seed ^ 0x7a11);
    let written_before = process_write_bytes();
    let started = Instant::now();
    let mut report = PersistReport::default();
    let (mut block, mut tx_num) = (tip.next_block, tip.next_tx);
    let end = tip.next_block + spec.blocks;
    while block < end {
        let last = (block + spec.blocks_per_commit.max(1)).min(end);
        let tx = db.tx_mut()?;
        let mut account_blocks: BTreeMap<Address, Vec<u64>> = BTreeMap::new();
        let mut slot_blocks: BTreeMap<(Address, B256), Vec<u64>> = BTreeMap::new();
        for b in block..last {
            let first_tx = tx_num;
            let mut touched: BTreeSet<Address> = BTreeSet::new();
            let mut slots: BTreeMap<(Address, B256), U256> = BTreeMap::new();
            for _ in 0..spec.txs_per_block {
                let sender = tip.accounts[below(tip.accounts.len())];
                let receiver = tip.accounts[below(tip.accounts.len())];
                touched.insert(sender);
                touched.insert(receiver);
                if !tip.slots.is_empty() && below(spec.slot_every.max(1) as usize) == 0 {
                    let slot = tip.slots[below(tip.slots.len())];
                    slots.insert(slot, U256::from(b));
                }
                tx.put::<tables::TransactionHashNumbers>(B256::from(hashes.bytes::<32>()), tx_num)?;
                tx.append::<tables::TransactionSenders>(tx_num, sender)?;
                tx_num += 1;
            }
            tx.append::<tables::BlockBodyIndices>(
                b,
                StoredBlockBodyIndices {
                    first_tx_num: first_tx,
                    tx_count: spec.txs_per_block,
                },
            )?;
            if spec.txs_per_block > 0 {
                tx.append::<tables::TransactionBlocks>(tx_num - 1, b)?;
            }
            tx.put::<tables::HeaderNumbers>(B256::from(hashes.bytes::<32>()), b)?;

            let mut changes = tx.cursor_dup_write::<tables::AccountChangeSets>()?;
            for address in &touched {
                let before = tx.get::<tables::PlainAccountState>(*address)?;
                changes.append_dup(
                    b,
                    AccountBeforeTx {
                        address: *address,
                        info: before,
                    },
                )?;
                let mut after = before.unwrap_or_default();
                after.nonce += 1;
                after.balance = after.balance.saturating_add(U256::from(b));
                tx.put::<tables::PlainAccountState>(*address, after)?;
                account_blocks.entry(*address).or_default().push(b);
            }
            drop(changes);
            let mut changes = tx.cursor_dup_write::<tables::StorageChangeSets>()?;
            let mut plain = tx.cursor_dup_write::<tables::PlainStorageState>()?;
            for ((address, slot), value) in &slots {
                let before = match plain.seek_by_key_subkey(*address, *slot)? {
                    Some(entry) if entry.key == *slot => {
                        plain.delete_current()?;
                        entry.value
                    }
                    _ => U256::ZERO,
                };
                changes.append_dup(
                    BlockNumberAddress((b, *address)),
                    StorageEntry {
                        key: *slot,
                        value: before,
                    },
                )?;
                plain.upsert(
                    *address,
                    &StorageEntry {
                        key: *slot,
                        value: *value,
                    },
                )?;
                slot_blocks.entry((*address, *slot)).or_default().push(b);
            }
            report.transactions += spec.txs_per_block;
        }
        append_account_history(&tx, &account_blocks)?;
        append_storage_history(&tx, &slot_blocks)?;
        tx.commit()?;
        report.commits += 1;
        report.blocks += last - block;
        block = last;
    }
    report.seconds = started.elapsed().as_secs_f64();
    report.bytes_written = written_before
        .zip(process_write_bytes())
        .map(|(before, after)| after.saturating_sub(before));
    Ok(report)
}

/// reth's `append_history_index` for accounts: the last shard is taken out, extended, re-split.
fn append_account_history<TX: DbTxMut + DbTx>(
    tx: &TX,
    blocks: &BTreeMap<Address, Vec<u64>>,
) -> Result<(), DatabaseError> {
    let mut cursor = tx.cursor_write::<tables::AccountsHistory>()?;
    for (address, new) in blocks {
        let mut list = match cursor.seek_exact(ShardedKey::last(*address))? {
            Some((_, shard)) => {
                cursor.delete_current()?;
                shard.iter().collect()
            }
            None => Vec::new(),
        };
        list.extend_from_slice(new);
        for (highest, shard) in shards(&list) {
            cursor.upsert(ShardedKey::new(*address, highest), &shard)?;
        }
    }
    Ok(())
}

/// [`append_account_history`] for storage slots.
fn append_storage_history<TX: DbTxMut + DbTx>(
    tx: &TX,
    blocks: &BTreeMap<(Address, B256), Vec<u64>>,
) -> Result<(), DatabaseError> {
    let mut cursor = tx.cursor_write::<tables::StoragesHistory>()?;
    for ((address, slot), new) in blocks {
        let mut list = match cursor.seek_exact(StorageShardedKey::last(*address, *slot))? {
            Some((_, shard)) => {
                cursor.delete_current()?;
                shard.iter().collect()
            }
            None => Vec::new(),
        };
        list.extend_from_slice(new);
        for (highest, shard) in shards(&list) {
            cursor.upsert(StorageShardedKey::new(*address, *slot, highest), &shard)?;
        }
    }
    Ok(())
}

/// This process's `write_bytes` from `/proc/self/io`, where the kernel keeps it.
pub fn process_write_bytes() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|line| line.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reth_hybrid_api::models::NUM_OF_INDICES_IN_SHARD;

    #[test]
    fn shards_split_at_the_limit_and_key_the_last_at_max() {
        let blocks: Vec<u64> = (1..=2 * NUM_OF_INDICES_IN_SHARD as u64 + 5).collect();
        let got = shards(&blocks);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].0, NUM_OF_INDICES_IN_SHARD as u64);
        assert_eq!(got[1].0, 2 * NUM_OF_INDICES_IN_SHARD as u64);
        assert_eq!(got[2].0, u64::MAX);
        assert_eq!(got[2].1.len(), 5);
    }
}
