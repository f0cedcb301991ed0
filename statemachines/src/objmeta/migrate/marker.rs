//! The migration marker's machines (`docs/migration.md` §2, §4.5, §4.7, §4.8, §7.1):
//! [`ReadMigration`] reads the bucket's metastore row once; [`WriteMarker`] changes the marker
//! (a state change, the switch, the final removal) and [`WriteCheckpoint`] writes the
//! checkpoint, each with one `CheckAndMutateRow` on that row.
//!
//! A write that is not applied, or whose reply is an error (the outcome is unknown), re-reads
//! the row once and decides from what is there, writing nothing more:
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

use rowkit_codec::model::Row;
use rowkit_codec::objmeta::cells::filters;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::marker::{
    Gates, LEASE_US, MarkerChange, MarkerTransitionError, MetastoreCas, MigrationCheckpoint,
    MigrationColumns, MigrationMarker, check_marker_change, metastore_row, vformat_cell,
};

use super::super::requests::{OmIo, P, check_key, start_cas, start_read_row};
use super::super::{ObjmetaError, ObjmetaSchema, ObjmetaState, begin};
use crate::children::ChildId;
use crate::operation::{ContextArg, Flow, Operation, Start, settled};
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
            .map_err(|error| ObjmetaError::MigrationRecordInvalid {
                column: "checkpoint",
                error,
            })?;
        Ok(MigrationRead {
            vformat: columns.vformat(),
            columns,
            bucket_uid,
            marker,
            checkpoint,
        })
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

/// Whether a re-read row is still the bucket read before (§4.8): present, with the same uid.
fn same_bucket(columns: &MigrationColumns, as_read: &MigrationRead) -> Result<bool, ObjmetaError> {
    let Some(value) = columns.value.as_deref() else {
        return Ok(false);
    };
    Ok(uid_of(value)? == as_read.bucket_uid)
}

/// The one point read of the metastore row.
fn start_read_metastore(
    io: &mut OmIo,
    st: &ObjmetaState,
    row: &[u8],
) -> Result<ChildId, ObjmetaError> {
    check_key(row)?;
    Ok(start_read_row(io, st, row.to_vec(), filters::latest()))
}

/// The flow of [`ReadMigration`].
#[derive(Debug)]
pub struct ReadMigrationFlow {
    row: Vec<u8>,
    phase: ReadPhase,
}

#[derive(Debug)]
enum ReadPhase {
    Start,
    Reading(ChildId),
    Done,
}

impl ReadMigrationFlow {
    /// The flow of [`ReadMigration::new`], for a parent flow that reads the migration inside
    /// its own operation (the migrator).
    pub(super) fn new(bucket: &str) -> ReadMigrationFlow {
        ReadMigrationFlow {
            row: metastore_row(bucket),
            phase: ReadPhase::Start,
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
        loop {
            match core::mem::replace(&mut self.phase, ReadPhase::Done) {
                ReadPhase::Start => {
                    self.phase = ReadPhase::Reading(start_read_metastore(io, st, &self.row)?);
                }
                ReadPhase::Reading(read) => {
                    let row = ready!(io.row_or_wait(read), self.phase => ReadPhase::Reading(read));
                    return MigrationRead::from_row(row.as_ref()).map(Some);
                }
                ReadPhase::Done => return Ok(None),
            }
        }
    }
}

/// What a conditional write of the metastore row came to.
#[derive(Debug)]
enum CasOutcome {
    /// The predicate matched: the write applied.
    Applied,
    /// Not applied, or the reply was an error: the row as re-read, and the error.
    Reread {
        row: Option<Row>,
        cas_error: Option<ObjmetaError>,
    },
}

/// One `CheckAndMutateRow` of the metastore row, then (unless it matched) one re-read.
#[derive(Debug)]
struct MetastoreWrite {
    row: Vec<u8>,
    phase: CasPhase,
}

#[derive(Debug)]
enum CasPhase {
    Send(MetastoreCas),
    Writing(ChildId),
    Rereading {
        read: ChildId,
        cas_error: Option<ObjmetaError>,
    },
    Done,
}

impl MetastoreWrite {
    fn new(row: Vec<u8>, cas: MetastoreCas) -> MetastoreWrite {
        MetastoreWrite {
            row,
            phase: CasPhase::Send(cas),
        }
    }

