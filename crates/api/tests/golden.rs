//! Golden bytes for one representative row of every table: key, subkey (dupsort) and value.
//!
//! Every hex string here was derived by hand from reth's formats (big-endian integer keys, SCALE
//! integer values, `Compact` flag layouts, roaring's portable format), not copied from our own
//! encoder's output. The derivation is in the comment above each string.

use alloy_consensus::{Header, Signed, TxLegacy, TxType};
use alloy_eips::eip4895::{Withdrawal, Withdrawals};
use alloy_primitives::{Address, B256, Bytes, Signature, TxKind, U256};
use alloy_trie::{BranchNodeCompact, Nibbles, TrieMask};
use reth_hybrid_api::{
    Compress, Decode, Decompress, DupSort, Encode, Table, Tables, models::*,
    table::compress_to_vec, tables as t,
};
use std::{collections::BTreeSet, fmt::Debug};

fn h(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    hex::decode(&s).unwrap_or_else(|e| panic!("bad hex in test {s}: {e}"))
}

fn rep(byte: &str, n: usize) -> String {
    byte.repeat(n)
}

/// Checks key and value bytes against the goldens and that both decode back to the same row.
fn row<T: Table>(
    key: T::Key,
    key_hex: &str,
    value: T::Value,
    value_hex: &str,
    seen: &mut BTreeSet<Tables>,
) where
    T::Key: PartialEq + Debug,
    T::Value: PartialEq + Debug + Clone,
{
    let encoded = key.clone().encode();
    assert_eq!(
        hex::encode(encoded.as_ref()),
        hex::encode(h(key_hex)),
        "{} key bytes",
        T::NAME
    );
    assert_eq!(
        T::Key::decode(encoded.as_ref()).expect("key decodes"),
        key,
        "{} key round trip",
        T::NAME
    );
    let compressed = compress_to_vec(&value);
    assert_eq!(
        hex::encode(&compressed),
        hex::encode(h(value_hex)),
        "{} value bytes",
        T::NAME
    );
    assert_eq!(
        hex::encode(value.clone().compress()),
        hex::encode(&compressed),
        "{} compress() == compress_to_buf",
        T::NAME
    );
    assert_eq!(
        T::Value::decompress(&compressed).expect("value decodes"),
        value,
        "{} value round trip",
        T::NAME
    );
    seen.insert(T::NAME.parse().expect("table is in the catalogue"));
}

/// For dupsort tables: the subkey's golden bytes, and that they prefix the value's bytes.
fn subkey<T: DupSort>(subkey: T::SubKey, subkey_hex: &str, value: &T::Value) {
    let encoded = subkey.encode();
    assert_eq!(
        hex::encode(encoded.as_ref()),
        hex::encode(h(subkey_hex)),
        "{} subkey bytes",
        T::NAME
    );
    let value = compress_to_vec(value);
    assert!(
        value.starts_with(encoded.as_ref()),
        "{}: subkey bytes must prefix the value bytes",
        T::NAME
    );
}

/// alloy's `Header::default()` carries the empty-trie roots; goldens use all-zero hashes.
fn zero_header() -> Header {
    Header {
        ommers_hash: B256::ZERO,
        state_root: B256::ZERO,
        transactions_root: B256::ZERO,
        receipts_root: B256::ZERO,
        ..Default::default()
    }
}

fn account_1_1000() -> Account {
    // Account { nonce: 1, balance: 1000, bytecode_hash: None }
    Account {
        nonce: 1,
        balance: U256::from(1000),
        bytecode_hash: None,
    }
}
// Account flags: 2 bytes, LSB first: nonce_len (4 bits) = 1, balance_len (6 bits) = 2,
// has_bytecode_hash (1 bit) = 0 -> 0x0021 little-endian -> 21 00; then nonce 01, balance 03e8.
const ACCOUNT_1_1000: &str = "2100 01 03e8";

