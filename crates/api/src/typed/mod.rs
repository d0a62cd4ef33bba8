//! The reth-shaped typed API: reth's traits, and one generic implementation over raw engines.

pub mod cursor;
mod on_raw;
pub mod transaction;

pub use cursor::*;
pub use on_raw::{TypedCursor, TypedDatabase, TypedTx, decode_key, decode_value, table_of};
pub use transaction::{Database, DbTx, DbTxMut};
