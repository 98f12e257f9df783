//! `iosched`: the command line. Thin: argument parsing and report formatting over the
//! library crates (`iosched-core`, `iosched-policies`, `iosched-sim`, …).

mod schedulers;

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
    /// List every scheduler with its tunables (name, unit, default, range, meaning).
    Schedulers(schedulers::Args),
    /// Run a scenario script against a scheduler and print its transcript.
    Scenario(schedulers::ScenarioArgs),
    /// Replay a recorded queue-input trace through a fresh queue and check the dispatch order.
    Replay(schedulers::ReplayArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Schedulers(a) => schedulers::run(a),
        Cmd::Scenario(a) => schedulers::scenario(a),
        Cmd::Replay(a) => schedulers::replay(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("iosched: {e}");
            ExitCode::FAILURE
        }
    }
}
