//! Charts of a comparison (plotters): per-block total latency of both sides, and the
//! distribution of per-block Ggas/s. SVG always; PNG too. Text needs a TrueType font: DejaVu
//! Sans from the usual system paths (`make deps` installs fonts-dejavu-core), or the file named
//! by `RETH_HYBRID_CHART_FONT`.

use crate::reth_bench::stats::Comparison;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const FONT_PATHS: [&str; 4] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
];

#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error(
        "no TrueType font for chart text: install fonts-dejavu-core (or set RETH_HYBRID_CHART_FONT to a .ttf file)"
    )]
    NoFont,
    #[error("drawing {file}: {problem}")]
    Draw { file: PathBuf, problem: String },
}

fn register_font() -> Result<(), ChartError> {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = REGISTERED.get_or_init(|| {
        let candidates = std::env::var("RETH_HYBRID_CHART_FONT")
            .ok()
            .into_iter()
            .chain(FONT_PATHS.iter().map(|p| p.to_string()));
        for path in candidates {
            if let Ok(bytes) = std::fs::read(&path) {
                let leaked: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, leaked).is_ok() {
                    return true;
                }
            }
        }
        false
    });
    if *ok { Ok(()) } else { Err(ChartError::NoFont) }
}

fn draw_err(file: &Path) -> impl Fn(String) -> ChartError + '_ {
    move |problem| ChartError::Draw {
        file: file.to_path_buf(),
        problem,
    }
}

/// Whether chart text has a font here (charts are skipped, with a message, where not).
pub fn font_available() -> bool {
    register_font().is_ok()
}

/// Writes `latency.svg|png` and `ggas_distribution.svg|png` into `dir`; returns the files.
pub fn write_charts(c: &Comparison, dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    register_font()?;
    let mut written = Vec::new();
    for ext in ["svg", "png"] {
        let latency = dir.join(format!("latency.{ext}"));
        let dist = dir.join(format!("ggas_distribution.{ext}"));
        if ext == "svg" {
            latency_chart(
                c,
                SVGBackend::new(&latency, (1200, 500)).into_drawing_area(),
            )
            .map_err(draw_err(&latency))?;
            ggas_chart(c, SVGBackend::new(&dist, (900, 500)).into_drawing_area())
                .map_err(draw_err(&dist))?;
        } else {
            latency_chart(
                c,
                BitMapBackend::new(&latency, (1200, 500)).into_drawing_area(),
            )
            .map_err(draw_err(&latency))?;
            ggas_chart(c, BitMapBackend::new(&dist, (900, 500)).into_drawing_area())
                .map_err(draw_err(&dist))?;
        }
        written.push(latency);
        written.push(dist);
    }
    Ok(written)
}

const BASE: RGBColor = RGBColor(31, 119, 180);
const CAND: RGBColor = RGBColor(255, 127, 14);

