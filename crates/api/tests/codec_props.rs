//! Property tests: every key and value type round-trips, and for every key type the byte order
//! of encodings equals the logical order of keys (engines compare bytes, reth compares keys).

use alloy_primitives::{Address, B256, U256};
use alloy_trie::Nibbles;
use proptest::prelude::*;
use reth_hybrid_api::{Compress, Decode, Decompress, Encode, models::*, table::compress_to_vec};
use std::fmt::Debug;

fn address() -> impl Strategy<Value = Address> {
    // A small alphabet makes equal prefixes (and so the later fields) matter.
    prop::array::uniform20(prop::sample::select(vec![0u8, 1, 0x7f, 0x80, 0xff]))
        .prop_map(Address::from)
}

fn b256() -> impl Strategy<Value = B256> {
    prop::array::uniform32(prop::sample::select(vec![0u8, 1, 0x7f, 0x80, 0xff]))
        .prop_map(B256::from)
}

fn block() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..300,
        Just(u64::MAX),
        any::<u64>(),
        (0u64..8).prop_map(|s| 1u64 << (8 * s))
    ]
}

fn nibbles() -> impl Strategy<Value = Nibbles> {
    prop::collection::vec(0u8..16, 0..=64).prop_map(|v| Nibbles::from_nibbles(&v))
}

fn u256() -> impl Strategy<Value = U256> {
    prop_oneof![
        Just(U256::ZERO),
        any::<u64>().prop_map(U256::from),
        any::<[u8; 32]>().prop_map(U256::from_be_bytes)
    ]
}

fn account() -> impl Strategy<Value = Account> {
    (any::<u64>(), u256(), prop::option::of(b256())).prop_map(|(nonce, balance, bytecode_hash)| {
        Account {
            nonce,
            balance,
            bytecode_hash,
        }
    })
}

fn prune_segment() -> impl Strategy<Value = PruneSegment> {
    prop::sample::select(vec![
        PruneSegment::SenderRecovery,
        PruneSegment::TransactionLookup,
        PruneSegment::Receipts,
        PruneSegment::ContractLogs,
        PruneSegment::AccountHistory,
        PruneSegment::StorageHistory,
        PruneSegment::Headers,
        PruneSegment::Transactions,
        PruneSegment::MerkleChangeSets,
        PruneSegment::Bodies,
    ])
}

fn check_key<K: Encode + Decode + Ord + Clone + Debug>(a: K, b: K) -> Result<(), TestCaseError> {
    let (ea, eb) = (a.clone().encode(), b.clone().encode());
    prop_assert_eq!(K::decode(ea.as_ref())?, a.clone());
    prop_assert_eq!(K::decode(eb.as_ref())?, b.clone());
    prop_assert_eq!(
        a.cmp(&b),
        ea.as_ref().cmp(eb.as_ref()),
        "byte order differs for {:?} vs {:?}",
        a,
        b
    );
    Ok(())
}

