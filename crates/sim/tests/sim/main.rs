//! Integration tests of the simulator: determinism, dirty throttling, the classic
//! two-reader result, observability, page reclaim, fsync.

use iosched_core::{Duration, Instant, IoPrio, Queue};
use iosched_policies::SchedSpec;
use iosched_sim::host::{self, Sim, SimConfig, SysOp};
use iosched_sim::{CpuProfile, FileId, HostProfile, Outcome, ProgCtx, TaskId};
use std::cell::RefCell;
use std::rc::Rc;

fn sim(mem_mb: u64, trace: bool, vmstat: bool) -> Sim {
    sim_on(HostProfile::linux_2003(mem_mb << 20), trace, vmstat)
}

/// A simulator of `host` on the 2003 IDE disk and CPU.
fn sim_on(host: HostProfile, trace: bool, vmstat: bool) -> Sim {
    sim_seeded(host, 7, trace, vmstat)
}

fn sim_seeded(host: HostProfile, seed: u64, trace: bool, vmstat: bool) -> Sim {
    sim_on_disk("ide-2003", host, seed, trace, vmstat)
}

/// A simulator of `host` on built-in disk `disk` and the 2003 CPU.
fn sim_on_disk(disk: &str, host: HostProfile, seed: u64, trace: bool, vmstat: bool) -> Sim {
    let profile = iosched_disk::profile::load_profile(disk).unwrap();
    let cfg = SimConfig {
        host,
        cpu: CpuProfile::piii_1000(),
        seed,
        vmstat,
        time_limit: Some(Instant::from_secs(3_600)),
        max_sim_time: None,
        interrupt: None,
        clock: None,
        trace,
        max_bio_sectors: 256,
    };
    Sim::new(cfg, profile.build_boxed(seed))
}

/// Where a task's first write to a new file lands: ext2 (2.5.53 on, so both hosts)
/// colours a file's first block by the writer's pid, so it moves from seed to seed (the
/// seed sets the pids, as a rerun's pids differ).
#[test]
fn file_placement_follows_the_writers_pid() {
    const GROUP: u64 = 32768;
    // (first block, writer's colour, the setup task's colour): the setup task made the
    // directory, whose block sits at its own colour point.
    let first_block = |host: HostProfile, seed: u64| {
        let mut s = sim_seeded(host, seed, false, false);
        let d = s.fs.mkdir(s.fs.root(), "d");
        let f = s.fs.create(d, "f");
        let t = run_script(&mut s, vec![SysOp::Write { file: f, offset: 0, len: 4096 }, SysOp::Fsync { file: f }]);
        (s.fs.map(f, 0).expect("the write allocated a block"), s.pid(t) % 16, s.setup_pid() % 16)
    };
    for host in [HostProfile::linux_2003(64 << 20), HostProfile::linux_2007(64 << 20)] {
        let name = host.name;
        let mut checked = 0;
        let mut places = Vec::new();
        for seed in 1..=8 {
            let (block, colour, setup) = first_block(host.clone(), seed);
            places.push(block);
            // A free colour point (not the group's metadata at colour 0, not the
            // directory's block) is where the first block goes.
            if colour != 0 && colour != setup {
                assert_eq!(
                    block % GROUP,
                    colour as u64 * (GROUP / 16),
                    "{name}, seed {seed}: the writer's colour point"
                );
                checked += 1;
            }
        }
        assert!(checked >= 4, "{name}: only {checked} of 8 seeds gave the writer a free colour point");
        assert!(places.iter().any(|&b| b != places[0]), "{name}: the place moves with the pids: {places:?}");
    }
}

/// Run one task's system calls, in order, to the end; panics if it does not finish.
fn run_script(s: &mut Sim, mut script: Vec<SysOp>) -> TaskId {
    script.reverse();
    let prog = move |_: &mut ProgCtx, _: Option<&Outcome>| -> SysOp { script.pop().unwrap_or(SysOp::Exit) };
    let t = s.spawn("script", Box::new(prog), IoPrio::NONE);
    s.watch(t);
    let mut q = queue("deadline");
    host::run(s, &mut q);
    assert!(s.task_exited(t), "the script did not finish");
    t
}

