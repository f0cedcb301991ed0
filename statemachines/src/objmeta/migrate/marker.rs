//! The migration marker's machines of a bucket (`docs/migration.md` §2, §4.5, §4.7, §4.8,
//! §7.1): [`ReadMigration`] reads the bucket's metastore row once; [`WriteMarker`] changes the
//! marker (a state change, the switch, the final removal) and [`WriteCheckpoint`] writes the
//! checkpoint, each with one `CheckAndMutateRow` on that row.
//!
//! The steps, and the handling of a write's reply (a write not applied, or answered with an
//! error, re-reads the row once and decides from what is there, writing nothing more), are
//! the ones both schemas share ([`crate::migration`]); this module says where a bucket's
//! marker is ([`metastore_place`]) and how its row reads ([`MigrationRead`]):
//!
//! | Re-read finds | Outcome |
//! | --- | --- |
//! | no row, a row without `d:value`, or another bucket `uid` | [`ObjmetaError::BucketDeleted`] |
//! | exactly what this write wrote (a lost response) | success |
//! | the row as last read, after a store error | that store error (not applied; retry) |
//! | anything else, marker write | [`ObjmetaError::MarkerChanged`] |
//! | anything else, checkpoint write | [`ObjmetaError::MigrationTakenOver`] |
//!
//! Every machine returns the row's migration state as it stands after it ([`MigrationRead`]),
//! which the caller hands to its next write as the row "as last read".

use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::migration::{MarkerCells, MarkerTransitionError, MigrationRecordError};
use rowkit_codec::model::Row;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::marker::{
    Gates, MarkerChange, MigrationCheckpoint, MigrationColumns, MigrationMarker, metastore_place,
    vformat_cell,
};

use super::super::requests::{OmIo, P, check_key};
use super::super::{ObjmetaError, ObjmetaSchema, ObjmetaState, begin};
use crate::migration::{
    MarkerRead, MarkerTable, MigrationFailure, ReadMarkerStep, WriteCheckpointStep, WriteMarkerStep,
};
use crate::operation::{ContextArg, Flow, Operation, Start};
use crate::{Timestamp, ready};

/// `ReadMigration(bucket)`: the bucket's migration state in one `ReadRow`.
pub type ReadMigration<'a> = Operation<'a, ReadMigrationFlow>;
/// `WriteMarker(bucket, as_read, change, gates)`: one marker CAS (§2.2, §4.5, §4.7).
pub type WriteMarker<'a> = Operation<'a, WriteMarkerFlow>;
/// `WriteCheckpoint(bucket, as_read, checkpoint, take_over)`: one checkpoint CAS (§7.1).
pub type WriteCheckpoint<'a> = Operation<'a, WriteCheckpointFlow>;

/// The marker cell `d:rowkitMigration` as read (`None`: no marker), decoded; a text that does
/// not decode is [`ObjmetaError::MigrationRecordInvalid`] (`column: "marker"`), never a guess.
pub fn decode_marker(cell: Option<&[u8]>) -> Result<Option<MigrationMarker>, ObjmetaError> {
    cell.map(MigrationMarker::from_json_bytes)
        .transpose()
        .map_err(|error| ObjmetaError::MigrationRecordInvalid {
            column: "marker",
            error,
        })
}

/// The bucket's migration state as read from its metastore row (§2.1): what `getBucketVFormat`
/// reads, plus the marker and checkpoint, decoded, with the raw cells the next CAS names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrationRead {
    /// The row's migration columns, raw (the predicates of the next write).
    pub columns: MigrationColumns,
    /// The bucket's key format (`v0` when `d:vFormat` is absent, as Arsenal reads it).
    pub vformat: VFormat,
    /// What names this bucket instance (`value.uid`, else `created:` + `creationDate`).
    pub bucket_uid: Option<String>,
    /// The marker, if any.
    pub marker: Option<MigrationMarker>,
    /// The checkpoint, if any.
    pub checkpoint: Option<MigrationCheckpoint>,
}

impl MigrationRead {
    /// Decodes a metastore row read with `LatestN(1)`: no row (or no `d:value`) is
    /// `NoSuchBucket`; a marker or checkpoint that does not decode is
    /// [`ObjmetaError::MigrationRecordInvalid`].
    pub fn from_row(row: Option<&Row>) -> Result<MigrationRead, ObjmetaError> {
        let columns = row.map(MigrationColumns::from_row).unwrap_or_default();
        MigrationRead::from_columns(columns)
    }

    /// [`MigrationRead::from_row`] of columns already taken from the row.
    pub fn from_columns(columns: MigrationColumns) -> Result<MigrationRead, ObjmetaError> {
        let value = columns.value.as_deref().ok_or(ObjmetaError::NoSuchBucket)?;
        let bucket_uid = uid_of(value)?;
        let marker = decode_marker(columns.marker.as_deref())?;
        let checkpoint = columns
            .checkpoint
            .as_deref()
            .map(MigrationCheckpoint::from_json_bytes)
            .transpose()
            .map_err(|error| ObjmetaError::record_invalid("checkpoint", error))?;
        Ok(MigrationRead {
            vformat: columns.vformat(),
            columns,
            bucket_uid,
            marker,
            checkpoint,
        })
    }
}

