//! The migration's durable progress. The plan and the SST files already written live in
//! `<datadir>/hybrid-migration.json` (replaced atomically after every step); a rollback's copy
//! position lives in MDBX `Metadata`, committed in the same transaction as the rows it covers.

use crate::{
    datadir::{Datadir, write_atomically},
    digest::TableDigest,
    error::{MigrateError, io},
    fault::{self, FaultPoint},
};
use reth_hybrid_api::{EngineKind, Tables};
use serde::{Deserialize, Serialize};

/// Version 2 ingests and checks each SST file as it is written (`SstChunk::verified`); a
/// version-1 state (every file ingested at the end) is resumed the same way.
const STATE_VERSION: u32 = 2;
const READABLE_VERSIONS: [u32; 2] = [1, 2];

/// Where a table stands in its migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Rows are being copied (into SST files, or into MDBX on a rollback).
    Copying,
    /// Every SST file is written and ingested; next: check what is left, switch.
    Written,
    Done,
}

/// One finished SST file of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SstChunk {
    pub file: String,
    pub bytes: u64,
    pub digest: TableDigest,
    /// Hex of the RocksDB key of the file's last row (where the copy resumes).
    pub last_stored_key: String,
    /// Hex of stored keys inside the file, about every quarter of it, so it can be read back
    /// by several threads at once (each part ends at one of them, the last at
    /// `last_stored_key`).
    #[serde(default)]
    pub split_keys: Vec<String>,
    /// Whether the file's rows were read back from RocksDB and matched `digest`.
    #[serde(default)]
    pub verified: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableState {
    pub table: Tables,
    pub phase: Phase,
    #[serde(default)]
    pub chunks: Vec<SstChunk>,
}

impl TableState {
    /// Digest of every row copied into the recorded SST files.
    pub fn copied(&self) -> TableDigest {
        let mut digest = TableDigest::default();
        self.chunks.iter().for_each(|c| digest.merge(&c.digest));
        digest
    }
}

/// `<datadir>/hybrid-migration.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrationState {
    pub version: u32,
    pub to: EngineKind,
    pub tables: Vec<TableState>,
    pub compact: bool,
    #[serde(default)]
    pub compacted: bool,
    /// The command that resumes this migration (for messages).
    pub command: String,
}

impl MigrationState {
    pub fn new(to: EngineKind, tables: &[Tables], compact: bool, command: String) -> Self {
        Self {
            version: STATE_VERSION,
            to,
            tables: tables
                .iter()
                .map(|t| TableState {
                    table: *t,
                    phase: Phase::Copying,
                    chunks: Vec::new(),
                })
                .collect(),
            compact,
            compacted: false,
            command,
        }
    }

    pub fn read(datadir: &Datadir) -> Result<Option<Self>, MigrateError> {
        let path = datadir.state_file();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&path)(e)),
        };
        let state: Self =
            serde_json::from_slice(&bytes).map_err(|e| MigrateError::UnreadableState {
                path: path.clone(),
                reason: format!("not a migration state: {e}"),
            })?;
        if !READABLE_VERSIONS.contains(&state.version) {
            return Err(MigrateError::UnreadableState {
                path,
                reason: format!(
                    "state version {}, this tool reads versions {READABLE_VERSIONS:?}; the tool \
                     that started the migration can resume it",
                    state.version
                ),
            });
        }
        Ok(Some(state))
    }

    /// Records an older version's state as the current version before anything else is done
    /// (files are ingested one by one from now on, which a version-1 tool would take for rows
    /// of unknown origin). Returns whether it wrote.
    pub fn upgrade(&mut self, datadir: &Datadir) -> Result<bool, MigrateError> {
        if self.version == STATE_VERSION {
            return Ok(false);
        }
        self.version = STATE_VERSION;
        self.write(datadir)?;
        Ok(true)
    }

    pub fn write(&self, datadir: &Datadir) -> Result<(), MigrateError> {
        let bytes = serde_json::to_vec_pretty(self).expect("state serializes");
        let path = datadir.state_file();
        if let Err(e) = fault::inject(FaultPoint::StateWrite) {
            // As a full disk would: the temporary file is left half-written, the state as it was.
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, &bytes[..bytes.len() / 2]).map_err(io(&tmp))?;
            return Err(io(&tmp)(e));
        }
        write_atomically(&path, &bytes)
    }

    /// Whether this state is the migration `to`/`tables` asks for (so it may be resumed).
    pub fn is_for(&self, to: EngineKind, tables: &[Tables]) -> bool {
        self.to == to
            && self.tables.len() == tables.len()
            && self.tables.iter().zip(tables).all(|(s, t)| s.table == *t)
    }

    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.tables.iter().map(|t| t.table.name()).collect();
        format!("tables {} to {}", names.join(","), self.to)
    }
}

/// `Metadata` key of a rollback's position for one table.
pub fn rollback_key(table: Tables) -> String {
    format!("reth_hybrid.migration.{table}")
}

/// A rollback's position in one table, stored in MDBX with the rows it covers.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RollbackProgress {
    /// Rows are in MDBX and the layout says MDBX; RocksDB's copy is being removed.
    pub clearing: bool,
    /// Hex of the RocksDB key of the last row copied.
    pub after: Option<String>,
    /// Digest of the rows read from RocksDB so far.
    pub digest: TableDigest,
}
