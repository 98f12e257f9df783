//! The simulated machine a workload runs on: a disk profile, memory, a CPU profile and
//! a seed. The seed sets what a real rerun varies: the disk's initial rotational
//! position, the workload's random offsets and think-time jitter.

use crate::error::Error;
use iosched_benchmarks::units::fmt_bytes;
use iosched_core::trace::Trace;
use iosched_core::{Instant, Queue};
use iosched_disk::Profile;
use iosched_disk::profile::Interface;
use iosched_policies::SchedSpec;
use iosched_sim::{CpuProfile, HostProfile, Sim, SimConfig};

#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// A built-in disk profile name or a profile file path.
    pub disk: String,
    pub mem_bytes: u64,
    pub cpu: String,
    pub seed: u64,
    /// Host profile: `linux-2.4` (2.4.21-pre4: its read-ahead, request pool, plug and
    /// bdflush), `linux-2.5` (the 2003 reports: 2.5 read-ahead and request pool) or
    /// `linux-2.6` (2.6 read-ahead and 2.6.20 request pool, for the 2007-era studies).
    pub host: String,
    /// Page-cache memory programs have mapped, if not the host profile's
    /// (`HostProfile::mapped_bytes`).
    pub mapped_bytes: Option<u64>,
    /// File system, if not the host profile's (`HostProfile::fs`): `ext2`, `ext3[:…]`.
    pub fs: Option<String>,
    /// Bounds on the runs made on this machine (not part of what the machine is).
    pub limits: Limits,
}

/// What ends a simulated run early: a bound on simulated time, and an interrupt flag the
/// caller owns (the CLI sets it on SIGINT and SIGTERM). The simulator reads both; a run
/// they end returns an error saying which ([`check_ended`]).
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// `--max-sim-time`: simulated time a run may take at most.
    pub max_sim_time: Option<iosched_core::Duration>,
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Where a run publishes its simulated clock (nanoseconds) as it goes, for a progress
    /// display; written, never read, by the simulator.
    pub clock: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

/// Limits are how a run is bounded, not what the machine is: machines compare equal
/// whatever their limits.
impl PartialEq for Limits {
    fn eq(&self, _: &Limits) -> bool {
        true
    }
}

/// How [`Machine::run`] runs one benchmark, besides the scheduler.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// What the run is, for an error when a limit stops it (`tiobench deadline 8 threads`).
    pub what: String,
    /// The queue trace's `# run` line (the spec is appended): `tiobench, 8 threads`.
    pub trace_label: String,
    /// Keep the queue's inputs and dispatches (`--record`).
    pub record: bool,
    /// Stop the simulation at this time, the programs' own limit (`readmany`'s timeout).
    pub time_limit: Option<Instant>,
    /// Sample vmstat lines every simulated second.
    pub vmstat: bool,
}

impl RunSpec {
    /// A run named `what` for errors and `trace_label` for its trace, with no time limit
    /// and no vmstat.
    pub fn new(what: String, trace_label: &str, record: bool) -> RunSpec {
        RunSpec { what, trace_label: trace_label.to_string(), record, time_limit: None, vmstat: false }
    }
}

/// A run [`Machine::run`] finished: the simulator as it ended and the queue trace, if
/// the run recorded one.
#[derive(Debug)]
pub struct Finished {
    pub sim: Sim,
    pub trace: Option<Trace>,
    /// The queue's `/proc/diskstats` counters at the end (`iosched_core::diskstats`).
    pub disk: iosched_core::DiskStats,
}

