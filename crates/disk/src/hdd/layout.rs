//! Logical-to-physical layout of a zoned disk: DiskSim's `dm_layout_g1`.
//!
//! A disk has `surfaces` data surfaces and `cylinders` cylinders, grouped into zones
//! ("bands" in DiskSim's code) with a constant number of sectors per track. Logical block
//! numbers (LBNs, 512-byte sectors) are laid out cylinder by cylinder, track by track,
//! except where the sparing scheme keeps spare sectors or tracks free and where factory
//! defects were *slipped* (the LBN that would have lived in a bad sector moves to the
//! next sector, pushing the rest of the range along).
//!
//! The functions here follow DiskSim 4.0's `layout_g1.c` scheme by scheme, so that a
//! DiskSim model (with its slip lists) maps every LBN to the same (cylinder, head,
//! sector) as DiskSim. Where DiskSim's own code is broken (its `NO_SPARING` mapping never
//! writes its result) we do what its documentation says instead.
//!
//! Rotational placement: each track's sector 0 is rotated by the zone's "offset of first
//! block" plus one *track skew* per track switch and one *cylinder skew* per cylinder
//! switch since the start of the zone (DiskSim's `g1_map_pbn_skew`), all in whole
//! sectors. We keep that as an integer "rotational offset" in sectors; the spindle module
//! turns it into an angle.

use std::fmt;

/// DiskSim's "LBN-to-PBN mapping scheme".
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Mapping {
    /// 0: conventional. Every cylinder is walked from head 0 up.
    Conventional,
    /// 1: serpentine (`LAYOUT_CYLSWITCHONSURF1`): odd cylinders (counted from the start of
    /// the zone) are walked from the last head down, so a cylinder switch does not also
    /// switch heads.
    Serpentine,
    /// 2: like 1 but odd *absolute* cylinder numbers are reversed
    /// (`LAYOUT_CYLSWITCHONSURF2`).
    SerpentineAbsolute,
}

/// DiskSim's "Sparing scheme used" (`layout_g1.h`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Sparing {
    /// 0: no spare space.
    None,
    /// 1: whole spare tracks at the end of each zone; slips are whole tracks.
    Track,
    /// 2: `spares` sectors at the end of every cylinder.
    SectorsPerCylinder,
    /// 3: `spares` sectors at the end of every track.
    SectorsPerTrack,
    /// 4: as 2, and a slip pushes everything after it, across cylinder ends.
    SectorsPerCylinderSlipToEnd,
    /// 5: as 2 with the spares at the front of each cylinder.
    SectorsPerCylinderAtFront,
    /// 6: as 5 with slip-to-end.
    SectorsPerCylinderAtFrontSlipToEnd,
    /// 7: no per-cylinder spares; slipped sectors push the rest of the zone along (the
    /// zone loses one LBN per slip). DiskSim maps it with the per-cylinder code.
    SectorsAtEnd,
    /// 8: `spares` sectors at the end of every range of `range_size` cylinders.
    SectorsPerRange,
    /// 9: `spares` sectors at the end of the zone.
    SectorsPerZone,
    /// 10: as 9, and the zone also loses one LBN per slip.
    SectorsPerZoneSlipToEnd,
}

impl Sparing {
    /// The DiskSim number of the scheme.
    pub fn from_disksim(n: i64) -> Option<Sparing> {
        Some(match n {
            0 => Sparing::None,
            1 => Sparing::Track,
            2 => Sparing::SectorsPerCylinder,
            3 => Sparing::SectorsPerTrack,
            4 => Sparing::SectorsPerCylinderSlipToEnd,
            5 => Sparing::SectorsPerCylinderAtFront,
            6 => Sparing::SectorsPerCylinderAtFrontSlipToEnd,
            7 => Sparing::SectorsAtEnd,
            8 => Sparing::SectorsPerRange,
            9 => Sparing::SectorsPerZone,
            10 => Sparing::SectorsPerZoneSlipToEnd,
            _ => return None,
        })
    }

