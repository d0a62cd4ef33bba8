//! The intent log: the follower engine's writes of the commit in flight, made durable before the
//! decision commit so a crash between the two engines can be finished by replay.
//!
//! One record at a time, framed like fjall's journal batches so a torn write is detectable:
//! `len u32 LE | seq u64 LE | prev_follower_seq u64 LE | payload (len bytes) | crc32c u32 LE | magic`.
//! The checksum covers seq, prev_follower_seq and payload. A record that does not decode is
//! reported as `Decoded::Damaged` with what is wrong; whether it may be dropped as a torn tail
//! depends on whether MDBX decided a commit that needs it, which only recovery knows.

use crate::{error::HybridError, fault::fault_point};
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

/// What reading the log found, for callers that only inspect it (`IntentLog::read`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntentRead {
    Empty,
    Record(Intent),
    /// A record whose length or magic is wrong: a torn write, unless MDBX decided a commit that
    /// needs it (recovery refuses then; see `recovery.rs`).
    TornTail {
        bytes: u64,
    },
}

/// What is wrong with a record that does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// The file is shorter than an empty record's framing.
    Short,
    /// The length field and the file size disagree: cut short, or the length field is damaged.
    Length { record_bytes: u64 },
    /// The magic after the checksum is wrong.
    Magic,
    /// Length and magic are right, the checksum does not match: bytes changed after writing.
    Checksum,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::Short => write!(f, "shorter than a record's framing"),
            Damage::Length { record_bytes } => write!(
                f,
                "its length field makes a {record_bytes}-byte record, which the file size \
                 contradicts (cut short, or the length field is damaged)"
            ),
            Damage::Magic => write!(f, "the end-of-record magic is wrong"),
            Damage::Checksum => write!(f, "checksum mismatch in a complete record"),
        }
    }
}

/// The log's bytes, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    Empty,
    Record(Intent),
    Damaged {
        /// Size of the file.
        file_bytes: u64,
        /// Byte offset of the field found wrong.
        offset: u64,
        damage: Damage,
    },
}

/// The intent log file.
#[derive(Debug)]
pub struct IntentLog {
    path: PathBuf,
}

fn io<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(std::io::Error) -> HybridError + 'a {
    move |source| HybridError::IntentIo {
        path: path.to_path_buf(),
        op,
        source,
    }
}

/// The record's length field for a payload of `len` bytes; `None` past `u32::MAX`, which the
/// field cannot hold (a truncated length would read back as a damaged record).
pub fn length_field(len: usize) -> Option<u32> {
    u32::try_from(len).ok()
}

/// Frames the record; a payload too large for the length field is refused, never truncated.
pub fn encode(intent: &Intent) -> Result<Vec<u8>, HybridError> {
    let len = length_field(intent.payload.len()).ok_or(HybridError::IntentTooLarge {
        seq: intent.seq,
        bytes: intent.payload.len() as u64,
    })?;
    let mut out = Vec::with_capacity(HEADER + intent.payload.len() + TRAILER);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&intent.seq.to_le_bytes());
    out.extend_from_slice(&intent.prev_follower_seq.to_le_bytes());
    out.extend_from_slice(&intent.payload);
    let crc = crc32c::crc32c(&out[4..]);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(MAGIC);
    Ok(out)
}

