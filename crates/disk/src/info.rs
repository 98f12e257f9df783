//! Derived figures of a profile, measured by driving the model (what `iosched disk info`
//! prints).

use serde::Serialize;

use crate::device::{Device, DiskCommand};
use crate::hdd::seek::weighted_average_ns;
use crate::profile::{Profile, ProfileKind};
use iosched_core::{Instant, Op};

/// The seed every measurement uses (spindle phase, request positions).
pub const INFO_SEED: u64 = 42;

/// Figures of a profile. Rates in MB/s are 10⁶ bytes per second; MiB/s 2²⁰.
#[derive(Clone, Debug, Serialize)]
pub struct DiskInfo {
    pub name: String,
    pub description: String,
    /// "hdd", "ssd" or "null".
    pub kind: String,
    pub capacity_sectors: u64,
    pub capacity_gb: f64,
    pub queue_depth: u32,
    /// `ide`, `scsi` or `nvme`: decides the queue's `dequeue` rule.
    pub interface: String,
    /// Rotating drives only.
    pub rpm: Option<u32>,
    pub cylinders: Option<u32>,
    pub surfaces: Option<u32>,
    pub zones: Option<usize>,
    /// Raw media rate of the outermost / innermost zone (sectors per track × revolutions).
    pub media_rate_outer_mb_s: Option<f64>,
    pub media_rate_inner_mb_s: Option<f64>,
    /// Sustained sequential read, 128 KiB reads at queue depth 1 near the start and the
    /// end of the disk (after a warm-up).
    pub seq_read_outer_mb_s: f64,
    pub seq_read_outer_mib_s: f64,
    pub seq_read_inner_mb_s: f64,
    pub seq_read_inner_mib_s: f64,
    /// Sustained sequential write, 128 KiB writes at queue depth 1 near the start.
    pub seq_write_outer_mb_s: f64,
    /// Datasheet-weighted average seek (all start/end cylinder pairs), read.
    pub avg_seek_ms: Option<f64>,
    pub track_to_track_seek_ms: Option<f64>,
    pub full_stroke_seek_ms: Option<f64>,
    /// Average rotational latency: half a revolution.
    pub avg_rotational_latency_ms: Option<f64>,
    /// Random 4 KiB reads, uniform over the LBA range.
    pub random_4k_read_iops_qd1: f64,
    pub random_4k_read_mean_ms_qd1: f64,
    /// At queue depth 32, or the device's depth when smaller (1 for the IDE disks).
    pub random_4k_read_iops_qd32: f64,
    /// Random 4 KiB writes at queue depth 1.
    pub random_4k_write_iops_qd1: f64,
}

/// The disk measurements' generator: the core's SplitMix64, seeded by raw state.
pub type SplitMix = iosched_core::Rng;

/// Run `n` commands with `qd` outstanding (a closed loop: each completion immediately
/// submits the next command). Returns (instant of the first submission, instant of each
/// completion in order, latency of each command) in ns.
pub fn closed_loop(
    dev: &mut impl Device,
    qd: u32,
    n: usize,
    mut next: impl FnMut(usize) -> DiskCommand,
) -> (Vec<u64>, Vec<u64>) {
    let qd = qd.min(dev.queue_depth()).max(1) as usize;
    let mut sent = 0usize;
    let mut start = vec![0u64; n];
    let mut ends = Vec::with_capacity(n);
    let mut lats = Vec::with_capacity(n);
    let mut now = 0u64;
    while sent < n.min(qd) {
        let mut c = next(sent);
        c.id = sent as u64;
        start[sent] = now;
        dev.submit(Instant::from_nanos(now), c);
        sent += 1;
    }
    while ends.len() < n {
        let t = dev.poll_timeout().expect("outstanding commands complete").as_nanos();
        now = now.max(t);
        while let Some(c) = dev.poll_completion(Instant::from_nanos(now)) {
            let at = c.at.as_nanos();
            ends.push(at);
            lats.push(at - start[c.id as usize]);
            if sent < n {
                let mut cmd = next(sent);
                cmd.id = sent as u64;
                start[sent] = now;
                dev.submit(Instant::from_nanos(now), cmd);
                sent += 1;
            }
        }
    }
    (ends, lats)
}

/// Sustained sequential rate (bytes/s) of `req_sectors`-sector commands from `lbn`, `n`
/// of them, skipping the first `warm`.
pub fn sequential_rate(p: &Profile, op: Op, lbn: u64, req_sectors: u32, n: usize, warm: usize) -> f64 {
    let mut dev = p.build(INFO_SEED);
    let (ends, _) = closed_loop(&mut dev, 1, n, |i| DiskCommand {
        id: 0,
        op,
        sector: lbn + i as u64 * req_sectors as u64,
        len_sectors: req_sectors,
    });
    let t0 = ends[warm - 1];
    let t1 = ends[n - 1];
    ((n - warm) as f64 * req_sectors as f64 * 512.0) / ((t1 - t0) as f64 / 1e9)
}

