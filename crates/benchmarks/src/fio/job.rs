//! fio's options, typed: a [`Job`] per job section, with fio 3.x's defaults and meanings
//! (`options.c` `fio_options[]`, `init.c` `fixup_options`), built from the sections of
//! [`super::jobfile`]. Global sections apply, in order, to the jobs below them.
//!
//! Three kinds of option:
//! - **modelled**: every field of [`Job`] — the options that decide what a scheduler sees;
//! - **reporting only** ([`REPORTING_ONLY`]): accepted, listed in [`JobSet::warnings`] as
//!   not modelled, and changing nothing a scheduler sees (log files, output statistics);
//! - any other option fio knows ([`super::fio_options::FIO_OPTIONS`]: `verify`, `zonemode`,
//!   `flow`, …) is refused as not modelled: a run that ignored it would not be the job the
//!   file describes; and a name fio does not know is an unknown option, with the one meant
//!   when it is a near miss. Every refusal names the file and line.

use super::iolog::Iolog;
use super::jobfile::{Error, Origin, RawOption, Section};
use super::value::{self, KbBase, SizeOrPercent, TimeUnit};
use iosched_core::IoPrio;

/// `rw=`: the direction and pattern of a job's I/O.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    RandTrim,
    /// `rw` / `readwrite`: sequential, mixed by `rwmixread`.
    ReadWrite,
    RandRw,
    TrimWrite,
    RandTrimWrite,
}

impl Pattern {
    const NAMES: [(&'static str, Pattern); 11] = [
        ("read", Pattern::Read),
        ("write", Pattern::Write),
        ("trim", Pattern::Trim),
        ("randread", Pattern::RandRead),
        ("randwrite", Pattern::RandWrite),
        ("randtrim", Pattern::RandTrim),
        ("rw", Pattern::ReadWrite),
        ("readwrite", Pattern::ReadWrite),
        ("randrw", Pattern::RandRw),
        ("trimwrite", Pattern::TrimWrite),
        ("randtrimwrite", Pattern::RandTrimWrite),
    ];
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Pattern::RandRead | Pattern::RandWrite | Pattern::RandTrim | Pattern::RandRw | Pattern::RandTrimWrite
        )
    }
    pub fn reads(self) -> bool {
        matches!(self, Pattern::Read | Pattern::RandRead | Pattern::ReadWrite | Pattern::RandRw)
    }
    pub fn writes(self) -> bool {
        !matches!(self, Pattern::Read | Pattern::RandRead | Pattern::Trim | Pattern::RandTrim)
    }
}

/// `random_distribution=` (`str_random_distribution_cb`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Distribution {
    Random,
    /// `zipf:theta` (default 1.1, not 1.0).
    Zipf {
        theta: f64,
    },
    /// `pareto:h` (default 0.2, 0 < h < 1).
    Pareto {
        h: f64,
    },
    /// `normal:dev` (default 0, 0 ≤ dev < 100), a percentage of the range.
    Normal {
        dev: f64,
    },
    /// `zoned:access/size:…` (sizes as percentages of the file) or `zoned_abs:access/size:…`
    /// (sizes in bytes, from the file's start); the zones are [`Job::zones`].
    Zoned {
        absolute: bool,
    },
}

/// `ioengine=`: how a job's calls reach the kernel; each maps to the host's system calls.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    /// `read`/`write` after `lseek`.
    Sync,
    /// `pread`/`pwrite` (fio's default on Linux).
    Psync,
    /// `readv`/`writev`.
    Vsync,
    /// `preadv`/`pwritev`.
    Pvsync,
    /// `preadv2`/`pwritev2`.
    Pvsync2,
    /// Linux native AIO: `io_submit`/`io_getevents`.
    Libaio,
    IoUring,
    /// POSIX AIO (glibc's, threads doing `pread`/`pwrite`).
    Posixaio,
    /// `mmap` and `memcpy`.
    Mmap,
}

impl Engine {
    const NAMES: [(&'static str, Engine); 9] = [
        ("sync", Engine::Sync),
        ("psync", Engine::Psync),
        ("vsync", Engine::Vsync),
        ("pvsync", Engine::Pvsync),
        ("pvsync2", Engine::Pvsync2),
        ("libaio", Engine::Libaio),
        ("io_uring", Engine::IoUring),
        ("posixaio", Engine::Posixaio),
        ("mmap", Engine::Mmap),
    ];
    /// Whether the engine keeps more than one I/O in flight per job (`iodepth` > 1 means
    /// something only then; fio's sync engines complete each call before the next).
    pub fn is_async(self) -> bool {
        matches!(self, Engine::Libaio | Engine::IoUring | Engine::Posixaio)
    }
    pub fn name(self) -> &'static str {
        Engine::NAMES.iter().find(|(_, e)| *e == self).map(|(n, _)| *n).expect("named")
    }
}

/// `rate_process=`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RateProcess {
    Linear,
    Poisson,
}

/// `exit_what=`: which jobs a job's end terminates under `exitall` (fio's `TERMINATE_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ExitWhat {
    /// The jobs of its reporting group (`TERMINATE_GROUP`, the default).
    Group,
    /// Every job running then, in any group (`TERMINATE_STONEWALL`); later phases run.
    Stonewall,
    /// Every job, those not started yet too (`TERMINATE_ALL`).
    All,
}

/// One job as its section (and the global sections above it) describe it. Sizes in bytes,
/// times in microseconds, per-direction values as `[read, write, trim]`.
/// fio's per-command priorities (`engines/cmdprio.c`), per direction (read, write):
/// a share of the I/Os is issued with a priority of its own, which the block layer
/// carries in the request (`bi_ioprio`) for the scheduler to read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CmdPrio {
    /// `cmdprio_percentage`: the share of I/Os, of any block size.
    pub percentage: [u8; 2],
    /// `cmdprio_class` (1 RT, 2 BE, 3 IDLE; 0: not given, which means RT).
    pub class: [u8; 2],
    /// `cmdprio`: the level (0..=7, default 0).
    pub level: [u8; 2],
    /// `cmdprio_bssplit`: per block size, shares with their own priority or the
    /// `cmdprio_class`/`cmdprio` one; nonzero shares only, by block size.
    pub bssplit: Option<[Vec<CmdPrioSplit>; 2]>,
}

/// One `cmdprio_bssplit` entry.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CmdPrioSplit {
    pub bs: u64,
    pub perc: u8,
    /// Its own (class, level), or `None` for the `cmdprio_class`/`cmdprio` one.
    pub prio: Option<(u8, u8)>,
}

impl CmdPrio {
    /// Whether any I/O may get a priority of its own.
    pub fn active(&self) -> bool {
        self.percentage != [0, 0] || self.bssplit.as_ref().is_some_and(|b| b.iter().any(|l| !l.is_empty()))
    }

    /// `fio_cmdprio_percentage`: the percentage of I/Os of this direction and block size
    /// that get a priority of their own (0: none, and no draw is made).
    pub fn share(&self, write: bool, bs: u64) -> u32 {
        let d = write as usize;
        match &self.bssplit {
            None => self.percentage[d] as u32,
            Some(b) => b[d].iter().filter(|e| e.bs == bs).map(|e| e.perc as u32).sum(),
        }
    }

    /// The priorities (class, level) direction `write`'s I/Os may be given, in the order
    /// fio's `clat_prio` array lists them after the job's own (`fio_cmdprio_gen_perc`,
    /// `fio_cmdprio_generate_bsprio_desc`); empty when the direction gets none.
    pub fn values(&self, write: bool) -> Vec<(u8, u8)> {
        let d = write as usize;
        let implicit = (if self.class[d] == 0 { 1 } else { self.class[d] }, self.level[d]);
        let mut out: Vec<(u8, u8)> = match &self.bssplit {
            None if self.percentage[d] > 0 => vec![implicit],
            None => Vec::new(),
            Some(b) => b[d].iter().map(|e| e.prio.unwrap_or(implicit)).collect(),
        };
        let mut seen = Vec::new();
        out.retain(|v| {
            let new = !seen.contains(v);
            seen.push(*v);
            new
        });
        out
    }

    /// `fio_cmdprio_set_ioprio` after its draw: the (class, level) for an I/O whose draw
    /// `rand` (0..=99) fell under [`CmdPrio::share`]; `None` when it did not.
    pub fn pick(&self, write: bool, bs: u64, rand: u32) -> Option<(u8, u8)> {
        let d = write as usize;
        if rand >= self.share(write, bs) {
            return None;
        }
        // An unset class means RT (`fio_cmdprio_parse_and_gen`).
        let implicit = (if self.class[d] == 0 { 1 } else { self.class[d] }, self.level[d]);
        match &self.bssplit {
            None => Some(implicit),
            Some(b) => {
                let mut acc = 0;
                b[d].iter().filter(|e| e.bs == bs).find_map(|e| {
                    acc += e.perc as u32;
                    (rand < acc).then(|| e.prio.unwrap_or(implicit))
                })
            }
        }
    }
}

/// `zonemode=strided`'s zones ([`Job::strided`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Strided {
    /// Bytes of I/O in each zone (`zonesize`).
    pub size: u64,
    /// The span the zone's offsets cover (`zonerange`).
    pub range: u64,
    /// Bytes skipped after a zone's range (`zoneskip`).
    pub skip: u64,
}

/// fio's `ioprio_value`: class in bits 13–15, level below.
pub fn ioprio_value(class: u8, level: u8) -> u16 {
    (class as u16) << 13 | level as u16
}

