//! Host and CPU profiles: every calibration constant of the host model lives here, with
//! where it came from. Code paths contain no workload- or scheduler-specific numbers.

use iosched_core::Duration;

/// The host: memory and VM settings (Linux 2.5.6x / 2.6.x defaults unless noted).
#[derive(Clone, Debug, PartialEq)]
pub struct HostProfile {
    pub name: &'static str,
    /// Physical memory.
    pub mem_bytes: u64,
    /// Memory not available to the page cache: kernel text and data, slab, page tables,
    /// the processes' own memory. The seed report's vmstat shows ~225 MB of cache on a
    /// 256 MB machine, so about 30 MB.
    pub reserve_bytes: u64,
    /// `vm.dirty_background_ratio` (%): pdflush starts writing back above this.
    pub dirty_background_ratio: u32,
    /// `vm.dirty_ratio` (%): writers are throttled above this (40 in 2.5.61–2.6.21).
    pub dirty_ratio: u32,
    /// `vm.dirty_expire_centisecs`: data older than this is written by the periodic flush.
    pub dirty_expire: Duration,
    /// `vm.dirty_writeback_centisecs`: period of the periodic flush (wb_kupdate).
    pub writeback_interval: Duration,
    /// Maximum read-ahead (`read_ahead_kb`, 128 KiB = 32 pages).
    pub readahead_max_pages: u64,
    /// `MMAP_READAROUND`: pages read around an mmap fault.
    pub mmap_readaround_pages: u64,
    /// pdflush threads (2.5/2.6 keep 2 to 8; two are enough to carry background and
    /// periodic writeback concurrently).
    pub pdflush_threads: u32,
    /// Which kernel's read-ahead algorithm.
    pub readahead: Readahead,
    /// Which kernel's request-slot allocation the block queue follows (the queue's
    /// `request_alloc` default on this host; a scheduler spec may still set it).
    pub request_alloc: iosched_core::RequestAlloc,
    /// Whether a buffered `write()` into a cached page marks it accessed (moves it to the
    /// hot end of the LRU). 2.6's `generic_file_buffered_write` calls
    /// `mark_page_accessed`; 2.5's `generic_file_write` only sets `PG_referenced`, which
    /// page reclaim ignores for unmapped page-cache pages, so a rewritten page keeps its
    /// place and is reclaimed as early as before.
    pub write_marks_accessed: bool,
    /// How page reclaim orders the page cache.
    pub lru: Lru,
    /// Who frees page-cache pages, and how.
    pub reclaim: Reclaim,
    /// Page-cache memory that running programs have mapped and keep using — the code and
    /// data they touch between two reclaim passes, so its ptes are always found young:
    /// part of the cache, never reclaimed. On the 2.5 lists these pages stay on the active
    /// list for good (`refill_inactive_zone` returns a referenced mapped page to it),
    /// which sets how fast the unmapped active pages are deactivated: with none, an
    /// indirect block a writer stopped using is dropped a cache's worth of streaming
    /// later; with a few MB, after about two (see `docs/simulator.md`). Mapped pages
    /// nobody touches are not modelled (2.5.64 deactivates them when kswapd's priority
    /// falls to 1, `swap_tendency` ≥ 100, and they are then reclaimed): count them in the
    /// reserve.
    pub mapped_bytes: u64,
    /// Whether ext2 "colours" a file's first block by the writing task's pid
    /// (`ext2_find_near`: the group's start plus `pid % 16` sixteenths of the group), so
    /// that files written at once by different tasks start apart. 2.5.64 does: the
    /// colouring came in with "ext2: smarter block allocation startup" (2002-12-21,
    /// in 2.5.53), and 2.5.64's `fs/ext2/inode.c` has it; so does 2.6.20's (also
    /// 2.6.13 to 2.6.23). 2.4 and 2.5.2 did not (their `ext2_find_near` returns the
    /// group's start).
    pub ext2_colour: bool,
    /// Whether `lock_page` waits exclusively. 2.6.20's `__lock_page` does
    /// (`__wait_on_bit_lock` → `prepare_to_wait_exclusive`): a sleeper queues at the tail
    /// and each unlock hands the page to the next, so readers waiting for a page being
    /// read in go on in the order they came. 2.5.64's `__lock_page` sleeps like any
    /// other waiter (`prepare_to_wait`, at the head), so they go on newest first.
    pub lock_page_exclusive: bool,
    /// Who writes dirty pages back, and how writers are throttled.
    pub writeback: Writeback,
    /// Whether file I/O reaches the queue one 4 KiB buffer at a time (2.4's buffer heads:
    /// `block_read_full_page`, `write_some_buffers` and `brw_kiovec` call `submit_bh` per
    /// block and the elevator merges them) rather than as multi-page bios (2.5/2.6).
    pub buffer_heads: bool,
    /// The driver's plug rule on this host (the queue's `unplug` default).
    pub unplug: iosched_core::Unplug,
    /// Request slots per direction the driver gives the queue, if not the queue's default
    /// of 128 (2.4: `queue_nr_requests` = 128 for both directions together).
    pub nr_requests: Option<u32>,
    /// The largest request the host's IDE driver lets the queue build, where it is below
    /// what the disk profile allows: 2.4.20 and 2.4.21's `ide-probe.c` (`init_gendisk`)
    /// set `max_sectors[]` to `hwif->rqsize`, which only a few chipset drivers set, or
    /// else 128 sectors (64 KiB); 2.5.64's gives the queue 255.
    pub ide_max_sectors: Option<u32>,
    /// Whether a policy's kick unplugs the queue (the queue's `kick_unplug`): 2.6.20's
    /// `blk_start_queueing`; 2.5.64's AS work handler runs the request function, which a
    /// plugged IDE queue ignores; 2.4's elevator never kicks.
    pub kick_unplug: bool,
    /// The file system mounted on the disk: ext2 on the 2003 hosts, ext3 (data=ordered)
    /// on the 2007 one (`--fs`).
    pub fs: FsKind,
    /// How often a `write()` dirties its inode for the new mtime. `None`: every write
    /// (2.4's `generic_file_write` marks it dirty unconditionally; 2.5.64's
    /// `inode_update_time` compares jiffy-resolution times, so every write differs).
    /// `Some(g)`: only when the time, in steps of `g`, moved (2.6.20's `file_update_time`
    /// with `current_fs_time`; ext2 and ext3 keep the superblock's `s_time_gran` of 1 s);
    /// a write that extends the file dirties it anyway (`generic_commit_write`).
    pub mtime_granularity: Option<Duration>,
}

