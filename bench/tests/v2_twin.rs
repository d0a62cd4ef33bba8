//! The adoption benchmark's v2 twin is what it claims: adopted, it gives back the generated v1
//! datadir's rows table by table, and its tries (built here from the hashed state) come back
//! under v1's keys with the root the adoption recomputed and checked.

#[path = "../../crates/migrate/tests/common/mod.rs"]
mod common;

use reth_hybrid_adopt::{NoProgress, adopt_to_v1};
use reth_hybrid_api::{
    Decode, Decompress, Tables,
    models::{StageCheckpoint, StoredNibbles},
};
use reth_hybrid_bench::v2_twin::{FlatStaticFiles, OurMdbx, make_v2_twin};

#[test]
fn the_v2_twin_adopts_back_to_the_generated_datadir() {
    let v1 = common::generated(3, 17);
    let expected = common::all_rows(v1.path());
    let work = tempfile::tempdir().expect("tmp");
    let twin = work.path().join("twin");
    let report = make_v2_twin(v1.path(), &twin).expect("twin");
    assert_eq!(report.head, 300);
    assert!(report.accounts_trie > 0 && report.upstream_rows > 0 && report.senders > 0);

    // The v2 twin holds none of the staged rows.
    let twin_rows = common::all_rows(&twin);
    for table in reth_hybrid_adopt::STAGED_TABLES {
        assert!(twin_rows[&table].is_empty(), "{table}");
    }

    let files = FlatStaticFiles::open(&twin.join("static")).expect("open");
    let adopted = adopt_to_v1(&twin, &OurMdbx, &files, &NoProgress).expect("adopt");
    assert_eq!(adopted.head, 300);
    assert!(
        !twin.join("static").exists(),
        "the stand-in is removed as reth's segments are"
    );

    let rows = common::all_rows(&twin);
    for table in Tables::ALL {
        if matches!(
            table,
            Tables::AccountsTrie | Tables::StoragesTrie | Tables::StageCheckpoints
        ) {
            continue;
        }
        assert!(
            rows[&table] == expected[&table],
            "{table} differs after adoption"
        );
    }
    // The stages: at the same blocks (adoption writes v1's progress counters, which the generator
    // leaves out).
    let blocks = |rows: &[(Vec<u8>, Vec<u8>)]| -> Vec<(Vec<u8>, u64)> {
        rows.iter()
            .map(|(k, v)| {
                let checkpoint = StageCheckpoint::decompress(v).expect("checkpoint");
                (k.clone(), checkpoint.block_number)
            })
            .collect()
    };
    assert_eq!(
        blocks(&rows[&Tables::StageCheckpoints]),
        blocks(&expected[&Tables::StageCheckpoints])
    );
    // The tries: v1 keys now, as many as the twin had.
    assert_eq!(
        rows[&Tables::AccountsTrie].len() as u64,
        report.accounts_trie
    );
    assert_eq!(
        rows[&Tables::StoragesTrie].len() as u64,
        report.storages_trie
    );
    for (key, _) in &rows[&Tables::AccountsTrie] {
        StoredNibbles::decode(key).expect("a v1 key");
    }
}
