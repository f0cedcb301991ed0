//! The Bigtable v2 messages exactly as proto3 JSON spells them (`rest-json.md` 4): field names
//! in lowerCamelCase (the proto names are accepted as aliases), defaults omitted, unknown and
//! duplicate fields rejected.
//!
//! These types only carry the JSON shape; a oneof is a set of optional fields, and whether
//! exactly one is set is checked when converting to rowkit's types ([`crate::convert`]).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use crate::proto3::{B64, Double, Int32, Int64};

/// proto3 JSON: `null` for any field means its default value.
fn nullable<'de, D: serde::Deserializer<'de>, T: Deserialize<'de> + Default>(
    d: D,
) -> Result<T, D::Error> {
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `google.bigtable.v2.RowRange`: one start member and one end member, each optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RowRangeJson {
    /// Inclusive start.
    #[serde(
        default,
        alias = "start_key_closed",
        skip_serializing_if = "Option::is_none"
    )]
    pub start_key_closed: Option<B64>,
    /// Exclusive start.
    #[serde(
        default,
        alias = "start_key_open",
        skip_serializing_if = "Option::is_none"
    )]
    pub start_key_open: Option<B64>,
    /// Exclusive end.
    #[serde(
        default,
        alias = "end_key_open",
        skip_serializing_if = "Option::is_none"
    )]
    pub end_key_open: Option<B64>,
    /// Inclusive end.
    #[serde(
        default,
        alias = "end_key_closed",
        skip_serializing_if = "Option::is_none"
    )]
    pub end_key_closed: Option<B64>,
}

/// `google.bigtable.v2.RowSet`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RowSetJson {
    /// Single keys.
    #[serde(default, alias = "row_keys", skip_serializing_if = "Option::is_none")]
    pub row_keys: Option<Vec<B64>>,
    /// Ranges.
    #[serde(default, alias = "row_ranges", skip_serializing_if = "Option::is_none")]
    pub row_ranges: Option<Vec<RowRangeJson>>,
}

/// `RowFilter.Chain` / `RowFilter.Interleave`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FiltersJson {
    /// The member filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Vec<RowFilterJson>>,
}

/// `RowFilter.Condition`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConditionJson {
    /// The test.
    #[serde(
        default,
        alias = "predicate_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub predicate_filter: Option<Box<RowFilterJson>>,
    /// Applied when the test yields a cell.
    #[serde(
        default,
        alias = "true_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub true_filter: Option<Box<RowFilterJson>>,
    /// Applied otherwise.
    #[serde(
        default,
        alias = "false_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub false_filter: Option<Box<RowFilterJson>>,
}

/// `google.bigtable.v2.ColumnRange`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ColumnRangeJson {
    /// The family (plain string).
    #[serde(
        default,
        deserialize_with = "nullable",
        alias = "family_name",
        skip_serializing_if = "String::is_empty"
    )]
    pub family_name: String,
    /// Inclusive start qualifier.
    #[serde(
        default,
        alias = "start_qualifier_closed",
        skip_serializing_if = "Option::is_none"
    )]
    pub start_qualifier_closed: Option<B64>,
    /// Exclusive start qualifier.
    #[serde(
        default,
        alias = "start_qualifier_open",
        skip_serializing_if = "Option::is_none"
    )]
    pub start_qualifier_open: Option<B64>,
    /// Inclusive end qualifier.
    #[serde(
        default,
        alias = "end_qualifier_closed",
        skip_serializing_if = "Option::is_none"
    )]
    pub end_qualifier_closed: Option<B64>,
    /// Exclusive end qualifier.
    #[serde(
        default,
        alias = "end_qualifier_open",
        skip_serializing_if = "Option::is_none"
    )]
    pub end_qualifier_open: Option<B64>,
}

/// `google.bigtable.v2.ValueRange`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValueRangeJson {
    /// Inclusive start.
    #[serde(
        default,
        alias = "start_value_closed",
        skip_serializing_if = "Option::is_none"
    )]
    pub start_value_closed: Option<B64>,
    /// Exclusive start.
    #[serde(
        default,
        alias = "start_value_open",
        skip_serializing_if = "Option::is_none"
    )]
    pub start_value_open: Option<B64>,
    /// Inclusive end.
    #[serde(
        default,
        alias = "end_value_closed",
        skip_serializing_if = "Option::is_none"
    )]
    pub end_value_closed: Option<B64>,
    /// Exclusive end.
    #[serde(
        default,
        alias = "end_value_open",
        skip_serializing_if = "Option::is_none"
    )]
    pub end_value_open: Option<B64>,
}

