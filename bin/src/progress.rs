//! Progress bars (indicatif) for the library's long steps: rows/s and ETA when the total is
//! known, a spinner otherwise. Hidden for `--json` and when stderr is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use parking_lot::Mutex;
use reth_hybrid_migrate::Progress;

#[derive(Debug)]
pub struct Bars {
    current: Mutex<Option<(ProgressBar, std::time::Instant, String)>>,
    hidden: bool,
}

impl Bars {
    pub fn new(hidden: bool) -> Self {
        Self {
            current: Mutex::new(None),
            hidden,
        }
    }
}

impl Progress for Bars {
    fn begin(&self, step: &str, total: Option<u64>) {
        let bar = match total {
            Some(total) => ProgressBar::new(total).with_style(
                ProgressStyle::with_template(
                    "{msg:40} [{bar:30}] {human_pos}/{human_len} rows  {per_sec}  ETA {eta}",
                )
                .expect("template")
                .progress_chars("=> "),
            ),
            None => ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("template"),
            ),
        };
        if self.hidden {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        } else {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
        }
        bar.set_message(step.to_string());
        *self.current.lock() = Some((bar, std::time::Instant::now(), step.to_string()));
    }

    fn advance(&self, rows: u64) {
        if let Some((bar, ..)) = &*self.current.lock() {
            bar.inc(rows);
        }
    }

    fn end(&self) {
        if let Some((bar, started, step)) = self.current.lock().take() {
            bar.finish_and_clear();
            tracing::info!(
                step,
                rows = bar.position(),
                seconds = started.elapsed().as_secs_f64(),
                "step done"
            );
        }
    }
}

/// `12.3 MiB`-style sizes for tables and summaries.
pub fn bytes(n: u64) -> String {
    indicatif::HumanBytes(n).to_string()
}
