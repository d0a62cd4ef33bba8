//! `reth-hybrid-node`: reth's Ethereum node command line. Built with feature `hybrid` (the
//! default) the node runs on reth-hybrid's database: hot state in reth's MDBX, the history
//! indices and the tx-hash index in RocksDB, one commit across both. Built without it, the same
//! binary runs stock MDBX: the A/B pair for reth-bench.

#![allow(missing_docs)]

#[global_allocator]
static ALLOC: reth_cli_util::allocator::Allocator = reth_cli_util::allocator::new_allocator();

#[cfg(feature = "hybrid")]
mod operator;

use clap::Parser;
use reth_ethereum_cli::{chainspec::EthereumChainSpecParser, interface::Cli};
use reth_node_ethereum::EthereumNode;

/// Which storage this build runs; `--version` and the startup log name it, and
/// `make integration` checks each binary against the name it is copied to.
const STORAGE_VARIANT: &str = if cfg!(feature = "hybrid") {
    "hybrid"
} else {
    "mdbx"
};

fn main() {
    reth_cli_util::sigsegv_handler::install();
    if matches!(std::env::args().nth(1).as_deref(), Some("--version" | "-V")) {
        println!("reth-hybrid-node storage: {STORAGE_VARIANT}");
    }
    if std::env::var_os("RUST_BACKTRACE").is_none() {
        // SAFETY: single-threaded here, before the runtime starts.
        unsafe { std::env::set_var("RUST_BACKTRACE", "1") };
    }
    #[cfg(feature = "hybrid")]
    {
        // reth's own command structs open MDBX alone; these run reth's code on the hybrid.
        let argv: Vec<String> = std::env::args().collect();
        if argv
            .get(1)
            .is_some_and(|cmd| operator::COMMANDS.contains(&cmd.as_str()))
        {
            exit_once_closed(operator::main(argv));
        }
    }
    let cli = Cli::<EthereumChainSpecParser>::parse();
    // What is left of reth's commands opens MDBX alone: on a hybrid datadir an offline writer
    // would change MDBX and leave the RocksDB tables out of step, and a reader would miss them.
    #[cfg(feature = "hybrid")]
    {
        use reth_ethereum_cli::interface::Commands;
        let refusal = match &cli.command {
            // These never open the database (p2p: the network alone).
            Commands::Node(_)
            | Commands::DumpGenesis(_)
            | Commands::Config(_)
            | Commands::P2P(_) => None,
            Commands::Download(_) => Some(
                "`download` unpacks a snapshot into a stock MDBX datadir. Download with the stock \
                 build (reth-hybrid-node-mdbx), then move the tables with `reth-hybrid migrate \
                 --datadir D`",
            ),
            _ => Some(
                "reth's implementation opens MDBX alone and would miss or leave out of step the \
                 RocksDB tables (history, tx hashes). Run it on an MDBX-only copy: `reth-hybrid \
                 migrate --datadir D --to mdbx`, then the stock build (reth-hybrid-node-mdbx)",
            ),
        };
        if let Some(why) = refusal {
            eprintln!(
                "this reth-hybrid-node command is not available on a hybrid datadir: {why}. \
                 Available here: node, init, init-state, import, import-era, export-era, stage \
                 unwind|drop|run|dump, prune, re-execute, db stats|list|get|checksum|clear|copy|\
                 diff|repair-trie|stage-checkpoints|prune-checkpoints|settings|\
                 static-file-header|account-storage|state|drop|path|adopt-v2, p2p, dump-genesis, config"
            );
            std::process::exit(2);
        }
    }
    if let Err(err) = cli.run(async move |builder, _| {
        tracing::info!(
            target: "reth_hybrid",
            storage = STORAGE_VARIANT,
            "reth-hybrid-node {} ({})",
            env!("CARGO_PKG_VERSION"),
            if cfg!(feature = "hybrid") {
                "hybrid: history and tx-hash index in RocksDB"
            } else {
                "stock MDBX"
            }
        );
        #[cfg(feature = "hybrid")]
        {
            let mut config = builder.config().clone();
            let executor = builder.task_executor().clone();
            if config.storage.v2 {
                tracing::info!(
                    target: "reth_hybrid",
                    "running reth's v1 storage layout (history through the Database traits into \
                     reth-hybrid's router); --storage.v2 does not apply"
                );
                config.storage.v2 = false;
            }
            if config.metrics.prometheus.is_some() {
                // reth installs its Prometheus recorder for `--metrics`; ours report into it.
                reth_hybrid_adapter::enable_metrics();
            }
            let datadir = config.datadir().data_dir().to_path_buf();
            let args = config.db.database_args();
            // ORDER: close the MDBX environment the command line opened before the hybrid
            // opens the same files.
            drop(builder);
            let mut db = reth_hybrid_adapter::open_hybrid(&datadir, args)?;
            if config.db.metrics_enabled() {
                // As stock reth's `init_db(..).with_metrics_if(..)`.
                db = db.with_reth_database_metrics();
            }
            // reth reports database gauges every few minutes; ours go out every second, so a
            // slow stretch of reads lines up with what RocksDB was doing (compactions, L0 files,
            // cache misses). Kept until the node exits.
            let _engine_stats = if config.metrics.prometheus.is_some() {
                db.engine()
                    .spawn_stats_publisher(std::time::Duration::from_secs(1))
                    .inspect_err(|e| {
                        tracing::warn!(
                            target: "reth_hybrid",
                            error = %e,
                            "could not start the engine stats thread; reth_hybrid_rocksdb_* \
                             metrics are not published"
                        )
                    })
                    .ok()
            } else {
                None
            };
            let handle = reth_node_builder::NodeBuilder::new(config)
                .with_database(db)
                .with_launch_context(executor)
                .node(EthereumNode::default())
                .launch_with_debug_capabilities()
                .await?;
            handle.wait_for_node_exit().await
        }
        #[cfg(not(feature = "hybrid"))]
        {
            let handle = builder
                .node(EthereumNode::default())
                .launch_with_debug_capabilities()
                .await?;
            handle.wait_for_node_exit().await
        }
    }) {
        eprintln!("Error: {err:?}");
        #[cfg(feature = "hybrid")]
        exit_once_closed(1);
        #[cfg(not(feature = "hybrid"))]
        std::process::exit(1);
    }
    #[cfg(feature = "hybrid")]
    exit_once_closed(0);
}

