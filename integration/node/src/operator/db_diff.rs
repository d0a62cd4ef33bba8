//! `db diff`: every table of this hybrid datadir against a second datadir, a hybrid one (read
//! through its router) or a stock MDBX one (reth's v1 layout), with reth's report files. reth
//! zips the two walks, so rows past the end of the shorter table go unreported; here both are
//! merged in byte order, and differences stream to disk instead of being held in memory.

use super::env::HybridFactory;
use reth_db::mdbx::DatabaseArguments;
use reth_db_api::{
    RawKey, RawTable, RawValue, TableViewer, Tables,
    cursor::DbCursorRO,
    database::Database,
    table::{Decode, Decompress, Table},
    transaction::DbTx,
};
use reth_hybrid_adapter::open_hybrid_read_only;
use reth_hybrid_hybrid::CONTROL_KEY_PREFIX;
use reth_hybrid_rocksdb::HYBRID_ROCKSDB_DIR;
use reth_node_core::{
    args::DatabaseArgs,
    dirs::{DataDirPath, PlatformPath},
};
use std::{
    cmp::Ordering,
    fs::File,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
};
use tracing::{info, warn};

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The path to the data dir of the second database (hybrid or stock MDBX).
    #[arg(long, verbatim_doc_comment)]
    secondary_datadir: PlatformPath<DataDirPath>,
    /// Arguments for the second database
    #[command(flatten)]
    second_db: DatabaseArgs,
    /// The table name to diff. If not specified, all tables are diffed.
    #[arg(long, verbatim_doc_comment)]
    table: Option<Tables>,
    /// The output directory for the diff report.
    #[arg(long, verbatim_doc_comment)]
    output: PlatformPath<PathBuf>,
}

/// How one table compared.
#[derive(Debug, Default, Clone, Copy)]
struct TableDiff {
    rows: u64,
    discrepancies: u64,
    extra_elements: u64,
}

pub fn run(args: DiffArgs, primary: &HybridFactory) -> eyre::Result<()> {
    warn!("Make sure the node is not running when running `reth db diff`!");
    let secondary_dir: PathBuf = args.secondary_datadir.as_ref().to_path_buf();
    let second_args = args.second_db.database_args();
    let tables = match &args.table {
        Some(table) => std::slice::from_ref(table),
        None => Tables::ALL,
    };
    let output: PathBuf = args.output.as_ref().to_path_buf();
    let mut differing = Vec::new();
    let mut compare = |secondary: &dyn Fn(Tables, &Path) -> eyre::Result<TableDiff>| {
        for table in tables {
            let diff = secondary(*table, &output)?;
            if diff.discrepancies + diff.extra_elements > 0 {
                differing.push(format!(
                    "{table} ({} discrepancies, {} extra elements)",
                    diff.discrepancies, diff.extra_elements
                ));
            }
        }
        eyre::Ok(())
    };
    if reth_hybrid_rocksdb::is_initialized(&secondary_dir.join(HYBRID_ROCKSDB_DIR)) {
        info!(datadir = %secondary_dir.display(), "the second datadir is a hybrid one: read through its router");
        let second = open_hybrid_read_only(&secondary_dir, second_args)?;
        compare(&|table, out| diff_table(table, primary, &second, out))?;
    } else {
        let second = open_stock(&secondary_dir, second_args)?;
        compare(&|table, out| diff_table(table, primary, &second, out))?;
    }
    if differing.is_empty() {
        println!("No differences in {} tables", tables.len());
    } else {
        println!(
            "Tables with differences (reports in {}): {}",
            output.display(),
            differing.join(", ")
        );
    }
    Ok(())
}

/// A stock datadir's MDBX, read-only; a storage-v2 one (rows in reth's own RocksDB) is refused,
/// since half of its history would be invisible here.
fn open_stock(datadir: &Path, args: DatabaseArguments) -> eyre::Result<reth_db::DatabaseEnv> {
    let upstream = datadir.join("rocksdb");
    if let Some(cfs) = reth_hybrid_rocksdb::inspect_upstream_rocksdb(&upstream)? {
        let with_rows: Vec<String> = cfs
            .into_iter()
            .filter(|c| c.has_rows)
            .map(|c| c.name)
            .collect();
        eyre::ensure!(
            with_rows.is_empty(),
            "{} holds rows of reth's storage v2 ({}): the second datadir keeps history outside \
             MDBX, which this diff would miss; compare with a datadir written with \
             --storage.v2=false",
            upstream.display(),
            with_rows.join(", ")
        );
    }
    reth_db::open_db_read_only(datadir.join("db"), args)
}

