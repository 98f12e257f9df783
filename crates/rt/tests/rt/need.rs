//! What a test needs from the machine, checked before it runs.
//!
//! A test that needs io_uring, root, loop devices, `mkfs.ext4`, a tmpfs with O_DIRECT,
//! fio, fio's example job files or Chromium declares it when it is registered (`main.rs` here; the CLI's report
//! test, `crates/cli/tests/tools/report.rs`, uses this same module). Where a need is missing the test is
//! reported as `ignored` — so cargo's summary line counts it — and one `SKIP` line on
//! stderr names the need and why it is missing. With `IOSCHED_TEST_REQUIRE=all` (set by
//! `.ci/run`, whose machine has all of them) or a comma list of needs
//! (`IOSCHED_TEST_REQUIRE=io_uring,fio`), a missing need fails the test instead.
//!
//! `IOSCHED_TEST_PRETEND_MISSING=NEED[,NEED]` makes the probe report a need as missing,
//! so that the rule above can itself be tested (`requirements_are_enforced`).

use libtest_mimic::{Failed, Trial};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// One requirement of a test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// `io_uring_setup` succeeds (not ENOSYS, not disabled by `kernel.io_uring_disabled`).
    IoUring,
    /// Effective uid 0.
    Root,
    /// Root and a working `losetup`.
    Losetup,
    /// `mkfs.ext4` and `mount` (root).
    Mkfs,
    /// Root, and a tmpfs mounted here accepts O_DIRECT (Linux 6.6 and later).
    TmpfsDirectIo,
    /// The `fio` command.
    Fio,
    /// fio 3.x's example job files in `/usr/share/doc/fio/examples` (Debian package
    /// fio-examples): the CLI's test that runs each of them.
    #[allow(dead_code)]
    FioExamples,
    /// The `chromium` browser (headless: the report's rendering test; no rt test needs it).
    #[allow(dead_code)]
    Chromium,
    /// Root, `/dev/fuse` and `fusermount3` (Debian package fuse3): `iosched mount`'s tests.
    #[allow(dead_code)]
    Fuse,
}

impl Need {
    pub fn name(self) -> &'static str {
        match self {
            Need::IoUring => "io_uring",
            Need::Root => "root",
            Need::Losetup => "losetup",
            Need::Mkfs => "mkfs.ext4",
            Need::TmpfsDirectIo => "tmpfs-odirect",
            Need::Fio => "fio",
            Need::FioExamples => "fio-examples",
            Need::Chromium => "chromium",
            Need::Fuse => "fuse",
        }
    }

    /// Why the need is missing here, or `None` when it is met (probed once per process).
    pub fn missing(self) -> Option<String> {
        static SEEN: Mutex<Vec<(Need, Option<String>)>> = Mutex::new(Vec::new());
        if let Some((_, why)) = SEEN.lock().unwrap().iter().find(|(n, _)| *n == self) {
            return why.clone();
        }
        // Probed without the lock: a need's probe may ask for another need.
        let why = self.probe();
        SEEN.lock().unwrap().push((self, why.clone()));
        why
    }

    fn probe(self) -> Option<String> {
        if env_list("IOSCHED_TEST_PRETEND_MISSING").iter().any(|n| n == self.name()) {
            return Some("pretended missing by IOSCHED_TEST_PRETEND_MISSING".into());
        }
        match self {
            Need::IoUring => match io_uring::IoUring::new(4) {
                Ok(_) => None,
                // ENOSYS: no io_uring in this kernel; EPERM: disabled by sysctl or seccomp.
                // Any other error is a broken ring setup, which the test itself must meet
                // and fail on, not skip.
                Err(e) if matches!(e.raw_os_error(), Some(1) | Some(38)) => Some(format!(
                    "io_uring_setup: {e} (kernel.io_uring_disabled = {})",
                    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
                        .map(|s| s.trim().to_string())
                        .unwrap_or_else(|_| "?".into())
                )),
                Err(_) => None,
            },
            Need::Root => (!is_root()).then(|| "not running as root".into()),
            Need::Losetup => Need::Root.missing().or_else(|| runs("losetup", "--version")),
            Need::Mkfs => Need::Root.missing().or_else(|| runs("mkfs.ext4", "-V")),
            Need::TmpfsDirectIo => Need::Root.missing().or_else(tmpfs_odirect_missing),
            Need::Fio => runs("fio", "--version"),
            Need::FioExamples => {
                let n = std::fs::read_dir(FIO_EXAMPLES)
                    .map(|d| d.filter_map(Result::ok).filter(|e| e.path().extension() == Some("fio".as_ref())).count())
                    .unwrap_or(0);
                (n == 0).then(|| format!("no *.fio in {FIO_EXAMPLES} (Debian package fio-examples)"))
            }
            Need::Chromium => runs("chromium", "--version"),
            Need::Fuse => Need::Root.missing().or_else(|| {
                if !std::path::Path::new("/dev/fuse").exists() {
                    return Some("no /dev/fuse".into());
                }
                runs("fusermount3", "--version")
            }),
        }
    }

    fn required(self) -> bool {
        let req = env_list("IOSCHED_TEST_REQUIRE");
        req.iter().any(|n| n == "all" || n == self.name())
    }
}

