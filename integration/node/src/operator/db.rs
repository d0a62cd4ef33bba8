//! `db`: reth's inspection commands on a hybrid datadir. Every read goes through the hybrid's
//! router, so a table prints the same rows (and `checksum` the same figure) whether it lives
//! in MDBX or in RocksDB: a hybrid datadir's checksums diff cleanly against a stock one's. The
//! one table that differs is `Metadata`, which also holds reth-hybrid's own rows
//! (`reth_hybrid.*`): `list`, `get` and `stats` show them, `checksum` leaves them out.

use super::{
    db_list_tui, db_meta, db_state,
    env::{Access, HybridEnvironment, HybridFactory},
};
use alloy_primitives::map::foldhash::fast::FixedState;
use clap::Subcommand;
use comfy_table::{Cell, Row, Table as ComfyTable};
use eyre::WrapErr;
use human_bytes::human_bytes;
use reth_db::static_file::iter_static_files;
use reth_db_api::{
    RawKey, RawTable, TableViewer, Tables,
    cursor::DbCursorRO,
    database::Database,
    table::{DupSort, Table},
    tables,
    transaction::{DbTx, DbTxMut},
};
use reth_db_common::{DbTool, ListFilter};
use reth_hybrid_api::EngineKind;
use reth_hybrid_hybrid::CONTROL_KEY_PREFIX;
use reth_hybrid_rocksdb::HYBRID_ROCKSDB_DIR;
use reth_provider::{DBProvider, StaticFileProviderFactory};
use reth_static_file_types::StaticFileSegment;
use std::{
    hash::{BuildHasher, Hasher},
    ops::Bound,
    time::{Duration, Instant},
};
use tracing::info;

type Env = super::Env;

#[derive(Debug, clap::Args)]
pub struct DbArgs {
    #[command(flatten)]
    env: Env,
    #[command(subcommand)]
    command: DbCommand,
}

impl DbArgs {
    pub fn env(&self) -> &Env {
        &self.env
    }
}

