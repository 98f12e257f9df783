//! A rotating disk drive, modelled after DiskSim 4.0's disk module (`disksim_diskctlr.c`,
//! `disksim_diskcache.c`, `diskmodel/`).
//!
//! What is modelled, per command:
//!
//! * **controller overheads** at arrival, chosen by hit/miss, read/write and whether the
//!   previous completed command was a read or a write; completion, reselect, disconnect
//!   and data-preparation overheads on the host link;
//! * **mechanics**: seek (table, HPL, or the fitted √→linear curve), head switch, write
//!   settle, rotation computed exactly from integer time, media transfer at the zone's
//!   rate, track and cylinder skews, slips and spares ([`layout`]);
//! * **the host link**: per-block transfer time, overlapped with the media, water marks
//!   ([`xfer`]);
//! * **the buffer**: segments kept in LRU order; read-ahead after a read (to the track
//!   end, the cylinder end, the segment end, or one track ahead) that a new command aborts
//!   at the next sector boundary; hits, partial hits and "almost" hits on data still being
//!   read ahead; "read any free blocks"; zero-latency access; write-through or write-back
//!   ("fast write") with destaging when the mechanism is free, reads first unless dirty
//!   data passes a high-water mark; appending writes combine; FLUSH waits for all dirty
//!   data;
//! * **command queueing**: up to `queue_depth` commands, FCFS or shortest positioning
//!   time first with an aging bound.
//!
//! The engine computes a command's whole timeline when the mechanism takes it (its media
//! part is never pre-empted, as in DiskSim); background work (read-ahead) is evaluated
//! lazily and cut short when something else needs the heads.

pub mod layout;
pub mod media;
pub mod params;
pub mod seek;
pub mod spindle;
pub mod xfer;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use iosched_core::{Instant, Op};

use crate::device::{Device, DiskCommand, DiskCompletion};
use media::{Mechanics, Run, Visit};
pub use params::{Bus, Cache, ExtraWriteDisconnect, FastWrite, HddParams, Overheads, Prefetch, QueuePolicy};
use spindle::Spindle;
use xfer::Xfer;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum SegState {
    Empty,
    /// Holds valid data, nothing in flight.
    Clean,
    /// A read stream is filling it.
    Reading,
    /// Holds data not yet on the media (`dirty_from..end`).
    Dirty,
}

#[derive(Clone, Debug)]
struct Seg {
    start: u64,
    end: u64,
    state: SegState,
    /// The last access through this segment was a read.
    last_read: bool,
    /// LRU stamp: higher is more recent.
    stamp: u64,
    /// Reserved for writes ("Use separate write segment").
    write_only: bool,
    /// Dirty data: first block not yet on the media.
    dirty_from: u64,
    /// Host-to-buffer transfer of the dirty data: block `l` is in the buffer at
    /// `xfer_start + (l − xfer_base + 1)·write_block_ns`.
    xfer_start: u64,
    xfer_base: u64,
    /// Arrival of the oldest dirty data (destage order).
    dirty_since: u64,
    /// When the dirty data may start going to the media (the write's command overhead).
    destage_ready: u64,
    /// A destage of this segment is in progress until this instant.
    destaging_until: Option<u64>,
    /// Data end of the write the segment was set up for (appends extend it).
    append_end: u64,
}

impl Seg {
    fn new(write_only: bool) -> Seg {
        Seg {
            start: 0,
            end: 0,
            state: SegState::Empty,
            last_read: true,
            stamp: 0,
            write_only,
            dirty_from: 0,
            xfer_start: 0,
            xfer_base: 0,
            dirty_since: 0,
            destage_ready: 0,
            destaging_until: None,
            append_end: 0,
        }
    }
    fn overlaps(&self, lbn: u64, n: u64) -> bool {
        self.state != SegState::Empty && lbn < self.end && lbn + n > self.start
    }
}

/// Why a stream stops at a track or cylinder boundary (DiskSim "Buffer continuous read").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum StopRule {
    Never,
    TrackEnd,
    CylinderEnd,
}

/// A sequential read of the media into a segment: first the blocks a command is waiting
/// for (up to `fg_end`), then read-ahead up to `limit`.
#[derive(Clone, Debug)]
struct Stream {
    seg: usize,
    limit: u64,
    fg_end: u64,
    stop: StopRule,
    /// Read-ahead cannot be interrupted before the command that started it completed.
    stoppable_from: u64,
    visit: Visit,
    /// No visit after `visit`.
    last: bool,
}

/// A command waiting for the mechanism.
#[derive(Clone, Debug)]
struct Queued {
    id: u64,
    op: Op,
    lbn: u64,
    n: u64,
    arrival: u64,
    after_read: bool,
    /// Where the first block is (cylinder, head, angle), for SPTF.
    target: (u32, u32, u64),
}

/// The mechanism when no stream owns it.
#[derive(Copy, Clone, Debug)]
struct Heads {
    cyl: u32,
    head: u32,
    /// Busy (with a write or destage) until this instant.
    free: u64,
}

/// A rotating drive (see the module documentation).
#[derive(Clone, Debug)]
pub struct Hdd {
    p: Arc<HddParams>,
    m: Mechanics,
    heads: Heads,
    stream: Option<Stream>,
    segs: Vec<Seg>,
    /// False only when no segment is dirty (set when one becomes dirty, cleared by a scan
    /// that finds none): read-only phases skip the per-decision scans for destages.
    dirty_possible: std::cell::Cell<bool>,
    stamp: u64,
    queue: Vec<Queued>,
    /// Fast writes waiting for buffer space.
    stalled: Vec<Queued>,
    /// Flushes waiting for the dirty data to reach the media.
    flushes: Vec<Queued>,
    /// The host link is busy until this instant.
    bus_free: u64,
    done: BinaryHeap<Reverse<(u64, u64, u64)>>,
    /// (completion instant, was a read) of recent completions, for "after read/write".
    recent: Vec<(u64, bool)>,
    seq: u64,
    outstanding: u32,
    /// Statistics: commands served from the buffer without media access.
    pub hits: u64,
    scratch_dirty: Vec<usize>,
    scratch_ready: Vec<usize>,
    /// The stalled writes being retried (`after_destage`), kept to reuse its storage.
    scratch_stalled: Vec<Queued>,
}

impl Hdd {
    /// Build a drive; `seed` sets the spindle's angle at time zero.
    pub fn new(p: Arc<HddParams>, seed: u64) -> Hdd {
        Hdd::with_phase(p.clone(), phase_from_seed(seed))
    }

