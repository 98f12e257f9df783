//! Progress on the terminal (indicatif): only when stderr is a terminal, never in the
//! output, cleared when done. The libraries report where they stand — the simulator its
//! simulated clock ([`iosched_workloads::machine::Limits::clock`]), the real runtime its
//! completed operations ([`iosched_rt::workload::Control::progress`]) — and this module,
//! in the binary, draws it.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// A bar of runs done, with an ETA; while runs are under way, the simulated time the
/// latest of them reached.
pub struct Progress {
    bar: ProgressBar,
    ticker: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
}

fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr_with_hz(5) } else { ProgressDrawTarget::hidden() }
}

impl Progress {
    /// Progress of `what`: runs done of the total given to [`Progress::tick`], with the
    /// simulated clock the runs publish to [`sim_clock`].
    pub fn new(what: &'static str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(1), target());
        bar.set_style(
            ProgressStyle::with_template("{prefix}: {bar:30} {pos}/{len} runs, {elapsed} (ETA {eta}) {msg}")
                .expect("a valid template"),
        );
        bar.set_prefix(what);
        let clock = sim_clock();
        let stop = Arc::new(AtomicBool::new(false));
        let (b, c, s) = (bar.clone(), clock, Arc::clone(&stop));
        let ticker = (!bar.is_hidden()).then(|| {
            let h = std::thread::spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    let ns = c.load(Ordering::Relaxed);
                    if ns > 0 {
                        b.set_message(format!("simulated {:.0} s", ns as f64 / 1e9));
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            });
            (stop, h)
        });
        Progress { bar, ticker }
    }

    /// `done` of `total` runs are done; `detail` names the last.
    pub fn tick(&self, done: usize, total: usize, detail: &str) {
        self.bar.set_length(total as u64);
        self.bar.set_position(done as u64);
        if !detail.is_empty() {
            self.bar.set_message(detail.to_string());
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// Run `f` (which prints) with the bar off the screen.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some((stop, h)) = self.ticker.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = h.join();
        }
        self.bar.finish_and_clear();
    }
}

/// The cell every simulated run of this process publishes its clock in (nanoseconds;
/// `Limits::clock`), read by the bar's ticker.
pub fn sim_clock() -> Arc<AtomicU64> {
    static CLOCK: std::sync::OnceLock<Arc<AtomicU64>> = std::sync::OnceLock::new();
    Arc::clone(CLOCK.get_or_init(|| Arc::new(AtomicU64::new(0))))
}

/// The real runtime's progress, drawn: a bar of operations where the phase has a total,
/// a count and rate where it is timed.
pub fn real() -> Option<iosched_rt::workload::OnProgress> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(None, target());
    bar.set_style(ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} ({per_sec}, ETA {eta})").expect("valid"));
    let last = std::sync::Mutex::new(String::new());
    Some(Arc::new(move |t: iosched_rt::workload::Tick<'_>| {
        let mut l = last.lock().unwrap_or_else(|e| e.into_inner());
        if *l != t.what {
            // A new phase: a new bar, the rate counted afresh.
            bar.reset();
            bar.set_message(t.what.to_string());
            *l = t.what.to_string();
        }
        match t.total {
            Some(n) => {
                bar.set_length(n);
                bar.set_position(t.done);
                if t.done >= n {
                    bar.finish_and_clear();
                }
            }
            None => {
                bar.set_length(t.done.max(1));
                bar.set_position(t.done);
            }
        }
    }))
}
