//! The contract between a host (the simulator, or the real runtime's `--emulate`) and a
//! device model. Sans-IO like the scheduling core: the caller owns the clock.
//!
//! Call order: `submit` a command whenever fewer than `queue_depth()` commands are
//! outstanding; ask `poll_timeout()` when the device next needs attention; at that time
//! (or later) call `poll_completion(now)` repeatedly until it returns `None`. Time passed to
//! any method never goes backwards. A model is a deterministic function of its profile,
//! its seed and the calls made to it.

use iosched_core::{Instant, Op};

/// One command as the device sees it (already merged and sorted by the host).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct DiskCommand {
    /// Host tag, echoed in the completion.
    pub id: u64,
    pub op: Op,
    pub sector: u64,
    pub len_sectors: u32,
}

/// A finished command.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct DiskCompletion {
    pub id: u64,
    /// When the command completed (≤ the `now` passed to `poll_completion`).
    pub at: Instant,
}

pub trait Device {
    /// Commands the device accepts at once (1 = no tagged queueing).
    fn queue_depth(&self) -> u32;
    /// Addressable size in 512-byte sectors.
    fn capacity_sectors(&self) -> u64;
    /// Hand a command to the device at `now`.
    fn submit(&mut self, now: Instant, cmd: DiskCommand);
    /// The earliest instant at which `poll_completion` can return something, if any
    /// command is outstanding.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Advance the model to `now` and return one completion that happened at or before it,
    /// earliest first.
    fn poll_completion(&mut self, now: Instant) -> Option<DiskCompletion>;
}