#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// The section's name: the job's files are named after it (`name.jobnum.filenum`).
    pub section: String,
    /// `name=`, the name in the output (the section's by default).
    pub name: String,
    pub origin: Origin,
    pub description: Option<String>,
    pub filename: Vec<String>,
    pub directory: Vec<String>,
    pub nrfiles: u32,
    pub size: Option<SizeOrPercent>,
    /// `filesize=low[-high]`.
    pub filesize: Option<(u64, u64)>,
    pub io_size: Option<SizeOrPercent>,
    pub offset: SizeOrPercent,
    pub offset_increment: SizeOrPercent,
    pub rw: Pattern,
    /// `rw=…:N`: for a random pattern, I/Os per random offset (default 1); for a sequential
    /// one, bytes added to the offset after each I/O (default 0; negative walks backwards).
    pub rw_postfix: Option<i64>,
    pub rwmixread: u8,
    pub bs: [u64; 3],
    pub bsrange: Option<[(u64, u64); 3]>,
    /// `bssplit=`: per direction, (block size, percentage) with unspecified shares filled in.
    pub bssplit: Option<[Vec<(u64, u8)>; 3]>,
    pub blockalign: Option<[u64; 3]>,
    pub random_distribution: Distribution,
    /// `random_distribution=zoned…`'s zones per direction (read, write, trim), in order:
    /// (percentage of the accesses, size: a percentage of the file, or bytes with
    /// `zoned_abs`); the access percentages add up to 100, or the list is empty (uniform).
    pub zones: [Vec<(u8, u64)>; 3],
    pub randrepeat: bool,
    pub randseed: Option<u64>,
    pub norandommap: bool,
    pub ioengine: Engine,
    pub iodepth: u32,
    pub iodepth_batch_submit: u32,
    pub iodepth_low: u32,
    pub direct: bool,
    pub fsync: u32,
    pub fdatasync: u32,
    pub end_fsync: bool,
    pub fsync_on_close: bool,
    pub thinktime_us: u64,
    pub thinktime_spin_us: u64,
    pub thinktime_blocks: u32,
    /// Bytes per second, per direction (0: no limit).
    pub rate: [u64; 3],
    pub rate_iops: [u64; 3],
    /// `rate_min` (bytes/s) and `rate_iops_min`, per direction: a job whose rate over a
    /// `rate_cycle` (ms) falls below is stopped with an error (fio's `check_min_rate`).
    pub rate_min: [u64; 3],
    pub rate_iops_min: [u64; 3],
    pub rate_cycle_ms: u64,
    pub rate_process: RateProcess,
    /// `exitall`: when any job sets it, each job's end terminates others (fio's global
    /// `exitall_on_terminate`, set by `str_exitall_cb`), which ones by its `exit_what`.
    pub exitall: bool,
    pub exit_what: ExitWhat,
    /// The [`DATA_ONLY`] options the job gives (they change only its buffers' bytes).
    pub data_options: Vec<String>,
    /// `flow` (a weight, 0: none), `flow_id` and `flow_sleep` (µs): token-based flow
    /// control between the jobs of one flow id (fio's `flow.c`).
    pub flow: u32,
    pub flow_id: u32,
    pub flow_sleep_us: u64,
    /// The options its own section gives, as written (fio's `job options`; a job from
    /// the command line has its `name` first, as fio lists it).
    pub options: Vec<(String, String)>,
    pub numjobs: u32,
    pub group_reporting: bool,
    pub new_group: bool,
    pub stonewall: bool,
    pub startdelay_us: u64,
    /// `wait_for=NAME`: the job starts once every thread of the earlier job named NAME
    /// (its clones too) has exited (`waitee_running` in fio's `run_threads`).
    pub wait_for: Option<String>,
    pub runtime_us: u64,
    pub time_based: bool,
    pub ramp_time_us: u64,
    pub loops: u32,
    /// `number_ios=N`: stop once N × `loops` I/Os have been issued, if the job's size or
    /// time has not ended it first (`exceeds_number_ios`: done, queued and in flight).
    pub number_ios: u64,
    pub prio: u8,
    pub prioclass: u8,
    /// `cmdprio_percentage`, `cmdprio_class`, `cmdprio`, `cmdprio_bssplit` (libaio,
    /// io_uring): I/Os issued with a priority of their own.
    pub cmdprio: CmdPrio,
    /// `io_submit_mode=offload`: the job thread only makes and paces its I/Os; `iodepth`
    /// submitter threads of its own issue them (fio's `rate-submit.c` workqueue), so the
    /// thread keeps up to `iodepth` in flight whatever its engine.
    pub offload: bool,
    /// `zonemode=strided` (or `zonesize` alone, as fio reads it): I/O in `zonesize` bytes
    /// of each `zonerange` (default `zonesize`), then `zoneskip` bytes further on, the
    /// zones wrapping at the file's end (`setup_strided_zone_mode`). `None` for no zones.
    pub strided: Option<Strided>,
    /// `zonemode` as given (`Some(true)` strided, `Some(false)` none) and `zonesize`,
    /// `zonerange`, `zoneskip` (0: not given), which [`Job::strided`] is made of.
    pub zonemode: Option<bool>,
    pub zone: [u64; 3],
    /// `verify=` (its checksum name; `None` for `0`, no verification) with `do_verify`:
    /// a writing job reads back what it wrote (fio's `do_verify` after each pass, and with
    /// `verify_backlog=N` every N writes, `verify_backlog_batch` of them at a time).
    pub verify: Option<String>,
    pub do_verify: bool,
    pub verify_backlog: u64,
    pub verify_backlog_batch: u64,
    /// `log_prio`: the per-I/O logs' priority column holds the I/O's priority value
    /// (`0x%04x`), not 1 for the RT class.
    pub log_prio: bool,
    /// `log_offset`: the per-I/O logs have each I/O's offset before the priority.
    pub log_offset: bool,
    pub ioscheduler: Option<String>,
    pub invalidate: bool,
    pub create_on_open: bool,
    pub unlink: bool,
    pub kb_base: KbBase,
    /// `read_iolog=`: the log to replay (its path as given), and the log itself once
    /// [`super::load`] has read it.
    pub read_iolog: Option<String>,
    pub iolog: Option<std::sync::Arc<Iolog>>,
    /// `write_iolog=`: where to write the I/Os the job issued (fio iolog v3); the
    /// executors return the text and the command writes it.
    pub write_iolog: Option<String>,
    /// `replay_time_scale=` (percent, default 100: the log's own pace).
    pub replay_time_scale: u32,
    pub replay_no_stall: bool,
    /// `write_lat_log=`, `write_bw_log=`, `write_iops_log=`: each log's file-name prefix
    /// (fio writes `PREFIX_clat.N.log` & co., N the job's number).
    pub write_lat_log: Option<String>,
    pub write_bw_log: Option<String>,
    pub write_iops_log: Option<String>,
    /// The size of the job's files when they exist before the run (a block device: the
    /// simulator's `/dev/…`), set by the executor; `None` for files the run creates.
    pub existing_size: Option<u64>,
}

impl Job {
    /// Whether the job writes any per-I/O log, so its executor keeps every I/O's sample.
    pub fn logs_samples(&self) -> bool {
        self.write_lat_log.is_some() || self.write_bw_log.is_some() || self.write_iops_log.is_some()
    }
}

impl Job {
    /// fio's defaults (`fio_options[]`'s `def` fields on Linux).
    fn defaults(section: &str, origin: Origin) -> Job {
        Job {
            section: section.to_string(),
            name: section.to_string(),
            origin,
            description: None,
            filename: Vec::new(),
            directory: Vec::new(),
            nrfiles: 1,
            size: None,
            filesize: None,
            io_size: None,
            offset: SizeOrPercent::Bytes(0),
            offset_increment: SizeOrPercent::Bytes(0),
            rw: Pattern::Read,
            rw_postfix: None,
            rwmixread: 50,
            bs: [4096; 3],
            bsrange: None,
            bssplit: None,
            blockalign: None,
            random_distribution: Distribution::Random,
            zones: Default::default(),
            wait_for: None,
            number_ios: 0,
            randrepeat: true,
            randseed: None,
            norandommap: false,
            ioengine: Engine::Psync,
            iodepth: 1,
            iodepth_batch_submit: 1,
            iodepth_low: 0,
            direct: false,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            fsync_on_close: false,
            thinktime_us: 0,
            thinktime_spin_us: 0,
            thinktime_blocks: 1,
            rate: [0; 3],
            rate_iops: [0; 3],
            rate_min: [0; 3],
            rate_iops_min: [0; 3],
            rate_cycle_ms: 1000,
            rate_process: RateProcess::Linear,
            exitall: false,
            exit_what: ExitWhat::Group,
            data_options: Vec::new(),
            options: Vec::new(),
            flow: 0,
            flow_id: 0,
            flow_sleep_us: 0,
            numjobs: 1,
            group_reporting: false,
            new_group: false,
            stonewall: false,
            startdelay_us: 0,
            runtime_us: 0,
            time_based: false,
            ramp_time_us: 0,
            loops: 1,
            prio: 0,
            prioclass: 0,
            cmdprio: CmdPrio::default(),
            offload: false,
            strided: None,
            zonemode: None,
            zone: [0; 3],
            verify: None,
            do_verify: true,
            verify_backlog: 0,
            verify_backlog_batch: 0,
            log_prio: false,
            log_offset: false,
            ioscheduler: None,
            invalidate: true,
            create_on_open: false,
            unlink: false,
            kb_base: KbBase::K1024,
            read_iolog: None,
            iolog: None,
            write_iolog: None,
            replay_time_scale: 100,
            replay_no_stall: false,
            write_lat_log: None,
            write_bw_log: None,
            write_iops_log: None,
            existing_size: None,
        }
    }

