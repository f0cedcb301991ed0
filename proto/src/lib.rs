//! Bigtable's protobuf messages (the `googleapis-tonic-*` types) <-> rowkit's model and request
//! vocabulary: the one conversion both sides of the wire use, the Cloud Bigtable adapter
//! (`rowkit-bigtable`) and rowkit's gRPC server (`rowkit-grpc`). It converts values only: no
//! channel, no credentials, no server, so the server builds without the Cloud client and the
//! client without the server. Everything above this edge (machines, merger, stores) sees
//! rowkit types, everything below it (tonic calls) sees prost types.
//!
//! Directions: for the client, requests and their parts (filters, mutations, row sets, rules,
//! GC rules) go rowkit -> prost; responses and schemas come back prost -> rowkit. The server
//! uses the reverse of each: requests prost -> rowkit (failing with [`ConvertError`] on proto
//! features rowkit does not model: aggregates, unset oneofs), and responses, statuses
//! ([`error_to_status`]) and schemas rowkit -> prost. The client reads a `tonic::Status` itself
//! (`rowkit_bigtable::status_to_error`), since telling a transport failure from a server's
//! answer is the client's knowledge.
#![forbid(unsafe_code)]

/// Largest gRPC message rowkit's client sends, and its server accepts and sends: a MutateRow
/// writing a whole 256 MiB row (`spec/bigtable.md` 4) plus its framing, a few bytes per
/// mutation for at most 100 000 mutations, hence 4 MiB over 256 MiB.
pub const MAX_ENCODING_MESSAGE_SIZE: usize = (256 + 4) << 20;

use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use googleapis_tonic_google_bigtable_v2::google::rpc as pb_rpc;
use rowkit_codec::model::{
    Cell, Code, ColumnFamily, GcRule, KeyBound, Mutation, ReadModifyWriteRule, Row, RowFilter,
    RowRange, RowSet, RuleOp, Timestamp, TimestampRange,
};
use rowkit_statemachines::{
    CellChunk, CheckAndMutateRowRequest, MutateRowRequest, MutateRowsEntry, MutateRowsEntryResult,
    MutateRowsRequest, MutateRowsResponse, ReadModifyWriteRowRequest, ReadRowsRequest,
    ReadRowsResponse, RowStatus, SampleRowKeysResponse, StoreError,
};

/// A prost message rowkit cannot represent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// A required oneof (filter kind, mutation kind, rule kind, GC rule) was not set.
    #[error("{what}: oneof not set")]
    Unset {
        /// The message whose oneof is empty.
        what: &'static str,
    },
    /// A proto feature outside rowkit's model.
    #[error("{what} is not supported by rowkit")]
    Unsupported {
        /// The feature.
        what: &'static str,
    },
    /// A boolean filter leaf set to `false`, which the proto calls invalid.
    #[error("{what} must be true when set")]
    False {
        /// The filter field.
        what: &'static str,
    },
    /// A number outside the range rowkit accepts.
    #[error("{what}: value {value} out of range")]
    OutOfRange {
        /// The field.
        what: &'static str,
        /// The value received.
        value: i64,
    },
}

impl From<ConvertError> for StoreError {
    fn from(e: ConvertError) -> StoreError {
        let code = match e {
            ConvertError::Unsupported { .. } => Code::Unimplemented,
            ConvertError::False { .. } => Code::InvalidArgument,
            ConvertError::Unset { .. } | ConvertError::OutOfRange { .. } => Code::Internal,
        };
        StoreError::new(code, e.to_string())
    }
}

impl ConvertError {
    /// The error a server answers for a request it cannot convert: `UNIMPLEMENTED` for a
    /// feature rowkit does not model, `INVALID_ARGUMENT` for an unset oneof, a `false` leaf or
    /// a number out of range (`spec/bigtable.md` 5, 10.3).
    pub fn into_request_error(self) -> StoreError {
        let code = match self {
            ConvertError::Unsupported { .. } => Code::Unimplemented,
            _ => Code::InvalidArgument,
        };
        StoreError::new(code, self.to_string())
    }
}

// --- statuses ------------------------------------------------------------------------------

