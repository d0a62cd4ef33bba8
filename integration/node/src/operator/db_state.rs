//! `db account-storage`, `db state` and `db drop` on a hybrid datadir. The first two read plain
//! state (MDBX) and, for a past block, reth's history provider, which looks the block up in the
//! history shards wherever the hybrid keeps them (RocksDB by default): the same answers as on a
//! stock datadir. `drop` removes the hybrid's RocksDB with the rest.

use super::env::HybridFactory;
use alloy_primitives::{Address, B256, BlockNumber, U256, keccak256};
use human_bytes::human_bytes;
use reth_codecs::Compact;
use reth_db_api::{
    cursor::{DbCursorRO, DbDupCursorRO},
    database::Database,
    models::BlockNumberAddress,
    tables,
    transaction::DbTx,
};
use reth_primitives_traits::Account;
use reth_provider::{BlockNumReader, StateProvider};
use std::{
    collections::BTreeSet,
    io::Write,
    path::Path,
    time::{Duration, Instant},
};
use tracing::info;

const LOG_INTERVAL: Duration = Duration::from_secs(30);

#[derive(Debug, clap::Args)]
pub struct AccountStorageArgs {
    /// The account whose storage is counted.
    address: Address,
}

#[derive(Debug, clap::Args)]
pub struct StateArgs {
    /// The account to show.
    address: Address,
    /// The block to read the state at (default: the latest state).
    #[arg(long, short)]
    block: Option<BlockNumber>,
    /// The most storage slots to show.
    #[arg(long, short, default_value = "100")]
    limit: usize,
    /// Output format.
    #[arg(long, short, default_value = "table")]
    format: OutputFormat,
}

#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum OutputFormat {
    #[default]
    Table,
    Json,
    Csv,
}

/// reth's `db account-storage` in the v1 layout: slot count and estimated sizes.
pub fn account_storage(args: AccountStorageArgs, factory: &HybridFactory) -> eyre::Result<()> {
    let address = args.address;
    let (slots, size) = factory.db_ref().view(|tx| {
        let mut cursor = tx.cursor_dup_read::<tables::PlainStorageState>()?;
        let (mut count, mut value_bytes, mut last_log) = (0usize, 0usize, Instant::now());
        for entry in cursor.walk_dup(Some(address), None)? {
            let (_, entry) = entry?;
            count += 1;
            // A dupsort row: the 32-byte slot, then the compact value.
            value_bytes += entry.to_compact(&mut Vec::new());
            if last_log.elapsed() >= LOG_INTERVAL {
                info!(target: "reth::cli", address = %address, slots = count, key = %entry.key, "Processing storage slots");
                last_log = Instant::now();
            }
        }
        // The address is stored once per account.
        let size = if count > 0 { 20 + value_bytes } else { 0 };
        Ok::<_, eyre::Report>((count, size))
    })??;
    let hashed_size = if slots > 0 { size + 12 } else { 0 };
    println!("Account: {address}");
    println!("Hashed address: {}", keccak256(address));
    println!("Storage slots: {slots}");
    println!(
        "Plain storage size: {} (estimated)",
        human_bytes(size as f64)
    );
    println!(
        "Hashed storage size: {} (estimated)",
        human_bytes(hashed_size as f64)
    );
    println!(
        "Total estimated size: {}",
        human_bytes((size + hashed_size) as f64)
    );
    Ok(())
}

/// reth's `db state`: an account and its non-zero storage, now or at a past block.
pub fn state(args: StateArgs, factory: &HybridFactory) -> eyre::Result<()> {
    let (address, limit) = (args.address, args.limit);
    let (account, storage) = match args.block {
        None => factory.db_ref().view(|tx| {
            let account = tx.get::<tables::PlainAccountState>(address)?;
            let mut cursor = tx.cursor_dup_read::<tables::PlainStorageState>()?;
            let mut storage = Vec::new();
            for entry in cursor.walk_dup(Some(address), None)? {
                let (_, entry) = entry?;
                if entry.value != U256::ZERO {
                    storage.push((entry.key, entry.value));
                }
                if storage.len() >= limit {
                    break;
                }
            }
            Ok::<_, eyre::Report>((account, storage))
        })??,
        Some(block) => {
            let provider = factory.history_by_block_number(block)?;
            let account = provider.basic_account(&address)?;
            // The slots the account ever changed, from the storage changesets (as reth's v1
            // path: the range from (0, address) to (tip, address)).
            let keys = changed_slots(factory, address)?;
            info!(target: "reth::cli", address = %address, block, total_keys = keys.len(), "Found storage keys to query");
            let mut storage = Vec::new();
            for key in keys {
                if let Some(value) = provider.storage(address, key)?
                    && value != U256::ZERO
                {
                    storage.push((key, value));
                }
                if storage.len() >= limit {
                    break;
                }
            }
            (account, storage)
        }
    };
    print_state(args.format, address, args.block, account, &storage);
    Ok(())
}