/// The error for a run the simulator ended early, naming why (and, at `--max-sim-time`,
/// what its programs were still waiting for); `Ok` for a run that finished.
pub fn check_ended(sim: &Sim, what: &str) -> Result<(), Error> {
    let stopped = |why, message| Err(Error::Stopped { why, message });
    match sim.ended_early() {
        None => Ok(()),
        Some(why @ iosched_sim::Ended::Interrupted) => {
            stopped(why, format!("{what}: interrupted at simulated time {:.1} s", sim.sim_time().as_secs_f64()))
        }
        Some(why @ iosched_sim::Ended::SimTimeLimit) => stopped(
            why,
            format!(
                "{what}: stopped at --max-sim-time ({:.0} s of simulated time): {}. Raise --max-sim-time to let it run \
             longer",
                sim.sim_time().as_secs_f64(),
                sim.waiting()
            ),
        ),
    }
}

impl Machine {
    /// A 2.5-era host (`linux-2.5`); see [`Machine::with_host`].
    pub fn new(disk: &str, mem_bytes: u64, cpu: &str, seed: u64) -> Self {
        Machine {
            disk: disk.to_string(),
            mem_bytes,
            cpu: cpu.to_string(),
            seed,
            host: "linux-2.5".into(),
            mapped_bytes: None,
            fs: None,
            limits: Limits::default(),
        }
    }

    /// Bound the runs made on this machine.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// `disk ide-2003, 256 MiB, piii-1000, linux-2.5, ext2, seed 1`: the line every report
    /// prints so a run can be repeated.
    pub fn describe(&self) -> String {
        let mapped = self.mapped_bytes.map(|b| format!(", {} mapped", fmt_bytes(b))).unwrap_or_default();
        let fs = self.host_profile().map(|h| format!(", {}", h.fs.describe())).unwrap_or_default();
        format!(
            "disk {}, {}{mapped}, {}, {}{fs}, seed {}",
            self.disk,
            fmt_bytes(self.mem_bytes),
            self.cpu,
            self.host,
            self.seed
        )
    }

    /// Mount `fs` (`ext2`, `ext3[:…]`) in place of the host profile's file system
    /// (`None` keeps it).
    pub fn with_fs(mut self, fs: Option<&str>) -> Self {
        self.fs = fs.map(str::to_string);
        self
    }

    pub fn with_host(mut self, host: &str) -> Self {
        self.host = host.to_string();
        self
    }

    /// Override the host profile's mapped memory (`None` keeps it).
    pub fn with_mapped(mut self, bytes: Option<u64>) -> Self {
        self.mapped_bytes = bytes;
        self
    }

    /// The host profile with this machine's memory and overrides.
    pub fn host_profile(&self) -> Result<HostProfile, String> {
        let mut h = HostProfile::by_name(&self.host, self.mem_bytes)?;
        if let Some(b) = self.mapped_bytes {
            h.mapped_bytes = b;
        }
        if let Some(f) = &self.fs {
            h.fs = iosched_sim::FsKind::by_name(f).map_err(|e| format!("--fs: {e}"))?;
        }
        Ok(h)
    }

    /// The machine for a JSON record: disk, memory, CPU, host, the mapped memory in
    /// effect (the host profile's unless set), and the seed.
    pub fn json(&self) -> serde_json::Value {
        let mapped = self.host_profile().map(|h| h.mapped_bytes).ok();
        serde_json::json!({
            "disk": self.disk,
            "mem_bytes": self.mem_bytes,
            "cpu": self.cpu,
            "host": self.host,
            "mapped_bytes": mapped,
            "fs": self.host_profile().map(|h| h.fs.describe()).ok(),
            "seed": self.seed,
        })
    }