/// A `google.rpc.Status` (MutateRows entry) as a result.
pub fn rpc_status_to_result(status: Option<&pb_rpc::Status>) -> Result<(), StoreError> {
    match status {
        None => Ok(()),
        Some(s) if s.code == 0 => Ok(()),
        Some(s) => Err(StoreError::new(Code::from_i32(s.code), s.message.clone())),
    }
}

// --- row sets ------------------------------------------------------------------------------

/// A row set to prost, by value: the keys move into the message instead of being copied.
/// Bounds keep their kind; an empty key stays an empty key (the emulator and production read
/// `end_key_closed: ""` differently, `spec/bigtable.md` 14).
pub fn row_set_to_pb(set: RowSet) -> pb::RowSet {
    use pb::row_range::{EndKey, StartKey};
    pb::RowSet {
        row_keys: set.row_keys,
        row_ranges: set
            .row_ranges
            .into_iter()
            .map(|r| pb::RowRange {
                start_key: bound_to_pb(r.start, StartKey::StartKeyClosed, StartKey::StartKeyOpen),
                end_key: bound_to_pb(r.end, EndKey::EndKeyClosed, EndKey::EndKeyOpen),
            })
            .collect(),
    }
}

/// A key bound as one of prost's start/end oneofs (`None` = unbounded). The proto has one
/// oneof per bound of rows, qualifiers and values, all built this way.
fn bound_to_pb<T>(bound: KeyBound, closed: fn(Vec<u8>) -> T, open: fn(Vec<u8>) -> T) -> Option<T> {
    match bound {
        KeyBound::Unbounded => None,
        KeyBound::Closed(k) => Some(closed(k)),
        KeyBound::Open(k) => Some(open(k)),
    }
}

/// A prost row set as rowkit's.
pub fn row_set_from_pb(set: &pb::RowSet) -> RowSet {
    use pb::row_range::{EndKey, StartKey};
    RowSet {
        row_keys: set.row_keys.clone(),
        row_ranges: set
            .row_ranges
            .iter()
            .map(|r| RowRange {
                start: match &r.start_key {
                    None => KeyBound::Unbounded,
                    Some(StartKey::StartKeyClosed(k)) => KeyBound::Closed(k.clone()),
                    Some(StartKey::StartKeyOpen(k)) => KeyBound::Open(k.clone()),
                },
                end: match &r.end_key {
                    None => KeyBound::Unbounded,
                    Some(EndKey::EndKeyClosed(k)) => KeyBound::Closed(k.clone()),
                    Some(EndKey::EndKeyOpen(k)) => KeyBound::Open(k.clone()),
                },
            })
            .collect(),
    }
}

// --- filters -------------------------------------------------------------------------------

