//! The requests objmeta flows send and the change events they emit. Each request runs in a
//! child of the operation's [`Io`]; its reply comes back through `Io`'s handles: a read's
//! rows through [`Io::rows_or_wait`] and a point read's row through [`Io::row_or_wait`] (a
//! read no retry fits before the deadline waits for it, `objmeta.md` 16.3), a batch through [`Io::written_or_wait`], a write through
//! [`Io::written`] and a CAS through [`Io::matched`]. A store error maps once, as
//! [`OperationError::store`](crate::operation::OperationError::store): an `InternalError`.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{KeyBound, Mutation, RowFilter, RowRange, RowSet, limits};
use rowkit_codec::objmeta::cells::filters;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{VFormat, row_key, version_key};

use super::{ObjmetaError, ObjmetaEvent, ObjmetaSchema, ObjmetaState};
use crate::children::ChildId;
use crate::operation::{Io, Progress};
use crate::{
    CheckAndMutateRowRequest, MutateRowRequest, MutateRowsEntry, MutateRowsRequest, ReadRowRequest,
    ReadRowsRequest, Request,
};

/// The operation's I/O as every objmeta flow sees it.
pub(super) type OmIo = Io<ObjmetaEvent>;
/// A step of an objmeta flow or sub-flow.
pub(super) type P<T> = Progress<T, ObjmetaSchema>;

/// Row keys over 4 KiB are refused before anything is sent.
pub(super) fn check_key(key: &[u8]) -> Result<(), ObjmetaError> {
    if key.len() > limits::MAX_ROW_KEY_BYTES {
        return Err(ObjmetaError::internal(alloc::format!(
            "row key of {} bytes is over the 4096-byte limit",
            key.len()
        )));
    }
    Ok(())
}

/// Cell values over 100 MiB are refused before anything is sent.
fn check_mutations(mutations: &[Mutation]) -> Result<(), ObjmetaError> {
    for m in mutations {
        if let Mutation::SetCell { value, .. } = m
            && value.len() > limits::MAX_VALUE_BYTES
        {
            return Err(ObjmetaError::internal("cell value over 100 MiB"));
        }
    }
    Ok(())
}

/// Sends a request once (writes are never retried: a CAS or a replace that timed out may have
/// applied, and Arsenal reports it as an error).
fn unary(io: &mut OmIo, request: Request) -> ChildId {
    // Reads and batches draw their jitter seed from the stream; a unary request draws one too
    // (and drops it) so that the seeds of the requests after it stay where they always were.
    let _ = io.next_seed();
    io.unary(request)
}

/// Starts a `ReadRows` of `rows` on the table (merge, resume and retries in its child); its
/// rows come back through [`Io::rows_or_wait`].
pub(super) fn start_read(
    io: &mut OmIo,
    st: &ObjmetaState,
    rows: RowSet,
    filter: RowFilter,
    rows_limit: i64,
) -> ChildId {
    io.read_rows(ReadRowsRequest {
        table: st.config.table.clone(),
        rows,
        filter: Some(filter),
        rows_limit,
        ..Default::default()
    })
}

/// Starts a point read of the one row `row_key` (retries in its child, as a one-key
/// [`start_read`] has them); its row comes back through [`Io::row_or_wait`].
pub(super) fn start_read_row(
    io: &mut OmIo,
    st: &ObjmetaState,
    row_key: Vec<u8>,
    filter: RowFilter,
) -> ChildId {
    io.read_row(ReadRowRequest {
        table: st.config.table.clone(),
        row_key,
        filter: Some(filter),
        ..Default::default()
    })
}

/// Starts a `MutateRow`, sent once; its outcome comes back through [`Io::written`].
pub(super) fn start_write(
    io: &mut OmIo,
    st: &ObjmetaState,
    row_key: Vec<u8>,
    mutations: Vec<Mutation>,
) -> Result<ChildId, ObjmetaError> {
    check_key(&row_key)?;
    check_mutations(&mutations)?;
    Ok(unary(
        io,
        Request::MutateRow(MutateRowRequest {
            table: st.config.table.clone(),
            row_key,
            mutations,
            ..Default::default()
        }),
    ))
}

/// Starts a `CheckAndMutateRow`, sent once; `predicate_matched` comes back through
/// [`Io::matched`].
pub(super) fn start_cas(
    io: &mut OmIo,
    st: &ObjmetaState,
    row_key: Vec<u8>,
    predicate: RowFilter,
    true_mutations: Vec<Mutation>,
    false_mutations: Vec<Mutation>,
) -> Result<ChildId, ObjmetaError> {
    check_key(&row_key)?;
    check_mutations(&true_mutations)?;
    check_mutations(&false_mutations)?;
    Ok(unary(
        io,
        Request::CheckAndMutateRow(CheckAndMutateRowRequest {
            table: st.config.table.clone(),
            row_key,
            predicate: Some(predicate),
            true_mutations,
            false_mutations,
            ..Default::default()
        }),
    ))
}

/// A [`start_cas`] that applies `mutations` only while the row's document is still the one read,
/// whose hash was `hash` (none: empty); matched = applied.
pub(super) fn start_cas_unchanged(
    io: &mut OmIo,
    st: &ObjmetaState,
    row_key: Vec<u8>,
    hash: Option<&[u8]>,
    mutations: Vec<Mutation>,
) -> Result<ChildId, ObjmetaError> {
    let predicate = filters::hash_eq(hash.unwrap_or_default());
    start_cas(io, st, row_key, predicate, mutations, vec![])
}

/// Starts a `MutateRows` batch (the `bigtable.md` 6 entry retries in its child); its outcome
/// comes back through [`Io::written_or_wait`].
pub(super) fn start_bulk(
    io: &mut OmIo,
    st: &ObjmetaState,
    entries: Vec<MutateRowsEntry>,
) -> ChildId {
    io.mutate_rows(MutateRowsRequest {
        table: st.config.table.clone(),
        entries: entries.into(),
        ..Default::default()
    })
}

/// The row range `getLatestVersion` reads (both ends exclusive).
pub(super) fn latest_version_range(collection: &str, vf: VFormat, key: &str) -> RowRange {
    let (start, end) = match vf {
        VFormat::V0 => (key.to_string(), alloc::format!("{key}\u{1}")),
        VFormat::V1 => (version_key(vf, key, ""), alloc::format!("\x7fV{key}\u{1}")),
    };
    RowRange {
        start: KeyBound::Open(row_key(collection, &start)),
        end: KeyBound::Open(row_key(collection, &end)),
    }
}

/// Emits the `Put` of a document.
pub(super) fn put_event(io: &mut OmIo, collection: &str, key: &str, value: &Json) {
    put_event_text(io, collection, key, value.stringify());
}

/// Emits the `Put` of a document whose JSON text the caller has made already.
pub(super) fn put_event_text(io: &mut OmIo, collection: &str, key: &str, text: String) {
    io.emit(ObjmetaEvent::Put {
        collection: collection.to_string(),
        key: key.to_string(),
        value: text,
    });
}

/// Emits the `Delete` of a document (with its pre-image when the delete read it).
pub(super) fn delete_event(io: &mut OmIo, collection: &str, key: &str, value: Option<&Json>) {
    io.emit(ObjmetaEvent::Delete {
        collection: collection.to_string(),
        key: key.to_string(),
        value: value.map(Json::stringify),
    });
}
