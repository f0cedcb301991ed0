//! Bigtable v2 JSON wire format (`spec/rest-json.md`), shared by `rowkit-gateway` (server side)
//! and `rowkit-fetch` (browser side).
//!
//! - [`wire`]: the proto3 JSON message shapes (serde types); [`proto3`]: its scalars (base64
//!   bytes, int64 strings, …).
//! - [`convert`]: exact conversions between those shapes and rowkit's `Request`/`Response`.
//! - This module: the entry points a transport needs — [`Method`] and [`TableName`] (the URL),
//!   [`encode_request`] / [`decode_request`], [`encode_response`] / [`decode_response`] /
//!   [`decode_stream_element`], error bodies ([`encode_error`], [`decode_error`]) and the status
//!   mapping of `rest-json.md` 6.2.
//! - [`splitter`]: the streamed-array splitter of `rest-json.md` 5.2.
//!
//! ```
//! use rowkit_rest::{Method, TableName, decode_request, encode_request};
//! use rowkit_statemachines::{Request, MutateRowRequest};
//! use rowkit_codec::model::{Mutation, Timestamp};
//! let table = TableName::new("p", "i", "t");
//! let request = Request::MutateRow(MutateRowRequest {
//!     table: "t".into(),
//!     row_key: b"r1".to_vec(),
//!     mutations: vec![Mutation::SetCell {
//!         family: "cf".into(), qualifier: b"q".to_vec(),
//!         timestamp: Timestamp(1000), value: b"v1".to_vec(),
//!     }],
//!     ..Default::default()
//! });
//! let body = encode_request(&request).unwrap();
//! assert_eq!(
//!     std::str::from_utf8(&body).unwrap(),
//!     r#"{"rowKey":"cjE=","mutations":[{"setCell":{"familyName":"cf","columnQualifier":"cQ==","timestampMicros":"1000","value":"djE="}}]}"#
//! );
//! assert_eq!(table.path(Method::MutateRow), "/v2/projects/p/instances/i/tables/t:mutateRow");
//! assert_eq!(decode_request(Method::MutateRow, &table, &body).unwrap(), request);
//!
//! use rowkit_rest::{code_for_http_status, http_status};
//! use rowkit_statemachines::Code;
//! assert_eq!(http_status(Code::NotFound), 404);
//! assert_eq!(code_for_http_status(503), Code::Unavailable);
//! ```
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod admin;
pub mod convert;
pub mod proto3;
pub mod splitter;
pub mod wire;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_statemachines::{Code, Request, Response, StoreError};

pub use convert::RestError;
pub use splitter::{ArraySplitter, Split, SplitError};

/// The HTTP status for a `google.rpc.Code` (`google/rpc/code.proto`, "HTTP Mapping").
pub fn http_status(code: Code) -> u16 {
    match code {
        Code::Ok => 200,
        Code::Cancelled => 499,
        Code::Unknown | Code::Internal | Code::DataLoss => 500,
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => 400,
        Code::DeadlineExceeded => 504,
        Code::NotFound => 404,
        Code::AlreadyExists | Code::Aborted => 409,
        Code::PermissionDenied => 403,
        Code::Unauthenticated => 401,
        Code::ResourceExhausted => 429,
        Code::Unimplemented => 501,
        Code::Unavailable => 503,
    }
}

/// The code a reader assumes when an error body is not JSON: the mapping above in reverse,
/// with shared statuses read as their most general code.
pub fn code_for_http_status(status: u16) -> Code {
    match status {
        200..=299 => Code::Ok,
        400 => Code::InvalidArgument,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::NotFound,
        409 => Code::Aborted,
        429 => Code::ResourceExhausted,
        499 => Code::Cancelled,
        501 => Code::Unimplemented,
        503 => Code::Unavailable,
        504 => Code::DeadlineExceeded,
        _ => Code::Unknown,
    }
}

/// The code named by a `google.rpc.Code` name (`"NOT_FOUND"`), as `error.status` carries it.
pub fn code_from_name(name: &str) -> Option<Code> {
    (0..=16).map(Code::from_i32).find(|c| c.name() == name)
}

/// One of the six data RPCs, as named in the URL after `:` (`rest-json.md` 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// `:readRows` (`POST`, streamed).
    ReadRows,
    /// `:mutateRow` (`POST`).
    MutateRow,
    /// `:mutateRows` (`POST`, streamed).
    MutateRows,
    /// `:checkAndMutateRow` (`POST`).
    CheckAndMutateRow,
    /// `:readModifyWriteRow` (`POST`).
    ReadModifyWriteRow,
    /// `:sampleRowKeys` (`GET`, or `POST` with `{}`; streamed).
    SampleRowKeys,
}

