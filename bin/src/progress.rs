//! Progress bars (indicatif) for the library's long steps: rows/s and ETA when the total is
//! known, a spinner otherwise. Hidden for `--json` and when stderr is not a terminal.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use parking_lot::Mutex;
use reth_hybrid_migrate::Progress;
use std::{collections::HashMap, thread::ThreadId, time::Instant};

/// One bar per thread's current step (steps may run at once, see [`Progress`]).
#[derive(Debug)]
pub struct Bars {
    bars: MultiProgress,
    current: Mutex<HashMap<ThreadId, (ProgressBar, Instant, String)>>,
}

impl Bars {
    pub fn new(hidden: bool) -> Self {
        let target = if hidden {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        Self {
            bars: MultiProgress::with_draw_target(target),
            current: Mutex::new(HashMap::new()),
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
        let bar = self.bars.add(bar);
        if !self.bars.is_hidden() {
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
        }
        bar.set_message(step.to_string());
        let previous = self.current.lock().insert(
            std::thread::current().id(),
            (bar, Instant::now(), step.to_string()),
        );
        if let Some((bar, ..)) = previous {
            bar.finish_and_clear();
            self.bars.remove(&bar);
        }
    }

    fn advance(&self, rows: u64) {
        if let Some((bar, ..)) = self.current.lock().get(&std::thread::current().id()) {
            bar.inc(rows);
        }
    }

    fn end(&self) {
        let ended = self.current.lock().remove(&std::thread::current().id());
        if let Some((bar, started, step)) = ended {
            bar.finish_and_clear();
            self.bars.remove(&bar);
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