    /// The name of clone `clone` (0 is the job itself) in the report: fio's `name.N`.
    pub fn thread_name(&self, clone: u32) -> String {
        if clone == 0 { self.name.clone() } else { format!("{}.{clone}", self.name) }
    }

    /// The files of clone `clone`: a replayed log's own files, else `filename=`'s (shared
    /// by the clones), else `section.jobnum.filenum`, with fio's clone numbering 0, N-1,
    /// …, 1 (`add_job`'s recursion).
    pub fn file_names(&self, clone: u32) -> Vec<String> {
        if let Some(log) = &self.iolog {
            return log.files.clone();
        }
        if !self.filename.is_empty() {
            return self.filename.clone();
        }
        let jobnum = if clone == 0 { 0 } else { self.numjobs - clone };
        (0..self.nrfiles).map(|f| format!("{}.{jobnum}.{f}", self.section)).collect()
    }

    /// Where clone `clone` does I/O in each of its files, as fio's `setup_files` and
    /// `get_start_offset` place it: from `offset` (+ `offset_increment` × clone), `size /
    /// files` bytes, or with `filesize` up to that size. A job on files that exist already
    /// ([`Job::existing_size`]: a block device) also takes its size from them: without
    /// `size`, to the end of the file; with a percentage, that share of the file (rounded
    /// down to whole minimal blocks); a percentage offset is a share of the file, rounded
    /// up to a minimal block. `None` when a size or offset is a percentage of a file that
    /// does not exist yet, or no size is given for one ([`Job::region_error`] says why).
    pub fn file_region(&self, clone: u32) -> Option<(u64, u64)> {
        self.region(clone).ok()
    }

    /// Why [`Job::file_region`] has no region for clone `clone`, if it has none.
    pub fn region_error(&self, clone: u32) -> Option<String> {
        self.region(clone).err()
    }

    fn region(&self, clone: u32) -> Result<(u64, u64), String> {
        if self.iolog.is_some() {
            // Each file of a log is as large as its furthest I/O: see `replay_files`.
            let ext = self.replay_files().and_then(|v| v.iter().map(|f| f.1).max());
            return ext.map(|e| (0, e)).ok_or_else(|| "an empty log".into());
        }
        let real = self.existing_size;
        let pct = |p: u8| real.map(|r| r * p as u64 / 100);
        let exists = "a percentage of a file's size needs the file to exist; give bytes";
        let align = self.min_bs().max(1);
        let (increment, mut aligned) = match self.offset_increment {
            SizeOrPercent::Bytes(b) => (b, false),
            SizeOrPercent::Percent(p) => (pct(p).ok_or(exists)?, true),
        };
        let mut offset = match self.offset {
            SizeOrPercent::Bytes(b) => b,
            SizeOrPercent::Percent(p) => {
                aligned = true;
                pct(p).ok_or(exists)?
            }
        } + clone as u64 * increment;
        if aligned {
            offset = offset.div_ceil(align) * align;
        }
        let files = self.file_names(clone).len().max(1) as u64;
        let len = match (self.filesize, self.size, real) {
            // A fixed file size: the file is that large, the region from the offset to its end.
            (Some((low, _)), _, _) => {
                low.checked_sub(offset).ok_or_else(|| format!("offset {offset} is past the filesize {low}"))?
            }
            (None, Some(SizeOrPercent::Bytes(s)), _) => s / files,
            (None, Some(SizeOrPercent::Percent(p)), Some(r)) => {
                let end =
                    r.checked_sub(offset).ok_or_else(|| format!("offset {offset} is past the end ({r} bytes)"))?;
                let share = r * p as u64 / 100;
                share.min(end) / align * align
            }
            (None, None, Some(r)) => {
                r.checked_sub(offset).ok_or_else(|| format!("offset {offset} is past the end ({r} bytes)"))?
            }
            (None, Some(SizeOrPercent::Percent(_)), None) => return Err(exists.into()),
            (None, None, None) => return Err("no size: fio needs size= or filesize= for a file it creates".into()),
        };
        if let Some(r) = real
            && offset + len > r
        {
            return Err(format!("the region {offset}..{} is past the end of its file ({r} bytes)", offset + len));
        }
        Ok((offset, len))
    }

    /// A replayed log's files with their sizes: each as large as its furthest I/O, in
    /// whole 4 KiB blocks (one at least).
    pub fn replay_files(&self) -> Option<Vec<(String, u64)>> {
        let log = self.iolog.as_ref()?;
        let ext = log.extents();
        Some(log.files.iter().zip(ext).map(|(n, e)| (n.clone(), e.div_ceil(4096).max(1) * 4096)).collect())
    }

    /// The bytes a job thread issues when not `time_based`: `io_size` (bytes, or a
    /// percentage of its files' regions; else the regions, `region_bytes`) × `loops`.
    pub fn bytes_to_issue(&self, region_bytes: u64) -> u64 {
        let per_pass = match self.io_size {
            Some(SizeOrPercent::Bytes(b)) => b,
            // `io_size_percent`: that share of the region.
            Some(SizeOrPercent::Percent(p)) => region_bytes * p as u64 / 100,
            None => region_bytes,
        };
        per_pass.saturating_mul(self.loops as u64)
    }

    /// `prioclass`/`prio` as an I/O priority; `None` for class 0 (the owner's default).
    pub fn ioprio(&self) -> Option<IoPrio> {
        match self.prioclass {
            1 => Some(IoPrio::rt(self.prio)),
            2 => Some(IoPrio::be(self.prio)),
            3 => Some(IoPrio::idle()),
            _ => None,
        }
    }

    /// The smallest block a job's reads or writes use.
    pub fn min_bs(&self) -> u64 {
        let mut m = self.bs.iter().copied().min().unwrap_or(4096);
        if let Some(r) = &self.bsrange {
            m = m.min(r.iter().map(|x| x.0).min().unwrap_or(m));
        }
        if let Some(s) = &self.bssplit {
            m = m.min(s.iter().flatten().map(|x| x.0).min().unwrap_or(m));
        }
        m
    }
}

/// The jobs of one or more job files, in order, with what was accepted but not modelled.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSet {
    pub jobs: Vec<Job>,
    /// Reporting group of each job (fio's `groupid`: `stonewall` and `new_group` start one).
    pub groups: Vec<u32>,
    /// Start barrier of each job: the jobs of a phase start together, once every job of the
    /// phase before has finished. Only `stonewall` (and a new job file) starts one, as in
    /// fio's `run_threads`; `new_group` alone starts a reporting group, not a wait.
    pub phases: Vec<u32>,
    pub warnings: Vec<String>,
    /// The options the `[global]` sections give, as written (fio's `global options`).
    pub global_options: Vec<(String, String)>,
}

impl JobSet {
    /// Whether a job's end terminates others (`exitall` in any job: fio's option sets a
    /// global).
    pub fn exitall(&self) -> bool {
        self.jobs.iter().any(|j| j.exitall)
    }

    /// Every file the jobs use, each once (a name used twice is one file), in the order the
    /// jobs first name them, with the size the furthest of its clones' regions needs.
    /// `None` if a job's region is not in bytes ([`Job::file_region`]).
    pub fn files(&self) -> Option<Vec<(String, u64)>> {
        let mut out: Vec<(String, u64)> = Vec::new();
        for job in &self.jobs {
            if let Some(files) = job.replay_files() {
                for (name, size) in files {
                    match out.iter_mut().find(|f| f.0 == name) {
                        Some(f) => f.1 = f.1.max(size),
                        None => out.push((name, size)),
                    }
                }
                continue;
            }
            if job.existing_size.is_some() {
                // Its files exist already (a device): nothing to create.
                continue;
            }
            for clone in 0..job.numjobs {
                let (start, len) = job.file_region(clone)?;
                for name in job.file_names(clone) {
                    match out.iter_mut().find(|f| f.0 == name) {
                        Some(f) => f.1 = f.1.max(start + len),
                        None => out.push((name, start + len)),
                    }
                }
            }
        }
        Some(out)
    }
}

/// Options accepted but not modelled: they change what fio prints or logs, not the I/O.
pub const REPORTING_ONLY: &[&str] = &[
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "log_hist_msec",
    "write_hist_log",
    "bwavgtime",
    "iopsavgtime",
    "unit_base",
    "disk_util",
    "gtod_reduce",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "stats",
    "unified_rw_reporting",
    "thread",
    "log_unix_epoch",
    "log_alternate_epoch",
    "log_compression",
    "log_compression_cpus",
    "log_store_compressed",
    "log_max_value",
    "log_entries",
    "log_hist_coarseness",
    "significant_figures",
    "clocksource",
    "gtod_cpu",
    "block_error_percentiles",
    "error_dump",
];

