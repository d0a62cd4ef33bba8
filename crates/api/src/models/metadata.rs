//! reth's `Metadata` entry `storage_settings`: JSON, stored as a SCALE `Vec<u8>` value.

use serde::{Deserialize, Serialize};

/// Key in `Metadata` under which reth records its storage layout.
pub const STORAGE_SETTINGS_KEY: &str = "storage_settings";

/// reth's storage settings: `storage_v2: true` means history and tx-hash rows live in reth's own
/// RocksDB at `<datadir>/rocksdb`, which reth-hybrid refuses to mix with its own layout.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageSettings {
    #[serde(default)]
    pub storage_v2: bool,
}

impl StorageSettings {
    pub fn to_json_bytes(self) -> Vec<u8> {
        serde_json::to_vec(&self).expect("storage settings always serialize")
    }

    pub fn from_json_bytes(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}
