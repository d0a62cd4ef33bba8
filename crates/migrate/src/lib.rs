//! Datadir tools, generic over the reth-shaped `Database`: today the synthetic reth datadir
//! generator; migration, verification and statistics build on it (issue: migration).

pub mod generate;

pub use generate::{GenerateReport, GenerateSpec, generate};
