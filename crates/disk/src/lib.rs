//! iosched-disk: device models (the contract is in `device.rs`).
pub mod device;
pub mod disksim;
pub mod hdd;
pub use device::{Device, DiskCommand, DiskCompletion};
