//! The command line against outside tools: the report in a real browser (Chromium), our
//! fio output read by fio's own scripts, and `iosched mount` under ordinary programs.
//!
//! A harness of its own (`harness = false`): a test whose tool is missing is counted as
//! ignored, or fails under `IOSCHED_TEST_REQUIRE` (the rt tests' rule, from their `need`
//! module, shared rather than copied).

#[path = "../../../rt/tests/rt/need.rs"]
#[allow(dead_code)]
mod need;

mod fio;
mod mount;
mod report;

use need::{Need, trial};
use std::path::PathBuf;
use std::process::Command;

/// Run `iosched` and require success.
pub fn iosched(args: &[&str]) -> std::process::Output {
    let o = Command::new(env!("CARGO_BIN_EXE_iosched")).args(args).output().expect("run iosched");
    assert!(o.status.success(), "iosched {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    o
}

/// A fresh directory, removed when dropped.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("iosched-tools-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
    pub fn s(&self, p: &str) -> String {
        self.join(p).to_str().unwrap().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let tests = vec![
        trial("report::repro_charts_show_their_data", &[], report::repro_charts_show_their_data),
        trial("report::compare_and_fio_charts_show_their_data", &[], report::compare_and_fio_charts_show_their_data),
        trial("report::the_page_references_nothing_outside_it", &[], report::the_page_references_nothing_outside_it),
        trial("report::a_recorded_trace_draws_its_seek_picture", &[], report::a_recorded_trace_draws_its_seek_picture),
        trial(
            "report::a_report_from_saved_json_is_the_same_bytes",
            &[],
            report::a_report_from_saved_json_is_the_same_bytes,
        ),
        trial(
            "report::chromium_renders_the_page_without_network",
            &[Need::Chromium, Need::Root],
            report::chromium_renders_the_page_without_network,
        ),
        trial(
            "fio::fios_jsonplus_script_reads_our_json_plus",
            &[Need::Fio],
            fio::fios_jsonplus_script_reads_our_json_plus,
        ),
        trial("fio::skewed_distributions_match_fio_genzipf", &[Need::Fio], fio::skewed_distributions_match_fio_genzipf),
        trial(
            "fio::fios_examples_run_or_are_refused_in_one_line",
            &[Need::FioExamples],
            fio::fios_examples_run_or_are_refused_in_one_line,
        ),
        trial("fio::log_files_have_fios_names_and_lines", &[Need::Fio], fio::log_files_have_fios_names_and_lines),
        trial(
            "mount::what_programs_write_reaches_backing_intact",
            &[Need::Fuse],
            mount::what_programs_write_reaches_backing_intact,
        ),
        trial(
            "mount::a_killed_daemon_harms_nothing_and_the_mount_point_recovers",
            &[Need::Fuse],
            mount::a_killed_daemon_harms_nothing_and_the_mount_point_recovers,
        ),
        trial(
            "mount::requests_are_owned_by_processes_or_threads",
            &[Need::Fuse, Need::Fio],
            mount::requests_are_owned_by_processes_or_threads,
        ),
        trial(
            "mount::sigterm_unmounts_after_writeback_and_waits_for_open_files",
            &[Need::Fuse],
            mount::sigterm_unmounts_after_writeback_and_waits_for_open_files,
        ),
        trial(
            "mount::unlinked_renamed_and_listed_files_behave_as_on_a_local_file_system",
            &[Need::Fuse],
            mount::unlinked_renamed_and_listed_files_behave_as_on_a_local_file_system,
        ),
        trial(
            "mount::the_seed_experiment_keeps_its_shape_on_a_small_tree",
            &[Need::Fuse],
            mount::the_seed_experiment_keeps_its_shape_on_a_small_tree,
        ),
        trial(
            "mount::bad_mount_points_and_outputs_are_refused",
            &[Need::Fuse],
            mount::bad_mount_points_and_outputs_are_refused,
        ),
    ];
    libtest_mimic::run(&args, tests).exit();
}
