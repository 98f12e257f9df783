//! Media access: seeks, rotational latency and sector-by-sector transfer on one track,
//! computed in closed form per track "visit" (DiskSim simulates the same thing one sector
//! event at a time in `disk_buffer_seekdone` / `disk_buffer_sector_done`).
//!
//! A visit starts when the heads land on a track (end of a seek or head switch) and reads
//! or writes the wanted LBN range `[a, b)` of that track. It yields, in LBN order, *runs*
//! of blocks with the instants at which each block is in the buffer (reads) or on the
//! media (writes). Three refinements from DiskSim are modelled:
//!
//! * zero-latency access ("Immediate buffer read/write"): when the heads land inside the
//!   wanted range, the drive starts with the sector under the head, wraps around the
//!   track and finishes with the sectors it missed; the blocks read first are only usable
//!   (in order) once the wrap completes;
//! * "Read any free blocks": sectors passing under the head before the wanted one are
//!   kept, making the segment start earlier (only while the segment is still empty);
//! * writes need their data in the buffer when the sector comes under the head, or they
//!   wait a revolution.

use super::layout::{Layout, Track};
use super::seek::SeekCurve;
use super::spindle::{REV, Spindle};

/// Blocks `lbn .. lbn+n` of a visit: block `lbn+i` is done at `t0 + spacing(i)`, where
/// spacing is `i` sector times (`spaced`) or zero (a burst: all usable at `t0`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub lbn: u64,
    pub n: u64,
    /// Instant the first block is done.
    pub t0: u64,
    pub spaced: bool,
}

/// At most two runs, without allocating: a third and later run are merged with the
/// second into one burst at the end of the last (only happens around slipped sectors,
/// where it delays a few blocks' availability, never a completion).
#[derive(Copy, Clone, Debug)]
struct RunBuf {
    runs: [Run; 2],
    n: usize,
    spt: u32,
}

impl RunBuf {
    const EMPTY: Run = Run { lbn: 0, n: 0, t0: 0, spaced: false };

    fn new(spt: u32) -> RunBuf {
        RunBuf { runs: [RunBuf::EMPTY; 2], n: 0, spt }
    }

    fn push(&mut self, r: Run, spin: &Spindle) {
        match self.n {
            0 | 1 => {
                self.runs[self.n] = r;
                self.n += 1;
            }
            _ => {
                let end = if r.spaced { r.t0 + spin.sectors_ns(r.n - 1, self.spt) } else { r.t0 };
                let first = self.runs[1].lbn;
                self.runs[1] = Run { lbn: first, n: r.lbn + r.n - first, t0: end, spaced: false };
            }
        }
    }
}

/// One visit of the heads to a track.
#[derive(Clone, Debug)]
pub struct Visit {
    pub track: Track,
    /// Heads on track (end of the seek / head switch).
    pub t_land: u64,
    /// First sector-boundary event after landing: from here on the drive's state changes
    /// at every sector boundary until `t_end`.
    pub t_sweep: u64,
    /// End of the last sector this visit transfers.
    pub t_end: u64,
    /// Wanted blocks, in LBN order.
    pub runs: [Run; 2],
    pub nruns: usize,
    /// "Read any free blocks": the segment now starts here (blocks before `a`).
    pub captured_from: Option<u64>,
    /// Wanted range.
    pub a: u64,
    pub b: u64,
}

impl Visit {
    pub fn runs(&self) -> &[Run] {
        &self.runs[..self.nruns]
    }
    /// How many wanted blocks, counted from `a`, are contiguously done by instant `x`.
    pub fn done_by(&self, spin: &Spindle, x: u64) -> u64 {
        let mut n = 0;
        for r in self.runs() {
            if x < r.t0 {
                return n;
            }
            let k = if r.spaced {
                // blocks i with t0 + sectors(i) <= x
                let per = spin.sectors_ns(1, self.track.spt).max(1);
                (((x - r.t0) / per) + 1).min(r.n)
            } else {
                r.n
            };
            n += k;
            if k < r.n {
                return n;
            }
        }
        n
    }
    /// The first sector-boundary event at or after `x` (DiskSim's pending event when a
    /// new command stops this access at `x`).
    pub fn boundary_at_or_after(&self, spin: &Spindle, x: u64) -> u64 {
        if x <= self.t_land {
            return self.t_land;
        }
        if x <= self.t_sweep {
            return self.t_sweep;
        }
        if x >= self.t_end {
            return self.t_end;
        }
        let spt = self.track.spt;
        // boundaries at t_sweep + sectors_ns(k)
        let per = REV / spt as u64;
        let k = super::spindle::mul_div_ceil(x - self.t_sweep, spin.rpm(), per);
        let mut t = self.t_sweep + spin.sectors_ns(k, spt);
        if t < x {
            t = self.t_sweep + spin.sectors_ns(k + 1, spt);
        }
        t.min(self.t_end)
    }
}

