//! The plain state a v2 datadir does not keep. v2 holds current state only under hashed keys;
//! the address behind a hashed account and the slot behind a hashed slot are the keys of the
//! history indices (every account and slot that ever changed has an entry, genesis included).
//! So each distinct history key is hashed and looked up, and what is found is written under the
//! plain key, in the history's order (which is the plain tables' order).
//!
//! Every hashed row must be found: a hashed account or slot without a preimage (a pruned node
//! lost its history) is a refusal naming one, never a hole in the rebuilt state.

use crate::error::AdoptError;
use alloy_primitives::{B256, keccak256};
use reth_hybrid_api::{
    Tables,
    raw::{RawCursor, RawCursorMut, RawEngine, RawTx, RawTxMut},
};
use std::collections::HashSet;

const ADDRESS: usize = 20;
const SLOT: usize = 32;
/// Rows written per write transaction, so memory stays bounded at any size.
const ROWS_PER_COMMIT: u64 = 100_000;

/// Rows written into each plain table (this run and any before it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlainRows {
    pub accounts: u64,
    pub storage: u64,
}

/// Rebuilds `PlainAccountState` and `PlainStorageState` in `engine` (MDBX, holding the hashed
/// state), the preimages taken from the history indices in `history` (MDBX itself, or
/// reth-hybrid's RocksDB where a hybrid adoption ingested them), resuming after the last plain
/// row a previous run committed, and checks that every hashed row was found.
pub fn rebuild_plain_state<E: RawEngine, H: RawEngine>(
    engine: &E,
    history: &H,
    progress: &dyn crate::Progress,
) -> Result<PlainRows, AdoptError> {
    let total = |kind: Kind| -> Result<Option<u64>, AdoptError> {
        Ok(Some(engine.begin_ro()?.entries(kind.hashed())? as u64))
    };
    progress.begin(
        "plain accounts from the hashed state",
        total(Kind::Accounts)?,
    );
    let accounts = rebuild(engine, history, Kind::Accounts, progress)?;
    progress.end();
    progress.begin("plain storage from the hashed state", total(Kind::Storage)?);
    let storage = rebuild(engine, history, Kind::Storage, progress)?;
    progress.end();
    Ok(PlainRows { accounts, storage })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Accounts,
    Storage,
}

impl Kind {
    fn history(self) -> Tables {
        match self {
            Self::Accounts => Tables::AccountsHistory,
            Self::Storage => Tables::StoragesHistory,
        }
    }
    fn hashed(self) -> Tables {
        match self {
            Self::Accounts => Tables::HashedAccounts,
            Self::Storage => Tables::HashedStorages,
        }
    }
    fn plain(self) -> Tables {
        match self {
            Self::Accounts => Tables::PlainAccountState,
            Self::Storage => Tables::PlainStorageState,
        }
    }
    /// The plain key's bytes at the start of a history key: address, or address and slot.
    fn preimage_len(self) -> usize {
        match self {
            Self::Accounts => ADDRESS,
            Self::Storage => ADDRESS + SLOT,
        }
    }
}

/// The preimage (address, or address ‖ slot) of the last plain row committed.
fn last_written<T: RawTx>(tx: &T, kind: Kind) -> Result<Option<Vec<u8>>, AdoptError> {
    let Some((key, value)) = tx.cursor(kind.plain())?.last()? else {
        return Ok(None);
    };
    Ok(Some(match kind {
        Kind::Accounts => key,
        Kind::Storage => [&key[..], &value[..SLOT.min(value.len())]].concat(),
    }))
}

/// The hashed row behind `preimage`, as the plain table stores it: `None` if the account or
/// slot no longer exists (destroyed, or a slot set back to zero).
fn plain_value<T: RawTx>(
    tx: &T,
    hashed: &mut T::Cursor,
    kind: Kind,
    preimage: &[u8],
) -> Result<Option<Vec<u8>>, AdoptError> {
    match kind {
        Kind::Accounts => Ok(tx.get(Tables::HashedAccounts, keccak256(preimage).as_slice())?),
        Kind::Storage => {
            let (address, slot) = preimage.split_at(ADDRESS);
            let hashed_slot = keccak256(slot);
            let found =
                hashed.seek_by_key_subkey(keccak256(address).as_slice(), hashed_slot.as_slice())?;
            Ok(found
                .filter(|v| v.len() >= SLOT && v[..SLOT] == hashed_slot[..])
                // The entry's key is the hashed slot; the plain table's is the slot itself.
                .map(|v| [slot, &v[SLOT..]].concat()))
        }
    }
}

