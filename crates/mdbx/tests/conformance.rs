//! The shared conformance suite on real MDBX: this is where the model's semantics are checked
//! against the reference engine.

use reth_hybrid_mdbx::{Geometry, MdbxEngine, MdbxOptions};

reth_hybrid_api::conformance_suite!(mdbx, |dir: &std::path::Path| {
    MdbxEngine::open(dir, MdbxOptions::create().with_geometry(Geometry::SMALL))
        .expect("create MDBX datadir")
});
