//! `ClientVersion`: value of `VersionHistory`, three compact strings.

use crate::{
    DatabaseError,
    table::{Decode, Encode},
};
use reth_codecs::Compact;
use serde::{Deserialize, Serialize};

/// The client that opened the database read-write (one row per change, keyed by unix time).
#[derive(Debug, Default, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ClientVersion {
    pub version: String,
    pub git_sha: String,
    pub build_timestamp: String,
}

impl Compact for ClientVersion {
    fn to_compact<B>(&self, buf: &mut B) -> usize
    where
        B: bytes::BufMut + AsMut<[u8]>,
    {
        self.version.to_compact(buf)
            + self.git_sha.to_compact(buf)
            + self.build_timestamp.to_compact(buf)
    }

    fn from_compact(buf: &[u8], len: usize) -> (Self, &[u8]) {
        let (version, buf) = String::from_compact(buf, len);
        let (git_sha, buf) = String::from_compact(buf, len);
        let (build_timestamp, buf) = String::from_compact(buf, len);
        (
            Self {
                version,
                git_sha,
                build_timestamp,
            },
            buf,
        )
    }
}

reth_codecs::impl_compression_for_compact!(ClientVersion);

impl Encode for ClientVersion {
    type Encoded = Vec<u8>;
    fn encode(self) -> Self::Encoded {
        super::keys::compact_to_vec(&self)
    }
}

impl Decode for ClientVersion {
    fn decode(value: &[u8]) -> Result<Self, DatabaseError> {
        Ok(Self::from_compact(value, value.len()).0)
    }
}
