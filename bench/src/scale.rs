//! A datadir at a real node's scale for `make bench-scale`, and the lookups reth makes on it.
//!
//! The generator writes in key order (sorted in memory, then appended), as reth's pipeline
//! stages do through their ETL collectors: random inserts would rewrite most of a 10 GB B-tree
//! at every commit. Per `transactions` it writes: the tx-hash index (random hashes), body
//! indices (200 transactions a block), `transactions / 20` accounts with their plain state,
//! changesets and history shards (a few accounts with thousands of changes, so several shards),
//! and a quarter as many contract slots with theirs. Every before-value encodes how many changes
//! came before it (nonce or slot value `j` before change `j`), so a historical lookup's answer
//! can be checked by counting changesets.

use crate::KeyGen;
use reth_hybrid_api::{
    DatabaseError, DbCursorRO, DbCursorRW, DbDupCursorRO, DbDupCursorRW, DbTx, DbTxMut,
    models::{
        Account, AccountBeforeTx, Address, B256, BlockNumberAddress, IntegerList,
        NUM_OF_INDICES_IN_SHARD, STORAGE_SETTINGS_KEY, ShardedKey, StageCheckpoint, StorageEntry,
        StorageSettings, StorageShardedKey, StoredBlockBodyIndices, U256,
    },
    tables,
    typed::Database,
};

/// Transactions per generated block (a mainnet block's order of magnitude).
pub const TXS_PER_BLOCK: u64 = 200;
/// Rows appended per write transaction.
const ROWS_PER_COMMIT: usize = 4_000_000;
/// One account in this many has thousands of changes (several history shards).
const HOT_EVERY: usize = 5_000;

/// How big a datadir to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleSpec {
    pub transactions: u64,
    pub seed: u64,
}

impl ScaleSpec {
    pub fn blocks(&self) -> u64 {
        self.transactions.div_ceil(TXS_PER_BLOCK).max(1)
    }

    pub fn accounts(&self) -> usize {
        (self.transactions / 20).max(1_000) as usize
    }

    /// Contracts: one account in 100; each has 25 slots with history.
    pub fn contracts(&self) -> usize {
        (self.accounts() / 100).max(4)
    }
}

/// What was generated, and the keys the lookups draw from.
#[derive(Debug, Clone, Default)]
pub struct ScaleDatadir {
    pub transactions: u64,
    pub blocks: u64,
    pub account_changes: u64,
    pub storage_changes: u64,
    pub account_shards: u64,
    pub storage_shards: u64,
    pub addresses: Vec<Address>,
    pub slots: Vec<(Address, B256)>,
    /// Up to `hit_samples` stored tx hashes (random positions) with their tx numbers.
    pub hits: Vec<(B256, u64)>,
}

/// Writes the datadir through `db` (an empty MDBX datadir: the stock layout).
pub fn generate_scale<D: Database>(
    db: &D,
    spec: &ScaleSpec,
    hit_samples: usize,
) -> Result<ScaleDatadir, DatabaseError> {
    let mut out = ScaleDatadir {
        transactions: spec.transactions,
        blocks: spec.blocks(),
        ..Default::default()
    };
    write_tx_hashes(db, spec, hit_samples, &mut out)?;
    write_blocks(db, spec)?;
    write_accounts(db, spec, &mut out)?;
    write_storage(db, spec, &mut out)?;
    let tx = db.tx_mut()?;
    for stage in [
        "Headers",
        "Bodies",
        "Execution",
        "TransactionLookup",
        "Finish",
    ] {
        tx.put::<tables::StageCheckpoints>(
            stage.to_string(),
            StageCheckpoint {
                block_number: out.blocks,
                stage_checkpoint: None,
            },
        )?;
    }
    tx.put::<tables::Metadata>(
        STORAGE_SETTINGS_KEY.to_string(),
        StorageSettings { storage_v2: false }.to_json_bytes(),
    )?;
    tx.commit()?;
    Ok(out)
}