    /// Check the machine description (profiles exist, sizes sensible).
    pub fn validate(&self) -> Result<(), String> {
        let profile = iosched_disk::profile::load_profile(&self.disk).map_err(|e| e.to_string())?;
        filesystem(&self.disk, &profile)?;
        CpuProfile::by_name(&self.cpu)?;
        let host = self.host_profile()?;
        // 64 MiB..=1 TiB: the hosts modelled had 256 MiB to a few GiB; the bound keeps the
        // per-page arithmetic far from overflow and a typo (16000000T) from running.
        if !((64 << 20)..=(1 << 40)).contains(&self.mem_bytes) {
            return Err(format!(
                "memory (--mem) {} is out of range: expected 64 MiB..=1 TiB",
                fmt_bytes(self.mem_bytes)
            ));
        }
        if !self.mem_bytes.is_multiple_of(1 << 20) {
            return Err(format!("memory (--mem) {} bytes: expected a whole number of MiB (e.g. 256M)", self.mem_bytes));
        }
        if let iosched_sim::FsKind::Ext3(e) = host.fs
            && let Some(mb) = e.journal_mb
        {
            // mke2fs: "Journal size too big for filesystem" past half its free blocks.
            let free = filesystem(&self.disk, &profile)?.free_blocks();
            if mb << 8 > free / 2 {
                return Err(format!(
                    "--fs: journal_mb={mb}: a journal may take at most half of the file system on disk {} ({} MiB)",
                    profile.name,
                    (free / 2) >> 8
                ));
            }
        }
        let cache = host.cache_pages() * 4096;
        if host.mapped_bytes > cache / 2 {
            return Err(format!(
                "mapped memory (--mapped) {} bytes is out of range: 0..={} bytes ({} MiB, half the page cache of a {} MiB machine)",
                host.mapped_bytes,
                cache / 2,
                (cache / 2) >> 20,
                self.mem_bytes >> 20
            ));
        }
        Ok(())
    }

    /// The bytes of the disk's partition as a block device (fio's `filename=/dev/…` in the
    /// simulator, [`iosched_sim::Fs::create_device`]).
    pub fn device_bytes(&self) -> Result<u64, String> {
        let profile = iosched_disk::profile::load_profile(&self.disk).map_err(|e| e.to_string())?;
        Ok(filesystem(&self.disk, &profile)?.device_bytes())
    }

    /// Check that `bytes` of file data (`what`, as the user gave it) fit on the
    /// filesystem of this machine's disk, with room for ext2's indirect blocks and ext3's
    /// journal — so a
    /// run fails up front with the sizes named, not half-way with a full filesystem.
    pub fn check_fits(&self, bytes: u64, what: &str) -> Result<(), String> {
        let profile = iosched_disk::profile::load_profile(&self.disk).map_err(|e| e.to_string())?;
        let fs = filesystem(&self.disk, &profile)?;
        let blocks = bytes.div_ceil(4096);
        // One indirect block per 1024 data blocks, and 1 % spare for directories,
        // double-indirect blocks and preallocation left over.
        let journal = match self.host_profile()?.fs {
            iosched_sim::FsKind::Ext3(e) => e.journal_mb.map_or_else(|| fs.default_journal_blocks(), |mb| mb << 8),
            iosched_sim::FsKind::Ext2 => 0,
        };
        let needed = blocks + blocks / 1024 + blocks / 100 + journal;
        if needed > fs.free_blocks() {
            return Err(format!(
                "{what} does not fit on disk {} ({:.1} GiB of filesystem space; {:.1} GiB needed with ext2's indirect blocks)",
                profile.name,
                (fs.free_blocks() * 4096) as f64 / (1u64 << 30) as f64,
                (needed * 4096) as f64 / (1u64 << 30) as f64,
            ));
        }
        Ok(())
    }

    /// `spec` with the settings this machine's driver gives the queue before the spec's
    /// own apply — the disk's queue depth and largest request, the host's request
    /// allocation, whether the disk rotates — written out in front of the spec's settings
    /// (those the spec sets itself are left to it). Built on the default configuration,
    /// it is the queue a run uses ([`Machine::queue`]), so it is a recording's `# sched`
    /// line and `iosched replay` rebuilds that queue from it.
    pub fn effective_spec(&self, spec: &SchedSpec) -> Result<SchedSpec, String> {
        let profile = iosched_disk::profile::load_profile(&self.disk).map_err(|e| e.to_string())?;
        Self::effective_spec_on(&self.host_profile()?, &profile, spec)
    }

