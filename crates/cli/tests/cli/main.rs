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

/// `iosched schedulers | head -1`: the closed pipe ends the process quietly (SIGPIPE, as
/// for C tools), with no panic message. The pipe's read end is closed before the program
/// starts, so its first write meets a closed pipe.
#[test]
fn a_closed_output_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let o = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .arg("schedulers")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .expect("run iosched");
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    assert_eq!(o.status.signal(), Some(SIGPIPE), "{:?}", o.status);
}

const SIGPIPE: i32 = 13; // on Linux
