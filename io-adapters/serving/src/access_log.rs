//! One log line per request for every rowkit server, as a `tracing` event (the binary decides
//! where it goes): the JSON gateway's ([`json`]: HTTP method, path, table, HTTP status) and the
//! gRPC server's ([`grpc`]: the gRPC method and `grpc-status`), each with its duration. The line
//! is written when the response body ends (or is dropped: the client went away, `complete` is
//! then false), so a streamed read is timed to its last byte and a gRPC call's status is the one
//! in its trailers. Failures the server owns (`server_failed`: `INTERNAL`, `DATA_LOSS`,
//! `UNAVAILABLE`, `DEADLINE_EXCEEDED`…) are at warn, the rest at info. Nothing a client sent
//! beyond the method and path is logged (no token, no row key).

use std::time::Instant;

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use http_body::Frame;
use rowkit_rest::{TableName, http_status};
use rowkit_statemachines::Code;

use super::watched_body::{BodyWatcher, watched};

/// Logs the JSON gateway's requests (an axum middleware: `from_fn(access_log::json)`).
pub async fn json(request: Request, next: Next) -> Response {
    let start = Instant::now();
    let http_method = request.method().to_string();
    let path = request.uri().path().to_string();
    let table = TableName::parse_path(&path).map(|(name, _)| name.table);
    let response = next.run(request).await;
    let status = response.status();
    let call = Call::Json {
        http_method,
        path,
        table,
        status,
    };
    logged(response, start, call)
}

/// Logs the gRPC server's calls (an axum middleware around tonic's router).
pub async fn grpc(request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = request.uri().path().to_string();
    let response = next.run(request).await;
    // A call that fails before answering carries its status in the head ("trailers-only");
    // otherwise it comes in the trailers.
    let status = grpc_status(response.headers());
    logged(response, start, Call::Grpc { method, status })
}

/// `response` with its body watched, so the line is written when the body is done with.
fn logged(response: Response, start: Instant, call: Call) -> Response {
    let record = Record {
        start,
        call,
        complete: false,
    };
    response.map(|inner| watched(inner, record))
}

/// Whether an answer with this HTTP status (a gRPC code's, through `http_status`) is the
/// server's failure: 5xx, except 501, a call of something not served (a probe of `/`, a newer
/// RPC), which is the client's doing.
fn server_failed(http_status: u16) -> bool {
    http_status >= 500 && http_status != 501
}

/// The `grpc-status` in `headers`, if any.
fn grpc_status(headers: &HeaderMap) -> Option<Code> {
    let value = headers.get("grpc-status")?.to_str().ok()?.parse().ok()?;
    Some(Code::from_i32(value))
}

/// What a request's line says.
enum Call {
    Json {
        http_method: String,
        path: String,
        table: Option<String>,
        status: StatusCode,
    },
    Grpc {
        method: String,
        status: Option<Code>,
    },
}

/// A request's line, written when it is dropped (with the response body).
struct Record {
    start: Instant,
    call: Call,
    /// The body ran to its end (false: the client went away first).
    complete: bool,
}

/// Writes `$level!` with the fields of a line; one macro so the info and warn lines of a
/// server cannot drift apart (a `tracing` level is fixed per call site).
macro_rules! json_line {
    ($level:ident, $http_method:expr, $path:expr, $table:expr, $status:expr, $ms:expr, $complete:expr) => {
        tracing::$level!(
            server = "json",
            method = $http_method,
            path = $path,
            table = $table,
            status = $status,
            duration_ms = $ms,
            complete = $complete,
            "request"
        )
    };
}

/// See [`json_line`].
macro_rules! grpc_line {
    ($level:ident, $method:expr, $status:expr, $ms:expr, $complete:expr) => {
        tracing::$level!(
            server = "grpc",
            method = $method,
            grpc_status = $status,
            duration_ms = $ms,
            complete = $complete,
            "request"
        )
    };
}

impl Record {
    fn write(&self) {
        // Milliseconds with microseconds: readable, and fine enough for a fast in-memory call.
        let ms = (self.start.elapsed().as_micros() as f64) / 1000.0;
        let complete = self.complete;
        match &self.call {
            Call::Json {
                http_method,
                path,
                table,
                status,
            } => {
                let (method, path, table) = (http_method.as_str(), path.as_str(), table.as_deref());
                let status = status.as_u16();
                if server_failed(status) {
                    json_line!(warn, method, path, table, status, ms, complete);
                } else {
                    json_line!(info, method, path, table, status, ms, complete);
                }
            }
            Call::Grpc { method, status } => {
                let method = method.as_str();
                // No status at all: the stream was cut before its trailers.
                let name = status.map_or("none", |code| code.name());
                if status.is_some_and(|code| server_failed(http_status(code))) {
                    grpc_line!(warn, method, name, ms, complete);
                } else {
                    grpc_line!(info, method, name, ms, complete);
                }
            }
        }
    }
}

/// Notes the status in a gRPC call's trailers and whether the body ran to its end.
impl BodyWatcher for Record {
    fn frame(&mut self, frame: &Frame<Bytes>) {
        if let (Some(trailers), Call::Grpc { status, .. }) = (frame.trailers_ref(), &mut self.call)
        {
            *status = grpc_status(trailers).or(*status);
        }
    }

    fn ended(&mut self) {
        self.complete = true;
    }
}

/// The line is written when the response body is done with (see [`watched`]).
impl Drop for Record {
    fn drop(&mut self) {
        self.write();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warn_for_the_servers_failures_only() {
        for code in [
            Code::Internal,
            Code::DataLoss,
            Code::Unavailable,
            Code::Unknown,
            Code::DeadlineExceeded,
        ] {
            assert!(server_failed(http_status(code)), "{code:?}");
        }
        for code in [
            Code::Ok,
            Code::NotFound,
            Code::InvalidArgument,
            Code::Unauthenticated,
            Code::PermissionDenied,
            Code::Unimplemented,
            Code::ResourceExhausted,
        ] {
            assert!(!server_failed(http_status(code)), "{code:?}");
        }
    }
}