impl MarkerRead for MigrationRead {
    type Layout = VFormat;
    type Error = ObjmetaError;

    fn cells_of(&self, row: Option<&Row>) -> MarkerCells {
        row.map(MigrationColumns::from_row)
            .unwrap_or_default()
            .into()
    }

    fn decode(&self, cells: MarkerCells) -> Result<MigrationRead, ObjmetaError> {
        MigrationRead::from_columns(cells.into())
    }

    fn cells(&self) -> MarkerCells {
        self.columns.clone().into()
    }

    fn marker(&self) -> Option<&MigrationMarker> {
        self.marker.as_ref()
    }

    fn checkpoint(&self) -> Option<&MigrationCheckpoint> {
        self.checkpoint.as_ref()
    }

    fn layout(&self) -> Option<VFormat> {
        Some(self.vformat)
    }

    /// §4.8: a re-read row is still the bucket read before when it is present with the same
    /// uid.
    fn still_ours(&self, now: &MarkerCells) -> Result<bool, ObjmetaError> {
        let Some(value) = now.anchor.as_deref() else {
            return Ok(false);
        };
        Ok(uid_of(value)? == self.bucket_uid)
    }

    /// A start names the bucket it read (§4.8, §12.3).
    fn refuse_change(&self, change: &MarkerChange) -> Result<(), MarkerTransitionError> {
        if self.marker.is_none()
            && let Some(m) = change.marker()
            && Some(&m.bucket_uid) != self.bucket_uid.as_ref()
        {
            return Err(MarkerTransitionError::Changed("bucket_uid"));
        }
        Ok(())
    }
}

impl MigrationFailure for ObjmetaError {
    fn marker_changed() -> ObjmetaError {
        ObjmetaError::MarkerChanged
    }

    fn taken_over(owner: String) -> ObjmetaError {
        ObjmetaError::MigrationTakenOver { owner }
    }

    fn in_progress(detail: String) -> ObjmetaError {
        ObjmetaError::MigrationInProgress(detail)
    }

    fn change_refused(error: MarkerTransitionError) -> ObjmetaError {
        ObjmetaError::MigrationChangeRefused(error)
    }

    fn record_invalid(column: &'static str, error: MigrationRecordError) -> ObjmetaError {
        ObjmetaError::MigrationRecordInvalid { column, error }
    }

    fn gone() -> ObjmetaError {
        ObjmetaError::BucketDeleted
    }

    fn unwritable(detail: String) -> ObjmetaError {
        ObjmetaError::internal(detail)
    }
}

/// What names one bucket instance in the marker's `bucket_uid` (§2.2): the stored value's
/// `uid`, or — for a bucket created without one (by an older tool) — `created:` and its
/// `creationDate`, which a recreated bucket does not share either; `None` when it has neither.
fn uid_of(value: &[u8]) -> Result<Option<String>, ObjmetaError> {
    let doc = Json::parse(&String::from_utf8_lossy(value)).map_err(ObjmetaError::internal)?;
    let member = |name: &str| {
        doc.get(name)
            .and_then(Json::as_str)
            .filter(|s| !s.is_empty())
    };
    Ok(member("uid")
        .map(String::from)
        .or_else(|| member("creationDate").map(|date| alloc::format!("created:{date}"))))
}

/// The table of the objmeta instance (its marker rows are in it).
fn marker_table(st: &ObjmetaState) -> MarkerTable {
    MarkerTable {
        table: st.config.table.clone(),
        app_profile_id: String::new(),
    }
}

/// The flow of [`ReadMigration`].
#[derive(Debug)]
pub struct ReadMigrationFlow {
    row: Vec<u8>,
    read: ReadMarkerStep,
}

impl ReadMigrationFlow {
    /// The flow of [`ReadMigration::new`], for a parent flow that reads the migration inside
    /// its own operation (the migrator).
    pub(super) fn new(bucket: &str) -> ReadMigrationFlow {
        let place = metastore_place(bucket);
        ReadMigrationFlow {
            read: ReadMarkerStep::new(&place),
            row: place.row,
        }
    }
}

impl<'a> ReadMigration<'a> {
    /// Reads `bucket`'s metastore row once (§2.1) → its key format, uid, marker and
    /// checkpoint; `NoSuchBucket` when it has no row.
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        start: Start,
    ) -> ReadMigration<'a> {
        begin(ctx, start, ReadMigrationFlow::new(bucket))
    }
}

