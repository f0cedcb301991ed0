//! A trace store table's migration marker row as read (`docs/migration.md` §2.1): row
//! `:rk:m:0000000000:`, family `O`, the marker in both tables and the checkpoint in the
//! source. The reads and writes are the shared marker steps ([`crate::migration`]), as
//! operations on one table: [`ReadTableMigration`], [`WriteTableMarker`],
//! [`WriteTableCheckpoint`].

use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::migration::{
    Gates, MarkerCells, MarkerTransitionError, MigrationCheckpoint, MigrationRecordError,
};
use rowkit_codec::model::{Row, Timestamp};
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::migration::{TraceMarkerChange, TraceMigrationMarker, marker_place};

use super::super::{
    Progress, TraceStoreError, TraceStoreEvent, TraceStoreSchema, TraceStoreState, begin,
};
use crate::migration::{
    MarkerRead, MarkerTable, MigrationFailure, ReadMarkerStep, WriteCheckpointStep, WriteMarkerStep,
};
use crate::operation::{ContextArg, Flow, Io, Operation, Start};
use crate::ready;

/// One table's migration state as read from its marker row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceMigrationRead {
    /// The row's cells, raw (the predicates of the next write).
    pub cells: MarkerCells,
    /// The marker, if any.
    pub marker: Option<TraceMigrationMarker>,
    /// The checkpoint, if any (the source's).
    pub checkpoint: Option<MigrationCheckpoint>,
}

impl TraceMigrationRead {
    /// Decodes a marker row read with `LatestN(1)` (`None`: no row, no migration).
    pub fn from_row(row: Option<&Row>) -> Result<TraceMigrationRead, TraceStoreError> {
        TraceMigrationRead::from_cells(marker_place().cells_of(row))
    }

    fn from_cells(cells: MarkerCells) -> Result<TraceMigrationRead, TraceStoreError> {
        let marker = cells
            .marker
            .as_deref()
            .map(TraceMigrationMarker::from_json_bytes)
            .transpose()
            .map_err(|error| TraceStoreError::record_invalid("marker", error))?;
        let checkpoint = cells
            .checkpoint
            .as_deref()
            .map(MigrationCheckpoint::from_json_bytes)
            .transpose()
            .map_err(|error| TraceStoreError::record_invalid("checkpoint", error))?;
        Ok(TraceMigrationRead {
            cells,
            marker,
            checkpoint,
        })
    }
}

impl MarkerRead for TraceMigrationRead {
    type Layout = Layout;
    type Error = TraceStoreError;

    fn cells_of(&self, row: Option<&Row>) -> MarkerCells {
        marker_place().cells_of(row)
    }

    fn decode(&self, cells: MarkerCells) -> Result<TraceMigrationRead, TraceStoreError> {
        TraceMigrationRead::from_cells(cells)
    }

    fn cells(&self) -> MarkerCells {
        self.cells.clone()
    }

    fn marker(&self) -> Option<&TraceMigrationMarker> {
        self.marker.as_ref()
    }

    fn checkpoint(&self) -> Option<&MigrationCheckpoint> {
        self.checkpoint.as_ref()
    }

    /// A table's layout is its families, not a cell of the marker row.
    fn layout(&self) -> Option<Layout> {
        None
    }

    /// The marker row belongs to the table: nothing else can take it over.
    fn still_ours(&self, _now: &MarkerCells) -> Result<bool, TraceStoreError> {
        Ok(true)
    }
}

impl MigrationFailure for TraceStoreError {
    fn marker_changed() -> TraceStoreError {
        TraceStoreError::MarkerChanged
    }

    fn taken_over(owner: String) -> TraceStoreError {
        TraceStoreError::MigrationTakenOver { owner }
    }

    fn in_progress(detail: String) -> TraceStoreError {
        TraceStoreError::MigrationInProgress(detail)
    }

    fn change_refused(error: MarkerTransitionError) -> TraceStoreError {
        TraceStoreError::MigrationChangeRefused(error)
    }

    fn record_invalid(column: &'static str, error: MigrationRecordError) -> TraceStoreError {
        TraceStoreError::MigrationRecordInvalid { column, error }
    }

    /// Cannot happen ([`TraceMigrationRead::still_ours`] is always true).
    fn gone() -> TraceStoreError {
        TraceStoreError::MarkerChanged
    }

    fn unwritable(detail: String) -> TraceStoreError {
        TraceStoreError::Internal(detail)
    }
}

/// The table of `state`, where its marker row is.
pub fn marker_table(state: &TraceStoreState) -> MarkerTable {
    MarkerTable {
        table: state.table.clone(),
        app_profile_id: state.app_profile_id.clone(),
    }
}