#[derive(Debug, Subcommand)]
enum DbCommand {
    /// Every table with the engine it lives in, its entries and its size in each engine.
    Stats {
        /// Count RocksDB rows exactly (a scan) instead of RocksDB's estimate.
        #[arg(long)]
        exact: bool,
        /// First a checksum of each table, as reth's `db stats --checksum` prints it.
        #[arg(long)]
        checksum: bool,
    },
    /// Lists the contents of a table: an interactive viewer on a terminal, JSON with `--json`.
    List(ListArgs),
    /// Calculates the content checksum of a table, as reth's `db checksum mdbx` does.
    Checksum {
        #[command(subcommand)]
        source: ChecksumSource,
    },
    /// Gets the content of a table for the given key.
    Get {
        #[command(subcommand)]
        source: GetSource,
    },
    /// Deletes every entry of a table (in the engine that holds it) or a static-file segment.
    Clear {
        #[command(subcommand)]
        target: ClearTarget,
    },
    /// View or set stage checkpoints.
    #[command(subcommand)]
    StageCheckpoints(db_meta::StageCheckpoints),
    /// View or set prune checkpoints.
    #[command(subcommand)]
    PruneCheckpoints(db_meta::PruneCheckpoints),
    /// View the storage settings (a hybrid datadir is reth's v1 layout).
    #[command(subcommand)]
    Settings(db_meta::Settings),
    /// Reads a static file segment's header.
    #[command(subcommand)]
    StaticFileHeader(db_meta::StaticFileHeader),
    /// An account's storage slot count and estimated size.
    AccountStorage(db_state::AccountStorageArgs),
    /// An account and its storage, now or at a past block (read through the history indices).
    State(db_state::StateArgs),
    /// Verifies the trie against the hashed state and repairs what differs (reth's command).
    RepairTrie {
        /// Only show inconsistencies without making any repairs.
        #[arg(long)]
        dry_run: bool,
        /// Serve Prometheus metrics at ADDR:PORT.
        #[arg(long, value_name = "ADDR:PORT")]
        metrics: Option<String>,
    },
    /// Deletes the database, reth-hybrid's RocksDB, the static files and the ExEx WAL.
    Drop {
        /// Do not ask for confirmation.
        #[arg(short, long)]
        force: bool,
    },
    /// Copies the database, both engines at one commit: reth's MDBX copy and reth-hybrid's
    /// RocksDB, with reth's storage lock held so no node commits in between.
    Copy(super::db_copy::CopyArgs),
    /// Every table against a second datadir (hybrid or stock MDBX), with reth's report files.
    Diff(super::db_diff::DiffArgs),
    /// Turns a reth storage-v2 datadir into a hybrid one (or a stock v1 one) without a resync:
    /// verified, resumable, and the v2 datadir stays usable until the switch.
    AdoptV2(super::adopt::AdoptArgs),
    /// Returns the full database path.
    Path,
    /// reth's other `db` subcommands, refused with the reason.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

#[derive(Debug, Subcommand)]
enum ChecksumSource {
    /// A table by reth's name, read wherever the hybrid keeps it (named `mdbx` as in reth so
    /// the same command line works on both layouts).
    Mdbx {
        table: Tables,
        /// The start of the range to checksum.
        #[arg(long, value_parser = maybe_json)]
        start_key: Option<String>,
        /// The end of the range to checksum.
        #[arg(long, value_parser = maybe_json)]
        end_key: Option<String>,
        /// The maximum number of records to hash.
        #[arg(long)]
        limit: Option<usize>,
    },
}

#[derive(Debug, Subcommand)]
enum ClearTarget {
    /// Deletes all rows of a table by reth's name, wherever the hybrid keeps it.
    Mdbx { table: Tables },
    /// Deletes all files of a static-file segment.
    StaticFile { segment: StaticFileSegment },
}

#[derive(Debug, Subcommand)]
enum GetSource {
    /// A table by reth's name, read wherever the hybrid keeps it.
    Mdbx {
        table: Tables,
        /// The key, as JSON (a bare string is taken as a JSON string).
        #[arg(value_parser = maybe_json)]
        key: String,
        /// The subkey of a dupsort table, as JSON.
        #[arg(value_parser = maybe_json)]
        subkey: Option<String>,
        /// Print the stored value's bytes instead of its decoded form.
        #[arg(long)]
        raw: bool,
    },
    /// A static-file segment's row (reth's command: static files are the same in both layouts).
    StaticFile {
        segment: StaticFileSegment,
        /// The key (a block or transaction number; `{"block_number":..,"address":..}` for a
        /// changeset).
        key: String,
        /// The subkey, for example the address (or storage slot) in a changeset.
        subkey: Option<String>,
        /// Print the stored value's bytes instead of its decoded form.
        #[arg(long)]
        raw: bool,
    },
}

/// reth's own `db` subcommands that are generic over the provider factory: run unchanged on the
/// hybrid's, so their reads and writes go through the router (and a write is one hybrid commit).
#[derive(Debug, clap::Parser)]
#[command(no_binary_name = true)]
struct RethDb {
    #[command(subcommand)]
    command: reth_cli_commands::db::Subcommands,
}

impl RethDb {
    /// reth's subcommand from the words of its command line (ours parsed them already).
    fn parse(words: &[&str]) -> eyre::Result<reth_cli_commands::db::Subcommands> {
        use clap::Parser;
        Ok(Self::try_parse_from(words)
            .wrap_err_with(|| {
                format!(
                    "reth's `db {}` does not take these arguments",
                    words.join(" ")
                )
            })?
            .command)
    }
}

#[derive(Debug, clap::Args)]
struct ListArgs {
    table: Tables,
    /// Skip first N entries.
    #[arg(long, short, default_value_t = 0)]
    skip: usize,
    /// Reverse the order of the entries (read the last ones).
    #[arg(long, short)]
    reverse: bool,
    /// How many items to take (at least 1).
    #[arg(long, short, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    len: usize,
    /// Search keys and values: `0x` + hex for bytes, text otherwise.
    #[arg(long)]
    search: Option<String>,
    /// Minimum size of row in bytes.
    #[arg(long, default_value_t = 0)]
    min_row_size: usize,
    /// Minimum size of key in bytes.
    #[arg(long, default_value_t = 0)]
    min_key_size: usize,
    /// Minimum size of value in bytes.
    #[arg(long, default_value_t = 0)]
    min_value_size: usize,
    /// Returns the number of rows found.
    #[arg(long, short)]
    count: bool,
    /// Print the rows as JSON instead of the interactive viewer (which needs a terminal; piped,
    /// the output is JSON anyway).
    #[arg(long, short)]
    json: bool,
}

pub async fn run(args: DbArgs, runtime: reth_tasks::Runtime) -> eyre::Result<()> {
    // First: its words (flags included) are not parsed, so --datadir is unknown here.
    if let DbCommand::Other(words) = &args.command {
        eyre::bail!(
            "`db {}` is not available on a hybrid datadir: reth's implementation reads and \
             writes MDBX alone and would miss or orphan the RocksDB tables (AccountsHistory, \
             StoragesHistory, TransactionHashNumbers). Here: `db stats|list|get|checksum|clear|\
             copy|diff|adopt-v2|repair-trie|stage-checkpoints|prune-checkpoints|settings|\
             static-file-header|account-storage|state|drop|path`, or \
             `reth-hybrid stats|verify`; for the rest move the tables back with `reth-hybrid \
             migrate --datadir D --to mdbx` and use the stock build",
            words.first().map(String::as_str).unwrap_or("")
        );
    }
    let data_dir = args
        .env
        .datadir
        .clone()
        .resolve_datadir(args.env.chain.chain());
    eyre::ensure!(
        data_dir.data_dir().is_dir(),
        "Datadir does not exist: {:?}",
        data_dir.data_dir()
    );
    let (db_dir, rocks_dir) = (data_dir.db(), data_dir.data_dir().join(HYBRID_ROCKSDB_DIR));
    if let DbCommand::Drop { force } = args.command {
        // A drop removes MDBX first; one that was interrupted after it is finished here, as
        // there is nothing left to protect (RocksDB's rows mean nothing without MDBX).
        let interrupted = !db_dir.is_dir() && rocks_dir.exists();
        eyre::ensure!(
            db_dir.is_dir() || interrupted,
            "Database does not exist: {:?}",
            db_dir
        );
        if !force && !db_state::confirm_drop(data_dir.data_dir())? {
            return Ok(());
        }
        if !interrupted {
            // The read-only open's refusals, which change nothing: a datadir a live process
            // holds, one with a commit in flight, one that is not a hybrid datadir.
            drop(HybridEnvironment::init(
                &args.env,
                Access::ReadOnly,
                runtime,
            )?);
        }
        return db_state::drop_datadir(
            &db_dir,
            &rocks_dir,
            &data_dir.static_files(),
            &data_dir.exex_wal(),
        );
    }
    // As reth: every other `db` command needs the database (a mistyped --datadir would
    // otherwise become a fresh datadir under a read-write command).
    eyre::ensure!(db_dir.is_dir(), "Database does not exist: {:?}", db_dir);
    if matches!(args.command, DbCommand::Path) {
        println!("{}", db_dir.display());
        return Ok(());
    }
    if let DbCommand::Copy(copy) = args.command {
        return super::db_copy::run(copy, &args.env, &data_dir, runtime);
    }
    // Before the hybrid's environment, which refuses a v2 datadir.
    if let DbCommand::AdoptV2(adopt) = args.command {
        return super::adopt::run(adopt, &data_dir);
    }
    let access = match &args.command {
        DbCommand::Clear { .. } => Access::ReadWrite,
        DbCommand::RepairTrie { dry_run: false, .. } => Access::ReadWrite,
        DbCommand::StageCheckpoints(command) => command.access(),
        DbCommand::PruneCheckpoints(command) => command.access(),
        DbCommand::Settings(command) => command.access(),
        _ => Access::ReadOnly,
    };
    let env = HybridEnvironment::init(&args.env, access, runtime.clone())?;
    let factory = env.provider_factory;
    match args.command {
        DbCommand::AccountStorage(command) => db_state::account_storage(command, &factory),
        DbCommand::State(command) => db_state::state(command, &factory),
        DbCommand::StageCheckpoints(command) => command.run(&factory),
        DbCommand::PruneCheckpoints(command) => command.run(&factory),
        DbCommand::Settings(command) => command.run(&factory),
        DbCommand::StaticFileHeader(command) => command.run(&factory),
        DbCommand::Clear {
            target: ClearTarget::Mdbx { table },
        } => table.view(&ClearViewer { factory: &factory }),
        DbCommand::Clear {
            target: ClearTarget::StaticFile { segment },
        } => {
            let static_files = factory.static_file_provider();
            let jars = iter_static_files(static_files.directory())?;
            for (range, _) in jars.get(segment).into_iter().flatten() {
                static_files.delete_jar(segment, range.start())?;
            }
            Ok(())
        }
        DbCommand::Stats { exact, checksum } => {
            if checksum {
                println!("{}\n\n", checksum_report(&factory)?);
            }
            stats(&factory, exact)
        }
        DbCommand::List(list) => list.table.view(&ListViewer {
            tool: DbTool::new(factory)?,
            args: &list,
        }),
        DbCommand::Checksum {
            source:
                ChecksumSource::Mdbx {
                    table,
                    start_key,
                    end_key,
                    limit,
                },
        } => table
            .view(&ChecksumViewer {
                factory: &factory,
                start_key,
                end_key,
                limit,
            })
            .map(drop),
        DbCommand::RepairTrie { dry_run, metrics } => {
            let mut words = vec!["repair-trie"];
            words.extend(dry_run.then_some("--dry-run"));
            if let Some(addr) = &metrics {
                words.extend(["--metrics", addr.as_str()]);
            }
            let reth_cli_commands::db::Subcommands::RepairTrie(command) = RethDb::parse(&words)?
            else {
                unreachable!("parsed as repair-trie")
            };
            command.execute(&DbTool::new(factory)?, runtime, &data_dir)
        }
        DbCommand::Get {
            source:
                GetSource::StaticFile {
                    segment,
                    key,
                    subkey,
                    raw,
                },
        } => {
            let mut words = vec!["get", "static-file", segment.as_str(), key.as_str()];
            words.extend(subkey.as_deref());
            words.extend(raw.then_some("--raw"));
            let reth_cli_commands::db::Subcommands::Get(command) = RethDb::parse(&words)? else {
                unreachable!("parsed as get")
            };
            command.execute(&DbTool::new(factory)?)
        }
        DbCommand::Get {
            source:
                GetSource::Mdbx {
                    table,
                    key,
                    subkey,
                    raw,
                },
        } => table.view(&GetViewer {
            tool: DbTool::new(factory)?,
            key,
            subkey,
            raw,
        }),
        DbCommand::Diff(diff) => super::db_diff::run(diff, &factory),
        DbCommand::Path
        | DbCommand::Drop { .. }
        | DbCommand::Copy(_)
        | DbCommand::AdoptV2(_)
        | DbCommand::Other(_) => {
            unreachable!("answered above")
        }
    }
}

/// `db clear mdbx`: one hybrid commit, so a RocksDB table is emptied as an MDBX one is. In
/// `Metadata` only reth's rows go: reth-hybrid's own (`reth_hybrid.*`: the layout, the commit
/// sequences) stay, or the datadir would no longer open as the hybrid it is.
struct ClearViewer<'a> {
    factory: &'a HybridFactory,
}

