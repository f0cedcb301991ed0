//! The data endpoints (`rest-json.md` 1-6): authenticate, route by path, check method, query,
//! content type and body size, decode with `rowkit-rest`, execute on the store in a blocking
//! task, and answer with JSON — a body for unary calls, a streamed array for `readRows`,
//! `mutateRows` and `sampleRowKeys`. Every failure is a `google.rpc.Status` JSON body. The
//! table admin paths (`rowkit_rest::admin`) pass the same checks and go to `table_admin`.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method as HttpMethod, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use rowkit_store::Store;
use rowkit_rest::admin::AdminPath;
use rowkit_rest::proto3::Int32;
use rowkit_rest::wire::{ErrorBodyJson, ErrorJson};
use rowkit_rest::{Method, TableName, decode_request, encode_error, encode_response, http_status};
use rowkit_statemachines::{Code, Request, Response as StoreResponse, StoreError, Timestamp};

use crate::AppState;
use crate::serving::{self, Execution, StreamMsg};

/// The gateway's routes: data calls under `/v2/`, `/healthz`, static files elsewhere.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", axum::routing::get(healthz))
        .fallback(handle)
        .with_state(state)
}

/// `GET /healthz`: `200 ok` while the process serves, for load balancers and probes. Open
/// (no token, any `Host`): it reveals nothing but that the server is up.
async fn healthz() -> &'static str {
    "ok"
}

/// A failed call, answered as `{"error": {…}}` with `status`.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    error: StoreError,
    /// The `Allow` header of a 405.
    allow: Option<&'static str>,
}

impl ApiError {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> ApiError {
        let error = StoreError::new(code, message);
        ApiError {
            status: status_of(error.code),
            error,
            allow: None,
        }
    }

    /// `405` for a method `path_name` does not accept, with the `Allow` header.
    pub(crate) fn wrong_method(
        http_method: &HttpMethod,
        path_name: &str,
        allow: &'static str,
    ) -> ApiError {
        ApiError {
            status: StatusCode::METHOD_NOT_ALLOWED,
            error: StoreError::new(
                Code::Unimplemented,
                format!("{path_name} does not accept {http_method}"),
            ),
            allow: Some(allow),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        ApiError {
            status: status_of(error.code),
            error,
            allow: None,
        }
    }
}

fn status_of(code: Code) -> StatusCode {
    StatusCode::from_u16(http_status(code)).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

pub(crate) fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = (status, body.into()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=UTF-8"),
    );
    response
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = if self.status == StatusCode::METHOD_NOT_ALLOWED {
            // `error.code` is the HTTP status; no rpc code maps to 405, so the envelope is
            // built here rather than by `encode_error`.
            let envelope = ErrorBodyJson {
                error: ErrorJson {
                    code: Int32(405),
                    message: self.error.message.clone(),
                    status: self.error.code.name().to_string(),
                    details: None,
                },
            };
            serde_json::to_vec(&envelope).unwrap_or_else(|_| encode_error(&self.error))
        } else {
            encode_error(&self.error)
        };
        let mut response = json_response(self.status, body);
        if let Some(allow) = self.allow {
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

async fn handle(
    State(state): State<AppState>,
    method: HttpMethod,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()))
        .unwrap_or("");
    if !state.hosts.allows(host) {
        let message = if host.is_empty() {
            "the request names no Host".to_string()
        } else {
            format!(
                "Host {host:?} is not this gateway's: address it by IP or localhost, or start it with --allow-host {}",
                host.rsplit_once(':').map_or(host, |(name, _)| name)
            )
        };
        return ApiError::new(Code::PermissionDenied, message).into_response();
    }
    let path = uri.path();
    // Static files are public (see `www`); only the data API authenticates.
    if path != "/v2" && !path.starts_with("/v2/") {
        if method != HttpMethod::GET && method != HttpMethod::HEAD {
            return (
                StatusCode::METHOD_NOT_ALLOWED,
                [(header::ALLOW, "GET, HEAD")],
            )
                .into_response();
        }
        return match state.www.as_deref() {
            Some(dir) => crate::www::serve(dir, path).await,
            None => crate::www::serve_embedded(state.www_files, path),
        };
    }
    match data_call(&state, &method, &uri, &headers, body).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

fn authenticate(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(token) = &state.token else {
        return Ok(());
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    Ok(serving::check_bearer(given, token, "gateway")?)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What a query string carries that the gateway reads.
#[derive(Debug, Default)]
pub(crate) struct Query {
    /// `appProfileId` (the `GET` SampleRowKeys form).
    pub(crate) app_profile: Option<String>,
    /// `view` (the admin GetTable and ListTables).
    pub(crate) view: Option<String>,
}

/// The query's `alt` (only JSON is served), `appProfileId` and `view`.
pub(crate) fn parse_query(uri: &Uri) -> Result<Query, ApiError> {
    let mut query = Query::default();
    for pair in uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (key, value) = (percent_decode(key), percent_decode(value));
        match key.as_str() {
            "alt" | "$alt" if value != "json" && value != "json;enum-encoding=int" => {
                return Err(ApiError::new(
                    Code::InvalidArgument,
                    format!("unsupported alt={value:?}: this gateway serves JSON only"),
                ));
            }
            "appProfileId" | "app_profile_id" => query.app_profile = Some(value),
            "view" => query.view = Some(value),
            _ => {}
        }
    }
    Ok(query)
}

pub(crate) fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let value = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = value.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(ApiError::new(
            Code::InvalidArgument,
            format!("Content-Type must be application/json, got {value:?}"),
        ))
    }
}

/// Reads the body chunk by chunk: the limit applies to what has arrived, and the JSON screen
/// rejects an invalid body at its first invalid byte, so neither an oversized nor an invalid
/// upload is held in memory whole.
pub(crate) async fn read_body(
    body: Body,
    headers: &HeaderMap,
    limit: usize,
) -> Result<Bytes, ApiError> {
    use http_body_util::BodyExt as _;
    let too_large = || {
        ApiError::new(
            Code::InvalidArgument,
            format!("request body is larger than this gateway's limit of {limit} bytes"),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut body = body;
    let mut screen = crate::body::JsonScreen::default();
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ApiError::new(
                Code::InvalidArgument,
                format!("could not read the request body: {e}"),
            )
        })?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers: nothing of the JSON
        };
        if bytes.len() + data.len() > limit {
            return Err(too_large());
        }
        screen
            .feed(&data)
            .map_err(|e| ApiError::new(Code::InvalidArgument, e.to_string()))?;
        bytes.extend_from_slice(&data);
    }
    Ok(Bytes::from(bytes))
}