/// The file system the host mounts. Both lay files out as `fs.rs` does (ext3 is ext2's
/// on-disk format with a journal); ext3 adds the journal of `host/journal.rs`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FsKind {
    Ext2,
    Ext3(Ext3),
}

/// ext3's mount options and the journal `mke2fs -j` made (2.6.20 `fs/ext3/super.c`,
/// e2fsprogs `lib/ext2fs/mkjournal.c`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ext3 {
    /// `data=`: how file data is ordered against the journal.
    pub data: DataMode,
    /// `commit=`: the transaction's age at which kjournald commits it
    /// (`JBD_DEFAULT_MAX_COMMIT_AGE`, 5 s).
    pub commit: Duration,
    /// Reads update the inode's access time (`touch_atime`); 2.6.20 mounts without
    /// `noatime` do (relatime is an option there, not a default). The time has a
    /// one-second granularity (`s_time_gran`), so a file read again within the same
    /// second is not dirtied again.
    pub atime: bool,
    /// Where the journal's blocks are.
    pub journal_at: JournalAt,
    /// The journal's size in MiB (`mke2fs -J size=`), if not mke2fs's default for the
    /// file system's size (`Fs::default_journal_blocks`).
    pub journal_mb: Option<u64>,
}

/// `data=` (`Documentation/filesystems/ext3.txt`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DataMode {
    /// The default: a transaction's data blocks are written (by kjournald, if nobody
    /// else has) before its commit block.
    Ordered,
    /// Only metadata is journaled; data goes out by ordinary writeback, unordered.
    Writeback,
}

/// Where `mke2fs -j` placed the journal inode's blocks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum JournalAt {
    /// From the first block of the group with the most free blocks among the three
    /// around the file system's middle (`write_journal_inode`'s goal).
    Middle,
    /// From the first free block of group 0 (a goal of 0).
    Start,
}

impl Ext3 {
    /// ext3's defaults in 2.6.20: data=ordered, commit=5, atime on; the journal in the
    /// middle.
    pub const DEFAULT: Ext3 = Ext3 {
        data: DataMode::Ordered,
        commit: Duration::from_secs(5),
        atime: true,
        journal_at: JournalAt::Middle,
        journal_mb: None,
    };
}

