//! The RPC latency report: the runs `reth-hybrid-e2e rpc-latency` wrote (every call's latency,
//! per kind, in a cold and a warm pass), any number per variant, set side by side. Percentiles
//! with each variant's ratio to the references at every one of them, the distribution as
//! log-spaced histograms, and tail charts ([`super::charts::write_rpc_charts`]): an RPC
//! provider is judged on its p99, which medians hide.

use serde::Deserialize;
use serde_json::{Value, json};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

/// The kinds of call in report order (kinds not listed follow, by name).
pub const KIND_ORDER: [&str; 7] = [
    "eth_getTransactionByHash",
    "eth_getBalance",
    "eth_getStorageAt",
    "eth_call",
    "debug_traceTransaction prestateTracer",
    "debug_traceBlockByNumber prestateTracer",
    "debug_traceBlockByNumber callTracer",
];

/// The percentiles reported, in percent.
pub const PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// Histogram buckets per decade of latency.
const BUCKETS_PER_DECADE: f64 = 10.0;

#[derive(Debug, thiserror::Error)]
pub enum RpcReportError {
    #[error("reading the RPC latency run {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is not an RPC latency run (written by `reth-hybrid-e2e rpc-latency`): {source}"
    )]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path} holds no latencies; rerun `reth-hybrid-e2e rpc-latency` for it")]
    Empty { path: PathBuf },
    #[error("no run is labelled {reference:?} (the runs' labels: {labels})")]
    NoReference { reference: String, labels: String },
}

/// One `rpc-latency` output file.
#[derive(Debug, Deserialize)]
struct LatencyRun {
    label: String,
    /// Per kind, every call's latency in microseconds (the warm, second pass).
    latencies_us: BTreeMap<String, Vec<f64>>,
    /// The same for the first pass, right after the node started.
    #[serde(default)]
    cold_latencies_us: BTreeMap<String, Vec<f64>>,
}

/// The two passes of every run, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    Warm,
    Cold,
}

impl Pass {
    pub const ALL: [Pass; 2] = [Pass::Warm, Pass::Cold];

    pub fn name(self) -> &'static str {
        match self {
            Pass::Warm => "warm",
            Pass::Cold => "cold",
        }
    }

    pub fn caption(self) -> &'static str {
        match self {
            Pass::Warm => "warm (second pass)",
            Pass::Cold => "cold (first pass after the node started)",
        }
    }
}

/// One variant's calls, its runs pooled: per pass, per kind, latencies sorted ascending (µs).
#[derive(Debug, Clone, Default)]
pub struct Variant {
    pub label: String,
    pub warm: BTreeMap<String, Vec<f64>>,
    pub cold: BTreeMap<String, Vec<f64>>,
}

impl Variant {
    pub fn pass(&self, pass: Pass) -> &BTreeMap<String, Vec<f64>> {
        match pass {
            Pass::Warm => &self.warm,
            Pass::Cold => &self.cold,
        }
    }
}

/// Reads the runs and pools them per variant (by the label inside, in the order first seen).
pub fn read_runs(files: &[PathBuf]) -> Result<Vec<Variant>, RpcReportError> {
    let mut variants: Vec<Variant> = Vec::new();
    for path in files {
        let bytes = std::fs::read(path).map_err(|source| RpcReportError::Read {
            path: path.clone(),
            source,
        })?;
        let run: LatencyRun =
            serde_json::from_slice(&bytes).map_err(|source| RpcReportError::Parse {
                path: path.clone(),
                source,
            })?;
        if run.latencies_us.values().all(Vec::is_empty) {
            return Err(RpcReportError::Empty { path: path.clone() });
        }
        let index = match variants.iter().position(|v| v.label == run.label) {
            Some(i) => i,
            None => {
                variants.push(Variant {
                    label: run.label.clone(),
                    ..Variant::default()
                });
                variants.len() - 1
            }
        };
        let variant = &mut variants[index];
        for (kind, calls) in run.latencies_us {
            variant.warm.entry(kind).or_default().extend(calls);
        }
        for (kind, calls) in run.cold_latencies_us {
            variant.cold.entry(kind).or_default().extend(calls);
        }
    }
    for v in &mut variants {
        for calls in v.warm.values_mut().chain(v.cold.values_mut()) {
            calls.sort_by(f64::total_cmp);
        }
    }
    Ok(variants)
}

