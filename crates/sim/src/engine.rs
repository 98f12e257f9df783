//! The event queue: a min-heap on (time, insertion sequence), so events at the same
//! instant run first-in first-out and a run is deterministic.

use iosched_core::Instant;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Debug)]
struct Entry<E> {
    at: Instant,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        o.at.cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

#[derive(Debug)]
pub struct Engine<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
}

impl<E> Default for Engine<E> {
    fn default() -> Self {
        Engine { heap: BinaryHeap::new(), seq: 0 }
    }
}

impl<E> Engine<E> {
    pub fn schedule(&mut self, at: Instant, ev: E) {
        self.seq += 1;
        self.heap.push(Entry { at, seq: self.seq, ev });
    }
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.at)
    }
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        self.heap.pop().map(|e| (e.at, e.ev))
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_events_are_fifo() {
        let mut e = Engine::default();
        e.schedule(Instant::from_millis(5), "b");
        e.schedule(Instant::from_millis(1), "a");
        e.schedule(Instant::from_millis(5), "c");
        let order: Vec<_> = std::iter::from_fn(|| e.pop().map(|(_, x)| x)).collect();
        assert_eq!(order, vec!["a", "b", "c"]);
    }
}
