//! Errors: per-request I/O errors (data, never panics) and errors opening a target.

use std::fmt;

/// How one request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IoError {
    /// The kernel or the device returned an error (positive errno) for the request.
    Os { offset: u64, len: u32, errno: i32 },
    /// Fewer bytes than asked were transferred.
    Short { offset: u64, len: u32, done: u32 },
    /// `--verify`: a block read back does not hold what was written.
    Verify(Mismatch),
    /// The request itself is malformed (alignment, bounds, length); it never reached the
    /// queue.
    Invalid(String),
    /// The runtime stopped (or went away) before the request completed.
    Stopped,
}

/// Result of one request: the number of bytes transferred.
pub type IoResult = Result<u32, IoError>;

/// A `--verify` mismatch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Byte offset of the bad block in the target's data area.
    pub offset: u64,
    pub reason: String,
}

impl IoError {
    /// The kernel's name for an errno we report often.
    pub fn errno_name(errno: i32) -> &'static str {
        match errno {
            libc::EIO => "EIO",
            libc::ENOSPC => "ENOSPC",
            libc::EINVAL => "EINVAL",
            libc::EBADF => "EBADF",
            libc::EFBIG => "EFBIG",
            libc::EROFS => "EROFS",
            libc::ENXIO => "ENXIO",
            libc::EAGAIN => "EAGAIN",
            libc::ECANCELED => "ECANCELED",
            _ => "errno",
        }
    }
    /// A short class name for counting errors in reports.
    pub fn kind(&self) -> String {
        match self {
            IoError::Os { errno, .. } => match Self::errno_name(*errno) {
                "errno" => format!("errno {errno}"),
                n => n.to_string(),
            },
            IoError::Short { .. } => "short".into(),
            IoError::Verify(_) => "verify".into(),
            IoError::Invalid(_) => "invalid".into(),
            IoError::Stopped => "stopped".into(),
        }
    }
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::Os { offset, len, errno } => write!(
                f,
                "{} ({}) on {len} bytes at offset {offset}",
                Self::errno_name(*errno),
                std::io::Error::from_raw_os_error(*errno)
            ),
            IoError::Short { offset, len, done } => {
                write!(f, "short transfer: {done} of {len} bytes at offset {offset}")
            }
            IoError::Verify(m) => write!(f, "verify mismatch at offset {}: {}", m.offset, m.reason),
            IoError::Invalid(m) => write!(f, "invalid request: {m}"),
            IoError::Stopped => write!(f, "the runtime stopped before the request completed"),
        }
    }
}

impl std::error::Error for IoError {}

/// An error opening, creating or configuring a target (the message names the path or the
/// option and says what was expected).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl Error {
    pub(crate) fn io(path: &std::path::Path, what: &str, e: std::io::Error) -> Error {
        Error(format!("{}: {what}: {e}", path.display()))
    }
}