/// A filter tree to prost, by value (patterns and bounds move). The boolean leaves become
/// `true`, as the proto requires.
pub fn filter_to_pb(f: RowFilter) -> pb::RowFilter {
    use pb::row_filter::{Chain, Condition, Filter, Interleave};
    let boxed = |f: Option<Box<RowFilter>>| f.map(|f| Box::new(filter_to_pb(*f)));
    let filter = match f {
        RowFilter::Chain(fs) => Filter::Chain(Chain {
            filters: fs.into_iter().map(filter_to_pb).collect(),
        }),
        RowFilter::Interleave(fs) => Filter::Interleave(Interleave {
            filters: fs.into_iter().map(filter_to_pb).collect(),
        }),
        RowFilter::Condition {
            predicate,
            true_filter,
            false_filter,
        } => Filter::Condition(Box::new(Condition {
            predicate_filter: boxed(predicate),
            true_filter: boxed(true_filter),
            false_filter: boxed(false_filter),
        })),
        RowFilter::Sink => Filter::Sink(true),
        RowFilter::PassAll => Filter::PassAllFilter(true),
        RowFilter::BlockAll => Filter::BlockAllFilter(true),
        RowFilter::RowKeyRegex(p) => Filter::RowKeyRegexFilter(p),
        RowFilter::RowSample(p) => Filter::RowSampleFilter(p),
        RowFilter::FamilyNameRegex(p) => Filter::FamilyNameRegexFilter(p),
        RowFilter::ColumnQualifierRegex(p) => Filter::ColumnQualifierRegexFilter(p),
        RowFilter::ColumnRange { family, start, end } => {
            use pb::column_range::{EndQualifier, StartQualifier};
            Filter::ColumnRangeFilter(pb::ColumnRange {
                family_name: family,
                start_qualifier: bound_to_pb(
                    start,
                    StartQualifier::StartQualifierClosed,
                    StartQualifier::StartQualifierOpen,
                ),
                end_qualifier: bound_to_pb(
                    end,
                    EndQualifier::EndQualifierClosed,
                    EndQualifier::EndQualifierOpen,
                ),
            })
        }
        RowFilter::TimestampRange(r) => Filter::TimestampRangeFilter(pb::TimestampRange {
            start_timestamp_micros: r.start,
            end_timestamp_micros: r.end,
        }),
        RowFilter::ValueRegex(p) => Filter::ValueRegexFilter(p),
        RowFilter::ValueRange { start, end } => {
            use pb::value_range::{EndValue, StartValue};
            Filter::ValueRangeFilter(pb::ValueRange {
                start_value: bound_to_pb(
                    start,
                    StartValue::StartValueClosed,
                    StartValue::StartValueOpen,
                ),
                end_value: bound_to_pb(end, EndValue::EndValueClosed, EndValue::EndValueOpen),
            })
        }
        RowFilter::CellsPerRowOffset(n) => Filter::CellsPerRowOffsetFilter(n),
        RowFilter::CellsPerRowLimit(n) => Filter::CellsPerRowLimitFilter(n),
        RowFilter::CellsPerColumnLimit(n) => Filter::CellsPerColumnLimitFilter(n),
        RowFilter::StripValue => Filter::StripValueTransformer(true),
        RowFilter::ApplyLabel(l) => Filter::ApplyLabelTransformer(l),
    };
    pb::RowFilter {
        filter: Some(filter),
    }
}

