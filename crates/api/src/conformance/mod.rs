//! One conformance suite for every engine (feature `test-utils`): a model-based property test
//! against [`crate::model_engine::ModelEngine`] and named cases that pin MDBX's semantics.
//!
//! ```ignore
//! // crates/<engine>/tests/conformance.rs
//! reth_hybrid_api::conformance_suite!(mdbx, |dir: &std::path::Path| MdbxEngine::create(dir).unwrap());
//! ```

pub mod cases;
mod random;

pub use random::{CursorCall, Op, replay_operations, run_random_operations};

/// A fresh temporary directory for one engine instance.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("create a temp dir for a conformance engine")
}

/// Number of random cases: `RETH_HYBRID_CONFORMANCE_CASES` or the CI default. A case runs 1 to
/// [`OPS_PER_CASE`] operations (about 250 on average, so shrinking can drop operations): the
/// default of 400 cases is about 100k operations per engine; the documented long run is
/// `RETH_HYBRID_CONFORMANCE_CASES=4000` (about 1M operations).
pub fn random_cases() -> u32 {
    std::env::var("RETH_HYBRID_CONFORMANCE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400)
}

/// The sequence named by `RETH_HYBRID_CONFORMANCE_REPLAY`, if any.
pub fn recorded_operations() -> Option<Vec<Op>> {
    let path = std::env::var("RETH_HYBRID_CONFORMANCE_REPLAY").ok()?;
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {path}: {e}")))
}

/// Most operations per random case.
pub const OPS_PER_CASE: usize = 500;

/// Stamps the whole suite into a module: `conformance_suite!(name, |dir: &Path| -> Engine)`.
#[macro_export]
macro_rules! conformance_suite {
    ($name:ident, $factory:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn model_based_random_operations() {
                $crate::conformance::run_random_operations(&$factory);
            }

            /// Replays `RETH_HYBRID_CONFORMANCE_REPLAY=<trace.json>` (a debugging tool, not a check).
            #[test]
            #[ignore = "debugging tool: replays the trace named by RETH_HYBRID_CONFORMANCE_REPLAY; run with --ignored"]
            fn replay_recorded_operations() {
                let ops = $crate::conformance::recorded_operations()
                    .expect("set RETH_HYBRID_CONFORMANCE_REPLAY to a trace written via RETH_HYBRID_CONFORMANCE_TRACE");
                $crate::conformance::replay_operations(&$factory, &ops).expect("replayed sequence diverged");
            }

            $crate::conformance_suite!(@cases $factory;
                fresh_cursor_next_is_first_prev_is_last,
                seek_past_end_then_step,
                seek_exact_miss_invalidates_cursor,
                delete_current_then_next_returns_following_row,
                delete_last_row_then_current_returns_previous,
                dupsort_upsert_adds_duplicate_and_put_is_idempotent,
                seek_by_key_subkey_returns_first_value_at_or_after_subkey,
                next_dup_stays_within_key,
                delete_current_duplicates_removes_every_value_of_key,
                append_out_of_order_fails_with_key_mismatch,
                append_dup_checks_only_the_keys_own_duplicates,
                append_last_adds_rows_that_sort_last,
                dup_count_counts_the_current_keys_rows_without_moving,
                insert_existing_fails_and_positions_on_existing,
                delete_with_value_removes_exactly_that_duplicate,
                write_transaction_reads_its_own_writes,
                read_transaction_is_a_snapshot,
                abort_discards_writes,
                clear_removes_all_rows_and_keeps_table,
                entries_counts_duplicates,
                delete_on_unpositioned_cursor_fails_with_no_data,
                typed_walkers_follow_reth_semantics,
                typed_dupsort_insert_refuses_an_existing_key
            );
        }
    };
    (@cases $factory:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                let dir = $crate::conformance::tempdir();
                let engine = ($factory)(dir.path());
                $crate::conformance::cases::$case(&engine);
            }
        )*
    };
}
