//! ext3's journal (`host/journal.rs`): kjournald as its own owner, data=ordered, the
//! commit interval, fsync's forced commit, atime through the journal.

use super::*;
use iosched_sim::{DataMode, Ext3, FsKind};

/// The 2007 host (ext3 by default) with `fs`, 256 MiB, on the 2003 IDE disk.
fn ext3_sim(fs: FsKind) -> Sim {
    let mut host = HostProfile::linux_2007(256 << 20);
    host.fs = fs;
    sim_on(host, true, false)
}

/// A trace line: (seconds, owner, event, rwbs, sector, sectors, process).
type Line<'a> = (f64, u64, &'a str, &'a str, u64, u64, &'a str);

fn parse(trace: &[String]) -> Vec<Line<'_>> {
    trace
        .iter()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let name = w[10].trim_start_matches('[').trim_end_matches(']');
            (
                w[3].parse().unwrap(),
                w[4].parse().unwrap(),
                w[5],
                w[6],
                w[7].parse().unwrap(),
                w[9].parse().unwrap(),
                name,
            )
        })
        .collect()
}

/// A writer of `chunks` × 64 KiB to a new file, sleeping `gap` after each write, then
/// (if `fsync`) an fsync; records each write's end.
fn paced_writer(
    s: &mut Sim,
    chunks: u64,
    gap: Duration,
    fsync: bool,
    ends: Rc<RefCell<Vec<(u64, Instant)>>>,
) -> (TaskId, FileId) {
    let d = s.fs.mkdir(s.fs.root(), "w");
    let f = s.fs.create(d, "f");
    let (mut i, mut slept, mut synced) = (0u64, true, false);
    let prog = move |_: &mut ProgCtx, done: Option<&Outcome>| -> SysOp {
        if let Some(o) = done.filter(|o| o.kind == "write") {
            ends.borrow_mut().push((i - 1, o.finished));
        }
        if i < chunks {
            if !slept {
                slept = true;
                return SysOp::Sleep(gap);
            }
            slept = gap == Duration::ZERO;
            i += 1;
            return SysOp::Write { file: f, offset: (i - 1) * 65536, len: 65536 };
        }
        if fsync && !synced {
            synced = true;
            return SysOp::Fsync { file: f };
        }
        SysOp::Exit
    };
    let t = s.spawn("writer", Box::new(prog), IoPrio::NONE);
    s.watch(t);
    (t, f)
}

#[test]
fn a_buffered_writer_with_fsync_gets_journal_writes_from_kjournald() {
    let mut s = ext3_sim(FsKind::Ext3(Ext3::DEFAULT));
    let (t, _) = paced_writer(&mut s, 16, Duration::ZERO, true, Rc::default());
    let mut q = queue("cfq");
    host::run(&mut s, &mut q);
    assert!(s.task_exited(t));
    let kj = s.kjournald().expect("ext3 runs kjournald");
    let (kj_owner, w_owner) = (s.task_owner(kj).0, s.task_owner(t).0);
    assert_ne!(kj_owner, w_owner);
    let trace = s.trace.take().unwrap();
    let lines = parse(&trace);
    let kj_writes: Vec<&Line> = lines.iter().filter(|l| l.1 == kj_owner && l.2 == "Q").collect();
    assert!(!kj_writes.is_empty(), "no request from kjournald");
    assert!(kj_writes.iter().all(|l| l.3 == "W" && l.6 == "kjournald"), "kjournald's requests: {kj_writes:?}");
    // The writer's own requests are the data (fsync's filemap_fdatawrite).
    let w_writes = lines.iter().filter(|l| l.1 == w_owner && l.2 == "Q" && l.3.starts_with('W')).count();
    assert!(w_writes > 0, "the writer wrote nothing itself");
    let st = s.journal_stats().unwrap();
    assert_eq!(st.forced_commits, 1, "{st:?}");
    assert!(st.commits >= 1 && st.log_blocks >= 3, "{st:?}");
    // The per-task I/O counts kjournald's journal writes as its own.
    assert!(s.task_io(kj).1 >= st.log_blocks * 4096, "{:?} {st:?}", s.task_io(kj));
    // ext2: no kjournald, and the fsync writes the inode itself.
    let mut s = ext3_sim(FsKind::Ext2);
    paced_writer(&mut s, 16, Duration::ZERO, true, Rc::default());
    host::run(&mut s, &mut queue("cfq"));
    assert!(s.kjournald().is_none() && s.journal_stats().is_none());
}

