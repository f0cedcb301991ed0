//! A gRPC status the client received, as a rowkit [`StoreError`]: the client side's reading of
//! `tonic::Status`, which tells its own transport's failures from the server's answers.

use rowkit_codec::model::Code;
use rowkit_statemachines::StoreError;

/// A gRPC status as a rowkit [`StoreError`]: same code, same message. A transport failure
/// (connection reset, refused, broken HTTP/2 stream) reaches tonic as `UNKNOWN`/`INTERNAL` with
/// a transport source; it is reported as `UNAVAILABLE` so the machines treat it as retryable,
/// which is what Google's clients do.
pub fn status_to_error(status: &tonic::Status) -> StoreError {
    let mut code = Code::from_i32(i32::from(status.code()));
    if matches!(code, Code::Unknown | Code::Internal | Code::Cancelled) && is_transport(status) {
        code = Code::Unavailable;
    }
    StoreError::new(code, status.message().to_string())
}

/// Whether the status was produced by the client's transport rather than sent by the server:
/// tonic builds those from hyper/h2 errors ("h2 protocol error: …", "transport error", a broken
/// connection), with or without an I/O error in the source chain. A server status arrives in
/// `grpc-status` trailers and never carries such a source.
fn is_transport(status: &tonic::Status) -> bool {
    let message = status.message();
    if message.starts_with("h2 protocol error") || message.starts_with("transport error") {
        return true;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        if e.is::<std::io::Error>() || e.is::<tonic::transport::Error>() {
            return true;
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_statuses_are_unavailable_server_statuses_keep_their_code() {
        let server = tonic::Status::new(tonic::Code::Internal, "boom");
        assert_eq!(status_to_error(&server).code, Code::Internal);
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let transport = tonic::Status::from_error(Box::new(io));
        assert_eq!(status_to_error(&transport).code, Code::Unavailable);
        let h2 = tonic::Status::new(
            tonic::Code::Unknown,
            "h2 protocol error: error reading a body from connection",
        );
        assert_eq!(status_to_error(&h2).code, Code::Unavailable);
        let nf = tonic::Status::new(tonic::Code::NotFound, "table t");
        assert_eq!(
            status_to_error(&nf),
            StoreError::new(Code::NotFound, "table t")
        );
    }
}