impl FsKind {
    /// `ext2`, or
    /// `ext3[:data=ordered|writeback,commit=SECONDS,atime=0|1,journal_at=middle|start,journal_mb=MIB]`.
    /// A key given twice or unknown, or a value out of range, is refused.
    pub fn by_name(spec: &str) -> Result<Self, String> {
        let (name, settings) = split_spec(spec, "file system", "key=value", "ext3:data=writeback")?;
        match name {
            "ext2" if settings.is_empty() => return Ok(FsKind::Ext2),
            "ext2" => return Err(format!("file system `{spec}`: ext2 has no settings (they are ext3's)")),
            "ext3" => {}
            _ => return Err(format!("unknown file system `{name}`; available: ext2, ext3")),
        }
        let mut e = Ext3::DEFAULT;
        for (k, v) in settings {
            let bad = |what: &str| format!("file system `{spec}`: {k}={v}: expected {what}");
            match k {
                "data" => {
                    e.data = match v {
                        "ordered" => DataMode::Ordered,
                        "writeback" => DataMode::Writeback,
                        "journal" => return Err(bad("ordered or writeback (data=journal is not modelled)")),
                        _ => return Err(bad("ordered or writeback")),
                    }
                }
                "commit" => {
                    // ext3's parse_options: commit=0 means the default; 2.6.20 takes any
                    // number of seconds. Bounded here to a day so a typo cannot park data.
                    let n: u64 = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=86_400).contains(n))
                        .ok_or_else(|| bad("whole seconds, 1..=86400"))?;
                    e.commit = Duration::from_secs(n);
                }
                "atime" => {
                    e.atime = match v {
                        "1" => true,
                        "0" => false,
                        _ => return Err(bad("0 (noatime) or 1")),
                    }
                }
                "journal_at" => {
                    e.journal_at = match v {
                        "middle" => JournalAt::Middle,
                        "start" => JournalAt::Start,
                        _ => return Err(bad("middle or start")),
                    }
                }
                "journal_mb" => {
                    // mke2fs 1.39's -J size= limits: 1024 to 102400 blocks of 4 KiB.
                    let n: u64 =
                        v.parse().ok().filter(|n| (4..=400).contains(n)).ok_or_else(|| bad("whole MiB, 4..=400"))?;
                    e.journal_mb = Some(n);
                }
                _ => {
                    return Err(format!(
                        "file system `{spec}`: unknown key `{k}`; ext3's keys are data, commit, atime, journal_at and journal_mb"
                    ));
                }
            }
        }
        Ok(FsKind::Ext3(e))
    }

    /// `ext2`, `ext3` or `ext3 (data=writeback, commit=30 s, noatime)`: what differs from
    /// the defaults.
    pub fn describe(&self) -> String {
        match self {
            FsKind::Ext2 => "ext2".into(),
            FsKind::Ext3(e) => {
                let mut d = Vec::new();
                if e.data == DataMode::Writeback {
                    d.push("data=writeback".to_string());
                }
                if e.commit != Ext3::DEFAULT.commit {
                    d.push(format!("commit={} s", e.commit.as_secs_f64()));
                }
                if !e.atime {
                    d.push("noatime".into());
                }
                if e.journal_at == JournalAt::Start {
                    d.push("journal at the start".into());
                }
                if let Some(mb) = e.journal_mb {
                    d.push(format!("{mb} MiB journal"));
                }
                if d.is_empty() { "ext3".into() } else { format!("ext3 ({})", d.join(", ")) }
            }
        }
    }
}

/// Dirty-page writeback (see `host/page_writeback.rs`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Writeback {
    /// 2.5.6x/2.6 (`mm/page-writeback.c`, `mm/pdflush.c`): `dirty_background_ratio` and
    /// `dirty_ratio` of memory, `balance_dirty_pages`, pdflush and `wb_kupdate`.
    Pdflush,
    /// 2.4.19 to 2.4.22 (`fs/buffer.c`: `balance_dirty_state`, `bdflush`, `kupdate`), with
    /// its `bdf_prm` defaults as percentages of `nr_free_buffer_pages()` (the page cache
    /// and free memory): above `nfract` % dirty a new dirty buffer wakes bdflush, which
    /// writes the oldest dirty buffers, `NRSYNC` = 32 at a time, until fewer than
    /// `nfract_stop` % are dirty; above `nfract_sync` % the writer itself writes 32 after
    /// each buffer it dirties. kupdated wakes every `interval` (the profile's
    /// `writeback_interval`), writes the buffers dirty for longer than `age_buffer` (the
    /// profile's `dirty_expire`) and runs `tq_disk`.
    Bdflush24 { nfract: u32, nfract_sync: u32, nfract_stop: u32 },
}