fn queue(spec: &str) -> Queue {
    SchedSpec::parse(spec).unwrap().queue().unwrap()
}

/// `n` tasks each reading its own `size`-byte file sequentially in 4 KiB calls.
fn readers(s: &mut Sim, n: u64, size: u64) -> Vec<TaskId> {
    let d = s.fs.mkdir(s.fs.root(), "r");
    let files: Vec<FileId> = (0..n).map(|i| s.fs.create_with_size(d, &format!("f{i}"), size)).collect();
    let mut tasks = Vec::new();
    for (i, f) in files.into_iter().enumerate() {
        let mut off = 0;
        let mut opened = false;
        let prog = move |_: &mut ProgCtx, _: Option<&Outcome>| -> SysOp {
            if !opened {
                opened = true;
                return SysOp::Open { file: f };
            }
            if off >= size {
                return SysOp::Exit;
            }
            off += 4096;
            SysOp::Read { file: f, offset: off - 4096, len: 4096 }
        };
        let t = s.spawn(format!("reader{i}"), Box::new(prog), IoPrio::NONE);
        s.watch(t);
        tasks.push(t);
    }
    tasks
}

#[test]
fn same_inputs_same_bytes() {
    let run = || {
        let mut s = sim(64, true, true);
        readers(&mut s, 3, 8 << 20);
        let mut q = queue("as");
        host::run(&mut s, &mut q);
        let trace = s.trace.take().unwrap().join("\n");
        let vmstat = format!("{:?}", s.stats.vmstat);
        (trace, vmstat, s.now)
    };
    let a = run();
    let b = run();
    assert!(a.0.lines().count() > 300, "a real trace");
    assert_eq!(a.0, b.0, "traces differ");
    assert_eq!(a.1, b.1, "vmstat differs");
    assert_eq!(a.2, b.2);
}

