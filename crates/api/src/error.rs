//! The one error type of the reth-shaped API, variant for variant like reth's `DatabaseError`,
//! with the context (table, key, engine) an operator needs to act on a failure.

use std::{fmt, sync::Arc};

/// Error codes shared by every engine, taken from MDBX so that a failure reads the same whichever
/// engine holds the table (reth code matches on these in a few places).
pub mod codes {
    /// `MDBX_KEYEXIST`: `insert` of a key (or dupsort pair) that already exists.
    pub const KEY_EXIST: i32 = -30799;
    /// `MDBX_NOTFOUND`: nothing at the requested position.
    pub const NOT_FOUND: i32 = -30798;
    /// `MDBX_EKEYMISMATCH`: `append`/`append_dup` out of order.
    pub const KEY_MISMATCH: i32 = -30418;
    /// `MDBX_EINVAL`: an operation that needs a positioned cursor on an unpositioned one.
    pub const INVALID: i32 = 22;
    /// `MDBX_INCOMPATIBLE`: a dupsort operation on a table that is not dupsort.
    pub const INCOMPATIBLE: i32 = -30784;
    /// `MDBX_EACCESS`: a write through a read-only transaction.
    pub const ACCESS: i32 = 13;
}

/// What failed inside an engine: its message and code, which engine, and the engine's own error.
#[derive(Clone)]
pub struct DatabaseErrorInfo {
    pub message: Box<str>,
    pub code: i32,
    /// Engine that raised the error (`mdbx`, `rocksdb`, `model`, `hybrid`), if known.
    pub engine: Option<&'static str>,
    /// Engine error kept whole so callers can inspect it (never flattened into the message).
    pub source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl DatabaseErrorInfo {
    pub fn new(message: impl Into<Box<str>>, code: i32) -> Self {
        Self {
            message: message.into(),
            code,
            engine: None,
            source: None,
        }
    }

    pub fn with_engine(mut self, engine: &'static str) -> Self {
        self.engine = Some(engine);
        self
    }

    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }
}

impl fmt::Debug for DatabaseErrorInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseErrorInfo")
            .field("message", &self.message)
            .field("code", &self.code)
            .field("engine", &self.engine)
            .finish()
    }
}

impl fmt::Display for DatabaseErrorInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.engine {
            Some(engine) => write!(f, "{engine}: {} (code {})", self.message, self.code),
            None => write!(f, "{} (code {})", self.message, self.code),
        }
    }
}

impl PartialEq for DatabaseErrorInfo {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message && self.code == other.code && self.engine == other.engine
    }
}
impl Eq for DatabaseErrorInfo {}

/// The write that failed, as in reth: which operation, on which table, at which key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseWriteError {
    pub info: DatabaseErrorInfo,
    pub operation: DatabaseWriteOperation,
    pub table_name: &'static str,
    pub key: Vec<u8>,
}

impl fmt::Display for DatabaseWriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "write operation {:?} failed for key \"{}\" in table {}: {}",
            self.operation,
            short_hex(&self.key),
            self.table_name,
            self.info
        )
    }
}

/// reth's write operations, verbatim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatabaseWriteOperation {
    CursorAppend,
    CursorUpsert,
    CursorInsert,
    CursorAppendDup,
    PutUpsert,
    PutAppend,
    Flush,
}

/// reth's log levels, verbatim (only used for `LogLevelUnavailable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Fatal,
    Error,
    Warn,
    Notice,
    Verbose,
    Debug,
    Trace,
    Extra,
}

/// reth's `DatabaseError`, variant for variant, so the upstream adapter maps one to one.
#[derive(Clone, Debug, thiserror::Error)]
pub enum DatabaseError {
    #[error("failed to open the database: {0}")]
    Open(DatabaseErrorInfo),
    #[error("failed to create a table: {0}")]
    CreateTable(DatabaseErrorInfo),
    #[error(transparent)]
    Write(Box<DatabaseWriteError>),
    #[error("failed to read a value from a database table: {0}")]
    Read(DatabaseErrorInfo),
    #[error("database delete error code: {0}")]
    Delete(DatabaseErrorInfo),
    #[error("failed to commit transaction changes: {0}")]
    Commit(DatabaseErrorInfo),
    #[error("failed to initialize a transaction: {0}")]
    InitTx(DatabaseErrorInfo),
    #[error("failed to initialize a cursor: {0}")]
    InitCursor(DatabaseErrorInfo),
    /// A key or value did not decode. reth's variant has no context; ours names table and key.
    #[error("failed to decode a {what} in table {table} at key {key}")]
    Decode {
        table: &'static str,
        what: &'static str,
        key: String,
    },
    #[error("failed to get stats: {0}")]
    Stats(DatabaseErrorInfo),
    #[error("log level {0:?} is not available")]
    LogLevelUnavailable(LogLevel),
    #[error("{0}")]
    Other(String),
    #[error(transparent)]
    Custom(Arc<dyn std::error::Error + Send + Sync>),
}

impl std::error::Error for DatabaseWriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.info
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl DatabaseError {
    /// A decode failure without a known row (filled in by the typed layer, which knows the table).
    pub const fn decode() -> Self {
        Self::Decode {
            table: "?",
            what: "value",
            key: String::new(),
        }
    }

    /// The engine error code, where the variant carries one.
    pub fn code(&self) -> Option<i32> {
        match self {
            Self::Open(i)
            | Self::CreateTable(i)
            | Self::Read(i)
            | Self::Delete(i)
            | Self::Commit(i)
            | Self::InitTx(i)
            | Self::InitCursor(i)
            | Self::Stats(i) => Some(i.code),
            Self::Write(w) => Some(w.info.code),
            _ => None,
        }
    }

    /// A write error as reth builds it.
    pub fn write(
        info: DatabaseErrorInfo,
        operation: DatabaseWriteOperation,
        table_name: &'static str,
        key: &[u8],
    ) -> Self {
        Self::Write(Box::new(DatabaseWriteError {
            info,
            operation,
            table_name,
            key: key.to_vec(),
        }))
    }
}

impl PartialEq for DatabaseError {
    fn eq(&self, other: &Self) -> bool {
        use DatabaseError::*;
        match (self, other) {
            (Open(a), Open(b))
            | (CreateTable(a), CreateTable(b))
            | (Read(a), Read(b))
            | (Delete(a), Delete(b))
            | (Commit(a), Commit(b))
            | (InitTx(a), InitTx(b))
            | (InitCursor(a), InitCursor(b))
            | (Stats(a), Stats(b)) => a == b,
            (Write(a), Write(b)) => a == b,
            (
                Decode {
                    table: t1,
                    what: w1,
                    key: k1,
                },
                Decode {
                    table: t2,
                    what: w2,
                    key: k2,
                },
            ) => t1 == t2 && w1 == w2 && k1 == k2,
            (LogLevelUnavailable(a), LogLevelUnavailable(b)) => a == b,
            (Other(a), Other(b)) => a == b,
            (Custom(a), Custom(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }
}

impl From<reth_codecs::DecompressError> for DatabaseError {
    fn from(_: reth_codecs::DecompressError) -> Self {
        Self::decode()
    }
}

/// First 64 bytes of a key in hex, with the full length when cut, for error messages.
pub fn short_hex(bytes: &[u8]) -> String {
    if bytes.len() <= 64 {
        hex::encode(bytes)
    } else {
        format!("{}..({} bytes)", hex::encode(&bytes[..64]), bytes.len())
    }
}
