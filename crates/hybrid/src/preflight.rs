//! What `HybridDb::open` refuses, checked on read-only views of the two engines before anything
//! is created or written: a refused datadir is left exactly as it was (no `hybrid-rocksdb/`, no
//! intent log, no MDBX table created, no intent replayed or discarded).

use crate::{
    control::{SEQ_KEY, get_bytes, get_u64, has_user_rows},
    error::HybridError,
    intent_log::IntentLog,
    layout::{LAYOUT_KEY, Layout, MIGRATION_STATE_FILE},
    recovery,
    router::INTENT_LOG_FILE,
};
use reth_hybrid_api::{
    EngineKind, Tables,
    models::{STORAGE_SETTINGS_KEY, StorageSettings},
    raw::{RawEngine, RawTx},
};
use std::{
    ffi::CString,
    path::{Path, PathBuf},
};

/// Runs every check of `HybridDb::open` without writing. `primary` and `follower` are read-only
/// views of the engines the datadir already has (`None`: not created yet, so it holds no rows
/// and its sequence is 0). Returns the layout the open will use.
pub fn check<P: RawEngine, F: RawEngine>(
    datadir: &Path,
    primary: Option<&P>,
    follower: Option<&F>,
    requested: Option<&Layout>,
) -> Result<Layout, HybridError> {
    let migration = datadir.join(MIGRATION_STATE_FILE);
    if migration.exists() {
        return Err(HybridError::MigrationInProgress { path: migration });
    }
    let ptx = primary.map(|p| p.begin_ro()).transpose()?;
    // A primary without `Metadata` (written by an older reth) has no layout and no sequences.
    let metadata = match (primary, &ptx) {
        (Some(p), Some(tx)) if p.has_table(Tables::Metadata) => Some(tx),
        _ => None,
    };
    let stored = match metadata {
        Some(tx) => {
            refuse_storage_v2(tx)?;
            stored_layout(tx)?
        }
        None => None,
    };
    let layout = resolve_layout(stored.as_ref(), requested)?;
    let ftx = follower.map(|f| f.begin_ro()).transpose()?;
    for table in Tables::ALL {
        let found = match layout.engine_of(table) {
            EngineKind::Mdbx => match &ftx {
                Some(tx) if has_user_rows(tx, table)? => Some(EngineKind::RocksDb),
                _ => None,
            },
            EngineKind::RocksDb => match (primary, &ptx) {
                (Some(p), Some(tx)) if p.has_table(table) && has_user_rows(tx, table)? => {
                    Some(EngineKind::Mdbx)
                }
                _ => None,
            },
        };
        if let Some(found) = found {
            return Err(HybridError::RowsInOtherEngine {
                table,
                routed: layout.engine_of(table),
                found,
            });
        }
    }
    let intent = IntentLog::new(datadir.join(INTENT_LOG_FILE));
    check_sequences(metadata, ftx.as_ref(), &intent)?;
    Ok(layout)
}

/// Refuses what recovery would refuse, without doing what it would do: `primary` is a read
/// transaction of the primary (its `follower_seq` and pending rows; `None` for a primary without
/// `Metadata`), `follower` one of the follower (`None`: not created yet). Recovery's own
/// read-only decision (`recovery::plan`), so the two cannot disagree.
pub fn check_sequences<X: RawTx, Y: RawTx>(
    primary: Option<&X>,
    follower: Option<&Y>,
    intent: &IntentLog,
) -> Result<(), HybridError> {
    match primary {
        Some(tx) => recovery::plan_for(tx, follower, intent).map(|_| ()),
        None => {
            let applied = match follower {
                Some(tx) => get_u64(tx, SEQ_KEY)?,
                None => 0,
            };
            recovery::plan(0, applied, &[], &|_| Ok(0), intent).map(|_| ())
        }
    }
}

/// Refuses a datadir reth marked as storage v2 in `Metadata`.
pub(crate) fn refuse_storage_v2<X: RawTx>(tx: &X) -> Result<(), HybridError> {
    if let Some(settings) = get_bytes(tx, STORAGE_SETTINGS_KEY)?
        && StorageSettings::from_json_bytes(&settings).is_ok_and(|s| s.storage_v2)
    {
        return Err(HybridError::UpstreamStorageV2);
    }
    Ok(())
}

/// The layout recorded in `Metadata`, if any (unreadable JSON is refused).
pub(crate) fn stored_layout<X: RawTx>(tx: &X) -> Result<Option<Layout>, HybridError> {
    get_bytes(tx, LAYOUT_KEY)?
        .map(|b| Layout::from_json(&b))
        .transpose()
}

/// The layout an open uses: the stored one (a different requested one is refused), else the
/// requested one, else the default.
pub(crate) fn resolve_layout(
    stored: Option<&Layout>,
    requested: Option<&Layout>,
) -> Result<Layout, HybridError> {
    match (stored, requested) {
        (Some(stored), Some(requested)) => match stored.first_difference(requested) {
            Some(table) => Err(HybridError::LayoutMismatch {
                table,
                stored: stored.engine_of(table),
                requested: requested.engine_of(table),
            }),
            None => Ok(stored.clone()),
        },
        (Some(stored), None) => Ok(stored.clone()),
        (None, requested) => Ok(requested.cloned().unwrap_or_default()),
    }
}

/// Files an engine opens for writing, besides creating new ones in its directory.
const WRITTEN_IN_PLACE: [&str; 4] = ["mdbx.dat", "mdbx.lck", "lock", "LOCK"];

/// Refuses a datadir the open could not write to (read-only mount, another owner, immutable
/// files), before anything is created in it: the datadir, the intent log, each of `engine_dirs`
/// that exists and the files in it an engine opens for writing. `access(2)` asks the kernel, so
/// a read-only mount and an immutable file are refused even for root, whose permission bits are
/// not checked.
pub fn check_writable(datadir: &Path, engine_dirs: &[PathBuf]) -> Result<(), HybridError> {
    let mut paths = vec![datadir.to_path_buf(), datadir.join(INTENT_LOG_FILE)];
    for dir in engine_dirs {
        paths.push(dir.clone());
        paths.extend(WRITTEN_IN_PLACE.iter().map(|f| dir.join(f)));
    }
    for path in paths {
        if !path.exists() {
            continue;
        }
        let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
            HybridError::NotWritable {
                path: path.clone(),
                source: std::io::Error::other("path contains NUL"),
            }
        })?;
        // SAFETY: access only reads the NUL-terminated path.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
            return Err(HybridError::NotWritable {
                path,
                source: std::io::Error::last_os_error(),
            });
        }
    }
    Ok(())
}