#[test]
fn anticipatory_beats_deadline_for_two_sequential_readers() {
    let rate = |spec: &str| {
        let mut s = sim(256, false, false);
        readers(&mut s, 2, 32 << 20);
        let mut q = queue(spec);
        host::run(&mut s, &mut q);
        64.0 / s.now.as_secs_f64()
    };
    let (dl, r#as) = (rate("deadline"), rate("as"));
    assert!(r#as > 1.5 * dl, "AS {as:.1} MiB/s vs deadline {dl:.1} MiB/s");
}

/// One writer: `total` bytes in 64 KiB write() calls, recording each call's latency.
fn writer(s: &mut Sim, total: u64, lat: Rc<RefCell<Vec<Duration>>>) -> TaskId {
    let d = s.fs.mkdir(s.fs.root(), "w");
    let f = s.fs.create(d, "big");
    let mut off = 0;
    let prog = move |_: &mut ProgCtx, done: Option<&Outcome>| -> SysOp {
        if let Some(o) = done.filter(|o| o.kind == "write") {
            lat.borrow_mut().push(o.latency());
        }
        if off >= total {
            return SysOp::Exit;
        }
        off += 65536;
        SysOp::Write { file: f, offset: off - 65536, len: 65536 }
    };
    let t = s.spawn("writer", Box::new(prog), IoPrio::NONE);
    s.watch(t);
    t
}

#[test]
fn a_burst_under_dirty_ratio_does_not_block_and_above_it_the_writer_is_throttled() {
    // 128 MiB of memory: dirty_ratio 40 % is ~51 MiB.
    let lat = Rc::new(RefCell::new(Vec::new()));
    let mut s = sim(128, false, false);
    writer(&mut s, 16 << 20, lat.clone());
    let mut q = queue("deadline");
    host::run(&mut s, &mut q);
    let worst = lat.borrow().iter().copied().max().unwrap();
    assert!(worst < Duration::from_millis(5), "a 16 MiB burst blocked for {worst:?}");

    let lat = Rc::new(RefCell::new(Vec::new()));
    let mut s = sim(128, false, false);
    let t = writer(&mut s, 256 << 20, lat.clone());
    let mut q = queue("deadline");
    host::run(&mut s, &mut q);
    let l = lat.borrow();
    let slow = l.iter().filter(|d| **d > Duration::from_millis(50)).count();
    assert!(slow > 10, "only {slow} throttled calls writing 256 MiB");
    // Throttled to the disk: wall time is far above the writer's CPU time.
    let cpu = s.task_cpu_time(t).as_secs_f64();
    assert!(s.now.as_secs_f64() > 3.0 * cpu, "wall {:.1} s, cpu {cpu:.1} s", s.now.as_secs_f64());
}

#[test]
fn trace_and_vmstat_are_produced() {
    let mut s = sim(64, true, true);
    readers(&mut s, 2, 16 << 20);
    let mut q = queue("deadline");
    host::run(&mut s, &mut q);
    let trace = s.trace.take().unwrap();
    let dispatches = trace.iter().filter(|l| l.split_whitespace().nth(5) == Some("D")).count();
    let completions = trace.iter().filter(|l| l.split_whitespace().nth(5) == Some("C")).count();
    assert!(dispatches > 0 && dispatches == completions, "{dispatches} D, {completions} C");
    let queued = trace.iter().filter(|l| l.split_whitespace().nth(5) == Some("Q")).count();
    let merged = trace.iter().filter(|l| l.split_whitespace().nth(5) == Some("M")).count();
    assert_eq!(queued, dispatches + merged, "every bio is queued, then dispatched or merged");
    // blkparse-like: "8,0 0 <seq> <secs>.<ns> <pid> D R <sector> + <len> [<pid>]"
    let d = trace.iter().find(|l| l.split_whitespace().nth(5) == Some("D")).unwrap();
    let w: Vec<&str> = d.split_whitespace().collect();
    assert_eq!(w[0], "8,0");
    assert_eq!(w[6], "R");
    assert_eq!(w[8], "+");
    assert!(w[3].contains('.'));
    let v = &s.stats.vmstat;
    assert!(!v.is_empty());
    let bi: u64 = v.iter().map(|l| l.bi).sum();
    assert!((30_000..=34_000).contains(&bi), "{bi} KiB read in vmstat for 32 MiB of files");
}

/// Write A and B (4 MiB each), rewrite A's first page, then read enough of a third file to
/// evict A and half of B. Returns whether A's first page is still cached.
fn rewritten_page_survives(host: HostProfile) -> bool {
    let mut s = sim_on(host, false, false);
    let mb4: u64 = 4 << 20;
    let d = s.fs.mkdir(s.fs.root(), "d");
    let (a, b) = (s.fs.create(d, "a"), s.fs.create(d, "b"));
    // The cache will hold A and B (2048 pages) plus a little metadata; reading `free +
    // 1536` pages of C evicts the 1024 oldest pages and 512 of the next (the pages
    // programs have mapped are not free; kswapd keeps a few more free than that).
    let c_pages = s.cache.free() - 2048 + 1536;
    let c = s.fs.create_with_size(d, "c", c_pages * 4096);
    let mut script = Vec::new();
    for (f, len) in [(a, mb4), (b, mb4), (a, 4096)] {
        let mut off = 0;
        while off < len {
            let n = (len - off).min(65536);
            script.push(SysOp::Write { file: f, offset: off, len: n });
            off += n;
        }
        script.push(SysOp::Fsync { file: f });
    }
    script.push(SysOp::Open { file: c });
    for i in 0..c_pages {
        script.push(SysOp::Read { file: c, offset: i * 4096, len: 4096 });
    }
    run_script(&mut s, script);
    assert!(!s.cache.contains(a.0, 1), "A's other pages are the oldest and must be gone");
    assert!(s.cache.contains(b.0, 1023), "B's last page is younger than what C evicted");
    s.cache.contains(a.0, 0)
}

#[test]
fn a_rewritten_page_keeps_its_lru_place_on_2_5_and_moves_up_on_2_6() {
    // 2.5's generic_file_write only sets PG_referenced: the rewritten page is reclaimed
    // with the rest of A. 2.6's generic_file_buffered_write marks it accessed.
    assert!(!rewritten_page_survives(HostProfile::linux_2003(32 << 20)));
    assert!(rewritten_page_survives(HostProfile::linux_2007(32 << 20)));
}

/// Read page 0 of a small file twice, then stream once through a file larger than the
/// cache. Returns whether that page is still cached.
fn twice_read_page_survives_a_stream(host: HostProfile) -> bool {
    let mut s = sim_on(host, false, false);
    let d = s.fs.mkdir(s.fs.root(), "d");
    let hot = s.fs.create_with_size(d, "hot", 4096);
    // A stream 25 % larger than the cache: every page of the cache is replaced once.
    let stream_pages = s.cache.capacity() * 5 / 4;
    let big = s.fs.create_with_size(d, "big", stream_pages * 4096);
    let mut script = vec![
        SysOp::Open { file: hot },
        SysOp::Read { file: hot, offset: 0, len: 4096 },
        SysOp::Read { file: hot, offset: 0, len: 4096 },
        SysOp::Open { file: big },
    ];
    script.extend((0..stream_pages).map(|i| SysOp::Read { file: big, offset: i * 4096, len: 4096 }));
    run_script(&mut s, script);
    assert!(!s.cache.contains(big.0, 0), "the stream's first pages must be gone");
    s.cache.contains(hot.0, 0)
}

#[test]
fn a_page_used_twice_outlives_a_stream_on_2_5_and_not_on_the_single_list() {
    // 2.5's second mark_page_accessed puts the page on the active list, which a stream of
    // used-once pages refills from only slowly; the single list evicts it with the rest.
    assert!(twice_read_page_survives_a_stream(HostProfile::linux_2003(64 << 20)));
    assert!(!twice_read_page_survives_a_stream(HostProfile::linux_2007(64 << 20)));
}

#[test]
fn kswapd_reclaims_most_pages_and_keeps_some_free_on_2_5() {
    // Stream a file twice the cache's size. On 2.5 kswapd, woken below pages_low, frees
    // pages ahead of the reader, which reclaims for itself only when kswapd is napping;
    // free memory stays near the watermarks. The single-list host frees one page per
    // allocation, in the allocating task, and runs full.
    let stream = |host: HostProfile| {
        let mut s = sim_on(host, false, false);
        let d = s.fs.mkdir(s.fs.root(), "d");
        let pages = s.cache.capacity() * 2;
        let f = s.fs.create_with_size(d, "f", pages * 4096);
        let mut script = vec![SysOp::Open { file: f }];
        script.extend((0..pages / 32).map(|i| SysOp::Read { file: f, offset: i * 131072, len: 131072 }));
        run_script(&mut s, script);
        (s.cache.free(), s.stats.kswapd_freed, s.stats.direct_freed)
    };
    let host = HostProfile::linux_2003(64 << 20);
    let iosched_sim::Reclaim::Kswapd25 { pages_min, pages_high, .. } = host.reclaim else {
        panic!("linux-2.5 reclaims with kswapd")
    };
    let (free, kswapd, direct) = stream(host);
    assert!((pages_min..=pages_high).contains(&free), "{free} pages free, want {pages_min}..={pages_high}");
    assert!(kswapd > 0 && kswapd + direct > 10_000, "kswapd freed {kswapd}, the reader {direct}");
    assert!(kswapd * 4 > direct, "kswapd freed {kswapd}, the reader {direct}: kswapd should do a good share");
    assert_eq!(stream(HostProfile::linux_2007(64 << 20)), (0, 0, 0));
}

#[test]
fn an_fsync_writes_its_own_inode_block_and_does_not_wait_for_other_files() {
    // Eight writers in one directory, each writing its file and then fsyncing, as
    // tiobench's threads do: writer 0 1 MiB, the others 16 MiB each (more than the dirty
    // limit, so they are throttled to the disk's pace). Each fsync writes its inode's
    // block and waits for its own buffers only (ext2_sync_file), so writer 0 leaves fsync
    // long before the others are done; it must not wait for their metadata writes.
    let mut s = sim(64, true, false);
    let d = s.fs.mkdir(s.fs.root(), "d");
    let ends = Rc::new(RefCell::new(Vec::new()));
    let mut files = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..8u64 {
        let f = s.fs.create(d, &format!("f{i}"));
        files.push(f);
        let size = if i == 0 { 1 << 20 } else { 16 << 20 };
        let (mut off, mut synced) = (0, false);
        let ends = ends.clone();
        let prog = move |_: &mut ProgCtx, done: Option<&Outcome>| -> SysOp {
            if let Some(o) = done.filter(|o| o.kind == "fsync") {
                ends.borrow_mut().push((i, o.started, o.finished));
            }
            if off < size {
                off += 65536;
                return SysOp::Write { file: f, offset: off - 65536, len: 65536 };
            }
            if !synced {
                synced = true;
                return SysOp::Fsync { file: f };
            }
            SysOp::Exit
        };
        let t = s.spawn(format!("w{i}"), Box::new(prog), IoPrio::NONE);
        s.watch(t);
        tasks.push(t);
    }
    // noop: a FIFO, so no elevator holds the inode-table write back.
    let mut q = queue("noop");
    host::run(&mut s, &mut q);
    let ends = ends.borrow();
    assert_eq!(ends.len(), 8, "every writer fsynced");
    let (_, started, finished) = *ends.iter().find(|e| e.0 == 0).unwrap();
    let last = ends.iter().map(|e| e.2).max().unwrap();
    assert!(
        finished.as_secs_f64() < 0.5 * last.as_secs_f64(),
        "writer 0's fsync ended at {finished:?}, the last at {last:?}: fsyncs are tied together"
    );
    // Trace lines: "8,0 0 <id> <secs> <owner> <Q|D|C|…> <R|W|WS> <sector> + <len> [<owner>]".
    let trace = s.trace.take().unwrap();
    let lines: Vec<(f64, u64, &str, &str, u64, u64)> = trace
        .iter()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[3].parse().unwrap(), w[4].parse().unwrap(), w[5], w[6], w[7].parse().unwrap(), w[9].parse().unwrap())
        })
        .collect();
    let done_by = |sector: u64, from: f64, to: f64| {
        lines.iter().any(|&(at, _, ev, op, s0, n)| {
            ev == "C" && op.starts_with('W') && (s0..s0 + n).contains(&sector) && at >= from && at <= to
        })
    };
    // Writer 0 queued a write of its own inode block during its fsync, and it completed
    // before the fsync returned.
    let owner = s.task_owner(tasks[0]).0;
    let ino = s.fs.sector(s.fs.inode_block(s.fs.file(files[0]).inode));
    let (t0, t1) = (started.as_secs_f64(), finished.as_secs_f64());
    let queued = lines
        .iter()
        .find(|&&(at, o, ev, op, s0, _)| {
            ev == "Q" && op.starts_with('W') && o == owner && s0 == ino && at >= t0 && at <= t1
        })
        .map(|l| l.0);
    let queued = queued
        .unwrap_or_else(|| panic!("writer 0's fsync ({started:?}..{finished:?}) queued no write of its inode block"));
    assert!(done_by(ino, queued, t1), "writer 0's inode block was not on disk when its fsync returned");
    // And every block of its data, and its indirect block, was on disk by then.
    for b in 0..256 {
        let sector = s.fs.sector(s.fs.map(files[0], b).unwrap());
        assert!(done_by(sector, 0.0, t1), "writer 0's block {b} was not on disk when its fsync returned");
    }
    for ib in s.fs.indirect_blocks(files[0]) {
        assert!(done_by(s.fs.sector(ib), 0.0, t1), "writer 0's indirect block was not on disk when its fsync returned");
    }
}

