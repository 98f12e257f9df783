//! fio's write history for `verify` (`iolog.c` `log_io_piece`, `verify.c`
//! `get_next_verify`, `io_u.c` `check_get_verify`): which blocks a writing job reads back,
//! and in what order. The job thread ([`super::thread`]) issues the reads; here is only
//! the history.
//!
//! - **Order**: a job whose offsets come from a random map (random, without
//!   `norandommap`) never writes a block twice in a pass, so its history is a list in
//!   write order (`io_hist_list`). Any other job's is sorted by file and offset, a write
//!   replacing every earlier one it overlaps (`io_hist_tree`), and is read back in that
//!   order.
//! - **In flight**: a write is read back only once it has completed (`IP_F_IN_FLIGHT`):
//!   when the next one to read is still in flight, nothing is taken.
//! - **Backlog** (`verify_backlog=N`): while the job writes, each time the history holds a
//!   multiple of N writes and the last I/O was not a read, the next
//!   `verify_backlog_batch` (default N) I/Os are reads of the oldest (or lowest) entries.
//!
//! The data is not checked: the simulated disk holds none, and real targets refuse
//! `verify`.

use std::collections::{BTreeMap, HashSet, VecDeque};

/// One written block to read back: file index, offset, length.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub file: usize,
    pub offset: u64,
    pub len: u64,
}

/// A job's write history.
#[derive(Debug, Default)]
pub struct History {
    sorted: bool,
    list: VecDeque<(Piece, u64)>,
    tree: BTreeMap<(usize, u64), (u64, u64)>,
    in_flight: HashSet<u64>,
    backlog: u64,
    batch_size: u64,
    /// `td->verify_batch`: backlog reads still to take.
    batch: u64,
}

impl History {
    /// The history of a job: `sorted` unless its offsets come from a random map;
    /// `backlog` and `batch` as `verify_backlog` and `verify_backlog_batch` give them.
    pub fn new(sorted: bool, backlog: u64, batch: u64) -> History {
        History { sorted, backlog, batch_size: if batch == 0 { backlog } else { batch }, ..History::default() }
    }

    /// How many writes it holds (`io_hist_len`).
    pub fn len(&self) -> usize {
        if self.sorted { self.tree.len() } else { self.list.len() }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `log_io_piece`: a write issued as `token`, in flight until [`History::completed`]
    /// (a blocking write is complete when `in_flight` is false).
    pub fn log(&mut self, p: Piece, token: u64, in_flight: bool) {
        if in_flight {
            self.in_flight.insert(token);
        }
        if !self.sorted {
            self.list.push_back((p, token));
            return;
        }
        // Drop every entry this write overlaps: the one before it, if it reaches into
        // it, and those that start inside it.
        let end = p.offset + p.len;
        if let Some((&k, &(len, _))) = self.tree.range(..(p.file, p.offset)).next_back()
            && k.0 == p.file
            && k.1 + len > p.offset
        {
            self.tree.remove(&k);
        }
        let inside: Vec<(usize, u64)> = self.tree.range((p.file, p.offset)..(p.file, end)).map(|(k, _)| *k).collect();
        for k in inside {
            self.tree.remove(&k);
        }
        self.tree.insert((p.file, p.offset), (p.len, token));
    }

    /// The write issued as `token` completed.
    pub fn completed(&mut self, token: u64) {
        self.in_flight.remove(&token);
    }

    /// `get_next_verify`: take the next entry to read back, unless it is still in flight.
    pub fn take(&mut self) -> Option<Piece> {
        if self.sorted {
            let (&(file, offset), &(len, token)) = self.tree.iter().next()?;
            if self.in_flight.contains(&token) {
                return None;
            }
            self.tree.remove(&(file, offset));
            Some(Piece { file, offset, len })
        } else {
            let &(p, token) = self.list.front()?;
            if self.in_flight.contains(&token) {
                return None;
            }
            self.list.pop_front();
            Some(p)
        }
    }

    /// `check_get_verify`: with a backlog, whether the next I/O is a read back, and which
    /// (`last_was_read`: the job's last I/O was a read, `td->last_ddir`).
    pub fn backlog_next(&mut self, last_was_read: bool) -> Option<Piece> {
        if self.backlog == 0 || self.is_empty() {
            return None;
        }
        let take = if self.batch > 0 {
            true
        } else if (self.len() as u64).is_multiple_of(self.backlog) && !last_was_read {
            self.batch = self.batch_size;
            true
        } else {
            false
        };
        if !take {
            return None;
        }
        let p = self.take()?;
        self.batch -= 1;
        Some(p)
    }

    /// Forget everything (the job stops before its read back).
    pub fn clear(&mut self) {
        self.list.clear();
        self.tree.clear();
        self.batch = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(offset: u64, len: u64) -> Piece {
        Piece { file: 0, offset, len }
    }

    #[test]
    fn a_sorted_history_reads_back_by_offset_and_a_write_replaces_what_it_overlaps() {
        let mut h = History::new(true, 0, 0);
        h.log(p(8192, 4096), 1, false);
        h.log(p(0, 8192), 2, false);
        h.log(p(4096, 8192), 3, false); // overlaps both
        assert_eq!(h.len(), 1);
        h.log(p(65536, 4096), 4, true);
        assert_eq!(h.take(), Some(p(4096, 8192)));
        assert_eq!(h.take(), None, "the last write is in flight");
        h.completed(4);
        assert_eq!(h.take(), Some(p(65536, 4096)));
        assert!(h.is_empty());
    }

    #[test]
    fn a_listed_history_reads_back_in_write_order_and_the_backlog_takes_batches() {
        let mut h = History::new(false, 2, 0);
        h.log(p(8192, 4096), 1, false);
        assert_eq!(h.backlog_next(false), None, "one write: not a multiple of 2");
        h.log(p(0, 4096), 2, false);
        assert_eq!(h.backlog_next(true), None, "after a read, no new batch starts");
        assert_eq!(h.backlog_next(false), Some(p(8192, 4096)), "the oldest first");
        assert_eq!(h.backlog_next(true), Some(p(0, 4096)), "the batch goes on");
        assert_eq!(h.backlog_next(false), None);
    }
}
