//! Bigtable v2 JSON wire format (`spec/rest-json.md`), shared by `rowkit-gateway` and
//! `rowkit-fetch`.
//!
//! This crate starts with the status mapping of `rest-json.md` 6.2; the proto3 JSON message
//! shapes and the streamed-array splitter arrive with the browser issue.
//!
//! ```
//! use rowkit_rest::{code_for_http_status, http_status};
//! use rowkit_statemachines::Code;
//! assert_eq!(http_status(Code::NotFound), 404);
//! assert_eq!(code_for_http_status(503), Code::Unavailable);
//! ```
#![no_std]
#![forbid(unsafe_code)]

use rowkit_statemachines::Code;

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