/// A prost filter tree as rowkit's. A boolean leaf set to `false` is rejected: the proto
/// calls it invalid and rowkit has no value for it.
pub fn filter_from_pb(f: &pb::RowFilter) -> Result<RowFilter, ConvertError> {
    use pb::row_filter::Filter;
    let unset = ConvertError::Unset { what: "RowFilter" };
    let boxed = |f: &Option<Box<pb::RowFilter>>| -> Result<Option<Box<RowFilter>>, ConvertError> {
        f.as_deref()
            .map(|f| filter_from_pb(f).map(Box::new))
            .transpose()
    };
    let leaf = |set: bool, what: &'static str, f: RowFilter| {
        if set {
            Ok(f)
        } else {
            Err(ConvertError::False { what })
        }
    };
    Ok(match f.filter.as_ref().ok_or(unset)? {
        Filter::Chain(c) => RowFilter::Chain(
            c.filters
                .iter()
                .map(filter_from_pb)
                .collect::<Result<_, _>>()?,
        ),
        Filter::Interleave(c) => RowFilter::Interleave(
            c.filters
                .iter()
                .map(filter_from_pb)
                .collect::<Result<_, _>>()?,
        ),
        Filter::Condition(c) => RowFilter::Condition {
            predicate: boxed(&c.predicate_filter)?,
            true_filter: boxed(&c.true_filter)?,
            false_filter: boxed(&c.false_filter)?,
        },
        Filter::Sink(b) => leaf(*b, "sink: false", RowFilter::Sink)?,
        Filter::PassAllFilter(b) => leaf(*b, "pass_all_filter: false", RowFilter::PassAll)?,
        Filter::BlockAllFilter(b) => leaf(*b, "block_all_filter: false", RowFilter::BlockAll)?,
        Filter::StripValueTransformer(b) => {
            leaf(*b, "strip_value_transformer: false", RowFilter::StripValue)?
        }
        Filter::RowKeyRegexFilter(p) => RowFilter::RowKeyRegex(p.clone()),
        Filter::RowSampleFilter(p) => RowFilter::RowSample(*p),
        Filter::FamilyNameRegexFilter(p) => RowFilter::FamilyNameRegex(p.clone()),
        Filter::ColumnQualifierRegexFilter(p) => RowFilter::ColumnQualifierRegex(p.clone()),
        Filter::ColumnRangeFilter(r) => {
            use pb::column_range::{EndQualifier, StartQualifier};
            RowFilter::ColumnRange {
                family: r.family_name.clone(),
                start: match &r.start_qualifier {
                    None => KeyBound::Unbounded,
                    Some(StartQualifier::StartQualifierClosed(k)) => KeyBound::Closed(k.clone()),
                    Some(StartQualifier::StartQualifierOpen(k)) => KeyBound::Open(k.clone()),
                },
                end: match &r.end_qualifier {
                    None => KeyBound::Unbounded,
                    Some(EndQualifier::EndQualifierClosed(k)) => KeyBound::Closed(k.clone()),
                    Some(EndQualifier::EndQualifierOpen(k)) => KeyBound::Open(k.clone()),
                },
            }
        }
        Filter::TimestampRangeFilter(r) => RowFilter::TimestampRange(TimestampRange {
            start: r.start_timestamp_micros,
            end: r.end_timestamp_micros,
        }),
        Filter::ValueRegexFilter(p) => RowFilter::ValueRegex(p.clone()),
        Filter::ValueRangeFilter(r) => {
            use pb::value_range::{EndValue, StartValue};
            RowFilter::ValueRange {
                start: match &r.start_value {
                    None => KeyBound::Unbounded,
                    Some(StartValue::StartValueClosed(k)) => KeyBound::Closed(k.clone()),
                    Some(StartValue::StartValueOpen(k)) => KeyBound::Open(k.clone()),
                },
                end: match &r.end_value {
                    None => KeyBound::Unbounded,
                    Some(EndValue::EndValueClosed(k)) => KeyBound::Closed(k.clone()),
                    Some(EndValue::EndValueOpen(k)) => KeyBound::Open(k.clone()),
                },
            }
        }
        Filter::CellsPerRowOffsetFilter(n) => RowFilter::CellsPerRowOffset(*n),
        Filter::CellsPerRowLimitFilter(n) => RowFilter::CellsPerRowLimit(*n),
        Filter::CellsPerColumnLimitFilter(n) => RowFilter::CellsPerColumnLimit(*n),
        Filter::ApplyLabelTransformer(l) => RowFilter::ApplyLabel(l.clone()),
    })
}

// --- mutations and rules -------------------------------------------------------------------

/// A mutation to prost, by value: a value (up to 100 MiB) moves into the message.
pub fn mutation_to_pb(m: Mutation) -> pb::Mutation {
    use pb::mutation as pm;
    let mutation = match m {
        Mutation::SetCell {
            family,
            qualifier,
            timestamp,
            value,
        } => pm::Mutation::SetCell(pm::SetCell {
            family_name: family,
            column_qualifier: qualifier,
            timestamp_micros: timestamp.0,
            value,
        }),
        Mutation::DeleteFromColumn {
            family,
            qualifier,
            range,
        } => pm::Mutation::DeleteFromColumn(pm::DeleteFromColumn {
            family_name: family,
            column_qualifier: qualifier,
            time_range: range.map(|r| pb::TimestampRange {
                start_timestamp_micros: r.start,
                end_timestamp_micros: r.end,
            }),
        }),
        Mutation::DeleteFromFamily { family } => {
            pm::Mutation::DeleteFromFamily(pm::DeleteFromFamily {
                family_name: family,
            })
        }
        Mutation::DeleteFromRow => pm::Mutation::DeleteFromRow(pm::DeleteFromRow {}),
    };
    pb::Mutation {
        mutation: Some(mutation),
    }
}

/// Mutations to prost, in order.
pub fn mutations_to_pb(ms: Vec<Mutation>) -> Vec<pb::Mutation> {
    ms.into_iter().map(mutation_to_pb).collect()
}

