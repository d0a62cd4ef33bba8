//! The reth-bench wrapper: read and compare `reth-bench new-payload-fcu` output folders (both
//! the 1.x and 2.x formats), check that a pair of datadirs makes a valid comparison, and run
//! interleaved baseline/candidate pairs.

pub mod attribution;
pub mod charts;
pub mod files;
pub mod guard;
pub mod orchestrate;
pub mod preflight;
pub mod report;
pub mod restore;
pub mod rpc;
pub mod stats;
pub mod threads;
