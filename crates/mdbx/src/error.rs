//! MDBX error codes and the engine's own errors (datadir checks, lock), kept as sources.

use reth_hybrid_api::{DatabaseError, DatabaseErrorInfo, DatabaseWriteOperation, Tables};
use std::{ffi::CStr, path::PathBuf};

/// A raw MDBX return code with its library message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{} ({code})", mdbx_message(*.code))]
pub struct MdbxCode {
    pub code: i32,
}

fn mdbx_message(code: i32) -> String {
    // SAFETY: mdbx_strerror returns a pointer to a static, NUL-terminated string for any code.
    unsafe { CStr::from_ptr(mdbx_sys::mdbx_strerror(code)) }
        .to_string_lossy()
        .into_owned()
}

/// Problems with a datadir that MDBX itself does not report.
#[derive(Debug, thiserror::Error)]
pub enum MdbxError {
    #[error(
        "datadir {path} is locked by running process {pid}; stop that reth node (or reth-hybrid command) first"
    )]
    Locked { path: PathBuf, pid: u32 },
    #[error(
        "datadir {path} is being locked by another reth-hybrid process that has not written its pid to db/lock yet; stop that command or let it finish, then run again"
    )]
    LockBusy { path: PathBuf },
    #[error(
        "datadir {path} is already open read-write in this process; drop the other handle before opening it again"
    )]
    AlreadyOpen { path: PathBuf },
    #[error("{path} has database version {found}, this tool supports version {supported}")]
    UnsupportedVersion {
        path: PathBuf,
        found: String,
        supported: u32,
    },
    #[error("no MDBX database at {path}; pass the reth datadir (the folder that holds db/)")]
    Missing { path: PathBuf },
    #[error("I/O error on {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("opening {path}: {code}")]
    Open { path: PathBuf, code: MdbxCode },
}

impl From<MdbxError> for DatabaseError {
    fn from(e: MdbxError) -> Self {
        let code = match &e {
            MdbxError::Open { code, .. } => code.code,
            _ => -1,
        };
        DatabaseError::Open(
            DatabaseErrorInfo::new(e.to_string(), code)
                .with_engine("mdbx")
                .with_source(e),
        )
    }
}

pub(crate) fn info(code: i32, table: Option<Tables>) -> DatabaseErrorInfo {
    let message = match table {
        Some(t) => format!("{} in table {t}", mdbx_message(code)),
        None => mdbx_message(code),
    };
    DatabaseErrorInfo::new(message, code)
        .with_engine("mdbx")
        .with_source(MdbxCode { code })
}

pub(crate) fn write_error(
    code: i32,
    op: DatabaseWriteOperation,
    table: Tables,
    key: &[u8],
) -> DatabaseError {
    DatabaseError::write(info(code, None), op, table.name(), key)
}
