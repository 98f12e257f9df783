//! An ext2-like filesystem layout: what the results depend on, not a filesystem.
//!
//! - Block groups of 32768 × 4 KiB blocks, each starting with its metadata (superblock
//!   copy, bitmaps) and its inode table, then data.
//! - Directories are spread across groups (top-level directories go to successive
//!   groups, as the Orlov allocator does for directories under the root); a directory's
//!   files get inodes and data in the directory's group.
//! - Blocks are allocated when a file is written (ext2 has no delayed allocation), at the
//!   goal "the block after the file's last block" — for a file's first block, its group's
//!   start, plus since 2.5.53 the writing task's *colour* (`pid % 16` sixteenths of the group) —
//!   with 8-block preallocation and ext2's search when the goal is taken (`grab_block`); a
//!   file's indirect blocks are allocated inline, just before the data they map, as ext2
//!   does.
//! - Reading a file needs its inode (the inode-table block) and, past the 12 direct blocks,
//!   its indirect blocks: these are metadata blocks read through the block-device cache.
//!
//! Sectors are 512 bytes; the filesystem starts at `start_sector` on the device.

use std::collections::BTreeMap;

pub const BLOCK: u64 = 4096;
pub const SECTORS_PER_BLOCK: u64 = 8;
pub const BLOCKS_PER_GROUP: u64 = 32768;
/// Sectors before the filesystem (the classic first partition's offset).
const PARTITION_OFFSET: u64 = 63;
/// The smallest device a filesystem fits on: the partition offset and one block group
/// (128 MiB of 4 KiB blocks).
pub const MIN_DEVICE_SECTORS: u64 = PARTITION_OFFSET + BLOCKS_PER_GROUP * SECTORS_PER_BLOCK;
const INODE_SIZE: u64 = 128;
const INODES_PER_GROUP: u64 = 16384;
const INODE_TABLE_BLOCKS: u64 = INODES_PER_GROUP * INODE_SIZE / BLOCK; // 512
/// Blocks at the start of a group before the inode table: superblock copy, group
/// descriptors, block bitmap, inode bitmap.
const GROUP_META_BLOCKS: u64 = 4;
/// Direct block pointers in an inode.
const DIRECT: u64 = 12;
/// Pointers per indirect block (4 KiB / 4 bytes).
const PER_INDIRECT: u64 = 1024;
/// The primary superblock and group-descriptor blocks: group 0's first two blocks.
const SUPERBLOCK: u64 = 0;
const GROUP_DESCRIPTORS: u64 = 1;
/// ext2 preallocation window.
const PREALLOC: u64 = 8;

/// A file (or directory) of the simulated filesystem.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A directory.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct DirId(pub u32);

#[derive(Debug, Clone)]
pub struct File {
    pub name: String,
    pub dir: DirId,
    pub inode: u64,
    pub size: u64,
    /// A block device node ([`Fs::create_device`]): the whole file system's blocks, raw.
    pub device: bool,
    /// File block → disk block, for allocated blocks (sorted, contiguous runs).
    extents: Extents,
    /// Indirect blocks by the first file block they map.
    indirect: BTreeMap<u64, u64>,
    /// Last allocated disk block (the allocation goal), and preallocated blocks.
    last_block: Option<u64>,
    prealloc: Option<(u64, u64)>,
    /// Number of allocated data blocks.
    blocks: u64,
}

/// A file's runs: file block → (disk block, length). Every read maps its blocks, and a
/// file's map rarely changes once it is written, so lookups use a flat copy: the runs in
/// order plus a bucket table (the first run of each 2^shift-block bucket), so that a lookup
/// is a table read and a step or two forward instead of a tree descent. A change drops the
/// copy; it is rebuilt once as many lookups as the file has runs went to the tree since,
/// which keeps lookups cheap even for a file that grows while it is read. Results are the
/// tree's in every case.
#[derive(Debug, Clone, Default)]
struct Extents {
    tree: BTreeMap<u64, (u64, u64)>,
    flat: std::cell::RefCell<Flat>,
    flat_valid: std::cell::Cell<bool>,
    tree_lookups: std::cell::Cell<usize>,
}

#[derive(Debug, Clone, Default)]
struct Flat {
    runs: Vec<(u64, u64, u64)>,
    /// `first[b]`: index of the last run starting at or before block `b << shift`, or
    /// `usize::MAX` if none does.
    first: Vec<usize>,
    shift: u32,
}

impl Flat {
    fn build(&mut self, tree: &BTreeMap<u64, (u64, u64)>) {
        self.runs.clear();
        self.runs.extend(tree.iter().map(|(&s, &(d, l))| (s, d, l)));
        self.first.clear();
        let Some(&(last, _, _)) = self.runs.last() else {
            return;
        };
        // About one bucket per run.
        let per = (last + 1).div_ceil(self.runs.len() as u64).max(1);
        self.shift = 63 - per.leading_zeros();
        let mut i = usize::MAX;
        for b in 0..=(last >> self.shift) {
            let start = b << self.shift;
            while self.runs.get(i.wrapping_add(1)).is_some_and(|r| r.0 <= start) {
                i = i.wrapping_add(1);
            }
            self.first.push(i);
        }
    }

    /// The last run starting at or before `fb`.
    fn at_or_before(&self, fb: u64) -> Option<(u64, u64, u64)> {
        let b = ((fb >> self.shift) as usize).min(self.first.len().checked_sub(1)?);
        // The answer lies between the bucket's first run and the next bucket's (a binary
        // search there, usually over one or two runs, and never worse than O(log n)).
        let lo = self.first[b].wrapping_add(1).saturating_sub(1);
        let hi = self.first.get(b + 1).map_or(self.runs.len(), |&j| j.wrapping_add(1));
        let k = lo + self.runs[lo..hi].partition_point(|r| r.0 <= fb);
        k.checked_sub(1).map(|i| self.runs[i])
    }
}