    fn per_cylinder(self) -> bool {
        matches!(
            self,
            Sparing::SectorsPerCylinder
                | Sparing::SectorsPerCylinderSlipToEnd
                | Sparing::SectorsPerCylinderAtFront
                | Sparing::SectorsPerCylinderAtFrontSlipToEnd
        )
    }

    fn slip_to_end(self) -> bool {
        matches!(
            self,
            Sparing::SectorsPerCylinderSlipToEnd | Sparing::SectorsPerCylinderAtFrontSlipToEnd | Sparing::SectorsAtEnd
        )
    }

    fn at_front(self) -> bool {
        matches!(self, Sparing::SectorsPerCylinderAtFront | Sparing::SectorsPerCylinderAtFrontSlipToEnd)
    }
}

/// One zone (DiskSim `dm_layout_g1_zone`). Skews and offsets are in sectors.
#[derive(Clone, PartialEq, Debug)]
pub struct Zone {
    pub first_cylinder: u32,
    pub last_cylinder: u32,
    /// "Blocks per track".
    pub sectors_per_track: u32,
    /// "Offset of first block": rotational position of the zone's first sector.
    pub first_block_offset: u32,
    /// "Empty space at zone front": sectors at the start of the zone holding no LBN.
    pub empty_space_at_front: u64,
    /// "Skew for track switch".
    pub track_skew: u32,
    /// "Skew for cylinder switch".
    pub cylinder_skew: u32,
    /// "Number of spares" (meaning depends on the sparing scheme).
    pub spares: u64,
    /// "slips": zone-relative physical positions (sectors, or tracks for track sparing) of
    /// slipped defects, in the order the model lists them (DiskSim's arithmetic depends
    /// on that order).
    pub slips: Vec<u64>,
}

/// A physical block address: cylinder, head (surface), sector on the track (before
/// rotational skew).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Pbn {
    pub cyl: u32,
    pub head: u32,
    pub sector: u32,
}

/// What a physical track holds: its LBN range and its rotational offset.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Track {
    pub cyl: u32,
    pub head: u32,
    /// First LBN on the track.
    pub first: u64,
    /// One past the last LBN on the track.
    pub end: u64,
    pub spt: u32,
    /// Rotational offset of physical sector 0, in sectors (0..spt).
    pub rot_offset: u32,
    /// Zone index.
    pub zone: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LayoutError(pub String);

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Debug)]
struct Band {
    z: Zone,
    /// First LBN of the zone.
    start_lbn: u64,
    /// LBNs in the zone.
    blocks: u64,
    /// True when no slip can disturb the simple arithmetic.
    simple: bool,
    /// `first_block_offset`, `track_skew` and `cylinder_skew` reduced mod the sectors per
    /// track, once (the rotational offset of every track looked up uses them).
    skews: (u32, u32, u32),
}

/// The layout of a whole disk.
#[derive(Clone, Debug)]
pub struct Layout {
    surfaces: u32,
    cylinders: u32,
    mapping: Mapping,
    sparing: Sparing,
    range_size: u32,
    bands: Vec<Band>,
    capacity: u64,
    /// See [`Layout::is_plain`].
    plain: bool,
}

