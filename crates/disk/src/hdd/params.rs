//! The complete parameter set of a rotating drive, named after DiskSim's `disksim_disk`
//! and `dm_mech_g1` parameters (in the doc comments) so that a DiskSim `.diskspecs` file
//! and a TOML profile fill the same structure. Times are nanoseconds.

use super::layout::Layout;
use super::seek::SeekCurve;

/// Per-command controller overheads (DiskSim "... over." parameters), ns.
///
/// "After read / after write" refers to the previous command the drive completed.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Overheads {
    pub read_hit_after_read: u64,
    pub read_hit_after_write: u64,
    pub read_miss_after_read: u64,
    pub read_miss_after_write: u64,
    pub write_hit_after_read: u64,
    pub write_hit_after_write: u64,
    pub write_miss_after_read: u64,
    pub write_miss_after_write: u64,
    /// "Read completion overhead".
    pub read_complete: u64,
    /// "Write completion overhead".
    pub write_complete: u64,
    /// "Data preparation overhead": before each data phase.
    pub data_prep: u64,
    /// "First reselect overhead": reconnecting to the host.
    pub reselect_first: u64,
    /// "Other reselect overhead": reconnecting after an extra write disconnect.
    pub reselect_other: u64,
    /// "Read disconnect afterread".
    pub disconnect_read_after_read: u64,
    /// "Read disconnect afterwrite".
    pub disconnect_read_after_write: u64,
    /// "Write disconnect overhead".
    pub disconnect_write: u64,
    /// "Extra write disconnect" and its "Extradisc ..." overheads (HP C2247A).
    pub extra_write_disconnect: Option<ExtraWriteDisconnect>,
    /// "Per-request overhead time": before the drive looks at a command at all.
    pub per_request: u64,
}

impl Overheads {
    pub fn read(&self, hit: bool, after_read: bool) -> u64 {
        match (hit, after_read) {
            (true, true) => self.read_hit_after_read,
            (true, false) => self.read_hit_after_write,
            (false, true) => self.read_miss_after_read,
            (false, false) => self.read_miss_after_write,
        }
    }
    pub fn write(&self, hit: bool, after_read: bool) -> u64 {
        match (hit, after_read) {
            (true, true) => self.write_hit_after_read,
            (true, false) => self.write_hit_after_write,
            (false, true) => self.write_miss_after_read,
            (false, false) => self.write_miss_after_write,
        }
    }
    pub fn disconnect_read(&self, after_read: bool) -> u64 {
        if after_read { self.disconnect_read_after_read } else { self.disconnect_read_after_write }
    }
    /// Every overhead the same value (the "simple" datasheet model: one controller
    /// overhead per command).
    pub fn uniform(miss: u64, hit: u64) -> Overheads {
        Overheads {
            read_hit_after_read: hit,
            read_hit_after_write: hit,
            read_miss_after_read: miss,
            read_miss_after_write: miss,
            write_hit_after_read: hit,
            write_hit_after_write: hit,
            write_miss_after_read: miss,
            write_miss_after_write: miss,
            ..Overheads::default()
        }
    }
}

/// DiskSim's "extra write disconnect" protocol: a write that does not continue the
/// previous write disconnects twice.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtraWriteDisconnect {
    /// "Extradisc command overhead".
    pub command: u64,
    /// "Extradisc disconnect overhead".
    pub disconnect1: u64,
    /// "Extradisc inter-disconnect delay".
    pub inter_disconnect: u64,
    /// "Extradisc 2nd disconnect overhead".
    pub disconnect2: u64,
    /// "Extradisc seek delta".
    pub seek_delta: u64,
}

/// The host link.
#[derive(Clone, Debug, PartialEq)]
pub struct Bus {
    /// Time to move one 512-byte block to the host (max of the bus's "Read block transfer
    /// time" and the disk's "Bulk sector transfer time").
    pub read_block_ns: u64,
    /// Same, host to disk.
    pub write_block_ns: u64,
    /// "Hold bus entire read xfer": never disconnect during a read's data phase.
    pub hold_read: bool,
    /// "Hold bus entire write xfer".
    pub hold_write: bool,
    /// "Never disconnect".
    pub never_disconnect: bool,
}

/// DiskSim "Buffer continuous read": what to read ahead after a read.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Prefetch {
    /// 0: no read-ahead.
    None,
    /// 1: to the end of the track.
    TrackEnd,
    /// 2: to the end of the cylinder.
    CylinderEnd,
    /// 3: until the segment is full (`max_read_ahead` blocks past the request).
    SegmentFull,
    /// 4: DiskSim's "DEC" scheme: to the end of the track after the request, one more
    /// track when the segment already spans a track boundary ("one track ahead").
    OneTrackAhead,
}

/// DiskSim "Fast write level".
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FastWrite {
    /// 0: write-through: a write completes when it is on the media.
    Off,
    /// 1: write-back for writes that find a buffer segment (DiskSim "limited").
    Limited,
    /// 2: write-back.
    Full,
}

