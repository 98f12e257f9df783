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

pub const SCHEDULERS: &[&str] = &["noop", "deadline", "as", "cfq", "cfq-v1", "mq-deadline", "kyber", "bfq"];

/// The lists above cover every registered policy (a new one must be added here).
pub fn assert_every_scheduler_listed() {
    for info in iosched_policies::SCHEDULERS {
        let listed = SCHEDULERS.iter().any(|s| iosched_policies::SchedSpec::parse(s).unwrap().name == info.name);
        assert!(listed, "tests/common SCHEDULERS misses `{}`", info.name);
    }
}