/// `google.bigtable.v2.TimestampRange` (`[start, end)`, `end` 0 = infinity).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TimestampRangeJson {
    /// Inclusive start.
    #[serde(
        default,
        alias = "start_timestamp_micros",
        skip_serializing_if = "Int64::is_zero"
    )]
    pub start_timestamp_micros: Int64,
    /// Exclusive end.
    #[serde(
        default,
        alias = "end_timestamp_micros",
        skip_serializing_if = "Int64::is_zero"
    )]
    pub end_timestamp_micros: Int64,
}

/// `google.bigtable.v2.RowFilter`: a oneof, one member per object (`{}` = pass all).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(missing_docs)] // Each field is the proto member of the same name (`rest-json.md` 4.2).
pub struct RowFilterJson {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<FiltersJson>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<FiltersJson>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<Box<ConditionJson>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sink: Option<bool>,
    #[serde(
        default,
        alias = "pass_all_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub pass_all_filter: Option<bool>,
    #[serde(
        default,
        alias = "block_all_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub block_all_filter: Option<bool>,
    #[serde(
        default,
        alias = "row_key_regex_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub row_key_regex_filter: Option<B64>,
    #[serde(
        default,
        alias = "row_sample_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub row_sample_filter: Option<Double>,
    #[serde(
        default,
        alias = "family_name_regex_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub family_name_regex_filter: Option<String>,
    #[serde(
        default,
        alias = "column_qualifier_regex_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub column_qualifier_regex_filter: Option<B64>,
    #[serde(
        default,
        alias = "column_range_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub column_range_filter: Option<ColumnRangeJson>,
    #[serde(
        default,
        alias = "timestamp_range_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub timestamp_range_filter: Option<TimestampRangeJson>,
    #[serde(
        default,
        alias = "value_regex_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub value_regex_filter: Option<B64>,
    #[serde(
        default,
        alias = "value_range_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub value_range_filter: Option<ValueRangeJson>,
    #[serde(
        default,
        alias = "cells_per_row_offset_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub cells_per_row_offset_filter: Option<Int32>,
    #[serde(
        default,
        alias = "cells_per_row_limit_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub cells_per_row_limit_filter: Option<Int32>,
    #[serde(
        default,
        alias = "cells_per_column_limit_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub cells_per_column_limit_filter: Option<Int32>,
    #[serde(
        default,
        alias = "strip_value_transformer",
        skip_serializing_if = "Option::is_none"
    )]
    pub strip_value_transformer: Option<bool>,
    #[serde(
        default,
        alias = "apply_label_transformer",
        skip_serializing_if = "Option::is_none"
    )]
    pub apply_label_transformer: Option<String>,
}

/// `Mutation.SetCell`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetCellJson {
    /// Family.
    #[serde(
        default,
        deserialize_with = "nullable",
        alias = "family_name",
        skip_serializing_if = "String::is_empty"
    )]
    pub family_name: String,
    /// Qualifier.
    #[serde(
        default,
        alias = "column_qualifier",
        skip_serializing_if = "B64::is_empty"
    )]
    pub column_qualifier: B64,
    /// Timestamp; `-1` = server time.
    #[serde(
        default,
        alias = "timestamp_micros",
        skip_serializing_if = "Int64::is_zero"
    )]
    pub timestamp_micros: Int64,
    /// Value.
    #[serde(default, skip_serializing_if = "B64::is_empty")]
    pub value: B64,
}

/// `Mutation.DeleteFromColumn`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteFromColumnJson {
    /// Family.
    #[serde(
        default,
        deserialize_with = "nullable",
        alias = "family_name",
        skip_serializing_if = "String::is_empty"
    )]
    pub family_name: String,
    /// Qualifier.
    #[serde(
        default,
        alias = "column_qualifier",
        skip_serializing_if = "B64::is_empty"
    )]
    pub column_qualifier: B64,
    /// Range of timestamps to delete; absent = all.
    #[serde(default, alias = "time_range", skip_serializing_if = "Option::is_none")]
    pub time_range: Option<TimestampRangeJson>,
}

/// `Mutation.DeleteFromFamily`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteFromFamilyJson {
    /// Family.
    #[serde(
        default,
        deserialize_with = "nullable",
        alias = "family_name",
        skip_serializing_if = "String::is_empty"
    )]
    pub family_name: String,
}

/// `Mutation.DeleteFromRow` (no fields).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteFromRowJson {}