impl TableViewer<()> for ClearViewer<'_> {
    type Error = eyre::Report;

    fn view<T: Table>(&self) -> eyre::Result<()> {
        let tx = self.factory.db_ref().tx_mut()?;
        if T::NAME == Tables::Metadata.name() {
            let mut cursor = tx.cursor_read::<tables::Metadata>()?;
            let keys: Vec<String> = cursor
                .walk(None)?
                .map(|row| row.map(|(key, _)| key))
                .filter(|key| {
                    key.as_ref()
                        .map_or(true, |key| !key.starts_with(CONTROL_KEY_PREFIX))
                })
                .collect::<Result<_, _>>()?;
            drop(cursor);
            for key in &keys {
                tx.delete::<tables::Metadata>(key.clone(), None)?;
            }
            info!(
                "Cleared {} of reth's rows in Metadata; reth-hybrid's own rows stay.",
                keys.len()
            );
        } else {
            tx.clear::<T>()?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// reth's command line takes keys as JSON and bare words as JSON strings.
fn maybe_json(value: &str) -> eyre::Result<String> {
    match serde_json::from_str::<serde::de::IgnoredAny>(value) {
        Ok(_) => Ok(value.to_string()),
        Err(_) => Ok(serde_json::to_string(value)?),
    }
}

fn table_key<T: Table>(key: &str) -> eyre::Result<T::Key> {
    serde_json::from_str(key).wrap_err_with(|| format!("{key} is not a key of table {}", T::NAME))
}

/// The hasher and seed of reth's `db checksum`, so the two commands print the same figure.
fn checksum_hasher() -> impl Hasher {
    FixedState::with_seed(u64::from_be_bytes(*b"RETHRETH")).build_hasher()
}

struct ChecksumViewer<'a> {
    factory: &'a HybridFactory,
    start_key: Option<String>,
    end_key: Option<String>,
    limit: Option<usize>,
}

impl TableViewer<(u64, Duration)> for ChecksumViewer<'_> {
    type Error = eyre::Report;

    fn view<T: Table>(&self) -> eyre::Result<(u64, Duration)> {
        let provider = self
            .factory
            .provider()?
            .disable_long_read_transaction_safety();
        let tx = provider.tx_ref();
        let bound = |key: &Option<String>, inclusive: fn(RawKey<T::Key>) -> Bound<_>| {
            key.as_deref()
                .map(|k| table_key::<T>(k).map(|k| inclusive(RawKey::new(k))))
                .transpose()
                .map(|b| b.unwrap_or(Bound::Unbounded))
        };
        let range = (
            bound(&self.start_key, Bound::Included)?,
            bound(&self.end_key, Bound::Included)?,
        );
        info!(
            "Start computing checksum, start={:?}, end={:?}, limit={:?}",
            self.start_key, self.end_key, self.limit
        );
        let started = Instant::now();
        let mut cursor = tx.cursor_read::<RawTable<T>>()?;
        let mut hasher = checksum_hasher();
        let limit = self.limit.unwrap_or(usize::MAX);
        let mut total = 0usize;
        // reth-hybrid's own rows in `Metadata` (layout, commit sequences) are not reth's: left
        // out, so the figure is the one a stock datadir with the same data prints.
        let (mut control_rows, is_metadata) = (0usize, T::NAME == Tables::Metadata.name());
        for entry in cursor.walk_range(range)? {
            let (key, value) = entry?;
            if is_metadata && key.raw_key().starts_with(CONTROL_KEY_PREFIX.as_bytes()) {
                control_rows += 1;
                continue;
            }
            // Two writes, key then value: foldhash mixes in each write's length.
            hasher.write(key.raw_key());
            hasher.write(value.raw_value());
            total += 1;
            // As reth: the limit is checked after a row, so `--limit 0` hashes one.
            if total >= limit {
                break;
            }
        }
        info!("Hashed {total} entries.");
        if control_rows > 0 {
            info!("Left out {control_rows} reth-hybrid control rows (keys {CONTROL_KEY_PREFIX}*).");
        }
        let (checksum, elapsed) = (hasher.finish(), started.elapsed());
        info!(
            "Checksum for table `{}`: {:#x} (elapsed: {:?})",
            T::NAME,
            checksum,
            elapsed
        );
        Ok((checksum, elapsed))
    }
}

