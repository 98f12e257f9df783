//! The one driver loop, written once, run over any [`Env`]: the simulator implements
//! `Env` with virtual time, the io_uring runtime with a real clock.
//!
//! ```text
//! loop:
//!     now = env.now()
//!     while queue.poll_dispatch(now) = rq:  env.issue(now, rq)
//!     while queue.poll_event() = ev:        env.notify(now, ev)
//!     match env.wait(queue.poll_timeout()):
//!         Input(i) => queue.handle_*(env.now(), i)
//!         Timeout  => queue.handle_timeout(env.now())
//!         Stop     => return
//! ```

use crate::queue::{Event, Input, Queue, Segments};
use crate::request::Request;
use crate::time::Instant;

/// What `Env::wait` returns.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Wake {
    /// An input arrived (at `env.now()`).
    Input(Input),
    /// The deadline passed.
    Timeout,
    /// The run is over.
    Stop,
}

/// The world around a queue: a clock, a device and submitters.
pub trait Env {
    /// The current time. Never goes backwards.
    fn now(&mut self) -> Instant;
    /// Give a request to the device. `segments` lists the submitted units it carries.
    fn issue(&mut self, now: Instant, rq: &Request, segments: Segments<'_>);
    /// Observe a queue event (completions wake submitters; others feed traces and stats).
    fn notify(&mut self, _now: Instant, _event: &Event) {}
    /// Block until the next input, or until `deadline` if that comes first.
    fn wait(&mut self, deadline: Option<Instant>) -> Wake;
}

/// Run `queue` against `env` until the environment says stop.
pub fn run<E: Env + ?Sized>(queue: &mut Queue, env: &mut E) {
    loop {
        let now = env.now();
        while let Some(rq) = queue.poll_dispatch(now) {
            env.issue(now, &rq, queue.segments(rq.id));
        }
        while let Some(ev) = queue.poll_event() {
            env.notify(now, &ev);
        }
        match env.wait(queue.poll_timeout()) {
            Wake::Input(input) => {
                let now = env.now();
                queue.handle_input(&input, now);
            }
            Wake::Timeout => {
                let now = env.now();
                queue.handle_timeout(now);
            }
            Wake::Stop => return,
        }
    }
}
