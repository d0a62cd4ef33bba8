//! A deterministic, realistic reth v1-layout datadir: accounts and contract storage changed by
//! signed-transfer-like transactions, block body indices, tx hashes and senders, per-block
//! changesets, and history shards built with reth's rules (up to 2000 blocks a shard, a full
//! shard keyed by its highest block, the last shard of every key at `u64::MAX`).
//!
//! Everything is derived from `(seed, scale)`: the same pair always gives the same rows. Scale 1
//! is 100 blocks of 8 transactions over ~200 accounts (a few MB); a coinbase account changes in
//! every block, so scale 25 and up gives it a closed history shard.

use alloy_primitives::{Address, B256, U256, keccak256};
use reth_hybrid_api::{
    Database, DatabaseError, DbCursorRW, DbDupCursorRW, DbTx, DbTxMut,
    models::{
        Account, AccountBeforeTx, BlockNumberAddress, Bytecode, IntegerList,
        NUM_OF_INDICES_IN_SHARD, STORAGE_SETTINGS_KEY, ShardedKey, StageCheckpoint, StorageEntry,
        StorageSettings, StorageShardedKey, StoredBlockBodyIndices,
    },
    tables,
};
use std::collections::{BTreeMap, BTreeSet};

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenerateSpec {
    pub scale: u64,
    pub seed: u64,
    /// Transactions per block (8 by default; benchmarks raise it for a tx-hash-heavy datadir).
    pub txs_per_block: u64,
}

impl GenerateSpec {
    pub fn new(scale: u64, seed: u64) -> Self {
        Self {
            scale,
            seed,
            txs_per_block: TXS_PER_BLOCK,
        }
    }
}

/// What was generated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenerateReport {
    pub blocks: u64,
    pub transactions: u64,
    pub accounts: u64,
    pub storage_slots: u64,
    pub account_history_shards: u64,
    pub storage_history_shards: u64,
}

const TXS_PER_BLOCK: u64 = 8;
const SLOTS_PER_CONTRACT: u64 = 64;
/// Blocks written per write transaction, so memory stays bounded at any scale.
const BLOCKS_PER_COMMIT: u64 = 500;
/// The stages a synced reth v1 datadir has checkpoints for.
const STAGES: [&str; 12] = [
    "Era",
    "Headers",
    "Bodies",
    "SenderRecovery",
    "Execution",
    "AccountHashing",
    "StorageHashing",
    "MerkleExecute",
    "TransactionLookup",
    "IndexAccountHistory",
    "IndexStorageHistory",
    "Finish",
];

/// splitmix64: a tiny deterministic generator (the datadir must not change with a crate bump).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn b256(&mut self) -> B256 {
        let mut out = [0u8; 32];
        for chunk in out.chunks_mut(8) {
            chunk.copy_from_slice(&self.next().to_le_bytes());
        }
        B256::from(out)
    }
}

/// Writes the datadir's rows through `db` (any engine or the hybrid).
pub fn generate<DB: Database>(
    db: &DB,
    spec: &GenerateSpec,
) -> Result<GenerateReport, DatabaseError> {
    generate_with_progress(db, spec, &crate::progress::NoProgress)
}