/// Page reclaim: who frees pages and when (see `host.rs` `cache_add`, `step_kswapd`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reclaim {
    /// The allocating task frees one clean page when the cache is full and never writes
    /// dirty pages back: a simplification (on `linux-2.6`, whose single list is one too).
    OnDemand,
    /// 2.5.6x (`mm/page_alloc.c`, `mm/vmscan.c`): the zone keeps `pages_min` / `pages_low`
    /// / `pages_high` free pages. An allocation below `pages_low` wakes kswapd, which
    /// reclaims up to `pages_high` over falling priorities, napping after each pass; one
    /// below `pages_min` reclaims itself (32 pages a pass, `blk_congestion_wait` between
    /// passes). Reclaim writes back the dirty pages it meets — kswapd and a task in
    /// `write()` whatever the queue's state, other tasks only to a queue that is not
    /// write-congested — and passes over pages under writeback. The refill of the inactive
    /// list is counted per `shrink_zone` call, so kswapd's large calls deactivate active
    /// pages more slowly per page freed than direct reclaim's 32-page calls. Needs
    /// [`Lru::ActiveInactive25`].
    Kswapd25 { pages_min: u64, pages_low: u64, pages_high: u64 },
}

impl Reclaim {
    /// 2.5.6x's watermarks for a machine with `mem_bytes` (`free_area_init_core`): for the
    /// normal zone (memory above the 16 MiB DMA zone, up to 896 MiB), `pages_min` is its
    /// pages / 128 (`zone_balance_ratio`) clamped to 20..=255, `pages_low` twice that,
    /// `pages_high` three times. The DMA zone's few pages are not modelled.
    pub fn linux25(mem_bytes: u64) -> Self {
        let normal = (mem_bytes.min(896 << 20).saturating_sub(16 << 20)) / 4096;
        let min = (normal / 128).clamp(20, 255);
        Reclaim::Kswapd25 { pages_min: min, pages_low: 2 * min, pages_high: 3 * min }
    }
}

/// Page-cache reclaim order (see `cache.rs`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Lru {
    /// One list by creation and last access: a simplification standing for 2.6's
    /// active/inactive pair (used-once pages behave the same on both).
    Single,
    /// 2.5.6x's active and inactive lists: `mark_page_accessed` activates a page touched
    /// twice, reclaim takes the inactive tail, and `refill_inactive_zone` moves active
    /// pages back at the rate `shrink_zone` sets for direct reclaim's 32-page calls (see
    /// `cache.rs`).
    ActiveInactive25,
}

/// Read-ahead algorithm (see `readahead.rs`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Readahead {
    /// Linux 2.5.4x–2.5.6x: one window in flight per sequential reader.
    Linux25,
    /// Linux 2.6.10–2.6.22: current and ahead windows, skipped when the queue is congested.
    Linux26,
    /// Linux 2.4.20/2.4.21: `generic_file_readahead`'s per-file window (`Ra24`).
    Linux24,
}

impl HostProfile {
    /// A 2003 Linux 2.5.6x desktop (both seed reports ran 2.5.6x kernels on 256 MB).
    pub fn linux_2003(mem_bytes: u64) -> Self {
        HostProfile {
            name: "linux-2.5",
            mem_bytes,
            reserve_bytes: (mem_bytes / 8).clamp(16 << 20, 64 << 20) - (2 << 20),
            dirty_background_ratio: 10,
            dirty_ratio: 40,
            dirty_expire: Duration::from_secs(30),
            writeback_interval: Duration::from_secs(5),
            readahead_max_pages: 32,
            mmap_readaround_pages: 16,
            pdflush_threads: 2,
            readahead: Readahead::Linux25,
            request_alloc: iosched_core::RequestAlloc::V2_5,
            write_marks_accessed: false,
            lru: Lru::ActiveInactive25,
            reclaim: Reclaim::linux25(mem_bytes),
            // An estimate for a 2003 X11 desktop at work (the tiobench report was mailed
            // from Mozilla on X11; the X server, window manager, terminal and the
            // benchmark's own code in use); the seed reports give no figure. Results with
            // 0–16 MiB in docs/workloads.md: claim 4 of #4 depends on it (AS-8192 reads
            // indirect blocks with 1 MiB or less).
            mapped_bytes: 8 << 20,
            ext2_colour: true,
            lock_page_exclusive: false,
            writeback: Writeback::Pdflush,
            buffer_heads: false,
            unplug: iosched_core::Unplug::Timer,
            nr_requests: None,
            ide_max_sectors: None,
            kick_unplug: false,
            // 2.5.64's inode_update_time: jiffy timestamps, so every write() dirties.
            mtime_granularity: None,
            // The read-many report's cover message names ext2 for its test box
            // (20030220212304.4712fee9.akpm@digeo.com); the tiobench report does not say,
            // and keeps the same. `--fs ext3` runs either with a journal.
            fs: FsKind::Ext2,
        }
    }