    fn poll(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<CasOutcome> {
        loop {
            match core::mem::replace(&mut self.phase, CasPhase::Done) {
                CasPhase::Send(cas) => {
                    let id = start_cas(
                        io,
                        st,
                        self.row.clone(),
                        cas.predicate,
                        cas.true_mutations,
                        cas.false_mutations,
                    )?;
                    self.phase = CasPhase::Writing(id);
                }
                CasPhase::Writing(id) => {
                    let outcome = ready!(settled(io.matched(id)),
                        self.phase => CasPhase::Writing(id));
                    let cas_error = match outcome {
                        Ok(true) => return Ok(Some(CasOutcome::Applied)),
                        Ok(false) => None,
                        Err(e) => Some(e),
                    };
                    let read = start_read_metastore(io, st, &self.row)?;
                    self.phase = CasPhase::Rereading { read, cas_error };
                }
                CasPhase::Rereading { read, cas_error } => {
                    let row = ready!(io.row_or_wait(read),
                        self.phase => CasPhase::Rereading { read, cas_error });
                    return Ok(Some(CasOutcome::Reread { row, cas_error }));
                }
                CasPhase::Done => return Ok(None),
            }
        }
    }
}

/// The flow of [`WriteMarker`].
#[derive(Debug)]
pub struct WriteMarkerFlow {
    as_read: MigrationRead,
    /// The row as it stands once the write applied (marker, vFormat and checkpoint columns).
    written: MigrationColumns,
    /// The marker written (`None`: removed).
    marker: Option<MigrationMarker>,
    write: MetastoreWrite,
}

impl<'a> WriteMarker<'a> {
    /// Changes `bucket`'s marker from `as_read` (the row as last read, from [`ReadMigration`]
    /// or the previous write): writes a marker ([`MarkerChange::Write`]: the start or a state
    /// change), switches ([`MarkerChange::Switch`]: `d:vFormat` = the marker's `to` and the
    /// `switched` marker in one request, §4.5 step 3) or removes the marker and checkpoint
    /// ([`MarkerChange::Remove`], §4.7). The predicate is the marker and `d:vFormat` as read
    /// (§2.2). A change §3 does not allow, whose gate `gates` does not open, or that changes
    /// what a run keeps (see [`check_marker_change`]) is refused before anything is sent
    /// ([`ObjmetaError::MigrationChangeRefused`]).
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
        let refused = ObjmetaError::MigrationChangeRefused;
        check_marker_change(as_read.marker.as_ref(), as_read.vformat, &change, gates)
            .map_err(refused)?;
        if as_read.marker.is_none()
            && let Some(m) = change.marker()
            && Some(&m.bucket_uid) != as_read.bucket_uid.as_ref()
        {
            return Err(refused(MarkerTransitionError::Changed("bucket_uid")));
        }
        let marker_text = match change.marker() {
            Some(m) => Some(m.to_json_text().map_err(|e| {
                ObjmetaError::internal(alloc::format!("cannot write the migration marker: {e}"))
            })?),
            None => None,
        };
        let cols = &as_read.columns;
        let (old_marker, old_vformat) = (cols.marker.as_deref(), cols.vformat.as_deref());
        let mut written = cols.clone();
        written.marker = marker_text.clone().map(String::into_bytes);
        let cas = match (&change, marker_text.as_deref()) {
            (MarkerChange::Write(_), Some(text)) => {
                MetastoreCas::write_marker(old_marker, old_vformat, text)
            }
            (MarkerChange::Switch(m), Some(text)) => {
                written.vformat = Some(vformat_cell(m.to));
                MetastoreCas::switch(old_marker, old_vformat, m.to, text)
            }
            _ => {
                written.checkpoint = None;
                MetastoreCas::remove(old_marker, old_vformat)
            }
        };
        Ok(WriteMarkerFlow {
            as_read: as_read.clone(),
            written,
            marker: change.marker().cloned(),
            write: MetastoreWrite::new(metastore_row(bucket), cas),
        })
    }
}

impl Flow for WriteMarkerFlow {
    type Schema = ObjmetaSchema;
    type Output = MigrationRead;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<MigrationRead> {
        let (row, cas_error) = match ready!(self.write.poll(io, st)) {
            CasOutcome::Applied => {
                let mut read = self.as_read.clone();
                read.vformat = self.written.vformat();
                read.columns = self.written.clone();
                read.marker = self.marker.clone();
                if self.marker.is_none() {
                    read.checkpoint = None;
                }
                return Ok(Some(read));
            }
            CasOutcome::Reread { row, cas_error } => (row, cas_error),
        };
        let now = row
            .as_ref()
            .map(MigrationColumns::from_row)
            .unwrap_or_default();
        if !same_bucket(&now, &self.as_read)? {
            return Err(ObjmetaError::BucketDeleted);
        }
        if now.marker == self.written.marker && now.vformat == self.written.vformat {
            // Our own write, whose reply was lost (or replayed): done.
            return MigrationRead::from_columns(now).map(Some);
        }
        let old = &self.as_read.columns;
        match cas_error {
            Some(e) if now.marker == old.marker && now.vformat == old.vformat => Err(e),
            _ => Err(ObjmetaError::MarkerChanged),
        }
    }
}

/// The flow of [`WriteCheckpoint`].
#[derive(Debug)]
pub struct WriteCheckpointFlow {
    as_read: MigrationRead,
    checkpoint: MigrationCheckpoint,
    text: Vec<u8>,
    write: MetastoreWrite,
}

impl<'a> WriteCheckpoint<'a> {
    /// Writes `bucket`'s checkpoint (§7.1) as `checkpoint` with `updated` = `start.now` and the
    /// lease renewed (`lease_until` = `start.now` + [`LEASE_US`]), conditional on the
    /// checkpoint as last read (`as_read`). A checkpoint as read of another owner whose lease
    /// has not run out is refused before anything is sent
    /// ([`ObjmetaError::MigrationInProgress`]) unless `take_over` (`--take-over`). Not applied
    /// and not its own write → [`ObjmetaError::MigrationTakenOver`].
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
        mut checkpoint: MigrationCheckpoint,
        take_over: bool,
        now: Timestamp,
    ) -> Result<WriteCheckpointFlow, ObjmetaError> {
        if let Some(held) = &as_read.checkpoint
            && held.owner != checkpoint.owner
            && held.lease_until > now
            && !take_over
        {
            return Err(ObjmetaError::MigrationInProgress(alloc::format!(
                "run {} is held by {} until {} µs",
                held.run,
                held.owner,
                held.lease_until.0
            )));
        }
        checkpoint.updated = now;
        checkpoint.lease_until = now.saturating_add_micros(LEASE_US);
        WriteCheckpointFlow::write(bucket, as_read, checkpoint)
    }