impl Flow for ReadMigrationFlow {
    type Schema = ObjmetaSchema;
    type Output = MigrationRead;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<MigrationRead> {
        check_key(&self.row)?;
        let row = ready!(self.read.poll::<_, ObjmetaError>(io, &marker_table(st)));
        MigrationRead::from_row(row.as_ref()).map(Some)
    }
}

/// The flow of [`WriteMarker`].
#[derive(Debug)]
pub struct WriteMarkerFlow(WriteMarkerStep<MigrationRead>);

impl<'a> WriteMarker<'a> {
    /// Changes `bucket`'s marker from `as_read` (the row as last read, from [`ReadMigration`]
    /// or the previous write): writes a marker ([`MarkerChange::Write`]: the start or a state
    /// change), switches ([`MarkerChange::Switch`]: `d:vFormat` = the marker's `to` and the
    /// `switched` marker in one request, §4.5 step 3) or removes the marker and checkpoint
    /// ([`MarkerChange::Remove`], §4.7). The predicate is the marker and `d:vFormat` as read
    /// (§2.2). A change §3 does not allow, whose gate `gates` does not open, or that changes
    /// what a run keeps (see [`check_marker_change`](rowkit_codec::migration::check_marker_change))
    /// is refused before anything is sent ([`ObjmetaError::MigrationChangeRefused`]).
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        as_read: &MigrationRead,
        change: MarkerChange,
        gates: Gates,
        start: Start,
    ) -> WriteMarker<'a> {
        match WriteMarkerFlow::new(bucket, as_read, change, gates) {
            Ok(flow) => begin(ctx, start, flow),
            Err(e) => Operation::failed(ctx.into(), e),
        }
    }
}

impl WriteMarkerFlow {
    /// The flow of [`WriteMarker::new`], for a parent flow that changes the marker inside its
    /// own operation (the migrator).
    pub(super) fn new(
        bucket: &str,
        as_read: &MigrationRead,
        change: MarkerChange,
        gates: Gates,
    ) -> Result<WriteMarkerFlow, ObjmetaError> {
        let place = metastore_place(bucket);
        WriteMarkerStep::new(&place, as_read, change, gates, vformat_cell).map(WriteMarkerFlow)
    }
}

impl Flow for WriteMarkerFlow {
    type Schema = ObjmetaSchema;
    type Output = MigrationRead;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<MigrationRead> {
        self.0.poll(io, &marker_table(st))
    }
}

/// The flow of [`WriteCheckpoint`].
#[derive(Debug)]
pub struct WriteCheckpointFlow(WriteCheckpointStep<MigrationRead>);

impl<'a> WriteCheckpoint<'a> {
    /// Writes `bucket`'s checkpoint (§7.1) as `checkpoint` with `updated` = `start.now` and the
    /// lease renewed (`lease_until` = `start.now` +
    /// [`LEASE_US`](rowkit_codec::migration::LEASE_US)), conditional on the checkpoint as last
    /// read (`as_read`). A checkpoint as read of another owner whose lease has not run out is
    /// refused before anything is sent ([`ObjmetaError::MigrationInProgress`]) unless
    /// `take_over` (`--take-over`). Not applied and not its own write →
    /// [`ObjmetaError::MigrationTakenOver`].
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        as_read: &MigrationRead,
        checkpoint: MigrationCheckpoint,
        take_over: bool,
        start: Start,
    ) -> WriteCheckpoint<'a> {
        match WriteCheckpointFlow::new(bucket, as_read, checkpoint, take_over, start.now) {
            Ok(flow) => begin(ctx, start, flow),
            Err(e) => Operation::failed(ctx.into(), e),
        }
    }
}

impl WriteCheckpointFlow {
    /// The flow of [`WriteCheckpoint::new`] at `now`, for a parent flow that writes the
    /// checkpoint inside its own operation (the passes, §4.4 step 4).
    pub(in crate::objmeta) fn new(
        bucket: &str,
        as_read: &MigrationRead,
        checkpoint: MigrationCheckpoint,
        take_over: bool,
        now: Timestamp,
    ) -> Result<WriteCheckpointFlow, ObjmetaError> {
        let place = metastore_place(bucket);
        WriteCheckpointStep::new(&place, as_read, checkpoint, take_over, now)
            .map(WriteCheckpointFlow)
    }

    /// The release of this migrator's lease at `now` (§12.24; see
    /// [`WriteCheckpointStep::release`]); `None` when there is nothing to release.
    pub(in crate::objmeta) fn release(
        bucket: &str,
        as_read: &MigrationRead,
        owner: &str,
        now: Timestamp,
    ) -> Result<Option<WriteCheckpointFlow>, ObjmetaError> {
        let place = metastore_place(bucket);
        Ok(WriteCheckpointStep::release(&place, as_read, owner, now)?.map(WriteCheckpointFlow))
    }
}

impl Flow for WriteCheckpointFlow {
    type Schema = ObjmetaSchema;
    type Output = MigrationRead;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<MigrationRead> {
        self.0.poll(io, &marker_table(st))
    }
}