impl Extents {
    fn insert(&mut self, start: u64, run: (u64, u64)) {
        self.tree.insert(start, run);
        self.flat_valid.set(false);
        self.tree_lookups.set(0);
    }

    /// The run starting before `fb`.
    fn before(&self, fb: u64) -> Option<(u64, u64, u64)> {
        self.tree.range(..fb).next_back().map(|(&s, &(d, l))| (s, d, l))
    }

    /// The run starting at or before `fb`.
    fn at_or_before(&self, fb: u64) -> Option<(u64, u64, u64)> {
        if !self.flat_valid.get() {
            let n = self.tree_lookups.get() + 1;
            if n <= self.tree.len() {
                self.tree_lookups.set(n);
                return self.tree.range(..=fb).next_back().map(|(&s, &(d, l))| (s, d, l));
            }
            self.flat.borrow_mut().build(&self.tree);
            self.flat_valid.set(true);
        }
        self.flat.borrow().at_or_before(fb)
    }

    fn into_tree(self) -> BTreeMap<u64, (u64, u64)> {
        self.tree
    }
}

#[derive(Debug, Clone)]
pub struct Dir {
    pub name: String,
    pub parent: Option<DirId>,
    pub group: u64,
    pub inode: u64,
    /// Directory data blocks (entries), allocated like file data.
    pub blocks: Vec<u64>,
    pub files: Vec<FileId>,
    pub subdirs: Vec<DirId>,
}

#[derive(Debug, Clone)]
struct Group {
    next_inode: u64,
    dirs: u64,
}

/// The filesystem: layout only (no data).
#[derive(Debug, Clone)]
pub struct Fs {
    start_sector: u64,
    total_blocks: u64,
    groups: Vec<Group>,
    /// Free extents: start block → length.
    free: BTreeMap<u64, u64>,
    files: Vec<File>,
    dirs: Vec<Dir>,
    next_top_group: u64,
    /// The pid of the task that builds file sets and directories outside a simulation
    /// (`create_with_size`, `mkdir`, `create`: the `tar` or `prepare` step).
    setup_pid: u32,
    /// Colour first blocks by pid ([`Fs::colour_goal`]); off, they aim at the group's start.
    colour: bool,
}

impl Fs {
    /// A fresh filesystem of `total_blocks` 4 KiB blocks starting at `start_sector`.
    pub fn new(start_sector: u64, total_blocks: u64) -> Self {
        assert!(total_blocks >= BLOCKS_PER_GROUP, "filesystem smaller than one block group");
        let ngroups = total_blocks / BLOCKS_PER_GROUP;
        let mut free = BTreeMap::new();
        for g in 0..ngroups {
            let data_start = g * BLOCKS_PER_GROUP + GROUP_META_BLOCKS + INODE_TABLE_BLOCKS;
            let end = ((g + 1) * BLOCKS_PER_GROUP).min(total_blocks);
            free.insert(data_start, end - data_start);
        }
        let groups = (0..ngroups).map(|_| Group { next_inode: 0, dirs: 0 }).collect();
        let mut fs = Fs {
            start_sector,
            total_blocks: ngroups * BLOCKS_PER_GROUP,
            groups,
            free,
            files: Vec::new(),
            dirs: Vec::new(),
            next_top_group: 0,
            setup_pid: 0,
            colour: false,
        };
        // The root directory lives in group 0.
        let inode = fs.alloc_inode(0);
        let block = fs.new_block(0).expect("empty filesystem has room");
        fs.dirs.push(Dir {
            name: String::new(),
            parent: None,
            group: 0,
            inode,
            blocks: vec![block],
            files: vec![],
            subdirs: vec![],
        });
        fs.groups[0].dirs += 1;
        fs
    }

    /// A filesystem covering a device of `capacity_sectors`, leaving the first 63 sectors
    /// (the classic partition offset) free. Panics below [`MIN_DEVICE_SECTORS`]: callers
    /// check a disk profile's size first (the workloads' `Machine::validate`).
    pub fn for_device(capacity_sectors: u64) -> Self {
        assert!(
            capacity_sectors >= MIN_DEVICE_SECTORS,
            "a device of {capacity_sectors} sectors is smaller than one ext2 block group ({MIN_DEVICE_SECTORS})"
        );
        let blocks = (capacity_sectors - PARTITION_OFFSET) / SECTORS_PER_BLOCK;
        Fs::new(PARTITION_OFFSET, blocks)
    }

    /// Set the pid of the task that builds directories and file sets outside a simulation
    /// (it chooses where their first blocks go; see `Fs::colour_goal`).
    pub fn set_setup_pid(&mut self, pid: u32) {
        self.setup_pid = pid;
    }

    /// Colour first blocks by the allocating task's pid (ext2 from 2.5.53) or not (2.4 ext2).
    pub fn set_colour(&mut self, on: bool) {
        self.colour = on;
    }

    pub fn root(&self) -> DirId {
        DirId(0)
    }
    pub fn total_blocks(&self) -> u64 {
        self.total_blocks
    }
    pub fn groups(&self) -> u64 {
        self.groups.len() as u64
    }
    pub fn file(&self, f: FileId) -> &File {
        &self.files[f.0 as usize]
    }
    pub fn dir(&self, d: DirId) -> &Dir {
        &self.dirs[d.0 as usize]
    }
    pub fn num_files(&self) -> usize {
        self.files.len()
    }
    pub fn num_dirs(&self) -> usize {
        self.dirs.len()
    }
    pub fn free_blocks(&self) -> u64 {
        self.free.values().sum()
    }

