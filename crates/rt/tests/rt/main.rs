//! `iosched-rt` driven through its library API on real files (and, as root, loop
//! devices). One module per concern; helpers shared by all are in `common`.

mod blockdev;
mod common;
mod errors;
mod replay;
mod runtime;
