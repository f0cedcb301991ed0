//! ReadCounters: every counter row.

use alloc::collections::BTreeMap;
use alloc::string::ToString;
use alloc::vec::Vec;

use rowkit_codec::model::{RowFilter, RowSet};
use rowkit_codec::mounttable::{self as codec};

use crate::children::ChildId;
use crate::mounttable::calls::{MtIo, Progress, scan};
use crate::mounttable::{MountTableSchema, MtError, MtRun};
use crate::operation::Flow;
use crate::ready;

/// The flow of [`ReadCounters`](crate::mounttable::ReadCounters): one scan of the counter table.
#[derive(Debug)]
pub struct ReadCountersFlow(Option<ChildId>);

impl ReadCountersFlow {
    pub(in crate::mounttable) fn new() -> ReadCountersFlow {
        ReadCountersFlow(None)
    }
}

impl Flow for ReadCountersFlow {
    type Schema = MountTableSchema;
    type Output = BTreeMap<Vec<u8>, i64>;

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<BTreeMap<Vec<u8>, i64>> {
        let id = *self.0.get_or_insert_with(|| {
            scan(
                io,
                ctx,
                ctx.tables.counter.clone(),
                RowSet::all(),
                Some(RowFilter::CellsPerColumnLimit(1)),
                0,
            )
        });
        let rows = ready!(io.rows(id));
        rows.iter()
            .map(|r| {
                codec::decode_counter_row(r)
                    .map(|v| (r.key.clone(), v))
                    .map_err(|e| MtError::Internal {
                        what: e.to_string(),
                    })
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }
}