    /// First sector of a block.
    pub fn sector(&self, block: u64) -> u64 {
        self.start_sector + block * SECTORS_PER_BLOCK
    }

    fn alloc_inode(&mut self, group: u64) -> u64 {
        let mut g = group;
        loop {
            let grp = &mut self.groups[g as usize];
            if grp.next_inode < INODES_PER_GROUP {
                grp.next_inode += 1;
                return g * INODES_PER_GROUP + grp.next_inode - 1;
            }
            g = (g + 1) % self.groups.len() as u64;
            assert_ne!(g, group, "out of inodes");
        }
    }

    /// The block group holding inode `ino`.
    fn inode_group(ino: u64) -> u64 {
        ino / INODES_PER_GROUP
    }

    /// The inode-table block holding inode `ino`.
    pub fn inode_block(&self, ino: u64) -> u64 {
        let g = Self::inode_group(ino);
        let idx = ino % INODES_PER_GROUP;
        g * BLOCKS_PER_GROUP + GROUP_META_BLOCKS + idx * INODE_SIZE / BLOCK
    }

    /// Whether `block` is the primary superblock's (ext3 keeps the free counts in percpu
    /// counters and does not journal it on allocation, `ext3_new_blocks`).
    pub fn is_superblock(&self, block: u64) -> bool {
        block == SUPERBLOCK
    }

    /// The block bitmap of a group (dirtied when blocks are allocated).
    pub fn bitmap_block(&self, block: u64) -> u64 {
        (block / BLOCKS_PER_GROUP) * BLOCKS_PER_GROUP + 2
    }

    /// The goal of a file's (or directory's) first block, `ext2_find_near` with no block
    /// before it: the start of the inode's group, plus — with colouring on (ext2 from
    /// 2.5.53, 2.5.64 and 2.6.13 to 2.6.23 read) — the allocating task's colour, `(pid % 16) *
    /// blocks_per_group / 16`, so that files that tasks write at the same time start apart.
    fn colour_goal(&self, group: u64, pid: u32) -> u64 {
        let colour = if self.colour { (pid as u64 % 16) * (BLOCKS_PER_GROUP / 16) } else { 0 };
        group * BLOCKS_PER_GROUP + colour
    }

    /// `ext2fs_default_journal_size` (e2fsprogs `lib/ext2fs/mkjournal.c`, as of 1.39 to
    /// 1.42): the journal `mke2fs -j` makes for a file system of this many 4 KiB blocks —
    /// 4 MiB below 128 MiB, 16 MiB below 1 GiB, 32 MiB below 2 GiB, 64 MiB below 4 GiB,
    /// else 128 MiB.
    pub fn default_journal_blocks(&self) -> u64 {
        match self.total_blocks {
            b if b < 32_768 => 1024,
            b if b < 256 * 1024 => 4096,
            b if b < 512 * 1024 => 8192,
            b if b < 1024 * 1024 => 16_384,
            _ => 32_768,
        }
    }

    /// Allocate the journal inode's `blocks` (`write_journal_inode`): block by block from
    /// a goal, each the first free block at or after the last (`ext2fs_new_block`), so
    /// the journal is one run except where group metadata interrupts it. The goal is the
    /// first block of the group with the most free blocks among the middle group and its
    /// two neighbours (the first of equals), or with `middle` false block 0. Returns the
    /// runs (first block, length) in journal order.
    pub fn reserve_journal(&mut self, blocks: u64, middle: bool) -> Vec<(u64, u64)> {
        let n = self.groups.len() as u64;
        let mut goal = 0;
        if middle {
            let g = (self.total_blocks / 2) / BLOCKS_PER_GROUP;
            let (lo, hi) = (g.saturating_sub(1), (g + 1).min(n - 1));
            let free_in = |grp: u64| -> u64 {
                let (gs, ge) = (grp * BLOCKS_PER_GROUP, (grp + 1) * BLOCKS_PER_GROUP);
                self.free.range(gs..ge).map(|(&s, &l)| (s + l).min(ge) - s).sum()
            };
            let mut best = lo;
            for grp in lo + 1..=hi {
                if free_in(grp) > free_in(best) {
                    best = grp;
                }
            }
            goal = best * BLOCKS_PER_GROUP;
        }
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut left = blocks;
        while left > 0 {
            let Some(b) = self.first_free_from(goal).or_else(|| self.first_free_from(0)) else {
                panic!("no room for a journal of {blocks} blocks");
            };
            let (s, l) = self.free_extent_at(b).expect("a free block");
            let take = (s + l - b).min(left);
            self.free.remove(&s);
            if b > s {
                self.free.insert(s, b - s);
            }
            if b + take < s + l {
                self.free.insert(b + take, s + l - b - take);
            }
            match runs.last_mut() {
                Some((rs, rl)) if *rs + *rl == b => *rl += take,
                _ => runs.push((b, take)),
            }
            left -= take;
            goal = b + take;
        }
        runs
    }

    /// The first free block at or after `b` (any group).
    fn first_free_from(&self, b: u64) -> Option<u64> {
        if self.is_free(b) {
            return Some(b);
        }
        self.free.range(b..).next().map(|(&s, _)| s)
    }