/// Options that change only the bytes a job writes (fio's buffer contents), or how
/// `verify` checks what it reads back: accepted
/// with a note where the disk does not look at data (the simulator), listed in
/// [`Job::data_options`] for an executor that writes its own bytes to refuse.
pub const DATA_ONLY: &[&str] = &[
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "buffer_pattern",
    "dedupe_percentage",
    "dedupe_mode",
    "dedupe_global",
    "dedupe_working_set_percentage",
    "refill_buffers",
    "scramble_buffers",
    "zero_buffers",
    // What a verification checks and how it reports, not which I/Os it makes.
    "verify_interval",
    "verify_offset",
    "verify_pattern",
    "verify_fatal",
    "verify_dump",
    "verify_async",
    "verify_async_cpus",
    "verify_state_save",
];

/// Every option this reader gives meaning to.
pub const MODELLED: &[&str] = &[
    "name",
    "description",
    "filename",
    "directory",
    "nrfiles",
    "nr_files",
    "size",
    "filesize",
    "io_size",
    "io_limit",
    "offset",
    "fileoffset",
    "offset_increment",
    "rw",
    "readwrite",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "blocksize",
    "bsrange",
    "blocksize_range",
    "bssplit",
    "blockalign",
    "ba",
    "random_distribution",
    "randrepeat",
    "allrandrepeat",
    "randseed",
    "norandommap",
    "ioengine",
    "iodepth",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_low",
    "direct",
    "buffered",
    "fsync",
    "fdatasync",
    "end_fsync",
    "fsync_on_close",
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "rate",
    "rate_iops",
    "rate_process",
    "rate_min",
    "rate_iops_min",
    "rate_cycle",
    "numjobs",
    "group_reporting",
    "new_group",
    "stonewall",
    "wait_for_previous",
    "startdelay",
    "wait_for",
    "exitall",
    "exit_what",
    "flow",
    "flow_id",
    "flow_sleep",
    "number_ios",
    "runtime",
    "timeout",
    "time_based",
    "ramp_time",
    "loops",
    "prio",
    "prioclass",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    "cmdprio_bssplit",
    "log_prio",
    "log_offset",
    "io_submit_mode",
    "zonemode",
    "zonesize",
    "zonerange",
    "zoneskip",
    "verify",
    "do_verify",
    "verify_backlog",
    "verify_backlog_batch",
    "ioscheduler",
    "invalidate",
    "create_on_open",
    "unlink",
    "kb_base",
    "read_iolog",
    "write_iolog",
    "replay_time_scale",
    "replay_no_stall",
    "write_lat_log",
    "write_bw_log",
    "write_iops_log",
    "log_avg_msec",
    "per_job_logs",
];

/// The jobs the sections describe.
pub fn build(sections: &[Section]) -> Result<JobSet, Error> {
    let mut global = Job::defaults("global", Origin::Arg { index: 0 });
    let mut set = JobSet {
        jobs: Vec::new(),
        groups: Vec::new(),
        phases: Vec::new(),
        warnings: Vec::new(),
        global_options: Vec::new(),
    };
    let mut group = 0u32;
    let mut phase = 0u32;
    for s in sections {
        let mut job = global.clone();
        if !s.global {
            job.section = s.name.clone();
            job.name = s.name.clone();
            job.origin = s.origin.clone();
        }
        // `kb_base` first, as fio sorts it before every other option of a section; then
        // `ioengine`, so that a job for an engine this model lacks is refused for its
        // engine rather than for one of that engine's options.
        let rank = |o: &&RawOption| match o.key.as_str() {
            "kb_base" => 0,
            "ioengine" => 1,
            _ => 2,
        };
        let mut ordered: Vec<&RawOption> = s.options.iter().collect();
        ordered.sort_by_key(rank);
        for o in ordered {
            apply(&mut job, o, &mut set.warnings)?;
        }
        let written = s.options.iter().map(|o| (o.key.clone(), o.value.clone().unwrap_or_default()));
        if s.global {
            set.global_options.extend(written);
            global = job;
            continue;
        }
        job.options = written.collect();
        if matches!(s.origin, Origin::Arg { .. }) {
            job.options.insert(0, ("name".into(), s.name.clone()));
        }
        check(&mut job, &mut set.warnings)?;
        // `wait_for_ok`: the waitee is one earlier job, not the job itself.
        if let Some(w) = &job.wait_for {
            let bad = |m: String| Error {
                origin: job.origin.clone(),
                message: format!("job `{}`: wait_for={w}: {m}", job.section),
            };
            if *w == job.name {
                return Err(bad("a job cannot wait for itself".into()));
            }
            match set.jobs.iter().filter(|j| j.name == *w).count() {
                0 => return Err(bad("no earlier job has that name (fio: `waitee job unknown`)".into())),
                1 => {}
                n => return Err(bad(format!("{n} earlier jobs have that name; fio wants one"))),
            }
        }
        if !set.jobs.is_empty() && (job.stonewall || job.new_group) {
            group += 1;
        }
        if !set.jobs.is_empty() && job.stonewall {
            phase += 1;
        }
        set.jobs.push(job);
        set.groups.push(group);
        set.phases.push(phase);
    }
    if set.jobs.is_empty() {
        let origin = sections.last().map(|s| s.origin.clone()).unwrap_or(Origin::Arg { index: 0 });
        return Err(Error { origin, message: "no job: expected at least one section that is not [global]".into() });
    }
    Ok(set)
}

