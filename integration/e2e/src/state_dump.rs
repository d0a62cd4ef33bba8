//! `state-dump`: a state dump in the format reth's `init-state` reads (a `{"root": ..}` line, then
//! one JSON account per line), made from reth's own `db list --json` output of a datadir's plain
//! state tables and the header's state root. scripts/operator-check feeds it to `init-state` on a
//! hybrid and a stock datadir; `init-state` recomputes the root and refuses a dump that differs.

use alloy_primitives::{Address, B256, Bytes, U256};
use eyre::{Context, ContextCompat, bail};
use serde_json::{Map, Value, json};
use std::{
    collections::BTreeMap,
    fs,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
};

#[derive(clap::Args)]
pub struct Args {
    /// `db list PlainAccountState --json` output (a JSON array of [address, account]).
    #[arg(long)]
    accounts: PathBuf,
    /// `db list PlainStorageState --json` output ([address, {key, value}] rows).
    #[arg(long)]
    storage: PathBuf,
    /// `db list Bytecodes --json` output ([code hash, bytecode] rows).
    #[arg(long)]
    bytecodes: PathBuf,
    /// The state root the dump is for (the header's `stateRoot`).
    #[arg(long)]
    root: B256,
    /// Where to write the JSONL dump.
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: Args) -> eyre::Result<()> {
    let codes: BTreeMap<B256, Bytes> = rows(&args.bytecodes)?
        .into_iter()
        .map(|(hash, code)| Ok((parse(&hash)?, bytecode(&code)?)))
        .collect::<eyre::Result<_>>()?;
    let mut storage: BTreeMap<Address, Map<String, Value>> = BTreeMap::new();
    for (address, entry) in rows(&args.storage)? {
        let key: B256 = parse(&entry["key"])?;
        let value: U256 = parse(&entry["value"])?;
        storage
            .entry(parse(&address)?)
            .or_default()
            .insert(key.to_string(), json!(B256::from(value)));
    }
    let accounts = rows(&args.accounts)?;
    let mut out = BufWriter::new(
        fs::File::create(&args.out).with_context(|| format!("creating {}", args.out.display()))?,
    );
    writeln!(out, "{}", json!({ "root": args.root }))?;
    let slots: usize = storage.values().map(Map::len).sum();
    for (address, account) in &accounts {
        let address: Address = parse(address)?;
        let balance: U256 = parse(&account["balance"])?;
        let nonce = account["nonce"].as_u64().context("an account's nonce")?;
        let mut line = json!({
            "address": address,
            "balance": balance,
            "nonce": format!("{nonce:#x}"),
        });
        if let Some(hash) = account["bytecode_hash"].as_str() {
            let hash: B256 = hash.parse()?;
            let code = codes
                .get(&hash)
                .with_context(|| format!("bytecode {hash} of {address} is not in Bytecodes"))?;
            line["code"] = json!(code);
        }
        if let Some(slots) = storage.remove(&address) {
            line["storage"] = Value::Object(slots);
        }
        writeln!(out, "{line}")?;
    }
    if let Some(address) = storage.keys().next() {
        bail!("storage of {address}, which PlainAccountState does not hold");
    }
    out.flush()?;
    println!(
        "state dump: {} accounts, {slots} storage slots, {} bytecodes, root {} -> {}",
        accounts.len(),
        codes.len(),
        args.root,
        args.out.display()
    );
    Ok(())
}

/// The `[key, value]` rows of a `db list --json` file (log lines before the array skipped).
fn rows(path: &Path) -> eyre::Result<Vec<(Value, Value)>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let start = text
        .find("\n[")
        .map(|at| at + 1)
        .or_else(|| text.starts_with('[').then_some(0))
        .with_context(|| format!("{} holds no JSON array", path.display()))?;
    let rows: Vec<(Value, Value)> = serde_json::from_str(&text[start..])
        .with_context(|| format!("{}: not db list's JSON rows", path.display()))?;
    Ok(rows)
}

fn parse<T: std::str::FromStr>(value: &Value) -> eyre::Result<T>
where
    T::Err: std::fmt::Display,
{
    let text = value
        .as_str()
        .with_context(|| format!("{value} is not a string"))?;
    text.parse().map_err(|e| eyre::eyre!("{text}: {e}"))
}

/// The original code of a stored bytecode (reth keeps legacy code analysed, padded).
fn bytecode(value: &Value) -> eyre::Result<Bytes> {
    let Some(legacy) = value.get("LegacyAnalyzed") else {
        bail!("only legacy bytecode is handled here, got {value}");
    };
    let code: Bytes = parse(&legacy["bytecode"])?;
    let len = legacy["original_len"].as_u64().context("original_len")? as usize;
    eyre::ensure!(
        len <= code.len(),
        "original_len {len} past the code's {} bytes",
        code.len()
    );
    Ok(code.slice(..len))
}