fn write_tx_hashes<D: Database>(
    db: &D,
    spec: &ScaleSpec,
    hit_samples: usize,
    out: &mut ScaleDatadir,
) -> Result<(), DatabaseError> {
    let mut gen_hash = KeyGen::new(spec.seed ^ 0x4a5b);
    let mut rows: Vec<([u8; 32], u64)> = (0..spec.transactions)
        .map(|n| (gen_hash.bytes::<32>(), n))
        .collect();
    rows.sort_unstable_by_key(|r| r.0);
    rows.dedup_by(|a, b| a.0 == b.0);
    let mut pick = KeyGen::new(spec.seed ^ 0x5a);
    out.hits = (0..hit_samples.min(rows.len()))
        .map(|_| {
            let (hash, n) = rows[(pick.next_u64() % rows.len() as u64) as usize];
            (B256::from(hash), n)
        })
        .collect();
    for chunk in rows.chunks(ROWS_PER_COMMIT) {
        let tx = db.tx_mut()?;
        let mut cursor = tx.cursor_write::<tables::TransactionHashNumbers>()?;
        for (hash, n) in chunk {
            cursor.append(B256::from(*hash), n)?;
        }
        drop(cursor);
        tx.commit()?;
    }
    Ok(())
}

fn write_blocks<D: Database>(db: &D, spec: &ScaleSpec) -> Result<(), DatabaseError> {
    let tx = db.tx_mut()?;
    let mut cursor = tx.cursor_write::<tables::BlockBodyIndices>()?;
    cursor.append(0, &StoredBlockBodyIndices::default())?;
    for b in 1..=spec.blocks() {
        let first = (b - 1) * TXS_PER_BLOCK;
        cursor.append(
            b,
            &StoredBlockBodyIndices {
                first_tx_num: first,
                tx_count: TXS_PER_BLOCK.min(spec.transactions - first),
            },
        )?;
    }
    drop(cursor);
    tx.commit()
}

/// `count` distinct blocks in `1..=blocks`, ascending.
fn change_blocks(rng: &mut KeyGen, blocks: u64, count: usize) -> Vec<u64> {
    let count = count.min(blocks as usize);
    let mut set = std::collections::BTreeSet::new();
    while set.len() < count {
        set.insert(1 + rng.next_u64() % blocks);
    }
    set.into_iter().collect()
}

fn sorted_addresses(rng: &mut KeyGen, n: usize) -> Vec<Address> {
    let mut a: Vec<Address> = (0..n).map(|_| Address::from(rng.bytes::<20>())).collect();
    a.sort_unstable();
    a.dedup();
    a
}

fn account(nonce: u64) -> Account {
    Account {
        nonce,
        balance: U256::from(nonce),
        bytecode_hash: None,
    }
}

fn write_accounts<D: Database>(
    db: &D,
    spec: &ScaleSpec,
    out: &mut ScaleDatadir,
) -> Result<(), DatabaseError> {
    let mut rng = KeyGen::new(spec.seed ^ 0xacc);
    let addresses = sorted_addresses(&mut rng, spec.accounts());
    let blocks = spec.blocks();
    // (block, account index): sorting it gives AccountChangeSets' order, as addresses ascend.
    let mut changes: Vec<(u64, u32, u32)> = Vec::new();
    for (chunk_index, chunk) in addresses.chunks(ROWS_PER_COMMIT / 4).enumerate() {
        let tx = db.tx_mut()?;
        let mut plain = tx.cursor_write::<tables::PlainAccountState>()?;
        let mut history = tx.cursor_write::<tables::AccountsHistory>()?;
        for (offset, address) in chunk.iter().enumerate() {
            let i = chunk_index * (ROWS_PER_COMMIT / 4) + offset;
            let count = if i.is_multiple_of(HOT_EVERY) {
                3_000 + (rng.next_u64() % 6_000) as usize
            } else {
                1 + (rng.next_u64() % 8) as usize
            };
            let list = change_blocks(&mut rng, blocks, count);
            for (j, b) in list.iter().enumerate() {
                changes.push((*b, i as u32, j as u32));
            }
            plain.append(*address, &account(list.len() as u64))?;
            for (highest, shard) in shards(&list) {
                history.append(ShardedKey::new(*address, highest), &shard)?;
                out.account_shards += 1;
            }
        }
        drop((plain, history));
        tx.commit()?;
    }
    changes.sort_unstable();
    out.account_changes = changes.len() as u64;
    for chunk in changes.chunks(ROWS_PER_COMMIT) {
        let tx = db.tx_mut()?;
        let mut cursor = tx.cursor_dup_write::<tables::AccountChangeSets>()?;
        for (b, i, j) in chunk {
            cursor.append_dup(
                *b,
                AccountBeforeTx {
                    address: addresses[*i as usize],
                    info: Some(account(u64::from(*j))),
                },
            )?;
        }
        drop(cursor);
        tx.commit()?;
    }
    out.addresses = addresses;
    Ok(())
}

