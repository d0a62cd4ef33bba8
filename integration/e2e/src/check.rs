//! Two nodes on the same chain answer alike, read by RPC: every block hash, every canonical
//! transaction by hash (the tx-hash index), and sampled balances, nonces and storage slots at
//! random historical blocks (the history indices). A mismatch fails the check and is printed.

use crate::{
    load::store_contract,
    rpc::{Rpc, hex},
};
use eyre::{bail, ensure, eyre};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};
use std::collections::BTreeSet;

#[derive(clap::Args)]
pub struct Args {
    /// The node under test (the hybrid).
    #[arg(long)]
    hybrid: String,
    /// The reference node (stock MDBX) holding the same chain (up to its head, which is compared).
    #[arg(long)]
    stock: String,
    /// Historical samples of each kind (balance and nonce, storage slot).
    #[arg(long, default_value_t = 500)]
    samples: usize,
    /// Seeds the sampling.
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

/// Queries both nodes with the same calls; returns the answers in pairs.
async fn both(
    a: &Rpc,
    b: &Rpc,
    method: &str,
    calls: &[Vec<Value>],
) -> eyre::Result<Vec<(Value, Value)>> {
    let x = a.batch_ok(method, calls.iter().cloned()).await?;
    let y = b.batch_ok(method, calls.iter().cloned()).await?;
    Ok(x.into_iter().zip(y).collect())
}

/// Counts differing pairs, printing the first few with their call.
fn mismatches(kind: &str, calls: &[Vec<Value>], answers: &[(Value, Value)]) -> usize {
    let bad: Vec<usize> = (0..answers.len())
        .filter(|&i| answers[i].0 != answers[i].1)
        .collect();
    for &i in bad.iter().take(5) {
        println!(
            "MISMATCH {kind} {}: hybrid {} stock {}",
            Value::Array(calls[i].clone()),
            answers[i].0,
            answers[i].1
        );
    }
    bad.len()
}

pub async fn run(args: Args) -> eyre::Result<()> {
    let hybrid = Rpc::new(&args.hybrid)?;
    let stock = Rpc::new(&args.stock)?;
    // The stock node holds exactly the chain it was fed; the hybrid may have gone on since (a
    // dev node mines whenever a transaction is pending), so the comparison covers the former.
    let head = stock.block_number().await?;
    let hybrid_head = hybrid.block_number().await?;
    ensure!(
        hybrid_head >= head,
        "the hybrid node is behind the stock node (hybrid {hybrid_head}, stock {head}): feed the \
         stock node the hybrid's chain"
    );
    ensure!(
        head > 0,
        "the stock node has no blocks: feed it the hybrid's chain first"
    );
    let mut failed = 0;

    // Every block, by number: the same object (header fields, hash, transaction hashes).
    let calls: Vec<Vec<Value>> = (0..=head).map(|n| vec![hex(n), json!(false)]).collect();
    let blocks = both(&hybrid, &stock, "eth_getBlockByNumber", &calls).await?;
    failed += mismatches("block", &calls, &blocks);

    // Every canonical transaction (as the stock node lists them), by hash: found, in its
    // block, the same object.
    let mut tx_calls = Vec::new();
    let mut tx_block = Vec::new();
    for (n, (_, block)) in blocks.iter().enumerate() {
        let txs = block
            .get("transactions")
            .and_then(Value::as_array)
            .ok_or_else(|| eyre!("block {n} has no transaction list on the stock node: {block}"))?;
        for tx in txs {
            tx_calls.push(vec![tx.clone()]);
            tx_block.push(n as u64);
        }
    }
    let txs = both(&hybrid, &stock, "eth_getTransactionByHash", &tx_calls).await?;
    let mut not_found = 0;
    for (i, (h, _)) in txs.iter().enumerate() {
        if h.get("blockNumber") != Some(&hex(tx_block[i])) {
            not_found += 1;
            if not_found <= 5 {
                println!(
                    "MISSING transaction {} of block {}: hybrid answered {h}",
                    tx_calls[i][0], tx_block[i]
                );
            }
        }
    }
    failed += not_found + mismatches("transaction", &tx_calls, &txs);

    // The accounts and slots the chain touched.
    let contract = store_contract()?;
    let contract_json = json!(contract);
    let contract_hex = format!("{contract:#x}");
    let mut accounts = BTreeSet::new();
    let mut slots = BTreeSet::new();
    for (tx, _) in &txs {
        for field in ["from", "to"] {
            if let Some(a) = tx.get(field).and_then(Value::as_str) {
                accounts.insert(a.to_lowercase());
            }
        }
        let input = tx.get("input").and_then(Value::as_str).unwrap_or("");
        let to = tx.get("to").and_then(Value::as_str).map(str::to_lowercase);
        if to.as_deref() == Some(contract_hex.as_str()) && input.len() >= 2 + 128 {
            slots.insert(format!("0x{}", &input[2..66]));
        }
    }
    if accounts.is_empty() || slots.is_empty() {
        bail!(
            "the chain has {} accounts and {} storage slots to sample: run `load` first",
            accounts.len(),
            slots.len()
        );
    }
    let accounts: Vec<String> = accounts.into_iter().collect();
    let slots: Vec<String> = slots.into_iter().collect();
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mut sample = |n: usize, keys: &[String]| -> Vec<(String, u64)> {
        (0..n)
            .map(|_| {
                (
                    keys[rng.random_range(0..keys.len())].clone(),
                    rng.random_range(0..=head),
                )
            })
            .collect()
    };
    let account_samples = sample(args.samples, &accounts);
    let slot_samples = sample(args.samples, &slots);

    let balance_calls: Vec<Vec<Value>> = account_samples
        .iter()
        .map(|(a, n)| vec![json!(a), hex(*n)])
        .collect();
    let storage_calls: Vec<Vec<Value>> = slot_samples
        .iter()
        .map(|(s, n)| vec![contract_json.clone(), json!(s), hex(*n)])
        .collect();
    let balances = both(&hybrid, &stock, "eth_getBalance", &balance_calls).await?;
    let nonces = both(&hybrid, &stock, "eth_getTransactionCount", &balance_calls).await?;
    let storage = both(&hybrid, &stock, "eth_getStorageAt", &storage_calls).await?;
    failed += mismatches("eth_getBalance", &balance_calls, &balances)
        + mismatches("eth_getTransactionCount", &balance_calls, &nonces)
        + mismatches("eth_getStorageAt", &storage_calls, &storage);

    // How many samples read a value the head no longer holds: the history path was taken.
    let latest = |calls: &[Vec<Value>]| -> Vec<Vec<Value>> {
        calls
            .iter()
            .map(|c| {
                let mut c = c.clone();
                *c.last_mut().expect("a block argument") = json!("latest");
                c
            })
            .collect()
    };
    let zero = |v: &Value| {
        v.as_str().is_some_and(|s| {
            s.trim_start_matches("0x")
                .trim_start_matches('0')
                .is_empty()
        })
    };
    let balances_now = hybrid
        .batch_ok("eth_getBalance", latest(&balance_calls))
        .await?;
    let storage_now = hybrid
        .batch_ok("eth_getStorageAt", latest(&storage_calls))
        .await?;
    let older = |then: &[(Value, Value)], now: &[Value]| {
        then.iter().zip(now).filter(|((h, _), n)| h != *n).count()
    };
    let nonzero = |v: &[(Value, Value)]| v.iter().filter(|(h, _)| !zero(h)).count();
    println!(
        "check: head {head}: {} blocks, {} transactions by hash ({not_found} missing), {} \
         balance+nonce samples ({} non-zero, {} differ from the head's), {} storage samples ({} \
         non-zero, {} differ from the head's) over {} accounts and {} slots; {failed} mismatches",
        blocks.len(),
        txs.len(),
        balances.len(),
        nonzero(&balances),
        older(&balances, &balances_now),
        storage.len(),
        nonzero(&storage),
        older(&storage, &storage_now),
        accounts.len(),
        slots.len(),
    );
    ensure!(
        failed == 0,
        "{failed} answers differ between the hybrid and stock nodes"
    );
    // A check that never read a past value, or only zeros, would prove nothing about history.
    for (kind, answers, now) in [
        ("balance", &balances, &balances_now),
        ("storage", &storage, &storage_now),
    ] {
        ensure!(
            nonzero(answers) > 0 && older(answers, now) > 0,
            "no {kind} sample read a non-zero value the head no longer holds: the chain is too \
             short or the sampling too small to exercise the history indices"
        );
    }
    Ok(())
}
