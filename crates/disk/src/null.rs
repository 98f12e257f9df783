//! A null device: every command completes a fixed latency after it is submitted, any
//! number at once. For tests of hosts and schedulers where the device must not matter.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use iosched_core::{Duration, Instant};

use crate::device::{Device, DiskCommand, DiskCompletion};

/// Parameters of a [`NullDevice`].
#[derive(Clone, Debug, PartialEq)]
pub struct NullParams {
    pub latency: Duration,
    pub queue_depth: u32,
    pub capacity_sectors: u64,
}

impl Default for NullParams {
    fn default() -> Self {
        NullParams { latency: Duration::from_micros(100), queue_depth: 32, capacity_sectors: 1 << 31 }
    }
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct NullDevice {
    p: NullParams,
    done: BinaryHeap<Reverse<(Instant, u64, u64)>>,
    seq: u64,
}

impl NullDevice {
    pub fn new(p: NullParams) -> NullDevice {
        NullDevice { p, done: BinaryHeap::new(), seq: 0 }
    }
}

impl Device for NullDevice {
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth.max(1)
    }
    fn capacity_sectors(&self) -> u64 {
        self.p.capacity_sectors
    }
    fn submit(&mut self, now: Instant, cmd: DiskCommand) {
        self.seq += 1;
        self.done.push(Reverse((now + self.p.latency, self.seq, cmd.id)));
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.done.peek().map(|Reverse((t, _, _))| *t)
    }
    fn poll_completion(&mut self, now: Instant) -> Option<DiskCompletion> {
        match self.done.peek() {
            Some(Reverse((t, _, _))) if *t <= now => {
                let Reverse((at, _, id)) = self.done.pop().unwrap();
                Some(DiskCompletion { id, at })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iosched_core::Op;

    #[test]
    fn fixed_latency_in_submission_order() {
        let mut d = NullDevice::new(NullParams::default());
        for id in 0..3 {
            d.submit(Instant::from_micros(10), DiskCommand { id, op: Op::Read, sector: 0, len_sectors: 8 });
        }
        assert_eq!(d.poll_timeout(), Some(Instant::from_micros(110)));
        assert_eq!(d.poll_completion(Instant::from_micros(109)), None);
        let ids: Vec<u64> = std::iter::from_fn(|| d.poll_completion(Instant::from_micros(110))).map(|c| c.id).collect();
        assert_eq!(ids, vec![0, 1, 2]);
    }
}