fn write_storage<D: Database>(
    db: &D,
    spec: &ScaleSpec,
    out: &mut ScaleDatadir,
) -> Result<(), DatabaseError> {
    let mut rng = KeyGen::new(spec.seed ^ 0x5707);
    let contracts = sorted_addresses(&mut rng, spec.contracts());
    let blocks = spec.blocks();
    // (block, contract index, slot, changes before): StorageChangeSets' order once sorted.
    let mut changes: Vec<(u64, u32, [u8; 32], u32)> = Vec::new();
    for (chunk_index, chunk) in contracts.chunks(ROWS_PER_COMMIT / 100).enumerate() {
        let tx = db.tx_mut()?;
        let mut plain = tx.cursor_dup_write::<tables::PlainStorageState>()?;
        let mut history = tx.cursor_write::<tables::StoragesHistory>()?;
        for (offset, contract) in chunk.iter().enumerate() {
            let c = chunk_index * (ROWS_PER_COMMIT / 100) + offset;
            let mut slots: Vec<[u8; 32]> = (0..25).map(|_| rng.bytes::<32>()).collect();
            slots.sort_unstable();
            slots.dedup();
            for slot in slots {
                let count = 1 + (rng.next_u64() % 6) as usize;
                let list = change_blocks(&mut rng, blocks, count);
                for (j, b) in list.iter().enumerate() {
                    changes.push((*b, c as u32, slot, j as u32));
                }
                let key = B256::from(slot);
                plain.append_dup(
                    *contract,
                    StorageEntry {
                        key,
                        value: U256::from(list.len()),
                    },
                )?;
                for (highest, shard) in shards(&list) {
                    history.append(StorageShardedKey::new(*contract, key, highest), &shard)?;
                    out.storage_shards += 1;
                }
                out.slots.push((*contract, key));
            }
        }
        drop((plain, history));
        tx.commit()?;
    }
    changes.sort_unstable();
    out.storage_changes = changes.len() as u64;
    for chunk in changes.chunks(ROWS_PER_COMMIT) {
        let tx = db.tx_mut()?;
        let mut cursor = tx.cursor_dup_write::<tables::StorageChangeSets>()?;
        for (b, c, slot, j) in chunk {
            cursor.append_dup(
                BlockNumberAddress((*b, contracts[*c as usize])),
                StorageEntry {
                    key: B256::from(*slot),
                    value: U256::from(*j),
                },
            )?;
        }
        drop(cursor);
        tx.commit()?;
    }
    Ok(())
}

/// reth's shard rule: full chunks of 2000 keyed by their highest block, the rest at `u64::MAX`.
pub(crate) fn shards(blocks: &[u64]) -> Vec<(u64, IntegerList)> {
    let count = blocks.chunks(NUM_OF_INDICES_IN_SHARD).count();
    blocks
        .chunks(NUM_OF_INDICES_IN_SHARD)
        .enumerate()
        .map(|(i, chunk)| {
            let highest = if i + 1 == count {
                u64::MAX
            } else {
                chunk[chunk.len() - 1]
            };
            (highest, IntegerList::new_pre_sorted(chunk.iter().copied()))
        })
        .collect()
}

/// reth's `history_info`: in the shard that may hold `block`, the first change at or after it.
/// `None`: no change after `block`, the value is in the plain state.
fn first_change_at_or_after(shard: &IntegerList, block: u64) -> Option<u64> {
    let mut rank = shard.rank(block);
    if rank
        .checked_sub(1)
        .and_then(|r| shard.select(r))
        .is_some_and(|b| b == block)
    {
        rank -= 1;
    }
    shard.select(rank)
}