    /// `grab_block` (2.4 to 2.6.23 `fs/ext2/balloc.c`) in group `g`: the goal if it is
    /// free; else — unless the goal is the group's first block — the next free block before
    /// the goal's next 64-block boundary; else the first wholly free, 8-aligned run of 8
    /// blocks from there on (a zero byte of the bitmap), moved back to where its free
    /// stretch starts; else the first free block from there on in the group.
    fn grab_block(&self, g: u64, goal: u64) -> Option<u64> {
        let gs = g * BLOCKS_PER_GROUP;
        let ge = ((g + 1) * BLOCKS_PER_GROUP).min(self.total_blocks);
        if self.is_free(goal) {
            return Some(goal);
        }
        let mut from = goal;
        if goal > gs {
            let k = (gs + (goal - gs).next_multiple_of(64)).min(ge);
            if let Some(b) = self.first_free_from(goal).filter(|&b| b < k) {
                return Some(b);
            }
            from = k;
        }
        // A zero byte: the free extents from `from` on (the one holding `from` first).
        let first = self.free_extent_at(from).map_or(from, |(s, _)| s);
        for (&s, &l) in self.free.range(first..) {
            if s >= ge {
                break;
            }
            let q = gs + (s.max(from) - gs).next_multiple_of(8);
            if q + 8 <= (s + l).min(ge) {
                // Free extents are maximal, so the stretch holding `q` starts at `s`.
                return Some(s.max(gs));
            }
        }
        self.first_free_from(from).filter(|&b| b < ge)
    }

    /// Allocate a block as `ext2_new_block` (2.4 to 2.6.23) searches: `grab_block` in the
    /// goal's group from the goal on, then in each following group from its start, round
    /// to the goal's group again.
    fn new_block(&mut self, goal: u64) -> Option<u64> {
        // A goal past the end (after a file that ends on the last block) starts over at
        // the first block, as the kernel's does.
        let goal = if goal >= self.total_blocks { 0 } else { goal };
        let n = self.groups.len() as u64;
        let g0 = goal / BLOCKS_PER_GROUP;
        let b = self.grab_block(g0, goal).or_else(|| {
            (1..=n).find_map(|i| {
                let g = (g0 + i) % n;
                self.grab_block(g, g * BLOCKS_PER_GROUP)
            })
        })?;
        self.take_free(b);
        Some(b)
    }

    /// Mark free block `b` used.
    fn take_free(&mut self, b: u64) {
        let (start, len) = self.free_extent_at(b).expect("block is free");
        self.free.remove(&start);
        if b > start {
            self.free.insert(start, b - start);
        }
        if b + 1 < start + len {
            self.free.insert(b + 1, start + len - b - 1);
        }
    }

    /// Allocate up to `want` contiguous free blocks starting at `goal` or the first free
    /// block after it (wrapping): what block-at-a-time allocation with preallocation
    /// produces for a file written in one go, in one step.
    fn alloc_run_near(&mut self, goal: u64, want: u64) -> Option<(u64, u64)> {
        let at = self.new_block(goal)?;
        let mut len = 1;
        if len < want
            && let Some(&l) = self.free.get(&(at + 1))
        {
            let take = l.min(want - len);
            self.free.remove(&(at + 1));
            if take < l {
                self.free.insert(at + 1 + take, l - take);
            }
            len += take;
        }
        Some((at, len))
    }

    fn is_free(&self, b: u64) -> bool {
        self.free_extent_at(b).is_some()
    }

    /// The free extent (start, length) holding block `b`, if `b` is free.
    fn free_extent_at(&self, b: u64) -> Option<(u64, u64)> {
        self.free.range(..=b).next_back().map(|(&s, &l)| (s, l)).filter(|&(s, l)| b < s + l)
    }

    /// Create a subdirectory. Directories under the root are spread over the groups;
    /// deeper ones stay in their parent's group.
    pub fn mkdir(&mut self, parent: DirId, name: &str) -> DirId {
        let group = if parent == self.root() {
            let g = self.next_top_group % self.groups.len() as u64;
            self.next_top_group += 1;
            g
        } else {
            self.dirs[parent.0 as usize].group
        };
        let inode = self.alloc_inode(group);
        let block = self.new_block(self.colour_goal(group, self.setup_pid)).expect("filesystem full");
        let id = DirId(self.dirs.len() as u32);
        self.dirs.push(Dir {
            name: name.to_string(),
            parent: Some(parent),
            group,
            inode,
            blocks: vec![block],
            files: vec![],
            subdirs: vec![],
        });
        self.dirs[parent.0 as usize].subdirs.push(id);
        self.groups[group as usize].dirs += 1;
        id
    }

    /// Create an empty file in `dir`.
    pub fn create(&mut self, dir: DirId, name: &str) -> FileId {
        let group = self.dirs[dir.0 as usize].group;
        let inode = self.alloc_inode(group);
        let id = FileId(self.files.len() as u32);
        self.files.push(File {
            name: name.to_string(),
            dir,
            inode,
            size: 0,
            device: false,
            extents: Extents::default(),
            indirect: BTreeMap::new(),
            last_block: None,
            prealloc: None,
            blocks: 0,
        });
        let d = &mut self.dirs[dir.0 as usize];
        d.files.push(id);
        // A directory block holds ~128 entries of 32 bytes; a new one goes after the
        // directory's last block, as a file's would.
        if d.files.len().is_multiple_of(128) {
            let goal = d.blocks.last().map_or(d.group * BLOCKS_PER_GROUP, |&b| b + 1);
            let b = self.new_block(goal).expect("filesystem full");
            self.dirs[dir.0 as usize].blocks.push(b);
        }
        id
    }