/// The on-board buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Cache {
    /// "Enable caching in buffer": keep data for later hits.
    pub enabled: bool,
    /// "Number of buffer segments".
    pub segments: u32,
    /// "Segment size (in blks)".
    pub segment_blocks: u32,
    /// "Maximum number of write segments": how many segments may hold dirty data.
    pub write_segments: u32,
    /// "Use separate write segment": one segment reserved for writes (never read hits).
    pub separate_write_segment: bool,
    /// "High (read) water mark": fraction of the request (or segment) that must be in the
    /// buffer before the drive reconnects to send read data.
    pub read_water: f64,
    /// "Low (write) water mark".
    pub write_water: f64,
    /// "Set watermark by reqsize": water marks are fractions of the request, not the
    /// segment.
    pub water_by_request: bool,
    /// "Buffer continuous read".
    pub prefetch: Prefetch,
    /// "Minimum read-ahead (blks)": read-ahead that cannot be interrupted.
    pub min_read_ahead: u32,
    /// "Maximum read-ahead (blks)" (0: to the end of the segment).
    pub max_read_ahead: u32,
    /// "Read-ahead on idle hit": a read hit on an idle segment restarts the read-ahead.
    pub read_ahead_on_idle_hit: bool,
    /// "Read any free blocks": keep sectors that pass under the head before the wanted
    /// one (rotational latency) when the segment is still empty.
    pub read_any_free_blocks: bool,
    /// "Allow almost read hits": a read starting at the block being read ahead is a hit.
    pub almost_read_hits: bool,
    /// Skip-ahead hits (not in DiskSim): a read starting at most this many sectors past
    /// the block being read ahead, inside the read-ahead limit, waits for the read-ahead
    /// to reach it instead of stopping it and waiting a full revolution. Desktop IDE
    /// drives of 2003 behave this way when a reader skips a directory or indirect block
    /// between files. 0 = off (DiskSim's behaviour).
    pub skip_ahead_hits: u64,
    /// "Fast write level".
    pub fast_write: FastWrite,
    /// "Immediate buffer read": zero-latency reads (start at whatever wanted sector comes
    /// first, wrap around the track).
    pub immediate_read: bool,
    /// "Immediate buffer write".
    pub immediate_write: bool,
    /// "Combine seq writes": a write that continues a dirty segment joins it.
    pub combine_seq_writes: bool,
    /// "Stop prefetch in sector": an interrupted read-ahead finishes the sector it is on
    /// (else the partial sector is dropped); both wait for the sector boundary.
    pub stop_prefetch_in_sector: bool,
    /// "Write hit stop prefetch": a write overlapping the read-ahead ends it.
    pub write_hit_stop_prefetch: bool,
    /// "Allow read hits on write data".
    pub read_hits_on_write_data: bool,
    /// "Immed transfer partial hit": start sending the cached part of a partial hit at
    /// once.
    pub immed_transfer_partial_hit: bool,
    /// Write-back extension (not in DiskSim): when dirty blocks exceed this fraction of
    /// the write space, destaging takes priority over reads. 1.0 = reads always first.
    pub destage_high_water: f64,
    /// Write-back extension (not in DiskSim): the destage of a segment starts from the
    /// lowest block of the contiguous dirty extent the segment belongs to, so writes that
    /// abut in the buffer go to the media in ascending order whatever order they came in
    /// (reference disk.md §4.6: destage "ordered by SPTF/elevator among dirty extents";
    /// Maxtor's "write cache stacking … may reorder write commands"). Off = the chosen
    /// segment alone.
    pub destage_extents: bool,
}

/// How the drive orders the commands in its queue (tagged / native command queueing).
#[derive(Clone, Debug, PartialEq)]
pub enum QueuePolicy {
    /// First come, first served.
    Fcfs,
    /// Shortest positioning time (seek + rotational latency) first; a command that has
    /// waited longer than `aging_ns` is served first regardless.
    Sptf { aging_ns: u64 },
}

/// Everything a rotating-drive model needs.
#[derive(Clone, Debug)]
pub struct HddParams {
    pub name: String,
    pub layout: Layout,
    /// "Rotation speed (in rpms)".
    pub rpm: u32,
    /// Read seek curve.
    pub seek: SeekCurve,
    /// "Head switch time".
    pub head_switch_ns: u64,
    /// "Add. write settling delay" (may be negative in DiskSim models; a write seek is
    /// never shorter than zero).
    pub write_settle_ns: i64,
    /// Charge the write settle on a head switch without arm movement too (DiskSim does;
    /// the built-in profiles do not, so that sequential writes keep the track skew).
    pub write_settle_on_head_switch: bool,
    /// "Minimum seek delay": a write's first seek lasts at least this long.
    pub min_seek_delay_ns: u64,
    pub overheads: Overheads,
    pub bus: Bus,
    pub cache: Cache,
    /// "Max queue length" (1 = no tagged queueing).
    pub queue_depth: u32,
    pub queue_policy: QueuePolicy,
    /// Addressable size when smaller than the layout's (DiskSim "Block count").
    pub capacity_limit: Option<u64>,
}

impl HddParams {
    /// Addressable sectors: the layout's, or less when the model says so (DiskSim's
    /// "Block count" may be below what the zones hold).
    pub fn capacity_sectors(&self) -> u64 {
        self.capacity_limit.map_or(self.layout.capacity(), |c| c.min(self.layout.capacity()))
    }
}