impl Method {
    /// Every method.
    pub const ALL: [Method; 6] = [
        Method::ReadRows,
        Method::MutateRow,
        Method::MutateRows,
        Method::CheckAndMutateRow,
        Method::ReadModifyWriteRow,
        Method::SampleRowKeys,
    ];

    /// The method of a request.
    pub fn of(request: &Request) -> Method {
        match request {
            // A point read goes on the wire as a one-key ReadRows.
            Request::ReadRows(_) | Request::ReadRow(_) => Method::ReadRows,
            Request::MutateRow(_) => Method::MutateRow,
            Request::MutateRows(_) => Method::MutateRows,
            Request::CheckAndMutateRow(_) => Method::CheckAndMutateRow,
            Request::ReadModifyWriteRow(_) => Method::ReadModifyWriteRow,
            Request::SampleRowKeys(_) => Method::SampleRowKeys,
        }
    }

    /// The name after `:` in the URL, e.g. `readRows`.
    pub fn name(self) -> &'static str {
        match self {
            Method::ReadRows => "readRows",
            Method::MutateRow => "mutateRow",
            Method::MutateRows => "mutateRows",
            Method::CheckAndMutateRow => "checkAndMutateRow",
            Method::ReadModifyWriteRow => "readModifyWriteRow",
            Method::SampleRowKeys => "sampleRowKeys",
        }
    }

    /// The method for a URL name.
    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the response body is a streamed JSON array.
    pub fn is_streaming(self) -> bool {
        matches!(
            self,
            Method::ReadRows | Method::MutateRows | Method::SampleRowKeys
        )
    }

    /// The proto message name of the request, for error messages.
    pub fn request_message(self) -> &'static str {
        match self {
            Method::ReadRows => "ReadRowsRequest",
            Method::MutateRow => "MutateRowRequest",
            Method::MutateRows => "MutateRowsRequest",
            Method::CheckAndMutateRow => "CheckAndMutateRowRequest",
            Method::ReadModifyWriteRow => "ReadModifyWriteRowRequest",
            Method::SampleRowKeys => "SampleRowKeysRequest",
        }
    }

    /// The proto message name of the response (or of one stream element).
    pub fn response_message(self) -> &'static str {
        match self {
            Method::ReadRows => "ReadRowsResponse",
            Method::MutateRow => "MutateRowResponse",
            Method::MutateRows => "MutateRowsResponse",
            Method::CheckAndMutateRow => "CheckAndMutateRowResponse",
            Method::ReadModifyWriteRow => "ReadModifyWriteRowResponse",
            Method::SampleRowKeys => "SampleRowKeysResponse",
        }
    }
}

/// A table's resource name: `projects/{project}/instances/{instance}/tables/{table}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TableName {
    /// Project id.
    pub project: String,
    /// Instance id.
    pub instance: String,
    /// Table id (what rowkit requests carry).
    pub table: String,
}

impl TableName {
    /// A table name from its parts.
    pub fn new(
        project: impl Into<String>,
        instance: impl Into<String>,
        table: impl Into<String>,
    ) -> TableName {
        TableName {
            project: project.into(),
            instance: instance.into(),
            table: table.into(),
        }
    }

    /// `projects/{p}/instances/{i}/tables/{t}`, as a body's `tableName` spells it.
    pub fn resource_name(&self) -> String {
        format!(
            "projects/{}/instances/{}/tables/{}",
            self.project, self.instance, self.table
        )
    }

    /// The URL path of `method` on this table, relative to the gateway origin.
    pub fn path(&self, method: Method) -> String {
        format!("/v2/{}:{}", self.resource_name(), method.name())
    }

    /// Parses a URL path `/v2/projects/{p}/instances/{i}/tables/{t}:{method}` (`%3A` accepted
    /// for `:`). `None` if it is not one of the six data paths.
    pub fn parse_path(path: &str) -> Option<(TableName, Method)> {
        let rest = path.strip_prefix("/v2/projects/")?;
        let (project, rest) = rest.split_once('/')?;
        let rest = rest.strip_prefix("instances/")?;
        let (instance, rest) = rest.split_once('/')?;
        let last = rest.strip_prefix("tables/")?;
        let (table, method) = split_table_method(last)?;
        let segment_ok = |s: &str| !s.is_empty() && !s.contains('/');
        if !segment_ok(project) || !segment_ok(instance) || !segment_ok(table) {
            return None;
        }
        Some((TableName::new(project, instance, table), method))
    }
}

/// Splits the last path segment `{table}:{method}` (or `{table}%3A{method}`) into its parts.
pub fn split_table_method(segment: &str) -> Option<(&str, Method)> {
    let (table, method) = match segment.rsplit_once(':') {
        Some(parts) => parts,
        None => {
            let at = segment.to_ascii_lowercase().rfind("%3a")?;
            (&segment[..at], &segment[at + 3..])
        }
    };
    if table.is_empty() {
        return None;
    }
    Some((table, Method::from_name(method)?))
}