/// [`generate`], reporting blocks written as they commit.
pub fn generate_with_progress<DB: Database>(
    db: &DB,
    spec: &GenerateSpec,
    progress: &dyn crate::progress::Progress,
) -> Result<GenerateReport, DatabaseError> {
    let scale = spec.scale.max(1);
    let mut rng = Rng(spec.seed ^ 0x5eed_0000_0000_0000);
    let blocks = 100 * scale;
    let n_accounts = 200 * scale + 16;
    let n_contracts = 4 + scale / 4;
    let addresses: Vec<Address> = (0..n_accounts)
        .map(|_| Address::from_word(rng.b256()))
        .collect();
    let coinbase = addresses[0];
    let contracts = &addresses[1..=n_contracts as usize];
    let code = Bytecode::new_raw(vec![0x60, 0x00, 0x55, 0x00].into());
    let code_hash = code.hash_slow();

    let mut accounts: BTreeMap<Address, Account> = BTreeMap::new();
    let mut storage: BTreeMap<(Address, B256), U256> = BTreeMap::new();
    let mut account_history: BTreeMap<Address, Vec<u64>> = BTreeMap::new();
    let mut storage_history: BTreeMap<(Address, B256), Vec<u64>> = BTreeMap::new();
    let slots: Vec<B256> = (0..SLOTS_PER_CONTRACT)
        .map(|i| B256::from(U256::from(i)))
        .collect();

    // Genesis (block 0): every account funded; contracts get code. Changesets record that the
    // accounts did not exist before.
    let tx = db.tx_mut()?;
    {
        let mut changes = tx.cursor_dup_write::<tables::AccountChangeSets>()?;
        for (i, a) in addresses.iter().enumerate() {
            let is_contract = (1..=n_contracts as usize).contains(&i);
            let account = Account {
                nonce: 0,
                balance: U256::from(1_000_000_000_000_000_000u128),
                bytecode_hash: is_contract.then_some(code_hash),
            };
            accounts.insert(*a, account);
            account_history.entry(*a).or_default().push(0);
        }
        for a in accounts.keys() {
            changes.append_dup(
                0,
                AccountBeforeTx {
                    address: *a,
                    info: None,
                },
            )?;
        }
    }
    tx.put::<tables::Bytecodes>(code_hash, code)?;
    tx.put::<tables::BlockBodyIndices>(
        0,
        StoredBlockBodyIndices {
            first_tx_num: 0,
            tx_count: 0,
        },
    )?;
    tx.put::<tables::HeaderNumbers>(rng.b256(), 0)?;
    tx.commit()?;

    let mut tx_num = 0u64;
    let mut block = 1;
    progress.begin("generating blocks", Some(blocks));
    while block <= blocks {
        let tx = db.tx_mut()?;
        let last = (block + BLOCKS_PER_COMMIT - 1).min(blocks);
        for b in block..=last {
            let mut account_before: BTreeMap<Address, Account> = BTreeMap::new();
            let mut slot_before: BTreeMap<(Address, B256), U256> = BTreeMap::new();
            let first_tx_num = tx_num;
            for _ in 0..spec.txs_per_block {
                let sender =
                    addresses[(n_contracts + 1 + rng.below(n_accounts - n_contracts - 1)) as usize];
                let to = addresses[rng.below(n_accounts) as usize];
                let value = U256::from(1 + rng.below(1_000_000));
                let fee = U256::from(21_000u64);
                for a in [sender, to, coinbase] {
                    account_before.entry(a).or_insert(accounts[&a]);
                }
                let s = accounts.get_mut(&sender).expect("sender exists");
                s.nonce += 1;
                s.balance -= value + fee;
                accounts.get_mut(&to).expect("receiver exists").balance += value;
                accounts
                    .get_mut(&coinbase)
                    .expect("coinbase exists")
                    .balance += fee;
                if rng.below(4) == 0 {
                    let contract = contracts[rng.below(n_contracts) as usize];
                    let slot = slots[rng.below(SLOTS_PER_CONTRACT) as usize];
                    let prior = storage.get(&(contract, slot)).copied().unwrap_or_default();
                    slot_before.entry((contract, slot)).or_insert(prior);
                    storage.insert((contract, slot), U256::from(rng.next()));
                }
                tx.put::<tables::TransactionHashNumbers>(rng.b256(), tx_num)?;
                tx.append::<tables::TransactionSenders>(tx_num, sender)?;
                tx_num += 1;
            }
            tx.append::<tables::BlockBodyIndices>(
                b,
                StoredBlockBodyIndices {
                    first_tx_num,
                    tx_count: spec.txs_per_block,
                },
            )?;
            tx.append::<tables::TransactionBlocks>(tx_num - 1, b)?;
            tx.put::<tables::HeaderNumbers>(rng.b256(), b)?;
            let mut changes = tx.cursor_dup_write::<tables::AccountChangeSets>()?;
            for (a, before) in &account_before {
                changes.append_dup(
                    b,
                    AccountBeforeTx {
                        address: *a,
                        info: Some(*before),
                    },
                )?;
                account_history.entry(*a).or_default().push(b);
            }
            drop(changes);
            let mut changes = tx.cursor_dup_write::<tables::StorageChangeSets>()?;
            for ((a, slot), before) in &slot_before {
                changes.append_dup(
                    BlockNumberAddress((b, *a)),
                    StorageEntry {
                        key: *slot,
                        value: *before,
                    },
                )?;
                storage_history.entry((*a, *slot)).or_default().push(b);
            }
        }
        tx.commit()?;
        progress.advance(last + 1 - block);
        block = last + 1;
    }
    progress.end();

    // Current state, hashed state, history indices, checkpoints.
    let tx = db.tx_mut()?;
    for (a, account) in &accounts {
        tx.put::<tables::PlainAccountState>(*a, *account)?;
        tx.put::<tables::HashedAccounts>(keccak256(a), *account)?;
    }
    let touched: BTreeSet<Address> = storage.keys().map(|(a, _)| *a).collect();
    for a in &touched {
        let mut plain = tx.cursor_dup_write::<tables::PlainStorageState>()?;
        let mut hashed: Vec<StorageEntry> = Vec::new();
        for ((_, slot), value) in storage.range((*a, B256::ZERO)..=(*a, B256::repeat_byte(0xff))) {
            plain.append_dup(
                *a,
                StorageEntry {
                    key: *slot,
                    value: *value,
                },
            )?;
            hashed.push(StorageEntry {
                key: keccak256(slot),
                value: *value,
            });
        }
        drop(plain);
        hashed.sort_by_key(|e| e.key);
        let mut cursor = tx.cursor_dup_write::<tables::HashedStorages>()?;
        for e in hashed {
            cursor.append_dup(keccak256(a), e)?;
        }
    }
    let mut report = GenerateReport {
        blocks,
        transactions: tx_num,
        accounts: accounts.len() as u64,
        storage_slots: storage.len() as u64,
        ..Default::default()
    };
    {
        let mut cursor = tx.cursor_write::<tables::AccountsHistory>()?;
        for (a, list) in &account_history {
            for (key, shard) in shards(list) {
                cursor.append(ShardedKey::new(*a, key), &shard)?;
                report.account_history_shards += 1;
            }
        }
        let mut cursor = tx.cursor_write::<tables::StoragesHistory>()?;
        for ((a, slot), list) in &storage_history {
            for (key, shard) in shards(list) {
                cursor.append(StorageShardedKey::new(*a, *slot, key), &shard)?;
                report.storage_history_shards += 1;
            }
        }
    }
    for stage in STAGES {
        tx.put::<tables::StageCheckpoints>(
            stage.to_string(),
            StageCheckpoint {
                block_number: blocks,
                stage_checkpoint: None,
            },
        )?;
    }
    tx.put::<tables::Metadata>(
        STORAGE_SETTINGS_KEY.to_string(),
        StorageSettings { storage_v2: false }.to_json_bytes(),
    )?;
    tx.commit()?;
    Ok(report)
}

/// reth's shard rule: full chunks of 2000 keyed by their highest block, the rest at `u64::MAX`.
fn shards(blocks: &[u64]) -> Vec<(u64, IntegerList)> {
    let chunks: Vec<&[u64]> = blocks.chunks(NUM_OF_INDICES_IN_SHARD).collect();
    chunks
        .iter()
        .enumerate()
        .map(|(i, chunk)| {
            let last = i + 1 == chunks.len();
            let key = if last {
                u64::MAX
            } else {
                *chunk.last().expect("chunks are non-empty")
            };
            (
                key,
                IntegerList::new(chunk.iter().copied()).expect("blocks ascend"),
            )
        })
        .collect()
}