fn check_value<V: Compress + Decompress + PartialEq + Debug + Clone>(
    v: V,
) -> Result<(), TestCaseError> {
    let bytes = compress_to_vec(&v);
    prop_assert_eq!(&bytes, &v.clone().compress().into());
    prop_assert_eq!(
        V::decompress(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?,
        v
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn u64_keys_order(a in block(), b in block()) { check_key(a, b)?; }

    #[test]
    fn address_keys_order(a in address(), b in address()) { check_key(a, b)?; }

    #[test]
    fn b256_keys_order(a in b256(), b in b256()) { check_key(a, b)?; }

    #[test]
    fn string_keys_order(a in "[a-zA-Z_]{0,12}", b in "[a-zA-Z_]{0,12}") { check_key(a, b)?; }

    #[test]
    fn sharded_key_order(a in (address(), block()), b in (address(), block())) {
        check_key(ShardedKey::new(a.0, a.1), ShardedKey::new(b.0, b.1))?;
    }

    #[test]
    fn storage_sharded_key_order(a in (address(), b256(), block()), b in (address(), b256(), block())) {
        check_key(StorageShardedKey::new(a.0, a.1, a.2), StorageShardedKey::new(b.0, b.1, b.2))?;
    }

    #[test]
    fn block_number_address_order(a in (block(), address()), b in (block(), address())) {
        check_key(BlockNumberAddress(a), BlockNumberAddress(b))?;
    }

    #[test]
    fn stored_nibbles_order(a in nibbles(), b in nibbles()) {
        check_key(StoredNibbles(a), StoredNibbles(b))?;
    }

    #[test]
    fn stored_nibbles_subkey_order(a in nibbles(), b in nibbles()) {
        check_key(StoredNibblesSubKey(a), StoredNibblesSubKey(b))?;
    }

    /// Adoption converts v2's trie rows one by one in table order: the packed bytes must decode
    /// to the same path and sort exactly as the v1 bytes do.
    #[test]
    fn packed_nibbles_round_trip_in_v1_order(a in nibbles(), b in nibbles()) {
        let (pa, pb) = (PackedStoredNibbles(a).to_array(), PackedStoredNibbles(b).to_array());
        prop_assert_eq!(&PackedStoredNibbles::from_bytes(&pa).expect("packed bytes decode").0, &a);
        let v1 = (StoredNibbles(a).encode(), StoredNibbles(b).encode());
        prop_assert_eq!(pa.cmp(&pb), v1.0.cmp(&v1.1));
        let sub = (StoredNibblesSubKey(a).encode(), StoredNibblesSubKey(b).encode());
        prop_assert_eq!(pa.cmp(&pb), sub.0.cmp(&sub.1));
    }

    #[test]
    fn block_access_list_key_order(a in (block(), b256()), b in (block(), b256())) {
        check_key(
            StoredBlockAccessListKey { block_number: a.0, block_hash: a.1 },
            StoredBlockAccessListKey { block_number: b.0, block_hash: b.1 },
        )?;
    }

    #[test]
    fn small_enum_keys_order(a in prune_segment(), b in prune_segment(), x in any::<bool>(), y in any::<bool>()) {
        check_key(a, b)?;
        let chain = |v: bool| if v { ChainStateKey::LastSafeBlock } else { ChainStateKey::LastFinalizedBlock };
        check_key(chain(x), chain(y))?;
    }

    #[test]
    fn account_values_round_trip(a in account()) { check_value(a)?; }

    #[test]
    fn storage_entry_values_round_trip(key in b256(), value in u256()) {
        let entry = StorageEntry { key, value };
        check_value(entry)?;
        prop_assert!(compress_to_vec(&entry).starts_with(key.as_slice()));
    }

    #[test]
    fn account_before_tx_round_trip(address in address(), info in prop::option::of(account())) {
        check_value(AccountBeforeTx { address, info })?;
    }

    #[test]
    fn integer_list_round_trip(mut blocks in prop::collection::vec(prop_oneof![0u64..5000, any::<u64>()], 0..2500)) {
        blocks.sort_unstable();
        blocks.dedup();
        let list = IntegerList::new(blocks.clone()).expect("sorted input");
        check_value(list.clone())?;
        prop_assert_eq!(list.iter().collect::<Vec<_>>(), blocks);
    }

    #[test]
    fn body_indices_round_trip(first_tx_num in any::<u64>(), tx_count in any::<u64>()) {
        check_value(StoredBlockBodyIndices { first_tx_num, tx_count })?;
    }

    #[test]
    fn stage_checkpoint_round_trip(block_number in any::<u64>(), processed in any::<u64>(), total in any::<u64>(), which in 0u8..4, addr in prop::option::of(address())) {
        let progress = EntitiesCheckpoint { processed, total };
        let block_range = CheckpointBlockRange { from: processed, to: total };
        let unit = match which {
            0 => None,
            1 => Some(StageUnitCheckpoint::Entities(progress)),
            2 => Some(StageUnitCheckpoint::Account(AccountHashingCheckpoint { address: addr, block_range, progress })),
            _ => Some(StageUnitCheckpoint::Execution(ExecutionCheckpoint { block_range, progress })),
        };
        check_value(StageCheckpoint { block_number, stage_checkpoint: unit })?;
    }

    #[test]
    fn prune_checkpoint_round_trip(block in prop::option::of(any::<u64>()), tx in prop::option::of(any::<u64>()), mode in 0u8..3, n in any::<u64>()) {
        let prune_mode = match mode { 0 => PruneMode::Full, 1 => PruneMode::Distance(n), _ => PruneMode::Before(n) };
        check_value(PruneCheckpoint { block_number: block, tx_number: tx, prune_mode })?;
    }

    #[test]
    fn client_version_round_trip(version in ".{0,12}", git_sha in "[0-9a-f]{0,40}", build_timestamp in ".{0,20}") {
        check_value(ClientVersion { version, git_sha, build_timestamp })?;
    }

    #[test]
    fn scalar_values_round_trip(n in any::<u64>(), bytes in prop::collection::vec(any::<u8>(), 0..300), u in u256()) {
        check_value(n)?;
        check_value(bytes)?;
        check_value(CompactU256(u))?;
    }
}

#[test]
fn malformed_keys_are_errors_not_panics() {
    assert!(u64::decode(&[1, 2, 3]).is_err());
    assert!(Address::decode(&[0; 19]).is_err());
    assert!(ShardedKey::<Address>::decode(&[0; 27]).is_err());
    assert!(StorageShardedKey::decode(&[0; 61]).is_err());
    assert!(BlockNumberAddress::decode(&[0; 20]).is_err());
    assert!(StoredNibbles::decode(&[0x10]).is_err());
    assert!(StoredNibblesSubKey::decode(&[0; 64]).is_err());
    assert!(PackedStoredNibbles::from_bytes(&[0; 32]).is_err());
    let mut count_65 = [0u8; 33];
    count_65[32] = 65;
    assert!(PackedStoredNibbles::from_bytes(&count_65).is_err());
    // Three nibbles, but the fourth (padding) is set: not a path reth wrote.
    let mut padding_set = [0u8; 33];
    (padding_set[0], padding_set[1], padding_set[32]) = (0xab, 0xcd, 3);
    assert!(PackedStoredNibbles::from_bytes(&padding_set).is_err());
    assert!(PruneSegment::decode(&[10]).is_err());
    assert!(ChainStateKey::decode(&[2]).is_err());
    assert!(String::decode(&[0xff, 0xfe]).is_err());
}

fn branch_node() -> impl Strategy<Value = alloy_trie::BranchNodeCompact> {
    (
        any::<u16>(),
        any::<u16>(),
        any::<u16>(),
        prop::option::of(b256()),
        b256(),
    )
        .prop_map(|(state, tree, hash, root, h)| {
            let state = state | 1;
            let (tree, hash) = (tree & state, hash & state);
            let hashes = vec![h; hash.count_ones() as usize];
            alloy_trie::BranchNodeCompact::new(state, tree, hash, hashes, root)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn trie_values_round_trip(node in branch_node(), path in nibbles()) {
        check_value(node.clone())?;
        let entry = StorageTrieEntry { nibbles: StoredNibblesSubKey(path), node };
        check_value(entry.clone())?;
        prop_assert!(compress_to_vec(&entry).starts_with(&entry.nibbles.clone().encode()));
    }

    /// Raw code that starts with EIP-7702's magic (0xef01) must be a whole delegation: revm
    /// refuses any other, so such code is checked as the error it is, and delegations on their own.
    #[test]
    fn bytecode_round_trip(code in prop::collection::vec(any::<u8>(), 0..200), who in address()) {
        match Bytecode::new_raw_checked(code.clone().into()) {
            Ok(bytecode) => check_value(bytecode)?,
            Err(_) => prop_assert!(code.starts_with(&[0xef, 0x01])),
        }
        let delegation = [&[0xef, 0x01, 0x00][..], who.as_slice()].concat();
        let delegation = Bytecode::new_raw_checked(delegation.into()).expect("a whole delegation");
        prop_assert!(delegation.is_eip7702());
        check_value(delegation)?;
    }

    #[test]
    fn block_values_round_trip(number in any::<u64>(), gas in any::<u64>(), fee in prop::option::of(any::<u64>()), extra in prop::collection::vec(any::<u8>(), 0..32), idx in any::<u64>(), who in address()) {
        let header = Header { number, gas_limit: gas, base_fee_per_gas: fee, extra_data: extra.into(), ..Default::default() };
        check_value(header.clone())?;
        check_value(StoredBlockOmmers { ommers: vec![header.clone(), header] })?;
        let withdrawal = alloy_eips::eip4895::Withdrawal { index: idx, validator_index: idx / 2, address: who, amount: gas };
        check_value(StoredBlockWithdrawals { withdrawals: alloy_eips::eip4895::Withdrawals::new(vec![withdrawal]) })?;
    }

    #[test]
    fn receipt_round_trip(success in any::<bool>(), gas in any::<u64>(), logs in 0usize..3, who in address(), topic in b256()) {
        let log = alloy_primitives::Log::new_unchecked(who, vec![topic], vec![1u8, 2, 3].into());
        let receipt = Receipt { tx_type: alloy_consensus::TxType::Eip1559, success, cumulative_gas_used: gas, logs: vec![log; logs] };
        check_value(receipt)?;
    }

    #[test]
    fn block_access_list_round_trip(hash in b256(), raw in prop::collection::vec(any::<u8>(), 0..100)) {
        check_value(StoredBlockAccessList { hash, raw: raw.into() })?;
    }

    #[test]
    fn client_version_key_round_trip(version in "[0-9.]{0,8}", sha in "[0-9a-f]{0,8}") {
        let v = ClientVersion { version, git_sha: sha, build_timestamp: String::new() };
        prop_assert_eq!(ClientVersion::decode(v.clone().encode().as_ref())?, v);
    }

    #[test]
    fn storage_settings_round_trip(v2 in any::<bool>()) {
        let s = StorageSettings { storage_v2: v2 };
        prop_assert_eq!(StorageSettings::from_json_bytes(&s.to_json_bytes()).expect("json"), s);
    }
}

#[test]
fn truncated_values_are_decode_errors_not_panics() {
    use reth_hybrid_api::{tables as t, typed::decode_value};
    let account = compress_to_vec(&Account {
        nonce: 5,
        balance: U256::from(7),
        bytecode_hash: Some(B256::ZERO),
    });
    let err =
        decode_value::<t::PlainAccountState>(&[0xaa; 20], &account[..3]).expect_err("truncated");
    let msg = err.to_string();
    assert!(
        msg.contains("PlainAccountState") && msg.contains("aaaa"),
        "names table and key: {msg}"
    );
    assert!(decode_value::<t::AccountsHistory>(&[0; 28], &[1, 2, 3]).is_err());
    assert!(decode_value::<t::BlockAccessLists>(&[0; 40], &[0; 31]).is_err());
}