fn apply(job: &mut Job, o: &RawOption, warnings: &mut Vec<String>) -> Result<(), Error> {
    let bad = |m: String| Error { origin: o.origin.clone(), message: format!("{}: {m}", o.key) };
    let key = o.key.as_str();
    // A bare key is a flag; most options need a value.
    let flag = |v: &Option<String>| -> Result<bool, Error> {
        match v {
            None => Ok(true),
            Some(v) => value::boolean(v).map_err(bad),
        }
    };
    if let Some(profile) = super::fio_options::PROFILE_OPTIONS.iter().find(|p| p.1.contains(&key)).map(|p| p.0) {
        warnings.push(format!(
            "{}: {key}: accepted, no effect: an option of fio's `{profile}` profile, which acts only with \
             profile={profile} (not modelled)",
            o.origin
        ));
        return Ok(());
    }
    // An alias this reader does not list under its own name stands for its option.
    let alias_of = super::fio_options::FIO_ALIASES
        .iter()
        .find(|a| a.0 == key && !MODELLED.contains(&key) && !REPORTING_ONLY.contains(&key))
        .map(|a| a.1);
    let key = alias_of.unwrap_or(key);
    let named = alias_of.map_or(String::new(), |n| format!("fio's alias of `{n}`, "));
    if REPORTING_ONLY.contains(&key) {
        warnings.push(format!("{}: {key}: accepted, not modelled (it changes only fio's output)", o.origin));
        return Ok(());
    }
    if DATA_ONLY.contains(&key) {
        let what = if key.starts_with("verify") {
            "how the data read back is checked; the simulated disk holds no data, so every check passes"
        } else {
            "the bytes written, which the simulated disk does not look at"
        };
        warnings.push(format!("{}: {key}: accepted, no effect in the simulator (it changes only {what})", o.origin));
        if !job.data_options.iter().any(|k| k == key) {
            job.data_options.push(key.to_string());
        }
        return Ok(());
    }
    if !MODELLED.contains(&key) && super::fio_options::FIO_OPTIONS.contains(&key) {
        return Err(bad(format!(
            "{named}a fio option this model does not carry out; it changes the I/O fio issues, so a run without it \
             would not be this job"
        )));
    }
    if !MODELLED.contains(&key) {
        let hint = MODELLED
            .iter()
            .chain(REPORTING_ONLY)
            .chain(DATA_ONLY)
            .chain(super::fio_options::FIO_OPTIONS)
            .map(|k| (distance(k, key), *k))
            .min()
            .filter(|(d, _)| *d <= 2)
            .map(|(_, k)| format!("; did you mean `{k}`?"))
            .unwrap_or_default();
        return Err(Error { origin: o.origin.clone(), message: format!("unknown option `{key}`{hint}") });
    }
    let is_flag_opt = matches!(
        key,
        "time_based" | "norandommap" | "group_reporting" | "new_group" | "stonewall" | "wait_for_previous" | "exitall"
    );
    if is_flag_opt {
        let on = match &o.value {
            None => true,
            Some(v) => value::int_in(v, 0, u32::MAX as u64).map_err(bad)? != 0,
        };
        match key {
            "time_based" => job.time_based = on,
            "norandommap" => job.norandommap = on,
            "group_reporting" => job.group_reporting = on,
            "new_group" => job.new_group = on,
            "exitall" => job.exitall = on,
            _ => job.stonewall = on,
        }
        return Ok(());
    }
    if matches!(
        key,
        "direct"
            | "buffered"
            | "randrepeat"
            | "allrandrepeat"
            | "end_fsync"
            | "fsync_on_close"
            | "invalidate"
            | "create_on_open"
            | "unlink"
            | "replay_no_stall"
    ) {
        let Some(_) = &o.value else {
            return Err(bad("expected a value, 0 or 1 (fio: `requires an argument`)".into()));
        };
        let on = flag(&o.value)?;
        match key {
            "direct" => job.direct = on,
            "buffered" => job.direct = !on,
            "randrepeat" | "allrandrepeat" => job.randrepeat = on,
            "end_fsync" => job.end_fsync = on,
            "fsync_on_close" => job.fsync_on_close = on,
            "invalidate" => job.invalidate = on,
            "create_on_open" => job.create_on_open = on,
            "replay_no_stall" => job.replay_no_stall = on,
            _ => job.unlink = on,
        }
        return Ok(());
    }
    if o.value.is_none() && matches!(key, "write_lat_log" | "write_bw_log" | "write_iops_log") {
        // `str_write_bw_log_cb` & co.: without a prefix the log is named after the job
        // (set once the job's name is known, in `check`).
        let log = Some(String::new());
        match key {
            "write_lat_log" => job.write_lat_log = log,
            "write_bw_log" => job.write_bw_log = log,
            _ => job.write_iops_log = log,
        }
        return Ok(());
    }
    let Some(v) = o.value.as_deref() else {
        return Err(bad("expected a value (fio: `requires an argument`)".into()));
    };
    if v.is_empty() {
        return Err(bad("expected a value".into()));
    }
    let kb = job.kb_base;
    let size = |s: &str| value::size(s, kb);
    let u32_in = |min: u64, max: u64| value::int_in(v, min, max).map(|n| n as u32).map_err(bad);
    match key {
        "name" => job.name = v.to_string(),
        "wait_for" => job.wait_for = Some(v.to_string()),
        "number_ios" => job.number_ios = value::int_in(v, 0, u64::MAX >> 1).map_err(bad)?,
        "verify" => {
            const KINDS: &[&str] = &[
                "0",
                "md5",
                "crc64",
                "crc32",
                "crc32c-intel",
                "crc32c",
                "crc16",
                "crc7",
                "sha1",
                "sha256",
                "sha512",
                "sha3-224",
                "sha3-256",
                "sha3-384",
                "sha3-512",
                "xxhash",
                "meta",
                "pattern",
                "null",
            ];
            if !KINDS.contains(&v) {
                return Err(bad(format!("`{v}`: expected one of {}", KINDS.join(", "))));
            }
            job.verify = (v != "0").then(|| v.to_string());
        }
        "do_verify" => job.do_verify = flag(&o.value)?,
        "io_submit_mode" => match v {
            "inline" => job.offload = false,
            "offload" => job.offload = true,
            _ => return Err(bad(format!("`{v}`: expected inline or offload"))),
        },
        "zonemode" => match v {
            "none" => job.zonemode = Some(false),
            "strided" => job.zonemode = Some(true),
            "zbd" => {
                return Err(bad(
                    "`zbd`: a zoned block device's write pointers and zone resets are not modelled (no disk model \
                     is zoned)"
                        .into(),
                ));
            }
            _ => return Err(bad(format!("`{v}`: expected none, strided or zbd"))),
        },
        "zonesize" => job.zone[0] = size(v).and_then(positive).map_err(bad)?,
        "zonerange" => job.zone[1] = size(v).and_then(positive).map_err(bad)?,
        "zoneskip" => job.zone[2] = size(v).map_err(bad)?,
        "verify_backlog" => job.verify_backlog = value::int_in(v, 0, u32::MAX as u64).map_err(bad)?,
        "verify_backlog_batch" => job.verify_backlog_batch = value::int_in(v, 0, u32::MAX as u64).map_err(bad)?,
        "description" => job.description = Some(v.to_string()),
        "filename" => {
            // `:` separates names; `\:` is a colon in a name (fio's `get_next_str`).
            let mut names = Vec::new();
            let mut cur = String::new();
            let mut chars = v.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '\\' if chars.peek() == Some(&':') => cur.push(chars.next().expect("peeked")),
                    ':' => names.push(std::mem::take(&mut cur)),
                    c => cur.push(c),
                }
            }
            names.push(cur);
            if names.iter().any(String::is_empty) {
                return Err(bad(format!("`{v}`: expected file names separated by `:`")));
            }
            job.nrfiles = names.len() as u32;
            job.filename.extend(names);
        }
        "directory" => job.directory = v.split(':').map(str::to_string).collect(),
        "nrfiles" | "nr_files" => job.nrfiles = u32_in(1, 1 << 20)?,
        "size" => job.size = Some(value::size_or_percent(v, kb).map_err(bad)?),
        "io_size" | "io_limit" => job.io_size = Some(value::size_or_percent(v, kb).map_err(bad)?),
        "offset" | "fileoffset" => job.offset = value::size_or_percent(v, kb).map_err(bad)?,
        "offset_increment" => job.offset_increment = value::size_or_percent(v, kb).map_err(bad)?,
        "filesize" => {
            let (lo, hi) = match v.split_once('-') {
                Some((a, b)) => (size(a).map_err(bad)?, size(b).map_err(bad)?),
                None => {
                    let s = size(v).map_err(bad)?;
                    (s, s)
                }
            };
            if lo == 0 || lo > hi {
                return Err(bad(format!("`{v}`: expected a size of at least 1 byte, or low-high with low <= high")));
            }
            job.filesize = Some((lo, hi));
        }
        "rw" | "readwrite" => {
            let (p, post) = match v.split_once(':') {
                Some((p, n)) => (p, Some(n.trim())),
                None => (v, None),
            };
            job.rw = Pattern::NAMES.iter().find(|(n, _)| *n == p).map(|(_, p)| *p).ok_or_else(|| {
                let names: Vec<&str> = Pattern::NAMES.iter().map(|(n, _)| *n).collect();
                bad(format!("`{p}`: expected one of {}", names.join(", ")))
            })?;
            job.rw_postfix = match post {
                None => None,
                Some(n) => {
                    let (neg, digits) = match n.strip_prefix('-') {
                        Some(d) if !job.rw.is_random() => (true, d),
                        _ => (false, n),
                    };
                    let b = i64::try_from(size(digits).map_err(bad)?).map_err(|_| bad(format!("`{n}`: too large")))?;
                    if job.rw.is_random() && b == 0 {
                        return Err(bad(format!("`{v}`: expected at least 1 I/O per random offset")));
                    }
                    Some(if neg { -b } else { b })
                }
            };
        }
        "rwmixread" => job.rwmixread = u32_in(0, 100)? as u8,
        "rwmixwrite" => job.rwmixread = 100 - u32_in(0, 100)? as u8,
        "bs" | "blocksize" => {
            job.bs = value::per_direction(v, [4096; 3], |s| size(s).and_then(positive)).map_err(bad)?;
        }
        "bsrange" | "blocksize_range" => {
            let range = |s: &str| -> value::Result<(u64, u64)> {
                let (a, b) = s.split_once(['-', ':']).ok_or_else(|| format!("`{s}`: expected low-high"))?;
                let (a, b) = (positive(size(a)?)?, positive(size(b)?)?);
                Ok((a.min(b), a.max(b)))
            };
            job.bsrange = Some(value::per_direction(v, [(4096, 4096); 3], range).map_err(bad)?);
        }
        "bssplit" => job.bssplit = Some(bssplit(v, kb).map_err(bad)?),
        "blockalign" | "ba" => {
            job.blockalign = Some(value::per_direction(v, [4096; 3], |s| size(s).and_then(positive)).map_err(bad)?);
        }
        "random_distribution" => {
            let (absolute, list) = match (v.strip_prefix("zoned:"), v.strip_prefix("zoned_abs:")) {
                (Some(l), _) => (false, Some(l)),
                (_, Some(l)) => (true, Some(l)),
                _ => (false, None),
            };
            match list {
                Some(l) => {
                    job.zones = zones(l, absolute, kb).map_err(bad)?;
                    job.random_distribution = Distribution::Zoned { absolute };
                }
                None => job.random_distribution = distribution(v).map_err(bad)?,
            }
        }
        "randseed" => job.randseed = Some(v.parse().map_err(|_| bad(format!("`{v}`: expected a whole number")))?),
        "ioengine" => {
            job.ioengine = Engine::NAMES.iter().find(|(n, _)| *n == v).map(|(_, e)| *e).ok_or_else(|| {
                let names: Vec<&str> = Engine::NAMES.iter().map(|(n, _)| *n).collect();
                bad(format!("`{v}`: not a modelled engine; expected one of {}", names.join(", ")))
            })?;
        }
        "iodepth" => job.iodepth = u32_in(1, 65535)?,
        "iodepth_batch" | "iodepth_batch_submit" => job.iodepth_batch_submit = u32_in(0, 65535)?,
        "iodepth_low" => job.iodepth_low = u32_in(0, 65535)?,
        "fsync" => job.fsync = u32_in(0, u32::MAX as u64)?,
        "fdatasync" => job.fdatasync = u32_in(0, u32::MAX as u64)?,
        "thinktime" => job.thinktime_us = value::time_us(v, TimeUnit::Micros).map_err(bad)?,
        "thinktime_spin" => job.thinktime_spin_us = value::time_us(v, TimeUnit::Micros).map_err(bad)?,
        "thinktime_blocks" => job.thinktime_blocks = u32_in(1, u32::MAX as u64)?,
        "rate" => job.rate = value::per_direction(v, [0; 3], size).map_err(bad)?,
        "rate_iops" => {
            job.rate_iops = value::per_direction(v, [0; 3], |s| value::int_in(s, 0, u32::MAX as u64)).map_err(bad)?;
        }
        "rate_min" => job.rate_min = value::per_direction(v, [0; 3], size).map_err(bad)?,
        "rate_iops_min" => {
            job.rate_iops_min =
                value::per_direction(v, [0; 3], |s| value::int_in(s, 0, u32::MAX as u64)).map_err(bad)?;
        }
        "rate_cycle" => job.rate_cycle_ms = value::int_in(v, 1, u32::MAX as u64).map_err(bad)?,
        "rate_process" => {
            job.rate_process = match v {
                "linear" => RateProcess::Linear,
                "poisson" => RateProcess::Poisson,
                _ => return Err(bad(format!("`{v}`: expected linear or poisson"))),
            }
        }
        "exit_what" => {
            job.exit_what = match v {
                "group" => ExitWhat::Group,
                "stonewall" => ExitWhat::Stonewall,
                "all" => ExitWhat::All,
                _ => return Err(bad(format!("`{v}`: expected group, stonewall or all"))),
            }
        }
        "numjobs" => job.numjobs = u32_in(1, 4096)?,
        "startdelay" => job.startdelay_us = value::time_us(v, TimeUnit::Seconds).map_err(bad)?,
        "flow" => job.flow = u32_in(0, 1000)?,
        "flow_id" => job.flow_id = u32_in(0, u32::MAX as u64)?,
        "flow_sleep" => job.flow_sleep_us = value::int_in(v, 0, u32::MAX as u64).map_err(bad)?,
        "runtime" | "timeout" => job.runtime_us = value::time_us(v, TimeUnit::Seconds).map_err(bad)?,
        "ramp_time" => job.ramp_time_us = value::time_us(v, TimeUnit::Seconds).map_err(bad)?,
        "loops" => job.loops = u32_in(0, u32::MAX as u64)?.max(1),
        "prio" => job.prio = u32_in(0, 7)? as u8,
        "prioclass" => job.prioclass = u32_in(0, 3)? as u8,
        "cmdprio_percentage" => {
            let items: Vec<&str> = v.split(',').collect();
            if items.len() > 2 {
                return Err(bad(format!("`{v}`: expected read[,write] percentages")));
            }
            let r = value::int_in(items[0], 0, 100).map_err(bad)? as u8;
            let w = match items.get(1) {
                Some(w) => value::int_in(w, 0, 100).map_err(bad)? as u8,
                None => r,
            };
            job.cmdprio.percentage = [r, w];
        }
        "cmdprio_class" => {
            job.cmdprio.class = read_write(v, |s| value::int_in(s, 1, 3).map(|c| c as u8)).map_err(bad)?
        }
        "cmdprio" => job.cmdprio.level = read_write(v, |s| value::int_in(s, 0, 7).map(|c| c as u8)).map_err(bad)?,
        "cmdprio_bssplit" => job.cmdprio.bssplit = Some(cmdprio_bssplit(v, kb).map_err(bad)?),
        "log_prio" => job.log_prio = flag(&o.value)?,
        "log_offset" => job.log_offset = flag(&o.value)?,
        "ioscheduler" => job.ioscheduler = Some(v.to_string()),
        "kb_base" => job.kb_base = KbBase::parse(v).map_err(bad)?,
        "read_iolog" => {
            if v.contains(':') {
                return Err(bad(format!("`{v}`: one log per job (fio's `:` list for clones is not modelled)")));
            }
            job.read_iolog = Some(v.to_string());
        }
        "write_iolog" => job.write_iolog = Some(v.to_string()),
        "write_lat_log" => job.write_lat_log = Some(v.to_string()),
        "write_bw_log" => job.write_bw_log = Some(v.to_string()),
        "write_iops_log" => job.write_iops_log = Some(v.to_string()),
        // Only fio's defaults are modelled: a sample per I/O, a log file per job.
        "log_avg_msec" => {
            if value::int_in(v, 0, u32::MAX as u64).map_err(bad)? != 0 {
                return Err(bad(format!(
                    "`{v}`: averaged logs are not modelled; only 0 (a sample per I/O, fio's default)"
                )));
            }
        }
        "per_job_logs" => {
            if !value::boolean(v).map_err(bad)? {
                return Err(bad("0: one log shared by the jobs is not modelled; only 1 (fio's default)".into()));
            }
        }
        "replay_time_scale" => job.replay_time_scale = u32_in(1, 100_000)?,
        _ => unreachable!("every MODELLED option is handled: {key}"),
    }
    Ok(())
}