fn rebuild<E: RawEngine, H: RawEngine>(
    engine: &E,
    history: &H,
    kind: Kind,
    progress: &dyn crate::Progress,
) -> Result<u64, AdoptError> {
    let len = kind.preimage_len();
    let mut resume = last_written(&engine.begin_ro()?, kind)?;
    // One snapshot of the history for the whole rebuild (nothing writes it meanwhile).
    let mut history_snapshot = history.begin_ro()?;
    history_snapshot.disable_long_read_safety();
    let mut history = history_snapshot.cursor(kind.history())?;
    loop {
        let tx = engine.begin_rw()?;
        let mut hashed = tx.cursor(kind.hashed())?;
        let mut plain = tx.cursor_mut(kind.plain())?;
        let mut next = match &resume {
            // History keys of a preimage all start with it; the next preimage sorts after them.
            Some(after) => history.seek(&after_prefix(after))?,
            None => history.first()?,
        };
        let mut written = 0;
        while let Some((key, _)) = next {
            if key.len() < len {
                return Err(AdoptError::Database(
                    reth_hybrid_api::DatabaseError::decode(),
                ));
            }
            let preimage = key[..len].to_vec();
            if let Some(value) = plain_value(&tx, &mut hashed, kind, &preimage)? {
                match kind {
                    Kind::Accounts => plain.append(&preimage, &value)?,
                    Kind::Storage => plain.append_dup(&preimage[..ADDRESS], &value)?,
                }
                written += 1;
            }
            next = history.seek(&after_prefix(&preimage))?;
            resume = Some(preimage);
            if written == ROWS_PER_COMMIT {
                break;
            }
        }
        let ended = next.is_none();
        drop((hashed, plain));
        tx.commit()?;
        progress.advance(written);
        crate::crash::crash_point!("AdoptPlainAfterCommit");
        if ended {
            break;
        }
    }
    check_complete(engine, &history_snapshot, kind)
}

/// The smallest key after every key that starts with `prefix`.
fn after_prefix(prefix: &[u8]) -> Vec<u8> {
    let mut key = prefix.to_vec();
    while let Some(last) = key.pop() {
        if last < u8::MAX {
            key.push(last + 1);
            return key;
        }
    }
    // All 0xff: nothing sorts after; a key longer than any history key ends the walk.
    vec![u8::MAX; prefix.len() + 61]
}

/// Every hashed row has its plain twin; otherwise names one that has none.
fn check_complete<E: RawEngine, T: RawTx>(
    engine: &E,
    history_snapshot: &T,
    kind: Kind,
) -> Result<u64, AdoptError> {
    let tx = engine.begin_ro()?;
    let plain = tx.entries(kind.plain())? as u64;
    let hashed = tx.entries(kind.hashed())? as u64;
    if plain == hashed {
        return Ok(plain);
    }
    // The failure path only: the hashes of every preimage, to find a hashed row without one.
    let mut known: HashSet<B256> = HashSet::new();
    let mut history = history_snapshot.cursor(kind.history())?;
    let mut next = history.first()?;
    while let Some((key, _)) = next {
        let preimage = &key[..kind.preimage_len().min(key.len())];
        known.insert(preimage_hash(kind, preimage));
        next = history.seek(&after_prefix(preimage))?;
    }
    let mut rows = tx.cursor(kind.hashed())?;
    let mut next = rows.first()?;
    let mut example = None;
    while let Some((key, value)) = next {
        let hash = match kind {
            Kind::Accounts => B256::from_slice(&key),
            Kind::Storage => keccak256([&key[..], &value[..SLOT]].concat()),
        };
        if !known.contains(&hash) {
            example = Some(match kind {
                Kind::Accounts => hex::encode(&key),
                Kind::Storage => {
                    format!("{} slot {}", hex::encode(&key), hex::encode(&value[..SLOT]))
                }
            });
            break;
        }
        next = rows.next()?;
    }
    Err(AdoptError::MissingPreimages {
        table: kind.hashed(),
        missing: hashed.saturating_sub(plain),
        example: example.unwrap_or_default(),
    })
}

/// What [`check_complete`] compares: for storage, the hashed address and hashed slot together.
fn preimage_hash(kind: Kind, preimage: &[u8]) -> B256 {
    match kind {
        Kind::Accounts => keccak256(preimage),
        Kind::Storage => {
            let (address, slot) = preimage.split_at(ADDRESS);
            keccak256([keccak256(address).as_slice(), keccak256(slot).as_slice()].concat())
        }
    }
}