/// `google.bigtable.v2.Mutation`: a oneof.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MutationJson {
    /// Write a cell.
    #[serde(default, alias = "set_cell", skip_serializing_if = "Option::is_none")]
    pub set_cell: Option<SetCellJson>,
    /// Delete a column's cells.
    #[serde(
        default,
        alias = "delete_from_column",
        skip_serializing_if = "Option::is_none"
    )]
    pub delete_from_column: Option<DeleteFromColumnJson>,
    /// Delete a family's cells.
    #[serde(
        default,
        alias = "delete_from_family",
        skip_serializing_if = "Option::is_none"
    )]
    pub delete_from_family: Option<DeleteFromFamilyJson>,
    /// Delete the row.
    #[serde(
        default,
        alias = "delete_from_row",
        skip_serializing_if = "Option::is_none"
    )]
    pub delete_from_row: Option<DeleteFromRowJson>,
    /// Aggregate add (not supported by rowkit: `501`).
    #[serde(
        default,
        alias = "add_to_cell",
        skip_serializing_if = "Option::is_none"
    )]
    pub add_to_cell: Option<serde_json::Value>,
    /// Aggregate merge (not supported by rowkit: `501`).
    #[serde(
        default,
        alias = "merge_to_cell",
        skip_serializing_if = "Option::is_none"
    )]
    pub merge_to_cell: Option<serde_json::Value>,
}

/// `google.bigtable.v2.ReadModifyWriteRule`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleJson {
    /// Family.
    #[serde(
        default,
        deserialize_with = "nullable",
        alias = "family_name",
        skip_serializing_if = "String::is_empty"
    )]
    pub family_name: String,
    /// Qualifier.
    #[serde(
        default,
        alias = "column_qualifier",
        skip_serializing_if = "B64::is_empty"
    )]
    pub column_qualifier: B64,
    /// Oneof member: bytes to append.
    #[serde(
        default,
        alias = "append_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub append_value: Option<B64>,
    /// Oneof member: amount to add.
    #[serde(
        default,
        alias = "increment_amount",
        skip_serializing_if = "Option::is_none"
    )]
    pub increment_amount: Option<Int64>,
}

/// Declares a data request body: the target fields it carries (see [`TargetJson`]; each
/// optional, `null` = absent, its snake_case name accepted), then its own fields; and its
/// [`DataRequestJson`] view of those target fields. serde cannot
/// `flatten` a shared struct in, because `flatten` and `deny_unknown_fields` do not mix.
macro_rules! data_request {
    (
        $(#[$meta:meta])*
        pub struct $name:ident [$($target:ident = $alias:literal),* $(,)?] {
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $name {
            $(
                #[doc = concat!("`", $alias, "`: see [`TargetJson`].")]
                #[serde(
                    default,
                    deserialize_with = "nullable",
                    alias = $alias,
                    skip_serializing_if = "String::is_empty"
                )]
                pub $target: String,
            )*
            $($(#[$field_meta])* pub $field: $ty,)*
        }

        impl DataRequestJson for $name {
            // A message with all four target fields sets every field of `Target` by name.
            #[allow(clippy::needless_update)]
            fn target(&self) -> Target<'_> {
                Target {
                    $($target: &self.$target,)*
                    ..Target::default()
                }
            }
        }
    };
}

/// The target fields of a data request body, borrowed (see [`TargetJson`]); a field the
/// message does not have is empty, as an absent one is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Target<'a> {
    /// `tableName`.
    pub table_name: &'a str,
    /// `authorizedViewName`.
    pub authorized_view_name: &'a str,
    /// `materializedViewName`.
    pub materialized_view_name: &'a str,
    /// `appProfileId`.
    pub app_profile_id: &'a str,
}

/// A data request body (declared by `data_request!`): the target fields it carries.
pub trait DataRequestJson {
    /// The target fields of this body.
    fn target(&self) -> Target<'_>;
}

data_request! {
    /// The fields every data request carries besides its own (`rest-json.md` 1).
    ///
    /// `tableName` is optional and must equal the path's table; `authorizedViewName` and
    /// `materializedViewName` are not served (`501`); `appProfileId` picks the app profile.
    pub struct TargetJson [
        table_name = "table_name",
        authorized_view_name = "authorized_view_name",
        materialized_view_name = "materialized_view_name",
        app_profile_id = "app_profile_id",
    ] {}
}