async fn data_call(
    state: &AppState,
    http_method: &HttpMethod,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    authenticate(state, headers)?;
    if uri.path() == crate::backup::BACKUP_PATH {
        return backup_call(state, http_method, headers, body).await;
    }
    if let Some(path) = AdminPath::parse(uri.path()) {
        return crate::table_admin::call(state, path, http_method, uri, headers, body).await;
    }
    let Some((table, method)) = TableName::parse_path(uri.path()) else {
        return Err(ApiError::new(
            Code::NotFound,
            format!(
                "unknown path {:?}: expected /v2/projects/{{project}}/instances/{{instance}}/tables/{{table}}:{{method}} with method readRows, mutateRow, mutateRows, checkAndMutateRow, readModifyWriteRow or sampleRowKeys, or the table admin paths …/tables, …/tables/{{table}} and …/tables/{{table}}:modifyColumnFamilies",
                uri.path()
            ),
        ));
    };
    let get_allowed = method == Method::SampleRowKeys;
    let allowed =
        *http_method == HttpMethod::POST || (get_allowed && *http_method == HttpMethod::GET);
    if !allowed {
        return Err(ApiError::wrong_method(
            http_method,
            method.name(),
            if get_allowed { "GET, POST" } else { "POST" },
        ));
    }
    let app_profile = parse_query(uri)?.app_profile;
    let mut request = if *http_method == HttpMethod::GET {
        decode_request(method, &table, b"").map_err(StoreError::from)?
    } else {
        check_content_type(headers)?;
        let bytes = read_body(body, headers, state.max_body_bytes).await?;
        decode_request(method, &table, &bytes).map_err(StoreError::from)?
    };
    if let (Request::SampleRowKeys(r), Some(profile)) = (&mut request, app_profile)
        && r.app_profile_id.is_empty()
    {
        r.app_profile_id = profile;
    }
    let now = state.clock.now();
    if method.is_streaming() {
        stream_call(state.store.clone(), request, now).await
    } else {
        unary_call(state.store.clone(), request, now).await
    }
}