    /// Build a drive whose spindle is at angle `phase` (in 1/[`spindle::REV`] of a
    /// revolution) at time zero; DiskSim starts at 0.
    pub fn with_phase(p: Arc<HddParams>, phase: u64) -> Hdd {
        let m = Mechanics {
            layout: p.layout.clone(),
            seek: p.seek.clone(),
            spin: Spindle::new(p.rpm, phase),
            head_switch_ns: p.head_switch_ns,
            write_settle_ns: p.write_settle_ns,
            write_settle_on_head_switch: p.write_settle_on_head_switch,
            seek_by_distance: media::seek_table(&p.seek, p.layout.cylinders()),
            recent_tracks: Default::default(),
            recent_next: Default::default(),
        };
        let nseg = p.cache.segments.max(1) as usize;
        let mut segs: Vec<Seg> = (0..nseg).map(|_| Seg::new(false)).collect();
        if p.cache.separate_write_segment {
            segs.push(Seg::new(true));
        }
        Hdd {
            p,
            m,
            heads: Heads { cyl: 0, head: 0, free: 0 },
            stream: None,
            segs,
            stamp: 0,
            queue: Vec::new(),
            stalled: Vec::new(),
            flushes: Vec::new(),
            bus_free: 0,
            done: BinaryHeap::new(),
            recent: vec![(0, true)],
            seq: 0,
            outstanding: 0,
            hits: 0,
            scratch_dirty: Vec::new(),
            scratch_ready: Vec::new(),
            scratch_stalled: Vec::new(),
            dirty_possible: std::cell::Cell::new(false),
        }
    }

    pub fn params(&self) -> &HddParams {
        &self.p
    }

    pub fn mechanics(&self) -> &Mechanics {
        &self.m
    }

    // ---- bookkeeping -------------------------------------------------------------------

    fn complete(&mut self, id: u64, at: u64, read: bool) {
        self.seq += 1;
        self.done.push(Reverse((at, self.seq, id)));
        self.recent.push((at, read));
    }

    /// Was the last command completed at or before `t` a read? (DiskSim `lastflags`.)
    fn after_read(&mut self, t: u64) -> bool {
        let mut best: Option<(u64, bool)> = None;
        for &(at, r) in &self.recent {
            if at <= t && best.is_none_or(|(b, _)| at >= b) {
                best = Some((at, r));
            }
        }
        let (bt, br) = best.unwrap_or((0, true));
        self.recent.retain(|&(at, _)| at >= bt);
        br
    }

    fn touch(&mut self, s: usize) {
        self.stamp += 1;
        self.segs[s].stamp = self.stamp;
    }

    fn seg_size(&self) -> u64 {
        self.p.cache.segment_blocks.max(1) as u64
    }

    fn ndirty(&self) -> u32 {
        self.segs.iter().filter(|s| s.state == SegState::Dirty).count() as u32
    }

    // ---- read streams ------------------------------------------------------------------

    /// Bring the stream up to instant `x`: visits that ended by then are committed to the
    /// segment. Returns the segment's contiguous valid end at `x`.
    fn sync_stream(&mut self, x: u64) {
        loop {
            let Some(st) = self.stream.as_ref() else {
                return;
            };
            if st.visit.t_end > x {
                return;
            }
            self.commit_visit();
            if !self.next_visit() {
                return;
            }
        }
    }

    /// Count the current visit's blocks into its segment.
    fn commit_visit(&mut self) {
        let size = self.seg_size();
        let st = self.stream.as_ref().unwrap();
        let (s, v) = (st.seg, &st.visit);
        let seg = &mut self.segs[s];
        if let Some(c) = v.captured_from.filter(|_| seg.start == seg.end) {
            seg.start = c;
        }
        seg.end = seg.end.max(v.b);
        seg.start = seg.start.max(seg.end.saturating_sub(size));
    }

    /// Move the stream to its next visit; false (and the stream ends) when done.
    fn next_visit(&mut self) -> bool {
        let st = self.stream.as_ref().unwrap();
        let v = &st.visit;
        let next = v.b;
        let bound = if next < st.fg_end { st.fg_end } else { st.limit };
        let background = next >= st.fg_end;
        let t = v.track;
        let mut end_stream = st.last || next >= bound || next >= self.m.layout.capacity();
        let mut newt = t;
        let mut t_land = v.t_end;
        if !end_stream && next >= t.end {
            let nt = self.m.track_of(next);
            let stop = match st.stop {
                StopRule::Never => false,
                StopRule::TrackEnd => true,
                StopRule::CylinderEnd => nt.cyl != t.cyl,
            };
            if background && stop {
                end_stream = true;
            } else {
                t_land = v.t_end + self.m.seek_ns((t.cyl, t.head), (nt.cyl, nt.head), false);
                newt = nt;
            }
        }
        if end_stream {
            self.end_stream();
            return false;
        }
        let b = bound.min(newt.end);
        let immed = self.p.cache.immediate_read;
        let nv = self.m.visit(newt, next, b, t_land, immed, false);
        self.stream.as_mut().unwrap().visit = nv;
        true
    }

    /// The stream read everything it was asked to: the segment is clean, the heads rest on
    /// the last track.
    fn end_stream(&mut self) {
        let st = self.stream.take().unwrap();
        let v = &st.visit;
        self.heads = Heads { cyl: v.track.cyl, head: v.track.head, free: v.t_end };
        let seg = &mut self.segs[st.seg];
        if seg.state == SegState::Reading {
            seg.state = if self.p.cache.enabled { SegState::Clean } else { SegState::Empty };
        }
    }

    /// Contiguous valid end of segment `s` at `x` (counting a stream's partial visit).
    fn seg_end_at(&self, s: usize, x: u64) -> u64 {
        let seg = &self.segs[s];
        match &self.stream {
            Some(st) if st.seg == s && x >= st.visit.t_land => {
                let v = &st.visit;
                if seg.end >= v.a { seg.end.max(v.a + v.done_by(&self.m.spin, x)) } else { seg.end }
            }
            _ => seg.end,
        }
    }

    /// Stop the stream at `x` (DiskSim `disk_buffer_stop_access`): the heads finish the
    /// seek or sector under way. Returns when the heads are free.
    fn stop_stream(&mut self, x: u64) -> u64 {
        self.sync_stream(x);
        let Some(st) = self.stream.take() else {
            return self.heads.free.max(x);
        };
        let v = &st.visit;
        let spin = self.m.spin;
        let boundary = v.boundary_at_or_after(&spin, x);
        let upto = if self.p.cache.stop_prefetch_in_sector { boundary } else { x };
        let ndone = if upto >= v.t_land { v.done_by(&spin, upto) } else { 0 };
        let size = self.seg_size();
        let seg = &mut self.segs[st.seg];
        if ndone > 0 && seg.end >= v.a {
            if let Some(c) = v.captured_from.filter(|_| seg.start == seg.end) {
                seg.start = c;
            }
            seg.end = seg.end.max(v.a + ndone);
            seg.start = seg.start.max(seg.end.saturating_sub(size));
        }
        if seg.state == SegState::Reading {
            seg.state = if self.p.cache.enabled && seg.end > seg.start { SegState::Clean } else { SegState::Empty };
        }
        self.heads = Heads { cyl: v.track.cyl, head: v.track.head, free: boundary };
        boundary
    }