/// data=ordered: every page written before a commit began is on disk before that
/// commit's block is queued — read from the trace. data=writeback breaks it (so the
/// check can fail).
#[test]
fn in_ordered_mode_a_transactions_data_completes_before_its_commit_block() {
    let ordered = |mode: DataMode| -> (usize, usize) {
        let mut s = ext3_sim(FsKind::Ext3(Ext3 { data: mode, ..Ext3::DEFAULT }));
        let ends = Rc::new(RefCell::new(Vec::new()));
        // 20 MiB over about 16 s: under the dirty limits, so only kjournald (and
        // kupdate after 30 s) would write it.
        let (_, f) = paced_writer(&mut s, 320, Duration::from_millis(50), false, ends.clone());
        host::run(&mut s, &mut queue("cfq"));
        let trace = s.trace.take().unwrap();
        let lines = parse(&trace);
        let kj = s.task_owner(s.kjournald().unwrap()).0;
        let log = s.journal_stats().unwrap().log.clone();
        assert!(log.len() >= 3, "{} commits", log.len());
        let (mut checked, mut late) = (0, 0);
        for c in &log {
            let started = c.started_ns as f64 / 1e9;
            let queued = lines
                .iter()
                .find(|l| l.1 == kj && l.2 == "Q" && l.4 == c.commit_sector && l.0 >= started)
                .expect("the commit block's request")
                .0;
            for &(chunk, _) in ends.borrow().iter().filter(|e| e.1.as_secs_f64() < started) {
                for b in chunk * 16..chunk * 16 + 16 {
                    let sector = s.fs.sector(s.fs.map(f, b).unwrap());
                    checked += 1;
                    let on_disk = lines.iter().any(|l| {
                        l.2 == "C" && l.3.starts_with('W') && (l.4..l.4 + l.5).contains(&sector) && l.0 <= queued
                    });
                    if !on_disk {
                        late += 1;
                    }
                }
            }
        }
        (checked, late)
    };
    let (checked, late) = ordered(DataMode::Ordered);
    assert!(checked > 1000, "only {checked} page checks");
    assert_eq!(late, 0, "{late} of {checked} pages were not on disk before their commit block");
    let (_, late) = ordered(DataMode::Writeback);
    assert!(late > 0, "data=writeback also wrote all data before each commit");
}

/// A steady writer: kjournald commits each transaction `commit=` seconds after it began
/// (5 s by default), so commits start about every 5 s; `commit=2` makes it 2.
#[test]
fn under_a_steady_writer_a_commit_starts_every_commit_interval() {
    for (commit, lo, hi) in [(5, 5.0, 5.3), (2, 2.0, 2.3)] {
        let mut s = ext3_sim(FsKind::Ext3(Ext3 { commit: Duration::from_secs(commit), ..Ext3::DEFAULT }));
        paced_writer(&mut s, 300, Duration::from_millis(100), false, Rc::default());
        host::run(&mut s, &mut queue("deadline"));
        let log = &s.journal_stats().unwrap().log;
        let starts: Vec<f64> = log.iter().map(|c| c.started_ns as f64 / 1e9).collect();
        assert!(starts.len() >= 4, "commit={commit}: {starts:?}");
        assert!((lo..hi).contains(&starts[0]), "commit={commit}: first commit at {:.3} s", starts[0]);
        for w in starts.windows(2) {
            let gap = w[1] - w[0];
            assert!((lo..hi).contains(&gap), "commit={commit}: commits {:.3} s apart: {starts:?}", gap);
        }
    }
}