    /// A 2003 Linux 2.4.21-pre4 host (the read-many report's first kernel), from that
    /// tree's `mm/filemap.c`, `fs/buffer.c` and `drivers/block/ll_rw_blk.c` (read in
    /// 2.4.20 and later 2.4 trees, which -pre4 sits between). What is not 2.4's is the
    /// 2.5 host's and named in `docs/simulator.md`.
    pub fn linux_2003_24(mem_bytes: u64) -> Self {
        HostProfile {
            name: "linux-2.4",
            // 2.4's bdf_prm: kupdate every 5 s, buffers written once 30 s old.
            dirty_expire: Duration::from_secs(30),
            writeback_interval: Duration::from_secs(5),
            // vm_max_readahead = 31 pages (ide-probe's max_readahead[] takes it).
            readahead_max_pages: 31,
            readahead: Readahead::Linux24,
            request_alloc: iosched_core::RequestAlloc::V2_4,
            // 2.4's ext2_find_near returns the group's start: no colour.
            ext2_colour: false,
            // ___wait_on_page adds a plain (non-exclusive) waiter, as 2.5.64 does.
            lock_page_exclusive: false,
            writeback: Writeback::Bdflush24 { nfract: 30, nfract_sync: 60, nfract_stop: 20 },
            buffer_heads: true,
            unplug: iosched_core::Unplug::TqDisk,
            // queue_nr_requests = 128 above 32 MiB of memory, half per direction.
            nr_requests: Some(64),
            // ide-probe.c: hwif->rqsize, 0 for a generic chipset, so 128.
            ide_max_sectors: Some(128),
            // bdflush and kupdated, the only writeback threads.
            pdflush_threads: 2,
            ..Self::linux_2003(mem_bytes)
        }
    }

    /// A 2007 Linux 2.6.2x host: the same VM defaults with the 2.6 read-ahead.
    pub fn linux_2007(mem_bytes: u64) -> Self {
        HostProfile {
            name: "linux-2.6",
            readahead: Readahead::Linux26,
            request_alloc: iosched_core::RequestAlloc::V2_6_20,
            write_marks_accessed: true,
            lru: Lru::Single,
            reclaim: Reclaim::OnDemand,
            // The single list has no active list for them to shape; the reserve stands for
            // them.
            mapped_bytes: 0,
            ext2_colour: true,
            lock_page_exclusive: true,
            // blk_start_queueing (2.6.20).
            kick_unplug: true,
            // Every major distribution's default in 2007.
            fs: FsKind::Ext3(Ext3::DEFAULT),
            // file_update_time with ext2/ext3's s_time_gran of 1 s.
            mtime_granularity: Some(Duration::from_secs(1)),
            ..Self::linux_2003(mem_bytes)
        }
    }

