//! Where a connection goes: the project, the instance, and either the emulator (plaintext, no
//! credentials) or Cloud Bigtable (TLS, bearer token), at Google's endpoints or at an endpoint
//! override. Parsed from
//! `bigtable://PROJECT/INSTANCE[?emulator=HOST:PORT|?endpoint=https://HOST[:PORT][&ca=FILE]][&app_profile=ID]`,
//! with `BIGTABLE_EMULATOR_HOST` as the fallback emulator address, as Google's clients do.

use std::path::PathBuf;

/// The Cloud Bigtable data API endpoint.
pub const CLOUD_DATA_ENDPOINT: &str = "https://bigtable.googleapis.com";
/// The Cloud Bigtable table admin API endpoint.
pub const CLOUD_ADMIN_ENDPOINT: &str = "https://bigtableadmin.googleapis.com";
/// The environment variable naming an emulator (`HOST:PORT`).
pub const EMULATOR_HOST_ENV: &str = "BIGTABLE_EMULATOR_HOST";

/// A `bigtable://` location that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad Bigtable location {url:?}: {reason} (expected bigtable://PROJECT/INSTANCE[?emulator=HOST:PORT|?endpoint=https://HOST[:PORT][&ca=FILE]][&app_profile=ID])"
)]
pub struct TargetError {
    /// The text given.
    pub url: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Which server a connection talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A local emulator at `HOST:PORT`: plaintext HTTP/2, no credentials.
    Emulator(String),
    /// Cloud Bigtable: TLS to the Google endpoints, bearer token on every call.
    Cloud,
    /// Cloud Bigtable's API at another address (`?endpoint=`), as Google's clients allow an
    /// endpoint override (a private endpoint, a proxy, a test server): TLS and bearer tokens as
    /// on [`Endpoint::Cloud`], data and admin calls both to `url`.
    Custom {
        /// `https://HOST[:PORT]`.
        url: String,
        /// A PEM file of extra trust roots for this endpoint (`&ca=`), beside the system's.
        ca_file: Option<PathBuf>,
    },
}

/// A project, an instance and an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The Google Cloud project id.
    pub project: String,
    /// The Bigtable instance id.
    pub instance: String,
    /// Emulator or cloud.
    pub endpoint: Endpoint,
    /// The app profile sent when a request names none (empty = the instance default).
    pub app_profile_id: String,
}

impl Target {
    /// An instance on an emulator at `host` (`HOST:PORT`).
    pub fn emulator(host: impl Into<String>, project: &str, instance: &str) -> Target {
        Target {
            project: project.to_string(),
            instance: instance.to_string(),
            endpoint: Endpoint::Emulator(host.into()),
            app_profile_id: String::new(),
        }
    }

    /// An instance on Cloud Bigtable.
    pub fn cloud(project: &str, instance: &str) -> Target {
        Target {
            project: project.to_string(),
            instance: instance.to_string(),
            endpoint: Endpoint::Cloud,
            app_profile_id: String::new(),
        }
    }

    /// Parses a `bigtable://` location, taking the emulator from `?emulator=` or else from
    /// `BIGTABLE_EMULATOR_HOST`.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let env = std::env::var(EMULATOR_HOST_ENV).ok();
        Target::parse_with_emulator_env(url, env.as_deref().filter(|h| !h.is_empty()))
    }

    /// [`Target::parse`] with the environment's emulator address passed in (for tests).
    pub fn parse_with_emulator_env(
        url: &str,
        env_emulator: Option<&str>,
    ) -> Result<Target, TargetError> {
        let err = |reason| TargetError {
            url: url.to_string(),
            reason,
        };
        let rest = url
            .strip_prefix("bigtable://")
            .ok_or_else(|| err("must start with bigtable://"))?;
        let (path, query) = match rest.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (rest, None),
        };
        let (project, instance) = path
            .trim_end_matches('/')
            .split_once('/')
            .ok_or_else(|| err("missing /INSTANCE"))?;
        let id_ok = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
        };
        if !id_ok(project) {
            return Err(err("bad project id"));
        }
        if !id_ok(instance) {
            return Err(err("bad instance id"));
        }
        let mut target = Target::cloud(project, instance);
        let (mut emulator, mut endpoint, mut ca_file) = (None, None, None);
        for pair in query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter(|p| !p.is_empty())
        {
            match pair.split_once('=') {
                Some(("emulator", host)) if !host.is_empty() => emulator = Some(host),
                Some(("endpoint", url)) if !url.is_empty() => endpoint = Some(url),
                Some(("ca", file)) if !file.is_empty() => ca_file = Some(PathBuf::from(file)),
                Some(("app_profile", id)) => target.app_profile_id = id.to_string(),
                _ => {
                    return Err(err(
                        "unknown query parameter (emulator=, endpoint=, ca=, app_profile=)",
                    ));
                }
            }
        }
        target.endpoint = match (emulator, endpoint, ca_file) {
            (Some(_), Some(_), _) => return Err(err("emulator= and endpoint= exclude each other")),
            (None, Some(url), ca_file) => Endpoint::Custom {
                url: https_url(url).ok_or_else(|| {
                    err("endpoint= must be https://HOST[:PORT] or HOST[:PORT] (plaintext: emulator=)")
                })?,
                ca_file,
            },
            (_, None, Some(_)) => return Err(err("ca= goes with endpoint=")),
            (Some(host), None, None) => Endpoint::Emulator(host.to_string()),
            // An explicit endpoint override wins over the environment's emulator.
            (None, None, None) => match env_emulator {
                Some(host) => Endpoint::Emulator(host.to_string()),
                None => Endpoint::Cloud,
            },
        };
        Ok(target)
    }

    /// The same endpoint, another instance (the emulator accepts any name, so tests use one
    /// instance per case as a fresh namespace).
    pub fn with_instance(&self, project: &str, instance: &str) -> Target {
        Target {
            project: project.to_string(),
            instance: instance.to_string(),
            ..self.clone()
        }
    }

    /// `projects/P/instances/I`.
    pub fn instance_name(&self) -> String {
        format!("projects/{}/instances/{}", self.project, self.instance)
    }

    /// `projects/P/instances/I/tables/T`.
    pub fn table_name(&self, table: &str) -> String {
        format!("{}/tables/{table}", self.instance_name())
    }

    /// The location as a `bigtable://` URL (parses back to the same target).
    pub fn to_url(&self) -> String {
        let mut url = format!("bigtable://{}/{}", self.project, self.instance);
        let mut sep = '?';
        match &self.endpoint {
            Endpoint::Emulator(host) => {
                url.push_str(&format!("{sep}emulator={host}"));
                sep = '&';
            }
            Endpoint::Custom {
                url: endpoint,
                ca_file,
            } => {
                url.push_str(&format!("{sep}endpoint={endpoint}"));
                sep = '&';
                if let Some(file) = ca_file {
                    url.push_str(&format!("&ca={}", file.display()));
                }
            }
            Endpoint::Cloud => {}
        }
        if !self.app_profile_id.is_empty() {
            url.push_str(&format!("{sep}app_profile={}", self.app_profile_id));
        }
        url
    }
}

