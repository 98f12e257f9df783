//! iosched-core: the sans-IO scheduling core.
#![forbid(unsafe_code)]

pub mod request;
pub mod time;

pub use request::{Dir, IoClass, IoPrio, Op, Owner, ReqId, Request, Status};
pub use time::{Duration, Hz, Instant};