fn positive(n: u64) -> value::Result<u64> {
    if n == 0 { Err("expected at least 1 byte".into()) } else { Ok(n) }
}

/// `read,write,trim` lists (`str_split_parse`): one list serves all three directions, two
/// give read and write (trim takes write's).
fn per_direction<T: Clone>(v: &str, one: impl Fn(&str) -> value::Result<T>) -> value::Result<[T; 3]> {
    let parts: Vec<&str> = v.split(',').collect();
    match parts.as_slice() {
        [a] => {
            let l = one(a)?;
            Ok([l.clone(), l.clone(), l])
        }
        [a, b] => {
            let (r, w) = (one(a)?, one(b)?);
            Ok([r, w.clone(), w])
        }
        [a, b, c] => Ok([one(a)?, one(b)?, one(c)?]),
        _ => Err(format!("`{v}`: expected at most three lists: read,write,trim")),
    }
}

/// `read[,write]`: one value for both directions, or one each (a third, trim's, is
/// ignored, as fio's cmdprio options ignore trim).
fn read_write<T: Copy>(v: &str, one: impl Fn(&str) -> value::Result<T>) -> value::Result<[T; 2]> {
    let parts: Vec<&str> = v.split(',').collect();
    match parts.as_slice() {
        [a] => {
            let x = one(a)?;
            Ok([x, x])
        }
        [a, b] | [a, b, _] => Ok([one(a)?, one(b)?]),
        _ => Err(format!("`{v}`: expected read[,write]")),
    }
}

/// `cmdprio_bssplit=` (`split_parse_prio_ddir`, `parse_cmdprio_bssplit_entry`): per
/// direction (read,write; trim's list is ignored), `bs/perc` or `bs/perc/class/level`
/// entries separated by `:`; an entry of 0 % is dropped, the rest sorted by block size,
/// and a block size's percentages may add up to at most 100. fio clamps a class, level
/// or percentage out of range; here it is refused.
fn cmdprio_bssplit(v: &str, kb: KbBase) -> value::Result<[Vec<CmdPrioSplit>; 2]> {
    let one = |list: &str| -> value::Result<Vec<CmdPrioSplit>> {
        let mut out = Vec::new();
        for e in list.split(':').take_while(|e| !e.is_empty()) {
            let f: Vec<&str> = e.split('/').collect();
            let bs = value::size(f[0], kb).map_err(|m| format!("`{e}`: {m}"))?;
            let int = |s: &str, lo, hi, what: &str| value::int_in(s, lo, hi).map_err(|m| format!("`{e}`: {what}: {m}"));
            let perc = match f.get(1) {
                None | Some(&"") => 0,
                Some(p) => int(p, 0, 100, "percentage")? as u8,
            };
            let prio = match f.len() {
                1 | 2 => None,
                4 => Some((int(f[2], 0, 3, "class")? as u8, int(f[3], 0, 7, "level")? as u8)),
                _ => return Err(format!("`{e}`: expected bs/percentage or bs/percentage/class/level")),
            };
            if perc > 0 {
                out.push(CmdPrioSplit { bs, perc, prio });
            }
        }
        out.sort_by_key(|e| e.bs);
        for bs in out.iter().map(|e| e.bs) {
            let total: u32 = out.iter().filter(|e| e.bs == bs).map(|e| e.perc as u32).sum();
            if total > 100 {
                return Err(format!("`{list}`: the percentages for block size {bs} add up to {total}, more than 100"));
            }
        }
        Ok(out)
    };
    let parts: Vec<&str> = v.split(',').collect();
    match parts.as_slice() {
        [a] => {
            let l = one(a)?;
            Ok([l.clone(), l])
        }
        [a, b] | [a, b, _] => Ok([one(a)?, one(b)?]),
        _ => Err(format!("`{v}`: expected at most three lists: read,write,trim")),
    }
}

/// `bssplit=` (`str_bssplit_cb`): `bs/perc:bs/perc…`, per direction separated by commas;
/// an entry without a percentage (or with 0) shares what the others leave.
fn bssplit(v: &str, kb: KbBase) -> value::Result<[Vec<(u64, u8)>; 3]> {
    let one = |list: &str| -> value::Result<Vec<(u64, u8)>> {
        let mut out: Vec<(u64, Option<u8>)> = Vec::new();
        for e in list.split(':') {
            if e.is_empty() {
                break;
            }
            let (b, p) = match e.split_once('/') {
                Some((b, p)) => (b, Some(value::int_in(p, 0, 100)? as u8).filter(|&p| p > 0)),
                None => (e, None),
            };
            out.push((positive(value::size(b, kb)?)?, p));
        }
        if out.is_empty() || out.len() > 64 {
            return Err(format!("`{list}`: expected 1 to 64 entries bs/percentage separated by `:`"));
        }
        let sum: u32 = out.iter().filter_map(|e| e.1).map(u32::from).sum();
        let missing = out.iter().filter(|e| e.1.is_none()).count() as u32;
        if sum > 100 || (missing == 0 && sum != 100) {
            return Err(format!("`{list}`: the percentages add up to {sum}, expected 100"));
        }
        let share = (100 - sum).checked_div(missing).unwrap_or(0) as u8;
        Ok(out.into_iter().map(|(b, p)| (b, p.unwrap_or(share))).collect())
    };
    per_direction(v, one)
}