/// A prost mutation as rowkit's, by value (a value moves; aggregate mutations are
/// unsupported).
pub fn mutation_from_pb(m: pb::Mutation) -> Result<Mutation, ConvertError> {
    use pb::mutation as pm;
    Ok(
        match m.mutation.ok_or(ConvertError::Unset { what: "Mutation" })? {
            pm::Mutation::SetCell(s) => Mutation::SetCell {
                family: s.family_name,
                qualifier: s.column_qualifier,
                timestamp: Timestamp(s.timestamp_micros),
                value: s.value,
            },
            pm::Mutation::DeleteFromColumn(d) => Mutation::DeleteFromColumn {
                family: d.family_name,
                qualifier: d.column_qualifier,
                range: d.time_range.map(|r| TimestampRange {
                    start: r.start_timestamp_micros,
                    end: r.end_timestamp_micros,
                }),
            },
            pm::Mutation::DeleteFromFamily(d) => Mutation::DeleteFromFamily {
                family: d.family_name,
            },
            pm::Mutation::DeleteFromRow(_) => Mutation::DeleteFromRow,
            pm::Mutation::AddToCell(_) => {
                return Err(ConvertError::Unsupported { what: "AddToCell" });
            }
            pm::Mutation::MergeToCell(_) => {
                return Err(ConvertError::Unsupported {
                    what: "MergeToCell",
                });
            }
        },
    )
}

/// A read-modify-write rule to prost, by value.
pub fn rule_to_pb(r: ReadModifyWriteRule) -> pb::ReadModifyWriteRule {
    use pb::read_modify_write_rule::Rule;
    pb::ReadModifyWriteRule {
        family_name: r.family,
        column_qualifier: r.qualifier,
        rule: Some(match r.op {
            RuleOp::AppendValue(v) => Rule::AppendValue(v),
            RuleOp::IncrementAmount(n) => Rule::IncrementAmount(n),
        }),
    }
}

/// A prost read-modify-write rule as rowkit's.
pub fn rule_from_pb(r: pb::ReadModifyWriteRule) -> Result<ReadModifyWriteRule, ConvertError> {
    use pb::read_modify_write_rule::Rule;
    Ok(ReadModifyWriteRule {
        family: r.family_name,
        qualifier: r.column_qualifier,
        op: match r.rule.ok_or(ConvertError::Unset {
            what: "ReadModifyWriteRule",
        })? {
            Rule::AppendValue(v) => RuleOp::AppendValue(v),
            Rule::IncrementAmount(n) => RuleOp::IncrementAmount(n),
        },
    })
}

fn mutations_from_pb(ms: Vec<pb::Mutation>) -> Result<Vec<Mutation>, ConvertError> {
    ms.into_iter().map(mutation_from_pb).collect()
}

// --- requests, server side -------------------------------------------------------------------
//
// A server receives prost requests and hands rowkit requests to a store; `table` is the table id
// the server took from the request's `table_name`. Requests move (values up to 100 MiB are not
// copied).

/// A ReadRows request as rowkit's.
pub fn read_rows_request_from_pb(
    r: pb::ReadRowsRequest,
    table: String,
) -> Result<ReadRowsRequest, ConvertError> {
    Ok(ReadRowsRequest {
        table,
        app_profile_id: r.app_profile_id,
        rows: r.rows.as_ref().map(row_set_from_pb).unwrap_or_default(),
        filter: r.filter.as_ref().map(filter_from_pb).transpose()?,
        rows_limit: r.rows_limit,
        reversed: r.reversed,
    })
}

/// A MutateRow request as rowkit's.
pub fn mutate_row_request_from_pb(
    r: pb::MutateRowRequest,
    table: String,
) -> Result<MutateRowRequest, ConvertError> {
    Ok(MutateRowRequest {
        table,
        app_profile_id: r.app_profile_id,
        row_key: r.row_key,
        mutations: mutations_from_pb(r.mutations)?,
    })
}

/// A MutateRows request as rowkit's.
pub fn mutate_rows_request_from_pb(
    r: pb::MutateRowsRequest,
    table: String,
) -> Result<MutateRowsRequest, ConvertError> {
    Ok(MutateRowsRequest {
        table,
        app_profile_id: r.app_profile_id,
        entries: r
            .entries
            .into_iter()
            .map(|e| {
                Ok(MutateRowsEntry {
                    row_key: e.row_key,
                    mutations: mutations_from_pb(e.mutations)?,
                })
            })
            .collect::<Result<_, ConvertError>>()?,
    })
}