struct GetViewer {
    tool: DbTool<super::env::HybridTypes>,
    key: String,
    subkey: Option<String>,
    raw: bool,
}

impl GetViewer {
    fn print<V: serde::Serialize>(
        &self,
        value: Option<V>,
        raw: Option<Vec<u8>>,
    ) -> eyre::Result<()> {
        match (value, raw) {
            (_, Some(bytes)) if self.raw => {
                println!("{}", alloy_primitives::hex::encode_prefixed(bytes))
            }
            (Some(value), _) => println!("{}", serde_json::to_string_pretty(&value)?),
            _ => println!("No content for the given table key."),
        }
        Ok(())
    }
}

impl TableViewer<()> for GetViewer {
    type Error = eyre::Report;

    fn view<T: Table>(&self) -> eyre::Result<()> {
        // reth reads a second key of a plain table as the end of a range to list.
        eyre::ensure!(
            self.subkey.is_none() || T::DUPSORT,
            "{} is not a dupsort table: a second key (reth's range end) is not supported here; \
             use `db list {}`",
            T::NAME,
            T::NAME
        );
        let key = table_key::<T>(&self.key)?;
        let raw = match self.raw {
            true => self.tool.provider_factory.db_ref().view(|tx| {
                tx.get::<RawTable<T>>(RawKey::new(key.clone()))
                    .map(|v| v.map(|v| v.raw_value().to_vec()))
            })??,
            false => None,
        };
        self.print(self.tool.get::<T>(key)?, raw)
    }

