//! Production's status codes for requests that never reach a handler: tonic answers a request
//! message that does not decode with `INTERNAL` and one over the size limit with
//! `OUT_OF_RANGE`; Cloud Bigtable answers `INVALID_ARGUMENT` and `RESOURCE_EXHAUSTED` (gRPC's
//! code for a message larger than the receiver allows). [`ProductionCodes`] wraps a service and
//! rewrites those two answers, recognised by tonic's own messages, before they are sent.

use std::task::{Context, Poll};

use futures_util::TryFutureExt;
use futures_util::future::MapOk;
use tonic::codegen::{Service, http};
use tonic::server::NamedService;
use tonic::{Code, Status};

/// How tonic's prost codec begins the message of a request it could not decode
/// (`prost::DecodeError`'s text).
const UNDECODABLE: &str = "failed to decode Protobuf message";
/// How tonic begins the message of a request over `max_decoding_message_size`.
const TOO_LARGE: &str = "Error, decoded message length too large";

/// A gRPC service whose decode and size-limit failures carry production's codes.
#[derive(Clone, Debug)]
pub(crate) struct ProductionCodes<S>(pub(crate) S);

impl<S: NamedService> NamedService for ProductionCodes<S> {
    const NAME: &'static str = S::NAME;
}

/// The rewrite of a response with body `B`.
type Rewrite<B> = fn(http::Response<B>) -> http::Response<B>;

impl<S, B, RB> Service<http::Request<B>> for ProductionCodes<S>
where
    S: Service<http::Request<B>, Response = http::Response<RB>>,
{
    type Response = http::Response<RB>;
    type Error = S::Error;
    type Future = MapOk<S::Future, Rewrite<RB>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        self.0.call(request).map_ok(production_code as Rewrite<RB>)
    }
}

/// The response with production's code if it is one of tonic's decode or size answers. Those
/// come before any message, so their status is in the headers (a trailers-only response).
fn production_code<B>(mut response: http::Response<B>) -> http::Response<B> {
    let Some(status) = Status::from_header_map(response.headers()) else {
        return response;
    };
    let code = match status.code() {
        Code::Internal if status.message().starts_with(UNDECODABLE) => Code::InvalidArgument,
        Code::OutOfRange if status.message().starts_with(TOO_LARGE) => Code::ResourceExhausted,
        _ => return response,
    };
    // Only fails for a message that cannot be a header value, which tonic's own was.
    let _ = Status::new(code, status.message()).add_header(response.headers_mut());
    response
}
