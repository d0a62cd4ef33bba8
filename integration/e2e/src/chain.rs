//! A benchmark chain, made by a node and deterministic by seed: block by block, this tool chooses
//! the transactions and the payload attributes, the node builds the block from exactly those
//! (`testing_buildBlockV1`, executed in the given order), and the block is imported into the same
//! node through the engine API (`engine_newPayloadV4`, `engine_forkchoiceUpdatedV3`). Same seed and
//! sizes, same blocks, same hashes: the head hash is printed and recorded.
//!
//! The workload is where storage matters: every block has `--txs-per-block` transactions from
//! reth's 20 prefunded dev accounts (an equal share each), of four kinds, by a hash of (seed,
//! block, index):
//! - 52%: a transfer to a fresh account (a new `PlainAccountState` row and history);
//! - 8%: a transfer to an account funded earlier (another history entry for it);
//! - 32%: a token transfer to a fresh holder (two storage writes: sender's and holder's slot);
//! - 8%: a token transfer to an earlier holder.
//!
//! The token (deployed by the chain's first transaction) keeps balances in the slot named by the
//! holder's address. At 500 transactions a block uses about 15 Mgas, the dev chain's gas target,
//! so the base fee stays flat over thousands of blocks.

use crate::{
    engine::Engine,
    rpc::{Rpc, quantity},
};
use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256, keccak256};
use alloy_signer::SignerSync;
use alloy_signer_local::{MnemonicBuilder, PrivateKeySigner, coins_bip39::English};
use eyre::{Context, bail, ensure, eyre};
use serde_json::{Value, json};
use std::{
    path::PathBuf,
    sync::mpsc::sync_channel,
    time::{Duration, Instant},
};

const DEV_MNEMONIC: &str = "test test test test test test test test test test test junk";
const DEV_CHAIN_ID: u64 = 1337;
/// Names this workload's rules (kinds, shares, contract, attributes): a chain cached under another
/// name was made by other rules.
pub const WORKLOAD: &str = "w1";
/// reth's dev chain funds this many accounts of the mnemonic.
pub const SENDERS: usize = 20;
const SECONDS_PER_BLOCK: u64 = 12;
const MAX_FEE: u128 = 100_000_000_000;
const PRIORITY_FEE: u128 = 1_000_000_000;
const FEE_RECIPIENT: Address = Address::new([0xfe; 20]);
/// Accounts every chain touches besides the fresh ones: the senders, the token, the fee recipient.
const OTHER_ACCOUNTS: u64 = SENDERS as u64 + 2;
/// Init code of the token: copies and returns its 19-byte runtime, which does
/// `balance[caller] -= amount; balance[to] += amount` with `to = calldata[0..32]`,
/// `amount = calldata[32..64]`, each balance in the slot named by the address.
const TOKEN_INIT: [u8; 31] = [
    0x60, 0x13, 0x60, 0x0c, 0x60, 0x00, 0x39, 0x60, 0x13, 0x60, 0x00,
    0xf3, // codecopy, return
    0x60, 0x20, 0x35, 0x80, 0x33, 0x54, 0x03, 0x33, 0x55, // caller's slot -= amount
    0x60, 0x00, 0x35, 0x80, 0x54, 0x82, 0x01, 0x90, 0x55, 0x00, // to's slot += amount
];

#[derive(clap::Args)]
pub struct Args {
    /// The node's HTTP RPC, with the `testing` and `eth` APIs (`--http.api eth,testing`).
    #[arg(long)]
    rpc: String,
    /// The node's engine API (`--authrpc.port`).
    #[arg(long)]
    engine: String,
    /// The JWT secret file the node was started with (`--authrpc.jwtsecret`).
    #[arg(long)]
    jwt: PathBuf,
    /// Blocks to make (after genesis).
    #[arg(long)]
    blocks: u64,
    #[arg(long, default_value_t = 500)]
    txs_per_block: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write what was made (sizes, seed, head hash, counts), as JSON.
    #[arg(long)]
    manifest: Option<PathBuf>,
}

/// What one transaction of the workload does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Deploy,
    FreshTransfer,
    RepeatTransfer,
    FreshToken,
    RepeatToken,
}

/// The plan of the chain: a pure function of the seed and the sizes.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub seed: u64,
    pub txs_per_block: usize,
}

impl Plan {
    fn word(&self, tag: &[u8], block: u64, index: usize) -> B256 {
        let mut preimage = Vec::with_capacity(24 + tag.len());
        preimage.extend_from_slice(&self.seed.to_be_bytes());
        preimage.extend_from_slice(&block.to_be_bytes());
        preimage.extend_from_slice(&(index as u64).to_be_bytes());
        preimage.extend_from_slice(tag);
        keccak256(preimage)
    }