impl Layout {
    /// Build and check a layout. Zones must be contiguous, ascending and inside the disk.
    pub fn new(
        surfaces: u32,
        cylinders: u32,
        mapping: Mapping,
        sparing: Sparing,
        range_size: u32,
        zones: Vec<Zone>,
    ) -> Result<Layout, LayoutError> {
        if surfaces == 0 || cylinders == 0 {
            return Err(LayoutError("surfaces and cylinders must be positive".into()));
        }
        if zones.is_empty() {
            return Err(LayoutError("at least one zone is required".into()));
        }
        if sparing == Sparing::SectorsPerRange && range_size == 0 {
            return Err(LayoutError("range size for sparing must be positive".into()));
        }
        let mut bands = Vec::with_capacity(zones.len());
        let mut start_lbn = 0u64;
        let mut next_cyl = 0u32;
        for (i, z) in zones.into_iter().enumerate() {
            // DiskSim tolerates unused cylinders between zones (they hold no data) and
            // zones reaching past "Number of cylinders"; so do we.
            if z.first_cylinder < next_cyl {
                return Err(LayoutError(format!(
                    "zone {i}: first cylinder {} overlaps the previous zone, which ends at cylinder {}",
                    z.first_cylinder,
                    next_cyl as i64 - 1
                )));
            }
            if z.last_cylinder < z.first_cylinder {
                return Err(LayoutError(format!(
                    "zone {i}: last cylinder {} before first cylinder {}",
                    z.last_cylinder, z.first_cylinder
                )));
            }
            if z.sectors_per_track == 0 {
                return Err(LayoutError(format!("zone {i}: sectors per track must be positive")));
            }
            next_cyl = z.last_cylinder + 1;
            let cylcnt = (z.last_cylinder - z.first_cylinder + 1) as u64;
            let spt = z.sectors_per_track as u64;
            let h = surfaces as u64;
            let total = cylcnt * spt * h;
            // dm_layout_g1_compute_blksinband
            let lost = z.empty_space_at_front
                + match sparing {
                    Sparing::None => 0,
                    Sparing::Track => z.spares * spt,
                    Sparing::SectorsPerTrack => z.spares * cylcnt * h,
                    Sparing::SectorsAtEnd => z.slips.len() as u64,
                    Sparing::SectorsPerZone => z.spares,
                    Sparing::SectorsPerZoneSlipToEnd => z.spares + z.slips.len() as u64,
                    Sparing::SectorsPerRange => z.spares * (cylcnt / range_size as u64),
                    s if s.per_cylinder() && !s.slip_to_end() => z.spares * cylcnt,
                    _ => z.spares * cylcnt + z.slips.len() as u64,
                };
            if lost >= total {
                return Err(LayoutError(format!("zone {i}: spares and empty space exceed the zone")));
            }
            let blocks = total - lost;
            let simple = z.slips.is_empty();
            let spt = z.sectors_per_track;
            let skews = (z.first_block_offset % spt, z.track_skew % spt, z.cylinder_skew % spt);
            bands.push(Band { z, start_lbn, blocks, simple, skews });
            start_lbn += blocks;
        }
        let plain = sparing == Sparing::None && mapping == Mapping::Conventional && bands.iter().all(|b| b.simple);
        Ok(Layout {
            surfaces,
            cylinders: cylinders.max(next_cyl),
            mapping,
            sparing,
            range_size,
            bands,
            capacity: start_lbn,
            plain,
        })
    }

    /// A plain layout: no spares, no slips, conventional mapping.
    pub fn simple(surfaces: u32, zones: Vec<Zone>) -> Result<Layout, LayoutError> {
        let cylinders = zones.last().map(|z| z.last_cylinder + 1).unwrap_or(0);
        Layout::new(surfaces, cylinders, Mapping::Conventional, Sparing::None, 1, zones)
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    pub fn surfaces(&self) -> u32 {
        self.surfaces
    }
    pub fn cylinders(&self) -> u32 {
        self.cylinders
    }
    pub fn zones(&self) -> impl Iterator<Item = &Zone> {
        self.bands.iter().map(|b| &b.z)
    }
    /// (first LBN, LBN count) of each zone.
    pub fn zone_lbn_ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.bands.iter().map(|b| (b.start_lbn, b.blocks))
    }

    fn band_of_lbn(&self, lbn: u64) -> usize {
        // bands are few (1..60); binary search on start_lbn.
        match self.bands.binary_search_by(|b| b.start_lbn.cmp(&lbn)) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }

