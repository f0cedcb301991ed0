//! Where a connection goes: the project, the instance, and either the emulator (plaintext, no
//! credentials) or Cloud Bigtable (TLS, bearer token). Parsed from
//! `bigtable://PROJECT/INSTANCE[?emulator=HOST:PORT][&app_profile=ID]`, with
//! `BIGTABLE_EMULATOR_HOST` as the fallback emulator address, as Google's clients do.

/// The Cloud Bigtable data API endpoint.
pub const CLOUD_DATA_ENDPOINT: &str = "https://bigtable.googleapis.com";
/// The Cloud Bigtable table admin API endpoint.
pub const CLOUD_ADMIN_ENDPOINT: &str = "https://bigtableadmin.googleapis.com";
/// The environment variable naming an emulator (`HOST:PORT`).
pub const EMULATOR_HOST_ENV: &str = "BIGTABLE_EMULATOR_HOST";

/// A `bigtable://` location that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad Bigtable location {url:?}: {reason} (expected bigtable://PROJECT/INSTANCE[?emulator=HOST:PORT][&app_profile=ID])"
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
        if let Some(host) = env_emulator {
            target.endpoint = Endpoint::Emulator(host.to_string());
        }
        for pair in query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter(|p| !p.is_empty())
        {
            match pair.split_once('=') {
                Some(("emulator", host)) if !host.is_empty() => {
                    target.endpoint = Endpoint::Emulator(host.to_string());
                }
                Some(("app_profile", id)) => target.app_profile_id = id.to_string(),
                _ => return Err(err("unknown query parameter (emulator=, app_profile=)")),
            }
        }
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
        if let Endpoint::Emulator(host) = &self.endpoint {
            url.push_str(&format!("{sep}emulator={host}"));
            sep = '&';
        }
        if !self.app_profile_id.is_empty() {
            url.push_str(&format!("{sep}app_profile={}", self.app_profile_id));
        }
        url
    }
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
        for bad in [
            "bigtable://p",
            "bigtable:///i",
            "http://p/i",
            "bigtable://p/i?x=1",
        ] {
            assert!(Target::parse_with_emulator_env(bad, None).is_err(), "{bad}");
        }
    }
}