/// Ends the process once reth-hybrid's RocksDB has closed. reth's runner drops its runtime (and
/// the tasks holding the database) on a thread of its own without waiting, and a RocksDB closing
/// while the process exits can abort it ("pthread lock: Invalid argument", as an `import` did
/// once in operator-check): C++ static destructors tear down RocksDB's shared timer under it.
/// `_exit` then skips those destructors, so reth's own RocksDB (`<datadir>/rocksdb`, which may
/// still be closing) cannot trip over them either. After a Ctrl-C reth returns while a blocking
/// command may still run: the wait is short, and a second Ctrl-C ends the process at once.
#[cfg(feature = "hybrid")]
fn exit_once_closed(code: i32) -> ! {
    use std::{io::Write, time::Duration};
    // SAFETY: restores the default disposition (terminate) of two signals whose handlers (tokio's)
    // no longer have anyone listening.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
    if !reth_hybrid_rocksdb::wait_for_engines_closed(Duration::from_secs(2)) {
        eprintln!(
            "waiting up to 10 s for reth-hybrid's RocksDB to close (Ctrl-C ends the process now; \
             every commit is durable either way)..."
        );
        if !reth_hybrid_rocksdb::wait_for_engines_closed(Duration::from_secs(10)) {
            eprintln!(
                "reth-hybrid's RocksDB is still open (a command interrupted mid-work); exiting: \
                 the next open recovers a commit it left in flight"
            );
        }
    }
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: ends the process without atexit handlers or static destructors. What it wrote is
    // in the kernel already (Rust flushes no buffered writer at exit either), the standard
    // streams are flushed above, and the log file's writer flushed when its guard dropped.
    unsafe { libc::_exit(code) }
}
