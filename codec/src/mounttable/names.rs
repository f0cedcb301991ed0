//! Name functions of §4.1 (Vanadium `naming.Clean`/`Join`, Go `path.Split`/`Dir`/`Clean`) and
//! the operation-name normalisation of §4.3.

use alloc::string::String;
use alloc::vec::Vec;

/// `naming.Clean`: collapse every `//` into `/`; remove one trailing `/` unless the result is `/`.
pub fn clean(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_clean(&mut out, "", s);
    out
}

/// Appends `clean(prefix ‖ s)` to `out` without building `prefix ‖ s` (the row key cleans
/// `"/" + name` straight into the key). `/` is ASCII, so whole runs between slashes are copied.
pub(crate) fn push_clean(out: &mut String, prefix: &str, s: &str) {
    let start = out.len();
    let joint_doubles = prefix.ends_with('/') && s.starts_with('/');
    if !joint_doubles && !has_double_slash(prefix) && !has_double_slash(s) {
        // Nothing to collapse (the usual case): copy both whole.
        out.push_str(prefix);
        out.push_str(s);
    } else {
        for part in [prefix, s] {
            let mut run = 0;
            for (i, &b) in part.as_bytes().iter().enumerate() {
                if b == b'/' {
                    out.push_str(&part[run..i]);
                    if !out[start..].ends_with('/') {
                        out.push('/');
                    }
                    run = i + 1;
                }
            }
            out.push_str(&part[run..]);
        }
    }
    if out.len() - start > 1 && out[start..].ends_with('/') {
        out.pop();
    }
}

fn has_double_slash(s: &str) -> bool {
    s.as_bytes().windows(2).any(|w| w == b"//")
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

    /// `naming.Clean` char by char, as the spec words it: the reference for [`push_clean`].
    fn clean_reference(s: &str) -> String {
        let mut out = String::new();
        let mut prev_slash = false;
        for ch in s.chars() {
            if ch == '/' && prev_slash {
                continue;
            }
            prev_slash = ch == '/';
            out.push(ch);
        }
        if out != "/" && out.ends_with('/') {
            out.pop();
        }
        out
    }

    #[test]
    fn push_clean_equals_reference() {
        // Every string of up to 5 symbols over {/, a, é}, with and without the "/" prefix.
        let symbols = ["/", "a", "é"];
        let mut inputs = alloc::vec![String::new()];
        let mut frontier = inputs.clone();
        for _ in 0..5 {
            frontier = frontier
                .iter()
                .flat_map(|s| symbols.iter().map(move |c| alloc::format!("{s}{c}")))
                .collect();
            inputs.extend(frontier.iter().cloned());
        }
        for s in &inputs {
            assert_eq!(clean(s), clean_reference(s), "{s:?}");
            for prefix in ["", "/", "x", "x/"] {
                let mut out = String::from("00000000");
                push_clean(&mut out, prefix, s);
                let want = clean_reference(&alloc::format!("{prefix}{s}"));
                assert_eq!(out, alloc::format!("00000000{want}"), "{prefix:?} {s:?}");
            }
        }
    }

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
