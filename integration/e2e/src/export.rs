//! The canonical chain as an RLP file: blocks 1..=head (or `--to`), each as `debug_getRawBlock` returns it,
//! concatenated: the format `reth import` reads.

use crate::rpc::{Rpc, hex};
use eyre::{Context, eyre};
use std::{io::Write, path::PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The node's HTTP RPC (with the `debug` API).
    #[arg(long)]
    rpc: String,
    /// The chain file to write.
    #[arg(long)]
    out: PathBuf,
    /// The last block to export (default: the head).
    #[arg(long)]
    to: Option<u64>,
}

pub async fn run(args: Args) -> eyre::Result<()> {
    let rpc = Rpc::new(&args.rpc)?;
    let chain_head = rpc.block_number().await?;
    let head = args.to.unwrap_or(chain_head);
    eyre::ensure!(
        head <= chain_head,
        "--to {head} is past the node's head {chain_head}"
    );
    let raw = rpc
        .batch_ok("debug_getRawBlock", (1..=head).map(|b| vec![hex(b)]))
        .await?;
    let tmp = args.out.with_extension("partial");
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(&tmp).wrap_err_with(|| format!("creating {}", tmp.display()))?,
    );
    let mut bytes = 0;
    for (i, block) in raw.iter().enumerate() {
        let hex_str = block
            .as_str()
            .ok_or_else(|| eyre!("debug_getRawBlock({}) returned {block}", i + 1))?;
        let data = alloy_primitives::hex::decode(hex_str)
            .wrap_err_with(|| format!("block {} is not hex", i + 1))?;
        bytes += data.len();
        file.write_all(&data).wrap_err("writing the chain file")?;
    }
    file.into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all())
        .wrap_err("writing the chain file")?;
    std::fs::rename(&tmp, &args.out).wrap_err("renaming the chain file into place")?;
    println!(
        "export: blocks 1..={head} ({bytes} bytes) to {}",
        args.out.display()
    );
    Ok(())
}
