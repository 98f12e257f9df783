//! iosched-disk: the device models of iosched — a rotating disk drive modelled after
//! DiskSim 4.0 (zones, skews, slips and spares, seek curves, exact rotational position,
//! controller overheads, the host link, a segmented buffer with read-ahead and write-back,
//! tagged/native command queueing), a simple SSD and a null device — behind the
//! sans-IO [`Device`] contract; disk profiles as TOML data with the built-in ones
//! embedded; DiskSim parameter-file import and validation against DiskSim's ten measured
//! drives; and the derived figures of a profile ([`info()`]).
//!
//! It is not a simulator: it has no event loop, no clock, no host, no scheduler. A host
//! (the simulator, or the real runtime's disk emulation) owns time and calls
//! [`Device::submit`], [`Device::poll_timeout`] and [`Device::poll_completion`]. Every
//! model is a deterministic function of its profile, a seed and those calls: no
//! `std::time`, no global randomness.
//!
//! Entry points: [`load_profile`] (a built-in name, a TOML file or a DiskSim `.parv`),
//! [`builtin_profiles`], [`Profile::build`], [`info()`], [`disksim::validate()`].
//! Model descriptions and the validation results are in `docs/disk-models.md`; the
//! profile format in `docs/disk-profiles.md`.
#![forbid(unsafe_code)]

pub mod device;
pub mod disksim;
pub mod hdd;
pub mod info;
pub mod input;
pub mod null;
pub mod profile;
pub mod ssd;

pub use device::{Device, DiskCommand, DiskCompletion};
pub use info::{DiskInfo, info};
pub use profile::{DeviceModel, Profile, ProfileError, ProfileKind, builtin_profiles, load_profile};