/// The JSON body of a request. The table is not included: the URL carries it
/// ([`TableName::path`]); `tableName` is optional in the body and `rowkit-fetch` never sends it.
pub fn encode_request(request: &Request) -> Result<Vec<u8>, RestError> {
    use convert::*;
    let what = Method::of(request).request_message();
    match request {
        Request::ReadRows(r) => to_json(what, &read_rows_to_json(r)),
        Request::ReadRow(r) => to_json(what, &read_rows_to_json(&r.clone().into_read_rows())),
        Request::MutateRow(r) => to_json(what, &mutate_row_to_json(r)),
        Request::MutateRows(r) => to_json(what, &mutate_rows_to_json(r)),
        Request::CheckAndMutateRow(r) => to_json(what, &check_and_mutate_to_json(r)),
        Request::ReadModifyWriteRow(r) => to_json(what, &read_modify_write_to_json(r)),
        Request::SampleRowKeys(r) => to_json(
            what,
            &wire::SampleRowKeysRequestJson {
                app_profile_id: r.app_profile_id.clone(),
                ..Default::default()
            },
        ),
    }
}

/// Decodes a request body for `method` on `table` (the table from the URL). An empty body is
/// accepted for SampleRowKeys (the `GET` form). Errors name the field; [`RestError::code`] is
/// the status to answer with.
pub fn decode_request(
    method: Method,
    table: &TableName,
    body: &[u8],
) -> Result<Request, RestError> {
    use convert::*;
    let body = DataBody {
        what: method.request_message(),
        bytes: body,
        expected: table.resource_name(),
        table: table.table.clone(),
    };
    Ok(match method {
        Method::ReadRows => Request::ReadRows(body.decode(read_rows_from_json)?),
        Method::MutateRow => Request::MutateRow(body.decode(mutate_row_from_json)?),
        Method::MutateRows => Request::MutateRows(body.decode(mutate_rows_from_json)?),
        Method::CheckAndMutateRow => {
            Request::CheckAndMutateRow(body.decode(check_and_mutate_from_json)?)
        }
        Method::ReadModifyWriteRow => {
            Request::ReadModifyWriteRow(body.decode(read_modify_write_from_json)?)
        }
        Method::SampleRowKeys => {
            let r: wire::SampleRowKeysRequestJson = if body.is_empty() {
                Default::default()
            } else {
                body.parse()?
            };
            Request::SampleRowKeys(rowkit_statemachines::SampleRowKeysRequest {
                table: body.table,
                app_profile_id: r.app_profile_id,
            })
        }
    })
}

/// The body of a data request sent to `table`, to decode: `what` names its message in errors,
/// `expected` is the table's resource name its `tableName` must match.
struct DataBody<'b> {
    what: &'static str,
    bytes: &'b [u8],
    expected: String,
    table: String,
}

impl DataBody<'_> {
    /// Whether the body is empty (white space only).
    fn is_empty(&self) -> bool {
        self.bytes.iter().all(|b| b.is_ascii_whitespace())
    }

    /// Parses the body as `J` and checks its target fields against the URL's table.
    fn parse<J: serde::de::DeserializeOwned + wire::DataRequestJson>(
        &self,
    ) -> Result<J, RestError> {
        let r: J = convert::parse(self.what, self.bytes)?;
        convert::check_target(&self.expected, r.target())?;
        Ok(r)
    }

    /// Parses and checks the body, then converts it for the table with `convert`.
    fn decode<J, T>(
        self,
        convert: impl FnOnce(J, String) -> Result<T, RestError>,
    ) -> Result<T, RestError>
    where
        J: serde::de::DeserializeOwned + wire::DataRequestJson,
    {
        let r = self.parse()?;
        convert(r, self.table)
    }
}

/// The JSON of one response: a unary body, or one element of a streamed array.
/// [`Response::StreamEnd`] has none (it is the array's `]`): [`RestError::NotAMessage`].
pub fn encode_response(response: &Response) -> Result<Vec<u8>, RestError> {
    use convert::*;
    match response {
        Response::ReadRowsPart(r) => to_json("ReadRowsResponse", &read_rows_response_to_json(r)),
        // Whole rows (a local store's answer) go on the wire as the chunks they stand for; a
        // point read's row as what a one-key ReadRows answers.
        Response::Rows(rows) => whole_rows_to_json(rows.iter()),
        Response::Row(row) => whole_rows_to_json(row.iter()),
        Response::MutateRowsPart(r) => {
            to_json("MutateRowsResponse", &mutate_rows_response_to_json(r)?)
        }
        Response::SampleRowKeysPart(r) => to_json("SampleRowKeysResponse", &sample_to_json(r)),
        Response::MutateRow => Ok(b"{}".to_vec()),
        Response::CheckAndMutateRow { predicate_matched } => to_json(
            "CheckAndMutateRowResponse",
            &wire::CheckAndMutateRowResponseJson {
                predicate_matched: *predicate_matched,
            },
        ),
        Response::ReadModifyWriteRow(row) => to_json(
            "ReadModifyWriteRowResponse",
            &wire::ReadModifyWriteRowResponseJson {
                row: Some(row_to_json(row)),
            },
        ),
        Response::StreamEnd => Err(RestError::NotAMessage { what: "StreamEnd" }),
    }
}