    fn band_of_cyl(&self, cyl: u32) -> usize {
        match self.bands.binary_search_by(|b| b.z.first_cylinder.cmp(&cyl)) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }

    /// Sectors per track at a cylinder.
    pub fn spt_of_cyl(&self, cyl: u32) -> u32 {
        self.bands[self.band_of_cyl(cyl)].z.sectors_per_track
    }

    /// Sectors per track of the zone holding an LBN.
    pub fn spt_of_lbn(&self, lbn: u64) -> u32 {
        self.bands[self.band_of_lbn(lbn)].z.sectors_per_track
    }

    /// `g1_surfno_on_cyl`: the surface walked at position `head` of cylinder `cyl`.
    #[inline]
    fn surfno(&self, band: &Band, cyl: u32, head: u32) -> u32 {
        let reverse = match self.mapping {
            Mapping::Conventional => false,
            Mapping::Serpentine => (cyl - band.z.first_cylinder) % 2 == 1,
            Mapping::SerpentineAbsolute => cyl % 2 == 1,
        };
        if reverse { self.surfaces - head - 1 } else { head }
    }

    /// LBN to physical block (DiskSim `dm_translate_ltop` with `MAP_FULL`; no defect
    /// remapping since we do not model grown defects).
    pub fn ltop(&self, lbn: u64) -> Pbn {
        debug_assert!(lbn < self.capacity, "lbn {lbn} beyond capacity {}", self.capacity);
        let bi = self.band_of_lbn(lbn);
        let b = &self.bands[bi];
        let z = &b.z;
        let spt = z.sectors_per_track as u64;
        let h = self.surfaces as u64;
        let blkspercyl = spt * h;
        // Zone-relative physical position before slips.
        let mut l = lbn - b.start_lbn + z.empty_space_at_front;
        let (cyl_rel, head_pos, sector) = match self.sparing {
            Sparing::None => (l / blkspercyl, (l % blkspercyl) / spt, l % spt),
            Sparing::Track => {
                // g1_ltop_trackspare
                let mut trackno = l / spt;
                if !b.simple {
                    for &s in &z.slips {
                        if s <= trackno {
                            trackno += 1;
                        }
                    }
                }
                (trackno / h, trackno % h, l % spt)
            }
            Sparing::SectorsPerTrack => {
                // g1_ltop_sectpertrackspare
                let lbnspertrack = spt - z.spares;
                let trackno = l / lbnspertrack;
                l %= lbnspertrack;
                if !b.simple {
                    let first = spt * trackno;
                    for &s in &z.slips {
                        if s >= first && s - first <= l {
                            l += 1;
                        }
                    }
                }
                (trackno / h, trackno % h, l)
            }
            Sparing::SectorsPerRange => {
                // g1_ltop_sectperrangespare
                let blksperrange = blkspercyl * self.range_size as u64;
                let lbnsperrange = blksperrange - z.spares;
                let rangeno = l / lbnsperrange;
                l %= lbnsperrange;
                if !b.simple {
                    let first = rangeno * blksperrange;
                    let mut slips = 0;
                    for &s in &z.slips {
                        if s >= first && s - first <= l + slips {
                            slips += 1;
                        }
                    }
                    l += slips;
                }
                (rangeno * self.range_size as u64 + l / blkspercyl, (l % blkspercyl) / spt, l % spt)
            }
            Sparing::SectorsPerZone | Sparing::SectorsPerZoneSlipToEnd => {
                // g1_ltop_sectperzonespare
                if !b.simple {
                    let mut slips = 0;
                    for &s in &z.slips {
                        if s <= l + slips {
                            slips += 1;
                        }
                    }
                    l += slips;
                }
                (l / blkspercyl, (l % blkspercyl) / spt, l % spt)
            }
            _ => {
                // g1_ltop_sectpercylspare (also used for SECTATEND_SPARING)
                let lbnspercyl = blkspercyl - z.spares;
                let mut cyl = l / lbnspercyl;
                l %= lbnspercyl;
                if !b.simple {
                    let first = cyl * blkspercyl;
                    let mut slips = 0;
                    let to_end = self.sparing.slip_to_end();
                    for &s in &z.slips {
                        if (to_end && s / blkspercyl < cyl) || (s >= first && s - first <= l + slips) {
                            slips += 1;
                        }
                    }
                    l += slips;
                }
                cyl += l / lbnspercyl;
                l %= lbnspercyl;
                if self.sparing.at_front() {
                    // Spares occupy the front of each cylinder (DiskSim's ptol subtracts
                    // them; its ltop does not add them back, so its two directions
                    // disagree; we follow the documented placement).
                    l += z.spares;
                }
                (cyl, l / spt, l % spt)
            }
        };
        let cyl = z.first_cylinder + cyl_rel as u32;
        let head = self.surfno(b, cyl, head_pos as u32);
        Pbn { cyl, head, sector: sector as u32 }
    }