/// A CheckAndMutateRow request as rowkit's.
pub fn check_and_mutate_request_from_pb(
    r: pb::CheckAndMutateRowRequest,
    table: String,
) -> Result<CheckAndMutateRowRequest, ConvertError> {
    Ok(CheckAndMutateRowRequest {
        table,
        app_profile_id: r.app_profile_id,
        row_key: r.row_key,
        predicate: r
            .predicate_filter
            .as_ref()
            .map(filter_from_pb)
            .transpose()?,
        true_mutations: mutations_from_pb(r.true_mutations)?,
        false_mutations: mutations_from_pb(r.false_mutations)?,
    })
}

/// A ReadModifyWriteRow request as rowkit's.
pub fn read_modify_write_request_from_pb(
    r: pb::ReadModifyWriteRowRequest,
    table: String,
) -> Result<ReadModifyWriteRowRequest, ConvertError> {
    Ok(ReadModifyWriteRowRequest {
        table,
        app_profile_id: r.app_profile_id,
        row_key: r.row_key,
        rules: r
            .rules
            .into_iter()
            .map(rule_from_pb)
            .collect::<Result<_, _>>()?,
    })
}

// --- responses, server side ----------------------------------------------------------------

/// A [`StoreError`] as the gRPC status a server answers: same code, same message.
pub fn error_to_status(e: &StoreError) -> tonic::Status {
    tonic::Status::new(tonic::Code::from_i32(e.code.as_i32()), e.message.clone())
}

/// A result as the `google.rpc.Status` of a MutateRows entry (`code` 0 = OK).
pub fn result_to_rpc_status(result: &Result<(), StoreError>) -> pb_rpc::Status {
    match result {
        Ok(()) => pb_rpc::Status::default(),
        Err(e) => pb_rpc::Status {
            code: e.code.as_i32(),
            message: e.message.clone(),
            details: Vec::new(),
        },
    }
}

/// One ReadRows response to prost, by value.
pub fn read_rows_response_to_pb(r: ReadRowsResponse) -> pb::ReadRowsResponse {
    pb::ReadRowsResponse {
        chunks: r.chunks.into_iter().map(chunk_to_pb).collect(),
        last_scanned_row_key: r.last_scanned_row_key,
        ..Default::default()
    }
}

/// One chunk to prost, by value.
pub fn chunk_to_pb(c: CellChunk) -> pb::read_rows_response::CellChunk {
    use pb::read_rows_response::cell_chunk::RowStatus as PbStatus;
    pb::read_rows_response::CellChunk {
        row_key: c.row_key,
        family_name: c.family_name,
        qualifier: c.qualifier,
        timestamp_micros: c.timestamp_micros,
        labels: c.labels,
        value: c.value,
        value_size: c.value_size,
        row_status: match c.row_status {
            RowStatus::None => None,
            RowStatus::Reset => Some(PbStatus::ResetRow(true)),
            RowStatus::Commit => Some(PbStatus::CommitRow(true)),
        },
    }
}

/// One MutateRows response to prost.
pub fn mutate_rows_response_to_pb(r: &MutateRowsResponse) -> pb::MutateRowsResponse {
    pb::MutateRowsResponse {
        entries: r
            .entries
            .iter()
            .map(|e| pb::mutate_rows_response::Entry {
                index: i64::try_from(e.index).unwrap_or(i64::MAX),
                status: Some(result_to_rpc_status(&e.result)),
            })
            .collect(),
        rate_limit_info: None,
    }
}

/// One SampleRowKeys response to prost, by value.
pub fn sample_to_pb(r: SampleRowKeysResponse) -> pb::SampleRowKeysResponse {
    pb::SampleRowKeysResponse {
        row_key: r.row_key,
        offset_bytes: r.offset_bytes,
    }
}