    /// Create a file and allocate all its blocks at once (a file written sequentially and
    /// closed): the layout block-at-a-time allocation gives — each indirect block inline
    /// before the data it maps, data contiguous from the goal — built run by run.
    pub fn create_with_size(&mut self, dir: DirId, name: &str, size: u64) -> FileId {
        let f = self.create(dir, name);
        let blocks = size.div_ceil(BLOCK);
        let mut goal = self.colour_goal(Self::inode_group(self.files[f.0 as usize].inode), self.setup_pid);
        let mut fb = 0;
        while fb < blocks {
            if let Some(key) = Self::indirect_key(fb)
                && !self.files[f.0 as usize].indirect.contains_key(&key)
            {
                let ib = self.new_block(goal).expect("filesystem full");
                self.files[f.0 as usize].indirect.insert(key, ib);
                goal = ib + 1;
            }
            let boundary = match Self::indirect_key(fb) {
                None => DIRECT,
                Some(k) => k + PER_INDIRECT,
            };
            let want = blocks.min(boundary) - fb;
            let (start, len) = self.alloc_run_near(goal, want).expect("filesystem full");
            let file = &mut self.files[f.0 as usize];
            let merged = match file.extents.before(fb) {
                Some((s0, d, l)) if s0 + l == fb && d + l == start => {
                    file.extents.insert(s0, (d, l + len));
                    true
                }
                _ => false,
            };
            if !merged {
                file.extents.insert(fb, (start, len));
            }
            file.blocks += len;
            file.last_block = Some(start + len - 1);
            fb += len;
            goal = start + len;
        }
        self.files[f.0 as usize].size = size;
        f
    }

    /// A block device node named `name` (fio's `filename=/dev/sdb`): a file whose block `b`
    /// is the file system's block `b`, every block of the partition from its first sector
    /// on, as the partition's device (`/dev/sdb1`) reads them — over the file system's
    /// metadata and files, as raw I/O to a mounted disk's device would be. Nothing is
    /// allocated for it, and it has no indirect blocks: the block device's inode lives in
    /// memory (bdev's pseudo file system), so opening it reads no directory and its
    /// times dirty no inode block ([`File::device`]).
    pub fn create_device(&mut self, dir: DirId, name: &str) -> FileId {
        let f = self.create(dir, name);
        let total = self.total_blocks;
        let file = &mut self.files[f.0 as usize];
        file.device = true;
        file.extents.insert(0, (0, total));
        file.blocks = total;
        file.size = total * BLOCK;
        f
    }

    /// The size of [`Fs::create_device`]'s node: the partition's bytes.
    pub fn device_bytes(&self) -> u64 {
        self.total_blocks * BLOCK
    }

    /// The first file block mapped by the indirect block needed for file block `fb`,
    /// if `fb` is past the direct blocks (single and double indirect trees are treated as a
    /// chain of 1024-block indirect blocks; the double-indirect block itself is ignored).
    /// The blocks [`Fs::create_with_size`] allocates for `size` bytes: the data blocks and
    /// one indirect block per 1024 of them past the 12 direct ones.
    pub fn blocks_for_size(size: u64) -> u64 {
        let blocks = size.div_ceil(BLOCK);
        blocks + blocks.saturating_sub(DIRECT).div_ceil(PER_INDIRECT)
    }

    fn indirect_key(fb: u64) -> Option<u64> {
        if fb < DIRECT { None } else { Some(DIRECT + (fb - DIRECT) / PER_INDIRECT * PER_INDIRECT) }
    }

    /// Allocate file block `fb` if it is not allocated. Returns the metadata blocks this
    /// dirtied, for the caller to mark dirty (2.5.64 ext2):
    /// - when a block came from the allocator rather than the file's preallocation
    ///   (`ext2_new_block`): the group's block bitmap, the group descriptors
    ///   (`group_reserve_blocks`) and the superblock (`reserve_blocks`);
    /// - a new indirect block, and the indirect block that maps `fb`, which
    ///   `ext2_splice_branch` dirties again on every allocation it records.
    ///
    /// `pid` is the allocating task's: it places a file's first block
    /// (`Fs::colour_goal`).
    pub fn allocate(&mut self, f: FileId, fb: u64, pid: u32) -> Allocation {
        if self.map(f, fb).is_some() {
            return Allocation::default();
        }
        let mut new_meta = Vec::new();
        let mut allocator = false;
        let goal = {
            let file = &self.files[f.0 as usize];
            match file.last_block {
                Some(b) => b + 1,
                None => self.colour_goal(Self::inode_group(file.inode), pid),
            }
        };
        // A new indirect block goes first, inline, as ext2 allocates it.
        if let Some(key) = Self::indirect_key(fb)
            && !self.files[f.0 as usize].indirect.contains_key(&key)
        {
            let (ib, fresh) = self.take_block(f, goal);
            allocator |= fresh;
            self.files[f.0 as usize].indirect.insert(key, ib);
            new_meta.push(ib);
        }
        let goal = self.files[f.0 as usize].last_block.map(|b| b + 1).unwrap_or(goal);
        let (db, fresh) = self.take_block(f, goal);
        allocator |= fresh;
        let file = &mut self.files[f.0 as usize];
        // Extend the run ending just before, or start a new one.
        let merged = if let Some((s, d, l)) = file.extents.before(fb) {
            if s + l == fb && d + l == db {
                file.extents.insert(s, (d, l + 1));
                true
            } else {
                false
            }
        } else {
            false
        };
        if !merged {
            file.extents.insert(fb, (db, 1));
        }
        file.blocks += 1;
        file.size = file.size.max((fb + 1) * BLOCK);
        let mut meta = Vec::new();
        if allocator {
            meta.extend([self.bitmap_block(db), GROUP_DESCRIPTORS, SUPERBLOCK]);
        }
        meta.extend(new_meta);
        if let Some(ib) = self.indirect_for(f, fb)
            && !meta.contains(&ib)
        {
            meta.push(ib);
        }
        Allocation { meta }
    }