/// Reading a file dirties its inode (atime, 2.6.20 mounts without noatime): the inode
/// block goes to the log through kjournald, and home later by writeback. With atime=0
/// the same read journals nothing.
#[test]
fn reading_a_file_updates_its_inode_through_the_journal() {
    let run = |atime: bool| {
        let mut s = ext3_sim(FsKind::Ext3(Ext3 { atime, ..Ext3::DEFAULT }));
        let d = s.fs.mkdir(s.fs.root(), "r");
        let f = s.fs.create_with_size(d, "f", 256 << 10);
        let script = vec![
            SysOp::Open { file: f },
            SysOp::Read { file: f, offset: 0, len: 256 << 10 },
            // Past kupdate's 30 s expiry, so the committed inode block goes home.
            SysOp::Sleep(Duration::from_secs(45)),
        ];
        let t = run_script(&mut s, script);
        let trace = s.trace.take().unwrap();
        let lines = parse(&trace);
        let ino = s.fs.sector(s.fs.inode_block(s.fs.file(f).inode));
        let kj = s.task_owner(s.kjournald().unwrap()).0;
        let reader = s.task_owner(t).0;
        let home: Vec<String> = lines
            .iter()
            .filter(|l| l.2 == "Q" && l.3.starts_with('W') && l.4 == ino)
            .map(|l| l.6.to_string())
            .collect();
        let by_kj = lines.iter().filter(|l| l.1 == kj && l.2 == "Q").count();
        let by_reader = lines.iter().filter(|l| l.1 == reader && l.2 == "Q" && l.3.starts_with('W')).count();
        (s.journal_stats().unwrap().commits, by_kj, by_reader, home)
    };
    let (commits, by_kj, by_reader, home) = run(true);
    assert_eq!(commits, 1, "one read, one transaction");
    assert_eq!(by_kj, 2, "descriptor + inode copy, then the commit block");
    assert_eq!(by_reader, 0, "the reader wrote");
    assert_eq!(home.len(), 1, "the inode block written home: {home:?}");
    assert!(home[0].starts_with("pdflush"), "written home by {home:?}");
    let (commits, by_kj, _, home) = run(false);
    assert_eq!((commits, by_kj, home.len()), (0, 0, 0), "noatime journaled a read");
}

/// A 4 MiB journal (1024 blocks) under 600 fsyncs, each forcing a commit of the file's
/// inode and allocation bitmap: the log wraps, so log_do_checkpoint must free space —
/// by moving the tail past transactions whose blocks went home, or by writing them — and
/// the log never overruns its tail (an assertion in the journal).
#[test]
fn a_small_journal_is_checkpointed_as_it_fills() {
    let mut s = ext3_sim(FsKind::Ext3(Ext3 { journal_mb: Some(4), ..Ext3::DEFAULT }));
    let d = s.fs.mkdir(s.fs.root(), "w");
    let f = s.fs.create(d, "f");
    let (mut i, mut synced) = (0u64, true);
    let prog = move |_: &mut ProgCtx, _: Option<&Outcome>| -> SysOp {
        if i == 600 {
            return SysOp::Exit;
        }
        if synced {
            synced = false;
            i += 1;
            // Every 64 KiB a new block group bitmap word, every 4 MiB an indirect block.
            return SysOp::Write { file: f, offset: (i - 1) * 65536, len: 4096 };
        }
        synced = true;
        SysOp::Fsync { file: f }
    };
    let t = s.spawn("syncer", Box::new(prog), IoPrio::NONE);
    s.watch(t);
    host::run(&mut s, &mut queue("deadline"));
    assert!(s.task_exited(t), "{}", s.waiting());
    let st = s.journal_stats().unwrap();
    let counts = (st.commits, st.forced_commits, st.log_blocks, st.checkpoints, st.checkpoint_blocks);
    // (A writeback pass may clean an inode before its fsync, which then commits nothing.)
    assert!(st.forced_commits >= 590 && st.commits >= 590, "{counts:?}");
    assert!(st.log_blocks > 2048, "the log did not wrap twice: {counts:?}");
    assert!(st.checkpoints > 0, "no checkpoint: {counts:?}");
}

/// 2.6.20's `file_update_time` dirties the inode only when the mtime's second moved: 100
/// overwrites, each followed by fsync, force a commit about once a second, where the
/// 2.5 rule (every write dirties the inode) forces one per fsync.
#[test]
fn overwrites_dirty_the_inode_once_a_second_on_2_6() {
    let commits = |host: HostProfile| {
        let mut s = sim_on(host, false, false);
        let d = s.fs.mkdir(s.fs.root(), "w");
        let f = s.fs.create_with_size(d, "f", 1 << 20);
        let mut script = Vec::new();
        for i in 0..100 {
            script.push(SysOp::Write { file: f, offset: (i % 256) * 4096, len: 4096 });
            script.push(SysOp::Fsync { file: f });
        }
        run_script(&mut s, script);
        (s.journal_stats().unwrap().forced_commits, s.sim_time().as_secs_f64())
    };
    let (c26, secs) = commits(HostProfile::linux_2007(256 << 20));
    assert!(c26 >= 1 && (c26 as f64) <= secs.ceil() + 1.0, "2.6: {c26} commits in {secs:.2} s");
    let mut h25 = HostProfile::linux_2003(256 << 20);
    h25.fs = FsKind::Ext3(Ext3::DEFAULT);
    let (c25, _) = commits(h25);
    assert_eq!(c25, 100, "2.5's rule: a commit per fsync");
}