/// The needs named in `var`; a name that is no need (a typo would require nothing) stops
/// the run.
fn env_list(var: &str) -> Vec<String> {
    let v: Vec<String> = std::env::var(var)
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let known =
        ["io_uring", "root", "losetup", "mkfs.ext4", "tmpfs-odirect", "fio", "fio-examples", "chromium", "fuse"];
    for n in &v {
        if !(known.contains(&n.as_str()) || (var == "IOSCHED_TEST_REQUIRE" && n == "all")) {
            eprintln!(
                "{var}: unknown need `{n}`; the needs are {} (and `all` for IOSCHED_TEST_REQUIRE)",
                known.join(", ")
            );
            std::process::exit(2);
        }
    }
    v
}

/// Where Debian's fio-examples puts fio's `examples/`.
pub const FIO_EXAMPLES: &str = "/usr/share/doc/fio/examples";

/// Whether we run as root (loop devices, mounts).
pub fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| o.stdout == b"0\n").unwrap_or(false)
}

fn runs(cmd: &str, arg: &str) -> Option<String> {
    match Command::new(cmd).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) if s.success() => None,
        Ok(s) => Some(format!("`{cmd} {arg}` exited with {s}")),
        Err(e) => Some(format!("`{cmd}` cannot be run: {e}")),
    }
}

/// Mounts a 1 MiB tmpfs and opens a file on it with O_DIRECT.
fn tmpfs_odirect_missing() -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir().join(format!("iosched-rt-probe-tmpfs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "iosched-probe"])
        .arg(&dir)
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    let why = if !mounted {
        Some("cannot mount a tmpfs".to_string())
    } else {
        const O_DIRECT: i32 = 0o40000;
        // The file is closed (the result dropped) before the unmount, which it would block.
        let why = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .custom_flags(O_DIRECT)
            .open(dir.join("f"))
            .err()
            .map(|e| format!("tmpfs refuses O_DIRECT here: {e}"));
        let _ = Command::new("umount").arg(&dir).status();
        why
    };
    let _ = std::fs::remove_dir_all(&dir);
    why
}

/// A test named `name` that runs `f` when every need is met; otherwise ignored with a
/// `SKIP` line, or failed where the need is required.
pub fn trial(name: &str, needs: &[Need], f: fn()) -> Trial {
    let missing: Vec<(Need, String)> = needs.iter().filter_map(|&n| n.missing().map(|why| (n, why))).collect();
    if missing.is_empty() {
        return Trial::test(name, move || {
            f();
            Ok(())
        });
    }
    let what = missing.iter().map(|(n, why)| format!("needs {}: {why}", n.name())).collect::<Vec<_>>().join("; ");
    if missing.iter().any(|(n, _)| n.required()) {
        let msg = format!("a required need is missing ({what}); IOSCHED_TEST_REQUIRE makes this a failure");
        return Trial::test(name, move || Err(Failed::from(msg.clone())));
    }
    eprintln!("SKIP {name}: {what}");
    let kind = missing.iter().map(|(n, _)| n.name()).collect::<Vec<_>>().join(",");
    Trial::test(name, move || {
        f();
        Ok(())
    })
    .with_kind(format!("needs {kind}"))
    .with_ignored_flag(true)
}

/// The rule above, tested on this binary: with io_uring pretended missing, the io_uring
/// test is ignored (and counted), and fails once io_uring is required.
pub fn requirements_are_enforced() {
    let exe = std::env::current_exe().unwrap();
    let run = |require: Option<&str>| {
        let mut c = Command::new(&exe);
        c.args(["--exact", "blockdev::io_uring_backend_is_available", "--test-threads", "1"]);
        c.env("IOSCHED_TEST_PRETEND_MISSING", "io_uring").env_remove("IOSCHED_TEST_REQUIRE");
        if let Some(r) = require {
            c.env("IOSCHED_TEST_REQUIRE", r);
        }
        let out = c.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text)
    };
    let (ok, text) = run(None);
    assert!(ok, "a missing need must not fail unless required:\n{text}");
    assert!(
        text.contains("1 ignored") && text.contains("SKIP blockdev::io_uring_backend_is_available: needs io_uring"),
        "{text}"
    );
    for require in ["all", "fio,io_uring"] {
        let (ok, text) = run(Some(require));
        assert!(!ok, "IOSCHED_TEST_REQUIRE={require} must fail the test:\n{text}");
        assert!(text.contains("1 failed") && text.contains("needs io_uring"), "{text}");
    }
    let (ok, text) = run(Some("fio"));
    assert!(ok && text.contains("1 ignored"), "requiring only fio must not fail an io_uring test:\n{text}");
}