    pub const NAMES: &'static [&'static str] = &["linux-2.4", "linux-2.5", "linux-2.6"];

    /// What the profile models, in a few words (for report headers).
    pub fn summary(&self) -> &'static str {
        match (self.readahead, self.request_alloc) {
            (Readahead::Linux24, _) => {
                "2.4 read-ahead, request pool, plugging, 64 KiB IDE requests, bdflush and buffer-head I/O"
            }
            (Readahead::Linux25, iosched_core::RequestAlloc::V2_5) => "2.5 read-ahead, request pool and page reclaim",
            (Readahead::Linux26, iosched_core::RequestAlloc::V2_6_20) => "2.6 read-ahead, 2.6.20 request pool",
            (Readahead::Linux25, _) => "2.5 read-ahead, 2.6.20 request pool",
            (Readahead::Linux26, _) => "2.6 read-ahead, 2.5 request pool",
        }
    }

    /// A named profile, optionally with values set: `NAME[:key=VALUE,…]` with
    /// `reserve=SIZE` (memory the page cache may not use; from 1 MiB to half the memory,
    /// with a binary unit: `30M`) and, on the hosts with pdflush, `pdflush_threads=N`
    /// (1..=8), so that a chosen or fitted value can be varied from the command line
    /// (`docs/calibration.md`). A key given twice or unknown is refused.
    pub fn by_name(spec: &str, mem_bytes: u64) -> Result<Self, String> {
        let (name, settings) = split_spec(spec, "host profile", "key=value", "reserve=30M")?;
        let mut h = match name {
            "linux-2.4" => Self::linux_2003_24(mem_bytes),
            "linux-2.5" => Self::linux_2003(mem_bytes),
            "linux-2.6" => Self::linux_2007(mem_bytes),
            _ => return Err(format!("unknown host profile `{name}`; available: {}", Self::NAMES.join(", "))),
        };
        for (k, v) in settings {
            let bad = |what: &str| format!("host profile `{spec}`: {k}={v}: expected {what}");
            match k {
                "reserve" => {
                    let b = parse_binary_size(v).ok_or_else(|| bad("a size with a binary unit, e.g. 30M"))?;
                    if b < 1 << 20 || b > mem_bytes / 2 {
                        return Err(bad(&format!("from 1M to half the memory ({} MiB)", mem_bytes >> 21)));
                    }
                    h.reserve_bytes = b;
                }
                // 2.4 has no pdflush: its writeback threads are bdflush and kupdated.
                "pdflush_threads" if matches!(h.writeback, Writeback::Bdflush24 { .. }) => {
                    return Err(format!(
                        "host profile `{spec}`: {k}: {name} has no pdflush (its writeback threads are bdflush and kupdated); the key there is reserve"
                    ));
                }
                "pdflush_threads" => {
                    h.pdflush_threads =
                        v.parse().ok().filter(|n| (1..=8).contains(n)).ok_or_else(|| bad("a whole number, 1..=8"))?;
                }
                _ => {
                    return Err(format!(
                        "host profile `{spec}`: unknown key `{k}`; the keys are reserve and pdflush_threads (mapped memory is --mapped)"
                    ));
                }
            }
        }
        Ok(h)
    }

    /// Pages the page cache may hold.
    pub fn cache_pages(&self) -> u64 {
        (self.mem_bytes - self.reserve_bytes) / 4096
    }
}

/// The `key=value` settings of a spec, in order.
type Settings<'a> = Vec<(&'a str, &'a str)>;

/// `NAME[:key=value,…]`, the form of CPU and host specs: the name and the settings, each
/// key once. `what`, `form` and `example` go into the errors.
fn split_spec<'a>(spec: &'a str, what: &str, form: &str, example: &str) -> Result<(&'a str, Settings<'a>), String> {
    let Some((name, rest)) = spec.split_once(':') else { return Ok((spec.trim(), Vec::new())) };
    let mut out: Vec<(&str, &str)> = Vec::new();
    for kv in rest.split(',') {
        let (k, v) =
            kv.split_once('=').ok_or_else(|| format!("{what} `{spec}`: `{kv}`: expected {form}, e.g. {example}"))?;
        let (k, v) = (k.trim(), v.trim());
        if out.iter().any(|(seen, _)| *seen == k) {
            return Err(format!("{what} `{spec}`: `{k}` is given twice"));
        }
        out.push((k, v));
    }
    Ok((name.trim(), out))
}

