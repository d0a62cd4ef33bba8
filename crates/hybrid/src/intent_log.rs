//! The intent log: the follower engine's writes of the commit in flight, made durable before the
//! decision commit so a crash between the two engines can be finished by replay.
//!
//! One record at a time, framed like fjall's journal batches so a torn write is detectable:
//! `len u32 LE | seq u64 LE | prev_follower_seq u64 LE | payload (len bytes) | crc32c u32 LE | magic`.
//! The checksum covers seq, prev_follower_seq and payload. Recovery policy: a record whose magic is
//! missing (torn tail) is dropped and logged; a complete record with a bad checksum is a hard error.

use crate::error::HybridError;
use std::{
    fs::{File, OpenOptions},
    io::{Read, Write},
    path::{Path, PathBuf},
};

const MAGIC: &[u8; 8] = b"RHINTENT";
const HEADER: usize = 4 + 8 + 8;
const TRAILER: usize = 4 + MAGIC.len();

/// A decoded intent record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    /// Commit sequence this intent belongs to.
    pub seq: u64,
    /// The follower's sequence before this commit (replay is valid only from there).
    pub prev_follower_seq: u64,
    /// The follower engine's exported writes.
    pub payload: Vec<u8>,
}

/// What reading the log found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntentRead {
    Empty,
    Record(Intent),
    /// A record cut short by a crash; the decision commit cannot have happened after it.
    TornTail {
        bytes: u64,
    },
}

/// The intent log file.
#[derive(Debug)]
pub struct IntentLog {
    path: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HybridError + '_ {
    move |source| HybridError::IntentIo {
        path: path.to_path_buf(),
        source,
    }
}

pub fn encode(intent: &Intent) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + intent.payload.len() + TRAILER);
    out.extend_from_slice(&(intent.payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&intent.seq.to_le_bytes());
    out.extend_from_slice(&intent.prev_follower_seq.to_le_bytes());
    out.extend_from_slice(&intent.payload);
    let crc = crc32c::crc32c(&out[4..]);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(MAGIC);
    out
}

pub fn decode(bytes: &[u8], path: &Path) -> Result<IntentRead, HybridError> {
    if bytes.is_empty() {
        return Ok(IntentRead::Empty);
    }
    let torn = Ok(IntentRead::TornTail {
        bytes: bytes.len() as u64,
    });
    if bytes.len() < HEADER + TRAILER {
        return torn;
    }
    let len = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    let total = HEADER + len + TRAILER;
    if bytes.len() < total || &bytes[total - MAGIC.len()..total] != MAGIC {
        return torn;
    }
    let crc = u32::from_le_bytes(
        bytes[HEADER + len..HEADER + len + 4]
            .try_into()
            .expect("4 bytes"),
    );
    if crc32c::crc32c(&bytes[4..HEADER + len]) != crc {
        return Err(HybridError::CorruptIntent {
            path: path.to_path_buf(),
            offset: (HEADER + len) as u64,
        });
    }
    Ok(IntentRead::Record(Intent {
        seq: u64::from_le_bytes(bytes[4..12].try_into().expect("8 bytes")),
        prev_follower_seq: u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes")),
        payload: bytes[HEADER..HEADER + len].to_vec(),
    }))
}

impl IntentLog {
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes sure the log file exists and its directory entry is durable, so that a later
    /// `write` needs only to sync the file's data for the intent to survive power loss.
    pub fn ensure_durable_file(&self) -> Result<(), HybridError> {
        if self.path.exists() {
            return Ok(());
        }
        File::create(&self.path)
            .and_then(|f| f.sync_all())
            .map_err(io(&self.path))?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io(dir))?;
        }
        Ok(())
    }

    pub fn read(&self) -> Result<IntentRead, HybridError> {
        let mut bytes = Vec::new();
        match File::open(&self.path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(io(&self.path))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(IntentRead::Empty),
            Err(e) => return Err(io(&self.path)(e)),
        }
        decode(&bytes, &self.path)
    }

    /// Writes the record and fsyncs it: after this returns, the intent survives power loss.
    pub fn write(&self, intent: &Intent) -> Result<(), HybridError> {
        let mut f = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&self.path)
            .map_err(io(&self.path))?;
        f.write_all(&encode(intent)).map_err(io(&self.path))?;
        f.sync_data().map_err(io(&self.path))
    }

    /// Empties the log. Not synced: a stale record left by a crash is recognised by its sequence.
    pub fn clear(&self) -> Result<(), HybridError> {
        match OpenOptions::new().write(true).open(&self.path) {
            Ok(f) => f.set_len(0).map_err(io(&self.path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(&self.path)(e)),
        }
    }
}
