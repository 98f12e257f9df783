//! `--emulate PROFILE`: make a fast target behave like a disk model.
//!
//! The data goes to the real target; the dispatcher also hands every dispatched request to
//! an `iosched-disk` model (the [`Device`] contract) at the same instant, and delivers the
//! completion to the queue only when *both* the real I/O finished and the model says the
//! request is done. The model is driven by exactly the request stream the scheduler
//! produced, so seeks, rotation and the drive's cache respond to the scheduler's order as
//! on the modelled disk. The queue depth defaults to the model's (1 for the IDE profiles).
//!
//! Profiles are those of `iosched-disk` (`iosched_disk::load_profile`): a built-in name
//! (`ide-2003`, `sata-2004-ncq`, …), a `.toml` profile or a DiskSim `.parv` file.

use crate::error::Error;
use iosched_disk::Device;

/// Load a disk model by profile name or path; `seed` fixes the spindle's starting angle.
/// Also says whether the modelled disk rotates (the queue's `rotational` flag).
pub fn load(profile: &str, seed: u64) -> Result<(Box<dyn Device + Send>, bool), Error> {
    // The error names the profile or file (and line) itself; an empty name has none.
    let p = iosched_disk::load_profile(profile).map_err(|e| {
        Error(if profile.trim().is_empty() { format!("--emulate: {e}") } else { format!("--emulate {e}") })
    })?;
    let rotational = matches!(p.kind, iosched_disk::profile::ProfileKind::Hdd(_));
    Ok((p.build_boxed(seed), rotational))
}

#[cfg(test)]
mod tests {
    use super::*;
    use iosched_core::{Instant, Op};
    use iosched_disk::DiskCommand;

    /// Service time of a read sequence, each submitted when the previous completes.
    fn run(d: &mut dyn Device, cmds: &[(u64, u32)]) -> u64 {
        let mut now = Instant::ZERO;
        for (i, &(sector, len)) in cmds.iter().enumerate() {
            let id = i as u64;
            d.submit(now, DiskCommand { id, op: Op::Read, sector, len_sectors: len });
            loop {
                let t = d.poll_timeout().expect("a command is outstanding");
                now = now.max(t);
                if let Some(c) = d.poll_completion(now) {
                    assert_eq!(c.id, id);
                    break;
                }
            }
        }
        now.as_nanos()
    }

    #[test]
    fn ide_2003_punishes_interleaved_streams() {
        let seq: Vec<(u64, u32)> = (0..64).map(|i| (i * 8, 8)).collect();
        let (mut d, rotational) = load("ide-2003", 1).unwrap();
        assert!(rotational);
        let t_seq = run(&mut *d, &seq);
        let inter: Vec<(u64, u32)> = (0..64).map(|i| ((i % 16) * 2_000_000 + (i / 16) * 8, 8)).collect();
        let t_inter = run(&mut *load("ide-2003", 1).unwrap().0, &inter);
        assert!(t_inter > 4 * t_seq, "interleaved {t_inter} ns vs sequential {t_seq} ns");
        let Err(e) = load("no-such-disk", 1) else { panic!("loaded a profile that does not exist") };
        assert!(e.0.contains("ide-2003"), "{e}");
    }
}