    fn view_dupsort<T: DupSort>(&self) -> eyre::Result<()>
    where
        T::Value: reth_primitives_traits::ValueWithSubKey<SubKey = T::SubKey>,
    {
        let Some(subkey) = &self.subkey else {
            return self.view::<T>();
        };
        let key = table_key::<T>(&self.key)?;
        let subkey: T::SubKey = serde_json::from_str(subkey)
            .wrap_err_with(|| format!("{subkey} is not a subkey of table {}", T::NAME))?;
        eyre::ensure!(
            !self.raw,
            "--raw reads a key's first value; leave out the subkey"
        );
        self.print(self.tool.get_dup::<T>(key, subkey)?, None)
    }
}

struct ListViewer<'a> {
    tool: DbTool<super::env::HybridTypes>,
    args: &'a ListArgs,
}

impl TableViewer<()> for ListViewer<'_> {
    type Error = eyre::Report;

    fn view<T: Table>(&self) -> eyre::Result<()> {
        let search = match self.args.search.as_deref() {
            Some(s) => match s.strip_prefix("0x") {
                Some(hex) => alloy_primitives::hex::decode(hex)
                    .wrap_err("Invalid hex content after 0x prefix in --search")?,
                None => s.as_bytes().to_vec(),
            },
            None => Vec::new(),
        };
        let filter = ListFilter {
            skip: self.args.skip,
            len: self.args.len,
            search,
            min_row_size: self.args.min_row_size,
            min_key_size: self.args.min_key_size,
            min_value_size: self.args.min_value_size,
            reverse: self.args.reverse,
            only_count: self.args.count,
        };
        if !self.args.json && !self.args.count && on_a_terminal() {
            return self.browse::<T>(filter);
        }
        let (rows, hits) = self.tool.list::<T>(&filter)?;
        match self.args.count {
            true => println!("{hits} entries found."),
            false => println!("{}", serde_json::to_string_pretty(&rows)?),
        }
        Ok(())
    }
}

