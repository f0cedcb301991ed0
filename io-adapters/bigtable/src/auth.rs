//! Credentials for Cloud Bigtable: a [`TokenProvider`] hands out OAuth2 access tokens that the
//! connection sends as `authorization: Bearer …` on every call. The emulator needs none.
//!
//! [`StaticToken`] serves a token obtained elsewhere (e.g. `gcloud auth print-access-token`);
//! [`crate::credentials::GoogleCredentials`] gets them as Google's client libraries do (Application
//! Default Credentials through `google-cloud-auth`).

use std::future::Future;
use std::pin::Pin;

use rowkit_statemachines::StoreError;

/// A boxed future returned by [`TokenProvider::token`] (object-safe async).
pub type TokenFuture<'a> = Pin<Box<dyn Future<Output = Result<String, StoreError>> + Send + 'a>>;

/// Supplies OAuth2 access tokens. Implementations cache and refresh as they see fit; the
/// connection asks before every call, so `token` should be cheap when a cached token is fresh.
pub trait TokenProvider: Send + Sync {
    /// A current access token (without the `Bearer ` prefix). Failures are reported as
    /// `UNAUTHENTICATED` by convention.
    fn token(&self) -> TokenFuture<'_>;
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