    /// Take a block for file `f`: its preallocation if it starts at goal, else a new
    /// allocation near goal with up to 8 blocks preallocated behind it. True if the
    /// allocator ran (no preallocation hit).
    fn take_block(&mut self, f: FileId, goal: u64) -> (u64, bool) {
        let file = &mut self.files[f.0 as usize];
        if let Some((s, n)) = file.prealloc
            && s == goal
            && n > 0
        {
            file.prealloc = if n > 1 { Some((s + 1, n - 1)) } else { None };
            file.last_block = Some(s);
            return (s, false);
        }
        // Give back a stale preallocation.
        if let Some((s, n)) = file.prealloc.take() {
            for b in s..s + n {
                self.free_block(b);
            }
        }
        let b = self.new_block(goal).expect("filesystem full");
        // Preallocation: the free blocks right behind it, in its group.
        let group_end = (b / BLOCKS_PER_GROUP + 1) * BLOCKS_PER_GROUP;
        let mut n = 0;
        while n < PREALLOC - 1 && b + 1 + n < group_end.min(self.total_blocks) && self.is_free(b + 1 + n) {
            self.take_free(b + 1 + n);
            n += 1;
        }
        let file = &mut self.files[f.0 as usize];
        file.prealloc = if n > 0 { Some((b + 1, n)) } else { None };
        file.last_block = Some(b);
        (b, true)
    }

    fn free_block(&mut self, b: u64) {
        // Merge with neighbours.
        let mut start = b;
        let mut len = 1;
        if let Some((&s, &l)) = self.free.range(..b).next_back()
            && s + l == b
        {
            self.free.remove(&s);
            start = s;
            len += l;
        }
        if let Some(&l) = self.free.get(&(b + 1)) {
            self.free.remove(&(b + 1));
            len += l;
        }
        self.free.insert(start, len);
    }

    /// Release a file's preallocated blocks (on close, as ext2 does).
    pub fn discard_prealloc(&mut self, f: FileId) {
        if let Some((s, n)) = self.files[f.0 as usize].prealloc.take() {
            for b in s..s + n {
                self.free_block(b);
            }
        }
    }

    /// Truncate a file to zero length, freeing its blocks.
    pub fn truncate(&mut self, f: FileId) {
        self.discard_prealloc(f);
        let file = &mut self.files[f.0 as usize];
        let extents = std::mem::take(&mut file.extents).into_tree();
        let ind = std::mem::take(&mut file.indirect);
        file.size = 0;
        file.blocks = 0;
        file.last_block = None;
        for (_, (d, l)) in extents {
            for b in d..d + l {
                self.free_block(b);
            }
        }
        for (_, b) in ind {
            self.free_block(b);
        }
    }

    /// The disk block of file block `fb`, if allocated.
    pub fn map(&self, f: FileId, fb: u64) -> Option<u64> {
        let file = &self.files[f.0 as usize];
        let (s, d, l) = file.extents.at_or_before(fb)?;
        (fb < s + l).then(|| d + (fb - s))
    }

    /// How many blocks from `fb` on are contiguous on disk (up to `max`).
    pub fn contiguous(&self, f: FileId, fb: u64, max: u64) -> u64 {
        let file = &self.files[f.0 as usize];
        match file.extents.at_or_before(fb) {
            Some((s, _, l)) if fb < s + l => (s + l - fb).min(max),
            _ => 0,
        }
    }

    /// The indirect block needed to map file block `fb`, if any.
    pub fn indirect_for(&self, f: FileId, fb: u64) -> Option<u64> {
        let key = Self::indirect_key(fb)?;
        self.files[f.0 as usize].indirect.get(&key).copied()
    }

    /// The file's indirect blocks (the metadata buffers ext2 associates with the inode, which
    /// `fsync` writes and waits for), in file order.
    pub fn indirect_blocks(&self, f: FileId) -> Vec<u64> {
        self.files[f.0 as usize].indirect.values().copied().collect()
    }

    pub fn set_size(&mut self, f: FileId, size: u64) {
        self.files[f.0 as usize].size = size;
    }

    /// Files of a directory tree in `find` order (readdir order = creation order here,
    /// files of a directory before its subdirectories).
    pub fn find_order(&self, dir: DirId) -> Vec<FileId> {
        let mut out = Vec::new();
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            let dd = &self.dirs[d.0 as usize];
            out.extend(dd.files.iter().copied());
            for &s in dd.subdirs.iter().rev() {
                stack.push(s);
            }
        }
        out
    }

    /// Directories of a tree in traversal order.
    pub fn dir_order(&self, dir: DirId) -> Vec<DirId> {
        let mut out = Vec::new();
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            out.push(d);
            for &s in self.dirs[d.0 as usize].subdirs.iter().rev() {
                stack.push(s);
            }
        }
        out
    }

    /// The path of a file, for traces and xargs command-line lengths.
    pub fn path(&self, f: FileId) -> String {
        let file = &self.files[f.0 as usize];
        let mut parts = vec![file.name.clone()];
        let mut d = Some(file.dir);
        while let Some(id) = d {
            let dd = &self.dirs[id.0 as usize];
            if !dd.name.is_empty() {
                parts.push(dd.name.clone());
            }
            d = dd.parent;
        }
        parts.reverse();
        parts.join("/")
    }
}

