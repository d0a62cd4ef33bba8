//! The hybrid's crash and concurrency tests, generic over the engine pair, so the pair a node
//! really runs (reth's MDBX with our RocksDB, in `integration/`) is held to exactly the tests our
//! own pair passes. [`pair_suite!`](crate::pair_suite) expands them into `#[test]`s of the calling test binary.
//!
//! Feature `test-suites` (it turns on the crash and fault points the tests drive).

pub mod control_rows;
pub mod crash;
pub mod readers;
pub mod stress;
pub mod workload;

use crate::{FollowerSync, HybridDb};
use reth_hybrid_api::raw::{RawEngine, RawReplay};
use std::path::Path;

/// An error from opening a pair: ours are [`HybridError`](crate::HybridError)s, a node's open
/// reports `eyre`.
pub type OpenError = Box<dyn std::error::Error + Send + Sync>;

/// Opens (creating if needed) the hybrid of the pair under test in a datadir, recovering a
/// commit in flight. Called once per process and datadir at a time, and again after kills.
pub type Open<P, F> = fn(&Path) -> Result<HybridDb<P, F>, OpenError>;

/// Whether the pair under test defers RocksDB's syncs. The suite then needs a sync after every
/// commit (`max_commits: 1`), so that each commit passes every point it holds or kills at; a
/// pair whose commits all export SST files (spilling) must run with `EveryCommit`.
pub(crate) fn deferred<P: RawEngine, F: RawReplay>(open: Open<P, F>) -> bool {
    let dir = tempfile::tempdir().expect("tmp");
    let sync = open(dir.path()).expect("open").follower_sync();
    match sync {
        FollowerSync::EveryCommit => false,
        FollowerSync::Deferred { max_commits, .. } => {
            assert_eq!(
                max_commits, 1,
                "the pair suite runs deferred syncs after every commit (max_commits: 1)"
            );
            true
        }
    }
}

/// Expands the suite into `#[test]` functions for a pair opened by `$open` (an
/// [`Open`](crate::suites::Open) function). Invoke it at the root of a test binary: the crash
/// tests re-run the binary on its `crash_child` test by that exact name.
#[macro_export]
macro_rules! pair_suite {
    ($open:expr) => {
        /// Entry point of the crash tests' child process; does nothing when run on its own.
        #[test]
        #[ignore = "entry point of the crash tests' child process; run by them"]
        fn crash_child() {
            $crate::suites::crash::child($open);
        }

        #[test]
        fn kills_at_every_crash_point_leave_no_torn_commit() {
            $crate::suites::crash::kills_at_every_crash_point($open);
        }

        #[test]
        fn kills_in_clearing_commits_leave_no_torn_commit() {
            $crate::suites::crash::kills_in_clearing_commits($open);
        }

        #[test]
        fn control_rows_survive_a_metadata_clear_and_refuse_writes() {
            $crate::suites::control_rows::survive_a_metadata_clear_and_refuse_writes($open);
        }

        #[test]
        fn kills_at_random_times_leave_no_torn_commit() {
            $crate::suites::crash::kills_at_random_times($open);
        }

        #[test]
        fn readers_never_see_a_commit_in_one_engine_only() {
            $crate::suites::readers::readers_never_see_a_commit_in_one_engine_only($open);
        }

        #[test]
        fn a_reader_opens_while_a_commit_is_held_before_the_decision() {
            $crate::suites::readers::a_reader_opens_while_a_commit_is_held_before_the_decision(
                $open,
            );
        }

        #[test]
        fn a_reader_opens_while_a_commit_is_held_after_the_decision() {
            $crate::suites::readers::a_reader_opens_while_a_commit_is_held_after_the_decision(
                $open,
            );
        }

        #[test]
        fn readers_opened_during_a_held_commit_keep_their_snapshot() {
            $crate::suites::readers::readers_opened_during_a_held_commit_keep_their_snapshot($open);
        }

        #[test]
        fn a_write_racing_a_clean_commit_fails_it_instead_of_being_lost() {
            $crate::suites::readers::a_write_racing_a_clean_commit_fails_it($open);
        }

        #[test]
        fn readers_see_one_commit_in_both_engines_across_many_commits() {
            $crate::suites::stress::readers_see_one_commit_in_both_engines_across_many_commits(
                $open,
            );
        }
    };
}
