//! SIGKILL points between adoption's durable steps (feature `crash-points`, for the kill tests;
//! `reth_hybrid_api::crash_point` says how they are driven). Without the feature they compile
//! to nothing.

macro_rules! crash_point {
    ($point:literal) => {
        #[cfg(feature = "crash-points")]
        reth_hybrid_api::crash_point::reached($point);
    };
}
pub(crate) use crash_point;