/// An endpoint override as a URL: `https://HOST[:PORT]` as given (a trailing `/` dropped), or
/// `HOST[:PORT]` with `https://` added, as Google's clients take `HOST:PORT`. `None` for
/// another scheme, a path, or no host.
fn https_url(endpoint: &str) -> Option<String> {
    let authority = match endpoint.split_once("://") {
        Some(("https", rest)) => rest.trim_end_matches('/'),
        Some(_) => return None,
        None => endpoint.trim_end_matches('/'),
    };
    let bad = |b: u8| b.is_ascii_whitespace() || matches!(b, b'/' | b'?' | b'#' | b'@');
    (!authority.is_empty() && !authority.bytes().any(bad)).then(|| format!("https://{authority}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_locations() {
        let t =
            Target::parse_with_emulator_env("bigtable://p/i?emulator=127.0.0.1:9", None).unwrap();
        assert_eq!(t, Target::emulator("127.0.0.1:9", "p", "i"));
        assert_eq!(t.table_name("t"), "projects/p/instances/i/tables/t");
        assert_eq!(
            Target::parse_with_emulator_env("bigtable://p/i", None).unwrap(),
            Target::cloud("p", "i")
        );
        let env = Target::parse_with_emulator_env("bigtable://p/i", Some("h:1")).unwrap();
        assert_eq!(env.endpoint, Endpoint::Emulator("h:1".into()));
        let explicit = Target::parse_with_emulator_env(
            "bigtable://p/i?emulator=h:2&app_profile=a",
            Some("h:1"),
        )
        .unwrap();
        assert_eq!(explicit.endpoint, Endpoint::Emulator("h:2".into()));
        assert_eq!(explicit.app_profile_id, "a");
        assert_eq!(
            Target::parse_with_emulator_env(&explicit.to_url(), None).unwrap(),
            explicit
        );
        // An endpoint override: TLS there, with extra trust roots; it wins over the
        // environment's emulator, and round-trips.
        let custom = Target::parse_with_emulator_env(
            "bigtable://p/i?endpoint=https://127.0.0.1:8443/&ca=/tmp/ca.pem",
            Some("h:1"),
        )
        .unwrap();
        assert_eq!(
            custom.endpoint,
            Endpoint::Custom {
                url: "https://127.0.0.1:8443".into(),
                ca_file: Some(PathBuf::from("/tmp/ca.pem")),
            }
        );
        assert_eq!(
            Target::parse_with_emulator_env(&custom.to_url(), None).unwrap(),
            custom
        );
        let bare = Target::parse_with_emulator_env("bigtable://p/i?endpoint=bt.example:443", None)
            .unwrap();
        assert_eq!(
            bare.endpoint,
            Endpoint::Custom {
                url: "https://bt.example:443".into(),
                ca_file: None,
            }
        );
        for bad in [
            "bigtable://p",
            "bigtable:///i",
            "http://p/i",
            "bigtable://p/i?x=1",
            "bigtable://p/i?endpoint=http://h:1",
            "bigtable://p/i?endpoint=https://h:1/path",
            "bigtable://p/i?endpoint=https://h:1&emulator=h:2",
            "bigtable://p/i?emulator=h:2&ca=x.pem",
            "bigtable://p/i?ca=x.pem",
        ] {
            assert!(Target::parse_with_emulator_env(bad, None).is_err(), "{bad}");
        }
    }
}
