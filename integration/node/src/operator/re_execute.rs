//! `re-execute`: runs stored blocks again and checks each against what the datadir holds: the
//! post-execution rules (gas used, receipts root, logs bloom), the receipts, and every block's
//! account and storage changesets against the state changes the execution reverts. Each chunk of
//! blocks starts from the state at its first block's parent, read through reth's history
//! provider: on a hybrid datadir through the history indices in RocksDB, so this is also a check
//! of those indices against the changesets they index.

use super::{
    Env, components,
    env::{Access, HybridEnvironment, HybridFactory},
};
use alloy_consensus::{BlockHeader, TxReceipt};
use alloy_primitives::{Address, B256, U256};
use reth_consensus::FullConsensus;
use reth_evm::{ConfigureEvm, execute::Executor};
use reth_primitives_traits::{Account, BlockBody, format_gas_throughput};
use reth_provider::{
    BlockNumReader, BlockReader, ChangeSetReader, DBProvider, DatabaseProviderFactory,
    ReceiptProvider, TransactionVariant,
};
use reth_revm::{
    database::StateProviderDatabase,
    db::{
        BundleState,
        states::reverts::{AccountInfoRevert, RevertToSlot},
    },
};
use reth_storage_api::StorageChangeSetReader;
use std::{
    collections::HashMap,
    ops::RangeInclusive,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};
use tracing::{error, info, warn};

/// reth's `re-execute` flags (its JIT flags aside: this build runs the interpreter).
#[derive(Debug, clap::Args)]
pub struct ReExecuteArgs {
    #[command(flatten)]
    env: Env,
    /// The height to start at.
    #[arg(long, default_value = "1")]
    from: u64,
    /// The height to end at (inclusive). Defaults to the latest block.
    #[arg(long)]
    to: Option<u64>,
    /// Number of tasks to run in parallel. Defaults to the number of available CPUs.
    #[arg(long)]
    num_tasks: Option<u64>,
    /// Number of blocks each worker processes before taking the next chunk.
    #[arg(long, default_value = "5000")]
    blocks_per_chunk: u64,
    /// Continue when a block fails and report every failing block at the end.
    #[arg(long)]
    skip_invalid_blocks: bool,
}

impl ReExecuteArgs {
    pub fn env(&self) -> &Env {
        &self.env
    }
}

type Primitives = <reth_node_ethereum::EthereumNode as reth_node_builder::NodeTypes>::Primitives;

/// What a worker reports to the thread that logs progress.
enum Event {
    Executed {
        gas: u64,
    },
    Invalid {
        number: u64,
        hash: B256,
        error: String,
    },
}

/// An executor is replaced (its changes verified) past this many bundle entries, bounding
/// memory, or this age, bounding how long one read view is kept.
const EXECUTOR_SIZE_LIMIT: usize = 5_000_000;
const EXECUTOR_LIFETIME: Duration = Duration::from_secs(600);
const PROGRESS_PERIOD: Duration = Duration::from_secs(10);

pub async fn run(args: ReExecuteArgs, runtime: reth_tasks::Runtime) -> eyre::Result<()> {
    let HybridEnvironment {
        provider_factory, ..
    } = HybridEnvironment::init(&args.env, Access::ReadOnly, runtime)?;
    let best = provider_factory
        .database_provider_ro()?
        .best_block_number()?;
    let last = match args.to {
        Some(to) if to > best => {
            warn!(target: "reth::cli", requested = to, best_block = best, "Requested --to is beyond the chain head; clamping to the head");
            best
        }
        Some(to) => to,
        None => best,
    };
    let first = args.from.max(1);
    eyre::ensure!(
        first <= last,
        "--from ({first}) is beyond --to ({last}): nothing to re-execute"
    );
    eyre::ensure!(
        args.blocks_per_chunk > 0,
        "--blocks-per-chunk must be at least 1"
    );
    let tasks = args
        .num_tasks
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(4, |n| n.get() as u64));
    let plan = Plan {
        last,
        chunk: args.blocks_per_chunk,
        skip_invalid: args.skip_invalid_blocks,
        next: AtomicU64::new(first),
        cancelled: AtomicBool::new(false),
    };
    let started = Instant::now();
    let (events, received) = mpsc::channel();
    let (executed, gas, invalid) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..tasks.max(1))
            .map(|_| {
                let events = events.clone();
                let (factory, plan) = (&provider_factory, &plan);
                scope.spawn(move || {
                    let result = work(factory, plan, &events);
                    if result.is_err() {
                        plan.cancelled.store(true, Ordering::Relaxed);
                    }
                    result
                })
            })
            .collect();
        drop(events);
        let totals = report_progress(&received, last + 1 - first);
        let mut failure = None;
        for worker in workers {
            match worker.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failure = failure.or(Some(e)),
                Err(_) => failure = failure.or(Some(eyre::eyre!("a re-execution worker panicked"))),
            }
        }
        match failure {
            Some(e) => Err(e.wrap_err("Re-execution failed")),
            None => Ok(totals),
        }
    })?;
    let throughput = format_gas_throughput(gas, started.elapsed());
    if invalid.is_empty() {
        info!(target: "reth::cli", start_block = first, end_block = last, total_executed_blocks = executed, %throughput, "Re-executed successfully");
    } else {
        info!(target: "reth::cli", start_block = first, end_block = last, total_executed_blocks = executed, invalid_block_count = invalid.len(), ?invalid, %throughput, "Re-executed with invalid blocks");
    }
    Ok(())
}