/// Every kind any variant answered, in report order.
pub fn kinds(variants: &[Variant]) -> Vec<String> {
    let mut seen: Vec<String> = variants
        .iter()
        .flat_map(|v| v.warm.keys().chain(v.cold.keys()))
        .cloned()
        .collect();
    seen.sort();
    seen.dedup();
    let rank = |k: &String| KIND_ORDER.iter().position(|o| o == k).unwrap_or(usize::MAX);
    seen.sort_by_key(rank);
    seen
}

/// The percentile of ascending `sorted` (`p` in percent), as the block statistics take it.
pub(crate) use super::stats::percentile_sorted as percentile;

/// A histogram bucket: calls with `lower_us <= latency < upper_us`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Bucket {
    pub lower_us: f64,
    pub upper_us: f64,
    pub calls: usize,
}

/// Log-spaced buckets (ten per decade) from the smallest call's to the largest's; empty ones in
/// between are kept so histograms of two variants line up. Only positive latencies are counted
/// (a timed call always takes some time).
pub fn histogram(sorted: &[f64]) -> Vec<Bucket> {
    let positive: Vec<f64> = sorted.iter().copied().filter(|v| *v > 0.0).collect();
    let (Some(first), Some(last)) = (positive.first(), positive.last()) else {
        return Vec::new();
    };
    let index = |v: f64| (v.log10() * BUCKETS_PER_DECADE).floor() as i64;
    let bound = |i: i64| 10f64.powf(i as f64 / BUCKETS_PER_DECADE);
    let (lo, hi) = (index(*first), index(*last));
    let mut buckets: Vec<Bucket> = (lo..=hi)
        .map(|i| Bucket {
            lower_us: bound(i),
            upper_us: bound(i + 1),
            calls: 0,
        })
        .collect();
    for v in positive {
        // log10 may round a value on a bound into the bucket below (10^0.3 -> 2.999..): the
        // bounds themselves decide.
        let mut i = index(v);
        while i > lo && v < bound(i) {
            i -= 1;
        }
        while i < hi && v >= bound(i + 1) {
            i += 1;
        }
        buckets[(i - lo) as usize].calls += 1;
    }
    buckets
}

/// The ratio columns: each non-reference variant against each reference, and the later
/// references against the first (`stock-v2 / stock-v1`).
fn ratio_pairs(variants: &[Variant], references: &[usize]) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for (n, &r) in references.iter().enumerate() {
        for v in 0..variants.len() {
            if v != r && (n == 0 || !references.contains(&v)) {
                pairs.push((v, r));
            }
        }
    }
    pairs
}

/// The report of pooled variants against `references` (labels; the first one is the baseline).
#[derive(Debug)]
pub struct RpcReport {
    pub variants: Vec<Variant>,
    references: Vec<usize>,
}