#[test]
fn golden_bytes_cover_all_tables() {
    let mut seen = BTreeSet::new();
    let s = &mut seen;
    let addr = |b: u8| Address::repeat_byte(b);
    let hash = |b: u8| B256::repeat_byte(b);

    // Integer keys are 8-byte big-endian; B256 values raw.
    row::<t::CanonicalHeaders>(1234, "00000000000004d2", hash(0x11), &rep("11", 32), s);

    // CompactU256 is a derived struct: 1 flag byte (6-bit length = 2), then 01 00.
    row::<t::HeaderTerminalDifficulties>(
        1,
        "0000000000000001",
        CompactU256(U256::from(0x100)),
        "02 0100",
        s,
    );

    // u64 values are SCALE: 8 bytes little-endian.
    row::<t::HeaderNumbers>(hash(0xaa), &rep("aa", 32), 5, "0500000000000000", s);

    // Header flags (32 bits, LSB first): withdrawals_root? 1, difficulty_len 6, number_len 4,
    // gas_limit_len 4, gas_used_len 4, timestamp_len 4, nonce_len 4, base_fee? 1, blob_gas? 1,
    // excess_blob_gas? 1, parent_beacon? 1, extra_fields? 1.
    // number_len=1 (bits 7..10), gas_limit_len=4 (bits 11..14), base_fee present (bit 27):
    // 0x08002080 -> 80 20 00 08. Then parent, ommers (32+32), beneficiary (20), three roots (3x32),
    // bloom (256), number 01, gas_limit 01c9c380, mix_hash (32), base_fee Option: varuint len 01, 07.
    let header = Header {
        number: 1,
        gas_limit: 30_000_000,
        base_fee_per_gas: Some(7),
        ..zero_header()
    };
    let header_hex = format!(
        "80200008 {} 01 01c9c380 {} 0107",
        rep("00", 32 + 32 + 20 + 32 * 3 + 256),
        rep("00", 32)
    );
    row::<t::Headers>(1, "0000000000000001", header.clone(), &header_hex, s);

    // Derived: 1 flag byte (first_tx_num_len=1 | tx_count_len=1 << 4) = 11, then 05, 03.
    row::<t::BlockBodyIndices>(
        1,
        "0000000000000001",
        StoredBlockBodyIndices {
            first_tx_num: 5,
            tx_count: 3,
        },
        "11 05 03",
        s,
    );

    // Vec<Header>: varuint count 01, varuint length of one default header (4 flag bytes + 468
    // zero bytes = 472 = 0x1d8 -> LEB128 d8 03), then its bytes (all zero).
    let ommers = StoredBlockOmmers {
        ommers: vec![zero_header()],
    };
    row::<t::BlockOmmers>(
        2,
        "0000000000000002",
        ommers,
        &format!("01 d803 {}", rep("00", 472)),
        s,
    );

    // StoredBlockWithdrawals has no flag bits; Withdrawals is a Vec: count 01, element length
    // 0x19 (25), then Withdrawal: 2 flag bytes (index_len=1, validator_len=1<<4, amount_len=1<<8
    // -> 0x0111 -> 11 01), index 01, validator 02, address (20), amount 03.
    let withdrawals = StoredBlockWithdrawals {
        withdrawals: Withdrawals::new(vec![Withdrawal {
            index: 1,
            validator_index: 2,
            address: addr(0x11),
            amount: 3,
        }]),
    };
    row::<t::BlockWithdrawals>(
        3,
        "0000000000000003",
        withdrawals,
        &format!("01 19 1101 01 02 {} 03", rep("11", 20)),
        s,
    );

    // Key: block BE8 ++ hash; value: hash (32) ++ raw RLP.
    row::<t::BlockAccessLists>(
        StoredBlockAccessListKey {
            block_number: 1,
            block_hash: hash(0x22),
        },
        &format!("0000000000000001 {}", rep("22", 32)),
        StoredBlockAccessList {
            hash: hash(0x33),
            raw: Bytes::from_static(&[0xc0]),
        },
        &format!("{} c0", rep("33", 32)),
        s,
    );
    row::<t::BlockAccessListBlockNumbers>(hash(0x22), &rep("22", 32), 7, "0700000000000000", s);

    // Legacy transaction envelope: flag byte 00 (y_parity 0, tx type bits 0, no zstd as input < 32
    // bytes), r and s as 32-byte little-endian, then TxLegacy compact: 3 flag bytes (chain_id? 1
    // bit = 1, nonce_len 4 = 0, gas_price_len 5 = 1, gas_limit_len 4 = 2, to 1 = call, value_len 6 = 1
    // -> 0x00c821 -> 21 c8 00), chain_id Option<u64> (varuint len 01, 01), gas_price 01,
    // gas_limit 5208, to address (20), value 01, input empty.
    let legacy = TxLegacy {
        chain_id: Some(1),
        nonce: 0,
        gas_price: 1,
        gas_limit: 21_000,
        to: TxKind::Call(addr(0x44)),
        value: U256::from(1),
        input: Bytes::new(),
    };
    let signature = Signature::new(U256::from(1), U256::from(2), false);
    let tx: TransactionSigned = Signed::new_unhashed(legacy, signature).into();
    let tx_hex = format!(
        "00 01{} 02{} 21c800 0101 01 5208 {} 01",
        rep("00", 31),
        rep("00", 31),
        rep("44", 20)
    );
    row::<t::Transactions>(9, "0000000000000009", tx, &tx_hex, s);

    row::<t::TransactionHashNumbers>(hash(0x55), &rep("55", 32), 42, "2a00000000000000", s);
    row::<t::TransactionBlocks>(10, "000000000000000a", 3, "0300000000000000", s);

    // Receipt flags byte: tx_type_len 2 bits = 0 (legacy), success_len 1 bit = 1,
    // cumulative_gas_used_len 4 bits = 2, zstd 1 bit = 0 -> 0b0010100 = 14; then 5208, logs: 00.
    let receipt = Receipt {
        tx_type: TxType::Legacy,
        success: true,
        cumulative_gas_used: 21_000,
        logs: vec![],
    };
    row::<t::Receipts>(9, "0000000000000009", receipt, "14 5208 00", s);

    // Bytecode: u32 BE length (3: analysis pads a STOP), bytes 600000, variant 2 (legacy analyzed),
    // original length u64 BE 2, jump table bytes (one byte, no JUMPDEST).
    let code = Bytecode::new_raw(Bytes::from_static(&[0x60, 0x00]));
    row::<t::Bytecodes>(
        hash(0x66),
        &rep("66", 32),
        code,
        "00000003 600000 02 0000000000000002 00",
        s,
    );

    row::<t::PlainAccountState>(
        addr(0x77),
        &rep("77", 20),
        account_1_1000(),
        ACCOUNT_1_1000,
        s,
    );

    // StorageEntry: slot (32) ++ value stripped big-endian (0x100 -> 0100).
    let mut slot2 = [0u8; 32];
    slot2[31] = 2;
    let slot2 = B256::from(slot2);
    let entry = StorageEntry {
        key: slot2,
        value: U256::from(0x100),
    };
    let entry_hex = format!("{}02 0100", rep("00", 31));
    row::<t::PlainStorageState>(addr(0x77), &rep("77", 20), entry, &entry_hex, s);
    subkey::<t::PlainStorageState>(slot2, &format!("{}02", rep("00", 31)), &entry);

    // ShardedKey<Address>: address ++ highest block BE8. Value: roaring portable format: bucket
    // count u64 LE 1, high key u32 LE 0, cookie 12346 (3a300000), container count 1,
    // key 0 / cardinality-1 = 2, offset 16, values 1 2 3 as u16 LE.
    let list = IntegerList::new([1, 2, 3]).expect("sorted");
    let list_hex = "0100000000000000 00000000 3a300000 01000000 0000 0200 10000000 0100 0200 0300";
    row::<t::AccountsHistory>(
        ShardedKey::new(addr(0x55), 0x1234),
        &format!("{} 0000000000001234", rep("55", 20)),
        list.clone(),
        list_hex,
        s,
    );
    // StorageShardedKey: address ++ slot ++ highest block BE8 (last shard: u64::MAX).
    row::<t::StoragesHistory>(
        StorageShardedKey::last(addr(0x55), hash(0x66)),
        &format!("{} {} ffffffffffffffff", rep("55", 20), rep("66", 32)),
        list,
        list_hex,
        s,
    );

    // AccountBeforeTx: address ++ Account compact (nothing after the address when None).
    let before = AccountBeforeTx {
        address: addr(0x88),
        info: Some(account_1_1000()),
    };
    row::<t::AccountChangeSets>(
        7,
        "0000000000000007",
        before.clone(),
        &format!("{} {ACCOUNT_1_1000}", rep("88", 20)),
        s,
    );
    subkey::<t::AccountChangeSets>(addr(0x88), &rep("88", 20), &before);
    let absent = AccountBeforeTx {
        address: addr(0x88),
        info: None,
    };
    assert_eq!(hex::encode(compress_to_vec(&absent)), rep("88", 20));

    // BlockNumberAddress: block BE8 ++ address.
    row::<t::StorageChangeSets>(
        BlockNumberAddress((7, addr(0x99))),
        &format!("0000000000000007 {}", rep("99", 20)),
        entry,
        &entry_hex,
        s,
    );
    subkey::<t::StorageChangeSets>(slot2, &format!("{}02", rep("00", 31)), &entry);

    // Account with only a bytecode hash: flags 0x0400 (bit 10) -> 00 04, then the hash.
    let contract = Account {
        nonce: 0,
        balance: U256::ZERO,
        bytecode_hash: Some(hash(0x11)),
    };
    row::<t::HashedAccounts>(
        hash(0xab),
        &rep("ab", 32),
        contract,
        &format!("0004 {}", rep("11", 32)),
        s,
    );

    // StorageEntry with value 0: the slot and nothing else.
    let zero_entry = StorageEntry {
        key: hash(0xcd),
        value: U256::ZERO,
    };
    row::<t::HashedStorages>(hash(0xab), &rep("ab", 32), zero_entry, &rep("cd", 32), s);
    subkey::<t::HashedStorages>(hash(0xcd), &rep("cd", 32), &zero_entry);

    // StoredNibbles: one nibble per byte. BranchNodeCompact: state, tree, hash masks as u16 BE,
    // no root hash, then the hashes (one, as hash_mask has one bit).
    let node = BranchNodeCompact::new(
        TrieMask::new(0b1011),
        TrieMask::new(0b0001),
        TrieMask::new(0b0001),
        vec![hash(0x99)],
        None,
    );
    let node_hex = format!("000b 0001 0001 {}", rep("99", 32));
    row::<t::AccountsTrie>(
        StoredNibbles(Nibbles::from_nibbles([0x1, 0xa])),
        "010a",
        node.clone(),
        &node_hex,
        s,
    );

    // storage v2's packed path (reth's own test vectors): two nibbles a byte, zero-padded to 32
    // bytes, then the count; no nibbles is 33 zero bytes.
    let abc = PackedStoredNibbles(Nibbles::from_nibbles([0xa, 0xb, 0xc]));
    assert_eq!(
        abc.to_array().to_vec(),
        h(&format!("abc0 {} 03", rep("00", 30)))
    );
    assert_eq!(PackedStoredNibbles::from_bytes(&abc.to_array()), Ok(abc));
    assert_eq!(PackedStoredNibbles::default().to_array(), [0u8; 33]);

    // StoredNibblesSubKey: nibbles zero-padded to 64 bytes, then the length byte (02).
    let sub = StoredNibblesSubKey(Nibbles::from_nibbles([0x1, 0xa]));
    let sub_hex = format!("010a {} 02", rep("00", 62));
    let trie_entry = StorageTrieEntry {
        nibbles: sub.clone(),
        node,
    };
    row::<t::StoragesTrie>(
        hash(0xef),
        &rep("ef", 32),
        trie_entry.clone(),
        &format!("{sub_hex} {node_hex}"),
        s,
    );
    subkey::<t::StoragesTrie>(sub, &sub_hex, &trie_entry);

    row::<t::TransactionSenders>(9, "0000000000000009", addr(0x12), &rep("12", 20), s);

    // StageCheckpoint: 1 flag byte (block_number_len 4 bits = 1, stage_checkpoint? bit 4),
    // block 64; Some(unit): varuint length 04, then the enum: variant byte 02 (Entities) and
    // EntitiesCheckpoint (flag byte 11: both lengths 1, then 05, 0a).
    row::<t::StageCheckpoints>(
        "Execution".to_string(),
        "457865637574696f6e",
        StageCheckpoint {
            block_number: 100,
            stage_checkpoint: None,
        },
        "01 64",
        s,
    );
    let with_unit = StageCheckpoint {
        block_number: 100,
        stage_checkpoint: Some(StageUnitCheckpoint::Entities(EntitiesCheckpoint {
            processed: 5,
            total: 10,
        })),
    };
    assert_eq!(
        hex::encode(compress_to_vec(&with_unit)),
        hex::encode(h("11 64 04 02 11 05 0a"))
    );
    assert_eq!(
        StageCheckpoint::decompress(&h("11 64 04 02 11 05 0a")).expect("decodes"),
        with_unit
    );

    // Vec<u8> values are SCALE: compact length (2 << 2 = 08), then the bytes.
    row::<t::StageCheckpointProgresses>(
        "Execution".to_string(),
        "457865637574696f6e",
        vec![0xaa, 0xbb],
        "08 aabb",
        s,
    );

    // PruneSegment key: its variant index (AccountHistory = 4). PruneCheckpoint: 1 flag byte
    // (block_number? bit 0 = 1, tx_number? bit 1 = 0), block Option<u64> (len 01, 64), then
    // PruneMode enum: variant 01 (Distance), 40.
    row::<t::PruneCheckpoints>(
        PruneSegment::AccountHistory,
        "04",
        PruneCheckpoint {
            block_number: Some(100),
            tx_number: None,
            prune_mode: PruneMode::Distance(64),
        },
        "01 0164 0140",
        s,
    );

    // ClientVersion: three Compact strings; a string is a Vec<u8> where each byte costs
    // varuint length 01 + the byte.
    let version = ClientVersion {
        version: "1.0".into(),
        git_sha: "abc".into(),
        build_timestamp: "x".into(),
    };
    row::<t::VersionHistory>(
        1_700_000_000,
        "000000006553f100",
        version,
        "03 0131 012e 0130 03 0161 0162 0163 01 0178",
        s,
    );

    row::<t::ChainState>(
        ChainStateKey::LastSafeBlock,
        "01",
        99,
        "6300000000000000",
        s,
    );
    row::<t::ChainState>(
        ChainStateKey::LastFinalizedBlock,
        "00",
        98,
        "6200000000000000",
        s,
    );

    // Metadata: UTF-8 key; Vec<u8> value with SCALE length 20 << 2 = 0x50.
    let settings = StorageSettings { storage_v2: false }.to_json_bytes();
    row::<t::Metadata>(
        STORAGE_SETTINGS_KEY.to_string(),
        &hex::encode(STORAGE_SETTINGS_KEY),
        settings,
        &format!("50 {}", hex::encode(r#"{"storage_v2":false}"#)),
        s,
    );

    let missing: Vec<_> = Tables::ALL.iter().filter(|t| !seen.contains(t)).collect();
    assert!(
        missing.is_empty(),
        "tables without a golden row: {missing:?}"
    );
}

#[test]
fn empty_integer_list_is_one_zero_bucket_count() {
    let empty = IntegerList::default();
    assert_eq!(hex::encode(compress_to_vec(&empty)), "0000000000000000");
    assert!(
        IntegerList::decompress(&h("0000000000000000"))
            .expect("decodes")
            .is_empty()
    );
}

#[test]
fn dupsort_key_lengths_match_key_encodings() {
    let dupsort: Vec<_> = Tables::ALL
        .iter()
        .filter(|t| t.is_dupsort())
        .map(|t| (t.name(), t.dupsort_key_len()))
        .collect();
    assert_eq!(
        dupsort,
        vec![
            ("PlainStorageState", Some(20)),
            ("AccountChangeSets", Some(8)),
            ("StorageChangeSets", Some(28)),
            ("HashedStorages", Some(32)),
            ("StoragesTrie", Some(32)),
        ]
    );
    assert!(
        Tables::ALL
            .iter()
            .filter(|t| !t.is_dupsort())
            .all(|t| t.dupsort_key_len().is_none())
    );
}

#[test]
fn catalogue_matches_reth_v2_5_1_order_and_names() {
    let names: Vec<_> = Tables::ALL.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "CanonicalHeaders",
            "HeaderTerminalDifficulties",
            "HeaderNumbers",
            "Headers",
            "BlockBodyIndices",
            "BlockOmmers",
            "BlockWithdrawals",
            "BlockAccessLists",
            "BlockAccessListBlockNumbers",
            "Transactions",
            "TransactionHashNumbers",
            "TransactionBlocks",
            "Receipts",
            "Bytecodes",
            "PlainAccountState",
            "PlainStorageState",
            "AccountsHistory",
            "StoragesHistory",
            "AccountChangeSets",
            "StorageChangeSets",
            "HashedAccounts",
            "HashedStorages",
            "AccountsTrie",
            "StoragesTrie",
            "TransactionSenders",
            "StageCheckpoints",
            "StageCheckpointProgresses",
            "PruneCheckpoints",
            "VersionHistory",
            "ChainState",
            "Metadata",
        ]
    );
    for table in Tables::ALL {
        assert_eq!(table.name().parse::<Tables>(), Ok(table));
    }
    assert!("NoSuchTable".parse::<Tables>().is_err());
    // The const lookup behind `table_of` compares whole names, not prefixes.
    for near_miss in ["AccountsHistor", "AccountsHistoryX", "accountshistory", ""] {
        assert_eq!(Tables::from_name(near_miss), None, "{near_miss:?}");
    }
    const RESOLVED_AT_COMPILE_TIME: Option<Tables> = Tables::from_name("StoragesHistory");
    assert_eq!(RESOLVED_AT_COMPILE_TIME, Some(Tables::StoragesHistory));
    let rocks: Vec<_> = Tables::ALL
        .iter()
        .filter(|t| t.default_engine() == EngineKind::RocksDb)
        .map(|t| t.name())
        .collect();
    assert_eq!(
        rocks,
        [
            "TransactionHashNumbers",
            "AccountsHistory",
            "StoragesHistory"
        ]
    );
}

use reth_hybrid_api::EngineKind;

/// A table type from outside this crate (reth's, in the adapter) with a catalogue name.
#[derive(Debug)]
struct ForeignTxHashes;
impl Table for ForeignTxHashes {
    const NAME: &'static str = "TransactionHashNumbers";
    const DUPSORT: bool = false;
    type Key = B256;
    type Value = u64;
}

/// One whose name the catalogue does not hold (a newer reth's table).
#[derive(Debug)]
struct ForeignUnknown;
impl Table for ForeignUnknown {
    const NAME: &'static str = "TableOfALaterReth";
    const DUPSORT: bool = false;
    type Key = u64;
    type Value = u64;
}

#[test]
fn table_of_resolves_foreign_table_types_by_name_and_refuses_unknown_ones() {
    use reth_hybrid_api::typed::table_of;
    assert_eq!(
        table_of::<ForeignTxHashes>().expect("in the catalogue"),
        Tables::TransactionHashNumbers
    );
    assert_eq!(
        table_of::<t::AccountsHistory>().expect("ours"),
        Tables::AccountsHistory
    );
    let err = table_of::<ForeignUnknown>().expect_err("not in the catalogue");
    assert!(err.to_string().contains("TableOfALaterReth"), "{err}");
}