/// The work the workers share: chunks are taken from `next` until past `last`.
struct Plan {
    last: u64,
    chunk: u64,
    skip_invalid: bool,
    next: AtomicU64,
    cancelled: AtomicBool,
}

/// Logs progress every [`PROGRESS_PERIOD`] until every worker is gone; returns the blocks and
/// gas executed and the invalid blocks reported.
fn report_progress(events: &mpsc::Receiver<Event>, blocks: u64) -> (u64, u64, Vec<(u64, B256)>) {
    let (mut executed, mut gas, mut invalid) = (0u64, 0u64, Vec::new());
    let (mut logged_at, mut logged_gas, mut logged_blocks) = (Instant::now(), 0u64, 0u64);
    loop {
        match events.recv_timeout(PROGRESS_PERIOD.saturating_sub(logged_at.elapsed())) {
            Ok(Event::Executed { gas: used }) => {
                executed += 1;
                gas += used;
            }
            Ok(Event::Invalid {
                number,
                hash,
                error,
            }) => {
                error!(target: "reth::cli", number, %hash, %error, "Invalid block");
                invalid.push((number, hash));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if logged_at.elapsed() >= PROGRESS_PERIOD {
            if executed > logged_blocks {
                info!(
                    target: "reth::cli",
                    throughput = %format_gas_throughput(gas - logged_gas, logged_at.elapsed()),
                    progress = format!("{:.2}%", 100.0 * executed as f64 / blocks as f64),
                    "Executed {} blocks",
                    executed - logged_blocks
                );
            }
            (logged_at, logged_gas, logged_blocks) = (Instant::now(), gas, executed);
        }
    }
    invalid.sort_unstable();
    (executed, gas, invalid)
}

/// One worker: takes chunks and re-executes them on one read-only view of the datadir.
fn work(factory: &HybridFactory, plan: &Plan, events: &mpsc::Sender<Event>) -> eyre::Result<()> {
    let (evm, consensus) = components(factory);
    // One view for the whole run: reth's long-read timeout must not end it.
    let provider = factory
        .database_provider_ro()?
        .disable_long_read_transaction_safety();
    // The state after `block`, as the next block's execution starts from it.
    let state_after = |block: u64| -> eyre::Result<_> {
        Ok(StateProviderDatabase::new(
            provider.history_by_block_number(block)?,
        ))
    };
    while !plan.cancelled.load(Ordering::Relaxed) {
        let start = plan.next.fetch_add(plan.chunk, Ordering::Relaxed);
        if start > plan.last {
            break;
        }
        let end = (start + plan.chunk - 1).min(plan.last);
        let mut executor = evm.batch_executor(state_after(start - 1)?);
        let (mut created, mut unverified_from) = (Instant::now(), start);
        for number in start..=end {
            if plan.cancelled.load(Ordering::Relaxed) {
                return Ok(());
            }
            let block = factory
                .recovered_block(number.into(), TransactionVariant::NoHash)?
                .ok_or_else(|| eyre::eyre!("block {number} is not in the datadir"))?;
            let checked = match executor.execute_one(&block) {
                Err(e) => Err(eyre::Report::new(e)),
                Ok(result) => FullConsensus::<Primitives>::validate_block_post_execution(
                    consensus.as_ref(),
                    &block,
                    &result,
                    None,
                    None,
                )
                .map_err(|e| {
                    let stored = factory
                        .receipts_by_block(number.into())
                        .ok()
                        .flatten()
                        .unwrap_or_default();
                    let first_difference = result
                        .receipts
                        .iter()
                        .zip(&stored)
                        .position(|(got, want)| got != want);
                    match first_difference {
                        Some(i) => eyre::eyre!(
                            "{e}; the first receipt that differs is transaction {i} ({}): \
                                     gas used {} (stored {}), re-executed {:?}, stored {:?}",
                            BlockBody::transactions(block.body())[i].tx_hash(),
                            receipt_gas(&result.receipts, i),
                            receipt_gas(&stored, i),
                            result.receipts[i],
                            stored[i]
                        ),
                        None => eyre::Report::new(e),
                    }
                }),
            };
            match checked {
                Ok(()) => {
                    let _ = events.send(Event::Executed {
                        gas: block.gas_used(),
                    });
                }
                Err(e) if plan.skip_invalid => {
                    // What the blocks before it changed is verified; the next block starts from
                    // the stored state after the invalid one.
                    let previous =
                        std::mem::replace(&mut executor, evm.batch_executor(state_after(number)?));
                    if number > unverified_from {
                        verify_changesets(
                            &provider,
                            &previous.into_state().take_bundle(),
                            unverified_from..=number - 1,
                        )?;
                    }
                    (created, unverified_from) = (Instant::now(), number + 1);
                    let _ = events.send(Event::Invalid {
                        number,
                        hash: block.hash(),
                        error: format!("{e:#}"),
                    });
                    continue;
                }
                Err(e) => {
                    return Err(e.wrap_err(format!("block {number} ({})", block.hash())));
                }
            }
            if executor.size_hint() > EXECUTOR_SIZE_LIMIT || created.elapsed() > EXECUTOR_LIFETIME {
                let previous =
                    std::mem::replace(&mut executor, evm.batch_executor(state_after(number)?));
                verify_changesets(
                    &provider,
                    &previous.into_state().take_bundle(),
                    unverified_from..=number,
                )?;
                (created, unverified_from) = (Instant::now(), number + 1);
            }
        }
        if end >= unverified_from {
            verify_changesets(
                &provider,
                &executor.into_state().take_bundle(),
                unverified_from..=end,
            )?;
        }
    }
    Ok(())
}

/// Gas transaction `i` used, from the receipts' cumulative figures.
fn receipt_gas<R: TxReceipt>(receipts: &[R], i: usize) -> u64 {
    let before = i
        .checked_sub(1)
        .map_or(0, |p| receipts[p].cumulative_gas_used());
    receipts[i].cumulative_gas_used() - before
}

/// Checks the reverts of `blocks`, the first blocks the bundle holds (a block that failed its
/// post-execution checks may follow them), against the stored changesets: each account's prior
/// state and each storage slot's prior value must be the stored one, and nothing may be in a
/// changeset that the execution did not change. A wiped storage (a destroyed account) may have
/// stored slots its reverts do not list.
fn verify_changesets<P>(
    provider: &P,
    bundle: &BundleState,
    blocks: RangeInclusive<u64>,
) -> eyre::Result<()>
where
    P: ChangeSetReader + StorageChangeSetReader,
{
    let count = blocks.clone().count();
    let reverts = bundle.reverts.get(..count).ok_or_else(|| {
        eyre::eyre!(
            "the execution of blocks {blocks:?} recorded the changes of {} blocks",
            bundle.reverts.len()
        )
    })?;
    for (block, reverts) in blocks.zip(reverts) {
        let mut accounts: HashMap<Address, Option<Account>> = provider
            .account_block_changeset(block)?
            .into_iter()
            .map(|change| (change.address, change.info))
            .collect();
        let mut storage: HashMap<Address, HashMap<B256, U256>> = HashMap::new();
        for (key, entry) in provider.storage_changeset(block)? {
            storage
                .entry(key.address())
                .or_default()
                .insert(entry.key, entry.value);
        }
        for (address, revert) in reverts {
            let stored = accounts.remove(address);
            match (&revert.account, stored) {
                (AccountInfoRevert::DoNothing, None) => {}
                (AccountInfoRevert::DeleteIt, Some(None)) => {}
                (AccountInfoRevert::RevertTo(info), Some(Some(stored)))
                    if Account::from(info) == stored => {}
                (expected, stored) => eyre::bail!(
                    "block {block}: account {address}: the execution reverts it to \
                     {expected:?}, the account changeset holds {stored:?}"
                ),
            }
            let mut slots = storage.remove(address).unwrap_or_default();
            for (slot, previous) in &revert.storage {
                let key = B256::from(*slot);
                let stored = slots.remove(&key);
                match (previous, stored) {
                    // Re-created in the block after a self-destruct: revm never read the slot.
                    (RevertToSlot::Destroyed, _) => {}
                    (RevertToSlot::Some(value), Some(stored)) if *value == stored => {}
                    (RevertToSlot::Some(_), None) if revert.wipe_storage => {}
                    (previous, stored) => eyre::bail!(
                        "block {block}: {address} slot {key}: the execution reverts it to \
                         {previous:?}, the storage changeset holds {stored:?}"
                    ),
                }
            }
            eyre::ensure!(
                slots.is_empty() || revert.wipe_storage,
                "block {block}: {address} has {} storage changeset entries the execution did not \
                 change",
                slots.len()
            );
        }
        if let Some(address) = accounts.keys().next() {
            eyre::bail!(
                "block {block}: account {address} is in the account changeset, but the \
                 execution did not change it"
            );
        }
    }
    Ok(())
}