    fn effective_spec_on(host: &HostProfile, profile: &Profile, spec: &SchedSpec) -> Result<SchedSpec, String> {
        let rotational = matches!(profile.kind, iosched_disk::profile::ProfileKind::Hdd(_));
        let mut driver = vec![
            ("queue_depth", profile.queue_depth().max(1).to_string()),
            ("request_alloc", host.request_alloc.name().to_string()),
            ("rotational", (rotational as u8).to_string()),
        ];
        if host.unplug != iosched_core::Unplug::Timer {
            driver.push(("unplug", host.unplug.name().to_string()));
        }
        if let Some(n) = host.nr_requests {
            driver.push(("nr_requests", n.to_string()));
        }
        if profile.interface == Interface::Ide {
            driver.push(("dequeue", iosched_core::Dequeue::Completion.name().to_string()));
        }
        if !host.kick_unplug {
            driver.push(("kick_unplug", "0".to_string()));
        }
        let max_sectors = match (profile.max_request_sectors, Self::ide_limit(host, profile)) {
            (Some(d), Some(h)) => Some(d.min(h)),
            (d, h) => d.or(h),
        };
        if let Some(m) = max_sectors {
            driver.push(("max_sectors", m.to_string()));
        }
        spec.with_driver_settings(&driver).map_err(|e| format!("{spec}: {e}"))
    }

    /// The host's IDE driver limit on a request, if the disk is on IDE and the host has
    /// one (the queue takes the lower of it and the disk's own).
    fn ide_limit(host: &HostProfile, profile: &Profile) -> Option<u32> {
        host.ide_max_sectors.filter(|_| profile.interface == Interface::Ide)
    }

    /// The request queue for `spec` on this machine's disk: the driver sets the queue
    /// depth and largest request from the disk profile, then the spec's settings apply
    /// (a `max_sectors` above the driver's limit is an error, as sysfs refuses it).
    pub fn queue(&self, spec: &SchedSpec) -> Result<Queue, String> {
        let profile = iosched_disk::profile::load_profile(&self.disk).map_err(|e| e.to_string())?;
        let host = self.host_profile()?;
        let q = Self::effective_spec_on(&host, &profile, spec)?.queue().map_err(|e| e.to_string())?;
        if let Some(m) = profile.max_request_sectors
            && q.config().max_sectors > m
        {
            return Err(format!(
                "{spec}: max_sectors {} exceeds the {} disk's limit of {m} sectors",
                q.config().max_sectors,
                profile.name
            ));
        }
        if let Some(m) = Self::ide_limit(&host, &profile)
            && q.config().max_sectors > m
        {
            return Err(format!(
                "{spec}: max_sectors {} exceeds the {} host's IDE driver limit of {m} sectors",
                q.config().max_sectors,
                host.name
            ));
        }
        // Nor can the driver keep more commands in flight than the disk queues.
        let disk_depth = profile.queue_depth().max(1);
        if q.config().depth > disk_depth {
            return Err(format!(
                "{spec}: queue_depth {} exceeds the {} disk's queue depth of {disk_depth}",
                q.config().depth,
                profile.name
            ));
        }
        Ok(q)
    }

    /// The queue-input trace `queue` kept for one run of `spec`, if it was recording
    /// (`Queue::start_recording`): the effective spec as its `# sched` line, the run's
    /// label with the spec as given (`# run`) and the machine (`# machine`).
    pub fn queue_trace(&self, spec: &SchedSpec, run: &str, queue: &mut Queue) -> Result<Option<Trace>, String> {
        if !queue.recording() {
            return Ok(None);
        }
        Ok(Some(Trace {
            meta: vec![
                ("sched".into(), self.effective_spec(spec)?.text),
                ("run".into(), format!("{run}, {spec}")),
                ("machine".into(), self.describe()),
            ],
            records: queue.take_record(),
            lines: Vec::new(),
        }))
    }