/// `wakeup_bdflush`: on 2.5, a direct-reclaim pass that frees too little because it met
/// dirty pages wakes pdflush for what it scanned, below the background threshold too.
/// Dirty a file (under the 10 % background threshold and well inside the 30 s expiry, so
/// neither balance_dirty_pages nor kupdate writes it), then stream a file twice the cache:
/// reclaim meets the dirty pages, and pdflush queues writes of them. Without the dirty
/// file no pass comes up short.
#[test]
fn direct_reclaim_that_meets_dirty_pages_wakes_pdflush_on_2_5() {
    let run = |dirty: u64| {
        let mut s = sim(64, true, false);
        let d = s.fs.mkdir(s.fs.root(), "d");
        let w = s.fs.create(d, "w");
        let pages = s.cache.capacity() * 2;
        let r = s.fs.create_with_size(d, "r", pages * 4096);
        let mut script = vec![SysOp::Open { file: w }];
        script.extend((0..dirty / 65536).map(|i| SysOp::Write { file: w, offset: i * 65536, len: 65536 }));
        script.push(SysOp::Open { file: r });
        script.extend((0..pages / 32).map(|i| SysOp::Read { file: r, offset: i * 131072, len: 131072 }));
        run_script(&mut s, script);
        assert!(s.now < Instant::from_secs(30), "ran to {}: kupdate could have written the file", s.now);
        // Owners of the pdflush threads (made before any task of ours).
        let pdflush: Vec<u64> =
            (0..4).map(TaskId).filter(|&t| s.task_name(t).starts_with("pdflush")).map(|t| s.task_owner(t).0).collect();
        assert!(!pdflush.is_empty(), "no pdflush threads found");
        // Trace lines: "8,0 0 <id> <secs> <owner> <Q|D|C|…> <R|W|WS> <sector> + <len> [<owner>]".
        let by_pdflush = s
            .trace
            .take()
            .unwrap()
            .iter()
            .filter(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w[5] == "Q" && w[6].starts_with('W') && pdflush.contains(&w[4].parse().unwrap())
            })
            .count();
        (s.stats.bdflush_wakeups, by_pdflush)
    };
    let (wakeups, by_pdflush) = run(4 << 20);
    assert!(wakeups > 0, "no direct-reclaim pass woke pdflush");
    assert!(by_pdflush > 0, "{wakeups} wakeups, but pdflush queued no write");
    assert_eq!(run(0), (0, 0), "clean pages alone never leave a pass short, and nothing is written");
}