fn latency_chart<DB: DrawingBackend>(
    c: &Comparison,
    area: DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    area.fill(&WHITE).map_err(e)?;
    let blocks = &c.per_block;
    let x0 = blocks.first().map_or(0, |b| b.block_number);
    let x1 = blocks.last().map_or(1, |b| b.block_number).max(x0 + 1);
    let y1 = blocks
        .iter()
        .map(|b| b.baseline_total_us.max(b.candidate_total_us) / 1000.0)
        .fold(0.0, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&area)
        .caption(
            "total latency per block (newPayload + FCU)",
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0.0..y1.max(0.001))
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("block")
        .y_desc("ms")
        .draw()
        .map_err(e)?;
    for (name, color, pick) in [(&c.baseline.name, BASE, 0), (&c.candidate.name, CAND, 1)] {
        chart
            .draw_series(LineSeries::new(
                blocks.iter().map(|b| {
                    let us = if pick == 0 {
                        b.baseline_total_us
                    } else {
                        b.candidate_total_us
                    };
                    (b.block_number, us / 1000.0)
                }),
                color.stroke_width(1),
            ))
            .map_err(e)?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    area.present().map_err(e)
}

fn ggas_chart<DB: DrawingBackend>(
    c: &Comparison,
    area: DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    area.fill(&WHITE).map_err(e)?;
    let per = |us: f64, gas: u64| gas as f64 / (us.max(1.0) / 1e6) / 1e9;
    let base: Vec<f64> = c
        .per_block
        .iter()
        .map(|b| per(b.baseline_total_us, b.gas_used))
        .collect();
    let cand: Vec<f64> = c
        .per_block
        .iter()
        .map(|b| per(b.candidate_total_us, b.gas_used))
        .collect();
    let hi = base.iter().chain(&cand).fold(0.0, |a: f64, b| a.max(*b));
    let lo = base.iter().chain(&cand).fold(hi, |a: f64, b| a.min(*b));
    let pad = ((hi - lo) * 0.05).max(1e-6);
    let (min, max) = ((lo - pad).max(0.0), hi + pad);
    const BINS: usize = 40;
    let bin = |v: f64| (((v - min) / (max - min) * BINS as f64) as usize).min(BINS - 1);
    let count = |vals: &[f64]| {
        let mut h = [0u32; BINS];
        vals.iter().for_each(|v| h[bin(*v)] += 1);
        h
    };
    let (hb, hc) = (count(&base), count(&cand));
    let ymax = hb.iter().chain(&hc).copied().max().unwrap_or(1) + 1;
    let mut chart = ChartBuilder::on(&area)
        .caption("per-block Ggas/s distribution", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(min..max, 0u32..ymax)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("Ggas/s")
        .y_desc("blocks")
        .draw()
        .map_err(e)?;
    let width = (max - min) / BINS as f64;
    for (name, color, h, offset) in [
        (&c.baseline.name, BASE, hb, 0.0),
        (&c.candidate.name, CAND, hc, 0.5),
    ] {
        chart
            .draw_series(h.iter().enumerate().map(|(i, n)| {
                let x = min + i as f64 * width + offset * width;
                Rectangle::new([(x, 0), (x + width * 0.5, *n)], color.mix(0.8).filled())
            }))
            .map_err(e)?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    area.present().map_err(e)
}

/// One colour per variant of an RPC chart, in the runs' order.
const VARIANT_COLORS: [RGBColor; 6] = [
    BASE,
    CAND,
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// The highest percentile a tail chart reaches: p99.9, three nines.
const TAIL_NINES: f64 = 3.0;

/// Writes `rpc_latency_warm|cold.svg|png` into `dir`: per pass, one panel per RPC kind, each
/// variant's latency at every percentile, the percentile axis counting nines (p90, p99 and
/// p99.9 evenly apart, p0 at the left edge) so the tail gets as much room as the bulk.
/// Returns the files.
pub fn write_rpc_charts(
    variants: &[crate::reth_bench::rpc::Variant],
    dir: &Path,
) -> Result<Vec<PathBuf>, ChartError> {
    use crate::reth_bench::rpc::Pass;
    register_font()?;
    let mut written = Vec::new();
    for pass in Pass::ALL {
        // Kinds with at least one call in this pass, each a panel.
        let kinds: Vec<String> = crate::reth_bench::rpc::kinds(variants)
            .into_iter()
            .filter(|k| {
                variants
                    .iter()
                    .any(|v| v.pass(pass).get(k).is_some_and(|c| !c.is_empty()))
            })
            .collect();
        if kinds.is_empty() {
            continue;
        }
        let cols = kinds.len().min(4);
        let rows = kinds.len().div_ceil(cols);
        let size = (340 * cols as u32, 300 * rows as u32 + 40);
        for ext in ["svg", "png"] {
            let file = dir.join(format!("rpc_latency_{}.{ext}", pass.name()));
            let drawn = if ext == "svg" {
                rpc_chart(
                    variants,
                    pass,
                    &kinds,
                    (rows, cols),
                    SVGBackend::new(&file, size).into_drawing_area(),
                )
            } else {
                rpc_chart(
                    variants,
                    pass,
                    &kinds,
                    (rows, cols),
                    BitMapBackend::new(&file, size).into_drawing_area(),
                )
            };
            drawn.map_err(draw_err(&file))?;
            written.push(file);
        }
    }
    Ok(written)
}

/// The percentile (in percent) at `nines` on the tail axis: 0 -> p0, 1 -> p90, 2 -> p99.
fn percentile_at(nines: f64) -> f64 {
    100.0 * (1.0 - 10f64.powf(-nines))
}

/// A variant's line on one panel: label, colour, (nines, µs) points.
type Curve<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

fn rpc_chart<DB: DrawingBackend>(
    variants: &[crate::reth_bench::rpc::Variant],
    pass: crate::reth_bench::rpc::Pass,
    kinds: &[String],
    (rows, cols): (usize, usize),
    area: DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), String> {
    use crate::reth_bench::rpc::percentile;
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    area.fill(&WHITE).map_err(e)?;
    let area = area
        .titled(
            &format!("RPC latency by percentile, {}", pass.caption()),
            ("sans-serif", 22),
        )
        .map_err(e)?;
    const STEPS: usize = 300;
    for (panel, kind) in area.split_evenly((rows, cols)).iter().zip(kinds) {
        let curves: Vec<Curve> = variants
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let calls = v.pass(pass).get(kind).filter(|c| !c.is_empty())?;
                let points = (0..=STEPS)
                    .map(|s| {
                        let nines = TAIL_NINES * s as f64 / STEPS as f64;
                        (nines, percentile(calls, percentile_at(nines)).max(1.0))
                    })
                    .collect();
                Some((
                    v.label.as_str(),
                    VARIANT_COLORS[i % VARIANT_COLORS.len()],
                    points,
                ))
            })
            .collect();
        let (lo, hi) = curves
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|(_, y)| *y))
            .fold((f64::MAX, 1.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
        let mut chart = ChartBuilder::on(panel)
            .caption(kind, ("sans-serif", 15))
            .margin(8)
            .margin_right(24)
            .x_label_area_size(30)
            .y_label_area_size(55)
            .build_cartesian_2d(
                0.0..TAIL_NINES,
                ((lo * 0.8).max(0.5)..hi * 1.25).log_scale(),
            )
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_labels(4)
            .x_label_formatter(&|n| format!("p{}", (percentile_at(*n) * 10.0).round() / 10.0))
            .y_label_formatter(&|us| format!("{us:.0}"))
            .y_desc("µs")
            .draw()
            .map_err(e)?;
        for (label, color, points) in curves {
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(e)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(e)?;
    }
    area.present().map_err(e)
}