/// `random_distribution=zoned:` / `zoned_abs:`'s zones (`zone_split_ddir`): `access/size`
/// entries separated by `:`, lists per direction separated by `,` as in `bssplit`. The
/// access percentages must add up to 100. With `zoned`, a zone without a size (`20/`, or
/// a size of 0) shares the percentage the others leave; fio caps a size over 100 at 100
/// and gives a lone zone without a size no size at all (all its I/O at the first block),
/// both refused here. With `zoned_abs` each zone needs its size in bytes.
fn zones(v: &str, absolute: bool, kb: KbBase) -> value::Result<[Vec<(u8, u64)>; 3]> {
    let one = |list: &str| -> value::Result<Vec<(u8, u64)>> {
        let mut out: Vec<(u8, Option<u64>)> = Vec::new();
        for e in list.split(':') {
            if e.is_empty() {
                break;
            }
            let (a, size) = e.split_once('/').unwrap_or((e, ""));
            let access = value::int_in(a, 0, 100).map_err(|m| format!("`{e}`: access percentage: {m}"))? as u8;
            let size = match (absolute, size) {
                (true, "") => return Err(format!("`{e}`: expected access/size, a size in bytes for zoned_abs")),
                (true, s) => Some(positive(value::size(s, kb)?)?),
                (false, "") => None,
                (false, s) => Some(value::int_in(s, 0, 100).map_err(|m| format!("`{e}`: size percentage: {m}"))?)
                    .filter(|&p| p > 0),
            };
            out.push((access, size));
        }
        if out.is_empty() || out.len() > 256 {
            return Err(format!("`{list}`: expected 1 to 256 zones access/size separated by `:`"));
        }
        let access: u32 = out.iter().map(|e| e.0 as u32).sum();
        if access != 100 {
            return Err(format!("`{list}`: the access percentages add up to {access}, expected 100"));
        }
        let sized: u64 = out.iter().filter_map(|e| e.1).sum();
        let missing = out.iter().filter(|e| e.1.is_none()).count() as u64;
        if !absolute && sized > 100 {
            return Err(format!("`{list}`: the size percentages add up to {sized}, more than 100"));
        }
        if missing > 0 && out.len() == 1 {
            return Err(format!("`{list}`: a single zone needs its size (fio would give it none)"));
        }
        let share = (100 - sized.min(100)).checked_div(missing).unwrap_or(0);
        Ok(out.into_iter().map(|(a, s)| (a, s.unwrap_or(share))).collect())
    };
    per_direction(v, one)
}

fn distribution(v: &str) -> value::Result<Distribution> {
    let (name, arg) = match v.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (v, None),
    };
    if matches!(name, "zoned" | "zoned_abs") {
        return Err(format!("`{v}`: expected {name}:access/size:…"));
    }
    if name == "sequence" {
        return Err(format!("`{name}`: not modelled; expected random, zipf, pareto, normal, zoned or zoned_abs"));
    }
    // A second `:` gives the distribution's centre (fio 3.20+); not modelled.
    if arg.is_some_and(|a| a.contains(':')) {
        return Err(format!("`{v}`: a centre (second `:`) is not modelled"));
    }
    let num = |d: f64| -> value::Result<f64> {
        match arg {
            None => Ok(d),
            Some(a) => a.parse::<f64>().map_err(|_| format!("`{a}`: expected a number")),
        }
    };
    match name {
        "random" => Ok(Distribution::Random),
        "zipf" => {
            let theta = num(1.1)?;
            if theta == 1.0 || theta <= 0.0 {
                return Err(format!("zipf:{theta}: expected a theta > 0 other than 1.0"));
            }
            Ok(Distribution::Zipf { theta })
        }
        "pareto" => {
            let h = num(0.2)?;
            if !(h > 0.0 && h < 1.0) {
                return Err(format!("pareto:{h}: expected 0 < h < 1"));
            }
            Ok(Distribution::Pareto { h })
        }
        "normal" => {
            let dev = num(0.0)?;
            if !(0.0..100.0).contains(&dev) {
                return Err(format!("normal:{dev}: expected 0 <= dev < 100"));
            }
            Ok(Distribution::Normal { dev })
        }
        _ => Err(format!("`{name}`: expected random, zipf, pareto, normal, zoned or zoned_abs")),
    }
}

/// fio's fix-ups after a job's options (`fixup_options`) that the model depends on, and
/// the combinations fio refuses.
fn check(job: &mut Job, warnings: &mut Vec<String>) -> Result<(), Error> {
    let bad = |m: String| Error { origin: job.origin.clone(), message: format!("job `{}`: {m}", job.section) };
    for log in [&mut job.write_lat_log, &mut job.write_bw_log, &mut job.write_iops_log] {
        if log.as_deref() == Some("") {
            *log = Some(job.name.clone());
        }
    }
    // `fixup_options`: a `zonesize` alone means strided zones; they work with one file
    // only (fio turns them off for more); `zonerange` defaults to `zonesize`.
    let strided = job.zonemode.unwrap_or(job.zone[0] > 0);
    job.strided = None;
    if strided {
        if job.zone[0] == 0 {
            return Err(bad("zonemode=strided needs zonesize".into()));
        }
        let files = if job.filename.is_empty() { job.nrfiles as usize } else { job.filename.len() };
        if files > 1 {
            warnings.push(format!(
                "{}: job `{}`: strided zones work with one file; with {files}, fio turns them off, and so does this",
                job.origin, job.section
            ));
        } else {
            let range = if job.zone[1] == 0 { job.zone[0] } else { job.zone[1] };
            job.strided = Some(Strided { size: job.zone[0], range, skip: job.zone[2] });
        }
    }
    if job.cmdprio.active() || job.cmdprio.bssplit.is_some() {
        if !matches!(job.ioengine, Engine::Libaio | Engine::IoUring) {
            return Err(bad(format!(
                "cmdprio_*: options of the libaio and io_uring engines, not of ioengine={}",
                job.ioengine.name()
            )));
        }
        if job.cmdprio.percentage != [0, 0] && job.cmdprio.bssplit.is_some() {
            return Err(bad("cmdprio_percentage and cmdprio_bssplit options are mutually exclusive".into()));
        }
    }
    if job.rate.iter().any(|&r| r > 0) && job.rate_iops.iter().any(|&r| r > 0) {
        return Err(bad("rate and rate_iops both set: fio takes one of them".into()));
    }
    if job.iodepth_batch_submit == 0 || job.iodepth_batch_submit > job.iodepth {
        job.iodepth_batch_submit = job.iodepth;
    }
    if job.iodepth_low == 0 || job.iodepth_low > job.iodepth {
        job.iodepth_low = job.iodepth;
    }
    if job.time_based && job.runtime_us == 0 {
        warnings
            .push(format!("{}: job `{}`: time_based without runtime is ignored, as fio does", job.origin, job.section));
        job.time_based = false;
    }
    if let Some(SizeOrPercent::Bytes(s)) = job.size
        && s < job.min_bs()
    {
        return Err(bad(format!("size {s} is smaller than the block size {}", job.min_bs())));
    }
    if job.thinktime_spin_us > job.thinktime_us {
        job.thinktime_spin_us = job.thinktime_us;
    }
    // A non-uniform distribution, or an alignment other than the block size, turns the
    // random map off (fio's `fixup_options`).
    if job.random_distribution != Distribution::Random {
        job.norandommap = true;
    }
    if job.randseed.is_some() {
        job.randrepeat = false;
    }
    if job.random_distribution == (Distribution::Zoned { absolute: true })
        && let Some((_, len)) = job.file_region(0)
    {
        for (d, z) in job.zones.iter().take(2).enumerate() {
            // The end of the last zone that takes accesses (fio checks it when the zone is drawn).
            let mut end = 0;
            let mut reach = 0;
            for &(access, size) in z {
                end += size;
                if access > 0 {
                    reach = end;
                }
            }
            if reach > len {
                return Err(bad(format!(
                    "random_distribution=zoned_abs: the {} zones reach {reach} bytes, past the file's {len} (fio: \
                     `zoned_abs sizes exceed file size`)",
                    ["read", "write"][d]
                )));
            }
        }
    }
    Ok(())
}