/// Three tasks read the same page; the first one's read brings it in while the other two
/// wait for it. 2.5.64 wakes a wait queue's sleepers newest first (each `prepare_to_wait`
/// adds at the head), so the last to wait runs first; 2.6.20's `lock_page` queues
/// exclusively at the tail, so they run in the order they came.
#[test]
fn waiters_for_a_page_wake_newest_first_on_2_5_and_in_order_on_2_6() {
    let order = |host: HostProfile| {
        let mut s = sim_on(host, false, false);
        let d = s.fs.mkdir(s.fs.root(), "d");
        let f = s.fs.create_with_size(d, "f", 4096);
        let done = Rc::new(RefCell::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..3 {
            let done = done.clone();
            let mut step = 0;
            let prog = move |_: &mut ProgCtx, _: Option<&Outcome>| -> SysOp {
                step += 1;
                match step {
                    1 => SysOp::Open { file: f },
                    2 => SysOp::Read { file: f, offset: 0, len: 4096 },
                    3 => {
                        done.borrow_mut().push(i);
                        SysOp::Exit
                    }
                    _ => SysOp::Exit,
                }
            };
            let t = s.spawn(format!("reader{i}"), Box::new(prog), IoPrio::NONE);
            s.watch(t);
            tasks.push(t);
        }
        let mut q = queue("deadline");
        host::run(&mut s, &mut q);
        assert!(tasks.iter().all(|&t| s.task_exited(t)));
        done.take()
    };
    assert_eq!(order(HostProfile::linux_2003(64 << 20)), [2, 1, 0]);
    assert_eq!(order(HostProfile::linux_2007(64 << 20)), [0, 1, 2]);
}

/// The 2.4 host: a streaming writer's data reaches the queue one 4 KiB buffer at a time
/// (`submit_bh`), written by bdflush once 30 % of the cache is dirty and by the writer
/// itself above 60 %; reads of the file afterwards go through 2.4's read-ahead, whose
/// windows reach 31 + 1 pages (merged from single buffers into requests of 128 KiB).
#[test]
fn on_2_4_bdflush_and_the_writer_submit_single_buffers() {
    let lat = Rc::new(RefCell::new(Vec::new()));
    let mut s = sim_on(HostProfile::by_name("linux-2.4", 128 << 20).unwrap(), true, false);
    let t = writer(&mut s, 256 << 20, lat.clone());
    let mut q = queue("linus:nr_requests=64,request_alloc=2.4,unplug=tq_disk");
    host::run(&mut s, &mut q);
    let trace = s.trace.take().unwrap();
    let queued: Vec<Vec<&str>> = trace
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.get(5) == Some(&"Q") && w.get(6) == Some(&"W"))
        .collect();
    // Up to 60 % of the cache may still be dirty when the writer exits.
    assert!(queued.len() > 32_768, "{} buffers queued for 256 MiB", queued.len());
    assert!(queued.iter().all(|w| w[9] == "8"), "a 2.4 write larger than one buffer");
    let writers: std::collections::BTreeSet<&str> = queued.iter().map(|w| w[4]).collect();
    assert!(writers.len() >= 2, "one task wrote everything: {writers:?}");
    let names: Vec<&str> = (0..4).map(|i| s.task_name(TaskId(i))).collect();
    assert!(names.contains(&"bdflush") && names.contains(&"kupdated"), "{names:?}");
    let merged = trace.iter().filter(|l| l.split_whitespace().nth(5) == Some("M")).count();
    assert!(merged > queued.len() / 2, "only {merged} of {} buffers merged", queued.len());
    assert!(s.task_cpu_time(t) > Duration::ZERO);
}