/// An account's nonce at the start of `block`, read as reth's historical state provider reads
/// it: seek the history shard, rank in it, then the changeset (or the plain state).
pub fn account_nonce_at<TX: DbTx>(
    tx: &TX,
    address: Address,
    block: u64,
) -> Result<Option<u64>, DatabaseError> {
    let mut history = tx.cursor_read::<tables::AccountsHistory>()?;
    let found = match history.seek(ShardedKey::new(address, block))? {
        Some((key, shard)) if key.key == address => first_change_at_or_after(&shard, block),
        _ => None,
    };
    let account = match found {
        Some(changed_at) => tx
            .cursor_dup_read::<tables::AccountChangeSets>()?
            .seek_by_key_subkey(changed_at, address)?
            .filter(|change| change.address == address)
            .and_then(|change| change.info),
        None => tx.get::<tables::PlainAccountState>(address)?,
    };
    Ok(account.map(|a| a.nonce))
}

/// A slot's value at the start of `block`, as [`account_nonce_at`] reads it.
pub fn slot_value_at<TX: DbTx>(
    tx: &TX,
    address: Address,
    slot: B256,
    block: u64,
) -> Result<Option<U256>, DatabaseError> {
    let mut history = tx.cursor_read::<tables::StoragesHistory>()?;
    let found = match history.seek(StorageShardedKey::new(address, slot, block))? {
        Some((key, shard)) if key.address == address && key.sharded_key.key == slot => {
            first_change_at_or_after(&shard, block)
        }
        _ => None,
    };
    let entry = match found {
        Some(changed_at) => tx
            .cursor_dup_read::<tables::StorageChangeSets>()?
            .seek_by_key_subkey(BlockNumberAddress((changed_at, address)), slot)?,
        None => tx
            .cursor_dup_read::<tables::PlainStorageState>()?
            .seek_by_key_subkey(address, slot)?,
    };
    Ok(entry.filter(|e| e.key == slot).map(|e| e.value))
}

/// Latencies of one kind of lookup.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Latency {
    pub ops: usize,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub ops_per_second: f64,
}

impl Latency {
    /// From per-operation nanoseconds (`total` the whole loop's seconds).
    pub fn from_samples(mut ns: Vec<u64>, total_seconds: f64) -> Self {
        if ns.is_empty() {
            return Self::default();
        }
        ns.sort_unstable();
        let at = |q: f64| ns[((ns.len() as f64 * q).ceil() as usize).clamp(1, ns.len()) - 1] as f64;
        Self {
            ops: ns.len(),
            p50_ns: at(0.50),
            p99_ns: at(0.99),
            ops_per_second: ns.len() as f64 / total_seconds.max(f64::EPSILON),
        }
    }
}

/// Times `f` once per key; returns the latencies and what each call answered.
pub fn time_each<K, A>(
    keys: &[K],
    mut f: impl FnMut(&K) -> Result<A, DatabaseError>,
) -> Result<(Latency, Vec<A>), DatabaseError> {
    let mut ns = Vec::with_capacity(keys.len());
    let mut answers = Vec::with_capacity(keys.len());
    let started = std::time::Instant::now();
    for key in keys {
        let t = std::time::Instant::now();
        answers.push(f(key)?);
        ns.push(t.elapsed().as_nanos() as u64);
    }
    Ok((
        Latency::from_samples(ns, started.elapsed().as_secs_f64()),
        answers,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_change_is_the_first_block_at_or_after() {
        let shard = IntegerList::new([5, 9, 20]).expect("sorted");
        assert_eq!(first_change_at_or_after(&shard, 1), Some(5));
        assert_eq!(first_change_at_or_after(&shard, 5), Some(5));
        assert_eq!(first_change_at_or_after(&shard, 6), Some(9));
        assert_eq!(first_change_at_or_after(&shard, 20), Some(20));
        assert_eq!(first_change_at_or_after(&shard, 21), None);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let l = Latency::from_samples((1..=100).collect(), 1.0);
        assert_eq!((l.p50_ns, l.p99_ns, l.ops), (50.0, 99.0, 100));
    }
}
