//! The client's deadline bounds a call on the server, as on Cloud Bigtable: a call whose
//! response has not begun when its `grpc-timeout` passes is answered `DEADLINE_EXCEEDED` and its
//! handler dropped (a store call already running on a blocking thread finishes there, its answer
//! discarded). As tonic's own server did, this bounds the time to the response's head; a stream
//! already flowing is ended by the client, which holds the same deadline.

use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use tonic::Status;

/// Runs the call under its `grpc-timeout`, if it has a valid one.
pub(crate) async fn client_deadline(request: Request, next: Next) -> Response {
    let timeout = request
        .headers()
        .get("grpc-timeout")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_grpc_timeout);
    let Some(timeout) = timeout else {
        return next.run(request).await;
    };
    match tokio::time::timeout(timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => Status::deadline_exceeded(format!(
            "the call's deadline ({timeout:?}, grpc-timeout) passed before it was answered"
        ))
        .into_http(),
    }
}

/// A `grpc-timeout` value: at most 8 ASCII digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`), as
/// gRPC over HTTP/2 defines it; `None` for anything else (the call then runs without one, as
/// tonic's server treated an invalid value).
fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    let (digits, unit) = value.split_at_checked(value.len().checked_sub(1)?)?;
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeout_values() {
        assert_eq!(parse_grpc_timeout("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_grpc_timeout("3M"), Some(Duration::from_secs(180)));
        assert_eq!(
            parse_grpc_timeout("99999999S"),
            Some(Duration::from_secs(99_999_999))
        );
        assert_eq!(parse_grpc_timeout("250m"), Some(Duration::from_millis(250)));
        assert_eq!(parse_grpc_timeout("7u"), Some(Duration::from_micros(7)));
        assert_eq!(parse_grpc_timeout("1n"), Some(Duration::from_nanos(1)));
        for bad in [
            "",
            "S",
            "123456789S",
            "10",
            "10s",
            "-1S",
            "1.5S",
            "١S",
            "10 S",
        ] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad:?}");
        }
    }
}
