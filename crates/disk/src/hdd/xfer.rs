//! The data phase on the host link, overlapped with the media (DiskSim's
//! `disk_buffer_transfer_size` / reconnect / disconnect dance, in closed form).
//!
//! Blocks become available in the buffer over time (runs of evenly spaced blocks, or
//! bursts). The drive reconnects once `watermark` blocks are there (after the reconnect
//! overheads), then sends block after block at `block_ns` each, never ahead of the media:
//! `c_i = max(c_{i−1}, a_i) + b`. When the media falls behind and the drive does not hold
//! the bus, it disconnects and pays the disconnect and reselect overheads again.

#[derive(Clone, Debug)]
pub struct Xfer {
    b: u64,
    connected: bool,
    /// The link is busy until `c` (end of the last block sent).
    c: u64,
    /// Blocks available but not yet sent before the first connection.
    pending: u64,
    watermark: u64,
    /// The first connection cannot start before this (the disconnect must be complete).
    earliest: u64,
    reconnect_ovh: u64,
    hold: bool,
    disc_ovh: u64,
    mid_reconnect_ovh: u64,
    sent: u64,
}

impl Xfer {
    /// A transfer that connects once `watermark` blocks are available, not before
    /// `earliest`, paying `reconnect_ovh` first.
    pub fn new(block_ns: u64, watermark: u64, earliest: u64, reconnect_ovh: u64) -> Xfer {
        Xfer {
            b: block_ns,
            connected: false,
            c: 0,
            pending: 0,
            watermark: watermark.max(1),
            earliest,
            reconnect_ovh,
            hold: true,
            disc_ovh: 0,
            mid_reconnect_ovh: 0,
            sent: 0,
        }
    }

    /// Already connected at `at` (a read hit: data goes out at once).
    pub fn connected_at(block_ns: u64, at: u64) -> Xfer {
        Xfer { connected: true, c: at, ..Xfer::new(block_ns, 1, at, 0) }
    }

    /// When the media falls behind: disconnect (`disc_ovh`) and reconnect
    /// (`reconnect_ovh`) instead of holding the bus.
    pub fn release_when_starved(mut self, disc_ovh: u64, reconnect_ovh: u64) -> Xfer {
        self.hold = false;
        self.disc_ovh = disc_ovh;
        self.mid_reconnect_ovh = reconnect_ovh;
        self
    }

    /// The link cannot be used before `t` (another command holds it).
    pub fn not_before(&mut self, t: u64) {
        if self.connected {
            self.c = self.c.max(t);
        } else {
            self.earliest = self.earliest.max(t);
        }
    }

    /// `k` blocks: the first available at `a0`, the next ones `sp` ns apart.
    pub fn feed(&mut self, a0: u64, k: u64, sp: u64) {
        if k == 0 {
            return;
        }
        let (b, mut a0, mut k) = (self.b, a0, k);
        if !self.connected {
            if self.pending + k < self.watermark {
                self.pending += k;
                return;
            }
            let j = self.watermark - self.pending - 1;
            let tw = a0 + j * sp;
            let conn = tw.max(self.earliest) + self.reconnect_ovh;
            self.c = conn + self.pending * b;
            self.sent += self.pending;
            self.pending = 0;
            self.connected = true;
        } else if !self.hold && (self.disc_ovh | self.mid_reconnect_ovh) != 0 {
            // Block by block while the media is slower than the link.
            while k > 0 && a0 > self.c {
                self.c = a0.max(self.c + self.disc_ovh) + self.mid_reconnect_ovh + b;
                self.sent += 1;
                a0 += sp;
                k -= 1;
            }
            if k == 0 {
                return;
            }
        }
        let kb = k * b;
        self.c = (self.c + kb).max(a0 + kb).max(a0 + (k - 1) * sp + b);
        self.sent += k;
    }

    /// The instant the last block fed so far has been sent.
    pub fn end(&self) -> u64 {
        debug_assert!(self.connected || self.pending == 0);
        self.c
    }

    pub fn connected(&self) -> bool {
        self.connected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_link_dominates() {
        // 8 blocks from the media every 10 ns from t=100, link 50 ns per block.
        let mut x = Xfer::new(50, 1, 0, 5);
        x.feed(100, 8, 10);
        assert_eq!(x.end(), 105 + 8 * 50);
    }

    #[test]
    fn fast_link_follows_media() {
        let mut x = Xfer::new(5, 1, 0, 0);
        x.feed(100, 8, 10);
        assert_eq!(x.end(), 100 + 7 * 10 + 5);
    }

    #[test]
    fn watermark_waits() {
        let mut x = Xfer::new(1, 4, 0, 0);
        x.feed(10, 2, 10);
        assert!(!x.connected());
        x.feed(100, 4, 10);
        // 4th block at 110: connect, send 2 pending + run.
        // Connect at 110 with 2 blocks pending; the run's last block (t=130) then bounds.
        assert_eq!(x.end(), 100 + 3 * 10 + 1);
    }
}