fn diff_table<D: Database>(
    table: Tables,
    primary: &HybridFactory,
    secondary: &D,
    output: &Path,
) -> eyre::Result<TableDiff> {
    let mut first = primary.db_ref().tx()?;
    let mut second = secondary.tx()?;
    // This reads whole tables; the node is not running (as reth's diff assumes).
    first.disable_long_read_transaction_safety();
    second.disable_long_read_transaction_safety();
    table.view(&DiffViewer {
        first: &first,
        second: &second,
        output,
    })
}

struct DiffViewer<'a, A, B> {
    first: &'a A,
    second: &'a B,
    output: &'a Path,
}

type Row<T> = (RawKey<<T as Table>::Key>, RawValue<<T as Table>::Value>);

impl<A: DbTx, B: DbTx> TableViewer<TableDiff> for DiffViewer<'_, A, B> {
    type Error = eyre::Report;

    fn view<T: Table>(&self) -> eyre::Result<TableDiff> {
        let name = T::NAME;
        info!("Analyzing table {name}...");
        let is_metadata = name == Tables::Metadata.name();
        // reth-hybrid's control rows in `Metadata` are not reth's: left out on both sides (a
        // datadir moved back to MDBX may still carry them).
        let keep = |row: &Result<Row<T>, _>| {
            row.as_ref().map_or(true, |(key, _)| {
                !(is_metadata && key.raw_key().starts_with(CONTROL_KEY_PREFIX.as_bytes()))
            })
        };
        let mut first_cursor = self.first.cursor_read::<RawTable<T>>()?;
        let mut second_cursor = self.second.cursor_read::<RawTable<T>>()?;
        let mut first_rows = first_cursor.walk(None)?.filter(keep);
        let mut second_rows = second_cursor.walk(None)?.filter(keep);
        let mut report = Report::<T>::new(self.output)?;
        let (mut a, mut b) = (
            first_rows.next().transpose()?,
            second_rows.next().transpose()?,
        );
        loop {
            let order = match (&a, &b) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                // Both walks are in the engines' byte order: keys, then (dupsort) values.
                (Some((ka, va)), Some((kb, vb))) => match T::DUPSORT {
                    true => (ka.raw_key(), va.raw_value()).cmp(&(kb.raw_key(), vb.raw_value())),
                    false => ka.raw_key().cmp(kb.raw_key()),
                },
            };
            report.diff.rows += 1;
            match order {
                Ordering::Less => {
                    report.extra(a.take().expect("first row"), Side::First)?;
                    a = first_rows.next().transpose()?;
                }
                Ordering::Greater => {
                    report.extra(b.take().expect("second row"), Side::Second)?;
                    b = second_rows.next().transpose()?;
                }
                Ordering::Equal => {
                    let (row_a, row_b) =
                        (a.take().expect("first row"), b.take().expect("second row"));
                    if row_a.1.raw_value() != row_b.1.raw_value() {
                        report.discrepancy(row_a, row_b.1)?;
                    }
                    a = first_rows.next().transpose()?;
                    b = second_rows.next().transpose()?;
                }
            }
        }
        info!("Done analyzing table {name}! ({} rows)", report.diff.rows);
        report.finish()
    }
}

#[derive(Clone, Copy)]
enum Side {
    First,
    Second,
}

/// reth's report shapes (`{:#?}` of these), so a hybrid report reads like a stock one.
#[derive(Debug)]
#[allow(dead_code)]
struct TableDiffElement<K, V> {
    key: K,
    first: V,
    second: V,
}

#[derive(Debug)]
#[allow(dead_code)]
enum ExtraTableElement<K, V> {
    First { key: K, value: V },
    Second { key: K, value: V },
}

/// A value decoded for the report (printed as reth prints it), or its bytes where they do not
/// decode.
enum Shown<T> {
    Decoded(T),
    Undecodable(alloy_primitives::Bytes),
}

impl<T: std::fmt::Debug> std::fmt::Debug for Shown<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Decoded(value) => value.fmt(f),
            Self::Undecodable(bytes) => f.debug_tuple("Undecodable").field(bytes).finish(),
        }
    }
}

fn shown_key<T: Table>(key: &RawKey<T::Key>) -> Shown<T::Key> {
    match T::Key::decode(key.raw_key()) {
        Ok(k) => Shown::Decoded(k),
        Err(_) => Shown::Undecodable(key.raw_key().clone().into()),
    }
}

