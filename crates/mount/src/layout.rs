//! Where files live on the emulated disk: a simple block allocator.
//!
//! The mount's files keep their content in BACKING; this module only gives each one
//! sectors on the virtual disk, so that a read of a file becomes a request at a place a
//! scheduler and a disk model can reason about. The allocator is deliberately simple and
//! says so:
//!
//! - The disk is cut into 4 KiB blocks ([`BLOCK`]). A file owns a list of extents (runs of
//!   blocks) covering its bytes from 0 in order.
//! - A block is allocated when a file first needs it: at mount, for every regular file
//!   already in BACKING (visited depth-first, each directory's entries in name order), and
//!   later, when a write reaches past the blocks a file has. This is what a fresh ext2
//!   does for a tree copied onto it one file at a time: each file goes right after the
//!   previous one, so `find | xargs cat` in creation order reads forward.
//! - The search for free blocks starts at the *goal*: right after the file's last block
//!   when it has one (so a growing file stays contiguous while the space after it is
//!   free), else at the cursor, the end of the last allocation made for any file. First
//!   fit from there, wrapping around to the disk's start.
//! - Blocks of a truncated or deleted file go back to the free list and are reused by the
//!   search above.
//!
//! What it is not: ext2. There are no block groups (ext2 spreads directories over the
//! disk with its Orlov allocator), no inode tables, no indirect blocks, no
//! pre-allocation window; metadata takes no blocks and does no I/O.

use std::collections::BTreeMap;

/// Allocation unit: 4 KiB, the page size the kernel sends FUSE I/O in.
pub const BLOCK: u64 = 4096;
/// Sectors per block.
pub const BLOCK_SECTORS: u64 = BLOCK / 512;

/// A run of blocks: `len` blocks from block `start` of the disk.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    pub start: u64,
    pub len: u64,
}

/// One contiguous piece of a file's byte range on the disk: `len` bytes of the file from
/// `offset` on are at `sector` of the disk.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub offset: u64,
    pub len: u64,
    pub sector: u64,
}

/// A file's blocks, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileMap {
    pub extents: Vec<Extent>,
}

impl FileMap {
    /// Blocks the file has.
    pub fn blocks(&self) -> u64 {
        self.extents.iter().map(|e| e.len).sum()
    }

    /// The pieces holding bytes `[offset, offset + len)`; the range must be within the
    /// file's blocks (see [`Allocator::extend`]). A piece starts at the byte's own sector,
    /// so an unaligned range maps to the sectors that hold it.
    pub fn pieces(&self, offset: u64, len: u64) -> Vec<Piece> {
        let mut out = Vec::new();
        let end = offset + len;
        let mut at = 0u64; // file byte where the current extent starts
        for e in &self.extents {
            let e_end = at + e.len * BLOCK;
            if e_end > offset && at < end {
                let from = offset.max(at);
                let to = end.min(e_end);
                let sector = e.start * BLOCK_SECTORS + (from - at) / 512;
                out.push(Piece { offset: from, len: to - from, sector });
            }
            at = e_end;
            if at >= end {
                break;
            }
        }
        debug_assert_eq!(out.iter().map(|p| p.len).sum::<u64>(), len, "range past the file's blocks");
        out
    }
}

/// The disk's free space and where the next search starts.
#[derive(Clone, Debug)]
pub struct Allocator {
    /// Free runs: start block → length; never adjacent (merged on free).
    free: BTreeMap<u64, u64>,
    blocks: u64,
    cursor: u64,
}

/// The disk is full.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NoSpace;

impl Allocator {
    /// A disk of `capacity` bytes, all free (a partial last block is not used).
    pub fn new(capacity: u64) -> Allocator {
        let blocks = capacity / BLOCK;
        let mut free = BTreeMap::new();
        if blocks > 0 {
            free.insert(0, blocks);
        }
        Allocator { free, blocks, cursor: 0 }
    }

    /// Blocks on the disk, and of those free.
    pub fn blocks(&self) -> (u64, u64) {
        (self.blocks, self.free.values().sum())
    }

    /// Give `map` blocks until it covers `bytes` bytes. On `NoSpace` nothing changes.
    pub fn extend(&mut self, map: &mut FileMap, bytes: u64) -> Result<(), NoSpace> {
        let want = bytes.div_ceil(BLOCK).saturating_sub(map.blocks());
        if want == 0 {
            return Ok(());
        }
        if self.blocks().1 < want {
            return Err(NoSpace);
        }
        let mut need = want;
        while need > 0 {
            let goal = map.extents.last().map_or(self.cursor, |e| e.start + e.len);
            let got = self.take_from(goal, need);
            self.cursor = got.start + got.len;
            match map.extents.last_mut() {
                Some(last) if last.start + last.len == got.start => last.len += got.len,
                _ => map.extents.push(got),
            }
            need -= got.len;
        }
        Ok(())
    }

