//! Replay: feed a recorded queue-input trace ([`crate::trace`]) to a fresh [`Queue`] and
//! check that it dispatches exactly what the recording says — the proof that the
//! simulator and the real runtime run the same decisions.

use crate::queue::{Input, Queue};
use crate::request::ReqId;
use crate::trace::Record;
use std::fmt;

impl Record {
    /// The queue input this record stands for (`None` for outputs).
    pub fn input(&self) -> Option<Input> {
        Some(match *self {
            Record::Arrival { rq, .. } => Input::Arrival(rq),
            Record::Completion { id, status, .. } => Input::Completion { id, status },
            Record::Requeue { id, .. } => Input::Requeue(id),
            Record::Unplug { .. } => Input::Unplug,
            Record::Exit { owner, .. } => Input::OwnerExit(owner),
            Record::Drain { .. } => Input::Drain,
            Record::Timeout { .. } => Input::Timeout,
            Record::Dispatch { .. } => return None,
        })
    }
}

/// Where a replay diverged from the recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayMismatch {
    /// Index of the record (0-based) at which the divergence showed.
    pub index: usize,
    pub expected: Option<ReqId>,
    pub got: Option<ReqId>,
    /// Set when the record itself cannot be applied (a completion or requeue of a request
    /// that is not on the device, an arrival reusing a live id).
    pub invalid: Option<String>,
}

impl fmt::Display for ReplayMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |x: Option<ReqId>| x.map(|i| i.to_string()).unwrap_or_else(|| "nothing".into());
        if let Some(why) = &self.invalid {
            return write!(f, "record {}: {why}", self.index + 1);
        }
        write!(
            f,
            "dispatch order diverged at record {}: recording dispatched {}, replay dispatched {}",
            self.index + 1,
            s(self.expected),
            s(self.got)
        )
    }
}

/// Feed the recorded inputs to `queue` (fresh, same scheduler and configuration) and
/// check that it dispatches exactly what the recording says, in order. The recording
/// driver polls `poll_dispatch` until `None` right after every input, so each input is
/// followed by exactly the dispatches it caused. Returns the number of dispatches checked.
pub fn replay(records: &[Record], queue: &mut Queue) -> Result<usize, ReplayMismatch> {
    let mut checked = 0;
    let mut i = 0;
    while i < records.len() {
        let r = &records[i];
        let Some(input) = r.input() else {
            // A dispatch with no input before it in this run.
            let Record::Dispatch { id, .. } = r else { unreachable!() };
            return Err(ReplayMismatch { index: i, expected: Some(*id), got: None, invalid: None });
        };
        let invalid = match input {
            Input::Completion { id, .. } | Input::Requeue(id) if !queue.is_in_flight(id) => {
                Some(format!("request {id} is not on the device (never dispatched, or already completed)"))
            }
            Input::Arrival(rq) if queue.knows(rq.id) => Some(format!("request id {} is already in use", rq.id)),
            _ => None,
        };
        if let Some(why) = invalid {
            return Err(ReplayMismatch { index: i, expected: None, got: None, invalid: Some(why) });
        }
        let now = r.at();
        queue.handle_input(&input, now);
        i += 1;
        loop {
            let got = queue.poll_dispatch(now).map(|rq| rq.id);
            let expected = match records.get(i) {
                Some(Record::Dispatch { id, .. }) => Some(*id),
                _ => None,
            };
            if got != expected {
                return Err(ReplayMismatch { index: i, expected, got, invalid: None });
            }
            if got.is_none() {
                break;
            }
            checked += 1;
            i += 1;
        }
        while queue.poll_event().is_some() {}
    }
    Ok(checked)
}
