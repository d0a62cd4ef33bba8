//! The layout: which engine holds each table. Persisted in MDBX's `Metadata` table under our own
//! key, validated against the rows actually present on every open.

use crate::error::HybridError;
use reth_hybrid_api::{EngineKind, Tables};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Key prefix of reth-hybrid's own rows in `Metadata` (never a reth key).
pub const CONTROL_KEY_PREFIX: &str = "reth_hybrid.";
/// `Metadata` key of the persisted layout (JSON).
pub const LAYOUT_KEY: &str = "reth_hybrid.layout";
const LAYOUT_VERSION: u32 = 1;
/// File in the datadir that marks a table migration in progress (written by `reth-hybrid
/// migrate`, removed when it finishes). While it exists the hybrid refuses to open.
pub const MIGRATION_STATE_FILE: &str = "hybrid-migration.json";

/// Which engine holds each table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    engines: [EngineKind; Tables::COUNT],
}

#[derive(Serialize, Deserialize)]
struct LayoutFile {
    version: u32,
    tables: BTreeMap<String, EngineKind>,
}

impl Default for Layout {
    /// History indices and the tx-hash index in RocksDB, everything else in MDBX.
    fn default() -> Self {
        Self {
            engines: Tables::ALL.map(|t| t.default_engine()),
        }
    }
}

impl Layout {
    /// Every table in one engine.
    pub fn all(engine: EngineKind) -> Self {
        Self {
            engines: [engine; Tables::COUNT],
        }
    }

    pub fn engine_of(&self, table: Tables) -> EngineKind {
        self.engines[table as usize]
    }

    pub fn set(&mut self, table: Tables, engine: EngineKind) -> &mut Self {
        self.engines[table as usize] = engine;
        self
    }

    /// Tables routed to `engine`.
    pub fn tables_in(&self, engine: EngineKind) -> impl Iterator<Item = Tables> + '_ {
        Tables::ALL
            .into_iter()
            .filter(move |t| self.engine_of(*t) == engine)
    }

    pub fn to_json(&self) -> Vec<u8> {
        let tables = Tables::ALL
            .iter()
            .map(|t| (t.name().to_string(), self.engine_of(*t)))
            .collect();
        serde_json::to_vec_pretty(&LayoutFile {
            version: LAYOUT_VERSION,
            tables,
        })
        .expect("layout serializes")
    }

    /// Parses a stored layout; unknown tables and versions are errors, missing tables take the
    /// default (a table added to reth after the layout was written has no rows anywhere yet).
    pub fn from_json(bytes: &[u8]) -> Result<Self, HybridError> {
        let file: LayoutFile =
            serde_json::from_slice(bytes).map_err(|e| HybridError::BadLayout {
                reason: e.to_string(),
            })?;
        if file.version != LAYOUT_VERSION {
            return Err(HybridError::UnsupportedVersion {
                found: file.version,
                supported: LAYOUT_VERSION,
            });
        }
        let mut layout = Self::default();
        for (name, engine) in file.tables {
            let table: Tables =
                name.parse()
                    .map_err(
                        |e: reth_hybrid_api::tables::UnknownTable| HybridError::BadLayout {
                            reason: e.to_string(),
                        },
                    )?;
            layout.set(table, engine);
        }
        Ok(layout)
    }

    /// The first table whose engine differs from `other`'s.
    pub fn first_difference(&self, other: &Self) -> Option<Tables> {
        Tables::ALL
            .into_iter()
            .find(|t| self.engine_of(*t) != other.engine_of(*t))
    }
}