/// `POST /v2/rowkit:backup` ([`crate::backup`]).
async fn backup_call(
    state: &AppState,
    http_method: &HttpMethod,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    if *http_method != HttpMethod::POST {
        return Err(ApiError::wrong_method(http_method, "rowkit:backup", "POST"));
    }
    check_content_type(headers)?;
    let bytes = read_body(body, headers, state.max_body_bytes).await?;
    let answer =
        crate::backup::backup(state.store.clone(), state.backup_dir.clone(), &bytes).await?;
    Ok(json_response(StatusCode::OK, answer))
}

async fn unary_call(
    store: Arc<dyn Store>,
    request: Request,
    now: Timestamp,
) -> Result<Response, ApiError> {
    let reply = serving::unary(store, request, now).await?;
    let body = encode_response(&reply).map_err(|e| ApiError::new(Code::Internal, e.to_string()))?;
    Ok(json_response(StatusCode::OK, body))
}

/// Each part as its JSON element. A ReadRows scan marker (a part with only
/// `last_scanned_row_key`) is not sent: a JSON caller has no way to declare it takes them
/// (gRPC's `bigtable-features`), so the gateway answers one element per row, as before.
fn encode_part(part: StoreResponse) -> Result<Vec<Vec<u8>>, StoreError> {
    if let StoreResponse::ReadRowsPart(p) = &part
        && p.chunks.is_empty()
    {
        return Ok(Vec::new());
    }
    encode_response(&part)
        .map(|bytes| vec![bytes])
        .map_err(|e| StoreError::new(Code::Internal, e.to_string()))
}

async fn stream_call(
    store: Arc<dyn Store>,
    request: Request,
    now: Timestamp,
) -> Result<Response, ApiError> {
    let mut rx = serving::stream(store, request, now, Execution::Wire, encode_part);
    // Errors before the first element are ordinary error responses (`rest-json.md` 5.1).
    let first = match rx.recv().await {
        Some(StreamMsg::Failed(e)) => return Err(e.into()),
        Some(StreamMsg::Part(bytes)) => {
            let mut chunk = Vec::with_capacity(bytes.len() + 1);
            chunk.push(b'[');
            chunk.extend_from_slice(&bytes);
            chunk
        }
        Some(StreamMsg::End) => {
            // Still a stream: streamed responses never carry Content-Length (`rest-json.md` 2).
            let empty = futures_util::stream::once(async {
                Ok::<_, std::io::Error>(Bytes::from_static(b"[]"))
            });
            return Ok(json_response(StatusCode::OK, Body::from_stream(empty)));
        }
        None => {
            return Err(ApiError::new(
                Code::Internal,
                "the store task ended without a reply",
            ));
        }
    };
    // After the first element: `,` + element per part; a failure becomes a final
    // `{"error": …}` element; a task that vanishes aborts the body (the reader sees a
    // truncated array, i.e. UNAVAILABLE).
    let rest = futures_util::stream::unfold(Some(rx), |rx| async move {
        let mut rx = rx?;
        let chunk = match rx.recv().await {
            Some(StreamMsg::Part(bytes)) => {
                let mut chunk = Vec::with_capacity(bytes.len() + 2);
                chunk.extend_from_slice(b"\n,");
                chunk.extend_from_slice(&bytes);
                return Some((Ok(Bytes::from(chunk)), Some(rx)));
            }
            Some(StreamMsg::Failed(e)) => {
                let mut chunk = b"\n,".to_vec();
                chunk.extend_from_slice(&encode_error(&e));
                chunk.extend_from_slice(b"]");
                Ok(Bytes::from(chunk))
            }
            Some(StreamMsg::End) => Ok(Bytes::from_static(b"\n]")),
            None => Err(std::io::Error::other("the store task ended mid-stream")),
        };
        Some((chunk, None))
    });
    let head =
        futures_util::stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(first)) });
    use futures_util::StreamExt as _;
    Ok(json_response(
        StatusCode::OK,
        Body::from_stream(head.chain(rest)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_alt_and_profile() {
        let uri: Uri = "/x?%24alt=json%3Benum-encoding%3Dint&appProfileId=p1"
            .parse()
            .unwrap_or_default();
        let query = parse_query(&uri).ok().unwrap_or_default();
        assert_eq!(query.app_profile.as_deref(), Some("p1"));
        assert_eq!(query.view, None);
        let uri: Uri = "/x?alt=proto".parse().unwrap_or_default();
        assert!(parse_query(&uri).is_err());
        assert_eq!(percent_decode("a%3Ab%zz%4"), "a:b%zz%4");
    }
}
