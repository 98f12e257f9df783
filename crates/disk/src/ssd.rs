//! A simple but credible SSD (disk.md §5): internal parallelism over channels × dies ×
//! planes, a controller with a per-command firmware cost (the IOPS cap), a host link of
//! finite bandwidth, and a DRAM write buffer.
//!
//! Timeline of a read: the controller takes the command (firmware time, one command at a
//! time), then each flash page it touches is sensed on its plane (`t_read`, planes are
//! independent) and moved over its channel (page bytes at the channel rate, channels are
//! shared by their dies), then the data goes over the host link; a fixed protocol latency
//! (interrupt, AHCI/NVMe doorbells) is added once. A write is acknowledged once its data
//! is in the write buffer; the buffer drains in the background, each page taking the
//! channel and then `t_program` on a plane, planes chosen round-robin as a log-structured
//! FTL would. A write that finds the buffer full waits for space; FLUSH waits until the
//! buffer is empty.
//!
//! Not modelled: garbage collection and write amplification (the model is a fresh or
//! well over-provisioned drive), program/erase suspension, read-disturb, SLC caching
//! beyond the buffer. Resources are granted in submission order, so a command's
//! completion is known when it is submitted and never changes.
//!
//! Queue-depth scaling follows Little's law: IOPS ≈ QD / latency until the planes, the
//! channels, the controller or the link saturate.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use iosched_core::{Instant, Op};

use crate::device::{Device, DiskCommand, DiskCompletion};

/// A resource used for short transfers, reserved in submission order but able to fill an
/// earlier idle gap: a transfer ready early is not held up behind one reserved for later
/// (a channel or the host link; DMA engines interleave).
#[derive(Clone, Debug, Default)]
struct Timeline {
    /// Busy intervals [start, end), sorted, non-overlapping.
    busy: Vec<(u64, u64)>,
}

impl Timeline {
    /// Reserve `dur` ns at or after `ready`; returns the end.
    fn reserve(&mut self, ready: u64, dur: u64) -> u64 {
        let mut t = ready;
        let mut i = self.busy.partition_point(|&(_, e)| e <= t);
        while i < self.busy.len() {
            let (s, e) = self.busy[i];
            if t + dur <= s {
                break;
            }
            t = t.max(e);
            i += 1;
        }
        self.busy.insert(i, (t, t + dur));
        t + dur
    }
    /// Forget intervals that ended before `t` (no later request can be ready before it).
    fn prune(&mut self, t: u64) {
        let k = self.busy.partition_point(|&(_, e)| e <= t);
        if k > 0 {
            self.busy.drain(..k);
        }
    }
}

/// Parameters of an [`Ssd`]. Times in ns, rates in bytes per second.
#[derive(Clone, Debug, PartialEq)]
pub struct SsdParams {
    pub capacity_sectors: u64,
    pub channels: u32,
    pub dies_per_channel: u32,
    pub planes_per_die: u32,
    pub page_bytes: u32,
    /// Array read time (tR).
    pub t_read_ns: u64,
    /// Array program time (tPROG).
    pub t_program_ns: u64,
    /// Flash channel rate.
    pub channel_bytes_per_s: u64,
    /// Firmware time per command; the controller handles one command at a time, so this
    /// caps the IOPS at 10⁹ / `firmware_ns`.
    pub firmware_ns: u64,
    /// Fixed per-command latency that does not occupy the controller (protocol,
    /// interrupt).
    pub protocol_ns: u64,
    /// Host link rate.
    pub link_bytes_per_s: u64,
    pub queue_depth: u32,
    /// DRAM write buffer.
    pub write_buffer_bytes: u64,
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct Ssd {
    p: SsdParams,
    ctrl_free: u64,
    link: Timeline,
    chans: Vec<Timeline>,
    plane_free: Vec<u64>,
    /// Next plane for a buffered page (round-robin).
    next_plane: usize,
    /// Pages in the write buffer with the instant each leaves it (program done).
    buffered: VecDeque<u64>,
    /// Instant the last buffered page is programmed.
    drain_end: u64,
    done: BinaryHeap<Reverse<(u64, u64, u64)>>,
    seq: u64,
}

impl Ssd {
    pub fn new(p: SsdParams) -> Ssd {
        let planes = (p.channels * p.dies_per_channel * p.planes_per_die).max(1) as usize;
        Ssd {
            chans: vec![Timeline::default(); p.channels.max(1) as usize],
            plane_free: vec![0; planes],
            p,
            ctrl_free: 0,
            link: Timeline::default(),
            next_plane: 0,
            buffered: VecDeque::new(),
            drain_end: 0,
            done: BinaryHeap::new(),
            seq: 0,
        }
    }