/// Decodes the log's single record. Never fails: what is wrong is reported in `Decoded::Damaged`.
pub fn decode(bytes: &[u8]) -> Decoded {
    let file_bytes = bytes.len() as u64;
    let damaged = |offset: usize, damage| Decoded::Damaged {
        file_bytes,
        offset: offset as u64,
        damage,
    };
    if bytes.is_empty() {
        return Decoded::Empty;
    }
    if bytes.len() < HEADER + TRAILER {
        return damaged(bytes.len(), Damage::Short);
    }
    let len = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    let total = HEADER + len + TRAILER;
    if bytes.len() != total {
        return damaged(
            0,
            Damage::Length {
                record_bytes: total as u64,
            },
        );
    }
    if &bytes[total - MAGIC.len()..] != MAGIC {
        return damaged(total - MAGIC.len(), Damage::Magic);
    }
    let crc = u32::from_le_bytes(
        bytes[HEADER + len..HEADER + len + 4]
            .try_into()
            .expect("4 bytes"),
    );
    if crc32c::crc32c(&bytes[4..HEADER + len]) != crc {
        return damaged(HEADER + len, Damage::Checksum);
    }
    Decoded::Record(Intent {
        seq: u64::from_le_bytes(bytes[4..12].try_into().expect("8 bytes")),
        prev_follower_seq: u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes")),
        payload: bytes[HEADER..HEADER + len].to_vec(),
    })
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
            .map_err(io(&self.path, "create"))?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io(dir, "fsync directory"))?;
        }
        Ok(())
    }

    /// The datadir holding the log (fault points are keyed by it).
    pub(crate) fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new(""))
    }

    /// Reads and decodes the log without changing it. A missing file reads as empty.
    pub fn decode(&self) -> Result<Decoded, HybridError> {
        let mut bytes = Vec::new();
        match File::open(&self.path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(io(&self.path, "read"))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Decoded::Empty),
            Err(e) => return Err(io(&self.path, "open")(e)),
        }
        Ok(decode(&bytes))
    }

    /// The log as an inspector sees it: a wrong length or magic reads as a torn tail, a
    /// checksum mismatch as `CorruptIntent`. Recovery uses `decode`, which says more.
    pub fn read(&self) -> Result<IntentRead, HybridError> {
        Ok(match self.decode()? {
            Decoded::Empty => IntentRead::Empty,
            Decoded::Record(intent) => IntentRead::Record(intent),
            Decoded::Damaged {
                offset,
                damage: Damage::Checksum,
                ..
            } => {
                return Err(HybridError::CorruptIntent {
                    path: self.path.clone(),
                    offset,
                });
            }
            Decoded::Damaged { file_bytes, .. } => IntentRead::TornTail { bytes: file_bytes },
        })
    }

    /// Writes the record and fsyncs it: after this returns, the intent survives power loss.
    /// After an error the file may hold part of the record, or all of it unsynced; both decode
    /// as a record MDBX never decided, which the next write replaces and recovery drops.
    pub fn write(&self, intent: &Intent) -> Result<(), HybridError> {
        // ORDER: framed before the file is opened (and truncated), so a refused record leaves
        // the log as it was.
        let bytes = encode(intent)?;
        let mut f = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&self.path)
            .map_err(io(&self.path, "open"))?;
        if let Err(e) = fault_point!(IntentWrite, self.dir()) {
            // A full disk stops a write part way: leave half of the record behind.
            f.write_all(&bytes[..bytes.len() / 2])
                .map_err(io(&self.path, "write"))?;
            return Err(io(&self.path, "write")(e));
        }
        f.write_all(&bytes).map_err(io(&self.path, "write"))?;
        fault_point!(IntentFsync, self.dir())
            .and_then(|()| f.sync_data())
            .map_err(io(&self.path, "fsync"))
    }

    /// Empties the log. Not synced: a stale record left by a crash is recognised by its sequence.
    pub fn clear(&self) -> Result<(), HybridError> {
        match OpenOptions::new().write(true).open(&self.path) {
            Ok(f) => f.set_len(0).map_err(io(&self.path, "truncate")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(&self.path, "open")(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A payload whose length does not fit the 32-bit field is refused, never framed with a
    /// truncated length (which would read back as a damaged record of a decided commit).
    #[test]
    fn the_length_field_holds_up_to_u32_max_and_refuses_more() {
        assert_eq!(length_field(0), Some(0));
        assert_eq!(length_field(u32::MAX as usize), Some(u32::MAX));
        assert_eq!(length_field(u32::MAX as usize + 1), None);
        assert_eq!(
            length_field((4usize << 30) + 100),
            None,
            "4 GiB + 100 bytes"
        );
    }

    #[test]
    fn a_framed_record_reads_back() {
        let intent = Intent {
            seq: 7,
            prev_follower_seq: 5,
            payload: vec![3; 1000],
        };
        let bytes = encode(&intent).expect("frames");
        assert_eq!(
            u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")),
            1000
        );
        assert_eq!(decode(&bytes), Decoded::Record(intent));
    }
}
