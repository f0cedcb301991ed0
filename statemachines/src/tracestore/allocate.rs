//! `AllocateDigestIds(n)` (`spec/tracestore.md` 11.3): `n` ids from the state's pool first,
//! the rest from one increment of the id counter by a batch, whose surplus joins the pool.
//!
//! The pooled ids an allocation takes stay in the pool until the increment answers, so an
//! error or an abort leaves the pool as it was.

use alloc::vec::Vec;

use rowkit_codec::model::{ReadModifyWriteRule, RuleOp};
use rowkit_codec::tracestore::CodecError;
use rowkit_codec::tracestore::cells::{
    COLUMN_ID_COUNTER, FAMILY_ID_COUNTER, RESERVED_IDS, decode_id_counter, reserved_ids,
};
use rowkit_codec::tracestore::keys::id_counter_row_name;

use super::state::TraceStoreState;
use super::{Progress, TraceStoreError, TraceStoreEvent, TraceStoreSchema, begin};
use crate::children::ChildId;
use crate::operation::{ContextArg, Flow, Io, Operation, Start};
use crate::ready;
use crate::{ReadModifyWriteRowRequest, Request};

/// `AllocateDigestIds(n)` (digest-id layout): `n` distinct, never used ids.
pub type AllocateDigestIds<'a> = Operation<'a, AllocateDigestIdsFlow>;

impl<'a> AllocateDigestIds<'a> {
    /// Allocates `n` ids as `start` says.
    pub fn new(state: impl Into<ContextArg<'a, TraceStoreState>>, n: usize, start: Start) -> Self {
        let flow = AllocateDigestIdsFlow::new(n);
        begin(state, Ok(flow), start)
    }
}

/// Where an allocation stands.
#[derive(Debug)]
enum Phase {
    /// Nothing sent yet; `n` ids wanted.
    Start { n: usize },
    /// The increment is out; `pooled` ids will come from the pool's front.
    Increment {
        child: ChildId,
        pooled: usize,
        missing: usize,
        amount: u64,
    },
    /// Ended (a flow that ended is never advanced again).
    Done,
}

/// The flow of [`AllocateDigestIds`]: `n` ids, from the pool first, then from the counter.
#[derive(Debug)]
pub struct AllocateDigestIdsFlow {
    phase: Phase,
}

impl AllocateDigestIdsFlow {
    /// Allocates `n` ids (also a sub-flow of [`AssignDigestIds`](super::AssignDigestIds)).
    pub(crate) fn new(n: usize) -> AllocateDigestIdsFlow {
        AllocateDigestIdsFlow {
            phase: Phase::Start { n },
        }
    }
}

impl Flow for AllocateDigestIdsFlow {
    type Schema = TraceStoreSchema;
    type Output = Vec<u64>;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<Vec<u64>> {
        match core::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Start { n } => {
                let pooled = n.min(state.pool.len());
                let missing = n - pooled;
                if missing == 0 {
                    return Ok(Some(state.take_pooled(pooled)));
                }
                let amount = missing as u64 + RESERVED_IDS;
                let child = io.unary(Request::ReadModifyWriteRow(ReadModifyWriteRowRequest {
                    table: state.table.clone(),
                    app_profile_id: state.app_profile_id.clone(),
                    row_key: id_counter_row_name(),
                    rules: alloc::vec![ReadModifyWriteRule {
                        family: FAMILY_ID_COUNTER.into(),
                        qualifier: COLUMN_ID_COUNTER.to_vec(),
                        op: RuleOp::IncrementAmount(amount as i64),
                    }],
                }));
                self.phase = Phase::Increment {
                    child,
                    pooled,
                    missing,
                    amount,
                };
                Ok(None)
            }
            Phase::Increment {
                child,
                pooled,
                missing,
                amount,
            } => {
                let row = ready!(io.modified_row(child), self.phase => Phase::Increment {
                    child,
                    pooled,
                    missing,
                    amount,
                });
                let cells: Vec<_> = row
                    .cells
                    .iter()
                    .filter(|c| c.family == FAMILY_ID_COUNTER)
                    .collect();
                let [cell] = cells.as_slice() else {
                    return Err(TraceStoreError::Codec(CodecError::BadIdCounter {
                        reason: "malformed id counter response",
                    }));
                };
                let max = decode_id_counter(&cell.value)?;
                let mut fresh = reserved_ids(max, amount)?;
                let mut out: Vec<u64> = state.take_pooled(pooled);
                out.extend(fresh.by_ref().take(missing));
                state.pool.extend(fresh);
                Ok(Some(out))
            }
            Phase::Done => Ok(None),
        }
    }
}
