use std::path::PathBuf;

/// A fresh temporary directory for one test, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("iosched-rt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    pub fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Options for `sched` on the io_uring backend, asked for by name: a test that runs on
/// these declares `Need::IoUring`, so a host without io_uring skips it visibly (or fails
/// it under `IOSCHED_TEST_REQUIRE`) instead of passing on the thread pool.
pub fn options(sched: &str) -> iosched_rt::Options {
    let mut o = iosched_rt::Options::new(iosched_policies::SchedSpec::parse(sched).unwrap());
    o.backend = iosched_rt::BackendChoice::IoUring;
    o
}

/// Every registered policy's name: the tests run each.
pub fn schedulers() -> Vec<&'static str> {
    iosched_policies::SCHEDULERS.iter().map(|p| p.name).collect()
}

/// A tmpfs of `mib` MiB, unmounted on drop (then its directory is removed).
pub struct Tmpfs(pub PathBuf, #[allow(dead_code)] TempDir);

impl Tmpfs {
    pub fn new(name: &str, mib: u64) -> Tmpfs {
        let dir = TempDir::new(name);
        let mnt = dir.path("mnt");
        std::fs::create_dir_all(&mnt).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "iosched-test"])
            .arg(&mnt)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "cannot mount a tmpfs at {}", mnt.display());
        Tmpfs(mnt, dir)
    }
    pub fn free(&self) -> u64 {
        let out = std::process::Command::new("df").args(["--output=avail", "-B1"]).arg(&self.0).output().unwrap();
        String::from_utf8_lossy(&out.stdout).lines().nth(1).unwrap().trim().parse().unwrap()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}
