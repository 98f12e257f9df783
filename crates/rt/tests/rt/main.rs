//! `iosched-rt` driven through its library API on real files (and, as root, loop
//! devices). One module per concern; helpers shared by all are in `common`.
//!
//! The harness is libtest-mimic's rather than `#[test]`, so that what a test needs from the
//! machine is declared here and checked before it runs (`need`): a test whose need is
//! missing is counted as `ignored` in the summary, or fails under `IOSCHED_TEST_REQUIRE`.
//! Every test that is not about the thread pool runs on io_uring, asked for by name.

mod blockdev;
mod common;
mod errors;
mod fio;
mod need;
mod replay;
mod runtime;
mod space;
mod store;

use need::{Need, trial};

fn main() {
    use Need::*;
    let args = libtest_mimic::Arguments::from_args();
    let trials = vec![
        trial("blockdev::io_uring_backend_is_available", &[IoUring], blockdev::io_uring_backend_is_available),
        trial(
            "blockdev::loop_devices_blank_is_used_signature_and_mount_are_refused",
            &[IoUring, Losetup, Mkfs],
            blockdev::loop_devices_blank_is_used_signature_and_mount_are_refused,
        ),
        trial(
            "blockdev::loop_devices_foreign_data_is_never_written_unforced",
            &[IoUring, Losetup, Mkfs],
            blockdev::loop_devices_foreign_data_is_never_written_unforced,
        ),
        trial(
            "errors::a_corrupted_block_is_detected_with_its_offset",
            &[IoUring],
            errors::a_corrupted_block_is_detected_with_its_offset,
        ),
        trial(
            "errors::mixed_read_write_under_every_scheduler_has_no_mismatch",
            &[IoUring],
            errors::mixed_read_write_under_every_scheduler_has_no_mismatch,
        ),
        trial(
            "errors::a_short_transfer_is_reported_and_counted",
            &[IoUring],
            errors::a_short_transfer_is_reported_and_counted,
        ),
        trial(
            "errors::an_eio_stops_the_workload_with_its_offset",
            &[IoUring],
            errors::an_eio_stops_the_workload_with_its_offset,
        ),
        trial(
            "errors::enospc_is_reported_per_request_and_at_creation",
            &[IoUring, TmpfsDirectIo],
            errors::enospc_is_reported_per_request_and_at_creation,
        ),
        trial(
            "fio::our_noop_keeps_up_with_fio_on_the_same_file",
            &[IoUring, Fio],
            fio::our_noop_keeps_up_with_fio_on_the_same_file,
        ),
        trial(
            "replay::recordings_replay_identically_for_every_scheduler",
            &[IoUring],
            replay::recordings_replay_identically_for_every_scheduler,
        ),
        trial(
            "replay::emulated_ide_disk_shows_anticipation_winning_on_parallel_sequential_reads",
            &[IoUring],
            replay::emulated_ide_disk_shows_anticipation_winning_on_parallel_sequential_reads,
        ),
        trial(
            "runtime::every_scheduler_reads_back_what_it_wrote",
            &[IoUring],
            runtime::every_scheduler_reads_back_what_it_wrote,
        ),
        trial("runtime::thread_pool_backend_works_too", &[], runtime::thread_pool_backend_works_too),
        trial(
            "runtime::callbacks_complete_and_return_buffers",
            &[IoUring],
            runtime::callbacks_complete_and_return_buffers,
        ),
        trial("runtime::wakeups_are_never_lost", &[IoUring], runtime::wakeups_are_never_lost),
        trial(
            "runtime::mq_deadline_serves_real_time_readers_first_on_real_io",
            &[IoUring],
            runtime::mq_deadline_serves_real_time_readers_first_on_real_io,
        ),
        trial(
            "runtime::a_callbacks_next_request_goes_ahead_of_waiting_completions",
            &[IoUring],
            runtime::a_callbacks_next_request_goes_ahead_of_waiting_completions,
        ),
        trial(
            "runtime::randrw_mixes_reads_and_writes_as_asked",
            &[IoUring],
            runtime::randrw_mixes_reads_and_writes_as_asked,
        ),
        trial(
            "space::a_run_that_does_not_fit_is_refused_before_writing",
            &[IoUring, TmpfsDirectIo],
            space::a_run_that_does_not_fit_is_refused_before_writing,
        ),
        trial("space::offset_gaps_take_no_space", &[IoUring, TmpfsDirectIo], space::offset_gaps_take_no_space),
        trial("space::a_reading_load_writes_nothing", &[IoUring], space::a_reading_load_writes_nothing),
        trial(
            "store::a_store_target_puts_each_unit_at_its_place",
            &[IoUring],
            store::a_store_target_puts_each_unit_at_its_place,
        ),
        trial(
            "store::a_store_target_works_on_the_thread_pool_too",
            &[],
            store::a_store_target_works_on_the_thread_pool_too,
        ),
        trial(
            "store::a_store_target_refuses_verify_and_plain_submissions",
            &[IoUring],
            store::a_store_target_refuses_verify_and_plain_submissions,
        ),
        trial("need::requirements_are_enforced", &[], need::requirements_are_enforced),
        trial(
            "fio::job_files_issue_the_same_ios_as_the_simulator",
            &[],
            fio::job_files_issue_the_same_ios_as_the_simulator,
        ),
        trial("fio::our_fio_json_keys_are_fios", &[Fio], fio::our_fio_json_keys_are_fios),
        trial("fio::our_normal_output_has_fios_lines", &[Fio], fio::our_normal_output_has_fios_lines),
        trial("fio::real_jobs_keep_the_simulators_rules", &[], fio::real_jobs_keep_the_simulators_rules),
    ];
    libtest_mimic::run(&args, trials).exit();
}
