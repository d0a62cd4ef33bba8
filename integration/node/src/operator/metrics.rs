//! `--metrics` of the operator commands that take it (reth's `stage run`): reth's Prometheus
//! endpoint with its database, static-file and RocksDB hooks, and reth-hybrid's own operation
//! and commit metrics in it.

use super::env::HybridFactory;
use reth_chainspec::{ChainSpecProvider, EthChainSpec};
use reth_node_builder::common::metrics_hooks;
use reth_node_core::version::version_metadata;
use reth_node_metrics::{
    chain::ChainSpecInfo,
    server::{MetricServer, MetricServerConfig},
    version::VersionInfo,
};
use std::{net::SocketAddr, path::PathBuf};

pub async fn serve(
    listen_addr: SocketAddr,
    factory: &HybridFactory,
    pprof_dumps: PathBuf,
    runtime: reth_tasks::Runtime,
) -> eyre::Result<()> {
    reth_hybrid_adapter::enable_metrics();
    let version = version_metadata();
    let config = MetricServerConfig::new(
        listen_addr,
        VersionInfo {
            version: version.cargo_pkg_version.as_ref(),
            build_timestamp: version.vergen_build_timestamp.as_ref(),
            cargo_features: version.vergen_cargo_features.as_ref(),
            git_sha: version.vergen_git_sha.as_ref(),
            target_triple: version.vergen_cargo_target_triple.as_ref(),
            build_profile: version.build_profile_name.as_ref(),
        },
        ChainSpecInfo {
            name: factory.chain_spec().chain().to_string(),
        },
        runtime,
        metrics_hooks(factory),
        pprof_dumps,
    );
    MetricServer::new(config).serve().await
}