impl ListViewer<'_> {
    /// The interactive viewer, as reth's `db list` without `--json`: pages of `--len` rows from
    /// `--skip` on, each read through the router when shown.
    fn browse<T: Table>(&self, filter: ListFilter) -> eyre::Result<()> {
        // MDBX counts a table in O(1); a RocksDB table would be scanned whole: its estimate.
        let hybrid = self.tool.provider_factory.db_ref().engine();
        let table: reth_hybrid_api::Tables = T::NAME
            .parse()
            .map_err(|_| eyre::eyre!("reth table {} is not in reth-hybrid's catalogue", T::NAME))?;
        let (total, estimated) = match hybrid.layout().engine_of(table) {
            EngineKind::RocksDb => (
                usize::try_from(hybrid.follower().table_size(table).estimated_rows)?,
                true,
            ),
            EngineKind::Mdbx => (
                self.tool
                    .provider_factory
                    .db_ref()
                    .view(|tx| tx.entries::<T>())??,
                false,
            ),
        };
        eyre::ensure!(
            estimated || self.args.skip < total.max(1),
            "Start index {} is greater than the final entry index ({}) in the table {}",
            self.args.skip,
            total.saturating_sub(1),
            T::NAME
        );
        let filter = std::cell::RefCell::new(filter);
        let pager =
            db_list_tui::Pager::new(T::NAME, total, estimated, self.args.skip, self.args.len);
        db_list_tui::run(pager, |skip, len| {
            filter.borrow_mut().update_page(skip, len);
            let (rows, _) = self.tool.list::<T>(&filter.borrow())?;
            rows.into_iter()
                .map(|(key, value)| {
                    Ok(db_list_tui::ShownRow {
                        key: serde_json::to_string(&key)?,
                        value: serde_json::to_string_pretty(&value)?,
                    })
                })
                .collect()
        })
    }
}

