//! `iosched-sstf`: the iosched command line with SSTF added beside the built-in policies,
//! e.g. `iosched-sstf tiobench --sched sstf,deadline` or `iosched-sstf compare --a deadline
//! --b sstf`.

fn main() -> std::process::ExitCode {
    iosched_cli::main_with(&[iosched_example_sstf::POLICY])
}
