//! The `Host` allow-list: a defence against DNS rebinding. A web page on `evil.example` whose
//! name the attacker re-points at 127.0.0.1 can reach a loopback gateway, token-less, with the
//! browser's same-origin blessing; its requests still name `evil.example` in `Host`. So every
//! request must name a host this gateway knows it is reached by: an IP address (a page served
//! from an IP literal cannot be the attacker's), `localhost` or a `*.localhost` name (browsers
//! resolve those to loopback themselves), or a name given with `--allow-host` (the same rule
//! as Vite's and webpack's dev servers).

/// The hosts a gateway accepts besides IP addresses and `localhost` names.
#[derive(Clone, Debug, Default)]
pub struct AllowedHosts {
    /// Lower-case names, each with or without `:port`.
    extra: Vec<String>,
}

impl AllowedHosts {
    /// IP addresses, `localhost` names and `extra` (names, `name:port`, case-insensitive).
    pub fn new(extra: &[String]) -> AllowedHosts {
        AllowedHosts {
            extra: extra.iter().map(|h| h.to_ascii_lowercase()).collect(),
        }
    }

    /// Whether a request whose `Host` (or HTTP/2 `:authority`) is `host` may be served.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let name = split_port(&host);
        if name.is_empty() {
            return false;
        }
        is_ip(name)
            || name == "localhost"
            || name.ends_with(".localhost")
            || self.extra.iter().any(|h| *h == host || *h == name)
    }
}

/// `host` without its `:port` (an IPv6 literal keeps its brackets off).
fn split_port(host: &str) -> &str {
    if let Some(v6) = host.strip_prefix('[') {
        return v6.split_once(']').map_or("", |(h, _)| h);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

fn is_ip(name: &str) -> bool {
    name.parse::<std::net::IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_literals_localhost_and_listed_names_only() {
        let hosts = AllowedHosts::new(&["Tool.Example".into(), "box:8080".into()]);
        for ok in [
            "127.0.0.1:8080",
            "10.1.2.3",
            "[::1]:80",
            "localhost:9",
            "LOCALHOST",
            "app.localhost:1",
            "tool.example:443",
            "box:8080",
        ] {
            assert!(hosts.allows(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "box:8081",
            "",
            ":80",
            "[::1",
            "127.0.0.1.evil.example",
        ] {
            assert!(!hosts.allows(bad), "{bad}");
        }
    }
}
