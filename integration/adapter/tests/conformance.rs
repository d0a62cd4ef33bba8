//! reth's own MDBX, wrapped as a reth-hybrid engine, passes the same conformance suite as
//! reth-hybrid's MDBX and RocksDB engines; and the hybrid over it, too.

use reth_db::{
    DatabaseEnv,
    mdbx::{DatabaseArguments, DatabaseEnvKind},
};
use reth_db_api::models::ClientVersion;
use reth_hybrid_adapter::RethMdbx;
use std::sync::Arc;

fn reth_mdbx(dir: &std::path::Path) -> RethMdbx {
    let mut env = DatabaseEnv::open(
        &dir.join("db"),
        DatabaseEnvKind::RW,
        DatabaseArguments::new(ClientVersion::default()),
    )
    .expect("open reth's MDBX");
    env.create_tables().expect("tables");
    RethMdbx::new(Arc::new(env)).expect("wrap")
}

reth_hybrid_api::conformance_suite!(reth_mdbx, |dir: &std::path::Path| reth_mdbx(dir));
