//! The `iosched` binary, driven as a user would. One module per command group.

mod real;
mod sim;

use std::process::{Command, Output};

pub fn iosched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iosched")).args(args).output().expect("run iosched")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}
