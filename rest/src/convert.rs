//! Conversions between the proto3 JSON shapes ([`crate::wire`]) and rowkit's request vocabulary
//! (`rowkit_statemachines::{Request, Response}`), both directions.
//!
//! rowkit -> JSON -> rowkit is the identity for every value rowkit can hold. JSON -> rowkit
//! rejects what rowkit does not model, with a [`RestError`] naming the field: a oneof with two
//! members set, a mutation or rule with none, a boolean filter leaf set to `false`, aggregates
//! and views. An empty filter object `{}` means "pass all": [`RowFilter::PassAll`] where a filter
//! is required, and no filter at the top of a read or a check-and-mutate (same result).

use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use rowkit_codec::model::{
    Cell, Code, KeyBound, Mutation, ReadModifyWriteRule, Row, RowFilter, RowRange, RowSet, RuleOp,
    Timestamp, TimestampRange,
};
use rowkit_statemachines::{
    CellChunk, MutateRowsEntryResult, MutateRowsResponse, ReadRowsResponse, RowStatus,
    SampleRowKeysResponse, StoreError,
};

use crate::proto3::{B64, Double, Int32, Int64};
use crate::wire::*;

/// A JSON message that is well-formed proto3 JSON of the wrong kind, or that rowkit cannot
/// represent. [`RestError::code`] is the status a server answers with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestError {
    /// Not valid JSON for the message: syntax, unknown or duplicate field, invalid base64,
    /// non-integer int, wrong type. `message` is serde_json's, with line and column.
    #[error("Invalid JSON payload received. {what}: {message}")]
    Json {
        /// The message type being decoded, e.g. `ReadRowsRequest`.
        what: &'static str,
        /// What is wrong, and where.
        message: String,
    },
    /// More than one member of a oneof is set.
    #[error("{field}: more than one member of the oneof is set ({members})")]
    OneofConflict {
        /// The message holding the oneof, e.g. `RowFilter`.
        field: &'static str,
        /// The members that are set, comma-separated.
        members: String,
    },
    /// No member of a required oneof is set (e.g. a mutation `{}`).
    #[error("{field}: no member of the oneof is set")]
    OneofUnset {
        /// The message, e.g. `Mutation`.
        field: &'static str,
    },
    /// A boolean filter leaf set to `false` (only `true` is meaningful).
    #[error("{field}: must be true when set")]
    FalseLeaf {
        /// The member, e.g. `RowFilter.sink`.
        field: &'static str,
    },
    /// A number outside what the field accepts.
    #[error("{field}: value {value} out of range")]
    OutOfRange {
        /// The field.
        field: &'static str,
        /// The value received.
        value: i64,
    },
    /// A proto feature rowkit does not serve (aggregates, authorized or materialized views).
    #[error("{field} is not supported by rowkit")]
    Unimplemented {
        /// The field.
        field: &'static str,
    },
    /// The body's `tableName` names another table than the URL.
    #[error("tableName {found:?} does not match the table of the URL {expected:?}")]
    TableMismatch {
        /// `projects/{p}/instances/{i}/tables/{t}` from the path.
        expected: String,
        /// The body's value.
        found: String,
    },
    /// A response that has no JSON message of its own (`StreamEnd` is the array's `]`).
    #[error("{what} is not a JSON message")]
    NotAMessage {
        /// The response kind.
        what: &'static str,
    },
}

impl RestError {
    /// The status a server answers a request with this error with: `UNIMPLEMENTED` for
    /// unsupported features, `INVALID_ARGUMENT` otherwise (`rest-json.md` 3, 6.2).
    pub fn code(&self) -> Code {
        match self {
            RestError::Unimplemented { .. } => Code::Unimplemented,
            RestError::NotAMessage { .. } => Code::Internal,
            _ => Code::InvalidArgument,
        }
    }

    /// The error as a client sees it when a **response** fails to decode: the server broke the
    /// protocol, so `INTERNAL` (like a merger protocol error), whatever [`RestError::code`] says.
    pub fn into_protocol_error(self) -> StoreError {
        StoreError::new(Code::Internal, self.to_string())
    }
}

impl From<RestError> for StoreError {
    fn from(e: RestError) -> StoreError {
        StoreError::new(e.code(), e.to_string())
    }
}

/// Parses `bytes` as the JSON of `T`, naming the message type on failure.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T, RestError> {
    // serde's derived structs also accept a JSON array of field values; proto3 JSON does not.
    if let Some(&b) = bytes.iter().find(|b| !b.is_ascii_whitespace())
        && b != b'{'
    {
        return Err(RestError::Json {
            what,
            message: alloc::format!("expected a JSON object, found {:?}", char::from(b)),
        });
    }
    serde_json::from_slice(bytes).map_err(|e| RestError::Json {
        what,
        message: e.to_string(),
    })
}

