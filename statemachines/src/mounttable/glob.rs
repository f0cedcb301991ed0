//! Glob patterns (`v23/glob`) and Go's `path.Match` for one element (§13.1).

use alloc::string::String;
use alloc::vec::Vec;

/// A parsed glob: elements, and whether a trailing `...` made it recursive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    elems: Vec<String>,
    recursive: bool,
}

/// Go's `path.ErrBadPattern`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadPattern;

impl Glob {
    /// Parses a pattern; a leading `/` or a malformed element is [`BadPattern`].
    pub fn parse(pattern: &str) -> Result<Glob, BadPattern> {
        if pattern.starts_with('/') {
            return Err(BadPattern);
        }
        if pattern.is_empty() {
            return Ok(Glob {
                elems: Vec::new(),
                recursive: false,
            });
        }
        let mut elems: Vec<String> = pattern.split('/').map(String::from).collect();
        let mut recursive = false;
        if elems.last().is_some_and(|l| l == "..." || l == "***") {
            elems.pop();
            recursive = true;
        }
        for e in &elems {
            if e.is_empty() || !element_is_well_formed(e.as_bytes()) {
                return Err(BadPattern);
            }
        }
        Ok(Glob { elems, recursive })
    }

    /// Number of elements (`Len()`).
    pub fn elements(&self) -> usize {
        self.elems.len()
    }

    /// Not recursive and no elements.
    pub fn is_empty(&self) -> bool {
        !self.recursive && self.elems.is_empty()
    }

    /// Whether the first element matches `name`.
    pub fn head_matches(&self, name: &str) -> bool {
        match self.elems.first() {
            Some(e) => path_match(e.as_bytes(), name.as_bytes()).unwrap_or(false),
            None => self.recursive,
        }
    }

    /// The remaining elements, same recursion.
    pub fn tail(&self) -> Glob {
        Glob {
            elems: self
                .elems
                .get(1..)
                .map(<[String]>::to_vec)
                .unwrap_or_default(),
            recursive: self.recursive,
        }
    }
}

/// No dangling `\` and no unclosed `[`.
fn element_is_well_formed(e: &[u8]) -> bool {
    let mut i = 0;
    let mut in_class = false;
    while i < e.len() {
        match e[i] {
            b'\\' => {
                if i + 1 >= e.len() {
                    return false;
                }
                i += 1;
            }
            b'[' => in_class = true,
            b']' => in_class = false,
            _ => {}
        }
        i += 1;
    }
    !in_class
}

fn decode_rune(s: &[u8]) -> (u32, usize) {
    if s.is_empty() {
        return (0xfffd, 0);
    }
    let n = match s[0] {
        0x00..=0x7f => return (u32::from(s[0]), 1),
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return (0xfffd, 1),
    };
    match s.get(..n).and_then(|b| core::str::from_utf8(b).ok()) {
        Some(t) => (t.chars().next().map_or(0xfffd, u32::from), n),
        None => (0xfffd, 1),
    }
}

fn scan_chunk(pattern: &[u8]) -> (bool, &[u8], &[u8]) {
    let mut p = pattern;
    let mut star = false;
    while p.first() == Some(&b'*') {
        p = &p[1..];
        star = true;
    }
    let mut in_range = false;
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            b'\\' if i + 1 < p.len() => i += 1,
            b'[' => in_range = true,
            b']' => in_range = false,
            b'*' if !in_range => break,
            _ => {}
        }
        i += 1;
    }
    (star, &p[..i], &p[i..])
}

fn get_esc(chunk: &[u8]) -> Result<(u32, &[u8]), BadPattern> {
    if chunk.is_empty() || chunk[0] == b'-' || chunk[0] == b']' {
        return Err(BadPattern);
    }
    let mut c = chunk;
    if c[0] == b'\\' {
        c = &c[1..];
        if c.is_empty() {
            return Err(BadPattern);
        }
    }
    let (r, n) = decode_rune(c);
    if r == 0xfffd && n == 1 {
        return Err(BadPattern);
    }
    let rest = &c[n..];
    if rest.is_empty() {
        return Err(BadPattern);
    }
    Ok((r, rest))
}