/// Whole rows as the one `ReadRowsResponse` of their chunks.
fn whole_rows_to_json<'r>(
    rows: impl Iterator<Item = &'r alloc::sync::Arc<rowkit_codec::model::Row>>,
) -> Result<Vec<u8>, RestError> {
    let part = rowkit_statemachines::ReadRowsResponse {
        chunks: rows
            .flat_map(|row| rowkit_statemachines::readrows::row_chunks(row, None))
            .collect(),
        last_scanned_row_key: Vec::new(),
    };
    convert::to_json(
        "ReadRowsResponse",
        &convert::read_rows_response_to_json(&part),
    )
}

/// Decodes one response message of `method`: a unary body, or one stream element that is not
/// an error (see [`decode_stream_element`]).
pub fn decode_response(method: Method, bytes: &[u8]) -> Result<Response, RestError> {
    use convert::*;
    let what = method.response_message();
    Ok(match method {
        Method::ReadRows => {
            Response::ReadRowsPart(read_rows_response_from_json(parse(what, bytes)?)?)
        }
        Method::MutateRows => {
            Response::MutateRowsPart(mutate_rows_response_from_json(parse(what, bytes)?)?)
        }
        Method::SampleRowKeys => Response::SampleRowKeysPart(sample_from_json(parse(what, bytes)?)),
        Method::MutateRow => {
            let _: wire::MutateRowResponseJson = parse(what, bytes)?;
            Response::MutateRow
        }
        Method::CheckAndMutateRow => {
            let r: wire::CheckAndMutateRowResponseJson = parse(what, bytes)?;
            Response::CheckAndMutateRow {
                predicate_matched: r.predicate_matched,
            }
        }
        Method::ReadModifyWriteRow => {
            let r: wire::ReadModifyWriteRowResponseJson = parse(what, bytes)?;
            Response::ReadModifyWriteRow(row_from_json(r.row.unwrap_or_default()))
        }
    })
}

/// Decodes one element of a streamed array: a message, or the final `{"error": …}` element that
/// ends a stream failing after it started (`rest-json.md` 5.1).
pub fn decode_stream_element(
    method: Method,
    bytes: &[u8],
) -> Result<Result<Response, StoreError>, RestError> {
    if let Ok(body) = serde_json::from_slice::<wire::ErrorBodyJson>(bytes) {
        return Ok(Err(error_from_json(body.error, None)));
    }
    decode_response(method, bytes).map(Ok)
}

/// The `{"error": {…}}` body for a status (`rest-json.md` 6.1): `code` is the HTTP status,
/// `status` the code name, `message` unchanged. Also the final element of a failed stream.
pub fn encode_error(error: &StoreError) -> Vec<u8> {
    let body = wire::ErrorBodyJson {
        error: wire::ErrorJson {
            code: proto3::Int32(i32::from(http_status(error.code))),
            message: error.message.clone(),
            status: String::from(error.code.name()),
            details: None,
        },
    };
    // Only strings and numbers: serialisation cannot fail, and an empty body would still be
    // read through the HTTP status by `decode_error`.
    serde_json::to_vec(&body).unwrap_or_default()
}

fn error_from_json(e: wire::ErrorJson, http: Option<u16>) -> StoreError {
    let code = code_from_name(&e.status).unwrap_or_else(|| {
        let status = http.or_else(|| u16::try_from(e.code.0).ok()).unwrap_or(500);
        code_for_http_status(status)
    });
    StoreError::new(code, e.message)
}

/// The status of an error response: from its JSON body when it is Google's envelope (the
/// `status` name decides, `rest-json.md` 6.2), else from the HTTP status alone, with the body
/// (truncated) as the message.
pub fn decode_error(http: u16, body: &[u8]) -> StoreError {
    match serde_json::from_slice::<wire::ErrorBodyJson>(body) {
        Ok(b) => error_from_json(b.error, Some(http)),
        Err(_) => {
            let shown = &body[..body.len().min(200)];
            StoreError::new(
                code_for_http_status(http),
                format!("HTTP {http}: {}", String::from_utf8_lossy(shown)),
            )
        }
    }
}

#[cfg(test)]
mod tests;