    /// One simulated run: the skeleton every benchmark shares. The queue for `spec` on
    /// this machine's disk (recording its inputs if `run.record`), a fresh simulator,
    /// `setup` (the benchmark's files and first tasks), the run until the watched tasks
    /// exit, the check that no limit stopped it ([`check_ended`]), and the queue trace
    /// (with an `# owner` line per task that did I/O: its owner id, name and bytes).
    /// Returns what `setup` returned and the finished run, whose simulator holds the
    /// statistics and vmstat lines.
    pub fn run<T>(
        &self,
        spec: &SchedSpec,
        run: &RunSpec,
        setup: impl FnOnce(&mut Sim) -> Result<T, String>,
    ) -> Result<(T, Finished), Error> {
        let (t, finished, stopped) = self.run_or_stop(spec, run, setup)?;
        match stopped {
            Some(e) => Err(e),
            None => Ok((t, finished)),
        }
    }

    /// [`Machine::run`], but a run a limit ended ([`check_ended`]) also returns the simulator
    /// as it stopped, with the error beside it, so that the caller can report what its
    /// programs did so far (a partial report).
    pub fn run_or_stop<T>(
        &self,
        spec: &SchedSpec,
        run: &RunSpec,
        setup: impl FnOnce(&mut Sim) -> Result<T, String>,
    ) -> Result<(T, Finished, Option<Error>), Error> {
        let mut queue = self.queue(spec)?;
        if run.record {
            queue.start_recording();
        }
        let mut sim = self.sim(run.time_limit, run.vmstat, queue.config().max_sectors)?;
        let t = setup(&mut sim)?;
        iosched_sim::host::run(&mut sim, &mut queue);
        let disk = queue.disk_stats(sim.sim_time());
        if let Err(e) = check_ended(&sim, &run.what) {
            return Ok((t, Finished { sim, trace: None, disk }, Some(e)));
        }
        let mut trace = self.queue_trace(spec, &run.trace_label, &mut queue)?;
        if let Some(tr) = &mut trace {
            // Whose requests are whose: the programs and the kernel's threads (pdflush,
            // kjournald, …), each with the bytes its requests moved.
            for (name, owner, read, written) in sim.io_by_task() {
                tr.meta
                    .push(("owner".into(), format!("{} {name}: {read} bytes read, {written} bytes written", owner.0)));
            }
        }
        Ok((t, Finished { sim, trace, disk }, None))
    }

    /// A fresh simulator for one run, for a queue whose largest request is
    /// `max_sectors` (bios are built up to that size, as `bio_add_page` does).
    pub fn sim(&self, time_limit: Option<Instant>, vmstat: bool, max_sectors: u32) -> Result<Sim, String> {
        let profile = iosched_disk::profile::load_profile(&self.disk).map_err(|e| e.to_string())?;
        let dev = profile.build_boxed(self.seed);
        let cfg = SimConfig {
            host: self.host_profile()?,
            cpu: CpuProfile::by_name(&self.cpu)?,
            seed: self.seed,
            vmstat,
            time_limit,
            max_sim_time: self.limits.max_sim_time.map(|d| Instant::ZERO + d),
            interrupt: self.limits.interrupt.clone(),
            clock: self.limits.clock.clone(),
            trace: false,
            max_bio_sectors: max_sectors,
        };
        Ok(Sim::new(cfg, dev))
    }
}

/// The simulated ext2 filesystem on the disk (`disk` as the user named it), or why it
/// does not fit.
fn filesystem(disk: &str, profile: &iosched_disk::profile::Profile) -> Result<iosched_sim::Fs, String> {
    let min = iosched_sim::fs::MIN_DEVICE_SECTORS;
    if profile.capacity_sectors() < min {
        return Err(format!(
            "disk {disk}: {} sectors ({}) is too small for the simulated ext2 filesystem: it needs at least {min} sectors (one 128 MiB block group after the 63-sector partition offset)",
            profile.capacity_sectors(),
            fmt_bytes(profile.capacity_sectors() * 512),
        ));
    }
    Ok(iosched_sim::Fs::for_device(profile.capacity_sectors()))
}