fn changed_slots(factory: &HybridFactory, address: Address) -> eyre::Result<BTreeSet<B256>> {
    let tip = factory.provider()?.best_block_number()?;
    if tip == 0 {
        return Ok(BTreeSet::new());
    }
    factory.db_ref().view(|tx| {
        tx.disable_long_read_transaction_safety();
        let mut cursor = tx.cursor_read::<tables::StorageChangeSets>()?;
        let range = BlockNumberAddress((0, address))..=BlockNumberAddress((tip, address));
        let mut keys = BTreeSet::new();
        for entry in cursor.walk_range(range)? {
            let (block_address, entry) = entry?;
            if block_address.address() == address {
                keys.insert(entry.key);
            }
        }
        Ok::<_, eyre::Report>(keys)
    })?
}

fn print_state(
    format: OutputFormat,
    address: Address,
    block: Option<BlockNumber>,
    account: Option<Account>,
    storage: &[(B256, U256)],
) {
    match format {
        OutputFormat::Table => {
            println!("Account: {address}");
            match block {
                Some(block) => println!("Block: {block}"),
                None => println!("Block: latest"),
            }
            println!();
            match account {
                Some(account) => {
                    println!("Nonce: {}", account.nonce);
                    println!("Balance: {} wei", account.balance);
                    if let Some(code_hash) = account.bytecode_hash {
                        println!("Code hash: {code_hash}");
                    }
                }
                None => println!("Account not found"),
            }
            println!();
            println!("Storage ({} slots):", storage.len());
            println!("{:-<130}", "");
            println!("{:<66} | {:<64}", "Slot", "Value");
            println!("{:-<130}", "");
            for (key, value) in storage {
                println!("{key} | {value:#066x}");
            }
        }
        OutputFormat::Json => {
            let output = serde_json::json!({
                "address": address.to_string(),
                "block": block,
                "account": account.map(|a| serde_json::json!({
                    "nonce": a.nonce,
                    "balance": a.balance.to_string(),
                    "code_hash": a.bytecode_hash.map(|h| h.to_string()),
                })),
                "storage": storage.iter().map(|(k, v)| serde_json::json!({
                    "key": k.to_string(),
                    "value": format!("{v:#066x}"),
                })).collect::<Vec<_>>(),
            });
            println!(
                "{}",
                serde_json::to_string_pretty(&output).expect("JSON values serialise")
            );
        }
        OutputFormat::Csv => {
            println!("slot,value");
            for (key, value) in storage {
                println!("{key},{value:#066x}");
            }
        }
    }
}

/// Asks as reth's `db drop` does; `true` to go on.
pub fn confirm_drop(data_dir: &Path) -> eyre::Result<bool> {
    print!(
        "Are you sure you want to drop the database at {}? This cannot be undone. (y/N): ",
        data_dir.display()
    );
    std::io::stdout().flush()?;
    let mut input = String::new();
    std::io::stdin().read_line(&mut input)?;
    if input.trim().eq_ignore_ascii_case("y") {
        return Ok(true);
    }
    println!("Database drop aborted!");
    Ok(false)
}

/// reth's `db drop` plus the hybrid's RocksDB: the database, then `hybrid-rocksdb`, the static
/// files (left as an empty folder) and the ExEx WAL. MDBX goes first: without it nothing opens,
/// and `db drop` finishes a drop interrupted after it.
pub fn drop_datadir(
    db: &Path,
    hybrid_rocksdb: &Path,
    static_files: &Path,
    exex_wal: &Path,
) -> eyre::Result<()> {
    for (what, path) in [("database", db), ("reth-hybrid's RocksDB", hybrid_rocksdb)] {
        if path.exists() {
            info!(target: "reth::cli", "Dropping {what} at {:?}", path);
            reth_fs_util::remove_dir_all(path)?;
        }
    }
    info!(target: "reth::cli", "Dropping static files at {:?}", static_files);
    if static_files.exists() {
        reth_fs_util::remove_dir_all(static_files)?;
    }
    reth_fs_util::create_dir_all(static_files)?;
    if exex_wal.exists() {
        info!(target: "reth::cli", "Dropping ExEx WAL at {:?}", exex_wal);
        reth_fs_util::remove_dir_all(exex_wal)?;
    }
    Ok(())
}