/// `512`, `4K`, `30M`, `1G` (binary units, optional `iB`): bytes, or `None`.
fn parse_binary_size(v: &str) -> Option<u64> {
    let v = v.trim();
    // `MB` and the like are ambiguous (10^6 or 2^20?), as on the command line: refused.
    if v.ends_with('B')
        && !v.ends_with("iB")
        && v.len() > 1
        && v[..v.len() - 1].ends_with(|c: char| c.is_ascii_alphabetic())
    {
        return None;
    }
    let v = v.strip_suffix("iB").or_else(|| v.strip_suffix('B')).unwrap_or(v);
    let (num, mult) = match v.chars().last()? {
        'K' | 'k' => (&v[..v.len() - 1], 1u64 << 10),
        'M' | 'm' => (&v[..v.len() - 1], 1 << 20),
        'G' | 'g' => (&v[..v.len() - 1], 1 << 30),
        'T' | 't' => (&v[..v.len() - 1], 1 << 40),
        _ => (v, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// CPU costs of the kernel paths the workloads exercise. Times are for one CPU of the
/// named processor; they set tiobench's CPU% and CPU-efficiency columns and the CPU
/// bound of cached work. How they were chosen is documented in `docs/simulator.md`.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuProfile {
    pub name: &'static str,
    /// Logical CPUs (a run queue served by this many CPUs).
    pub cpus: u32,
    /// Scheduler time slice (2.5 O(1) scheduler: 100 ms at nice 0).
    pub timeslice: Duration,
    /// `MAX_SLEEP_AVG` of the O(1) scheduler: the sleep credit at which a task gets the
    /// full interactivity bonus (dynamic priority −5); a task with no credit gets +5.
    pub max_sleep_avg: Duration,
    /// System-call entry, file lookup and return.
    pub syscall: Duration,
    /// Copying one 4 KiB page between the page cache and user memory.
    pub copy_page: Duration,
    /// Looking up (and LRU-touching) one page-cache page.
    pub page_lookup: Duration,
    /// Allocating a page-cache page, including reclaiming a clean one.
    pub page_alloc: Duration,
    /// Allocating one filesystem block on write (ext2_get_block with create: bitmap
    /// search and update, inode update).
    pub block_alloc: Duration,
    /// Marking a page dirty and the dirty accounting.
    pub dirty_page: Duration,
    /// Building and submitting one bio, per bio.
    pub bio_submit: Duration,
    /// fork + exec + exit of a short-lived process (cat, in read-many-files).
    pub process_spawn: Duration,
}

impl CpuProfile {
    /// Pentium III 1 GHz (the tiobench seed: "UP PIII 1.0GHz 256MB"). SDRAM-era memory
    /// copy ≈ 500 MB/s → 8 µs per 4 KiB page.
    pub fn piii_1000() -> Self {
        CpuProfile {
            name: "piii-1000",
            cpus: 1,
            timeslice: Duration::from_millis(100),
            max_sleep_avg: Duration::from_secs(1),
            syscall: Duration::from_micros(2),
            copy_page: Duration::from_micros(8),
            page_lookup: Duration::from_nanos(700),
            page_alloc: Duration::from_micros(2),
            block_alloc: Duration::from_micros(22),
            dirty_page: Duration::from_micros(3),
            bio_submit: Duration::from_micros(6),
            process_spawn: Duration::from_micros(600),
        }
    }

    /// Pentium 4 2 GHz, one logical CPU: about twice the PIII on these paths.
    pub fn p4_2000() -> Self {
        CpuProfile { name: "p4-2000", ..Self::scaled(Self::piii_1000(), 1, 2) }
    }

    /// Pentium 4 with hyper-threading (the read-many-files seed: "fast P4-HT"): two
    /// logical CPUs, each a little slower than a P4 alone.
    pub fn p4_ht() -> Self {
        CpuProfile { name: "p4-ht", cpus: 2, ..Self::scaled(Self::piii_1000(), 2, 3) }
    }

    fn scaled(p: CpuProfile, num: u32, den: u32) -> CpuProfile {
        let s = |d: Duration| d * num / den;
        CpuProfile {
            syscall: s(p.syscall),
            copy_page: s(p.copy_page),
            page_lookup: s(p.page_lookup),
            page_alloc: s(p.page_alloc),
            block_alloc: s(p.block_alloc),
            dirty_page: s(p.dirty_page),
            bio_submit: s(p.bio_submit),
            process_spawn: s(p.process_spawn),
            ..p
        }
    }

    pub const NAMES: &'static [&'static str] = &["piii-1000", "p4-2000", "p4-ht"];

    /// The costs a spec may set after the profile's name (`piii-1000:block_alloc=11us`):
    /// each field above that is a time, by its field name.
    pub const COSTS: &'static [&'static str] = &[
        "syscall",
        "copy_page",
        "page_lookup",
        "page_alloc",
        "block_alloc",
        "dirty_page",
        "bio_submit",
        "process_spawn",
        "timeslice",
        "max_sleep_avg",
    ];

    /// A named profile, optionally with some costs set: `NAME[:cost=TIME,…]`, e.g.
    /// `piii-1000:block_alloc=11us,copy_page=16us` (times with ns, us, ms or s). A cost set
    /// this way replaces the named profile's own (after p4-2000's and p4-ht's scaling), so
    /// the calibration of a fitted cost can be varied from the command line
    /// (`docs/calibration.md`). A cost given twice, an unknown one, or a time that is not
    /// a whole number of nanoseconds up to 10 s is refused.
    pub fn by_name(spec: &str) -> Result<Self, String> {
        let (name, settings) = split_spec(spec, "CPU profile", "cost=TIME", "block_alloc=11us")?;
        let mut p = match name {
            "piii-1000" => Self::piii_1000(),
            "p4-2000" => Self::p4_2000(),
            "p4-ht" => Self::p4_ht(),
            _ => return Err(format!("unknown CPU profile `{name}`; available: {}", Self::NAMES.join(", "))),
        };
        for (k, v) in settings {
            let ns =
                iosched_core::time::parse_time_nanos(v, None).filter(|&ns| ns <= 10_000_000_000).ok_or_else(|| {
                    format!(
                        "CPU profile `{spec}`: {k}={v}: expected a time with a unit (ns, us, ms, s), a whole number \
                         of nanoseconds from 0 to 10s"
                    )
                })?;
            let d = Duration::from_nanos(ns as u64);
            // A zero time slice hands the CPU back and forth without time passing.
            if matches!(k, "timeslice" | "max_sleep_avg") && d < Duration::from_millis(1) {
                return Err(format!("CPU profile `{spec}`: {k}={v}: expected at least 1ms"));
            }
            let slot = match k {
                "syscall" => &mut p.syscall,
                "copy_page" => &mut p.copy_page,
                "page_lookup" => &mut p.page_lookup,
                "page_alloc" => &mut p.page_alloc,
                "block_alloc" => &mut p.block_alloc,
                "dirty_page" => &mut p.dirty_page,
                "bio_submit" => &mut p.bio_submit,
                "process_spawn" => &mut p.process_spawn,
                "timeslice" => &mut p.timeslice,
                "max_sleep_avg" => &mut p.max_sleep_avg,
                _ => {
                    return Err(format!(
                        "CPU profile `{spec}`: unknown cost `{k}`; the costs are {}",
                        Self::COSTS.join(", ")
                    ));
                }
            };
            *slot = d;
        }
        Ok(p)
    }
}