    /// DiskSim `disk_buffer_get_max_readahead`: where read-ahead after a read of
    /// `[lbn, lbn+n)` into segment `s` stops.
    fn read_ahead_limit(&self, s: usize, lbn: u64, n: u64) -> u64 {
        let c = &self.p.cache;
        let cap = self.m.layout.capacity();
        let endreq = lbn + n;
        let l = match c.prefetch {
            Prefetch::None => endreq,
            Prefetch::OneTrackAhead => {
                if endreq >= cap {
                    endreq
                } else {
                    let t = self.m.track_of(endreq);
                    if self.segs[s].start < t.first { t.end + self.m.layout.spt_of_lbn(lbn) as u64 } else { t.end }
                }
            }
            _ if c.max_read_ahead > 0 => endreq + c.max_read_ahead as u64,
            _ => {
                let size = self.seg_size();
                if n >= size || size - n < c.min_read_ahead as u64 {
                    endreq + c.min_read_ahead as u64
                } else {
                    lbn + size
                }
            }
        };
        l.min(cap)
    }

    fn stop_rule(&self) -> StopRule {
        match self.p.cache.prefetch {
            Prefetch::TrackEnd => StopRule::TrackEnd,
            Prefetch::CylinderEnd => StopRule::CylinderEnd,
            _ => StopRule::Never,
        }
    }

    // ---- segment selection ---------------------------------------------------------------

