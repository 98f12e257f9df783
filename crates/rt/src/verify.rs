//! `--verify`: every 4 KiB block written carries a header and a CRC32C; every block read is
//! checked.
//!
//! Block layout (little endian):
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0..8   | magic `iosRTvf2` |
//! | 8..16  | byte offset of the block in the target's data area |
//! | 16..20 | generation: how many times this block was written in this run (1, 2, …) |
//! | 20..24 | owner (the submitting handle's owner id; 2³²−1 for any larger id) |
//! | 24..28 | run: an identity drawn afresh for every run (never 0) |
//! | 28..32 | CRC32C of the whole block with these four bytes taken as zero |
//! | 32..   | payload (the caller's bytes, kept) |
//!
//! The dispatcher stamps a write's blocks when the write arrives (so merging and
//! reordering happen on stamped data) and checks a read's blocks when it completes.
//! A read may legally see any generation from the last one *completed* before the read
//! arrived up to the last one *submitted* before it completed; anything else — a bad
//! CRC, a wrong offset (misdirected I/O), an older generation (lost write) — is a
//! mismatch. A block not written in this run is checked as far as it can be: if an
//! earlier `--verify` run stamped it, its CRC and its offset must hold (any generation
//! will do); a block without a header is counted as unverified. The run field tells the
//! two apart, so an earlier run's block read where this run's completed write should be
//! is a lost write even when its generation happens to fall in this run's range.

use crate::error::Mismatch;
use crate::sys::ALIGN;
use iosched_core::FastMap;

pub const BLOCK: usize = ALIGN;
const MAGIC: &[u8; 8] = b"iosRTvf2";

/// A block's header as read back.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub offset: u64,
    pub generation: u32,
    pub owner: u32,
    pub run: u32,
}

/// Write the header and CRC into one block.
pub fn stamp(block: &mut [u8], h: Header) {
    assert_eq!(block.len(), BLOCK);
    block[0..8].copy_from_slice(MAGIC);
    block[8..16].copy_from_slice(&h.offset.to_le_bytes());
    block[16..20].copy_from_slice(&h.generation.to_le_bytes());
    block[20..24].copy_from_slice(&h.owner.to_le_bytes());
    block[24..28].copy_from_slice(&h.run.to_le_bytes());
    block[28..32].fill(0);
    let c = crc(block);
    block[28..32].copy_from_slice(&c.to_le_bytes());
}

fn crc(block: &[u8]) -> u32 {
    let c = crc32c::crc32c(&block[..28]);
    let c = crc32c::crc32c_append(c, &[0; 4]);
    crc32c::crc32c_append(c, &block[32..])
}

/// What a block holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// No header at all (never stamped).
    Unstamped,
    /// A header with a valid CRC.
    Valid(Header),
    /// A header whose CRC does not match.
    BadCrc { stored: u32, computed: u32 },
}

/// Parse and check one block.
pub fn check(block: &[u8]) -> Check {
    assert_eq!(block.len(), BLOCK);
    if &block[0..8] != MAGIC {
        return Check::Unstamped;
    }
    let stored = u32::from_le_bytes(block[28..32].try_into().unwrap());
    let computed = crc(block);
    if stored != computed {
        return Check::BadCrc { stored, computed };
    }
    Check::Valid(Header {
        offset: u64::from_le_bytes(block[8..16].try_into().unwrap()),
        generation: u32::from_le_bytes(block[16..20].try_into().unwrap()),
        owner: u32::from_le_bytes(block[20..24].try_into().unwrap()),
        run: u32::from_le_bytes(block[24..28].try_into().unwrap()),
    })
}

#[derive(Copy, Clone, Debug, Default)]
struct Gen {
    /// Highest generation submitted.
    next: u32,
    /// Highest generation whose write completed successfully.
    committed: u32,
}

/// The dispatcher's bookkeeping of what every block should hold.
#[derive(Debug, Default)]
pub(crate) struct Verifier {
    /// This run's identity, stamped into every block it writes.
    run: u32,
    blocks: FastMap<u64, Gen>,
    pub checked: u64,
    pub unverified: u64,
    pub mismatches: u64,
}

impl Verifier {
    /// A verifier for one run; `run` must differ from every earlier run's on the target.
    pub(crate) fn new(run: u32) -> Verifier {
        Verifier { run, ..Verifier::default() }
    }

    /// A fresh run identity: the clock's nanoseconds mixed with the process id (a run's
    /// data need not be reproducible, only told apart from an earlier run's).
    pub(crate) fn fresh_run() -> u32 {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let x = (t as u64) ^ ((t >> 64) as u64) ^ ((std::process::id() as u64) << 32);
        let r = (x ^ (x >> 32)) as u32;
        r.max(1)
    }

