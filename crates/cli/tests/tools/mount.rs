//! `iosched mount` under ordinary programs (dd, cat, sh, fio): what they write reaches
//! BACKING intact, a killed daemon harms nothing, requests are owned by processes, and bad
//! paths are refused. Root and FUSE (`Need::Fuse`).

use crate::TempDir;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_iosched");

/// A running `iosched mount`.
struct Mount {
    child: Child,
    mnt: PathBuf,
    out: PathBuf,
    err: PathBuf,
}

fn mounted(mnt: &Path) -> bool {
    let m = mnt.to_str().unwrap();
    std::fs::read_to_string("/proc/self/mountinfo").unwrap().lines().any(|l| l.split(' ').nth(4) == Some(m))
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Mount {
    fn start(t: &TempDir, backing: &Path, args: &[&str]) -> Mount {
        let mnt = t.join("mnt");
        std::fs::create_dir_all(&mnt).unwrap();
        let (out, err) = (t.join("mount.out"), t.join("mount.err"));
        let child = Command::new(BIN)
            .arg("mount")
            .arg(backing)
            .arg(&mnt)
            .args(args)
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        let mut m = Mount { child, mnt, out, err };
        wait_for("the mount", || {
            if let Ok(Some(s)) = m.child.try_wait() {
                panic!("iosched mount exited with {s}: {}", std::fs::read_to_string(&m.err).unwrap());
            }
            mounted(&m.mnt)
        });
        m
    }

    fn path(&self, f: &str) -> PathBuf {
        self.mnt.join(f)
    }

    /// `iosched umount` (retried while busy), then the daemon's exit and stdout.
    fn stop(mut self) -> String {
        wait_for("an unmount that is not busy", || {
            Command::new(BIN).arg("umount").arg(&self.mnt).stderr(Stdio::null()).status().unwrap().success()
        });
        let s = self.child.wait().unwrap();
        assert!(s.success(), "iosched mount exited with {s}: {}", std::fs::read_to_string(&self.err).unwrap());
        std::fs::read_to_string(&self.out).unwrap()
    }
}

/// A test that failed half-way leaves no daemon serving and nothing mounted.
impl Drop for Mount {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if mounted(&self.mnt) {
            let _ = Command::new("fusermount3").arg("-u").arg(&self.mnt).status();
        }
    }
}