#[cfg(test)]
mod spec_tests {
    use super::*;

    #[test]
    fn cpu_and_host_specs_set_values_or_say_what_is_wrong() {
        let p = CpuProfile::by_name("piii-1000:block_alloc=11us, copy_page=16us").unwrap();
        assert_eq!((p.block_alloc, p.copy_page), (Duration::from_micros(11), Duration::from_micros(16)));
        assert_eq!(p.syscall, CpuProfile::piii_1000().syscall);
        // Set after p4-ht's scaling, not scaled again.
        assert_eq!(CpuProfile::by_name("p4-ht:block_alloc=11us").unwrap().block_alloc, Duration::from_micros(11));
        for (spec, want) in [
            ("piii-1000:foo=1us", "unknown cost `foo`"),
            ("piii-1000:block_alloc=1", "expected a time with a unit"),
            ("piii-1000:block_alloc=11s", "from 0 to 10s"),
            ("piii-1000:block_alloc=1us,block_alloc=2us", "given twice"),
            ("piii-1000:block_alloc", "expected cost=TIME"),
            ("p5:block_alloc=1us", "unknown CPU profile `p5`"),
        ] {
            let e = CpuProfile::by_name(spec).unwrap_err();
            assert!(e.contains(want), "{spec}: {e}");
        }
        let h = HostProfile::by_name("linux-2.5:reserve=60M,pdflush_threads=4", 256 << 20).unwrap();
        assert_eq!((h.reserve_bytes, h.pdflush_threads), (60 << 20, 4));
        for (spec, want) in [
            ("linux-2.5:reserve=200M", "from 1M to half the memory (128 MiB)"),
            ("linux-2.5:reserve=lots", "a size with a binary unit"),
            ("linux-2.5:pdflush_threads=9", "1..=8"),
            ("linux-2.5:mapped=8M", "mapped memory is --mapped"),
            ("linux-2.4:pdflush_threads=2", "linux-2.4 has no pdflush"),
        ] {
            let e = HostProfile::by_name(spec, 256 << 20).unwrap_err();
            assert!(e.contains(want), "{spec}: {e}");
        }
    }
}