/// Serialises a message; the wire types hold only strings, numbers, lists and structs, so this
/// cannot fail in practice, but the error is still reported rather than hidden.
pub(crate) fn to_json<T: serde::Serialize>(
    what: &'static str,
    v: &T,
) -> Result<Vec<u8>, RestError> {
    serde_json::to_vec(v).map_err(|e| RestError::Json {
        what,
        message: e.to_string(),
    })
}

/// Exactly one of `members` (name, is-set) must be set; returns its index.
fn one_of(field: &'static str, members: &[(&'static str, bool)]) -> Result<usize, RestError> {
    let set: Vec<usize> = (0..members.len()).filter(|&i| members[i].1).collect();
    match set.as_slice() {
        [one] => Ok(*one),
        [] => Err(RestError::OneofUnset { field }),
        many => Err(RestError::OneofConflict {
            field,
            members: many
                .iter()
                .map(|&i| members[i].0)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// At most one of `members` may be set; returns its index.
fn at_most_one(
    field: &'static str,
    members: &[(&'static str, bool)],
) -> Result<Option<usize>, RestError> {
    match one_of(field, members) {
        Ok(i) => Ok(Some(i)),
        Err(RestError::OneofUnset { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn b64(v: &[u8]) -> B64 {
    B64(v.to_vec())
}

fn vec_or_none<T>(v: Vec<T>) -> Option<Vec<T>> {
    if v.is_empty() { None } else { Some(v) }
}

// --- bounds and row sets -------------------------------------------------------------------

/// Splits a bound into its (closed, open) JSON members.
fn bound_to_json(b: &KeyBound) -> (Option<B64>, Option<B64>) {
    match b {
        KeyBound::Unbounded => (None, None),
        KeyBound::Closed(k) => (Some(b64(k)), None),
        KeyBound::Open(k) => (None, Some(b64(k))),
    }
}

fn bound_from_json(
    field: &'static str,
    closed: Option<B64>,
    open: Option<B64>,
) -> Result<KeyBound, RestError> {
    match (closed, open) {
        (None, None) => Ok(KeyBound::Unbounded),
        (Some(k), None) => Ok(KeyBound::Closed(k.0)),
        (None, Some(k)) => Ok(KeyBound::Open(k.0)),
        (Some(_), Some(_)) => Err(RestError::OneofConflict {
            field,
            members: "closed, open".to_owned(),
        }),
    }
}

/// A row set as JSON; the whole table is `None` (field omitted).
pub fn row_set_to_json(set: &RowSet) -> Option<RowSetJson> {
    if set.is_whole_table() {
        return None;
    }
    Some(RowSetJson {
        row_keys: vec_or_none(set.row_keys.iter().map(|k| b64(k)).collect()),
        row_ranges: vec_or_none(
            set.row_ranges
                .iter()
                .map(|r| {
                    let (start_key_closed, start_key_open) = bound_to_json(&r.start);
                    let (end_key_closed, end_key_open) = bound_to_json(&r.end);
                    RowRangeJson {
                        start_key_closed,
                        start_key_open,
                        end_key_open,
                        end_key_closed,
                    }
                })
                .collect(),
        ),
    })
}

/// A JSON row set as rowkit's.
pub fn row_set_from_json(set: Option<RowSetJson>) -> Result<RowSet, RestError> {
    let Some(set) = set else {
        return Ok(RowSet::all());
    };
    Ok(RowSet {
        row_keys: set
            .row_keys
            .unwrap_or_default()
            .into_iter()
            .map(|k| k.0)
            .collect(),
        row_ranges: set
            .row_ranges
            .unwrap_or_default()
            .into_iter()
            .map(|r| {
                Ok(RowRange {
                    start: bound_from_json(
                        "RowRange.start_key",
                        r.start_key_closed,
                        r.start_key_open,
                    )?,
                    end: bound_from_json("RowRange.end_key", r.end_key_closed, r.end_key_open)?,
                })
            })
            .collect::<Result<_, RestError>>()?,
    })
}

fn timestamp_range_to_json(r: &TimestampRange) -> TimestampRangeJson {
    TimestampRangeJson {
        start_timestamp_micros: Int64(r.start),
        end_timestamp_micros: Int64(r.end),
    }
}

fn timestamp_range_from_json(r: TimestampRangeJson) -> TimestampRange {
    TimestampRange {
        start: r.start_timestamp_micros.0,
        end: r.end_timestamp_micros.0,
    }
}

// --- filters -------------------------------------------------------------------------------

/// A filter tree as JSON (`rest-json.md` 4.2). Boolean leaves are `true`.
pub fn filter_to_json(f: &RowFilter) -> RowFilterJson {
    let boxed = |f: &Option<Box<RowFilter>>| f.as_deref().map(|f| Box::new(filter_to_json(f)));
    let list = |fs: &[RowFilter]| FiltersJson {
        filters: vec_or_none(fs.iter().map(filter_to_json).collect()),
    };
    let mut out = RowFilterJson::default();
    match f {
        RowFilter::Chain(fs) => out.chain = Some(list(fs)),
        RowFilter::Interleave(fs) => out.interleave = Some(list(fs)),
        RowFilter::Condition {
            predicate,
            true_filter,
            false_filter,
        } => {
            out.condition = Some(Box::new(ConditionJson {
                predicate_filter: boxed(predicate),
                true_filter: boxed(true_filter),
                false_filter: boxed(false_filter),
            }))
        }
        RowFilter::Sink => out.sink = Some(true),
        RowFilter::PassAll => out.pass_all_filter = Some(true),
        RowFilter::BlockAll => out.block_all_filter = Some(true),
        RowFilter::RowKeyRegex(p) => out.row_key_regex_filter = Some(b64(p)),
        RowFilter::RowSample(p) => out.row_sample_filter = Some(Double(*p)),
        RowFilter::FamilyNameRegex(p) => out.family_name_regex_filter = Some(p.clone()),
        RowFilter::ColumnQualifierRegex(p) => out.column_qualifier_regex_filter = Some(b64(p)),
        RowFilter::ColumnRange { family, start, end } => {
            let (start_qualifier_closed, start_qualifier_open) = bound_to_json(start);
            let (end_qualifier_closed, end_qualifier_open) = bound_to_json(end);
            out.column_range_filter = Some(ColumnRangeJson {
                family_name: family.clone(),
                start_qualifier_closed,
                start_qualifier_open,
                end_qualifier_closed,
                end_qualifier_open,
            })
        }
        RowFilter::TimestampRange(r) => {
            out.timestamp_range_filter = Some(timestamp_range_to_json(r))
        }
        RowFilter::ValueRegex(p) => out.value_regex_filter = Some(b64(p)),
        RowFilter::ValueRange { start, end } => {
            let (start_value_closed, start_value_open) = bound_to_json(start);
            let (end_value_closed, end_value_open) = bound_to_json(end);
            out.value_range_filter = Some(ValueRangeJson {
                start_value_closed,
                start_value_open,
                end_value_closed,
                end_value_open,
            })
        }
        RowFilter::CellsPerRowOffset(n) => out.cells_per_row_offset_filter = Some(Int32(*n)),
        RowFilter::CellsPerRowLimit(n) => out.cells_per_row_limit_filter = Some(Int32(*n)),
        RowFilter::CellsPerColumnLimit(n) => out.cells_per_column_limit_filter = Some(Int32(*n)),
        RowFilter::StripValue => out.strip_value_transformer = Some(true),
        RowFilter::ApplyLabel(l) => out.apply_label_transformer = Some(l.clone()),
    }
    out
}

/// A JSON filter as rowkit's; `{}` is [`RowFilter::PassAll`].
pub fn filter_from_json(f: RowFilterJson) -> Result<RowFilter, RestError> {
    let members = [
        ("chain", f.chain.is_some()),
        ("interleave", f.interleave.is_some()),
        ("condition", f.condition.is_some()),
        ("sink", f.sink.is_some()),
        ("passAllFilter", f.pass_all_filter.is_some()),
        ("blockAllFilter", f.block_all_filter.is_some()),
        ("rowKeyRegexFilter", f.row_key_regex_filter.is_some()),
        ("rowSampleFilter", f.row_sample_filter.is_some()),
        (
            "familyNameRegexFilter",
            f.family_name_regex_filter.is_some(),
        ),
        (
            "columnQualifierRegexFilter",
            f.column_qualifier_regex_filter.is_some(),
        ),
        ("columnRangeFilter", f.column_range_filter.is_some()),
        ("timestampRangeFilter", f.timestamp_range_filter.is_some()),
        ("valueRegexFilter", f.value_regex_filter.is_some()),
        ("valueRangeFilter", f.value_range_filter.is_some()),
        (
            "cellsPerRowOffsetFilter",
            f.cells_per_row_offset_filter.is_some(),
        ),
        (
            "cellsPerRowLimitFilter",
            f.cells_per_row_limit_filter.is_some(),
        ),
        (
            "cellsPerColumnLimitFilter",
            f.cells_per_column_limit_filter.is_some(),
        ),
        ("stripValueTransformer", f.strip_value_transformer.is_some()),
        ("applyLabelTransformer", f.apply_label_transformer.is_some()),
    ];
    if at_most_one("RowFilter", &members)?.is_none() {
        return Ok(RowFilter::PassAll);
    }
    let leaf = |set: Option<bool>, field: &'static str, f: RowFilter| {
        if set == Some(true) {
            Ok(f)
        } else {
            Err(RestError::FalseLeaf { field })
        }
    };
    let list = |fs: FiltersJson| -> Result<Vec<RowFilter>, RestError> {
        fs.filters
            .unwrap_or_default()
            .into_iter()
            .map(filter_from_json)
            .collect()
    };
    let boxed = |f: Option<Box<RowFilterJson>>| -> Result<Option<Box<RowFilter>>, RestError> {
        f.map(|f| filter_from_json(*f).map(Box::new)).transpose()
    };
    // Exactly one member is set (checked above); take it.
    if let Some(c) = f.chain {
        return Ok(RowFilter::Chain(list(c)?));
    }
    if let Some(c) = f.interleave {
        return Ok(RowFilter::Interleave(list(c)?));
    }
    if let Some(c) = f.condition {
        let c = *c;
        return Ok(RowFilter::Condition {
            predicate: boxed(c.predicate_filter)?,
            true_filter: boxed(c.true_filter)?,
            false_filter: boxed(c.false_filter)?,
        });
    }
    if f.sink.is_some() {
        return leaf(f.sink, "RowFilter.sink", RowFilter::Sink);
    }
    if f.pass_all_filter.is_some() {
        return leaf(
            f.pass_all_filter,
            "RowFilter.passAllFilter",
            RowFilter::PassAll,
        );
    }
    if f.block_all_filter.is_some() {
        return leaf(
            f.block_all_filter,
            "RowFilter.blockAllFilter",
            RowFilter::BlockAll,
        );
    }
    if f.strip_value_transformer.is_some() {
        return leaf(
            f.strip_value_transformer,
            "RowFilter.stripValueTransformer",
            RowFilter::StripValue,
        );
    }
    if let Some(p) = f.row_key_regex_filter {
        return Ok(RowFilter::RowKeyRegex(p.0));
    }
    if let Some(p) = f.row_sample_filter {
        return Ok(RowFilter::RowSample(p.0));
    }
    if let Some(p) = f.family_name_regex_filter {
        return Ok(RowFilter::FamilyNameRegex(p));
    }
    if let Some(p) = f.column_qualifier_regex_filter {
        return Ok(RowFilter::ColumnQualifierRegex(p.0));
    }
    if let Some(r) = f.column_range_filter {
        return Ok(RowFilter::ColumnRange {
            family: r.family_name,
            start: bound_from_json(
                "ColumnRange.start_qualifier",
                r.start_qualifier_closed,
                r.start_qualifier_open,
            )?,
            end: bound_from_json(
                "ColumnRange.end_qualifier",
                r.end_qualifier_closed,
                r.end_qualifier_open,
            )?,
        });
    }
    if let Some(r) = f.timestamp_range_filter {
        return Ok(RowFilter::TimestampRange(timestamp_range_from_json(r)));
    }
    if let Some(p) = f.value_regex_filter {
        return Ok(RowFilter::ValueRegex(p.0));
    }
    if let Some(r) = f.value_range_filter {
        return Ok(RowFilter::ValueRange {
            start: bound_from_json(
                "ValueRange.start_value",
                r.start_value_closed,
                r.start_value_open,
            )?,
            end: bound_from_json("ValueRange.end_value", r.end_value_closed, r.end_value_open)?,
        });
    }
    if let Some(n) = f.cells_per_row_offset_filter {
        return Ok(RowFilter::CellsPerRowOffset(n.0));
    }
    if let Some(n) = f.cells_per_row_limit_filter {
        return Ok(RowFilter::CellsPerRowLimit(n.0));
    }
    if let Some(n) = f.cells_per_column_limit_filter {
        return Ok(RowFilter::CellsPerColumnLimit(n.0));
    }
    match f.apply_label_transformer {
        Some(l) => Ok(RowFilter::ApplyLabel(l)),
        None => Err(RestError::OneofUnset { field: "RowFilter" }),
    }
}

/// A top-level optional filter: `{}` means "no filter" (pass all).
fn optional_filter_from_json(f: Option<RowFilterJson>) -> Result<Option<RowFilter>, RestError> {
    match f {
        None => Ok(None),
        Some(f) if f == RowFilterJson::default() => Ok(None),
        Some(f) => filter_from_json(f).map(Some),
    }
}

// --- mutations and rules -------------------------------------------------------------------

/// A mutation as JSON (`rest-json.md` 4.3).
pub fn mutation_to_json(m: &Mutation) -> MutationJson {
    let mut out = MutationJson::default();
    match m {
        Mutation::SetCell {
            family,
            qualifier,
            timestamp,
            value,
        } => {
            out.set_cell = Some(SetCellJson {
                family_name: family.clone(),
                column_qualifier: b64(qualifier),
                timestamp_micros: Int64(timestamp.0),
                value: b64(value),
            })
        }
        Mutation::DeleteFromColumn {
            family,
            qualifier,
            range,
        } => {
            out.delete_from_column = Some(DeleteFromColumnJson {
                family_name: family.clone(),
                column_qualifier: b64(qualifier),
                time_range: range.as_ref().map(timestamp_range_to_json),
            })
        }
        Mutation::DeleteFromFamily { family } => {
            out.delete_from_family = Some(DeleteFromFamilyJson {
                family_name: family.clone(),
            })
        }
        Mutation::DeleteFromRow => out.delete_from_row = Some(DeleteFromRowJson {}),
    }
    out
}

/// A JSON mutation as rowkit's; `addToCell` / `mergeToCell` are unimplemented, `{}` invalid.
pub fn mutation_from_json(m: MutationJson) -> Result<Mutation, RestError> {
    one_of(
        "Mutation",
        &[
            ("setCell", m.set_cell.is_some()),
            ("deleteFromColumn", m.delete_from_column.is_some()),
            ("deleteFromFamily", m.delete_from_family.is_some()),
            ("deleteFromRow", m.delete_from_row.is_some()),
            ("addToCell", m.add_to_cell.is_some()),
            ("mergeToCell", m.merge_to_cell.is_some()),
        ],
    )?;
    if let Some(s) = m.set_cell {
        return Ok(Mutation::SetCell {
            family: s.family_name,
            qualifier: s.column_qualifier.0,
            timestamp: Timestamp(s.timestamp_micros.0),
            value: s.value.0,
        });
    }
    if let Some(d) = m.delete_from_column {
        return Ok(Mutation::DeleteFromColumn {
            family: d.family_name,
            qualifier: d.column_qualifier.0,
            range: d.time_range.map(timestamp_range_from_json),
        });
    }
    if let Some(d) = m.delete_from_family {
        return Ok(Mutation::DeleteFromFamily {
            family: d.family_name,
        });
    }
    if m.delete_from_row.is_some() {
        return Ok(Mutation::DeleteFromRow);
    }
    if m.add_to_cell.is_some() {
        return Err(RestError::Unimplemented {
            field: "Mutation.addToCell",
        });
    }
    Err(RestError::Unimplemented {
        field: "Mutation.mergeToCell",
    })
}

fn mutations_to_json(ms: &[Mutation]) -> Option<Vec<MutationJson>> {
    vec_or_none(ms.iter().map(mutation_to_json).collect())
}

fn mutations_from_json(ms: Option<Vec<MutationJson>>) -> Result<Vec<Mutation>, RestError> {
    ms.unwrap_or_default()
        .into_iter()
        .map(mutation_from_json)
        .collect()
}

/// A read-modify-write rule as JSON (`rest-json.md` 4.8).
pub fn rule_to_json(r: &ReadModifyWriteRule) -> RuleJson {
    let (append_value, increment_amount) = match &r.op {
        RuleOp::AppendValue(v) => (Some(b64(v)), None),
        RuleOp::IncrementAmount(n) => (None, Some(Int64(*n))),
    };
    RuleJson {
        family_name: r.family.clone(),
        column_qualifier: b64(&r.qualifier),
        append_value,
        increment_amount,
    }
}

/// A JSON rule as rowkit's; exactly one of `appendValue` / `incrementAmount` must be set.
pub fn rule_from_json(r: RuleJson) -> Result<ReadModifyWriteRule, RestError> {
    one_of(
        "ReadModifyWriteRule",
        &[
            ("appendValue", r.append_value.is_some()),
            ("incrementAmount", r.increment_amount.is_some()),
        ],
    )?;
    let op = match (r.append_value, r.increment_amount) {
        (Some(v), _) => RuleOp::AppendValue(v.0),
        (None, Some(n)) => RuleOp::IncrementAmount(n.0),
        (None, None) => {
            return Err(RestError::OneofUnset {
                field: "ReadModifyWriteRule",
            });
        }
    };
    Ok(ReadModifyWriteRule {
        family: r.family_name,
        qualifier: r.column_qualifier.0,
        op,
    })
}

// --- requests ------------------------------------------------------------------------------

/// Checks the fields every request shares against the URL's table (`rest-json.md` 1).
pub(crate) fn check_target(expected: &str, target: Target<'_>) -> Result<(), RestError> {
    if !target.authorized_view_name.is_empty() {
        return Err(RestError::Unimplemented {
            field: "authorizedViewName",
        });
    }
    if !target.materialized_view_name.is_empty() {
        return Err(RestError::Unimplemented {
            field: "materializedViewName",
        });
    }
    if !target.table_name.is_empty() && target.table_name != expected {
        return Err(RestError::TableMismatch {
            expected: expected.to_owned(),
            found: target.table_name.to_owned(),
        });
    }
    Ok(())
}

/// A ReadRows request as JSON (without `tableName`: the URL carries the table).
pub fn read_rows_to_json(r: &rowkit_statemachines::ReadRowsRequest) -> ReadRowsRequestJson {
    ReadRowsRequestJson {
        app_profile_id: r.app_profile_id.clone(),
        rows: row_set_to_json(&r.rows),
        filter: r.filter.as_ref().map(filter_to_json),
        rows_limit: Int64(r.rows_limit),
        reversed: r.reversed,
        ..Default::default()
    }
}

/// A JSON ReadRows request as rowkit's, for `table`.
pub fn read_rows_from_json(
    r: ReadRowsRequestJson,
    table: String,
) -> Result<rowkit_statemachines::ReadRowsRequest, RestError> {
    Ok(rowkit_statemachines::ReadRowsRequest {
        table,
        app_profile_id: r.app_profile_id,
        rows: row_set_from_json(r.rows)?,
        filter: optional_filter_from_json(r.filter)?,
        rows_limit: r.rows_limit.0,
        reversed: r.reversed,
    })
}

/// A MutateRow request as JSON.
pub fn mutate_row_to_json(r: &rowkit_statemachines::MutateRowRequest) -> MutateRowRequestJson {
    MutateRowRequestJson {
        app_profile_id: r.app_profile_id.clone(),
        row_key: b64(&r.row_key),
        mutations: mutations_to_json(&r.mutations),
        ..Default::default()
    }
}

/// A JSON MutateRow request as rowkit's, for `table`.
pub fn mutate_row_from_json(
    r: MutateRowRequestJson,
    table: String,
) -> Result<rowkit_statemachines::MutateRowRequest, RestError> {
    Ok(rowkit_statemachines::MutateRowRequest {
        table,
        app_profile_id: r.app_profile_id,
        row_key: r.row_key.0,
        mutations: mutations_from_json(r.mutations)?,
    })
}

/// A MutateRows request as JSON.
pub fn mutate_rows_to_json(r: &rowkit_statemachines::MutateRowsRequest) -> MutateRowsRequestJson {
    MutateRowsRequestJson {
        app_profile_id: r.app_profile_id.clone(),
        entries: vec_or_none(
            r.entries
                .iter()
                .map(|e| MutateRowsEntryJson {
                    row_key: b64(&e.row_key),
                    mutations: mutations_to_json(&e.mutations),
                    idempotency: None,
                })
                .collect(),
        ),
        ..Default::default()
    }
}

/// A JSON MutateRows request as rowkit's, for `table`.
pub fn mutate_rows_from_json(
    r: MutateRowsRequestJson,
    table: String,
) -> Result<rowkit_statemachines::MutateRowsRequest, RestError> {
    Ok(rowkit_statemachines::MutateRowsRequest {
        table,
        app_profile_id: r.app_profile_id,
        entries: r
            .entries
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                Ok(rowkit_statemachines::MutateRowsEntry {
                    row_key: e.row_key.0,
                    mutations: mutations_from_json(e.mutations)?,
                })
            })
            .collect::<Result<_, RestError>>()?,
    })
}

/// A CheckAndMutateRow request as JSON.
pub fn check_and_mutate_to_json(
    r: &rowkit_statemachines::CheckAndMutateRowRequest,
) -> CheckAndMutateRowRequestJson {
    CheckAndMutateRowRequestJson {
        app_profile_id: r.app_profile_id.clone(),
        row_key: b64(&r.row_key),
        predicate_filter: r.predicate.as_ref().map(filter_to_json),
        true_mutations: mutations_to_json(&r.true_mutations),
        false_mutations: mutations_to_json(&r.false_mutations),
        ..Default::default()
    }
}

/// A JSON CheckAndMutateRow request as rowkit's, for `table`.
pub fn check_and_mutate_from_json(
    r: CheckAndMutateRowRequestJson,
    table: String,
) -> Result<rowkit_statemachines::CheckAndMutateRowRequest, RestError> {
    Ok(rowkit_statemachines::CheckAndMutateRowRequest {
        table,
        app_profile_id: r.app_profile_id,
        row_key: r.row_key.0,
        predicate: optional_filter_from_json(r.predicate_filter)?,
        true_mutations: mutations_from_json(r.true_mutations)?,
        false_mutations: mutations_from_json(r.false_mutations)?,
    })
}

/// A ReadModifyWriteRow request as JSON.
pub fn read_modify_write_to_json(
    r: &rowkit_statemachines::ReadModifyWriteRowRequest,
) -> ReadModifyWriteRowRequestJson {
    ReadModifyWriteRowRequestJson {
        app_profile_id: r.app_profile_id.clone(),
        row_key: b64(&r.row_key),
        rules: vec_or_none(r.rules.iter().map(rule_to_json).collect()),
        ..Default::default()
    }
}

/// A JSON ReadModifyWriteRow request as rowkit's, for `table`.
pub fn read_modify_write_from_json(
    r: ReadModifyWriteRowRequestJson,
    table: String,
) -> Result<rowkit_statemachines::ReadModifyWriteRowRequest, RestError> {
    Ok(rowkit_statemachines::ReadModifyWriteRowRequest {
        table,
        app_profile_id: r.app_profile_id,
        row_key: r.row_key.0,
        rules: r
            .rules
            .unwrap_or_default()
            .into_iter()
            .map(rule_from_json)
            .collect::<Result<_, _>>()?,
    })
}

// --- responses -----------------------------------------------------------------------------

/// A ReadRows response as JSON (`rest-json.md` 4.4).
pub fn read_rows_response_to_json(r: &ReadRowsResponse) -> ReadRowsResponseJson {
    ReadRowsResponseJson {
        chunks: vec_or_none(
            r.chunks
                .iter()
                .map(|c| CellChunkJson {
                    row_key: b64(&c.row_key),
                    family_name: c.family_name.clone(),
                    qualifier: c.qualifier.as_deref().map(b64),
                    timestamp_micros: Int64(c.timestamp_micros),
                    labels: vec_or_none(c.labels.clone()),
                    value: b64(&c.value),
                    value_size: Int32(c.value_size),
                    reset_row: (c.row_status == RowStatus::Reset).then_some(true),
                    commit_row: (c.row_status == RowStatus::Commit).then_some(true),
                })
                .collect(),
        ),
        last_scanned_row_key: b64(&r.last_scanned_row_key),
        request_stats: None,
    }
}

/// A JSON ReadRows response as rowkit's. `resetRow: false` / `commitRow: false` mean no row
/// status; both members present is a oneof conflict.
pub fn read_rows_response_from_json(
    r: ReadRowsResponseJson,
) -> Result<ReadRowsResponse, RestError> {
    Ok(ReadRowsResponse {
        chunks: r
            .chunks
            .unwrap_or_default()
            .into_iter()
            .map(|c| {
                let row_status = match (c.reset_row, c.commit_row) {
                    (Some(_), Some(_)) => {
                        return Err(RestError::OneofConflict {
                            field: "CellChunk.row_status",
                            members: "resetRow, commitRow".to_owned(),
                        });
                    }
                    (Some(true), None) => RowStatus::Reset,
                    (None, Some(true)) => RowStatus::Commit,
                    _ => RowStatus::None,
                };
                Ok(CellChunk {
                    row_key: c.row_key.0,
                    family_name: c.family_name,
                    qualifier: c.qualifier.map(|q| q.0),
                    timestamp_micros: c.timestamp_micros.0,
                    labels: c.labels.unwrap_or_default(),
                    value: c.value.0,
                    value_size: c.value_size.0,
                    row_status,
                })
            })
            .collect::<Result<_, RestError>>()?,
        last_scanned_row_key: r.last_scanned_row_key.0,
    })
}

/// A `google.rpc.Status` inside a message (gRPC code number) for a result.
pub fn rpc_status_to_json(result: &Result<(), StoreError>) -> RpcStatusJson {
    match result {
        Ok(()) => RpcStatusJson::default(),
        Err(e) => RpcStatusJson {
            code: Int32(e.code.as_i32()),
            message: e.message.clone(),
            details: None,
        },
    }
}

/// A `google.rpc.Status` inside a message as a result (absent or code 0 = OK).
pub fn rpc_status_from_json(status: Option<RpcStatusJson>) -> Result<(), StoreError> {
    match status {
        Some(s) if s.code.0 != 0 => Err(StoreError::new(Code::from_i32(s.code.0), s.message)),
        _ => Ok(()),
    }
}

/// A MutateRows response as JSON (`rest-json.md` 4.6).
pub fn mutate_rows_response_to_json(
    r: &MutateRowsResponse,
) -> Result<MutateRowsResponseJson, RestError> {
    Ok(MutateRowsResponseJson {
        entries: vec_or_none(
            r.entries
                .iter()
                .map(|e| {
                    Ok(MutateRowsEntryResultJson {
                        index: Int64(i64::try_from(e.index).map_err(|_| {
                            RestError::OutOfRange {
                                field: "MutateRowsResponse.Entry.index",
                                value: i64::MAX,
                            }
                        })?),
                        status: Some(rpc_status_to_json(&e.result)),
                    })
                })
                .collect::<Result<_, RestError>>()?,
        ),
        rate_limit_info: None,
    })
}

/// A JSON MutateRows response as rowkit's; a negative index is out of range.
pub fn mutate_rows_response_from_json(
    r: MutateRowsResponseJson,
) -> Result<MutateRowsResponse, RestError> {
    Ok(MutateRowsResponse {
        entries: r
            .entries
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                Ok(MutateRowsEntryResult {
                    index: usize::try_from(e.index.0).map_err(|_| RestError::OutOfRange {
                        field: "MutateRowsResponse.Entry.index",
                        value: e.index.0,
                    })?,
                    result: rpc_status_from_json(e.status),
                })
            })
            .collect::<Result<_, RestError>>()?,
    })
}

/// A SampleRowKeys response as JSON (`rest-json.md` 4.9).
pub fn sample_to_json(r: &SampleRowKeysResponse) -> SampleRowKeysResponseJson {
    SampleRowKeysResponseJson {
        row_key: b64(&r.row_key),
        offset_bytes: Int64(r.offset_bytes),
    }
}

/// A JSON SampleRowKeys response as rowkit's.
pub fn sample_from_json(r: SampleRowKeysResponseJson) -> SampleRowKeysResponse {
    SampleRowKeysResponse {
        row_key: r.row_key.0,
        offset_bytes: r.offset_bytes.0,
    }
}

/// A row as `google.bigtable.v2.Row`: consecutive cells of one family form a `Family`,
/// consecutive cells of one qualifier within it a `Column`, so the cell order is kept exactly.
pub fn row_to_json(row: &Row) -> RowJson {
    let mut families: Vec<FamilyJson> = Vec::new();
    for c in &row.cells {
        let cell = CellJson {
            timestamp_micros: Int64(c.timestamp.0),
            value: b64(&c.value),
            labels: vec_or_none(c.labels.clone()),
        };
        if families.last().is_none_or(|f| f.name != c.family) {
            families.push(FamilyJson {
                name: c.family.clone(),
                columns: None,
            });
        }
        // Never `None`: a family was pushed just above if there was none.
        let Some(family) = families.last_mut() else {
            continue;
        };
        let columns = family.columns.get_or_insert_with(Vec::new);
        match columns.last_mut() {
            Some(col) if col.qualifier.0 == c.qualifier => {
                col.cells.get_or_insert_with(Vec::new).push(cell)
            }
            _ => columns.push(ColumnJson {
                qualifier: b64(&c.qualifier),
                cells: Some(alloc::vec![cell]),
            }),
        }
    }
    RowJson {
        key: b64(&row.key),
        families: vec_or_none(families),
    }
}

/// A `google.bigtable.v2.Row` flattened to cells in the order given.
pub fn row_from_json(row: RowJson) -> Row {
    let mut cells = Vec::new();
    for family in row.families.unwrap_or_default() {
        for column in family.columns.unwrap_or_default() {
            for cell in column.cells.unwrap_or_default() {
                cells.push(Cell {
                    family: family.name.clone(),
                    qualifier: column.qualifier.0.clone(),
                    timestamp: Timestamp(cell.timestamp_micros.0),
                    value: cell.value.0,
                    labels: cell.labels.unwrap_or_default(),
                });
            }
        }
    }
    Row {
        key: row.key.0,
        cells,
    }
}