fn run(cmd: &mut Command) {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Four `dd` processes write files at once through an emulated IDE disk under AS, one of
/// them is patched at an unaligned offset, a shell appends lines, a file already in
/// BACKING is read: after the unmount BACKING holds exactly what they wrote, byte for byte,
/// and nothing else.
pub fn what_programs_write_reaches_backing_intact() {
    let t = TempDir::new("mount-integrity");
    let (backing, src) = (t.join("backing"), t.join("src"));
    std::fs::create_dir_all(&backing).unwrap();
    std::fs::create_dir_all(&src).unwrap();
    let pre = pattern(99, 1 << 20);
    std::fs::write(backing.join("pre.bin"), &pre).unwrap();
    let mut want = Vec::new();
    for i in 0..4u64 {
        let data = pattern(i, (2 << 20) + 777 * i as usize);
        std::fs::write(src.join(format!("f{i}")), &data).unwrap();
        want.push(data);
    }
    let patch = pattern(7, 3000);
    std::fs::write(src.join("patch"), &patch).unwrap();
    let m = Mount::start(&t, &backing, &["--sched", "as", "--emulate", "ide-2003-fast"]);
    let dds: Vec<Child> = (0..4)
        .map(|i| {
            Command::new("dd")
                .arg(format!("if={}", src.join(format!("f{i}")).display()))
                .arg(format!("of={}", m.path(&format!("f{i}")).display()))
                .arg("bs=64k")
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    run(Command::new("sh")
        .arg("-c")
        .arg(format!("for i in $(seq 100); do echo line $i >> {}; done", m.path("log").display())));
    assert_eq!(std::fs::read(m.path("pre.bin")).unwrap(), pre);
    for mut d in dds {
        assert!(d.wait().unwrap().success());
    }
    // 3000 bytes at byte 5000 of f0: neither end on a sector.
    run(Command::new("dd")
        .arg(format!("if={}", src.join("patch").display()))
        .arg(format!("of={}", m.path("f0").display()))
        .args(["bs=1000", "seek=5", "conv=notrunc"]));
    want[0][5000..8000].copy_from_slice(&patch);
    let out = m.stop();
    assert!(out.contains("unmounted") && out.contains("errors 0"), "{out}");
    for (i, w) in want.iter().enumerate() {
        let got = std::fs::read(backing.join(format!("f{i}"))).unwrap();
        assert!(
            got == *w,
            "f{i}: {} bytes, want {}; first difference at {:?}",
            got.len(),
            w.len(),
            got.iter().zip(w).position(|(a, b)| a != b)
        );
    }
    let log: String = (1..=100).map(|i| format!("line {i}\n")).collect();
    assert_eq!(std::fs::read_to_string(backing.join("log")).unwrap(), log);
    assert_eq!(std::fs::read(backing.join("pre.bin")).unwrap(), pre);
    let mut names: Vec<String> =
        std::fs::read_dir(&backing).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["f0", "f1", "f2", "f3", "log", "pre.bin"], "nothing of ours in BACKING");
}

/// SIGKILL mid-write: BACKING stays readable with its old files as they were, the mount
/// point reports a disconnected endpoint until `fusermount3 -u`, and then mounts again.
pub fn a_killed_daemon_harms_nothing_and_the_mount_point_recovers() {
    let t = TempDir::new("mount-kill");
    let backing = t.join("backing");
    std::fs::create_dir_all(&backing).unwrap();
    let keep = pattern(5, 100_000);
    std::fs::write(backing.join("keep"), &keep).unwrap();
    let mut m = Mount::start(&t, &backing, &["--sched", "deadline", "--emulate", "ide-2003"]);
    let mut dd = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", m.path("big").display()))
        .args(["bs=64k", "count=2000", "oflag=direct"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the writer to start", || std::fs::metadata(backing.join("big")).is_ok_and(|md| md.len() >= 1 << 20));
    m.child.kill().unwrap();
    m.child.wait().unwrap();
    // The writer fails (the connection is gone); it does not hang.
    let _ = dd.wait().unwrap();
    assert_eq!(std::fs::read(backing.join("keep")).unwrap(), keep);
    let big = std::fs::read(backing.join("big")).unwrap();
    assert!(big.len() >= 1 << 20 && big.iter().all(|&b| b == 0), "{} bytes", big.len());
    let e = std::fs::metadata(&m.mnt).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(ENOTCONN), "{e}");
    assert!(mounted(&m.mnt));
    run(Command::new("fusermount3").arg("-u").arg(&m.mnt));
    assert!(!mounted(&m.mnt));
    assert_eq!(std::fs::read_dir(&m.mnt).unwrap().count(), 0, "the mount point is an empty directory again");
    let again = Mount::start(&t, &backing, &["--sched", "noop"]);
    assert_eq!(std::fs::read(again.path("keep")).unwrap(), keep);
    again.stop();
}

/// "Transport endpoint is not connected": a FUSE mount whose daemon is gone.
const ENOTCONN: i32 = 107;

/// The owner of each read arrival in a trace.
fn read_owners(trace: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(trace).unwrap();
    text.lines()
        .filter(|l| l.split(' ').nth(1) == Some("A") && l.split(' ').nth(3) == Some("read"))
        .map(|l| l.rsplit("owner=").next().unwrap().trim().parse().unwrap())
        .collect()
}

fn distinct(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v.dedup();
    v
}

/// Two `cat` processes are two owners, each its pid; fio's two threads (`--thread`) are
/// one owner, fio's process, unless `--owner thread`. The `--record`ed trace replays and
/// draws its seek picture.
pub fn requests_are_owned_by_processes_or_threads() {
    let t = TempDir::new("mount-owners");
    let backing = t.join("backing");
    std::fs::create_dir_all(&backing).unwrap();
    for f in ["a", "b", "t.0", "t.1"] {
        std::fs::write(backing.join(f), pattern(f.len() as u64, 1 << 20)).unwrap();
    }
    let fio = |m: &Mount| {
        run(Command::new("fio")
            .args(["--name=t", "--thread", "--numjobs=2", "--rw=read", "--bs=64k", "--size=1M", "--direct=1"])
            .arg(format!("--filename_format={}/t.$jobnum", m.mnt.display())));
    };
    let trace = t.join("p.trace");
    let m = Mount::start(&t, &backing, &["--sched", "cfq", "--record", trace.to_str().unwrap()]);
    let mut pids = Vec::new();
    for f in ["a", "b"] {
        let c = Command::new("cat").arg(m.path(f)).stdout(Stdio::null()).spawn().unwrap();
        pids.push(c.id() as u64);
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success());
    }
    fio(&m);
    m.stop();
    let owners = read_owners(&trace);
    let of_cats: Vec<u64> = owners.iter().copied().filter(|o| pids.contains(o)).collect();
    assert_eq!(distinct(of_cats), distinct(pids.clone()), "each cat owns its reads");
    let rest = distinct(owners.iter().copied().filter(|o| !pids.contains(o)).collect());
    assert_eq!(rest.len(), 1, "fio's two threads are one owner: {rest:?}");
    // The mount's trace is a trace like any other: it replays, and it draws.
    let replay = crate::iosched(&["replay", trace.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&replay.stdout).contains("replay OK"));
    crate::iosched(&["report", trace.to_str().unwrap(), "--out", &t.s("report")]);
    assert!(std::fs::read_to_string(t.join("report/index.html")).unwrap().contains("<svg"));

    let trace2 = t.join("t.trace");
    let m = Mount::start(&t, &backing, &["--sched", "cfq", "--owner", "thread", "--record", trace2.to_str().unwrap()]);
    fio(&m);
    m.stop();
    assert_eq!(distinct(read_owners(&trace2)).len(), 2, "by thread, fio's threads are two owners");
}

/// Bad paths are refused with the path named, and BACKING is left as it was.
pub fn bad_mount_points_and_outputs_are_refused() {
    let t = TempDir::new("mount-refusals");
    let backing = t.join("backing");
    std::fs::create_dir_all(backing.join("sub")).unwrap();
    std::fs::create_dir_all(t.join("full")).unwrap();
    std::fs::write(t.join("full/x"), b"x").unwrap();
    std::fs::create_dir_all(t.join("mnt")).unwrap();
    let fails = |args: &[&str], want: &str| {
        let o = Command::new(BIN).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(want), "iosched {args:?}: {err}");
    };
    let (b, mnt) = (t.s("backing"), t.s("mnt"));
    fails(&["mount", &b, &t.s("full")], "is not empty");
    fails(&["mount", &t.s("nope"), &mnt], "BACKING");
    fails(&["mount", &b, "/proc"], "already a mount point");
    fails(&["mount", &b, &t.s("backing/sub")], "inside");
    fails(&["mount", &b, &mnt, "--record", &t.s("backing/t.trace")], "outside BACKING");
    fails(&["mount", &b, &mnt, "--emulate", "no-such-disk"], "no-such-disk");
    fails(&["mount", &b, &mnt, "--readahead", "5000"], "--readahead");
    fails(&["umount", "/proc"], "not an iosched one");
    fails(&["umount", &mnt], "is not a mount point");
    let names: Vec<_> = std::fs::read_dir(&backing).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["sub"]);
    assert!(!mounted(&t.join("mnt")));
}

