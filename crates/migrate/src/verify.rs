//! `verify`: is this datadir sound for reth-hybrid? Layout sanity (every table's rows only in
//! its engine), no migration half done, recovery state, and every row of every table decoded
//! with reth's codecs and checksummed. Read-only.

use crate::{
    datadir::{Datadir, effective_layout, open_mdbx_read_only, refuse_storage_v2},
    digest::TableDigest,
    error::MigrateError,
    progress::Progress,
    state::MigrationState,
};
use reth_hybrid_api::{
    DatabaseError, EngineKind, Table, TableViewer, Tables,
    raw::{RawCursor, RawEngine, RawTx},
    typed::{decode_key, decode_value},
};
use reth_hybrid_hybrid::{
    control::{SEQ_KEY, get_u64, has_user_rows},
    intent_log::IntentLog,
    recovery::{self, Plan, RecoveryAction, RecoveryPlan},
};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    /// Not wrong, but worth knowing (e.g. a commit recovery will settle on the next open).
    Warn,
    Fail,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub outcome: Outcome,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct TableCheck {
    pub table: Tables,
    pub engine: EngineKind,
    pub rows: u64,
    pub checksum: String,
    /// Rows whose key or value does not decode with the table's codecs.
    pub undecodable: u64,
    pub first_error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub checks: Vec<Check>,
    pub tables: Vec<TableCheck>,
}

impl VerifyReport {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.outcome != Outcome::Fail)
    }
}

struct RowDecoder<'a> {
    key: &'a [u8],
    value: &'a [u8],
}

impl TableViewer<()> for RowDecoder<'_> {
    type Error = DatabaseError;

    fn view<T: Table>(&self) -> Result<(), DatabaseError> {
        decode_key::<T>(self.key)?;
        decode_value::<T>(self.key, self.value)?;
        Ok(())
    }
}

