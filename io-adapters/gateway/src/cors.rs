//! CORS (`rest-json.md` 7): the browser tool and the wasm tests run on another origin than the
//! gateway, so every data call is cross-origin and preflighted. Allowed origins are echoed
//! (with `Vary: Origin`); `Authorization` is listed explicitly because `*` never covers it.
//! The layer wraps every route, so error responses carry the headers too.

use std::time::Duration;

use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::GatewayError;

/// Whether `origin` (`scheme://host[:port]`) is on this machine: `localhost`, `127.0.0.0/8`
/// or `[::1]`. The default allow-list.
pub(crate) fn is_loopback_origin(origin: &[u8]) -> bool {
    let Ok(origin) = std::str::from_utf8(origin) else {
        return false;
    };
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, _)) => h,
            None => return false,
        }
    } else {
        rest.split(':').next().unwrap_or("")
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The CORS layer for the configured origins (empty = loopback origins only).
pub(crate) fn layer(origins: &[String], has_token: bool) -> Result<CorsLayer, GatewayError> {
    let allow = if origins.is_empty() {
        AllowOrigin::predicate(|origin: &HeaderValue, _| is_loopback_origin(origin.as_bytes()))
    } else if origins.iter().any(|o| o == "*") {
        if has_token {
            return Err(GatewayError::BadOrigin {
                origin: "*".into(),
                reason: "any origin is allowed only on an open gateway (no --token); list the origins instead",
            });
        }
        AllowOrigin::any()
    } else {
        let values = origins
            .iter()
            .map(|o| {
                let o = o.trim_end_matches('/');
                if !(o.starts_with("http://") || o.starts_with("https://")) {
                    return Err(GatewayError::BadOrigin {
                        origin: o.into(),
                        reason: "expected scheme://host[:port], e.g. http://127.0.0.1:8000",
                    });
                }
                HeaderValue::from_str(o).map_err(|_| GatewayError::BadOrigin {
                    origin: o.into(),
                    reason: "not a valid header value",
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        AllowOrigin::list(values)
    };
    Ok(CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
        .allow_headers([
            AUTHORIZATION,
            CONTENT_TYPE,
            HeaderName::from_static("x-goog-request-params"),
            HeaderName::from_static("x-goog-user-project"),
        ])
        .max_age(Duration::from_secs(600)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins() {
        for yes in [
            "http://127.0.0.1:8000",
            "http://localhost",
            "https://localhost:3000",
            "http://[::1]:9",
            "http://127.1.2.3",
        ] {
            assert!(is_loopback_origin(yes.as_bytes()), "{yes}");
        }
        for no in [
            "http://example.com",
            "http://10.0.0.1:80",
            "null",
            "http://localhost.evil.com",
            "file://",
            "http://[::2]:1",
        ] {
            assert!(!is_loopback_origin(no.as_bytes()), "{no}");
        }
    }
}
