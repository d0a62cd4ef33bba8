//! A deterministic transaction load for a `--dev` node, signed here (the node holds no keys).
//!
//! Senders are reth's prefunded dev accounts (mnemonic "test ... junk"). The first transaction of
//! sender 0 deploys a contract whose code is `SSTORE(calldata[0..32], calldata[32..64])`; after
//! it, even transaction numbers transfer 1 gwei to a fresh account and odd ones write a fresh slot.
//! The account and the slot are hashes of (seed, sender, nonce): a run killed half-way and started
//! again (nonces from the node) goes on with the same workload and never reuses a recipient.

use crate::rpc::{Rpc, quantity};
use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256, keccak256};
use alloy_signer::SignerSync;
use alloy_signer_local::{MnemonicBuilder, PrivateKeySigner, coins_bip39::English};
use eyre::{Context, bail, ensure, eyre};
use serde_json::json;
use std::time::{Duration, Instant};

const DEV_MNEMONIC: &str = "test test test test test test test test test test test junk";
/// reth's dev chain (`--dev`).
const DEV_CHAIN_ID: u64 = 1337;
/// Init code returning the runtime `PUSH1 32 CALLDATALOAD PUSH1 0 CALLDATALOAD SSTORE STOP`.
const STORE_CONTRACT: [u8; 20] = [
    0x60, 0x08, 0x60, 0x0c, 0x60, 0x00, 0x39, 0x60, 0x08, 0x60, 0x00, 0xf3, // copy and return
    0x60, 0x20, 0x35, 0x60, 0x00, 0x35, 0x55, 0x00, // runtime
];
const MAX_FEE: u128 = 50_000_000_000;
const PRIORITY_FEE: u128 = 1_000_000_000;
/// Transactions a sender has in the pool at once: under reth's default per-sender limit.
const WINDOW: u64 = 12;

#[derive(clap::Args)]
pub struct Args {
    /// The node's HTTP RPC.
    #[arg(long)]
    rpc: String,
    /// Transactions to send in this run (the deployment, if made, counts).
    #[arg(long)]
    txs: u64,
    /// Seeds the recipients and slots.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Dev accounts sending (at most 20).
    #[arg(long, default_value_t = 8)]
    senders: usize,
    /// Give up when the node mines nothing for this long (seconds).
    #[arg(long, default_value_t = 120)]
    stall_secs: u64,
}

/// The contract the load writes storage into: sender 0's first creation.
pub fn store_contract() -> eyre::Result<Address> {
    Ok(dev_signer(0)?.address().create(0))
}

fn dev_signer(index: usize) -> eyre::Result<PrivateKeySigner> {
    MnemonicBuilder::<English>::default()
        .phrase(DEV_MNEMONIC)
        .index(index as u32)
        .wrap_err("dev account derivation path")?
        .build()
        .wrap_err("dev account from the mnemonic")
}

/// Recipient of a transfer (`tag` 0) or slot of a storage write (`tag` 1).
fn derived(seed: u64, tag: u8, sender: usize, nonce: u64) -> B256 {
    let mut preimage = Vec::with_capacity(25);
    preimage.extend_from_slice(&seed.to_be_bytes());
    preimage.push(tag);
    preimage.extend_from_slice(&(sender as u64).to_be_bytes());
    preimage.extend_from_slice(&nonce.to_be_bytes());
    keccak256(preimage)
}

