//! The dispatch list between the policy and the driver (`q->queue_head`), with the
//! kernel's insertion rule (`elv_dispatch_sort`).

use crate::request::{ReqId, Request};
use std::collections::{BTreeMap, VecDeque};

/// The generic dispatch queue (`q->queue_head`): requests the policy has released, in the
/// order the driver will take them.
///
/// The kernel inserts with a linear scan from the tail (`elv_dispatch_sort`). CFQ 2.6.20
/// can put a request from every busy non-idling queue on the list in one call, so the list
/// may hold thousands of requests; a linear scan would make the simulator quadratic. While
/// every request on the list arrived through `sort_in`, the list is in the form the scan
/// maintains — requests at or beyond the boundary ascending, then those below it ascending
/// — and is kept as two ordered maps, giving the scan's exact result in O(log n). Any
/// other operation (append, explicit position, requeue, barrier) switches to a plain
/// ordered list with the literal scan until the list next empties.
#[derive(Debug, Default)]
pub struct DispatchList {
    /// Which form holds the requests; the other is empty. Both keep their storage while
    /// empty, so the usual empty → one request → empty cycle allocates nothing.
    linear: bool,
    /// Canonical form: `ahead` holds requests at or beyond the boundary, `behind` those
    /// below it, each keyed by (sector, insertion order).
    ahead: BTreeMap<(u64, u64), Request>,
    behind: BTreeMap<(u64, u64), Request>,
    /// Literal list.
    list: VecDeque<Entry>,
    /// `q->end_sector`: the sort boundary (end of the last started request).
    end_sector: u64,
    /// `q->boundary_rq`: a request added with `add_tail` that set the boundary.
    boundary: Option<ReqId>,
    /// Insertion counter: among equal sectors, later insertions go after earlier ones.
    seq: u64,
    /// Ids moved here since the framework last looked.
    moved: Vec<ReqId>,
}

#[derive(Debug, Clone)]
struct Entry {
    rq: Request,
    /// A barrier (flush) or soft barrier: sorting never moves requests across it.
    barrier: bool,
}

impl DispatchList {
    pub fn len(&self) -> usize {
        if self.linear { self.list.len() } else { self.ahead.len() + self.behind.len() }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The request at position `i` (0 = next to go to the driver).
    pub fn get(&self, i: usize) -> Option<&Request> {
        if self.linear { self.list.get(i).map(|e| &e.rq) } else { self.iter().nth(i) }
    }
    pub fn iter(&self) -> Box<dyn Iterator<Item = &Request> + '_> {
        if self.linear {
            Box::new(self.list.iter().map(|e| &e.rq))
        } else {
            Box::new(self.ahead.values().chain(self.behind.values()))
        }
    }
    /// End sector of the request at the tail (CFQ's `last_sector` after a dispatch).
    pub fn tail_end(&self) -> Option<u64> {
        if self.linear {
            self.list.back().map(|e| e.rq.end())
        } else {
            self.behind.values().next_back().or(self.ahead.values().next_back()).map(|r| r.end())
        }
    }
    pub fn end_sector(&self) -> u64 {
        self.end_sector
    }

    /// Switch to the literal list (keeping the order).
    fn linear(&mut self) -> &mut VecDeque<Entry> {
        if !self.linear {
            self.linear = true;
            // Drained one by one so that the maps keep their storage.
            while let Some((_, rq)) = self.ahead.pop_first() {
                self.list.push_back(Entry { rq, barrier: false });
            }
            while let Some((_, rq)) = self.behind.pop_first() {
                self.list.push_back(Entry { rq, barrier: false });
            }
        }
        &mut self.list
    }

    /// `elv_dispatch_sort` (2.6.20): scan back from the tail, stopping at a barrier;
    /// requests at or beyond the boundary keep ascending order before those below it, so
    /// the list is a one-way sweep starting at the head position.
    pub fn sort_in(&mut self, rq: Request) {
        self.moved.push(rq.id);
        self.seq += 1;
        let boundary = self.end_sector;
        if !self.linear {
            let key = (rq.sector, self.seq);
            if rq.sector >= boundary {
                self.ahead.insert(key, rq);
            } else {
                self.behind.insert(key, rq);
            }
            return;
        }
        let v = &mut self.list;
        let mut pos = v.len();
        while pos > 0 {
            let e = &v[pos - 1];
            if e.barrier {
                break;
            }
            let s = e.rq.sector;
            if rq.sector >= boundary {
                if s < boundary {
                    pos -= 1;
                    continue;
                }
            } else if s >= boundary {
                break;
            }
            if rq.sector >= s {
                break;
            }
            pos -= 1;
        }
        v.insert(pos, Entry { rq, barrier: false });
    }

    /// `elv_dispatch_add_tail`: append and set the boundary to its end.
    pub fn add_tail(&mut self, rq: Request) {
        self.end_sector = rq.end();
        self.boundary = Some(rq.id);
        self.moved.push(rq.id);
        self.linear().push_back(Entry { rq, barrier: false });
    }

    /// Insert at an explicit position (for policies with their own placement rule, like
    /// the 2003 CFQ).
    pub fn insert(&mut self, pos: usize, rq: Request) {
        self.moved.push(rq.id);
        self.linear().insert(pos, Entry { rq, barrier: false });
    }