    fn kind(&self, block: u64, index: usize) -> Kind {
        if block == 1 && index == 0 {
            return Kind::Deploy;
        }
        match self.word(b"kind", block, index)[0] as u32 * 100 / 256 {
            0..52 => Kind::FreshTransfer,
            52..60 => Kind::RepeatTransfer,
            60..92 => Kind::FreshToken,
            _ => Kind::RepeatToken,
        }
    }

    /// The fresh address made by transaction `index` of `block` (recipient or holder).
    fn fresh(&self, block: u64, index: usize) -> Address {
        Address::from_slice(&self.word(b"fresh", block, index)[12..])
    }

    /// An address an earlier transaction of kind `of` made fresh, picked by a hash of this
    /// transaction; the sender's own slot or account when there is none yet (the first blocks).
    fn earlier(&self, block: u64, index: usize, of: Kind, fallback: Address) -> Address {
        let position = block * self.txs_per_block as u64 + index as u64;
        let first = self.txs_per_block as u64; // block 1, index 0
        for attempt in 0..64u8 {
            let pick = self.word(&[b'e', attempt], block, index);
            let span = position - first;
            if span == 0 {
                break;
            }
            let earlier = first + u64::from_be_bytes(pick[..8].try_into().expect("8 bytes")) % span;
            let (b, i) = (
                earlier / self.txs_per_block as u64,
                (earlier % self.txs_per_block as u64) as usize,
            );
            let wanted = match of {
                Kind::RepeatTransfer => Kind::FreshTransfer,
                _ => Kind::FreshToken,
            };
            if self.kind(b, i) == wanted {
                return self.fresh(b, i);
            }
        }
        fallback
    }

    /// Sender and nonce of transaction `index` of `block`: senders take turns, each sends
    /// `txs_per_block / 20` a block (the first ones one more when it does not divide).
    fn sender_and_nonce(&self, block: u64, index: usize) -> (usize, u64) {
        let sender = index % SENDERS;
        let per_block = |s: usize| (self.txs_per_block + SENDERS - 1 - s) / SENDERS;
        let nonce = (block - 1) * per_block(sender) as u64 + (index / SENDERS) as u64;
        (sender, nonce)
    }

    pub fn token(&self, signers: &[PrivateKeySigner]) -> Address {
        signers[0].address().create(0)
    }
}

/// The token every chain deploys (dev account 0's first creation).
pub fn token_address() -> eyre::Result<Address> {
    Ok(dev_signers()?[0].address().create(0))
}

impl Plan {
    /// The signed transactions of `block`, in block order.
    fn block(&self, block: u64, signers: &[PrivateKeySigner]) -> eyre::Result<Vec<Bytes>> {
        let token = self.token(signers);
        (0..self.txs_per_block)
            .map(|index| {
                let (sender, nonce) = self.sender_and_nonce(block, index);
                let signer = &signers[sender];
                let mut tx = TxEip1559 {
                    chain_id: DEV_CHAIN_ID,
                    nonce,
                    max_fee_per_gas: MAX_FEE,
                    max_priority_fee_per_gas: PRIORITY_FEE,
                    ..Default::default()
                };
                let amount = U256::from(1 + (self.word(b"amount", block, index)[0] as u64));
                match self.kind(block, index) {
                    Kind::Deploy => {
                        tx.to = TxKind::Create;
                        tx.gas_limit = 200_000;
                        tx.input = Bytes::from_static(&TOKEN_INIT);
                    }
                    kind @ (Kind::FreshTransfer | Kind::RepeatTransfer) => {
                        let to = match kind {
                            Kind::FreshTransfer => self.fresh(block, index),
                            _ => self.earlier(block, index, kind, signer.address()),
                        };
                        tx.to = TxKind::Call(to);
                        tx.gas_limit = 21_000;
                        tx.value = amount * U256::from(1_000_000_000u64);
                    }
                    kind @ (Kind::FreshToken | Kind::RepeatToken) => {
                        let holder = match kind {
                            Kind::FreshToken => self.fresh(block, index),
                            _ => self.earlier(block, index, kind, signer.address()),
                        };
                        tx.to = TxKind::Call(token);
                        tx.gas_limit = 80_000;
                        let mut input = [0u8; 64];
                        input[12..32].copy_from_slice(holder.as_slice());
                        input[32..].copy_from_slice(&amount.to_be_bytes::<32>());
                        tx.input = Bytes::copy_from_slice(&input);
                    }
                }
                let signature = signer
                    .sign_hash_sync(&tx.signature_hash())
                    .wrap_err("signing")?;
                Ok(TxEnvelope::from(tx.into_signed(signature))
                    .encoded_2718()
                    .into())
            })
            .collect()
    }