data_request! {
    /// `ReadRowsRequest`.
    pub struct ReadRowsRequestJson [
        table_name = "table_name",
        authorized_view_name = "authorized_view_name",
        materialized_view_name = "materialized_view_name",
        app_profile_id = "app_profile_id",
    ] {
        /// Rows; absent = whole table.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub rows: Option<RowSetJson>,
        /// Filter; absent = every cell.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub filter: Option<RowFilterJson>,
        /// Row limit; 0 = none.
        #[serde(default, alias = "rows_limit", skip_serializing_if = "Int64::is_zero")]
        pub rows_limit: Int64,
        /// Enum (name or number); ignored.
        #[serde(
            default,
            alias = "request_stats_view",
            skip_serializing_if = "Option::is_none"
        )]
        pub request_stats_view: Option<serde_json::Value>,
        /// Descending order.
        #[serde(
            default,
            deserialize_with = "nullable",
            skip_serializing_if = "is_false"
        )]
        pub reversed: bool,
    }
}

data_request! {
    /// `MutateRowRequest`.
    pub struct MutateRowRequestJson [
        table_name = "table_name",
        authorized_view_name = "authorized_view_name",
        app_profile_id = "app_profile_id",
    ] {
        /// The row.
        #[serde(default, alias = "row_key", skip_serializing_if = "B64::is_empty")]
        pub row_key: B64,
        /// Mutations in order.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub mutations: Option<Vec<MutationJson>>,
        /// Idempotency token (newer protos); ignored.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub idempotency: Option<serde_json::Value>,
    }
}

/// One entry of a `MutateRowsRequest`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MutateRowsEntryJson {
    /// The row.
    #[serde(default, alias = "row_key", skip_serializing_if = "B64::is_empty")]
    pub row_key: B64,
    /// Mutations in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutations: Option<Vec<MutationJson>>,
    /// Idempotency token (newer protos); ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency: Option<serde_json::Value>,
}

data_request! {
    /// `MutateRowsRequest`.
    pub struct MutateRowsRequestJson [
        table_name = "table_name",
        authorized_view_name = "authorized_view_name",
        app_profile_id = "app_profile_id",
    ] {
        /// The rows.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub entries: Option<Vec<MutateRowsEntryJson>>,
    }
}

data_request! {
    /// `CheckAndMutateRowRequest`.
    pub struct CheckAndMutateRowRequestJson [
        table_name = "table_name",
        authorized_view_name = "authorized_view_name",
        app_profile_id = "app_profile_id",
    ] {
        /// The row.
        #[serde(default, alias = "row_key", skip_serializing_if = "B64::is_empty")]
        pub row_key: B64,
        /// The test; absent = "the row has any cell".
        #[serde(
            default,
            alias = "predicate_filter",
            skip_serializing_if = "Option::is_none"
        )]
        pub predicate_filter: Option<RowFilterJson>,
        /// Applied when the test matches.
        #[serde(
            default,
            alias = "true_mutations",
            skip_serializing_if = "Option::is_none"
        )]
        pub true_mutations: Option<Vec<MutationJson>>,
        /// Applied otherwise.
        #[serde(
            default,
            alias = "false_mutations",
            skip_serializing_if = "Option::is_none"
        )]
        pub false_mutations: Option<Vec<MutationJson>>,
    }
}

data_request! {
    /// `ReadModifyWriteRowRequest`.
    pub struct ReadModifyWriteRowRequestJson [
        table_name = "table_name",
        authorized_view_name = "authorized_view_name",
        app_profile_id = "app_profile_id",
    ] {
        /// The row.
        #[serde(default, alias = "row_key", skip_serializing_if = "B64::is_empty")]
        pub row_key: B64,
        /// Rules in order.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub rules: Option<Vec<RuleJson>>,
    }
}

/// `SampleRowKeysRequest` (the `POST` body; `GET` has none).
pub type SampleRowKeysRequestJson = TargetJson;

/// `ReadRowsResponse.CellChunk`. `familyName` and `qualifier` are wrapper types: present (even
/// empty) or not.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CellChunkJson {
    /// Row key; absent = same row.
    #[serde(default, alias = "row_key", skip_serializing_if = "B64::is_empty")]
    pub row_key: B64,
    /// Family when it changes.
    #[serde(
        default,
        alias = "family_name",
        skip_serializing_if = "Option::is_none"
    )]
    pub family_name: Option<String>,
    /// Qualifier when it changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qualifier: Option<B64>,
    /// Cell timestamp.
    #[serde(
        default,
        alias = "timestamp_micros",
        skip_serializing_if = "Int64::is_zero"
    )]
    pub timestamp_micros: Int64,
    /// Labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<String>>,
    /// Value or piece of it.
    #[serde(default, skip_serializing_if = "B64::is_empty")]
    pub value: B64,
    /// Total size when the cell continues.
    #[serde(default, alias = "value_size", skip_serializing_if = "Int32::is_zero")]
    pub value_size: Int32,
    /// Oneof `row_status`: reset.
    #[serde(default, alias = "reset_row", skip_serializing_if = "Option::is_none")]
    pub reset_row: Option<bool>,
    /// Oneof `row_status`: commit.
    #[serde(default, alias = "commit_row", skip_serializing_if = "Option::is_none")]
    pub commit_row: Option<bool>,
}

