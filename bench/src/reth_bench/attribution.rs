//! Where the hybrid's RPC time goes, per call kind: the file `reth-hybrid-e2e rpc-attribution`
//! writes (a node run with `--metrics`, its database time and RocksDB's work read between kinds)
//! as a Markdown table per pass, beside the latency report.

use serde::Deserialize;
use std::{collections::BTreeMap, path::Path};

use super::rpc::{KIND_ORDER, RpcReportError, percentile};

/// One kind of call in one pass, as the e2e tool records it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct KindWork {
    pub calls: usize,
    pub latencies_us: Vec<f64>,
    /// Seconds inside reth-hybrid's timed operations, by engine.
    #[serde(default)]
    pub db_seconds: BTreeMap<String, f64>,
    /// Operations by `table engine op`.
    #[serde(default)]
    pub operations: BTreeMap<String, f64>,
    /// RocksDB's tickers by name (without `reth_hybrid_rocksdb_` and `_total`).
    #[serde(default)]
    pub rocksdb: BTreeMap<String, f64>,
    #[serde(default)]
    pub compactions_running: f64,
}

impl KindWork {
    fn ticker(&self, name: &str) -> f64 {
        self.rocksdb.get(name).copied().unwrap_or(0.0)
    }

    /// Operations of `op` on `engine`, every table.
    fn operations(&self, engine: &str, op: &str) -> f64 {
        self.operations
            .iter()
            .filter(|(key, _)| {
                let mut parts = key.split(' ');
                parts.nth(1) == Some(engine) && parts.next() == Some(op)
            })
            .map(|(_, n)| n)
            // An empty f64 sum is -0.0, which would print as such.
            .sum::<f64>()
            + 0.0
    }
}

/// A whole attribution run.
#[derive(Debug, Clone, Deserialize)]
pub struct Attribution {
    pub label: String,
    /// `cold` and `warm`, per kind.
    pub passes: BTreeMap<String, BTreeMap<String, KindWork>>,
}

pub fn read_attribution(path: &Path) -> Result<Attribution, RpcReportError> {
    let bytes = std::fs::read(path).map_err(|source| RpcReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| RpcReportError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// Per pass (cold first: the tail an operator sees after a restart), per kind: latency in this
/// run, the database's share of it by engine, and RocksDB's work per call.
pub fn attribution_markdown(a: &Attribution) -> String {
    let mut md = format!(
        "Where {}'s time goes (a separate node start with `--metrics`: every database operation \
         timed, so its latencies run a little above the timed rounds'; RocksDB's counters are \
         read from the node between kinds and include any background work that overlapped):\n\n",
        a.label
    );
    for pass in ["cold", "warm"] {
        let Some(kinds) = a.passes.get(pass) else {
            continue;
        };
        md.push_str(&format!(
            "{pass}: per call, µs in the database's timed operations by engine and their share \
             of the call (cursor steps are counted, not timed, so iteration-heavy calls spend \
             more there than shown); RocksDB's gets / seeks / steps; row cache hits; block cache \
             misses (index / filter / data); table files opened and MiB compacted (read + \
             written) while the kind ran, in all\n\n\
             | RPC call | calls | p50 / p99 µs | RocksDB µs | MDBX µs | in DB | RocksDB gets / seeks / steps | row cache hits | block misses i / f / d | files opened | compacted MiB |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        ));
        let mut order: Vec<&String> = kinds.keys().collect();
        order.sort_by_key(|k| KIND_ORDER.iter().position(|o| o == k).unwrap_or(usize::MAX));
        for kind in order {
            let w = &kinds[kind];
            if w.calls == 0 {
                continue;
            }
            let calls = w.calls as f64;
            let mut sorted = w.latencies_us.clone();
            sorted.sort_by(f64::total_cmp);
            let (p50, p99) = match sorted.is_empty() {
                true => (0.0, 0.0),
                false => (percentile(&sorted, 50.0), percentile(&sorted, 99.0)),
            };
            let engine_us = |e: &str| w.db_seconds.get(e).copied().unwrap_or(0.0) * 1e6 / calls;
            let total_us: f64 = w.latencies_us.iter().sum::<f64>() / calls;
            let (rocks, mdbx) = (engine_us("rocksdb"), engine_us("mdbx"));
            let share = match total_us > 0.0 {
                true => format!("{:.0}%", 100.0 * (rocks + mdbx) / total_us),
                false => "-".into(),
            };
            let (hit, miss) = (w.ticker("row_cache_hit"), w.ticker("row_cache_miss"));
            let row_cache = match hit + miss > 0.0 {
                true => format!("{:.0}%", 100.0 * hit / (hit + miss)),
                false => "-".into(),
            };
            md.push_str(&format!(
                "| `{kind}` | {} | {p50:.0} / {p99:.0} | {rocks:.0} | {mdbx:.0} | {share} | {:.1} / {:.1} / {:.1} | {row_cache} | {:.2} / {:.2} / {:.2} | {:.0} | {:.0} |\n",
                w.calls,
                w.operations("rocksdb", "get") / calls,
                w.operations("rocksdb", "seek") / calls,
                w.operations("rocksdb", "step") / calls,
                w.ticker("block_cache_index_miss") / calls,
                w.ticker("block_cache_filter_miss") / calls,
                w.ticker("block_cache_data_miss") / calls,
                w.ticker("table_file_opens"),
                (w.ticker("compaction_read_bytes") + w.ticker("compaction_write_bytes"))
                    / f64::from(1 << 20),
            ));
        }
        md.push('\n');
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_per_call_work_and_the_database_share() {
        let work = KindWork {
            calls: 4,
            latencies_us: vec![100.0, 200.0, 300.0, 400.0],
            db_seconds: BTreeMap::from([("rocksdb".into(), 0.0004), ("mdbx".into(), 0.0002)]),
            operations: BTreeMap::from([
                ("TransactionHashNumbers rocksdb get".into(), 4.0),
                ("AccountsHistory rocksdb seek".into(), 6.0),
                ("StoragesHistory rocksdb seek".into(), 2.0),
                ("PlainAccountState mdbx seek".into(), 40.0),
            ]),
            rocksdb: BTreeMap::from([
                ("row_cache_hit".into(), 3.0),
                ("row_cache_miss".into(), 1.0),
                ("block_cache_data_miss".into(), 2.0),
                ("table_file_opens".into(), 5.0),
                ("compaction_read_bytes".into(), f64::from(3 << 20)),
                ("compaction_write_bytes".into(), f64::from(1 << 20)),
            ]),
            compactions_running: 1.0,
        };
        let a = Attribution {
            label: "hybrid".into(),
            passes: BTreeMap::from([(
                "cold".into(),
                BTreeMap::from([("eth_getBalance".into(), work)]),
            )]),
        };
        let md = attribution_markdown(&a);
        // 400 µs of RocksDB and 200 µs of MDBX over 4 calls of 250 µs on average: 60%.
        assert!(
            md.contains(
                "| `eth_getBalance` | 4 | 300 / 400 | 100 | 50 | 60% | 1.0 / 2.0 / 0.0 | 75% | 0.00 / 0.00 / 0.50 | 5 | 4 |"
            ),
            "{md}"
        );
        assert!(
            !md.contains("warm:"),
            "no warm pass recorded, none shown: {md}"
        );
    }
}
