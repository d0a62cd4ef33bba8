//! reth's pipeline over the hybrid: the stages an unwind runs, built as reth's `stage unwind`
//! and its start-up heal build them.

use super::env::{HybridFactory, HybridTypes};
use alloy_primitives::B256;
use reth_config::Config;
use reth_consensus::noop::NoopConsensus;
use reth_downloaders::{bodies::noop::NoopBodiesDownloader, headers::noop::NoopHeaderDownloader};
use reth_exex::ExExManagerHandle;
use reth_node_ethereum::EthEvmConfig;
use reth_stages::{
    ExecutionStageThresholds, Pipeline, StageId, StageSet,
    sets::{DefaultStages, OfflineStages},
    stages::ExecutionStage,
};
use reth_static_file::StaticFileProducer;
use std::sync::Arc;
use tokio::sync::watch;

/// The pipeline `stage unwind` runs: every default stage with no-op downloaders (an unwind
/// downloads nothing) and an execution stage without thresholds; `offline` keeps headers,
/// bodies and senders.
pub fn unwind_pipeline(
    factory: HybridFactory,
    config: &Config,
    evm: EthEvmConfig,
    offline: bool,
) -> Pipeline<HybridTypes> {
    let prune_modes = config.prune.segments.clone();
    let (tip_tx, tip_rx) = watch::channel(B256::ZERO);
    let builder = if offline {
        Pipeline::<HybridTypes>::builder().add_stages(
            OfflineStages::new(
                evm,
                NoopConsensus::arc(),
                config.stages.clone(),
                prune_modes.clone(),
            )
            .builder()
            .disable(StageId::SenderRecovery),
        )
    } else {
        let unbounded = ExecutionStageThresholds {
            max_blocks: None,
            max_changes: None,
            max_cumulative_gas: None,
            max_duration: None,
        };
        Pipeline::<HybridTypes>::builder()
            .with_tip_sender(tip_tx)
            .add_stages(
                DefaultStages::new(
                    factory.clone(),
                    tip_rx,
                    Arc::new(NoopConsensus::default()),
                    NoopHeaderDownloader::default(),
                    NoopBodiesDownloader::default(),
                    evm.clone(),
                    config.stages.clone(),
                    prune_modes.clone(),
                    None,
                )
                .set(ExecutionStage::new(
                    evm,
                    Arc::new(NoopConsensus::default()),
                    unbounded,
                    config.stages.execution_external_clean_threshold(),
                    ExExManagerHandle::empty(),
                )),
            )
    };
    builder.build(
        factory.clone(),
        StaticFileProducer::new(factory, prune_modes),
    )
}