/// The signed transaction `nonce` of `sender`.
fn transaction(
    seed: u64,
    contract: Address,
    signer: &PrivateKeySigner,
    sender: usize,
    nonce: u64,
) -> eyre::Result<Bytes> {
    let mut tx = TxEip1559 {
        chain_id: DEV_CHAIN_ID,
        nonce,
        max_fee_per_gas: MAX_FEE,
        max_priority_fee_per_gas: PRIORITY_FEE,
        ..Default::default()
    };
    if sender == 0 && nonce == 0 {
        tx.to = TxKind::Create;
        tx.gas_limit = 200_000;
        tx.input = Bytes::from_static(&STORE_CONTRACT);
    } else if nonce.is_multiple_of(2) {
        let to = derived(seed, 0, sender, nonce);
        tx.to = TxKind::Call(Address::from_slice(&to[12..]));
        tx.gas_limit = 21_000;
        tx.value = U256::from(1_000_000_000u64);
    } else {
        let slot = derived(seed, 1, sender, nonce);
        let value: U256 = U256::from(nonce) << 8 | U256::from(sender);
        tx.to = TxKind::Call(contract);
        tx.gas_limit = 100_000;
        tx.input = [slot.as_slice(), &value.to_be_bytes::<32>()]
            .concat()
            .into();
    }
    let signature = signer
        .sign_hash_sync(&tx.signature_hash())
        .wrap_err("signing")?;
    Ok(TxEnvelope::from(tx.into_signed(signature))
        .encoded_2718()
        .into())
}

async fn nonces(rpc: &Rpc, senders: &[PrivateKeySigner], tag: &str) -> eyre::Result<Vec<u64>> {
    rpc.batch_ok(
        "eth_getTransactionCount",
        senders.iter().map(|s| vec![json!(s.address()), json!(tag)]),
    )
    .await?
    .iter()
    .map(quantity)
    .collect()
}

pub async fn run(args: Args) -> eyre::Result<()> {
    ensure!(
        (1..=20).contains(&args.senders),
        "--senders must be 1..=20 (reth's dev chain funds 20 accounts)"
    );
    let rpc = Rpc::new(&args.rpc)?;
    let chain = quantity(&rpc.call("eth_chainId", vec![]).await?)?;
    ensure!(
        chain == DEV_CHAIN_ID,
        "{} is chain {chain}, not reth's dev chain {DEV_CHAIN_ID}: start the node with --dev",
        rpc.url()
    );
    let signers: Vec<PrivateKeySigner> = (0..args.senders)
        .map(dev_signer)
        .collect::<eyre::Result<_>>()?;
    let contract = store_contract()?;
    let mut next = nonces(&rpc, &signers, "pending").await?;
    let start: u64 = next.iter().sum();
    let goal = start + args.txs;
    let started = Instant::now();
    let mut last_progress = (Instant::now(), nonces(&rpc, &signers, "latest").await?);
    println!(
        "load: {} senders at nonces {next:?}, {} transactions to send to {} (contract {contract})",
        args.senders,
        args.txs,
        rpc.url()
    );
    let mut sent = 0u64;
    loop {
        let mined = nonces(&rpc, &signers, "latest").await?;
        let mined_total: u64 = mined.iter().sum();
        if mined_total >= goal {
            break;
        }
        if mined != last_progress.1 {
            last_progress = (Instant::now(), mined.clone());
        } else if last_progress.0.elapsed() > Duration::from_secs(args.stall_secs) {
            bail!(
                "the node mined nothing for {}s (mined nonces {mined:?}, sent up to {next:?})",
                args.stall_secs
            );
        }
        // Top every sender up to WINDOW transactions in the pool, round robin, until the goal.
        let mut batch = Vec::new();
        let mut total = next.iter().sum::<u64>();
        for (s, signer) in signers.iter().enumerate() {
            next[s] = next[s].max(mined[s]);
            while next[s] < mined[s] + WINDOW && total < goal {
                batch.push(transaction(args.seed, contract, signer, s, next[s])?);
                next[s] += 1;
                total += 1;
            }
        }
        if !batch.is_empty() {
            let results = rpc
                .batch(
                    "eth_sendRawTransaction",
                    batch.iter().map(|raw| vec![json!(raw)]),
                )
                .await?;
            for r in results {
                match r {
                    Ok(_) => sent += 1,
                    // Sent before a restart and still in the pool, or mined meanwhile.
                    Err(e) if e.contains("already known") || e.contains("nonce too low") => {}
                    Err(e) => return Err(eyre!("eth_sendRawTransaction: {e}")),
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let head = rpc.block_number().await?;
    println!(
        "load: {sent} transactions sent and mined in {:.1}s; head {head}; sender nonces {:?}",
        started.elapsed().as_secs_f64(),
        nonces(&rpc, &signers, "latest").await?
    );
    Ok(())
}