    /// A write arrives: stamp its blocks with the next generations.
    pub(crate) fn stamp_write(&mut self, offset: u64, data: &mut [u8], owner: u64) {
        let owner = u32::try_from(owner).unwrap_or(u32::MAX);
        for (i, block) in data.chunks_exact_mut(BLOCK).enumerate() {
            let off = offset + (i * BLOCK) as u64;
            let g = self.blocks.entry(off).or_default();
            g.next += 1;
            stamp(block, Header { offset: off, generation: g.next, owner, run: self.run });
        }
    }

    /// A write completed successfully: its generations are now the floor for reads.
    pub(crate) fn write_done(&mut self, offset: u64, data: &[u8]) {
        for (i, block) in data.chunks_exact(BLOCK).enumerate() {
            let off = offset + (i * BLOCK) as u64;
            if let Check::Valid(h) = check(block)
                && h.run == self.run
                && let Some(g) = self.blocks.get_mut(&off)
            {
                g.committed = g.committed.max(h.generation);
            }
        }
    }

    /// A read arrives: remember, per block, the lowest generation of this run it may see
    /// (`None`: not written in this run; `Some(0)`: written, nothing completed yet).
    pub(crate) fn read_floor(&self, offset: u64, len: usize) -> Vec<Option<u32>> {
        (0..len / BLOCK).map(|i| self.blocks.get(&(offset + (i * BLOCK) as u64)).map(|g| g.committed)).collect()
    }

