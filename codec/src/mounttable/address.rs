//! Server address validation for Mount (§14): Vanadium `SplitAddressName` + `ParseEndpoint`.

use super::names::clean;

/// Go `net.SplitHostPort` acceptance (port not checked).
fn split_host_port_ok(hp: &str) -> bool {
    let Some(i) = hp.rfind(':') else {
        return false;
    };
    if let Some(inner) = hp.strip_prefix('[') {
        let Some(close) = hp.find(']') else {
            return false;
        };
        close + 1 == i && !inner.contains('[') && !hp[i..].contains(']')
    } else {
        !hp[..i].contains(':') && !hp.contains('[') && !hp.contains(']')
    }
}

fn unescapes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let ok = b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
            if !ok {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

/// `ParseEndpoint` acceptance.
fn endpoint_ok(ep: &str) -> bool {
    // ^(?:\((.*)\)@)?([^@]+)$ — the last group holds no '@', so it starts after the last '@'.
    let host_port = match ep.rfind('@') {
        None => Some(ep),
        Some(at) => {
            let prefix = &ep[..at];
            (prefix.len() >= 2
                && prefix.starts_with('(')
                && prefix.ends_with(')')
                && !prefix.contains('\n'))
            .then(|| &ep[at + 1..])
        }
    };
    if let Some(hp) = host_port.filter(|h| !h.is_empty()) {
        return split_host_port_ok(hp);
    }
    let s = ep.strip_suffix("@@").unwrap_or(ep);
    let s = s.strip_prefix('@').unwrap_or(s);
    let parts: alloc::vec::Vec<&str> = s.split('@').collect();
    let version_ok = !parts[0].is_empty()
        && parts[0].bytes().all(|b| b.is_ascii_digit())
        && parts[0].parse::<u16>().is_ok_and(|v| v == 6);
    if !version_ok || parts.len() < 6 {
        return false;
    }
    unescapes(parts[2])
        && (parts[3].is_empty() || parts[3].split(',').all(unescapes))
        && (parts[4].is_empty()
            || (parts[4].len() == 32 && parts[4].bytes().all(|b| b.is_ascii_hexdigit())))
        && matches!(parts[5], "" | "m" | "s" | "l")
}

/// Whether Mount accepts `server` (§14). Non-rooted `host:port` is accepted (quirk 5).
pub fn validate_server(server: &str) -> bool {
    if server.starts_with('/') {
        let cleaned = clean(server);
        let rest = cleaned.trim_start_matches('/');
        let addr: &str = if rest.is_empty() {
            ""
        } else if rest.starts_with('@') {
            match rest.find("@@/") {
                Some(i) => &rest[..i + 2],
                None => rest,
            }
        } else if rest.starts_with('(') {
            match rest.find(")@") {
                Some(i) => match rest[i + 2..].find('/') {
                    Some(j) => &rest[..i + 2 + j],
                    None => rest,
                },
                None => rest.split('/').next().unwrap_or(""),
            }
        } else {
            rest.split('/').next().unwrap_or("")
        };
        endpoint_ok(addr)
    } else {
        endpoint_ok(server)
    }
}