/// Random 4 KiB commands uniform over the device at depth `qd`: (IOPS, mean latency ms).
pub fn random_4k(p: &Profile, op: Op, qd: u32, n: usize) -> (f64, f64) {
    let mut dev = p.build(INFO_SEED);
    let cap8 = p.capacity_sectors() / 8;
    let mut rng = SplitMix::from_state(INFO_SEED);
    let (ends, lats) =
        closed_loop(&mut dev, qd, n, |_| DiskCommand { id: 0, op, sector: rng.below(cap8) * 8, len_sectors: 8 });
    let warm = (n / 20).max(qd as usize);
    let t0 = ends[warm - 1];
    let span = (ends[n - 1] - t0) as f64 / 1e9;
    // Commands finishing at the same instant as the first counted one belong before the
    // span (a device completing a batch at once would otherwise count more than it did).
    let done = ends[warm..].iter().filter(|&&e| e > t0).count();
    let iops = done as f64 / span;
    let mean = lats[warm..].iter().sum::<u64>() as f64 / (n - warm) as f64 / 1e6;
    (iops, mean)
}

/// Compute the figures of a profile.
pub fn info(p: &Profile) -> DiskInfo {
    let cap = p.capacity_sectors();
    let req = 256u32; // 128 KiB
    // 48 MiB after a 4 MiB warm-up, or as much of a smaller device as there is (profiles
    // are at least 1 MiB, `MIN_CAPACITY_SECTORS`: 8 commands).
    let n_seq = (cap / req as u64).min(384) as usize;
    let warm = (n_seq / 12).clamp(1, 32);
    let seq_outer = sequential_rate(p, Op::Read, 0, req, n_seq, warm);
    let inner_start = cap.saturating_sub((n_seq as u64 + 8) * req as u64) / 8 * 8;
    let seq_inner = sequential_rate(p, Op::Read, inner_start, req, n_seq, warm);
    let seq_write = sequential_rate(p, Op::Write, 0, req, n_seq, warm);
    let (n1, n32) = match p.kind {
        ProfileKind::Hdd(_) => (3000, 6000),
        _ => (20_000, 100_000),
    };
    let (iops1, mean1) = random_4k(p, Op::Read, 1, n1);
    let (iops32, _) = random_4k(p, Op::Read, 32, n32);
    let (wiops1, _) = random_4k(p, Op::Write, 1, n1);
    let mut i = DiskInfo {
        name: p.name.clone(),
        description: p.description.clone(),
        kind: match p.kind {
            ProfileKind::Hdd(_) => "hdd",
            ProfileKind::Ssd(_) => "ssd",
            ProfileKind::Null(_) => "null",
        }
        .into(),
        capacity_sectors: cap,
        capacity_gb: cap as f64 * 512.0 / 1e9,
        queue_depth: p.queue_depth(),
        interface: p.interface.name().into(),
        rpm: None,
        cylinders: None,
        surfaces: None,
        zones: None,
        media_rate_outer_mb_s: None,
        media_rate_inner_mb_s: None,
        seq_read_outer_mb_s: seq_outer / 1e6,
        seq_read_outer_mib_s: seq_outer / 1048576.0,
        seq_read_inner_mb_s: seq_inner / 1e6,
        seq_read_inner_mib_s: seq_inner / 1048576.0,
        seq_write_outer_mb_s: seq_write / 1e6,
        avg_seek_ms: None,
        track_to_track_seek_ms: None,
        full_stroke_seek_ms: None,
        avg_rotational_latency_ms: None,
        random_4k_read_iops_qd1: iops1,
        random_4k_read_mean_ms_qd1: mean1,
        random_4k_read_iops_qd32: iops32,
        random_4k_write_iops_qd1: wiops1,
    };
    if let ProfileKind::Hdd(h) = &p.kind {
        let l = &h.layout;
        let rev_s = 60.0 / h.rpm as f64;
        let spts: Vec<u32> = l.zones().map(|z| z.sectors_per_track).collect();
        i.rpm = Some(h.rpm);
        i.cylinders = Some(l.cylinders());
        i.surfaces = Some(l.surfaces());
        i.zones = Some(spts.len());
        i.media_rate_outer_mb_s = Some(spts[0] as f64 * 512.0 / rev_s / 1e6);
        i.media_rate_inner_mb_s = Some(*spts.last().unwrap() as f64 * 512.0 / rev_s / 1e6);
        i.avg_seek_ms = Some(weighted_average_ns(&h.seek, l.cylinders()) / 1e6);
        i.track_to_track_seek_ms = Some(h.seek.time_ns(1) as f64 / 1e6);
        i.full_stroke_seek_ms = Some(h.seek.time_ns(l.cylinders() - 1) as f64 / 1e6);
        i.avg_rotational_latency_ms = Some(rev_s * 1e3 / 2.0);
    }
    i
}