/// A row (cells in canonical order) as prost's nested families/columns/cells: a family or
/// column starts wherever it differs from the previous cell's.
pub fn row_to_pb(row: Row) -> pb::Row {
    let mut families: Vec<pb::Family> = Vec::new();
    for cell in row.cells {
        let cell_pb = pb::Cell {
            timestamp_micros: cell.timestamp.0,
            value: cell.value,
            labels: cell.labels,
        };
        match families.last_mut() {
            Some(f) if f.name == cell.family => match f.columns.last_mut() {
                Some(c) if c.qualifier == cell.qualifier => c.cells.push(cell_pb),
                _ => f.columns.push(pb::Column {
                    qualifier: cell.qualifier,
                    cells: vec![cell_pb],
                }),
            },
            _ => families.push(pb::Family {
                name: cell.family,
                columns: vec![pb::Column {
                    qualifier: cell.qualifier,
                    cells: vec![cell_pb],
                }],
            }),
        }
    }
    pb::Row {
        key: row.key,
        families,
    }
}

// --- responses -----------------------------------------------------------------------------

/// One streamed ReadRows response as rowkit's (the merger consumes it).
pub fn read_rows_response_from_pb(r: pb::ReadRowsResponse) -> ReadRowsResponse {
    use pb::read_rows_response::cell_chunk::RowStatus as PbStatus;
    ReadRowsResponse {
        chunks: r
            .chunks
            .into_iter()
            .map(|c| CellChunk {
                row_key: c.row_key,
                family_name: c.family_name,
                qualifier: c.qualifier,
                timestamp_micros: c.timestamp_micros,
                labels: c.labels,
                value: c.value,
                value_size: c.value_size,
                row_status: match c.row_status {
                    Some(PbStatus::ResetRow(true)) => RowStatus::Reset,
                    Some(PbStatus::CommitRow(true)) => RowStatus::Commit,
                    _ => RowStatus::None,
                },
            })
            .collect(),
        last_scanned_row_key: r.last_scanned_row_key,
    }
}

/// One streamed MutateRows response as rowkit's. A negative index is a server bug, reported as
/// `INTERNAL` rather than wrapped.
pub fn mutate_rows_response_from_pb(
    r: pb::MutateRowsResponse,
) -> Result<MutateRowsResponse, StoreError> {
    let entries = r
        .entries
        .into_iter()
        .map(|e| {
            let index = usize::try_from(e.index).map_err(|_| {
                StoreError::new(
                    Code::Internal,
                    format!("MutateRows entry index {} is negative", e.index),
                )
            })?;
            Ok(MutateRowsEntryResult {
                index,
                result: rpc_status_to_result(e.status.as_ref()),
            })
        })
        .collect::<Result<_, StoreError>>()?;
    Ok(MutateRowsResponse { entries })
}

/// One SampleRowKeys response as rowkit's.
pub fn sample_from_pb(r: pb::SampleRowKeysResponse) -> SampleRowKeysResponse {
    SampleRowKeysResponse {
        row_key: r.row_key,
        offset_bytes: r.offset_bytes,
    }
}

/// The row a ReadModifyWriteRow returns, flattened to cells in the order the server sent
/// them (family, column, then cell).
pub fn row_from_pb(row: pb::Row) -> Row {
    let mut cells = Vec::new();
    for family in row.families {
        for column in family.columns {
            for cell in column.cells {
                cells.push(Cell {
                    family: family.name.clone(),
                    qualifier: column.qualifier.clone(),
                    timestamp: Timestamp(cell.timestamp_micros),
                    value: cell.value,
                    labels: cell.labels,
                });
            }
        }
    }
    Row {
        key: row.key,
        cells,
    }
}

// --- admin ---------------------------------------------------------------------------------

/// A GC rule to the admin proto (`max_age` as a `Duration`).
pub fn gc_rule_to_pb(rule: &GcRule) -> admin::GcRule {
    use admin::gc_rule::{Intersection, Rule, Union};
    let rule = match rule {
        GcRule::MaxNumVersions(n) => Rule::MaxNumVersions(i32::try_from(*n).unwrap_or(i32::MAX)),
        GcRule::MaxAge(micros) => Rule::MaxAge(prost_types::Duration {
            seconds: micros.div_euclid(1_000_000),
            // In 0..1e9 by construction, so the cast cannot truncate.
            nanos: (micros.rem_euclid(1_000_000) * 1000) as i32,
        }),
        GcRule::Intersection(rs) => Rule::Intersection(Intersection {
            rules: rs.iter().map(gc_rule_to_pb).collect(),
        }),
        GcRule::Union(rs) => Rule::Union(Union {
            rules: rs.iter().map(gc_rule_to_pb).collect(),
        }),
    };
    admin::GcRule { rule: Some(rule) }
}