    /// Fresh accounts the first `blocks` blocks fund (the history the benchmark's reads hit).
    fn fresh_accounts(&self, blocks: u64) -> u64 {
        (1..=blocks)
            .map(|b| {
                (0..self.txs_per_block)
                    .filter(|&i| self.kind(b, i) == Kind::FreshTransfer)
                    .count() as u64
            })
            .sum()
    }
}

pub fn dev_signers() -> eyre::Result<Vec<PrivateKeySigner>> {
    (0..SENDERS)
        .map(|index| {
            MnemonicBuilder::<English>::default()
                .phrase(DEV_MNEMONIC)
                .index(index as u32)
                .wrap_err("dev account derivation path")?
                .build()
                .wrap_err("dev account from the mnemonic")
        })
        .collect()
}

fn field<'a>(v: &'a Value, name: &str) -> eyre::Result<&'a Value> {
    v.get(name).ok_or_else(|| eyre!("no `{name}` in {v}"))
}

fn str_field<'a>(v: &'a Value, name: &str) -> eyre::Result<&'a str> {
    field(v, name)?
        .as_str()
        .ok_or_else(|| eyre!("`{name}` is not a string in {v}"))
}

pub async fn run(args: Args) -> eyre::Result<()> {
    ensure!(
        args.txs_per_block >= SENDERS,
        "--txs-per-block must be at least {SENDERS} (one per dev account)"
    );
    let rpc = Rpc::new(&args.rpc)?;
    let engine = Engine::new(&args.engine, &args.jwt)?;
    let chain = quantity(&rpc.call("eth_chainId", vec![]).await?)?;
    ensure!(
        chain == DEV_CHAIN_ID,
        "{} is chain {chain}, not reth's dev chain {DEV_CHAIN_ID}: start it with --chain dev",
        rpc.url()
    );
    let head = rpc.block_number().await?;
    ensure!(
        head <= args.blocks,
        "{} is at block {head}, past the {} blocks asked for",
        rpc.url(),
        args.blocks
    );
    let plan = Plan {
        seed: args.seed,
        txs_per_block: args.txs_per_block,
    };
    let signers = dev_signers()?;
    let genesis = rpc
        .call("eth_getBlockByNumber", vec![json!("0x0"), json!(false)])
        .await?;
    let genesis_time = quantity(field(&genesis, "timestamp")?)?;
    let mut parent = rpc
        .call(
            "eth_getBlockByNumber",
            vec![json!(format!("{head:#x}")), json!(false)],
        )
        .await?;
    if head > 0 {
        println!(
            "chain: resuming at block {head} (the blocks of a seed are fixed, so a resumed \
             generation makes the same chain)"
        );
    }
    // Signing runs ahead of the node on its own thread.
    let (blocks_tx, blocks_rx) = sync_channel::<eyre::Result<(u64, Vec<Bytes>)>>(4);
    let signer_plan = plan;
    let last = args.blocks;
    let signing = std::thread::spawn(move || {
        for block in head + 1..=last {
            let signed = signer_plan.block(block, &signers).map(|txs| (block, txs));
            if blocks_tx.send(signed).is_err() {
                return;
            }
        }
    });
    let started = Instant::now();
    let mut hashes: Vec<String> = Vec::new();
    let mut gas_total = 0u64;
    let mut last_report = Instant::now();
    for signed in blocks_rx.iter() {
        let (block, txs) = signed?;
        let parent_hash = str_field(&parent, "hash")?.to_string();
        let beacon_root = plan.word(b"beacon", block, 0);
        let attributes = json!({
            "timestamp": format!("{:#x}", genesis_time + SECONDS_PER_BLOCK * block),
            "prevRandao": plan.word(b"randao", block, 0),
            "suggestedFeeRecipient": FEE_RECIPIENT,
            "withdrawals": [],
            "parentBeaconBlockRoot": beacon_root,
        });
        let built = rpc
            .call(
                "testing_buildBlockV1",
                vec![json!(parent_hash), attributes, json!(txs)],
            )
            .await
            .wrap_err_with(|| format!("building block {block}"))?;
        let payload = field(&built, "executionPayload")?;
        let included = field(payload, "transactions")?
            .as_array()
            .map_or(0, Vec::len);
        ensure!(
            included == txs.len(),
            "block {block}: the node built {included} of {} transactions (gas limit reached?)",
            txs.len()
        );
        let requests = built.get("executionRequests").cloned().unwrap_or(json!([]));
        let status = engine
            .call(
                "engine_newPayloadV4",
                json!([payload, [], beacon_root, requests]),
            )
            .await
            .wrap_err_with(|| format!("importing block {block}"))?;
        ensure!(
            str_field(&status, "status")? == "VALID",
            "block {block}: engine_newPayloadV4 answered {status}"
        );
        let hash = str_field(payload, "blockHash")?.to_string();
        gas_total += quantity(field(payload, "gasUsed")?)?;
        hashes.push(hash.clone());
        let ancestor = |depth: usize| {
            hashes
                .len()
                .checked_sub(depth + 1)
                .map_or(hash.clone(), |i| hashes[i].clone())
        };
        let state = json!({
            "headBlockHash": hash,
            "safeBlockHash": ancestor(32),
            "finalizedBlockHash": ancestor(64),
        });
        let updated = engine
            .call("engine_forkchoiceUpdatedV3", json!([state, null]))
            .await
            .wrap_err_with(|| format!("making block {block} the head"))?;
        let fcu_status = str_field(field(&updated, "payloadStatus")?, "status")?;
        ensure!(
            fcu_status == "VALID",
            "block {block}: engine_forkchoiceUpdatedV3 answered {updated}"
        );
        parent = json!({ "hash": hash });
        if last_report.elapsed() > Duration::from_secs(30) || block == args.blocks {
            last_report = Instant::now();
            println!(
                "chain: block {block}/{} ({:.0} s, {:.1} Mgas/s)",
                args.blocks,
                started.elapsed().as_secs_f64(),
                gas_total as f64 / started.elapsed().as_secs_f64() / 1e6
            );
        }
    }
    signing
        .join()
        .map_err(|_| eyre!("the signing thread panicked"))?;
    let head_block = rpc
        .call("eth_getBlockByNumber", vec![json!("latest"), json!(false)])
        .await?;
    let head_number = quantity(field(&head_block, "number")?)?;
    if head_number != args.blocks {
        bail!(
            "the node's head is {head_number} after making {} blocks",
            args.blocks
        );
    }
    let head_hash = str_field(&head_block, "hash")?.to_string();
    let fresh = plan.fresh_accounts(args.blocks);
    println!(
        "chain: {} blocks of {} transactions (seed {}), head {head_hash}; {fresh} fresh \
         accounts funded, {} accounts touched in all",
        args.blocks,
        args.txs_per_block,
        args.seed,
        fresh + OTHER_ACCOUNTS
    );
    if let Some(path) = &args.manifest {
        let manifest = json!({
            "seed": args.seed,
            "blocks": args.blocks,
            "txs_per_block": args.txs_per_block,
            "transactions": args.blocks * args.txs_per_block as u64,
            "head": head_hash,
            "fresh_accounts": fresh,
            "accounts_touched": fresh + OTHER_ACCOUNTS,
            "token": plan.token(&dev_signers()?),
            "workload": WORKLOAD,
            "chain": "dev",
        });
        std::fs::write(path, serde_json::to_vec_pretty(&manifest)?)
            .wrap_err_with(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_follow_each_sender_without_gaps() {
        for txs_per_block in [20, 37, 500] {
            let plan = Plan {
                seed: 3,
                txs_per_block,
            };
            let mut next = [0u64; SENDERS];
            for block in 1..=4 {
                for index in 0..txs_per_block {
                    let (s, nonce) = plan.sender_and_nonce(block, index);
                    assert_eq!(nonce, next[s], "block {block} index {index}");
                    next[s] += 1;
                }
            }
        }
    }

    #[test]
    fn the_plan_is_a_function_of_the_seed_with_the_intended_mix() {
        let plan = Plan {
            seed: 1,
            txs_per_block: 500,
        };
        let same = Plan {
            seed: 1,
            txs_per_block: 500,
        };
        let other = Plan {
            seed: 2,
            txs_per_block: 500,
        };
        assert_eq!(plan.fresh(7, 3), same.fresh(7, 3));
        assert_ne!(plan.fresh(7, 3), other.fresh(7, 3));
        let mut counts = std::collections::HashMap::new();
        for block in 1..=40 {
            for index in 0..500 {
                *counts.entry(plan.kind(block, index)).or_insert(0u32) += 1;
            }
        }
        let share = |k| counts.get(&k).copied().unwrap_or(0) as f64 / 20_000.0;
        assert!(
            (share(Kind::FreshTransfer) - 0.52).abs() < 0.02,
            "{counts:?}"
        );
        assert!((share(Kind::FreshToken) - 0.32).abs() < 0.02, "{counts:?}");
        assert_eq!(counts[&Kind::Deploy], 1);
        // A repeat goes to an address an earlier transaction made fresh.
        let fresh: std::collections::HashSet<Address> = (1..=40)
            .flat_map(|b| (0..500).map(move |i| (b, i)))
            .filter(|&(b, i)| plan.kind(b, i) == Kind::FreshTransfer)
            .map(|(b, i)| plan.fresh(b, i))
            .collect();
        let repeat = (0..500)
            .find(|&i| plan.kind(40, i) == Kind::RepeatTransfer)
            .expect("a repeat in block 40");
        assert!(fresh.contains(&plan.earlier(40, repeat, Kind::RepeatTransfer, Address::ZERO)));
    }
}