    /// Position of the walk order ("logical head") of a surface on a cylinder.
    #[inline]
    fn head_pos(&self, band: &Band, cyl: u32, head: u32) -> u32 {
        // surfno is an involution.
        self.surfno(band, cyl, head)
    }

    /// Rotational offset of physical sector 0 of a track, in sectors
    /// (`g1_map_pbn_skew` for sector 0).
    pub fn rot_offset(&self, cyl: u32, head: u32) -> u32 {
        let b = &self.bands[self.band_of_cyl(cyl)];
        self.rot_offset_in(b, cyl, head)
    }

    fn rot_offset_in(&self, b: &Band, cyl: u32, head: u32) -> u32 {
        let z = &b.z;
        let spt = z.sectors_per_track as u64;
        let c = (cyl - z.first_cylinder) as u64;
        let hp = self.head_pos(b, cyl, head) as u64;
        let switches = hp + (self.surfaces as u64 - 1) * c;
        let (fbo, ts, cs) = b.skews;
        let mut off = fbo as u64 + (switches % spt) * ts as u64 + (c % spt) * cs as u64;
        // Slips push the skew forward in the per-cylinder and per-track schemes.
        if !b.simple && (self.sparing.per_cylinder() || self.sparing == Sparing::SectorsPerTrack) {
            let mut tracks = c * self.surfaces as u64;
            if self.sparing == Sparing::SectorsPerTrack {
                tracks += head as u64;
            }
            let cutoff = tracks * spt;
            off += z.slips.iter().filter(|&&s| s < cutoff).count() as u64;
        }
        (off % spt) as u32
    }

    /// The zone-relative physical position of a (cyl, walk position, sector).
    fn phys_pos(&self, b: &Band, p: Pbn) -> u64 {
        let spt = b.z.sectors_per_track as u64;
        let c = (p.cyl - b.z.first_cylinder) as u64;
        (c * self.surfaces as u64 + self.head_pos(b, p.cyl, p.head) as u64) * spt + p.sector as u64
    }

    /// No slips, no spares, conventional mapping: [`Layout::track_of`] is plain arithmetic.
    pub fn is_plain(&self) -> bool {
        self.plain
    }

    /// The track holding `lbn`, with its LBN range.
    pub fn track_of(&self, lbn: u64) -> Track {
        let bi = self.band_of_lbn(lbn);
        let b = &self.bands[bi];
        if b.simple && self.sparing == Sparing::None && self.mapping == Mapping::Conventional {
            // The common layout: tracks are consecutive runs of `spt` LBNs after the empty
            // space at the front of the zone (what ltop and track compute, in one step).
            let spt = b.z.sectors_per_track as u64;
            let front = b.z.empty_space_at_front;
            let trackno = (lbn - b.start_lbn + front) / spt;
            let h = self.surfaces as u64;
            let cyl = b.z.first_cylinder + (trackno / h) as u32;
            let head = (trackno % h) as u32;
            let pos0 = trackno * spt;
            let first = b.start_lbn + pos0.saturating_sub(front).min(b.blocks);
            let end = b.start_lbn + (pos0 + spt).saturating_sub(front).min(b.blocks);
            let rot_offset = self.rot_offset_in(b, cyl, head);
            return Track { cyl, head, first, end, spt: spt as u32, rot_offset, zone: bi };
        }
        let p = self.ltop(lbn);
        self.track(p.cyl, p.head).expect("an LBN's own track always holds LBNs")
    }