/// An admin GC rule as rowkit's; `None` for an empty rule (keep everything).
pub fn gc_rule_from_pb(rule: &admin::GcRule) -> Result<Option<GcRule>, ConvertError> {
    use admin::gc_rule::Rule;
    let Some(r) = rule.rule.as_ref() else {
        return Ok(None);
    };
    let nested = |rs: &[admin::GcRule]| -> Result<Vec<GcRule>, ConvertError> {
        Ok(rs
            .iter()
            .map(gc_rule_from_pb)
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect())
    };
    Ok(Some(match r {
        Rule::MaxNumVersions(n) => {
            GcRule::MaxNumVersions(u32::try_from(*n).map_err(|_| ConvertError::OutOfRange {
                what: "max_num_versions",
                value: i64::from(*n),
            })?)
        }
        Rule::MaxAge(d) => GcRule::MaxAge(
            d.seconds
                .saturating_mul(1_000_000)
                .saturating_add(i64::from(d.nanos) / 1000),
        ),
        Rule::Intersection(i) => GcRule::Intersection(nested(&i.rules)?),
        Rule::Union(u) => GcRule::Union(nested(&u.rules)?),
    }))
}

/// A column family as the admin proto's.
pub fn family_to_pb(f: &ColumnFamily) -> admin::ColumnFamily {
    admin::ColumnFamily {
        gc_rule: f.gc_rule.as_ref().map(gc_rule_to_pb),
        value_type: None,
    }
}

/// A table's schema as the admin proto's `Table` named `name` (the full resource name), with
/// millisecond granularity (the only one rowkit tables have, `spec/bigtable.md` 3).
pub fn table_to_pb(name: String, families: &[ColumnFamily]) -> admin::Table {
    admin::Table {
        name,
        column_families: families
            .iter()
            .map(|f| (f.name.clone(), family_to_pb(f)))
            .collect(),
        granularity: admin::table::TimestampGranularity::Millis as i32,
        ..Default::default()
    }
}

/// The families of an admin `Table`, ascending by name.
pub fn families_from_pb(table: &admin::Table) -> Result<Vec<ColumnFamily>, ConvertError> {
    let mut out = table
        .column_families
        .iter()
        .map(|(name, f)| {
            Ok(ColumnFamily {
                name: name.clone(),
                gc_rule: match &f.gc_rule {
                    Some(r) => gc_rule_from_pb(r)?,
                    None => None,
                },
            })
        })
        .collect::<Result<Vec<_>, ConvertError>>()?;
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn gc_rules_round_trip() {
        let rule = GcRule::Union(vec![
            GcRule::MaxNumVersions(3),
            GcRule::Intersection(vec![GcRule::MaxAge(86_400_000_000), GcRule::MaxAge(1_500)]),
        ]);
        assert_eq!(gc_rule_from_pb(&gc_rule_to_pb(&rule)).unwrap(), Some(rule));
    }

    #[test]
    fn mutations_round_trip() {
        let ms = vec![
            Mutation::SetCell {
                family: "f".into(),
                qualifier: b"q".to_vec(),
                timestamp: Timestamp::SERVER_TIME,
                value: b"v".to_vec(),
            },
            Mutation::DeleteFromColumn {
                family: "f".into(),
                qualifier: vec![],
                range: Some(TimestampRange { start: 0, end: 5 }),
            },
            Mutation::DeleteFromColumn {
                family: "f".into(),
                qualifier: b"x".to_vec(),
                range: None,
            },
            Mutation::DeleteFromFamily { family: "g".into() },
            Mutation::DeleteFromRow,
        ];
        for m in ms {
            assert_eq!(mutation_from_pb(mutation_to_pb(m.clone())).unwrap(), m);
        }
    }
}