/// The mechanical part of a drive.
#[derive(Clone, Debug)]
pub struct Mechanics {
    pub layout: Layout,
    pub seek: SeekCurve,
    pub spin: Spindle,
    pub head_switch_ns: u64,
    pub write_settle_ns: i64,
    pub write_settle_on_head_switch: bool,
    /// `seek.time_ns(d)` for every distance on the disk, precomputed: the curve's square
    /// root and rounding were a tenth of the simulator's time per request.
    pub seek_by_distance: Vec<u32>,
    /// The last tracks [`Mechanics::track_of`] found: a request asks for its track several
    /// times (arrival, positioning, the media access, read-ahead), and finding a track
    /// through the sparing rules costs a binary search over `ltop`. Tracks never change.
    pub recent_tracks: [std::cell::Cell<Option<Track>>; 4],
    pub recent_next: std::cell::Cell<usize>,
}

/// The seek time of every distance `0..cylinders` (`u32::MAX` marks a value too large to
/// store; [`Mechanics::seek_ns`] then computes it).
pub fn seek_table(seek: &SeekCurve, cylinders: u32) -> Vec<u32> {
    (0..cylinders).map(|d| u32::try_from(seek.time_ns(d)).unwrap_or(u32::MAX)).collect()
}

impl Mechanics {
    /// [`Layout::track_of`], through the cache of recent tracks.
    pub fn track_of(&self, lbn: u64) -> Track {
        if self.layout.is_plain() {
            // Computed in one step; cheaper than searching the cache.
            return self.layout.track_of(lbn);
        }
        for c in &self.recent_tracks {
            if let Some(t) = c.get()
                && t.first <= lbn
                && lbn < t.end
            {
                return t;
            }
        }
        let t = self.layout.track_of(lbn);
        let i = self.recent_next.get();
        self.recent_tracks[i].set(Some(t));
        self.recent_next.set((i + 1) % self.recent_tracks.len());
        t
    }

    /// DiskSim `dm_seek_time_g1`: the longer of the arm seek and the head switch, plus the
    /// write settling delay for writes when the heads move at all.
    #[inline]
    pub fn seek_ns(&self, from: (u32, u32), to: (u32, u32), write: bool) -> u64 {
        let d = from.0.abs_diff(to.0);
        let s = match self.seek_by_distance.get(d as usize) {
            Some(&v) if v != u32::MAX => v as u64,
            _ => self.seek.time_ns(d),
        };
        let hs = if from.1 != to.1 { self.head_switch_ns } else { 0 };
        let t = s.max(hs);
        if t != 0 && write && (d != 0 || self.write_settle_on_head_switch) {
            (t as i64 + self.write_settle_ns).max(0) as u64
        } else {
            t
        }
    }

    /// Angle of the start of physical sector `s` of track `t`.
    #[inline]
    fn angle(&self, t: &Track, s: u32) -> u64 {
        Spindle::boundary((s + t.rot_offset) as u64 % t.spt as u64, t.spt)
    }

    /// Physical sector at rotational boundary index `k`.
    #[inline]
    fn phys_at(&self, t: &Track, k: u32) -> u32 {
        (k + t.spt - t.rot_offset % t.spt) % t.spt
    }

    /// First LBN of track `t` at or after physical sector `s` (None past the last).
    fn lbn_at_or_after(&self, t: &Track, s: u32) -> Option<u64> {
        let mut s = s;
        while s < t.spt {
            if let Some(l) = self.layout.lbn_at(t, s) {
                return Some(l);
            }
            s += 1;
        }
        None
    }

    /// Append spaced runs for blocks `[from, to)` of track `t` whose first sector starts at
    /// `t_start`, splitting at slipped sectors. Returns the end of the last sector.
    fn spaced_runs(&self, t: &Track, from: u64, to: u64, t_start: u64, out: &mut RunBuf) -> u64 {
        let spin = &self.spin;
        let p0 = self.layout.sector_of(t, from);
        let plast = self.layout.sector_of(t, to - 1);
        if (plast - p0) as u64 == to - 1 - from {
            out.push(Run { lbn: from, n: to - from, t0: t_start + spin.sectors_ns(1, t.spt), spaced: true }, spin);
        } else {
            // Holes inside: one run per maximal hole-free stretch.
            let mut l = from;
            while l < to {
                let ps = self.layout.sector_of(t, l);
                let mut e = l + 1;
                while e < to && self.layout.sector_of(t, e) == ps + (e - l) as u32 {
                    e += 1;
                }
                let ts = t_start + spin.sectors_ns((ps - p0) as u64, t.spt);
                out.push(Run { lbn: l, n: e - l, t0: ts + spin.sectors_ns(1, t.spt), spaced: true }, spin);
                l = e;
            }
        }
        t_start + spin.sectors_ns((plast - p0) as u64 + 1, t.spt)
    }