    /// DiskSim `disk_buffer_select_read_segment` at instant `t`: the best segment for a
    /// read and how much of the read it already holds.
    fn select_read(&self, lbn: u64, n: u64, t: u64) -> Option<(usize, Hit)> {
        SELCALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Values of a segment that neither streams nor holds `lbn`, by state (Empty, Clean,
        // Reading, Dirty); a Reading segment that ends at `lbn` is worth 5 (almost-read hit).
        const MISS_VALUE: [u64; 4] = [3, 2, 0, 0];
        const STAMP_BITS: u32 = 58;
        let almost = self.p.cache.almost_read_hits;
        let stream_seg = self.stream.as_ref().map_or(usize::MAX, |st| st.seg);
        // Candidates are ranked by a key: value, then least recently used (stamps are far
        // below 2^58); the first of equal keys wins. Key 0 means unusable. The loop is kept
        // free of unpredictable branches: it runs for every segment of every read, three
        // times per request.
        let key = |value: u64, stamp: u64| (value << STAMP_BITS) | ((1u64 << STAMP_BITS) - 1 - stamp);
        let (mut best_key, mut best_i, mut slow_hit) = (0u64, usize::MAX, None);
        for (i, s) in self.segs.iter().enumerate() {
            let holds = (lbn >= s.start) & (lbn < s.end) & (s.state != SegState::Empty);
            let k = if (i == stream_seg) | holds {
                if s.write_only {
                    continue;
                }
                let (value, hit) = self.read_value(i, lbn, n, t, i == stream_seg);
                if value <= 0 {
                    continue;
                }
                let k = key(value as u64, s.stamp);
                if k > best_key {
                    slow_hit = Some(hit);
                }
                k
            } else {
                let almost_hit = almost & (s.state == SegState::Reading) & (s.end == lbn);
                let value = MISS_VALUE[s.state as usize].max(5 * almost_hit as u64) * (!s.write_only as u64);
                key(value, s.stamp) & 0u64.wrapping_sub((value != 0) as u64)
            };
            if k > best_key {
                if (i != stream_seg) & !holds {
                    slow_hit = None;
                }
                best_key = k;
                best_i = i;
            }
        }
        if best_i == usize::MAX {
            return None;
        }
        let hit = slow_hit.unwrap_or(if best_key >> STAMP_BITS == 5 { Hit::Partial(0) } else { Hit::Miss });
        Some((best_i, hit))
    }

    /// [`Hdd::select_read`]'s answer when the buffer holds (part of) the read: a whole or
    /// partial hit, values ≥ 4, which beat every replacement candidate (values ≤ 3). `None`
    /// when select_read would answer a miss. Only segments that stream, hold `lbn` or end
    /// at it can score ≥ 4, so this looks at nothing else; the checks on arrival and when
    /// the drive takes a command need no more.
    fn select_read_buffered(&self, lbn: u64, n: u64, t: u64) -> Option<(usize, Hit)> {
        const STAMP_BITS: u32 = 58;
        let almost = self.p.cache.almost_read_hits;
        let stream_seg = self.stream.as_ref().map_or(usize::MAX, |st| st.seg);
        let (mut best_key, mut best) = (0u64, None);
        for (i, s) in self.segs.iter().enumerate() {
            let holds = (lbn >= s.start) & (lbn < s.end) & (s.state != SegState::Empty);
            let ends_here = almost & (s.end == lbn);
            if !((i == stream_seg) | holds | ends_here) || s.write_only {
                continue;
            }
            let (value, hit) = self.read_value(i, lbn, n, t, i == stream_seg);
            if value < 4 {
                continue;
            }
            let k = ((value as u64) << STAMP_BITS) | ((1u64 << STAMP_BITS) - 1 - s.stamp);
            if k > best_key {
                best_key = k;
                best = Some((i, hit));
            }
        }
        best
    }

    /// How good segment `i` is for a read of `[lbn, lbn+n)` at `t` (DiskSim's values: a
    /// value ≤ 0 means unusable), and how much of the read it holds.
    fn read_value(&self, i: usize, lbn: u64, n: u64, t: u64, streaming: bool) -> (i32, Hit) {
        let c = &self.p.cache;
        let s = &self.segs[i];
        let end = if streaming { self.seg_end_at(i, t) } else { s.end };
        if s.state == SegState::Empty {
            (3, Hit::Miss)
        } else if lbn < s.start || lbn >= end {
            match s.state {
                SegState::Clean => (2, Hit::Miss),
                SegState::Reading if c.almost_read_hits && end == lbn => (5, Hit::Partial(0)),
                SegState::Reading
                    if streaming
                        && lbn > end
                        && lbn - end <= c.skip_ahead_hits
                        && self.stream.as_ref().is_some_and(|st| lbn < st.limit) =>
                {
                    (5, Hit::Partial(0))
                }
                SegState::Reading => {
                    let pure = streaming && self.stream.as_ref().is_some_and(|st| t >= st.stoppable_from);
                    if pure { (1, Hit::Miss) } else { (-1, Hit::Miss) }
                }
                _ => (-1, Hit::Miss),
            }
        } else {
            let v = match s.state {
                SegState::Dirty if c.enabled && c.read_hits_on_write_data => 11,
                SegState::Reading if c.enabled => 9,
                SegState::Clean if c.enabled && (c.read_hits_on_write_data || s.last_read) => 8,
                _ => -1,
            };
            if v < 0 {
                (-1, Hit::Miss)
            } else if end >= lbn + n {
                (v, Hit::Whole)
            } else {
                (v - 4, Hit::Partial(end - lbn))
            }
        }
    }

    /// A segment for a write of `[lbn, lbn+n)` (DiskSim `disk_buffer_select_write_segment`),
    /// `None` when it has to wait for a destage. The flag says the write appends to dirty
    /// data.
    fn select_write(&self, lbn: u64, n: u64, t: u64) -> Option<(usize, bool)> {
        let c = &self.p.cache;
        let size = self.seg_size();
        let ndirty = self.ndirty();
        let mut best: Option<(i32, u64, usize, bool)> = None;
        for (i, s) in self.segs.iter().enumerate() {
            if self.p.cache.separate_write_segment && !s.write_only {
                continue;
            }
            let streaming = self.stream.as_ref().is_some_and(|st| st.seg == i);
            let value = match s.state {
                SegState::Dirty => {
                    if c.combine_seq_writes && s.append_end == lbn && s.end == lbn && lbn + n - s.dirty_from <= size {
                        7
                    } else {
                        -1
                    }
                }
                _ if ndirty >= c.write_segments.max(1) => -1,
                SegState::Empty => 3,
                SegState::Clean => {
                    if s.overlaps(lbn, n) {
                        4
                    } else {
                        2
                    }
                }
                SegState::Reading => {
                    let pure = streaming && self.stream.as_ref().is_some_and(|st| t >= st.stoppable_from);
                    if pure { 1 } else { -1 }
                }
            };
            if value <= 0 {
                continue;
            }
            let better = match best {
                None => true,
                Some((bv, bs, _, _)) => value > bv || (value == bv && s.stamp < bs),
            };
            if better {
                best = Some((value, s.stamp, i, value == 7));
            }
        }
        best.map(|(_, _, i, a)| (i, a))
    }

    /// Forget clean data overlapping a write (DiskSim clears such segments).
    fn invalidate_clean(&mut self, lbn: u64, n: u64, except: usize) {
        for (i, s) in self.segs.iter_mut().enumerate() {
            if i != except && s.state == SegState::Clean && s.overlaps(lbn, n) {
                s.state = SegState::Empty;
                s.start = 0;
                s.end = 0;
            }
        }
    }

    // ---- arrivals ----------------------------------------------------------------------

    fn arrive(&mut self, t0: u64, cmd: DiskCommand) {
        assert!(cmd.len_sectors > 0 || matches!(cmd.op, Op::Flush), "zero-length {:?} command {}", cmd.op, cmd.id);
        let n = cmd.len_sectors as u64;
        if !matches!(cmd.op, Op::Flush) {
            assert!(
                cmd.sector + n <= self.capacity_sectors(),
                "command {} ({}+{}) beyond the end of the disk ({} sectors)",
                cmd.id,
                cmd.sector,
                n,
                self.capacity_sectors()
            );
        }
        self.outstanding += 1;
        let t0 = t0 + self.p.overheads.per_request;
        let after_read = self.after_read(t0);
        let q = Queued {
            id: cmd.id,
            op: cmd.op,
            lbn: cmd.sector,
            n,
            arrival: t0,
            after_read,
            target: match (&self.p.queue_policy, cmd.op) {
                (QueuePolicy::Sptf { .. }, Op::Read | Op::Write) => self.target_of(cmd.sector),
                _ => (0, 0, 0),
            },
        };
        match cmd.op {
            Op::Read => {
                if !self.try_read_hit(t0, &q) {
                    self.queue.push(q);
                }
            }
            Op::Write => {
                if self.p.cache.fast_write != FastWrite::Off && self.p.cache.enabled {
                    if !self.try_fast_write(t0, &q) {
                        self.stalled.push(q);
                    }
                } else {
                    self.queue.push(q);
                }
            }
            Op::Flush => {
                if self.ndirty() == 0 && self.stalled.is_empty() {
                    let o = &self.p.overheads;
                    let at = t0 + o.write(true, after_read) + o.write_complete;
                    self.complete(q.id, at, false);
                } else {
                    self.flushes.push(q);
                }
            }
            Op::Discard => {
                // Drives of the period had no TRIM: acknowledge after the command
                // overhead and forget any clean copy.
                self.invalidate_clean(q.lbn, n, usize::MAX);
                let o = &self.p.overheads;
                let at = t0 + o.write(true, after_read) + o.write_complete;
                self.complete(q.id, at, false);
            }
        }
    }

    /// A read entirely in the buffer is served by the controller at once, without the
    /// mechanism. Returns false when the read needs the media.
    fn try_read_hit(&mut self, t0: u64, q: &Queued) -> bool {
        self.sync_stream(t0);
        let sel = self.select_read_buffered(q.lbn, q.n, t0);
        self.read_hit_with(t0, q, sel)
    }

    /// [`Hdd::try_read_hit`] with the segment choice already made at `t0` (after
    /// `sync_stream(t0)`); a miss changes nothing.
    fn read_hit_with(&mut self, t0: u64, q: &Queued, sel: Option<(usize, Hit)>) -> bool {
        let Some((s, Hit::Whole)) = sel else {
            return false;
        };
        let o = &self.p.overheads;
        let start = (t0 + o.read(true, q.after_read) + o.data_prep).max(self.bus_free);
        let end = start + q.n * self.p.bus.read_block_ns;
        self.bus_free = end;
        let at = end + o.read_complete;
        self.complete(q.id, at, true);
        self.hits += 1;
        self.touch(s);
        self.segs[s].last_read = true;
        // Read-ahead bookkeeping (DiskSim disk_activate_read for a hit).
        let limit = self.read_ahead_limit(s, q.lbn, q.n);
        let miss_done = t0 + self.p.overheads.read(false, q.after_read);
        match self.stream.as_mut() {
            Some(st) if st.seg == s => {
                st.limit = st.limit.max(limit);
                st.last = false;
                st.stoppable_from = st.stoppable_from.max(at);
            }
            Some(st) if t0 >= st.stoppable_from => {
                let free = self.stop_stream(t0);
                self.idle_hit_read_ahead(s, limit, miss_done.max(free), at);
            }
            Some(_) => {}
            None => {
                if self.queue.is_empty() {
                    let free = self.heads.free;
                    self.idle_hit_read_ahead(s, limit, miss_done.max(free), at);
                }
            }
        }
        true
    }

    /// "Read-ahead on idle hit": resume reading ahead into the hit segment.
    fn idle_hit_read_ahead(&mut self, s: usize, limit: u64, t: u64, stoppable_from: u64) {
        if !self.p.cache.read_ahead_on_idle_hit || self.p.cache.prefetch == Prefetch::None {
            return;
        }
        let from = self.segs[s].end;
        if from >= limit || from >= self.m.layout.capacity() || self.heads.free > t {
            return;
        }
        // Read-ahead never seeks across the boundary its policy stops at.
        let tr = self.m.track_of(from);
        let h = self.heads;
        let refused = match self.stop_rule() {
            StopRule::Never => false,
            StopRule::TrackEnd => tr.cyl != h.cyl || tr.head != h.head,
            StopRule::CylinderEnd => tr.cyl != h.cyl,
        };
        if refused {
            return;
        }
        self.start_stream(s, from, from, limit, t, stoppable_from);
    }

    /// Start a stream reading `[from, ..)` into segment `s`, the heads leaving their
    /// current position at `t_seek`. `fg_end`: the blocks a command waits for.
    fn start_stream(&mut self, s: usize, from: u64, fg_end: u64, limit: u64, t_seek: u64, stoppable_from: u64) {
        let t = self.m.track_of(from);
        let h = self.heads;
        let t_land = t_seek + self.m.seek_ns((h.cyl, h.head), (t.cyl, t.head), false);
        let capture = self.p.cache.read_any_free_blocks && self.segs[s].start == self.segs[s].end && fg_end > from;
        let bound = if from < fg_end { fg_end } else { limit };
        let v = self.m.visit(t, from, bound.min(t.end), t_land, self.p.cache.immediate_read, capture);
        self.segs[s].state = SegState::Reading;
        self.stream = Some(Stream {
            seg: s,
            limit: limit.max(fg_end),
            fg_end,
            stop: self.stop_rule(),
            stoppable_from,
            visit: v,
            last: false,
        });
    }

    /// A write-back write: into the buffer now, to the media later. False when no buffer
    /// segment is free.
    fn try_fast_write(&mut self, t0: u64, q: &Queued) -> bool {
        self.sync_stream(t0);
        let Some((s, append)) = self.select_write(q.lbn, q.n, t0) else {
            return false;
        };
        let o = &self.p.overheads;
        let ovh = o.write(true, q.after_read);
        self.accept_fast_write(t0, q, s, append, t0 + ovh + o.data_prep, t0 + ovh);
        true
    }

    /// Take a fast write into segment `s`; its data starts flowing at `xfer_at`.
    fn accept_fast_write(&mut self, t0: u64, q: &Queued, s: usize, append: bool, xfer_at: u64, ready: u64) {
        // A write stops the read-ahead (DiskSim disk_activate_write).
        if let Some(st) = &self.stream {
            if t0 >= st.stoppable_from {
                self.stop_stream(t0);
            } else if st.seg == s {
                // Not stoppable yet and it's the segment we want: cannot happen at QD1.
                self.stop_stream(st.stoppable_from.max(t0));
            }
        }
        let wb = self.p.bus.write_block_ns;
        let start = xfer_at.max(self.bus_free);
        let end = start + q.n * wb;
        self.bus_free = end;
        let at = end + self.p.overheads.write_complete;
        self.complete(q.id, at, false);
        self.invalidate_clean(q.lbn, q.n, s);
        self.touch(s);
        let seg = &mut self.segs[s];
        if append {
            // The blocks already buffered count as arrived; the appended ones arrive
            // with the new transfer.
            seg.end = q.lbn + q.n;
            seg.append_end = seg.end;
            seg.xfer_start = start.saturating_sub((q.lbn - seg.dirty_from) * wb);
            seg.xfer_base = seg.dirty_from;
        } else {
            seg.start = q.lbn;
            seg.end = q.lbn + q.n;
            seg.dirty_from = q.lbn;
            seg.append_end = seg.end;
            seg.xfer_start = start;
            seg.xfer_base = q.lbn;
            seg.dirty_since = t0;
            seg.destage_ready = ready;
            seg.state = SegState::Dirty;
            self.dirty_possible.set(true);
        }
        seg.last_read = false;
    }

    // ---- the mechanism -----------------------------------------------------------------

    /// When the next decision about the mechanism is due (None when nothing waits).
    fn next_decision(&self) -> Option<u64> {
        let mut ready = u64::MAX;
        for q in &self.queue {
            ready = ready.min(q.arrival);
        }
        if self.dirty_possible.get() {
            let mut any = false;
            for s in &self.segs {
                if s.state == SegState::Dirty {
                    any = true;
                    if s.destaging_until.is_none() {
                        ready = ready.min(s.dirty_since);
                    }
                }
            }
            self.dirty_possible.set(any);
        }
        if ready == u64::MAX {
            return None;
        }
        let avail = match &self.stream {
            Some(st) => st.stoppable_from,
            None => self.heads.free,
        };
        Some(ready.max(avail))
    }

    /// The earliest destage in progress, if any: (end, segment).
    fn next_destage_end(&self) -> Option<(u64, usize)> {
        if !self.dirty_possible.get() {
            return None; // only dirty segments are destaged
        }
        let mut best: Option<(u64, usize)> = None;
        for (i, s) in self.segs.iter().enumerate() {
            if let Some(u) = s.destaging_until.filter(|&u| best.is_none_or(|(b, _)| u < b)) {
                best = Some((u, i));
            }
        }
        best
    }

    /// Process everything due up to `to`, in time order.
    fn advance(&mut self, to: u64) {
        loop {
            let fd = self.next_destage_end().filter(|&(u, _)| u <= to);
            let dd = self.next_decision().filter(|&d| d <= to);
            match (fd, dd) {
                (Some((u, i)), d) if d.is_none_or(|d| u <= d) => self.finish_destage(u, i),
                (_, Some(d)) => self.decide(d),
                _ => break,
            }
        }
        self.sync_stream(to);
    }

    fn finish_destage(&mut self, u: u64, i: usize) {
        let keep = self.p.cache.enabled && self.p.cache.read_hits_on_write_data;
        let s = &mut self.segs[i];
        s.destaging_until = None;
        if s.dirty_from >= s.end {
            s.state = if keep { SegState::Clean } else { SegState::Empty };
        }
        self.after_destage(u);
    }

    /// Buffer space or clean media after a destage at `t`: stalled writes and flushes.
    fn after_destage(&mut self, t: u64) {
        // Retry them in order; those that still find no space go back, in order. The two
        // lists swap storage, so nothing is allocated per retry.
        let mut stalled = std::mem::take(&mut self.scratch_stalled);
        std::mem::swap(&mut stalled, &mut self.stalled);
        for q in stalled.drain(..) {
            let Some((s, append)) = self.select_write(q.lbn, q.n, t) else {
                self.stalled.push(q);
                continue;
            };
            // It disconnected on arrival; reconnect now.
            let o = &self.p.overheads;
            let ovh = o.write(true, q.after_read);
            let xfer_at = (q.arrival + ovh + o.disconnect_write).max(t) + o.reselect_first + o.data_prep;
            self.accept_fast_write(t, &q, s, append, xfer_at, t.max(q.arrival + ovh));
        }
        self.scratch_stalled = stalled;
        if self.ndirty() == 0 && self.stalled.is_empty() && !self.flushes.is_empty() {
            let o = self.p.overheads.write_complete;
            for f in std::mem::take(&mut self.flushes) {
                self.complete(f.id, t.max(f.arrival) + o, false);
            }
        }
    }

    /// Where the heads would be, and when free, if the stream were stopped at `t`.
    fn heads_if_stopped(&self, t: u64) -> Heads {
        match &self.stream {
            Some(st) => {
                let v = &st.visit;
                Heads { cyl: v.track.cyl, head: v.track.head, free: v.boundary_at_or_after(&self.m.spin, t) }
            }
            None => Heads { free: self.heads.free.max(t), ..self.heads },
        }
    }

    /// The mechanism is available at `t` and something waits: choose and start it.
    fn decide(&mut self, t: u64) {
        self.sync_stream(t);
        let h = self.heads_if_stopped(t);
        let c = &self.p.cache;
        // Destage first when dirty data passes the high-water mark, a flush waits, or a
        // queued command collides with dirty data.
        // Scratch lists kept between calls (no allocation per decision).
        let mut dirty = std::mem::take(&mut self.scratch_dirty);
        let mut ready_cmds = std::mem::take(&mut self.scratch_ready);
        dirty.clear();
        ready_cmds.clear();
        if self.dirty_possible.get() {
            dirty.extend(
                (0..self.segs.len())
                    .filter(|&i| self.segs[i].state == SegState::Dirty && self.segs[i].destaging_until.is_none()),
            );
        }
        let cap = (c.write_segments.max(1) as u64) * self.seg_size();
        let dirty_blocks: u64 = dirty.iter().map(|&i| self.segs[i].end - self.segs[i].dirty_from).sum();
        let collision = self.queue.iter().any(|q| {
            q.arrival <= t
                && dirty.iter().any(|&i| {
                    let s = &self.segs[i];
                    q.lbn < s.end && q.lbn + q.n > s.dirty_from && !(q.op == Op::Read && c.read_hits_on_write_data)
                })
        });
        ready_cmds.extend((0..self.queue.len()).filter(|&i| self.queue[i].arrival <= t));
        let destage_first = !dirty.is_empty()
            && (ready_cmds.is_empty()
                || !self.flushes.is_empty()
                || !self.stalled.is_empty()
                || collision
                || dirty_blocks as f64 > c.destage_high_water * cap as f64);
        let choice = if destage_first {
            Err(self.extent_start(&dirty, self.pick_destage(&dirty, h)))
        } else if ready_cmds.is_empty() {
            Ok(None)
        } else {
            Ok(Some(self.pick_command(&ready_cmds, h)))
        };
        self.scratch_dirty = dirty;
        self.scratch_ready = ready_cmds;
        let qi = match choice {
            Err(s) => {
                let free = self.stop_stream(t);
                self.destage(s, t, free);
                return;
            }
            Ok(None) => return,
            Ok(Some(qi)) => qi,
        };
        let q = self.queue.swap_remove(qi);
        // Re-check the buffer: the data may have arrived meanwhile. One segment choice
        // serves both checks (neither changes anything when it does not apply).
        if q.op == Op::Read {
            let sel = self.select_read_buffered(q.lbn, q.n, t);
            if self.read_hit_with(t, &q, sel) || self.try_ride(t, &q, sel) {
                return;
            }
        }
        let free = self.stop_stream(t);
        match q.op {
            Op::Read => self.media_read(t, free, q),
            Op::Write => self.media_write(t, free, q),
            _ => unreachable!("only reads and writes queue for the mechanism"),
        }
    }

    /// Positioning estimate (seek + rotational latency) from the current heads to `lbn`.
    fn positioning(&self, h: Heads, lbn: u64, write: bool, t: u64) -> u64 {
        self.positioning_to(h, self.target_of(lbn), write, t)
    }

    /// (cylinder, head, angle) of an LBN's sector.
    fn target_of(&self, lbn: u64) -> (u32, u32, u64) {
        let tr = self.m.track_of(lbn);
        let s = self.m.layout.sector_of(&tr, lbn);
        (tr.cyl, tr.head, Spindle::boundary((s + tr.rot_offset) as u64 % tr.spt as u64, tr.spt))
    }

    fn positioning_to(&self, h: Heads, (cyl, head, ang): (u32, u32, u64), write: bool, t: u64) -> u64 {
        let land = t + self.m.seek_ns((h.cyl, h.head), (cyl, head), write);
        self.m.spin.reach(land, ang) - t
    }

    fn pick_command(&self, ready: &[usize], h: Heads) -> usize {
        if let [only] = ready {
            // Nothing to choose (always so without command queueing).
            return *only;
        }
        let t = h.free;
        match self.p.queue_policy {
            QueuePolicy::Fcfs => *ready.iter().min_by_key(|&&i| (self.queue[i].arrival, i)).unwrap(),
            QueuePolicy::Sptf { aging_ns } => {
                let oldest = *ready.iter().min_by_key(|&&i| (self.queue[i].arrival, i)).unwrap();
                if t.saturating_sub(self.queue[oldest].arrival) >= aging_ns {
                    return oldest;
                }
                // A read the buffer already holds, or that continues the read-ahead under
                // way, costs no positioning: drives serve those first. Costing it as a
                // media access would rank it behind commands further along the track, and
                // queued sequential reads would then lose a revolution each.
                let buffered = |q: &Queued| q.op == Op::Read && self.select_read_buffered(q.lbn, q.n, t).is_some();
                *ready
                    .iter()
                    .min_by_key(|&&i| {
                        let q = &self.queue[i];
                        if buffered(q) {
                            return (0, q.arrival, i);
                        }
                        let start = t.max(q.arrival + self.p.overheads.read(false, q.after_read));
                        (start - t + self.positioning_to(h, q.target, q.op == Op::Write, start), q.arrival, i)
                    })
                    .unwrap()
            }
        }
    }

    fn pick_destage(&self, dirty: &[usize], h: Heads) -> usize {
        let t = h.free;
        match self.p.queue_policy {
            QueuePolicy::Fcfs => *dirty.iter().min_by_key(|&&i| (self.segs[i].dirty_since, i)).unwrap(),
            QueuePolicy::Sptf { .. } => *dirty
                .iter()
                .min_by_key(|&&i| (self.positioning(h, self.segs[i].dirty_from, true, t), self.segs[i].dirty_since, i))
                .unwrap(),
        }
    }

    /// With `destage_extents`, the segment holding the lowest block of the contiguous dirty
    /// extent that `s` belongs to (else `s`). Each later pick walks down the same extent
    /// again, so an extent goes to the media in one ascending pass: writes the host sent
    /// in descending order (an elevator walking a file backwards) cost no revolution each.
    fn extent_start(&self, dirty: &[usize], mut s: usize) -> usize {
        if self.p.cache.destage_extents {
            while let Some(&below) = dirty.iter().find(|&&j| self.segs[j].end == self.segs[s].dirty_from) {
                s = below;
            }
        }
        s
    }

    /// Write the dirty part of segment `s` to the media, starting no earlier than `t`
    /// (the heads are free at `free`).
    fn destage(&mut self, s: usize, t: u64, free: u64) {
        let seg = &self.segs[s];
        let (a, b) = (seg.dirty_from, seg.end);
        let wb = self.p.bus.write_block_ns;
        let (xs, xb) = (seg.xfer_start, seg.xfer_base);
        let avail = move |l: u64| xs + (l - xb + 1) * wb;
        let start = t.max(free).max(seg.destage_ready);
        let end = self.write_blocks(a, b, start, true, avail);
        let seg = &mut self.segs[s];
        seg.dirty_from = b;
        seg.destaging_until = Some(end);
    }

    /// Write `[a, b)` to the media leaving at `t_seek`; returns when the last sector is
    /// written. Moves the heads.
    fn write_blocks(&mut self, a: u64, b: u64, t_seek: u64, min_seek: bool, avail: impl Fn(u64) -> u64) -> u64 {
        let immed = self.p.cache.immediate_write;
        let mut l = a;
        let mut h = self.heads;
        let mut t = t_seek;
        let mut first = true;
        while l < b {
            let tr = self.m.track_of(l);
            let mut seek = self.m.seek_ns((h.cyl, h.head), (tr.cyl, tr.head), true);
            if first && min_seek {
                seek = seek.max(self.p.min_seek_delay_ns);
            }
            first = false;
            let e = b.min(tr.end);
            let v = self.m.write_visit(tr, l, e, t + seek, immed, &avail);
            t = v.t_end;
            h = Heads { cyl: tr.cyl, head: tr.head, free: t };
            l = e;
        }
        self.heads = h;
        t
    }

    /// A read continuing where the running stream is reading (a partial or "almost" hit
    /// on the segment being filled) joins the stream instead of stopping it (DiskSim
    /// `disk_buffer_attempt_access_swap`).
    fn try_ride(&mut self, t: u64, q: &Queued, choice: Option<(usize, Hit)>) -> bool {
        let Some(st) = self.stream.as_ref() else {
            return false;
        };
        let s = st.seg;
        let Some((sel, Hit::Partial(k))) = choice else {
            return false;
        };
        let seg_end = self.seg_end_at(s, t);
        let joins = q.lbn + k == seg_end
            || (k == 0 && q.lbn > seg_end && q.lbn - seg_end <= self.p.cache.skip_ahead_hits && q.lbn < st.limit);
        if sel != s || !joins || st.visit.b < q.lbn + k && st.last {
            return false;
        }
        let p = self.p.clone();
        let (o, c, bus) = (&p.overheads, &p.cache, &p.bus);
        // A queued command's data phase starts when the drive takes it.
        let t0 = q.arrival.max(t);
        let end_req = q.lbn + q.n;
        let limit = self.read_ahead_limit(s, q.lbn, q.n);
        self.touch(s);
        let mut x = Xfer::connected_at(bus.read_block_ns, t0 + o.read(true, q.after_read) + o.data_prep);
        if !bus.hold_read && !bus.never_disconnect {
            x = x.release_when_starved(o.disconnect_read(true), o.reselect_first + o.data_prep);
        }
        x.not_before(self.bus_free);
        let from = q.lbn + k;
        if k > 0 {
            x.feed(t0, k, 0);
        }
        {
            let st = self.stream.as_mut().unwrap();
            st.fg_end = st.fg_end.max(end_req);
            st.limit = st.limit.max(limit).max(end_req);
            st.last = false;
        }
        self.feed_stream_until(&mut x, from, end_req);
        let done_at = x.end() + o.read_complete;
        self.bus_free = x.end();
        self.complete(q.id, done_at, true);
        if let Some(st) = self.stream.as_mut() {
            st.stoppable_from = st.stoppable_from.max(done_at);
            if c.prefetch == Prefetch::None {
                st.limit = end_req;
            }
        }
        true
    }

    /// Feed the stream's blocks `[from, end)` to the link, walking its visits.
    fn feed_stream_until(&mut self, x: &mut Xfer, from: u64, end: u64) {
        loop {
            let Some(st) = self.stream.as_ref() else {
                return;
            };
            let v = &st.visit;
            let spt = v.track.spt;
            let per = self.m.spin.sectors_ns(1, spt);
            for r in v.runs() {
                feed_run(x, r, from, end, per, &self.m.spin, spt);
            }
            if v.b >= end {
                return;
            }
            self.commit_visit();
            if !self.next_visit() {
                return;
            }
        }
    }

    /// A read that needs the media, taken by the mechanism at `t` (heads free at `free`).
    fn media_read(&mut self, t: u64, free: u64, q: Queued) {
        let p = self.p.clone();
        let (o, c, bus) = (&p.overheads, &p.cache, &p.bus);
        let t0 = q.arrival;
        let end_req = q.lbn + q.n;
        let sel = self.select_read(q.lbn, q.n, t).or_else(|| {
            // No reusable segment: take the least recently used non-dirty one.
            (0..self.segs.len())
                .filter(|&i| !self.segs[i].write_only && self.segs[i].state != SegState::Dirty)
                .min_by_key(|&i| self.segs[i].stamp)
                .map(|i| (i, Hit::Miss))
        });
        let Some((s, hit)) = sel else {
            // Every segment is dirty: destage one first, the read waits.
            self.queue.push(q);
            let dirty = (0..self.segs.len())
                .find(|&i| self.segs[i].state == SegState::Dirty && self.segs[i].destaging_until.is_none());
            if let Some(d) = dirty {
                self.destage(d, t, free);
            } else {
                // All dirty segments are being destaged: the heads are busy anyway.
                self.heads.free = self.heads.free.max(free).max(self.next_destage_end().map_or(free, |(u, _)| u));
            }
            return;
        };
        self.touch(s);
        let cached = match hit {
            Hit::Partial(k) => k,
            _ => 0,
        };
        if cached == 0 && !matches!(hit, Hit::Partial(_)) {
            let seg = &mut self.segs[s];
            seg.start = q.lbn;
            seg.end = q.lbn;
        }
        self.segs[s].last_read = true;
        // The host link: a (partial) hit starts sending at once; a miss disconnects and
        // comes back when the water mark is reached.
        let water = if c.water_by_request {
            ((q.n.min(self.seg_size()) as f64 * c.read_water) as u64).max(1)
        } else {
            ((self.seg_size() as f64 * c.read_water) + 0.9999999999) as u64
        }
        .min(q.n)
        .max(1);
        let hit_now = matches!(hit, Hit::Partial(_)) && (c.immed_transfer_partial_hit || cached >= water);
        let mut x = if bus.never_disconnect {
            let ovh = if hit_now { o.read(true, q.after_read) } else { o.read(false, q.after_read) };
            Xfer::new(bus.read_block_ns, if hit_now { 1 } else { water }, t0 + ovh + o.data_prep, 0)
        } else if hit_now {
            // A queued command's data phase starts when the drive takes it.
            Xfer::connected_at(bus.read_block_ns, t0.max(t) + o.read(true, q.after_read) + o.data_prep)
        } else {
            Xfer::new(
                bus.read_block_ns,
                water,
                t0 + o.read(false, q.after_read) + o.disconnect_read(q.after_read),
                o.reselect_first + o.data_prep,
            )
        };
        if !bus.hold_read && !bus.never_disconnect {
            x = x.release_when_starved(o.disconnect_read(true), o.reselect_first + o.data_prep);
        }
        x.not_before(self.bus_free);
        if cached > 0 {
            x.feed(t0, cached, 0);
        }
        let ovh_done = t0 + o.read(false, q.after_read);
        let limit = self.read_ahead_limit(s, q.lbn, q.n);
        let from = q.lbn + cached;
        self.start_stream(s, from, end_req, limit, ovh_done.max(free), u64::MAX);
        self.feed_stream_until(&mut x, from, end_req);
        let done_at = x.end() + o.read_complete;
        self.bus_free = x.end();
        self.complete(q.id, done_at, true);
        if let Some(st) = self.stream.as_mut() {
            st.stoppable_from = done_at;
            if c.prefetch == Prefetch::None || !c.enabled {
                st.limit = end_req;
            }
        }
        // If the last visit already reached the limit the stream ends with it.
        if let Some(st) = self.stream.as_mut().filter(|st| st.visit.b >= st.limit) {
            st.last = true;
        }
    }

    /// A write that needs the media before it completes (write-through), taken at `t`.
    fn media_write(&mut self, t: u64, free: u64, q: Queued) {
        let p = self.p.clone();
        let (o, bus) = (&p.overheads, &p.bus);
        let t0 = q.arrival;
        let seg = self.select_write(q.lbn, q.n, t).map(|(s, _)| s);
        // DiskSim's extra write disconnect: the write goes through the most recently used
        // segment, whose last access was a write it does not continue.
        let extra_cond = seg.is_some_and(|s| {
            let sg = &self.segs[s];
            self.stamp > 0 && sg.stamp == self.stamp && !sg.last_read && sg.end != q.lbn
        });
        if let Some(s) = seg {
            self.touch(s);
            self.invalidate_clean(q.lbn, q.n, s);
            let sg = &mut self.segs[s];
            sg.start = q.lbn;
            sg.end = q.lbn + q.n;
            sg.last_read = false;
            // Written data stays readable when the cache keeps write data.
            sg.state =
                if p.cache.enabled && p.cache.read_hits_on_write_data { SegState::Clean } else { SegState::Empty };
        } else {
            self.invalidate_clean(q.lbn, q.n, usize::MAX);
        }
        let ovh = o.write(false, q.after_read);
        // DiskSim's extra write disconnect: a write that does not continue the previous
        // write (served through the same, most recently used segment).
        let extra = o.extra_write_disconnect.as_ref().filter(|_| !bus.never_disconnect && extra_cond);
        let (xfer_at, seek_ready, reselect_done, disc2) = match extra {
            Some(e) => (
                t0 + e.command + e.disconnect1 + e.inter_disconnect + o.reselect_first + o.data_prep,
                t0 + e.command + e.seek_delta,
                o.reselect_other,
                e.disconnect2,
            ),
            None => (t0 + ovh + o.data_prep, t0 + ovh, o.reselect_first, o.disconnect_write),
        };
        let wb = bus.write_block_ns;
        let xs = xfer_at.max(self.bus_free);
        let xfer_end = xs + q.n * wb;
        let base = q.lbn;
        // With extra write disconnects DiskSim also holds the media back until the first
        // min(n, 10) blocks (15 for writes of 45 blocks or more) are in the buffer
        // (`disk_buffer_block_available`).
        let first_batch = if o.extra_write_disconnect.is_some() { if q.n < 45 { q.n.min(10) } else { 15 } } else { 1 };
        let batch_ready = xs + first_batch * wb;
        let avail = move |l: u64| (xs + (l - base + 1) * wb).max(batch_ready);
        let media_end = self.write_blocks(q.lbn, q.lbn + q.n, seek_ready.max(free), true, avail);
        let at = if bus.never_disconnect {
            media_end.max(xfer_end) + o.write_complete
        } else {
            media_end.max(xfer_end + disc2) + reselect_done + o.write_complete
        };
        self.bus_free = self.bus_free.max(xfer_end);
        self.complete(q.id, at, false);
    }
}

/// Feed the blocks of `r` that fall in `[lo, hi)` to the link.
fn feed_run(x: &mut Xfer, r: &Run, lo: u64, hi: u64, per: u64, spin: &Spindle, spt: u32) {
    let s = r.lbn.max(lo);
    let e = (r.lbn + r.n).min(hi);
    if s >= e {
        return;
    }
    if r.spaced {
        let t0 = r.t0 + spin.sectors_ns(s - r.lbn, spt);
        x.feed(t0, e - s, per);
    } else {
        x.feed(r.t0, e - s, 0);
    }
}

/// How much of a read the buffer holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Hit {
    Miss,
    /// The first `k` blocks.
    Partial(u64),
    Whole,
}

