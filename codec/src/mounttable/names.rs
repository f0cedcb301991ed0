//! Name functions of §4.1 (Vanadium `naming.Clean`/`Join`, Go `path.Split`/`Dir`/`Clean`) and
//! the operation-name normalisation of §4.3.

use alloc::string::String;
use alloc::vec::Vec;

/// `naming.Clean`: collapse every `//` into `/`; remove one trailing `/` unless the result is `/`.
pub fn clean(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_slash = false;
    for ch in s.chars() {
        if ch == '/' {
            if prev_slash {
                continue;
            }
            prev_slash = true;
        } else {
            prev_slash = false;
        }
        out.push(ch);
    }
    if out != "/" && out.ends_with('/') {
        out.pop();
    }
    out
}

/// `naming.Join`: drop leading empty elements, join the rest with `/`, then [`clean`].
pub fn join(elems: &[&str]) -> String {
    let rest: Vec<&str> = elems.iter().copied().skip_while(|e| e.is_empty()).collect();
    clean(&rest.join("/"))
}

/// Go `path.Split`: `(dir, file)` cut after the last `/`.
pub fn split(name: &str) -> (&str, &str) {
    match name.rfind('/') {
        Some(i) => (&name[..=i], &name[i + 1..]),
        None => ("", name),
    }
}

/// Go `path.Dir`: [`path_clean`] of the part before the last `/` (`"."` when there is none).
pub fn dir(name: &str) -> String {
    path_clean(split(name).0)
}

/// Go `path.Clean` (lexical: `.`, `..`, `//`, trailing `/`; empty result is `"."`).
pub fn path_clean(s: &str) -> String {
    if s.is_empty() {
        return String::from(".");
    }
    let rooted = s.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for elem in s.split('/') {
        match elem {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            e => parts.push(e),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => alloc::format!("/{body}"),
        (false, true) => String::from("."),
        (false, false) => body,
    }
}

/// §4.3: `Clean(name)` without leading `/`, then (if non-empty) [`path_clean`].
pub fn normalize_suffix(name: &str) -> String {
    let c = clean(name);
    let suffix = c.trim_start_matches('/');
    if suffix.is_empty() {
        String::new()
    } else {
        path_clean(suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_path_behaviour() {
        assert_eq!(path_clean("a/../b"), "b");
        assert_eq!(path_clean("a/.."), ".");
        assert_eq!(path_clean("/../a"), "/a");
        assert_eq!(path_clean("../../a/"), "../../a");
        assert_eq!(dir("a"), ".");
        assert_eq!(dir("a/b"), "a");
        assert_eq!(split("a/b"), ("a/", "b"));
        assert_eq!(normalize_suffix("/alpha//beta/"), "alpha/beta");
        assert_eq!(normalize_suffix("/"), "");
    }
}