    /// The LBN range and rotational offset of a physical track, or `None` when the track
    /// holds no LBN (spare or empty space).
    pub fn track(&self, cyl: u32, head: u32) -> Option<Track> {
        let bi = self.band_of_cyl(cyl);
        let b = &self.bands[bi];
        let spt = b.z.sectors_per_track;
        let pos0 = self.phys_pos(b, Pbn { cyl, head, sector: 0 });
        let pos_end = pos0 + spt as u64;
        // First LBN whose physical position is >= pos0, and first >= pos_end.
        let first = self.lower_bound(bi, pos0);
        let end = self.lower_bound(bi, pos_end);
        if first >= end {
            return None;
        }
        Some(Track { cyl, head, first, end, spt, rot_offset: self.rot_offset_in(b, cyl, head), zone: bi })
    }

    /// Smallest LBN of band `bi` whose physical position is >= `pos` (band end if none).
    fn lower_bound(&self, bi: usize, pos: u64) -> u64 {
        let b = &self.bands[bi];
        let consecutive = match self.sparing {
            Sparing::None | Sparing::SectorsPerZone | Sparing::SectorsPerZoneSlipToEnd => true,
            Sparing::SectorsAtEnd => b.z.spares == 0,
            _ => false,
        };
        if b.simple && consecutive && self.mapping == Mapping::Conventional {
            // LBNs are consecutive physical positions after the empty space.
            let l = pos.saturating_sub(b.z.empty_space_at_front);
            return b.start_lbn + l.min(b.blocks);
        }
        // ltop is monotone in (cylinder, walk position, sector): binary search.
        let (mut lo, mut hi) = (b.start_lbn, b.start_lbn + b.blocks);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.phys_pos(b, self.ltop(mid)) < pos {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The LBN stored at a physical sector of a track, if any (slipped sectors, spares and
    /// empty space hold none).
    pub fn lbn_at(&self, t: &Track, sector: u32) -> Option<u64> {
        if self.bands[t.zone].simple && t.end - t.first == t.spt as u64 {
            return Some(t.first + sector as u64);
        }
        // Physical sectors increase with LBN along a track: binary search.
        let (mut lo, mut hi) = (t.first, t.end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.ltop(mid).sector < sector {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo < t.end && self.ltop(lo).sector == sector).then_some(lo)
    }

    /// Physical sector of an LBN on its track (fast path for the common case).
    #[inline]
    pub fn sector_of(&self, t: &Track, lbn: u64) -> u32 {
        debug_assert!(lbn >= t.first && lbn < t.end);
        if self.bands[t.zone].simple && t.end - t.first == t.spt as u64 {
            (lbn - t.first) as u32
        } else {
            self.ltop(lbn).sector
        }
    }

    /// The next track in LBN order after `t` (the track holding `t.end`), if any.
    pub fn next_track(&self, t: &Track) -> Option<Track> {
        if t.end >= self.capacity { None } else { Some(self.track_of(t.end)) }
    }

    /// Physical cylinder of an LBN.
    pub fn cyl_of(&self, lbn: u64) -> u32 {
        self.ltop(lbn).cyl
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(first: u32, last: u32, spt: u32) -> Zone {
        Zone {
            first_cylinder: first,
            last_cylinder: last,
            sectors_per_track: spt,
            first_block_offset: 0,
            empty_space_at_front: 0,
            track_skew: 10,
            cylinder_skew: 20,
            spares: 0,
            slips: vec![],
        }
    }

    #[test]
    fn manual_example_skews() {
        // DiskSim manual B.2.3: 100 SPT, 2 heads, head-switch skew 10, cylinder skew 20:
        // LBN 100 is at (0,1,0) and physically at sector 10 of that track.
        let l = Layout::simple(2, vec![zone(0, 9, 100)]).unwrap();
        assert_eq!(l.ltop(100), Pbn { cyl: 0, head: 1, sector: 0 });
        assert_eq!(l.rot_offset(0, 1), 10);
        // cylinder 1 head 0: one track switch + one cylinder skew.
        assert_eq!(l.rot_offset(1, 0), 30);
        assert_eq!(l.capacity(), 2000);
    }

    /// The one-step `track_of` of plain layouts equals ltop followed by `track`, with
    /// empty space at the front of zones and skews larger than a track.
    #[test]
    fn fast_track_of_equals_the_general_path() {
        let mut z1 = zone(0, 3, 10);
        z1.empty_space_at_front = 7;
        z1.first_block_offset = 13;
        let mut z2 = zone(4, 9, 8);
        z2.empty_space_at_front = 3;
        z2.track_skew = 19;
        let l = Layout::simple(3, vec![z1, z2]).unwrap();
        for lbn in 0..l.capacity() {
            let p = l.ltop(lbn);
            assert_eq!(l.track_of(lbn), l.track(p.cyl, p.head).unwrap(), "lbn {lbn}");
        }
    }

    #[test]
    fn zones_and_tracks() {
        let l = Layout::simple(3, vec![zone(0, 1, 10), zone(2, 4, 8)]).unwrap();
        assert_eq!(l.capacity(), 2 * 3 * 10 + 3 * 3 * 8);
        let t = l.track_of(65);
        assert_eq!((t.cyl, t.head, t.first, t.end), (2, 0, 60, 68));
        let n = l.next_track(&t).unwrap();
        assert_eq!((n.cyl, n.head, n.first), (2, 1, 68));
        assert_eq!(l.lbn_at(&t, 3), Some(63));
    }

    #[test]
    fn serpentine_reverses_odd_cylinders() {
        let l = Layout::new(2, 4, Mapping::Serpentine, Sparing::None, 1, vec![zone(0, 3, 10)]).unwrap();
        assert_eq!(l.ltop(20), Pbn { cyl: 1, head: 1, sector: 0 });
        assert_eq!(l.ltop(30), Pbn { cyl: 1, head: 0, sector: 0 });
        let t = l.track(1, 1).unwrap();
        assert_eq!((t.first, t.end), (20, 30));
    }

    #[test]
    fn sectors_per_zone_slips_shift_lbns() {
        let mut z = zone(0, 1, 10);
        z.spares = 2;
        z.slips = vec![5];
        let l = Layout::new(1, 2, Mapping::Conventional, Sparing::SectorsPerZone, 1, vec![z]).unwrap();
        assert_eq!(l.capacity(), 18);
        assert_eq!(l.ltop(4).sector, 4);
        assert_eq!(l.ltop(5).sector, 6); // sector 5 is slipped
        let t = l.track(0, 0).unwrap();
        assert_eq!((t.first, t.end), (0, 9));
        assert_eq!(l.lbn_at(&t, 5), None);
        assert_eq!(l.lbn_at(&t, 6), Some(5));
    }

    #[test]
    fn track_sparing_skips_slipped_tracks() {
        let mut z = zone(0, 3, 10);
        z.spares = 1;
        z.slips = vec![1];
        let l = Layout::new(1, 4, Mapping::Conventional, Sparing::Track, 1, vec![z]).unwrap();
        assert_eq!(l.capacity(), 30);
        assert_eq!(l.ltop(10).cyl, 2);
        assert!(l.track(1, 0).is_none());
    }
}