/// Spread a seed over the revolution (SplitMix64), deterministically.
pub fn phase_from_seed(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    z % spindle::REV
}

impl Device for Hdd {
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth.max(1)
    }

    fn capacity_sectors(&self) -> u64 {
        self.p.capacity_sectors()
    }

    fn submit(&mut self, now: Instant, cmd: DiskCommand) {
        let t = now.as_nanos();
        self.advance(t);
        self.arrive(t, cmd);
        self.advance(t);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let c = self.done.peek().map(|Reverse((t, _, _))| *t);
        let mut d = self.next_decision();
        if let Some((u, _)) = self.next_destage_end().filter(|_| !self.stalled.is_empty() || !self.flushes.is_empty()) {
            d = Some(d.map_or(u, |d| d.min(u)));
        }
        match (c, d) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(Instant::from_nanos)
    }

    fn poll_completion(&mut self, now: Instant) -> Option<DiskCompletion> {
        let t = now.as_nanos();
        self.advance(t);
        match self.done.peek() {
            Some(Reverse((at, _, _))) if *at <= t => {
                let Reverse((at, _, id)) = self.done.pop().unwrap();
                self.outstanding -= 1;
                Some(DiskCompletion { id, at: Instant::from_nanos(at) })
            }
            _ => None,
        }
    }
}

pub static SELCALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
