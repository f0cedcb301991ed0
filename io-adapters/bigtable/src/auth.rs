//! Credentials for Cloud Bigtable: a [`TokenProvider`] hands out OAuth2 access tokens, and the
//! request headers that carry them (`authorization: Bearer …`, and `x-goog-user-project` when
//! a quota project is configured), which the connection adds to every call. The emulator
//! needs none.
//!
//! [`StaticToken`] serves a token obtained elsewhere (e.g. `gcloud auth print-access-token`);
//! [`crate::credentials::GoogleCredentials`] gets them as Google's client libraries do (Application
//! Default Credentials through `google-cloud-auth`).

use std::future::Future;
use std::pin::Pin;

use rowkit_codec::model::Code;
use rowkit_codec::validate::is_bearer_token;
use rowkit_statemachines::StoreError;
use tonic::codegen::http::{HeaderMap, HeaderValue, header::AUTHORIZATION};

/// A boxed future returned by [`TokenProvider::token`] (object-safe async).
pub type TokenFuture<'a> = Pin<Box<dyn Future<Output = Result<String, StoreError>> + Send + 'a>>;

/// A boxed future returned by [`TokenProvider::headers`] (object-safe async).
pub type HeadersFuture<'a> =
    Pin<Box<dyn Future<Output = Result<HeaderMap, StoreError>> + Send + 'a>>;

/// Supplies OAuth2 access tokens. Implementations cache and refresh as they see fit; the
/// connection asks before every call, so `token` should be cheap when a cached token is fresh.
pub trait TokenProvider: Send + Sync {
    /// A current access token (without the `Bearer ` prefix). Failures are reported as
    /// `UNAUTHENTICATED` by convention.
    fn token(&self) -> TokenFuture<'_>;

    /// The headers every call carries for these credentials. By default
    /// `authorization: Bearer TOKEN` from [`TokenProvider::token`]; Google's credentials add
    /// what their library adds (`x-goog-user-project` for a quota project).
    fn headers(&self) -> HeadersFuture<'_> {
        Box::pin(async move {
            let token = self.token().await?;
            // Checked here, where every provider's token becomes a header, and so at open
            // (which asks for the first token): a space, a non-ASCII character or a control
            // character would be refused, trimmed or sent as bytes no server matches.
            if !is_bearer_token(&token) {
                return Err(StoreError::new(
                    Code::InvalidArgument,
                    format!(
                        "the access token (e.g. {}) must be non-empty visible ASCII (`!` to `~`)",
                        crate::TOKEN_ENV
                    ),
                ));
            }
            let mut value =
                HeaderValue::try_from(["Bearer ", token.as_str()].concat()).map_err(|_| {
                    StoreError::new(Code::Unauthenticated, "token is not a valid header value")
                })?;
            value.set_sensitive(true);
            let mut headers = HeaderMap::with_capacity(1);
            headers.insert(AUTHORIZATION, value);
            Ok(headers)
        })
    }
}

/// A fixed token, e.g. from `gcloud auth print-access-token` or the `ROWKIT_BIGTABLE_TOKEN`
/// environment variable. It is never refreshed.
#[derive(Clone)]
pub struct StaticToken(String);

impl StaticToken {
    /// A provider that always returns `token`.
    pub fn new(token: impl Into<String>) -> StaticToken {
        StaticToken(token.into())
    }
}

impl std::fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret.
        f.write_str("StaticToken(..)")
    }
}

impl TokenProvider for StaticToken {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(std::future::ready(Ok(self.0.clone())))
    }
}