fn match_chunk<'a>(mut chunk: &[u8], mut s: &'a [u8]) -> Result<Option<&'a [u8]>, BadPattern> {
    let mut failed = false;
    while !chunk.is_empty() {
        if !failed && s.is_empty() {
            failed = true;
        }
        match chunk[0] {
            b'[' => {
                let mut r = 0;
                if !failed {
                    let (rr, n) = decode_rune(s);
                    r = rr;
                    s = &s[n..];
                }
                chunk = &chunk[1..];
                let mut negated = false;
                if chunk.first() == Some(&b'^') {
                    negated = true;
                    chunk = &chunk[1..];
                }
                let mut matched = false;
                let mut nrange = 0;
                loop {
                    if chunk.first() == Some(&b']') && nrange > 0 {
                        chunk = &chunk[1..];
                        break;
                    }
                    let (lo, rest) = get_esc(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if chunk.first() == Some(&b'-') {
                        let (h, rest) = get_esc(&chunk[1..])?;
                        hi = h;
                        chunk = rest;
                    }
                    if lo <= r && r <= hi {
                        matched = true;
                    }
                    nrange += 1;
                }
                if matched == negated {
                    failed = true;
                }
            }
            b'?' => {
                if !failed {
                    if s[0] == b'/' {
                        failed = true;
                    }
                    let (_, n) = decode_rune(s);
                    s = &s[n..];
                }
                chunk = &chunk[1..];
            }
            c => {
                let lit = if c == b'\\' {
                    chunk = &chunk[1..];
                    match chunk.first() {
                        Some(&b) => b,
                        None => return Err(BadPattern),
                    }
                } else {
                    c
                };
                if !failed {
                    if lit != s[0] {
                        failed = true;
                    }
                    s = &s[1..];
                }
                chunk = &chunk[1..];
            }
        }
    }
    Ok((!failed).then_some(s))
}

/// Go `path.Match(pattern, name)`.
pub fn path_match(pattern: &[u8], name: &[u8]) -> Result<bool, BadPattern> {
    let mut pattern = pattern;
    let mut name = name;
    'outer: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            return Ok(!name.contains(&b'/'));
        }
        let first = match_chunk(chunk, name);
        if let Ok(Some(t)) = first
            && (t.is_empty() || !pattern.is_empty())
        {
            name = t;
            continue;
        }
        first?;
        if star {
            let mut i = 0;
            while i < name.len() && name[i] != b'/' {
                if let Some(t) = match_chunk(chunk, &name[i + 1..])? {
                    if pattern.is_empty() && !t.is_empty() {
                        i += 1;
                        continue;
                    }
                    name = t;
                    continue 'outer;
                }
                i += 1;
            }
        }
        while !pattern.is_empty() {
            let (_, chunk, rest) = scan_chunk(pattern);
            pattern = rest;
            match_chunk(chunk, b"")?;
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_match_table() {
        let cases: &[(&str, &str, Result<bool, BadPattern>)] = &[
            ("abc", "abc", Ok(true)),
            ("*", "abc", Ok(true)),
            ("*c", "abc", Ok(true)),
            ("a*", "a", Ok(true)),
            ("a*/b", "abc/b", Ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", Ok(true)),
            ("a*b?c*x", "abxbbxdbxebxczzx", Ok(true)),
            ("a*b?c*x", "abxbbxdbxebxczzy", Ok(false)),
            ("ab[c]", "abc", Ok(true)),
            ("ab[b-d]", "abc", Ok(true)),
            ("ab[^c]", "abc", Ok(false)),
            ("a\\*b", "a*b", Ok(true)),
            ("a?b", "a☺b", Ok(true)),
            ("[a-ζ]*", "α", Ok(true)),
            ("[\\-]", "-", Ok(true)),
            ("[", "a", Err(BadPattern)),
            ("[^", "a", Err(BadPattern)),
            ("a[", "x", Err(BadPattern)),
            ("*x", "xxx", Ok(true)),
            ("o*", "one", Ok(true)),
            ("o*", "in", Ok(false)),
        ];
        for (p, n, want) in cases {
            assert_eq!(path_match(p.as_bytes(), n.as_bytes()), *want, "{p} {n}");
        }
        assert!(Glob::parse("/x").is_err());
        assert!(Glob::parse("a/[b").is_err());
        assert!(Glob::parse("a//b").is_err());
        let g = Glob::parse("*/...").unwrap();
        assert_eq!(g.elements(), 1);
        assert!(g.tail().head_matches("anything"));
    }
}