/// Metadata a block allocation dirtied.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// The metadata blocks the allocation dirtied.
    pub meta: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `blocks_for_size` is what `create_with_size` takes from the free space.
    #[test]
    fn blocks_for_size_is_what_a_file_takes() {
        for size in [1, BLOCK * DIRECT, BLOCK * (DIRECT + 1), BLOCK * (DIRECT + PER_INDIRECT + 1), 300 << 20] {
            let mut fs = Fs::new(63, 4 * BLOCKS_PER_GROUP);
            let (root, free) = (fs.root(), fs.free_blocks());
            fs.create_with_size(root, "f", size);
            assert_eq!(free - fs.free_blocks(), Fs::blocks_for_size(size), "{size} bytes");
        }
    }

    /// The flat copy answers exactly as the tree, for dense, sparse and lopsided maps
    /// (many runs near 0 and one far away puts them all in one bucket).
    #[test]
    fn flat_extent_lookup_equals_the_tree() {
        let mut rng = crate::Rng::new(7);
        for case in 0..3 {
            let mut e = Extents::default();
            let mut start = 5;
            for _ in 0..300 {
                let len = 1 + rng.below(if case == 0 { 4 } else { 2000 });
                e.insert(start, (rng.below(1 << 30), len));
                start += len + if case == 1 { rng.below(5000) } else { 0 };
            }
            if case == 2 {
                e.insert(1 << 40, (1, 1));
            }
            let probes: Vec<u64> =
                (0..3000).map(|_| rng.below(start + 100)).chain([0, 4, 5, start, 1 << 40, (1 << 40) + 7]).collect();
            // The first lookups go to the tree, the rest to the flat copy.
            for &fb in probes.iter().chain(&probes) {
                let want = e.tree.range(..=fb).next_back().map(|(&s, &(d, l))| (s, d, l));
                assert_eq!(e.at_or_before(fb), want, "case {case}, block {fb}");
            }
            assert!(e.flat_valid.get());
        }
    }

    /// The bulk layout equals writing each file block by block and closing it, with
    /// fragmented free space in the way, with and without colouring, and for a file that
    /// runs past its group's end.
    #[test]
    fn bulk_layout_equals_block_at_a_time_writes() {
        for (colour, pid) in [(false, 0), (true, 0), (true, 23)] {
            let mut a = Fs::new(63, 4 * BLOCKS_PER_GROUP);
            let mut b = Fs::new(63, 4 * BLOCKS_PER_GROUP);
            for fs in [&mut a, &mut b] {
                fs.set_colour(colour);
                fs.set_setup_pid(pid);
            }
            let sizes = [1u64, 3, 12, 13, 500, 1036, 1037, 3000, 7, 40_000, 9];
            let (da, db) = (a.mkdir(a.root(), "d"), b.mkdir(b.root(), "d"));
            // Holes in the free space: a few files created and truncated.
            for fs in [&mut a, &mut b] {
                let d = fs.root();
                for i in 0..5 {
                    let f = fs.create_with_size(d, &format!("hole{i}"), (3 + i) * BLOCK);
                    let _keep = fs.create_with_size(d, &format!("keep{i}"), 2 * BLOCK);
                    fs.truncate(f);
                }
            }
            for (i, &n) in sizes.iter().enumerate() {
                let fa = a.create_with_size(da, &format!("f{i}"), n * BLOCK - 100);
                let fb = b.create(db, &format!("f{i}"));
                for k in 0..n {
                    b.allocate(fb, k, pid);
                }
                b.set_size(fb, n * BLOCK - 100);
                b.discard_prealloc(fb);
                for k in 0..n {
                    assert_eq!(a.map(fa, k), b.map(fb, k), "colour {colour}, file {i} block {k}");
                    assert_eq!(a.indirect_for(fa, k), b.indirect_for(fb, k), "colour {colour}, file {i} block {k}");
                }
                assert_eq!(a.file(fa).size, b.file(fb).size);
            }
            let big = a.files.iter().find(|f| f.name == "f9").unwrap();
            let last = big.last_block.unwrap();
            assert!(last / BLOCKS_PER_GROUP > a.dir(da).group, "the 40,000-block file crosses into the next group");
            assert_eq!(a.free_blocks(), b.free_blocks());
        }
    }

    #[test]
    fn sequential_file_is_contiguous_with_inline_indirect_blocks() {
        let mut fs = Fs::new(63, 4 * BLOCKS_PER_GROUP);
        let d = fs.mkdir(fs.root(), "a");
        let f = fs.create_with_size(d, "big", 2000 * BLOCK);
        // 12 direct blocks, then the first indirect block, then data.
        let b0 = fs.map(f, 0).unwrap();
        assert_eq!(fs.map(f, 11).unwrap(), b0 + 11);
        let ind = fs.indirect_for(f, 12).unwrap();
        assert_eq!(ind, b0 + 12);
        assert_eq!(fs.map(f, 12).unwrap(), b0 + 13);
        assert_eq!(fs.contiguous(f, 12, 10_000), 1024);
        assert_eq!(fs.indirect_for(f, 12 + 1024).unwrap(), fs.map(f, 12 + 1023).unwrap() + 1);
    }

    #[test]
    fn interleaved_writers_get_preallocated_chunks() {
        let mut fs = Fs::new(0, BLOCKS_PER_GROUP);
        let d = fs.root();
        let a = fs.create(d, "a");
        let b = fs.create(d, "b");
        for i in 0..8 {
            fs.allocate(a, i, 0);
            fs.allocate(b, i, 0);
        }
        // Each file's first 8 blocks are contiguous thanks to preallocation.
        assert_eq!(fs.contiguous(a, 0, 100), 8);
        assert_eq!(fs.contiguous(b, 0, 100), 8);
    }

    /// Mark blocks `from..to` used (as other files' blocks would be).
    fn occupy(fs: &mut Fs, from: u64, to: u64) {
        for b in from..to {
            fs.take_free(b);
        }
    }

    /// `grab_block`'s order when the goal is taken: a free block before the goal's next
    /// 64-block boundary (none when the goal is on one); else the first free 8-aligned run
    /// of 8 (skipping smaller holes, and longer ones that hold no aligned 8), from where
    /// its free stretch starts; else any free block in the group; else the following
    /// groups, from their start, round to the goal's own.
    #[test]
    fn a_taken_goal_is_searched_as_grab_block_does() {
        let mut fs = Fs::new(0, 3 * BLOCKS_PER_GROUP);
        let meta = GROUP_META_BLOCKS + INODE_TABLE_BLOCKS; // 516
        // The group's first free block (516 holds the root directory).
        let data = meta + 1;
        assert_eq!(fs.grab_block(0, 0), Some(data), "from the group's start: the first free stretch");
        // Used up to 1003, a hole 1003..1005 before the 64-boundary at 1024.
        occupy(&mut fs, data, 1003);
        occupy(&mut fs, 1005, 1100);
        assert_eq!(fs.grab_block(0, 1001), Some(1003), "a free block before the boundary");
        // Past the boundary: holes 1101..1104 (3 blocks) and 1105..1114 (9 blocks, but no
        // aligned 8: 1112 is the only boundary inside and 1112..1120 is not all free) are
        // skipped; the stretch from 1130 holds the aligned 1136..1144 and is taken from
        // its start.
        occupy(&mut fs, 1003, 1005);
        occupy(&mut fs, 1100, 1101);
        occupy(&mut fs, 1104, 1105);
        occupy(&mut fs, 1114, 1130);
        assert_eq!(fs.grab_block(0, 1001), Some(1130), "first free byte, backed up to its stretch");
        // A goal on a 64-boundary has no window: a free block 5 after it is not taken
        // before a free byte further on (1130), nor is one at 1030 for a goal at 1001.
        occupy(&mut fs, 1101, 1104);
        occupy(&mut fs, 1105, 1114);
        fs.free_block(1029);
        assert_eq!(fs.grab_block(0, 1024), Some(1130), "no window from a 64-aligned goal");
        assert_eq!(fs.grab_block(0, 1001), Some(1130), "1029 lies past the goal's window");
        // No whole free byte anywhere after the goal: any free block.
        occupy(&mut fs, 1130, BLOCKS_PER_GROUP);
        assert_eq!(fs.grab_block(0, 1001), Some(1029), "then any free block");
        // Full from the goal on: ext2_new_block tries the following groups from their
        // start (group 1 here, then 2, then round to 0), not the next free block.
        fs.take_free(1029);
        assert_eq!(fs.grab_block(0, 1001), None);
        occupy(&mut fs, BLOCKS_PER_GROUP + meta, 2 * BLOCKS_PER_GROUP);
        fs.free_block(600);
        assert_eq!(fs.new_block(1001), Some(2 * BLOCKS_PER_GROUP + meta), "group 2 before group 0's 600");
        occupy(&mut fs, 2 * BLOCKS_PER_GROUP + meta + 1, 3 * BLOCKS_PER_GROUP);
        assert_eq!(fs.new_block(1001), Some(600), "round to the goal's own group");
    }

    /// With colouring (ext2 from 2.5.53) a file's first block aims at the group's start plus
    /// its writer's pid % 16 sixteenths; without (2.4), every file aims at the group's start.
    #[test]
    fn first_blocks_are_coloured_by_the_writers_pid() {
        for colour in [false, true] {
            let mut fs = Fs::new(0, 2 * BLOCKS_PER_GROUP);
            fs.set_colour(colour);
            let d = fs.root();
            let (a, b, c) = (fs.create(d, "a"), fs.create(d, "b"), fs.create(d, "c"));
            fs.allocate(a, 0, 17); // pid 17: colour 1
            fs.allocate(b, 0, 18); // pid 18: colour 2
            fs.allocate(c, 0, 33); // pid 33: colour 1 again, taken by a and its preallocation
            let first = |f| fs.map(f, 0).unwrap();
            let sixteenth = BLOCKS_PER_GROUP / 16;
            if colour {
                assert_eq!((first(a), first(b)), (sixteenth, 2 * sixteenth), "colours 1 and 2");
                // A colour point is 64-aligned, so it has no window: c takes the first free
                // aligned 8 after a's block and its 7 preallocated ones.
                assert_eq!(first(c), sixteenth + 8, "after a's 8 blocks, by the free-byte search");
            } else {
                let data = GROUP_META_BLOCKS + INODE_TABLE_BLOCKS;
                // The root directory's block is the group's first free one.
                assert_eq!((first(a), first(b), first(c)), (data + 1, data + 9, data + 17));
            }
        }
    }

    #[test]
    fn top_level_dirs_spread_over_groups() {
        let mut fs = Fs::new(0, 4 * BLOCKS_PER_GROUP);
        let a = fs.mkdir(fs.root(), "a");
        let b = fs.mkdir(fs.root(), "b");
        let c = fs.mkdir(a, "c");
        assert_ne!(fs.dir(a).group, fs.dir(b).group);
        assert_eq!(fs.dir(c).group, fs.dir(a).group);
        let f = fs.create_with_size(b, "x", 100);
        assert_eq!(fs.map(f, 0).unwrap() / BLOCKS_PER_GROUP, fs.dir(b).group);
        assert_eq!(fs.path(f), "b/x");
    }
}