/// The viewer needs a terminal on both ends; piped, `db list` prints JSON instead.
fn on_a_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Every table's checksum in reth's `db stats --checksum` layout, so the two diff cleanly.
fn checksum_report(factory: &HybridFactory) -> eyre::Result<ComfyTable> {
    let mut out = ComfyTable::new();
    out.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    out.set_header(["Table", "Checksum", "Elapsed"]);
    let mut total = Duration::default();
    for &table in Tables::ALL {
        let (checksum, elapsed) = table.view(&ChecksumViewer {
            factory,
            start_key: None,
            end_key: None,
            limit: None,
        })?;
        total += elapsed;
        let mut row = Row::new();
        row.add_cell(Cell::new(table))
            .add_cell(Cell::new(format!("{checksum:x}")))
            .add_cell(Cell::new(format!("{elapsed:?}")));
        out.add_row(row);
    }
    let mut row = Row::new();
    row.add_cell(Cell::new("Total elapsed"))
        .add_cell(Cell::new(""))
        .add_cell(Cell::new(format!("{total:?}")));
    out.add_row(row);
    Ok(out)
}

/// Per table: the engine the layout routes it to, then its entries and bytes in each engine
/// (a table lives in one; the other's figures show it empty).
fn stats(factory: &HybridFactory, exact: bool) -> eyre::Result<()> {
    let hybrid = factory.db_ref().engine();
    let env = hybrid.primary().env();
    let rocks = hybrid.follower();
    let rocks_tx = match exact {
        true => Some(reth_hybrid_api::raw::RawEngine::begin_ro(rocks)?),
        false => None,
    };
    let mut out = ComfyTable::new();
    out.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    out.set_header([
        "Table Name",
        "Engine",
        "MDBX Entries",
        "MDBX Size",
        "RocksDB Entries",
        "RocksDB Size",
    ]);
    let (mut mdbx_total, mut rocks_total) = (0u64, 0u64);
    env.view(|tx| -> eyre::Result<()> {
        let mut names: Vec<_> = Tables::ALL.iter().map(|t| t.name()).collect();
        names.sort_unstable();
        for name in names {
            let dbi = tx
                .inner()
                .open_db(Some(name))
                .wrap_err("Could not open db.")?;
            let stat = tx
                .inner()
                .db_stat(dbi.dbi())
                .wrap_err_with(|| format!("Could not find table: {name}"))?;
            let mdbx_bytes = stat.page_size() as u64
                * (stat.leaf_pages() + stat.branch_pages() + stat.overflow_pages()) as u64;
            let table: reth_hybrid_api::Tables = name
                .parse()
                .map_err(|_| eyre::eyre!("reth table {name} is not in reth-hybrid's catalogue"))?;
            let size = rocks.table_size(table);
            let rocks_rows = match &rocks_tx {
                Some(rtx) => format!("{}", reth_hybrid_api::raw::RawTx::entries(rtx, table)?),
                None => format!("~{}", size.estimated_rows),
            };
            let rocks_bytes = size.sst_bytes + size.memtable_bytes;
            mdbx_total += mdbx_bytes;
            rocks_total += rocks_bytes;
            let engine = match hybrid.layout().engine_of(table) {
                EngineKind::Mdbx => "mdbx",
                EngineKind::RocksDb => "rocksdb",
            };
            let mut row = Row::new();
            row.add_cell(Cell::new(name))
                .add_cell(Cell::new(engine))
                .add_cell(Cell::new(stat.entries()))
                .add_cell(Cell::new(human_bytes(mdbx_bytes as f64)))
                .add_cell(Cell::new(rocks_rows))
                .add_cell(Cell::new(human_bytes(rocks_bytes as f64)));
            out.add_row(row);
        }
        Ok(())
    })??;
    let mut row = Row::new();
    row.add_cell(Cell::new("Tables"))
        .add_cell(Cell::new(""))
        .add_cell(Cell::new(""))
        .add_cell(Cell::new(human_bytes(mdbx_total as f64)))
        .add_cell(Cell::new(""))
        .add_cell(Cell::new(human_bytes(rocks_total as f64)));
    out.add_row(row);
    println!("{out}");
    Ok(())
}
