//! The `iosched` binary: the command line of `iosched_cli` with the built-in policies.

fn main() -> std::process::ExitCode {
    iosched_cli::main_with(&[])
}