impl RpcReport {
    pub fn new(variants: Vec<Variant>, references: &[String]) -> Result<Self, RpcReportError> {
        let mut unique: Vec<&String> = Vec::new();
        for r in references {
            if !unique.contains(&r) {
                unique.push(r);
            }
        }
        let references = unique
            .into_iter()
            .map(|r| {
                variants.iter().position(|v| v.label == *r).ok_or_else(|| {
                    RpcReportError::NoReference {
                        reference: r.clone(),
                        labels: variants
                            .iter()
                            .map(|v| v.label.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            variants,
            references,
        })
    }

    fn percentiles(&self, v: usize, pass: Pass, kind: &str) -> Option<[f64; 4]> {
        let calls = self.variants[v].pass(pass).get(kind)?;
        (!calls.is_empty()).then(|| PERCENTILES.map(|p| percentile(calls, p)))
    }

    /// Per pass, a table: every variant's p50 / p90 / p99 / p99.9, then every ratio column at
    /// each of the four.
    pub fn markdown(&self) -> String {
        let pairs = ratio_pairs(&self.variants, &self.references);
        let kinds = kinds(&self.variants);
        let mut md = String::new();
        for pass in Pass::ALL {
            md.push_str(&format!(
                "{}: p50 / p90 / p99 / p99.9 in µs, and the ratios at each\n\n| RPC call |",
                pass.caption()
            ));
            for v in &self.variants {
                md.push_str(&format!(" {} |", v.label));
            }
            for (v, r) in &pairs {
                md.push_str(&format!(
                    " {} / {} |",
                    self.variants[*v].label, self.variants[*r].label
                ));
            }
            md.push_str("\n|---|");
            md.push_str(&"---:|".repeat(self.variants.len() + pairs.len()));
            md.push('\n');
            for kind in &kinds {
                if (0..self.variants.len()).all(|v| self.percentiles(v, pass, kind).is_none()) {
                    continue;
                }
                md.push_str(&format!("| `{kind}` |"));
                for v in 0..self.variants.len() {
                    match self.percentiles(v, pass, kind) {
                        Some(p) => {
                            md.push_str(&format!(" {} |", p.map(|x| format!("{x:.0}")).join(" / ")))
                        }
                        None => md.push_str(" - |"),
                    }
                }
                for (v, r) in &pairs {
                    match (
                        self.percentiles(*v, pass, kind),
                        self.percentiles(*r, pass, kind),
                    ) {
                        (Some(a), Some(b)) => {
                            let ratios: Vec<String> = (0..4)
                                .map(|i| match b[i] > 0.0 {
                                    true => format!("{:.2}x", a[i] / b[i]),
                                    false => "-".to_string(),
                                })
                                .collect();
                            md.push_str(&format!(
                                " **{}** / {} |",
                                ratios[0],
                                ratios[1..].join(" / ")
                            ));
                        }
                        _ => md.push_str(" - |"),
                    }
                }
                md.push('\n');
            }
            md.push('\n');
        }
        md
    }

    /// The numbers: per pass, kind and variant the calls, percentiles, ratios to each reference
    /// at every percentile, and the histogram.
    pub fn json(&self) -> Value {
        let pairs = ratio_pairs(&self.variants, &self.references);
        let kinds = kinds(&self.variants);
        let mut passes = serde_json::Map::new();
        for pass in Pass::ALL {
            let mut by_kind = serde_json::Map::new();
            for kind in &kinds {
                let mut by_variant = serde_json::Map::new();
                for (v, variant) in self.variants.iter().enumerate() {
                    let Some(p) = self.percentiles(v, pass, kind) else {
                        continue;
                    };
                    let calls = &variant.pass(pass)[kind];
                    let mut ratios = serde_json::Map::new();
                    for (_, r) in pairs.iter().filter(|(pv, _)| *pv == v) {
                        if let Some(b) = self.percentiles(*r, pass, kind) {
                            ratios.insert(
                                self.variants[*r].label.clone(),
                                json!({
                                    "p50": p[0] / b[0], "p90": p[1] / b[1],
                                    "p99": p[2] / b[2], "p999": p[3] / b[3],
                                }),
                            );
                        }
                    }
                    by_variant.insert(
                        variant.label.clone(),
                        json!({
                            "calls": calls.len(),
                            "p50_us": p[0], "p90_us": p[1], "p99_us": p[2], "p999_us": p[3],
                            "max_us": calls.last(),
                            "ratios": ratios,
                            "histogram": histogram(calls),
                        }),
                    );
                }
                if !by_variant.is_empty() {
                    by_kind.insert(kind.clone(), Value::Object(by_variant));
                }
            }
            passes.insert(pass.name().to_string(), Value::Object(by_kind));
        }
        json!({
            // 2: per-percentile ratios to several references and histograms (the e2e tool's
            // report, format 1, had p50 and p99 ratios to one reference).
            "format": 2,
            "references": self.references.iter().map(|r| &self.variants[*r].label).collect::<Vec<_>>(),
            "passes": passes,
        })
    }
}

/// Writes `rpc.md` and `rpc.json` into `dir` (the charts are
/// [`super::charts::write_rpc_charts`]'s, which need a font); returns the files written.
pub fn write_report(report: &RpcReport, dir: &Path) -> Result<Vec<PathBuf>, WriteError> {
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes)
            .map(|()| path.clone())
            .map_err(|source| WriteError { path, source })
    };
    Ok(vec![
        write("rpc.md", report.markdown().as_bytes())?,
        write(
            "rpc.json",
            &serde_json::to_vec_pretty(&report.json()).expect("JSON values serialize"),
        )?,
    ])
}

#[derive(Debug, thiserror::Error)]
#[error("writing {path}: {source}")]
pub struct WriteError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(label: &str, kind: &str, calls: Vec<f64>) -> Variant {
        let mut sorted = calls;
        sorted.sort_by(f64::total_cmp);
        Variant {
            label: label.into(),
            warm: BTreeMap::from([(kind.to_string(), sorted.clone())]),
            cold: BTreeMap::from([(kind.to_string(), sorted)]),
        }
    }

    #[test]
    fn percentiles_are_the_value_at_floor_of_n_times_p() {
        let calls: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(
            PERCENTILES.map(|p| percentile(&calls, p)),
            [501.0, 901.0, 991.0, 1000.0]
        );
        assert_eq!(percentile(&[7.0], 99.9), 7.0);
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn histogram_buckets_hold_every_call_within_their_bounds() {
        let calls: Vec<f64> = (0..5000).map(|i| 80.0 + (i as f64).powf(1.7)).collect();
        let buckets = histogram(&calls);
        assert_eq!(buckets.iter().map(|b| b.calls).sum::<usize>(), calls.len());
        for pair in buckets.windows(2) {
            assert!((pair[0].upper_us - pair[1].lower_us).abs() < 1e-9);
            // Ten per decade.
            assert!((pair[0].upper_us / pair[0].lower_us - 10f64.powf(0.1)).abs() < 1e-9);
        }
        assert!(buckets[0].lower_us <= 80.0 && 80.0 < buckets[0].upper_us);
        let last = buckets.last().expect("buckets");
        let max = calls.last().copied().expect("calls");
        assert!(last.lower_us <= max && max < last.upper_us);
        // Each call counted in the bucket holding it.
        for b in &buckets {
            let inside = calls
                .iter()
                .filter(|c| b.lower_us <= **c && **c < b.upper_us)
                .count();
            assert_eq!(inside, b.calls, "{b:?}");
        }
        assert!(histogram(&[]).is_empty());
        // Values on the bounds belong to the bucket they open.
        let on_bounds: Vec<f64> = (20..=40).map(|i| 10f64.powf(f64::from(i) / 10.0)).collect();
        for b in histogram(&on_bounds) {
            assert_eq!(b.calls, 1, "{b:?}");
        }
    }

    #[test]
    fn ratios_pair_every_variant_with_the_baseline_and_the_rest_with_later_references() {
        let vs = [
            variant("stock-v1", "eth_getBalance", vec![1.0]),
            variant("hybrid", "eth_getBalance", vec![1.0]),
            variant("stock-v2", "eth_getBalance", vec![1.0]),
        ];
        assert_eq!(ratio_pairs(&vs, &[0, 2]), vec![(1, 0), (2, 0), (1, 2)]);
        assert_eq!(ratio_pairs(&vs, &[0]), vec![(1, 0), (2, 0)]);
    }

    #[test]
    fn every_percentile_gets_its_ratio() {
        let kind = "eth_getStorageAt";
        let base: Vec<f64> = (1..=1000).map(f64::from).collect();
        // hybrid: twice v1 everywhere but a tail four times as slow; v2 ten times v1.
        let hybrid: Vec<f64> = base
            .iter()
            .map(|v| if *v > 980.0 { v * 4.0 } else { v * 2.0 })
            .collect();
        let v2: Vec<f64> = base.iter().map(|v| v * 10.0).collect();
        let report = RpcReport::new(
            vec![
                variant("stock-v1", kind, base),
                variant("hybrid", kind, hybrid),
                variant("stock-v2", kind, v2),
            ],
            &["stock-v1".into(), "stock-v2".into()],
        )
        .expect("report");
        let md = report.markdown();
        assert!(
            md.contains("| `eth_getStorageAt` | 501 / 901 / 991 / 1000 | 1002 / 1802 / 3964 / 4000 | 5010 / 9010 / 9910 / 10000 | **2.00x** / 2.00x / 4.00x / 4.00x | **10.00x** / 10.00x / 10.00x / 10.00x | **0.20x** / 0.20x / 0.40x / 0.40x |"),
            "{md}"
        );
        assert!(md.contains("| hybrid / stock-v1 | stock-v2 / stock-v1 | hybrid / stock-v2 |"));
        let json = report.json();
        let hybrid = &json["passes"]["cold"][kind]["hybrid"];
        assert_eq!(hybrid["calls"], 1000);
        assert_eq!(hybrid["ratios"]["stock-v1"]["p99"], 4.0);
        assert_eq!(hybrid["ratios"]["stock-v2"]["p50"], 0.2);
        assert_eq!(hybrid["max_us"], 4000.0);
        let counted: u64 = hybrid["histogram"]
            .as_array()
            .expect("histogram")
            .iter()
            .map(|b| b["calls"].as_u64().expect("calls"))
            .sum();
        assert_eq!(counted, 1000);
        assert!(
            json["passes"]["warm"][kind]["stock-v1"]["ratios"]
                .as_object()
                .expect("ratios")
                .is_empty()
        );
    }

    #[test]
    fn a_kind_one_variant_lacks_shows_dashes_and_a_repeated_reference_counts_once() {
        let mut hybrid = variant("hybrid", "eth_call", vec![2.0]);
        hybrid
            .warm
            .insert("eth_getBalance".to_string(), vec![4.0, 4.0]);
        let report = RpcReport::new(
            vec![variant("stock-v1", "eth_call", vec![1.0]), hybrid],
            &["stock-v1".into(), "stock-v1".into()],
        )
        .expect("report");
        let md = report.markdown();
        assert!(md.contains("| hybrid / stock-v1 |\n"), "{md}");
        assert!(
            md.contains("| `eth_getBalance` | - | 4 / 4 / 4 / 4 | - |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| `eth_call` | 1 / 1 / 1 / 1 | 2 / 2 / 2 / 2 | **2.00x** / 2.00x / 2.00x / 2.00x |"
            ),
            "{md}"
        );
    }

    #[test]
    fn an_unknown_reference_names_the_labels_there_are() {
        let err = RpcReport::new(
            vec![variant("hybrid", "eth_call", vec![1.0])],
            &["stock".into()],
        )
        .expect_err("no such label");
        assert_eq!(
            err.to_string(),
            "no run is labelled \"stock\" (the runs' labels: hybrid)"
        );
    }

    #[test]
    fn runs_are_pooled_per_label_and_bad_files_named() {
        let dir = tempfile::tempdir().expect("tmp");
        let write = |name: &str, body: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, body).expect("write");
            p
        };
        let a = write(
            "a.json",
            r#"{"label":"hybrid","latencies_us":{"eth_call":[3,1]},"cold_latencies_us":{"eth_call":[9]}}"#,
        );
        let b = write(
            "b.json",
            r#"{"label":"hybrid","latencies_us":{"eth_call":[2]}}"#,
        );
        let pooled = read_runs(&[a.clone(), b]).expect("runs");
        assert_eq!(pooled.len(), 1);
        assert_eq!(pooled[0].warm["eth_call"], vec![1.0, 2.0, 3.0]);
        assert_eq!(pooled[0].cold["eth_call"], vec![9.0]);
        let bad = write("bad.json", r#"{"rows":[]}"#);
        let err = read_runs(&[a.clone(), bad.clone()]).expect_err("not a run");
        assert!(
            err.to_string().contains(&bad.display().to_string()),
            "{err}"
        );
        let empty = write("empty.json", r#"{"label":"x","latencies_us":{}}"#);
        let err = read_runs(&[empty]).expect_err("empty");
        assert!(err.to_string().contains("holds no latencies"), "{err}");
        let err = read_runs(&[dir.path().join("missing.json")]).expect_err("missing");
        assert!(err.to_string().contains("missing.json"), "{err}");
    }
}