mod ext3;

/// A task whose direct write waited for a request slot is woken when one frees, but it
/// may wait for the CPU while its write is dispatched and completes (here a 100 µs
/// device, one CPU kept busy by two spinning tasks). It must not then sleep for that
/// write: the wait is over before it begins (`wait_event` checks first).
#[test]
fn a_write_that_completes_before_its_task_gets_the_cpu_is_not_waited_for() {
    let mut s = sim_on_disk("null", HostProfile::linux_2007(64 << 20), 1, false, false);
    let d = s.fs.mkdir(s.fs.root(), "w");
    let f = s.fs.create_with_size(d, "f", 16 << 20);
    // Eight writers of 4 KiB direct writes share four slots, so they sleep for slots.
    let mut writers = Vec::new();
    for w in 0..8u64 {
        let mut i = 0u64;
        let prog = move |_: &mut ProgCtx, _: Option<&Outcome>| -> SysOp {
            i += 1;
            if i > 200 {
                return SysOp::Exit;
            }
            SysOp::DirectWrite { file: f, offset: ((w * 200 + i) % 4096) * 4096, len: 4096 }
        };
        let t = s.spawn(format!("w{w}"), Box::new(prog), IoPrio::NONE);
        s.watch(t);
        writers.push(t);
    }
    for h in 0..2 {
        let mut n = 0;
        let prog = move |_: &mut ProgCtx, _: Option<&Outcome>| -> SysOp {
            n += 1;
            if n > 400 { SysOp::Exit } else { SysOp::Think(Duration::from_millis(5)) }
        };
        let t = s.spawn(format!("spin{h}"), Box::new(prog), IoPrio::NONE);
        s.watch(t);
    }
    let mut q = queue("noop:nr_requests=4,plugging=0");
    host::run(&mut s, &mut q);
    for t in writers {
        assert!(s.task_exited(t), "{} never finished: {}", s.task_name(t), s.waiting());
    }
}