/// Edit distance, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::super::jobfile::{Context, parse_args, parse_file};
    use super::*;
    use std::path::Path;

    fn jobs(text: &str) -> Result<JobSet, Error> {
        let env = |_: &str| None;
        let read = |_: &Path, _: u64| -> std::io::Result<String> { Err(std::io::ErrorKind::NotFound.into()) };
        let ctx = Context { pagesize: 4096, mb_memory: 256, ncpus: 1, env: &env, read: &read };
        build(&parse_file(Path::new("t.fio"), text, &ctx)?)
    }

    #[test]
    fn globals_reach_the_jobs_below_them() {
        let s = jobs(
            "[global]\nioengine=libaio\ndirect=1\nbs=16k\n[a]\nrw=randread\niodepth=32\n[global]\nbs=64k\n[b]\nrw=write\nstonewall\n",
        )
        .unwrap();
        assert_eq!(s.jobs.len(), 2);
        let (a, b) = (&s.jobs[0], &s.jobs[1]);
        assert_eq!(
            (a.ioengine, a.direct, a.bs[0], a.rw, a.iodepth),
            (Engine::Libaio, true, 16384, Pattern::RandRead, 32)
        );
        assert_eq!((b.bs[0], b.rw, b.iodepth, b.direct), (65536, Pattern::Write, 1, true));
        assert_eq!(s.groups, [0, 1], "stonewall starts a new group");
        assert_eq!(s.phases, [0, 1], "and waits for the one before");
        let s = jobs("[a]\nsize=1m\n[b]\nnew_group\nsize=1m\n").unwrap();
        assert_eq!(
            (s.groups, s.phases),
            (vec![0, 1], vec![0, 0]),
            "new_group reports apart but starts with the others"
        );
        assert_eq!(a.iodepth_batch_submit, 1);
        assert_eq!(a.iodepth_low, 32, "iodepth_low 0 means iodepth");
    }

    #[test]
    fn fio_defaults_and_kb_base_first() {
        let s = jobs("[a]\nsize=4KiB\nkb_base=1000\n").unwrap();
        let a = &s.jobs[0];
        assert_eq!(a.size, Some(SizeOrPercent::Bytes(4096)), "kb_base applies before the other options");
        assert_eq!((a.ioengine, a.iodepth, a.bs, a.rw, a.rwmixread), (Engine::Psync, 1, [4096; 3], Pattern::Read, 50));
        assert!(a.randrepeat && a.invalidate && !a.direct);
        let s = jobs("[a]\nrw=randrw:8\nrwmixwrite=30\nrandom_distribution=zipf:1.2\n").unwrap();
        let a = &s.jobs[0];
        assert_eq!((a.rw, a.rw_postfix, a.rwmixread), (Pattern::RandRw, Some(8), 70));
        assert_eq!(a.random_distribution, Distribution::Zipf { theta: 1.2 });
        assert!(a.norandommap, "a non-uniform distribution turns the random map off, as in fio");
    }

    #[test]
    fn bssplit_fills_the_unspecified_shares() {
        let s = jobs("[a]\nbssplit=4k/50:8k:16k,64k\n").unwrap();
        let b = s.jobs[0].bssplit.clone().unwrap();
        assert_eq!(b[0], [(4096, 50), (8192, 25), (16384, 25)]);
        assert_eq!(b[1], [(65536, 100)]);
        assert_eq!(b[2], b[1]);
        assert!(jobs("[a]\nbssplit=4k/60:8k/60\n").unwrap_err().message.contains("add up to 120"));
    }

    /// fio's `global options` and `job options`: each section's options as written; a
    /// command-line job lists its name first.
    #[test]
    fn options_are_kept_as_written() {
        let s = jobs("[global]\nbs=4k\ntime_based\n[a]\nsize=1m\nrw=read\n").unwrap();
        let own = |v: &[(&str, &str)]| v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        assert_eq!(s.global_options, own(&[("bs", "4k"), ("time_based", "")]));
        assert_eq!(s.jobs[0].options, own(&[("size", "1m"), ("rw", "read")]));
        let a: Vec<String> = ["--bs=8k", "--name=c", "--size=2m"].iter().map(|s| s.to_string()).collect();
        let s = build(&super::super::jobfile::parse_args(&a, 1).unwrap()).unwrap();
        assert_eq!(
            (s.global_options, s.jobs[0].options.clone()),
            (own(&[("bs", "8k")]), own(&[("name", "c"), ("size", "2m")]))
        );
    }

    /// An option that changes only the bytes written is accepted with a note and listed
    /// for the real executor, which refuses it; fio's long option names are options.
    #[test]
    fn data_only_options_are_noted_and_listed() {
        let s =
            jobs("[global]\ndedupe_working_set_percentage=50\n[a]\nsize=1m\nbuffer_compress_percentage=50\n").unwrap();
        assert_eq!(s.jobs[0].data_options, ["dedupe_working_set_percentage", "buffer_compress_percentage"]);
        assert!(s.warnings.iter().all(|w| w.contains("no effect in the simulator")), "{:?}", s.warnings);
        let e = jobs("[a]\nsize=1m\niodepth_batch_complete_min=4\n").unwrap_err();
        assert!(e.to_string().contains("a fio option this model does not carry out"), "{e}");
    }

    /// `cmdprio_bssplit` as fio parses it (zero shares dropped, sorted by block size, an
    /// unset class meaning RT); the options need libaio or io_uring, and
    /// `cmdprio_percentage` excludes `cmdprio_bssplit`.
    #[test]
    fn cmdprio_options_read_as_fio_reads_them() {
        let j = &jobs("[a]\nsize=1m\nioengine=libaio\nrw=randrw\ncmdprio_bssplit=1m/0:64k/25/1/1:64k/75/3/2,64k/10\n")
            .unwrap()
            .jobs[0];
        let b = j.cmdprio.bssplit.as_ref().unwrap();
        assert_eq!(b[0].len(), 2, "the 0 % entry is dropped");
        assert_eq!((b[0][0].bs, b[0][0].perc, b[0][0].prio), (65536, 25, Some((1, 1))));
        assert_eq!(j.cmdprio.values(false), [(1, 1), (3, 2)]);
        assert_eq!(j.cmdprio.values(true), [(1, 0)], "no class: RT, level 0");
        assert_eq!(j.cmdprio.share(false, 65536), 100);
        assert_eq!(j.cmdprio.share(false, 4096), 0);
        assert_eq!(j.cmdprio.pick(false, 65536, 24), Some((1, 1)));
        assert_eq!(j.cmdprio.pick(false, 65536, 25), Some((3, 2)));
        assert_eq!(j.cmdprio.pick(true, 65536, 10), None);
        let e = jobs("[a]\nsize=1m\ncmdprio_percentage=10\n").unwrap_err();
        assert!(e.to_string().contains("options of the libaio and io_uring engines, not of ioengine=psync"), "{e}");
        let e = jobs("[a]\nsize=1m\nioengine=libaio\ncmdprio_percentage=10\ncmdprio_bssplit=4k/10\n").unwrap_err();
        assert!(e.to_string().contains("mutually exclusive"), "{e}");
        let e = jobs("[a]\nsize=1m\nioengine=libaio\ncmdprio_bssplit=4k/60:4k/50\n").unwrap_err();
        assert!(e.to_string().contains("add up to 110, more than 100"), "{e}");
        let e = jobs("[a]\nsize=1m\nioengine=libaio\ncmdprio_bssplit=4k/50/4/0\n").unwrap_err();
        assert!(e.to_string().contains("class"), "{e}");
    }

    #[test]
    fn refusals_name_the_file_line_and_option() {
        let e = jobs("[a]\nrw=randread\niodeph=4\n").unwrap_err();
        assert_eq!(e.to_string(), "t.fio:3: unknown option `iodeph`; did you mean `iodepth`?");
        let e = jobs("[a]\nverify_only=1\n").unwrap_err();
        assert!(e.to_string().starts_with("t.fio:2: verify_only: a fio option this model does not carry out"), "{e}");
        let e = jobs("[a]\nrandom_distribution=sequence:1:2\n").unwrap_err();
        assert!(e.to_string().contains("`sequence`: not modelled"), "{e}");
        // An alias stands for its option; a profile's option is accepted with a note.
        let e = jobs("[a]\nss=iops:10%\n").unwrap_err();
        assert_eq!(
            e.to_string().split(';').next().unwrap(),
            "t.fio:2: ss: fio's alias of `steadystate`, a fio option this model does not carry out"
        );
        assert_eq!(jobs("[a]\nsize=1m\nratemin=1m\n").unwrap().jobs[0].rate_min, [1 << 20; 3]);
        let s = jobs("[global]\nthreads=1\n[a]\nsize=1m\n").unwrap();
        assert!(
            s.warnings[0].contains("threads: accepted, no effect: an option of fio's `tiobench` profile"),
            "{:?}",
            s.warnings
        );
        // wait_for names one earlier job, not the job itself.
        let e = jobs("[a]\nsize=1m\n[b]\nsize=1m\nwait_for=c\n").unwrap_err();
        assert!(e.to_string().starts_with("t.fio:3: job `b`: wait_for=c: no earlier job"), "{e}");
        let e = jobs("[a]\nsize=1m\nwait_for=a\n").unwrap_err();
        assert!(e.to_string().contains("a job cannot wait for itself"), "{e}");
        // An engine not modelled is named before that engine's options.
        let e = jobs("[a]\nfilename_format=x\nioengine=rdma\n").unwrap_err();
        assert!(e.to_string().starts_with("t.fio:3: ioengine: `rdma`: not a modelled engine"), "{e}");
        let s = jobs("[a]\nrw=read:-8k\n").unwrap();
        assert_eq!(
            s.jobs[0].rw_postfix,
            Some(-8192),
            "a negative skip walks backwards, as fio's backwards-read example"
        );
        let e = jobs("[a]\nioengine=splice\n").unwrap_err();
        assert!(e.to_string().contains("not a modelled engine"), "{e}");
        let e = jobs("[a]\niodepth=0\n").unwrap_err();
        assert!(e.to_string().contains("out of range: expected 1..=65535"), "{e}");
        let e = jobs("[a]\ndirect=true\n").unwrap_err();
        assert!(e.to_string().contains("expected 0 or 1"), "{e}");
        let e = jobs("[a]\nrate=1m\nrate_iops=100\n").unwrap_err();
        assert!(e.to_string().contains("rate and rate_iops"), "{e}");
        assert!(jobs("[global]\nbs=4k\n").unwrap_err().message.contains("no job"));
        let s = jobs("[a]\nclat_percentiles=1\ntime_based\n").unwrap();
        assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
    }

    #[test]
    fn command_line_jobs() {
        let args: Vec<String> = ["--ioengine=libaio", "--name=r", "--rw=randread", "--bs=8k", "--name=w", "--rw=write"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let s = build(&parse_args(&args, 1).unwrap()).unwrap();
        assert_eq!(
            s.jobs.iter().map(|j| (j.name.as_str(), j.ioengine, j.bs[0])).collect::<Vec<_>>(),
            [("r", Engine::Libaio, 8192), ("w", Engine::Libaio, 4096)]
        );
    }
}