    /// Append a barrier (flush); nothing is sorted across it.
    pub(crate) fn add_barrier(&mut self, rq: Request) {
        self.end_sector = rq.end();
        self.boundary = Some(rq.id);
        self.moved.push(rq.id);
        self.linear().push_back(Entry { rq, barrier: true });
    }

    /// Requeue: back at the head, as a soft barrier (2.6.20 `elv_insert` with
    /// `ELEVATOR_INSERT_REQUEUE` sets `REQ_SOFTBARRIER`), so nothing a policy sorts in
    /// afterwards goes ahead of it.
    pub(crate) fn add_front(&mut self, rq: Request) {
        self.linear().push_front(Entry { rq, barrier: true });
    }

    /// The driver takes the head (`elv_next_request` + dequeue); updates the boundary.
    pub(crate) fn pop_front(&mut self) -> Option<Request> {
        let rq = if self.linear {
            self.list.pop_front()?.rq
        } else {
            let from_ahead = !self.ahead.is_empty();
            let rq = if from_ahead { self.ahead.pop_first() } else { self.behind.pop_first() }.map(|(_, r)| r)?;
            // The new boundary is this request's end. The form survives unless an
            // overlapping request is now below it while placed before others.
            let b = rq.end();
            let canonical = if from_ahead {
                self.ahead.first_key_value().is_none_or(|(_, r)| r.sector >= b)
            } else {
                // Only `behind` remained: it becomes the new `ahead` if all of it is
                // at or beyond the new boundary.
                self.behind.first_key_value().is_none_or(|(_, r)| r.sector >= b)
            };
            if !from_ahead && canonical {
                std::mem::swap(&mut self.ahead, &mut self.behind);
            }
            if !canonical {
                self.linear();
            }
            rq
        };
        if self.boundary.is_none() || self.boundary == Some(rq.id) {
            self.end_sector = rq.end();
            self.boundary = None;
        }
        if self.is_empty() {
            // Back to the canonical form, which an empty list is.
            self.linear = false;
        }
        Some(rq)
    }

    pub(crate) fn take_moved(&mut self) -> std::vec::Drain<'_, ReqId> {
        self.moved.drain(..)
    }

    /// Update a request still on the list after a merge (2003 CFQ back-merges into
    /// dispatched requests).
    pub(crate) fn update(&mut self, rq: &Request) {
        if let Some(e) = self.linear().iter_mut().find(|e| e.rq.id == rq.id) {
            e.rq = *rq;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Owner;
    use crate::time::Instant;

    fn r(id: u64, sector: u64) -> Request {
        Request::read(id, sector, 8, Owner(1), Instant::ZERO)
    }

    fn sectors(l: &DispatchList) -> Vec<u64> {
        l.iter().map(|r| r.sector).collect()
    }

    #[test]
    fn dispatch_sort_is_one_way_from_the_boundary() {
        for linear in [false, true] {
            let mut l = DispatchList { end_sector: 1000, ..Default::default() };
            if linear {
                l.linear();
            }
            for (i, s) in [1500, 200, 3000, 1200, 100, 1200].into_iter().enumerate() {
                l.sort_in(r(i as u64, s));
            }
            // At or beyond 1000 ascending, then the wrapped part ascending; equal sectors
            // keep arrival order.
            assert_eq!(sectors(&l), vec![1200, 1200, 1500, 3000, 100, 200]);
            assert_eq!(l.iter().map(|r| r.id).collect::<Vec<_>>(), vec![3, 5, 0, 2, 4, 1]);
        }
    }

    /// The sorted mode gives exactly the literal scan's order, for any sequence of
    /// sort_in and pop_front.
    #[test]
    fn sorted_mode_matches_the_literal_scan() {
        let mut rng = 12345u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for round in 0..200 {
            let mut fast = DispatchList::default();
            let mut slow = DispatchList::default();
            slow.linear();
            for step in 0..60u64 {
                if next() % 3 == 0 {
                    assert_eq!(fast.pop_front(), slow.pop_front(), "round {round} step {step}");
                    if slow.is_empty() {
                        slow.linear();
                    }
                } else {
                    let len = 1 + (next() % 16) as u32;
                    let rq = Request::read(step, next() % 400, len, Owner(1), Instant::ZERO);
                    fast.sort_in(rq);
                    slow.sort_in(rq);
                }
                assert_eq!(sectors(&fast), sectors(&slow), "round {round} step {step}");
                assert_eq!(fast.end_sector(), slow.end_sector());
            }
        }
    }

    #[test]
    fn dispatch_sort_stops_at_barrier() {
        let mut l = DispatchList::default();
        l.sort_in(r(1, 500));
        l.add_barrier(Request { op: crate::Op::Flush, ..r(2, 0) });
        l.sort_in(r(3, 10));
        assert_eq!(sectors(&l), vec![500, 0, 10]);
    }

    /// A requeued request is a soft barrier: a lower sector sorted in later stays behind
    /// it, where a plain head entry would let it pass.
    #[test]
    fn a_requeued_request_is_a_soft_barrier() {
        let mut l = DispatchList::default();
        l.add_front(r(1, 1000));
        l.sort_in(r(2, 10));
        l.sort_in(r(3, 2000));
        assert_eq!(sectors(&l), vec![1000, 10, 2000]);
    }

    #[test]
    fn pop_front_moves_the_boundary() {
        let mut l = DispatchList::default();
        l.sort_in(r(1, 500));
        let rq = l.pop_front().unwrap();
        assert_eq!(rq.id, 1);
        assert_eq!(l.end_sector(), 508);
    }
}
