//! iosched-cli: the `iosched` command line, as a library so that a crate of your own can
//! build an `iosched` binary with its own policies added ([`main_with`]; see
//! `examples/custom-scheduler`).
//!
//! What it is: argument parsing, report formatting, and everything that owns the terminal
//! (signals, progress, messages) over the library crates (`iosched-core`,
//! `iosched-policies`, `iosched-sim`, `iosched-workloads`, `iosched-rt`). What it is not: a
//! place for semantics. A benchmark's rules, a policy's decisions and a model's timing
//! live in those crates, where both worlds and the tests use them.

mod bench;
mod disk;
mod fio;
mod mount;
mod progress;
mod real;
mod record;
mod report;
mod schedulers;
mod signals;
mod sim;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "iosched",
    version,
    about = "A workbench for disk I/O scheduling: the Linux elevators as sans-IO state machines, a deterministic host-and-disk simulator, and the classic benchmarks."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// The main job: both seed reports (tiobench AS vs deadline, 2003; reading many files
    /// under a streaming write, 2003) run in the simulator beside the published numbers,
    /// with a PASS/FAIL verdict per claim.
    Repro(sim::ReproArgs),
    /// tiobench (tiotest 0.3.3 semantics) in the simulator; tiobench.pl's table. Default
    /// machine: --disk ide-2003 --mem 256M --cpu piii-1000 --host linux-2.5 (the 2003 report's).
    Tiobench(sim::TiobenchArgs),
    /// `find tree -type f | xargs cat` of a 2.4.19 kernel tree while a streaming write
    /// (or read) runs, in the simulator. Default machine: --disk ide-2003-fast --mem 256M
    /// --cpu p4-ht --host linux-2.5 (the 2003 report's).
    Readmany(sim::ReadmanyArgs),
    /// The disk models: list, info, DiskSim validation.
    Disk(disk::Args),
    /// List every scheduler with its tunables (name, unit, default, range, meaning).
    Schedulers(schedulers::Args),
    /// Run a scenario script against a scheduler and print its transcript.
    #[command(after_help = schedulers::SCENARIO_FORMAT)]
    Scenario(schedulers::ScenarioArgs),
    /// Replay a recorded queue-input trace through a fresh queue and check the dispatch order.
    Replay(schedulers::ReplayArgs),
    /// Run workloads on real files and block devices (io_uring, O_DIRECT), optionally
    /// with an emulated disk's timing.
    Real(real::Args),
    /// Present a directory through a scheduler (FUSE): unmodified programs' reads, writes
    /// and fsyncs become requests in the queue, owned by their processes, optionally with
    /// an emulated disk's timing. Runs in the foreground until unmounted.
    Mount(mount::MountArgs),
    /// Unmount an `iosched mount` (from another shell).
    Umount(mount::UmountArgs),
    /// Write the read-many report's synthetic 2.4.19 kernel tree as real files (e.g. into
    /// a mount, for `find | xargs cat`).
    KernelTree(mount::KernelTreeArgs),
    /// sysbench (1.0.20 semantics) in the simulator: `iosched sysbench fileio --file-test-mode rndrw`.
    /// Default machine: --disk sata-2004-ncq --mem 1024M --cpu p4-ht --host linux-2.6 (2007-like).
    Sysbench(bench::SysbenchArgs),
    /// iozone (3.487 semantics) in the simulator; iozone's KiB/s table. Default machine:
    /// --disk sata-2004-ncq --mem 1024M --cpu p4-ht --host linux-2.6 (2007-like).
    Iozone(bench::IozoneArgs),
    /// aio-stress (0.21 semantics) in the simulator; its output lines. Default machine:
    /// --disk sata-2004-ncq --mem 1024M --cpu p4-ht --host linux-2.6 (2007-like).
    AioStress(bench::AioStressArgs),
    /// A/B study of two scheduler specs over benchmark suites with several seeds, e.g.
    /// `--a cfq --b cfq:defer_slice_start=1 --bench seed-2007 --runs 5`. Default machine:
    /// --disk sata-2004-ncq --mem 1024M --cpu p4-ht --host linux-2.6 (2007-like).
    Compare(bench::CompareArgs),
    /// fio job files in the simulator, fio's report (normal or JSON); one run per --sched
    /// spec. Default machine: --disk sata-2004-ncq --mem 1024M --cpu p4-ht --host linux-2.6
    /// (2007-like).
    Fio(fio::Args),
    /// Draw the report page (charts as SVG, one self-contained HTML page) from saved
    /// --json output of repro, tiobench, readmany, compare, fio or the real runs, or from
    /// a queue trace (--record): its seek picture.
    Report(report::Args),
}

/// The `iosched` command line, with `policies` added to the built-in ones: every command
/// (`schedulers`, `scenario`, `tiobench`, `compare`, `real`, …) takes them in a spec like
/// a built-in policy. Returns the process's exit status.
pub fn main_with(policies: &[iosched_policies::Policy]) -> ExitCode {
    // `iosched schedulers | head` ends quietly instead of panicking on the closed pipe.
    iosched_rt::default_sigpipe();
    for p in policies {
        if let Err(e) = iosched_policies::register(*p) {
            eprintln!("iosched: cannot add policy `{}`: {e}", p.name);
            return ExitCode::FAILURE;
        }
    }
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Repro(a) => sim::repro(a),
        Cmd::Tiobench(a) => sim::tiobench(a),
        Cmd::Readmany(a) => sim::readmany(a),
        Cmd::Disk(a) => disk::run(a),
        Cmd::Schedulers(a) => schedulers::run(a),
        Cmd::Scenario(a) => schedulers::scenario(a),
        Cmd::Replay(a) => schedulers::replay(a),
        Cmd::Real(a) => real::run(a),
        Cmd::Mount(a) => mount::mount(a),
        Cmd::Umount(a) => mount::umount(a),
        Cmd::KernelTree(a) => mount::kernel_tree(a),
        Cmd::Sysbench(a) => bench::sysbench(a),
        Cmd::Iozone(a) => bench::iozone(a),
        Cmd::AioStress(a) => bench::aio_stress(a),
        Cmd::Compare(a) => bench::compare(a),
        Cmd::Fio(a) => fio::main(a),
        Cmd::Report(a) => report::run(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("iosched: {e}");
            ExitCode::FAILURE
        }
    }
}
