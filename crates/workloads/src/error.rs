//! The error of a simulated run, typed where a caller acts on the difference: a run
//! stopped by a limit or a signal (whose finished siblings still make a report) against
//! a configuration that cannot run.

use std::fmt;

/// Why a workload did not produce its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The configuration, the machine or the scheduler spec is not valid, or the run did
    /// not finish as the tool's semantics require; the message says which and why.
    Invalid(String),
    /// The simulator stopped the run before its programs finished: `why` is SIGINT or
    /// SIGTERM (the caller's interrupt flag) or `--max-sim-time`; the message names the
    /// run, the simulated time and, at the time limit, what its programs were waiting for.
    Stopped { why: iosched_sim::Ended, message: String },
}

impl Error {
    /// Stopped by the caller's interrupt flag (SIGINT or SIGTERM).
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Error::Stopped { why: iosched_sim::Ended::Interrupted, .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Invalid(m) | Error::Stopped { message: m, .. } => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(m: String) -> Error {
        Error::Invalid(m)
    }
}

impl From<&str> for Error {
    fn from(m: &str) -> Error {
        Error::Invalid(m.to_string())
    }
}

/// For callers that only report: the message.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}