/// Drop the page cache (clean pages: the files just written, through the mount and in
/// BACKING).
fn drop_caches() {
    run(&mut Command::new("sync"));
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").unwrap();
}

/// `sh -c CMD` in a process group of its own (so it can be stopped whole).
fn group(cmd: &str) -> Child {
    use std::os::unix::process::CommandExt;
    Command::new("sh").arg("-c").arg(cmd).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0).spawn().unwrap()
}

fn kill_group(c: &mut Child) {
    let _ = Command::new("kill").arg("--").arg(format!("-{}", c.id())).status();
    let _ = c.wait();
}

/// The seed experiment on a tenth of the tree (1,122 files, 14.2 MB), for real: through a
/// mount emulating ide-2003-fast, `find | xargs cat` alone and beside the seed's streaming
/// `dd` loop. AS loaded finishes within 3× its time alone; deadline loaded is still
/// reading at 5× its time alone (stopped there: the seed's deadline took 56×). The
/// whole tree's figures, and cfq's, are `benches/mount.sh`'s.
pub fn the_seed_experiment_keeps_its_shape_on_a_small_tree() {
    for (sched, within) in [("as", true), ("deadline", false)] {
        let t = TempDir::new(&format!("mount-seed-{sched}"));
        let backing = t.join("backing");
        std::fs::create_dir_all(&backing).unwrap();
        let m = Mount::start(&t, &backing, &["--sched", sched, "--emulate", "ide-2003-fast"]);
        let tree = m.path("tree");
        run(Command::new(BIN).arg("kernel-tree").arg(&tree).args(["--scale", "0.1"]));
        let read = format!("find {} -type f | xargs cat > /dev/null", tree.display());
        drop_caches();
        let t0 = Instant::now();
        run(Command::new("sh").arg("-c").arg(&read));
        let alone = t0.elapsed();
        let mut writer = group(&format!(
            "while true; do dd if=/dev/zero of={} bs=1M count=512 conv=notrunc; done",
            m.path("foo").display()
        ));
        std::thread::sleep(Duration::from_secs(3));
        drop_caches();
        let t0 = Instant::now();
        let mut reader = group(&read);
        let (k, bound) = if within { (3, alone * 3) } else { (5, alone * 5) };
        let finished = loop {
            if let Some(s) = reader.try_wait().unwrap() {
                assert!(s.success(), "{read}: {s}");
                break Some(t0.elapsed());
            }
            if t0.elapsed() >= bound {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        kill_group(&mut reader);
        kill_group(&mut writer);
        m.stop();
        match (within, finished) {
            (true, Some(loaded)) => eprintln!("{sched}: alone {alone:?}, loaded {loaded:?}"),
            (true, None) => panic!("{sched}: alone {alone:?}, loaded still reading after {k}× that"),
            (false, None) => eprintln!("{sched}: alone {alone:?}, loaded still reading after {k}× that"),
            (false, Some(loaded)) => panic!("{sched}: alone {alone:?}, loaded {loaded:?}: less than {k}×"),
        }
    }
}

/// SIGTERM unmounts: the page cache's dirty data is written back through the queue first,
/// and `--json` reports it. While a program holds a file open the daemon keeps serving
/// (and says so); once it closes, the unmount goes through.
pub fn sigterm_unmounts_after_writeback_and_waits_for_open_files() {
    let t = TempDir::new("mount-sigterm");
    let backing = t.join("backing");
    std::fs::create_dir_all(&backing).unwrap();
    let mut m = Mount::start(&t, &backing, &["--sched", "cfq", "--json"]);
    // Written into the page cache only (writeback caching): no fsync, no close-time wait.
    let data = pattern(3, 3 << 20);
    std::fs::write(m.path("dirty"), &data).unwrap();
    let mut holder = group(&format!("exec 3<{}; sleep 60", m.path("dirty").display()));
    wait_for("the holder to open the file", || {
        std::fs::read_dir(format!("/proc/{}/fd", holder.id())).is_ok_and(|d| d.count() > 3)
    });
    let term = |pid: u32| run(Command::new("kill").args(["-TERM", &pid.to_string()]));
    term(m.child.id());
    wait_for("the daemon to say it is busy", || {
        std::fs::read_to_string(&m.err).unwrap().contains("cannot unmount yet")
    });
    assert!(m.child.try_wait().unwrap().is_none(), "the daemon quit with a file open");
    assert!(mounted(&m.mnt));
    kill_group(&mut holder);
    let s = m.child.wait().unwrap();
    assert!(s.success(), "{s}: {}", std::fs::read_to_string(&m.err).unwrap());
    assert!(!mounted(&m.mnt));
    assert_eq!(std::fs::read(backing.join("dirty")).unwrap(), data, "dirty pages written back before the unmount");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&m.out).unwrap()).unwrap();
    assert_eq!(doc["command"], "mount");
    assert_eq!(doc["report"]["written_bytes"].as_u64(), Some(data.len() as u64), "{doc}");
    assert!(doc["report"]["queue"]["dispatched"].as_u64().unwrap() > 0);
}

