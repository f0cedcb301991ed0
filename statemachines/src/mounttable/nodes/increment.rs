//! §10.4 `incrementWithLimit`: a counter increment checked against its limit.

use alloc::vec::Vec;
use core::mem;

use rowkit_codec::mounttable::{self as codec, CounterKind};

use crate::children::ChildId;
use crate::mounttable::calls::{Half, MtIo, Progress, counter_value, ended, increment, warn};
use crate::mounttable::{MtError, MtRun};
use crate::operation::settled;
use crate::ready;

/// §10.4: add `delta` to a creator's counter; past `limit`, undo and fail.
#[derive(Debug)]
pub(in crate::mounttable) struct Increment {
    key: Vec<u8>,
    kind: CounterKind,
    delta: i64,
    limit: i64,
    half: Half,
    phase: IncrementPhase,
}

#[derive(Debug)]
pub(in crate::mounttable) enum IncrementPhase {
    Start,
    /// The increment is in flight.
    Adding(ChildId),
    /// Over the limit: the undo is in flight.
    Undoing(ChildId),
    Done,
}

impl Increment {
    pub(in crate::mounttable) fn new(
        kind: CounterKind,
        creator: &str,
        delta: i64,
        limit: i64,
        half: Half,
    ) -> Increment {
        Increment {
            key: codec::counter_row_key(kind, creator),
            kind,
            delta,
            limit,
            half,
            phase: IncrementPhase::Start,
        }
    }

    /// `delta` on a creator's counter with no limit, in the first half (an uncount or a
    /// correction).
    pub(in crate::mounttable) fn unlimited(
        kind: CounterKind,
        creator: &str,
        delta: i64,
    ) -> Increment {
        Increment::new(kind, creator, delta, 0, Half::First)
    }

    /// The increment that takes this one back: `-delta` on the same counter, no limit, in the
    /// same half.
    pub(in crate::mounttable) fn undo(&self) -> Increment {
        Increment {
            key: self.key.clone(),
            kind: self.kind,
            delta: -self.delta,
            limit: 0,
            half: self.half,
            phase: IncrementPhase::Start,
        }
    }

    /// The step a failed undo of this counter is warned about as.
    pub(in crate::mounttable) fn undo_step(&self) -> &'static str {
        match self.kind {
            CounterKind::Nodes => "undo node counter",
            CounterKind::Servers => "undo server counter",
        }
    }

    pub(in crate::mounttable) fn advance(
        &mut self,
        io: &mut MtIo,
        ctx: &mut MtRun,
    ) -> Progress<()> {
        use IncrementPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    if self.delta == 0 {
                        return Ok(Some(()));
                    }
                    let call = increment(io, ctx, self.key.clone(), self.delta, self.half);
                    self.phase = P::Adding(call);
                }
                P::Adding(call) => {
                    let n = ready!(counter_value(io, call), self.phase => P::Adding(call));
                    if self.delta > 0 && self.limit > 0 && n > self.limit {
                        let undo = increment(io, ctx, self.key.clone(), -self.delta, self.half);
                        self.phase = P::Undoing(undo);
                        continue;
                    }
                    return Ok(Some(()));
                }
                P::Undoing(call) => {
                    if let Err(e) =
                        ready!(settled(counter_value(io, call)), self.phase => P::Undoing(call))
                    {
                        warn(io, "undo counter increment", e);
                    }
                    let limit = self.limit;
                    return Err(match self.kind {
                        CounterKind::Nodes => MtError::NodeLimitExceeded { limit },
                        CounterKind::Servers => MtError::ServerLimitExceeded { limit },
                    });
                }
                P::Done => return Err(ended()),
            }
        }
    }
}