/// Runs every check. `Err` only when the datadir cannot be read at all (missing, locked).
pub fn verify(datadir: &Path, progress: &dyn Progress) -> Result<VerifyReport, MigrateError> {
    let dd = Datadir::new(datadir);
    let mdbx = open_mdbx_read_only(datadir)?;
    let rocks = dd.open_rocksdb_read_only()?;
    let tx = mdbx.begin_ro()?;
    let rocks_tx = rocks.as_ref().map(|r| r.begin_ro()).transpose()?;
    let mut checks = Vec::new();
    let mut check = |name, outcome, detail: String| {
        checks.push(Check {
            name,
            outcome,
            detail,
        })
    };

    match dd
        .refuse_upstream_rows()
        .and_then(|()| refuse_storage_v2(&tx))
    {
        Ok(()) => check("upstream", Outcome::Pass, "no reth storage-v2 rows".into()),
        Err(e) => check("upstream", Outcome::Fail, e.to_string()),
    }
    match MigrationState::read(&dd) {
        Ok(None) => check(
            "migration",
            Outcome::Pass,
            "no migration in progress".into(),
        ),
        Ok(Some(s)) => check(
            "migration",
            Outcome::Fail,
            format!(
                "a migration of {} is in progress; finish it: {}",
                s.describe(),
                s.command
            ),
        ),
        Err(e) => check("migration", Outcome::Fail, e.to_string()),
    }
    let (layout, recorded) = match effective_layout(&tx, rocks.as_ref()) {
        Ok((layout, recorded)) => {
            check(
                "layout",
                if recorded {
                    Outcome::Pass
                } else {
                    Outcome::Warn
                },
                if recorded {
                    "layout recorded and readable".into()
                } else {
                    "no layout recorded (never opened by reth-hybrid); inferred from the rows"
                        .into()
                },
            );
            (layout, recorded)
        }
        Err(e) => {
            check("layout", Outcome::Fail, e.to_string());
            return Ok(VerifyReport {
                checks,
                tables: Vec::new(),
            });
        }
    };
    let _ = recorded;

    // Placement: a table's rows live only in the engine the layout routes it to.
    let mut misplaced = Vec::new();
    for table in Tables::ALL {
        let in_mdbx = crate::datadir::mdbx_has_rows(&tx, table)?;
        let in_rocks = match &rocks_tx {
            Some(rtx) => has_user_rows(rtx, table)?,
            None => false,
        };
        let routed = layout.engine_of(table);
        if (routed == EngineKind::Mdbx && in_rocks) || (routed == EngineKind::RocksDb && in_mdbx) {
            misplaced.push(format!(
                "{table} (routed to {routed}, rows in {})",
                if in_mdbx && in_rocks {
                    "both engines"
                } else if in_mdbx {
                    "mdbx"
                } else {
                    "rocksdb"
                }
            ));
        }
    }
    if misplaced.is_empty() {
        check(
            "placement",
            Outcome::Pass,
            "every table's rows are in its engine".into(),
        );
    } else {
        check(
            "placement",
            Outcome::Fail,
            format!(
                "rows outside their engine: {}; run `reth-hybrid migrate` for these tables",
                misplaced.join("; ")
            ),
        );
    }

    // Recovery: the intent log and the commit sequences of both engines.
    let primary_seq = get_u64(&tx, SEQ_KEY)?;
    let rocks_seq = match &rocks_tx {
        Some(rtx) => get_u64(rtx, SEQ_KEY)?,
        None => 0,
    };
    // What the next open's recovery will do, decided by the hybrid's own rules (reading only).
    let intent = IntentLog::new(dd.intent_log());
    let planned = recovery::plan_for(&tx, rocks_tx.as_ref(), &intent);
    if let Ok(RecoveryPlan { deferred, .. }) = &planned
        && let (Some(first), Some(last)) = (deferred.first(), deferred.last())
    {
        check(
            "recovery",
            Outcome::Warn,
            format!(
                "RocksDB (at commit {rocks_seq}) lacks deferred commits {}..={} that MDBX holds \
                 as pending rows (its WAL tail was lost, as on power loss); the next open \
                 replays them",
                first.seq, last.seq
            ),
        );
    }
    match planned.map(|p| p.intent) {
        Ok(Plan::Clean) => check(
            "recovery",
            Outcome::Pass,
            format!("no commit in flight; last commit {primary_seq}, RocksDB at {rocks_seq}"),
        ),
        Ok(Plan::Replay { seq, .. }) => check(
            "recovery",
            Outcome::Warn,
            format!(
                "commit {seq} is in flight (MDBX decided it, RocksDB at {rocks_seq}); the next \
                 open replays it into RocksDB"
            ),
        ),
        Ok(Plan::Clear(action)) => check(
            "recovery",
            Outcome::Warn,
            format!("the next open clears the intent log: {}", describe(&action)),
        ),
        Err(e) => check("recovery", Outcome::Fail, e.to_string()),
    }

    // Every row decodes; digests per table.
    let mut tables = Vec::new();
    let mut bad_tables = Vec::new();
    let mut count_mismatch = Vec::new();
    for table in Tables::ALL {
        let engine = layout.engine_of(table);
        let mut digest = TableDigest::default();
        let (mut undecodable, mut first_error) = (0u64, None);
        let mut on_row = |k: &[u8], v: &[u8]| {
            digest.add(k, v);
            if let Err(e) = table.view(&RowDecoder { key: k, value: v }) {
                undecodable += 1;
                first_error.get_or_insert_with(|| e.to_string());
            }
            if digest.rows % 8192 == 0 {
                progress.advance(8192);
            }
        };
        match (engine, &rocks) {
            (EngineKind::RocksDb, Some(r)) => {
                progress.begin(
                    &format!("{table}: decoding (rocksdb)"),
                    Some(r.table_size(table).estimated_rows),
                );
                r.scan_table(table, None, |k, v| {
                    on_row(k, v);
                    Ok(true)
                })?;
            }
            (EngineKind::RocksDb, None) => {}
            (EngineKind::Mdbx, _) => {
                let stat = tx.table_stat(table)?;
                progress.begin(&format!("{table}: decoding (mdbx)"), Some(stat.entries));
                if stat.entries > 0 {
                    let mut cursor = tx.cursor(table)?;
                    let mut next = cursor.first()?;
                    while let Some((k, v)) = next {
                        on_row(&k, &v);
                        next = cursor.next()?;
                    }
                }
                if digest.rows != stat.entries {
                    count_mismatch.push(format!(
                        "{table}: {} scanned, {} counted",
                        digest.rows, stat.entries
                    ));
                }
            }
        }
        progress.end();
        if undecodable > 0 {
            bad_tables.push(format!("{table} ({undecodable} rows)"));
        }
        tables.push(TableCheck {
            table,
            engine,
            rows: digest.rows,
            checksum: digest.sum_hex(),
            undecodable,
            first_error,
        });
    }
    if bad_tables.is_empty() {
        check(
            "rows",
            Outcome::Pass,
            "every row decodes with its table's codecs".into(),
        );
    } else {
        check(
            "rows",
            Outcome::Fail,
            format!("rows that do not decode: {}", bad_tables.join(", ")),
        );
    }
    if count_mismatch.is_empty() {
        check(
            "counts",
            Outcome::Pass,
            "MDBX entry counts match the rows scanned".into(),
        );
    } else {
        check("counts", Outcome::Fail, count_mismatch.join("; "));
    }
    Ok(VerifyReport { checks, tables })
}

fn describe(action: &RecoveryAction) -> String {
    match action {
        RecoveryAction::Clean => "nothing in flight".to_string(),
        RecoveryAction::DroppedTornTail { bytes } => {
            format!("a torn record ({bytes} bytes) that no decided commit needs")
        }
        RecoveryAction::DiscardedUndecided { seq } => {
            format!("commit {seq} was never decided by MDBX and is discarded")
        }
        RecoveryAction::ClearedApplied { seq } => format!("commit {seq} reached both engines"),
        RecoveryAction::Replayed { seq } => format!("commit {seq} is replayed"),
        RecoveryAction::ReplayedDeferred { commits, last } => {
            format!("{commits} deferred commits up to {last} are replayed")
        }
    }
}