    /// Cut `map` down to `bytes` bytes' blocks, freeing the rest.
    pub fn truncate(&mut self, map: &mut FileMap, bytes: u64) {
        let mut keep = bytes.div_ceil(BLOCK);
        let mut out = Vec::new();
        for e in map.extents.drain(..) {
            if keep >= e.len {
                keep -= e.len;
                out.push(e);
            } else {
                if keep > 0 {
                    out.push(Extent { start: e.start, len: keep });
                }
                self.release(Extent { start: e.start + keep, len: e.len - keep });
                keep = 0;
            }
        }
        map.extents = out;
    }

    /// Free all of `map`'s blocks.
    pub fn free(&mut self, map: &mut FileMap) {
        self.truncate(map, 0);
    }

    /// Up to `need` free blocks, first fit from `goal` (wrapping): the run at or after
    /// the goal, or the goal's own run when it lies inside one. The caller checked that
    /// some block is free.
    fn take_from(&mut self, goal: u64, need: u64) -> Extent {
        let inside = self.free.range(..=goal).next_back().filter(|(s, l)| **s + **l > goal).map(|(s, l)| (*s, *l));
        let (start, len) = inside
            .map(|(s, l)| (goal, s + l - goal))
            .or_else(|| self.free.range(goal..).next().map(|(s, l)| (*s, *l)))
            .or_else(|| self.free.iter().next().map(|(s, l)| (*s, *l)))
            .expect("free space was checked");
        let take = need.min(len);
        // Split the run [run_start, run_start + run_len) around [start, start + take).
        let (run_start, run_len) = self.free.range(..=start).next_back().map(|(s, l)| (*s, *l)).expect("run");
        self.free.remove(&run_start);
        if start > run_start {
            self.free.insert(run_start, start - run_start);
        }
        let tail = run_start + run_len - (start + take);
        if tail > 0 {
            self.free.insert(start + take, tail);
        }
        Extent { start, len: take }
    }

    fn release(&mut self, e: Extent) {
        let (mut start, mut len) = (e.start, e.len);
        if let Some((&ps, &pl)) = self.free.range(..start).next_back() {
            debug_assert!(ps + pl <= start, "double free of block {start}");
            if ps + pl == start {
                self.free.remove(&ps);
                start = ps;
                len += pl;
            }
        }
        if let Some(&nl) = self.free.get(&(start + len)) {
            self.free.remove(&(start + len));
            len += nl;
        }
        self.free.insert(start, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_follow_each_other_and_a_growing_file_stays_contiguous() {
        let mut a = Allocator::new(100 * BLOCK);
        let (mut f, mut g) = (FileMap::default(), FileMap::default());
        a.extend(&mut f, 5000).unwrap();
        a.extend(&mut g, 100).unwrap();
        assert_eq!(f.extents, vec![Extent { start: 0, len: 2 }]);
        assert_eq!(g.extents, vec![Extent { start: 2, len: 1 }]);
        // f grows: the block after it is g's, so it continues at the cursor.
        a.extend(&mut f, 3 * BLOCK).unwrap();
        assert_eq!(f.extents, vec![Extent { start: 0, len: 2 }, Extent { start: 3, len: 1 }]);
        // g's goal, the block after its own, is f's now: first fit from there is block 4.
        a.extend(&mut g, 2 * BLOCK).unwrap();
        assert_eq!(g.extents, vec![Extent { start: 2, len: 1 }, Extent { start: 4, len: 1 }]);
        assert_eq!(a.blocks(), (100, 95));
    }

    #[test]
    fn pieces_split_at_extents_and_keep_unaligned_offsets() {
        let m = FileMap { extents: vec![Extent { start: 10, len: 1 }, Extent { start: 20, len: 2 }] };
        let p = m.pieces(1000, 5000);
        assert_eq!(
            p,
            vec![
                Piece { offset: 1000, len: 3096, sector: 10 * 8 + 1 },
                Piece { offset: 4096, len: 1904, sector: 20 * 8 },
            ]
        );
    }

    #[test]
    fn freed_blocks_merge_and_are_reused_and_a_full_disk_changes_nothing() {
        let mut a = Allocator::new(4 * BLOCK);
        let (mut f, mut g) = (FileMap::default(), FileMap::default());
        a.extend(&mut f, 2 * BLOCK).unwrap();
        a.extend(&mut g, 2 * BLOCK).unwrap();
        let before = g.clone();
        assert_eq!(a.extend(&mut g, 3 * BLOCK), Err(NoSpace));
        assert_eq!(g, before);
        a.truncate(&mut f, 1);
        assert_eq!(f.extents, vec![Extent { start: 0, len: 1 }]);
        a.free(&mut g);
        assert_eq!(a.blocks(), (4, 3));
        // The free runs 1 and 2..4 merged: one run of three.
        assert_eq!(a.free.len(), 1);
        let mut h = FileMap::default();
        a.extend(&mut h, 3 * BLOCK).unwrap();
        assert_eq!(h.blocks(), 3);
        assert_eq!(a.blocks(), (4, 0));
    }
}