    pub fn params(&self) -> &SsdParams {
        &self.p
    }

    fn xfer_ns(bytes: u64, rate: u64) -> u64 {
        (bytes as u128 * 1_000_000_000u128).div_ceil(rate.max(1) as u128) as u64
    }

    fn planes(&self) -> usize {
        self.plane_free.len()
    }

    /// Channel of a plane: planes are numbered channel-fastest, so that consecutive
    /// logical pages spread over the channels first (as FTLs stripe).
    fn channel_of(&self, plane: usize) -> usize {
        plane % self.chans.len()
    }

    fn read(&mut self, t: u64, sector: u64, n: u64) -> u64 {
        let pb = self.p.page_bytes as u64;
        let (b0, b1) = (sector * 512, (sector + n) * 512);
        let mut sent = t;
        // Static striping of logical pages over planes (a fresh drive written
        // sequentially looks like this); each page goes to the host as soon as it is off
        // its channel.
        let mut page = b0 / pb;
        while page * pb < b1 {
            let plane = (page % self.planes() as u64) as usize;
            let ch = self.channel_of(plane);
            let bytes = (b1.min((page + 1) * pb) - b0.max(page * pb)).max(512);
            let sensed = t.max(self.plane_free[plane]) + self.p.t_read_ns;
            let moved = self.chans[ch].reserve(sensed, Ssd::xfer_ns(bytes, self.p.channel_bytes_per_s));
            self.plane_free[plane] = sensed;
            sent = sent.max(self.link.reserve(moved, Ssd::xfer_ns(bytes, self.p.link_bytes_per_s)));
            page += 1;
        }
        sent
    }

    fn write(&mut self, t: u64, sector: u64, n: u64) -> u64 {
        let pb = self.p.page_bytes as u64;
        let bytes = n * 512;
        let pages = bytes.div_ceil(pb).max(1);
        let cap_pages = (self.p.write_buffer_bytes / pb).max(pages);
        // Wait for buffer space.
        let mut t = t;
        while let Some(&end) = self.buffered.front() {
            if end <= t {
                self.buffered.pop_front();
            } else if self.buffered.len() as u64 + pages > cap_pages {
                t = end;
                self.buffered.pop_front();
            } else {
                break;
            }
        }
        let _ = sector;
        let in_buffer = self.link.reserve(t, Ssd::xfer_ns(bytes, self.p.link_bytes_per_s));
        // Background programming, round-robin over planes.
        for _ in 0..pages {
            let plane = self.next_plane;
            self.next_plane = (self.next_plane + 1) % self.planes();
            let ch = self.channel_of(plane);
            let moved = self.chans[ch].reserve(in_buffer, Ssd::xfer_ns(pb, self.p.channel_bytes_per_s));
            let programmed = moved.max(self.plane_free[plane]) + self.p.t_program_ns;
            self.plane_free[plane] = programmed;
            self.drain_end = self.drain_end.max(programmed);
            // Keep the queue sorted by drain time (programs finish out of order).
            let pos = self.buffered.partition_point(|&e| e <= programmed);
            self.buffered.insert(pos, programmed);
        }
        in_buffer
    }
}

impl Device for Ssd {
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth.max(1)
    }

    fn capacity_sectors(&self) -> u64 {
        self.p.capacity_sectors
    }

    fn submit(&mut self, now: Instant, cmd: DiskCommand) {
        let t0 = now.as_nanos();
        let n = cmd.len_sectors as u64;
        assert!(
            matches!(cmd.op, Op::Flush) || cmd.sector + n <= self.p.capacity_sectors,
            "command {} beyond the end of the device",
            cmd.id
        );
        let started = t0.max(self.ctrl_free);
        let t = started + self.p.firmware_ns;
        self.ctrl_free = t;
        // Nothing submitted from now on is ready before `t`.
        self.link.prune(t);
        for c in &mut self.chans {
            c.prune(t);
        }
        let end = match cmd.op {
            Op::Read => self.read(t, cmd.sector, n.max(1)),
            Op::Write => self.write(t, cmd.sector, n.max(1)),
            Op::Flush => t.max(self.drain_end),
            Op::Discard => t,
        };
        self.seq += 1;
        self.done.push(Reverse((end + self.p.protocol_ns, self.seq, cmd.id)));
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.done.peek().map(|Reverse((t, _, _))| Instant::from_nanos(*t))
    }

    fn poll_completion(&mut self, now: Instant) -> Option<DiskCompletion> {
        match self.done.peek() {
            Some(Reverse((t, _, _))) if *t <= now.as_nanos() => {
                let Reverse((at, _, id)) = self.done.pop().unwrap();
                Some(DiskCompletion { id, at: Instant::from_nanos(at) })
            }
            _ => None,
        }
    }
}