/// `ReadTableMigration()`: a table's migration state in one `ReadRow` of its marker row.
pub type ReadTableMigration<'a> = Operation<'a, ReadTableMigrationFlow>;
/// `WriteTableMarker(as_read, change, gates)`: one marker CAS on a table's marker row.
pub type WriteTableMarker<'a> = Operation<'a, WriteTableMarkerFlow>;
/// `WriteTableCheckpoint(as_read, checkpoint, take_over)`: one checkpoint CAS (§7.1).
pub type WriteTableCheckpoint<'a> = Operation<'a, WriteTableCheckpointFlow>;

/// The flow of [`ReadTableMigration`].
#[derive(Debug)]
pub struct ReadTableMigrationFlow(ReadMarkerStep);

impl<'a> ReadTableMigration<'a> {
    /// Reads the marker row of `state`'s table (§2.1).
    pub fn new(state: impl Into<ContextArg<'a, TraceStoreState>>, start: Start) -> Self {
        let flow = ReadTableMigrationFlow(ReadMarkerStep::new(&marker_place()));
        begin(state, Ok(flow), start)
    }
}

impl Flow for ReadTableMigrationFlow {
    type Schema = TraceStoreSchema;
    type Output = TraceMigrationRead;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<TraceMigrationRead> {
        let row = ready!(self.0.poll::<_, TraceStoreError>(io, &marker_table(state)));
        TraceMigrationRead::from_row(row.as_ref()).map(Some)
    }
}

/// The flow of [`WriteTableMarker`].
#[derive(Debug)]
pub struct WriteTableMarkerFlow(WriteMarkerStep<TraceMigrationRead>);

impl WriteTableMarkerFlow {
    /// The flow of [`WriteTableMarker::new`], for the migrator.
    pub(crate) fn new(
        as_read: &TraceMigrationRead,
        change: TraceMarkerChange,
        gates: Gates,
    ) -> Result<WriteTableMarkerFlow, TraceStoreError> {
        // No layout column to write: the trace store has no switch CAS.
        WriteMarkerStep::new(&marker_place(), as_read, change, gates, |_| Vec::new())
            .map(WriteTableMarkerFlow)
    }
}

impl<'a> WriteTableMarker<'a> {
    /// Changes the marker of `state`'s table from `as_read` (the row as last read) as `change`
    /// says (§2.2): refused before anything is sent when §3, the gates or the run's fixed
    /// members forbid it ([`TraceStoreError::MigrationChangeRefused`]); not applied and not
    /// its own write → [`TraceStoreError::MarkerChanged`].
    pub fn new(
        state: impl Into<ContextArg<'a, TraceStoreState>>,
        as_read: &TraceMigrationRead,
        change: TraceMarkerChange,
        gates: Gates,
        start: Start,
    ) -> Self {
        begin(
            state,
            WriteTableMarkerFlow::new(as_read, change, gates),
            start,
        )
    }
}

impl Flow for WriteTableMarkerFlow {
    type Schema = TraceStoreSchema;
    type Output = TraceMigrationRead;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<TraceMigrationRead> {
        self.0.poll(io, &marker_table(state))
    }
}

/// The flow of [`WriteTableCheckpoint`].
#[derive(Debug)]
pub struct WriteTableCheckpointFlow(WriteCheckpointStep<TraceMigrationRead>);

impl WriteTableCheckpointFlow {
    /// The flow of [`WriteTableCheckpoint::new`] at `now`, for the migrator's passes.
    pub(crate) fn new(
        as_read: &TraceMigrationRead,
        checkpoint: MigrationCheckpoint,
        take_over: bool,
        now: Timestamp,
    ) -> Result<WriteTableCheckpointFlow, TraceStoreError> {
        WriteCheckpointStep::new(&marker_place(), as_read, checkpoint, take_over, now)
            .map(WriteTableCheckpointFlow)
    }
}

impl<'a> WriteTableCheckpoint<'a> {
    /// Writes the checkpoint of `state`'s table (the source, §2.1) as `checkpoint`, `updated`
    /// = `start.now` and the lease renewed, conditional on the checkpoint as last read; another
    /// owner's live lease is refused before sending unless `take_over`.
    pub fn new(
        state: impl Into<ContextArg<'a, TraceStoreState>>,
        as_read: &TraceMigrationRead,
        checkpoint: MigrationCheckpoint,
        take_over: bool,
        start: Start,
    ) -> Self {
        let flow = WriteTableCheckpointFlow::new(as_read, checkpoint, take_over, start.now);
        begin(state, flow, start)
    }
}

impl Flow for WriteTableCheckpointFlow {
    type Schema = TraceStoreSchema;
    type Output = TraceMigrationRead;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<TraceMigrationRead> {
        self.0.poll(io, &marker_table(state))
    }
}