fn shown_value<T: Table>(value: &RawValue<T::Value>) -> Shown<T::Value> {
    match T::Value::decompress(value.raw_value()) {
        Ok(v) => Shown::Decoded(v),
        Err(_) => Shown::Undecodable(value.raw_value().to_vec().into()),
    }
}

/// One table's report: differences stream into two scratch files, joined under reth's header
/// once the counts are known (only when there is a difference, as reth writes no file then).
struct Report<T: Table> {
    diff: TableDiff,
    output: PathBuf,
    discrepancies: Option<(PathBuf, BufWriter<File>)>,
    extras: Option<(PathBuf, BufWriter<File>)>,
    _table: std::marker::PhantomData<T>,
}

impl<T: Table> Report<T> {
    fn new(output: &Path) -> eyre::Result<Self> {
        Ok(Self {
            diff: TableDiff::default(),
            output: output.to_path_buf(),
            discrepancies: None,
            extras: None,
            _table: std::marker::PhantomData,
        })
    }

    fn scratch(
        output: &Path,
        slot: &mut Option<(PathBuf, BufWriter<File>)>,
        what: &str,
    ) -> eyre::Result<()> {
        if slot.is_none() {
            std::fs::create_dir_all(output)?;
            let path = output.join(format!(".{}.{what}.partial", T::NAME));
            *slot = Some((path.clone(), BufWriter::new(File::create(path)?)));
        }
        Ok(())
    }

    fn discrepancy(
        &mut self,
        (key, first): Row<T>,
        second: RawValue<T::Value>,
    ) -> eyre::Result<()> {
        Self::scratch(&self.output, &mut self.discrepancies, "discrepancies")?;
        let (_, file) = self.discrepancies.as_mut().expect("opened above");
        let element = TableDiffElement {
            key: shown_key::<T>(&key),
            first: shown_value::<T>(&first),
            second: shown_value::<T>(&second),
        };
        writeln!(file, "{element:#?}")?;
        self.diff.discrepancies += 1;
        Ok(())
    }

    fn extra(&mut self, (key, value): Row<T>, side: Side) -> eyre::Result<()> {
        Self::scratch(&self.output, &mut self.extras, "extras")?;
        let (_, file) = self.extras.as_mut().expect("opened above");
        let (key, value) = (shown_key::<T>(&key), shown_value::<T>(&value));
        let element = match side {
            Side::First => ExtraTableElement::First { key, value },
            Side::Second => ExtraTableElement::Second { key, value },
        };
        writeln!(file, "{element:#?}")?;
        self.diff.extra_elements += 1;
        Ok(())
    }

    fn finish(mut self) -> eyre::Result<TableDiff> {
        let diff = self.diff;
        self.write_file()?;
        Ok(diff)
    }

    fn write_file(&mut self) -> eyre::Result<()> {
        let table = T::NAME;
        let TableDiff {
            discrepancies,
            extra_elements,
            ..
        } = self.diff;
        info!("");
        info!("Diff results for {table}:");
        if discrepancies == 0 && extra_elements == 0 {
            info!("No discrepancies or extra elements found in table {table}");
            return Ok(());
        }
        let file_name = self.output.join(format!("{table}.txt"));
        let mut file = BufWriter::new(File::create(&file_name)?);
        writeln!(file, "Diff results for {table}")?;
        let line = match discrepancies {
            0 => format!("No discrepancies found in table {table}"),
            n => format!("Found {n} discrepancies in table {table}"),
        };
        info!("{line}");
        writeln!(file, "{line}")?;
        let line = match extra_elements {
            0 => format!("No extra elements found in table {table}"),
            n => format!("Found {n} extra elements in table {table}"),
        };
        info!("{line}");
        writeln!(file, "{line}")?;
        for (slot, heading) in [
            (&mut self.discrepancies, "Discrepancies:"),
            (&mut self.extras, "Extra elements:"),
        ] {
            // Left in its slot until copied, so that `Drop` removes it should this fail.
            if let Some((path, scratch)) = slot {
                scratch.flush()?;
                writeln!(file, "{heading}")?;
                std::io::copy(&mut File::open(&*path)?, &mut file)?;
            }
        }
        file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        info!(
            "Done writing diff results for {table} to {}",
            file_name.display()
        );
        Ok(())
    }
}

impl<T: Table> Drop for Report<T> {
    /// Scratch files go once their report is written, and when a walk or report fails part way.
    fn drop(&mut self) {
        for (path, _) in [self.discrepancies.take(), self.extras.take()]
            .into_iter()
            .flatten()
        {
            let _ = std::fs::remove_file(path);
        }
    }
}
