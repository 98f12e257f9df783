//! iosched-disk: device models (the contract is in `device.rs`).
pub mod device;
pub use device::{Device, DiskCommand, DiskCompletion};