/// Name changes behave as on a local file system: an unlinked file still open is stat'ed
/// through its descriptor; renaming the directory it was in, then reusing its old name,
/// leaves both apart; a listing resumed while its entries are being unlinked skips none.
pub fn unlinked_renamed_and_listed_files_behave_as_on_a_local_file_system() {
    let t = TempDir::new("mount-names");
    let backing = t.join("backing");
    std::fs::create_dir_all(&backing).unwrap();
    let m = Mount::start(&t, &backing, &["--sched", "noop"]);
    let sh = |script: &str| {
        let o = Command::new("sh").arg("-c").arg(script).current_dir(&m.mnt).output().unwrap();
        assert!(o.status.success(), "{script}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    // fstat of an open, unlinked file (stat through /proc/self/fd follows the descriptor).
    assert_eq!(sh("echo hello > f; exec 3<f; rm f; stat -L -c %s /proc/self/fd/3").trim(), "6");
    // An unlinked open file in a renamed directory keeps out of the new file's way.
    assert_eq!(sh("mkdir d; echo old > d/x; exec 3<d/x; rm d/x; mv d e; exec 3<&-; echo new > e/x; cat e/x"), "new\n");
    assert_eq!(sh("ls e"), "x\n");
    // 3,000 entries unlinked while being listed: readdir resumes by cookie, not position.
    sh("mkdir big && cd big && i=0; while [ $i -lt 3000 ]; do : > f$i; i=$((i+1)); done");
    let py = "import os\nn = 0\nfor e in os.scandir('big'):\n    os.unlink(e.path)\n    n += 1\nprint(n)\n";
    assert_eq!(sh(&format!("python3 -c \"{py}\"")).trim(), "3000");
    sh("rmdir big");
    m.stop();
    let mut names: Vec<_> = std::fs::read_dir(&backing).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["e"]);
}