    /// A read completed: check every block; the first mismatch is returned.
    pub(crate) fn check_read(&mut self, offset: u64, data: &[u8], floor: &[Option<u32>]) -> Result<(), Mismatch> {
        let mut first = None;
        for (i, block) in data.chunks_exact(BLOCK).enumerate() {
            let off = offset + (i * BLOCK) as u64;
            // `None`: not written in this run. What an earlier run stamped still says where
            // the block belongs and whether it is intact, not which generation is current.
            let lo = floor.get(i).copied().flatten();
            let hi = self.blocks.get(&off).map(|g| g.next).unwrap_or(0);
            let by = if lo.is_none() { " at a block this run did not write" } else { "" };
            let bad = match (check(block), lo) {
                // Never stamped, or written here but nothing completed yet: old content is legal.
                (Check::Unstamped, None | Some(0)) => {
                    self.unverified += 1;
                    continue;
                }
                (Check::Unstamped, Some(lo)) => Some(format!("no verify header (expected generation {lo}..={hi})")),
                (Check::BadCrc { stored, computed }, _) => {
                    Some(format!("CRC32C mismatch{by}: stored {stored:08x}, computed {computed:08x}"))
                }
                (Check::Valid(h), _) if h.offset != off => Some(format!(
                    "block belongs at offset {} (generation {}, owner {}){by}: misdirected I/O",
                    h.offset, h.generation, h.owner
                )),
                // An earlier run's block is legal content only while nothing this run wrote
                // there has completed (floor 0).
                (Check::Valid(h), Some(lo)) if h.run != self.run && lo > 0 => Some(format!(
                    "an earlier run's block (generation {}), expected this run's {lo}..={hi}: lost write",
                    h.generation
                )),
                (Check::Valid(h), Some(lo)) if h.run == self.run && (h.generation < lo || h.generation > hi) => {
                    Some(format!(
                        "generation {} (owner {}), expected {lo}..={hi}: stale or lost write",
                        h.generation, h.owner
                    ))
                }
                (Check::Valid(_), _) => None,
            };
            self.checked += 1;
            if let Some(reason) = bad {
                self.mismatches += 1;
                first.get_or_insert(Mismatch { offset: off, reason });
            }
        }
        match first {
            Some(m) => Err(m),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_then_check_round_trips_and_detects_flips() {
        let mut b = vec![7u8; BLOCK];
        let h = Header { offset: 8192, generation: 3, owner: 11, run: 5 };
        stamp(&mut b, h);
        assert_eq!(check(&b), Check::Valid(h));
        b[100] ^= 1;
        assert!(matches!(check(&b), Check::BadCrc { .. }));
        assert_eq!(check(&[0u8; BLOCK]), Check::Unstamped);
    }

    #[test]
    fn verifier_accepts_fresh_and_rejects_stale_misdirected_and_corrupt() {
        let mut v = Verifier::default();
        let mut w = vec![0u8; 2 * BLOCK];
        v.stamp_write(0, &mut w, 1);
        let old = w.clone();
        v.write_done(0, &w);
        // A read after the write completed sees generation 1.
        let floor = v.read_floor(0, 2 * BLOCK);
        assert!(v.check_read(0, &w, &floor).is_ok());
        assert_eq!(v.checked, 2);
        // Second write; after it completes, the old content is a lost write.
        let mut w2 = vec![0u8; 2 * BLOCK];
        v.stamp_write(0, &mut w2, 2);
        v.write_done(0, &w2);
        let floor = v.read_floor(0, 2 * BLOCK);
        let e = v.check_read(0, &old, &floor).unwrap_err();
        assert_eq!(e.offset, 0);
        assert!(e.reason.contains("stale"), "{}", e.reason);
        // Misdirected: block 0's content read at offset 4096.
        let floor = v.read_floor(BLOCK as u64, BLOCK);
        let e = v.check_read(BLOCK as u64, &w2[..BLOCK], &floor).unwrap_err();
        assert!(e.reason.contains("misdirected"), "{}", e.reason);
        // Corrupt payload.
        let mut bad = w2.clone();
        bad[BLOCK + 77] ^= 0x40;
        let floor = v.read_floor(0, 2 * BLOCK);
        let e = v.check_read(0, &bad, &floor).unwrap_err();
        assert_eq!(e.offset, BLOCK as u64);
        assert!(e.reason.contains("CRC32C"), "{}", e.reason);
        // Blocks not written in this run: without a header, not checked.
        let floor = v.read_floor(1 << 20, BLOCK);
        assert!(v.check_read(1 << 20, &[9u8; BLOCK], &floor).is_ok());
        assert_eq!(v.unverified, 1);
    }

    /// A block an earlier run stamped is checked for its CRC and offset in a run that did
    /// not write it; its generation is not judged.
    #[test]
    fn blocks_from_an_earlier_run_are_checked_for_place_and_integrity() {
        let mut earlier = Verifier::new(1);
        let mut data = vec![0u8; 2 * BLOCK];
        earlier.stamp_write(8 * BLOCK as u64, &mut data, 3);
        earlier.stamp_write(8 * BLOCK as u64, &mut data, 3); // generation 2
        let mut v = Verifier::new(2);
        let at = 8 * BLOCK as u64;
        let floor = v.read_floor(at, 2 * BLOCK);
        assert!(v.check_read(at, &data, &floor).is_ok());
        assert_eq!((v.checked, v.unverified, v.mismatches), (2, 0, 0));
        // Read back at the wrong place, or torn.
        let e = v.check_read(at + BLOCK as u64, &data[..BLOCK], &v.read_floor(at + BLOCK as u64, BLOCK)).unwrap_err();
        assert!(e.reason.contains("misdirected") && e.reason.contains("did not write"), "{}", e.reason);
        let mut torn = data.clone();
        torn[100] ^= 1;
        let e = v.check_read(at, &torn, &v.read_floor(at, 2 * BLOCK)).unwrap_err();
        assert_eq!(e.offset, at);
        assert!(e.reason.contains("CRC32C"), "{}", e.reason);
        // A write of this run in flight (nothing completed): a read may still see the earlier
        // run's generation 2, though this run's count is 1.
        let mut w = vec![0u8; BLOCK];
        v.stamp_write(at, &mut w, 1);
        assert!(v.check_read(at, &data[..BLOCK], &v.read_floor(at, BLOCK)).is_ok());
        // Once that write completed, the earlier run's block is a lost write, though its
        // generation is within this run's range after a second write.
        v.write_done(at, &w);
        v.stamp_write(at, &mut w, 1);
        let e = v.check_read(at, &data[..BLOCK], &v.read_floor(at, BLOCK)).unwrap_err();
        assert!(e.reason.contains("earlier run") && e.reason.contains("lost write"), "{}", e.reason);
    }

    #[test]
    fn run_identities_are_never_zero() {
        assert_ne!(Verifier::fresh_run(), 0);
    }

    #[test]
    fn a_read_racing_a_write_may_see_either_generation() {
        let mut v = Verifier::default();
        let mut w1 = vec![0u8; BLOCK];
        v.stamp_write(0, &mut w1, 1);
        v.write_done(0, &w1);
        let floor = v.read_floor(0, BLOCK); // read arrives
        let mut w2 = vec![0u8; BLOCK];
        v.stamp_write(0, &mut w2, 1); // overlapping write submitted
        assert!(v.check_read(0, &w1, &floor).is_ok());
        assert!(v.check_read(0, &w2, &floor).is_ok());
    }
}