    /// The release of this migrator's lease at `now` (`lease_until` = `now`): written when a
    /// run stops at a gate, so that the operator's next run (another process, so another
    /// owner) continues at once instead of waiting out the lease or needing `--take-over`.
    /// `None` when there is nothing to release: no checkpoint, another owner's, or a lease
    /// already run out.
    pub(in crate::objmeta) fn release(
        bucket: &str,
        as_read: &MigrationRead,
        owner: &str,
        now: Timestamp,
    ) -> Result<Option<WriteCheckpointFlow>, ObjmetaError> {
        let Some(held) = as_read
            .checkpoint
            .as_ref()
            .filter(|c| c.owner == owner && c.lease_until > now)
        else {
            return Ok(None);
        };
        let mut checkpoint = held.clone();
        checkpoint.updated = now;
        checkpoint.lease_until = now;
        WriteCheckpointFlow::write(bucket, as_read, checkpoint).map(Some)
    }

    /// The conditional write of `checkpoint` as it is (§7.1).
    fn write(
        bucket: &str,
        as_read: &MigrationRead,
        checkpoint: MigrationCheckpoint,
    ) -> Result<WriteCheckpointFlow, ObjmetaError> {
        let text = checkpoint.to_json_text().map_err(|e| {
            ObjmetaError::internal(alloc::format!("cannot write the migration checkpoint: {e}"))
        })?;
        let cas = MetastoreCas::write_checkpoint(as_read.columns.checkpoint.as_deref(), &text);
        Ok(WriteCheckpointFlow {
            as_read: as_read.clone(),
            checkpoint,
            text: text.into_bytes(),
            write: MetastoreWrite::new(metastore_row(bucket), cas),
        })
    }
}

impl Flow for WriteCheckpointFlow {
    type Schema = ObjmetaSchema;
    type Output = MigrationRead;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<MigrationRead> {
        let (row, cas_error) = match ready!(self.write.poll(io, st)) {
            CasOutcome::Applied => {
                let mut read = self.as_read.clone();
                read.columns.checkpoint = Some(self.text.clone());
                read.checkpoint = Some(self.checkpoint.clone());
                return Ok(Some(read));
            }
            CasOutcome::Reread { row, cas_error } => (row, cas_error),
        };
        let now = row
            .as_ref()
            .map(MigrationColumns::from_row)
            .unwrap_or_default();
        if !same_bucket(&now, &self.as_read)? {
            return Err(ObjmetaError::BucketDeleted);
        }
        if now.checkpoint.as_deref() == Some(self.text.as_slice()) {
            // Our own write, whose reply was lost (or replayed): done.
            return MigrationRead::from_columns(now).map(Some);
        }
        if let Some(e) = cas_error
            && now.checkpoint == self.as_read.columns.checkpoint
        {
            return Err(e);
        }
        if now.marker.is_none() {
            // The migration ended (or never began) under this migrator.
            return Err(ObjmetaError::MarkerChanged);
        }
        let owner = match now.checkpoint.as_deref() {
            Some(bytes) => {
                MigrationCheckpoint::from_json_bytes(bytes)
                    .map_err(|error| ObjmetaError::MigrationRecordInvalid {
                        column: "checkpoint",
                        error,
                    })?
                    .owner
            }
            None => String::new(),
        };
        Err(ObjmetaError::MigrationTakenOver { owner })
    }
}