    /// A read (or unconstrained write) visit of `[a, b)` on track `t`, heads landing at
    /// `t_land`. `immed`: zero-latency access. `capture`: "read any free blocks" with an
    /// empty segment.
    pub fn visit(&self, t: Track, a: u64, b: u64, t_land: u64, immed: bool, capture: bool) -> Visit {
        debug_assert!(a >= t.first && b <= t.end && a < b, "visit {a}..{b} on {t:?}");
        let spin = &self.spin;
        let pa = self.layout.sector_of(&t, a);
        let pl = self.layout.sector_of(&t, b - 1);
        let start = self.angle(&t, pa);
        let endang = self.angle(&t, pl);
        let theta = spin.angle(t_land);
        // DiskSim dm_latency_g1: the head is "inside" the access when its angle is past the
        // start of the first sector and not past the start of the last.
        let inside = immed && pa != pl && {
            let d = (theta + REV - start) % REV;
            d > spin.rpm() && d <= (endang + REV - start) % REV
        };
        let need_q = capture || inside;
        let (q, t_q) = if need_q { spin.next_boundary(t_land, t.spt) } else { (0, 0) };
        let p_q = self.phys_at(&t, q);
        let mut runs = RunBuf::new(t.spt);
        let (t_sweep, t_end);
        if !inside {
            let t_a = spin.reach(t_land, start);
            t_end = self.spaced_runs(&t, a, b, t_a, &mut runs);
            t_sweep = if capture { t_q.min(t_a) } else { t_a };
        } else {
            // Held part first: from the sector under the head to the end of the range.
            let l = self.lbn_at_or_after(&t, p_q).unwrap_or(b).clamp(a + 1, b);
            let t_held_end = t_q + spin.sectors_ns((pl + t.spt - p_q) as u64 % t.spt as u64 + 1, t.spt);
            let t_a = spin.reach(t_held_end, start);
            let end_a = self.spaced_runs(&t, a, l, t_a, &mut runs);
            runs.push(Run { lbn: l, n: b - l, t0: end_a, spaced: false }, spin);
            t_end = end_a;
            t_sweep = t_q;
        }
        let captured_from = if capture && a > t.first {
            let c = if p_q <= pa && !inside { self.lbn_at_or_after(&t, p_q) } else { Some(t.first) };
            c.filter(|&c| c < a)
        } else {
            None
        };
        Visit { track: t, t_land, t_sweep, t_end, runs: runs.runs, nruns: runs.n, captured_from, a, b }
    }

    /// A write visit where block `l` reaches the buffer only at `avail(l)`: each block is
    /// written at the first pass of its sector after its data is there and after the
    /// previous block (in-order writing, as DiskSim does when data runs late).
    pub fn write_visit(&self, t: Track, a: u64, b: u64, t_land: u64, immed: bool, avail: impl Fn(u64) -> u64) -> Visit {
        // Zero-latency writing only when all the data is already in the buffer.
        let immed = immed && avail(b - 1) <= t_land;
        let v = self.visit(t, a, b, t_land, immed, false);
        if immed {
            return v;
        }
        let spin = &self.spin;
        let st = spin.sectors_ns(1, t.spt);
        // Data arrival and sector starts both grow linearly along a run, so checking the
        // ends of each run is enough.
        let ok = v.runs().iter().all(|r| {
            r.spaced
                && avail(r.lbn) + st <= r.t0
                && avail(r.lbn + r.n - 1) + st <= r.t0 + spin.sectors_ns(r.n - 1, t.spt)
        });
        if ok {
            return v;
        }
        // In-order, block by block. The first stretch of back-to-back sectors is kept as
        // a run; the rest becomes one burst at the end (only completion times of later
        // blocks matter for writes).
        let mut tcur = t_land;
        let mut first_start = None;
        let mut head = RunBuf::EMPTY;
        let mut tail_from = None;
        for l in a..b {
            let s = self.layout.sector_of(&t, l);
            let ts = spin.reach(tcur.max(avail(l)), self.angle(&t, s));
            first_start.get_or_insert(ts);
            let te = ts + st;
            if l == a {
                head = Run { lbn: l, n: 1, t0: te, spaced: true };
            } else if tail_from.is_none() && head.t0 + spin.sectors_ns(l - head.lbn, t.spt) == te {
                head.n += 1;
            } else if tail_from.is_none() {
                tail_from = Some(l);
            }
            tcur = te;
        }
        let mut arr = [head, RunBuf::EMPTY];
        let nruns = match tail_from {
            None => 1,
            Some(l) => {
                arr[1] = Run { lbn: l, n: b - l, t0: tcur, spaced: false };
                2
            }
        };
        Visit {
            track: t,
            t_land,
            t_sweep: first_start.unwrap_or(t_land),
            t_end: tcur,
            runs: arr,
            nruns,
            captured_from: None,
            a,
            b,
        }
    }
}