/// One `ReadRowsResponse`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadRowsResponseJson {
    /// Chunks in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Vec<CellChunkJson>>,
    /// Scan progress.
    #[serde(
        default,
        alias = "last_scanned_row_key",
        skip_serializing_if = "B64::is_empty"
    )]
    pub last_scanned_row_key: B64,
    /// Ignored by rowkit.
    #[serde(
        default,
        alias = "request_stats",
        skip_serializing_if = "Option::is_none"
    )]
    pub request_stats: Option<serde_json::Value>,
}

/// `google.rpc.Status` as it appears inside messages (MutateRows entries): `code` is the gRPC
/// code number.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RpcStatusJson {
    /// gRPC code number.
    #[serde(default, skip_serializing_if = "Int32::is_zero")]
    pub code: Int32,
    /// Developer message.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub message: String,
    /// `google.protobuf.Any` details, kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Vec<serde_json::Value>>,
}

/// One entry of a `MutateRowsResponse`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MutateRowsEntryResultJson {
    /// Index into the request's entries.
    #[serde(default, skip_serializing_if = "Int64::is_zero")]
    pub index: Int64,
    /// The entry's status (always emitted, `{}` for OK).
    #[serde(default)]
    pub status: Option<RpcStatusJson>,
}

/// One `MutateRowsResponse`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MutateRowsResponseJson {
    /// Entry results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<MutateRowsEntryResultJson>>,
    /// Flow control hint; ignored by rowkit.
    #[serde(
        default,
        alias = "rate_limit_info",
        skip_serializing_if = "Option::is_none"
    )]
    pub rate_limit_info: Option<serde_json::Value>,
}

/// One `SampleRowKeysResponse`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SampleRowKeysResponseJson {
    /// Split point; absent = end of table.
    #[serde(default, alias = "row_key", skip_serializing_if = "B64::is_empty")]
    pub row_key: B64,
    /// Bytes before it.
    #[serde(
        default,
        alias = "offset_bytes",
        skip_serializing_if = "Int64::is_zero"
    )]
    pub offset_bytes: Int64,
}

/// `MutateRowResponse` (no fields).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MutateRowResponseJson {}

/// `CheckAndMutateRowResponse`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckAndMutateRowResponseJson {
    /// Whether the predicate matched.
    #[serde(
        default,
        deserialize_with = "nullable",
        alias = "predicate_matched",
        skip_serializing_if = "is_false"
    )]
    pub predicate_matched: bool,
}

/// `google.bigtable.v2.Cell`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CellJson {
    /// Timestamp.
    #[serde(
        default,
        alias = "timestamp_micros",
        skip_serializing_if = "Int64::is_zero"
    )]
    pub timestamp_micros: Int64,
    /// Value.
    #[serde(default, skip_serializing_if = "B64::is_empty")]
    pub value: B64,
    /// Labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<String>>,
}

/// `google.bigtable.v2.Column`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ColumnJson {
    /// Qualifier.
    #[serde(default, skip_serializing_if = "B64::is_empty")]
    pub qualifier: B64,
    /// Cells, newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<Vec<CellJson>>,
}

/// `google.bigtable.v2.Family`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FamilyJson {
    /// Family name.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    /// Columns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<Vec<ColumnJson>>,
}

/// `google.bigtable.v2.Row`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RowJson {
    /// Row key.
    #[serde(default, skip_serializing_if = "B64::is_empty")]
    pub key: B64,
    /// Families.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub families: Option<Vec<FamilyJson>>,
}

/// `ReadModifyWriteRowResponse`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadModifyWriteRowResponseJson {
    /// The modified cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<RowJson>,
}

/// The body of an HTTP error, and the final element of a stream that fails after it started
/// (`rest-json.md` 5.1, 6.1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorBodyJson {
    /// The status.
    pub error: ErrorJson,
}

/// The `error` object: `code` is the **HTTP** status, `status` the `google.rpc.Code` name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorJson {
    /// HTTP status.
    #[serde(default)]
    pub code: Int32,
    /// Developer message.
    #[serde(default, deserialize_with = "nullable")]
    pub message: String,
    /// `google.rpc.Code` name, e.g. `NOT_FOUND`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub status: String,
    /// `google.protobuf.Any` details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Vec<serde_json::Value>>,
}
