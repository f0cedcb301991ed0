//! Row keys as labelled byte runs, for people: the key inspector colours a key by its segments
//! and names what each one means. Each schema's key module builds a key's segments next to its
//! decoder, so a layout is stated in one module; this one only holds the type and a builder
//! that keeps segments contiguous.

use alloc::vec::Vec;

/// One run of a row key's bytes: `key[start..end]` encodes `field`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySegment {
    /// First byte of the run.
    pub start: usize,
    /// One past the last byte of the run.
    pub end: usize,
    /// The field the bytes encode (`hash`, `shard`, `tile key`, …): a short name, shared by
    /// the segments of the same field across schemas where the meaning is the same.
    pub field: &'static str,
    /// What the bytes mean, one sentence.
    pub meaning: &'static str,
}

/// Builds contiguous segments from a key's first byte: each [`Segments::push`] starts where
/// the previous one ended, so no byte is left out or counted twice.
#[derive(Debug, Default)]
pub struct Segments {
    at: usize,
    out: Vec<KeySegment>,
}

impl Segments {
    /// No segments yet, at byte 0.
    pub fn new() -> Segments {
        Segments::default()
    }

    /// The next `len` bytes encode `field`; an empty run adds nothing.
    pub fn push(&mut self, len: usize, field: &'static str, meaning: &'static str) -> &mut Self {
        if len > 0 {
            self.out.push(KeySegment {
                start: self.at,
                end: self.at + len,
                field,
                meaning,
            });
            self.at += len;
        }
        self
    }

    /// The segments, covering bytes `0..` the sum of their lengths.
    pub fn finish(self) -> Vec<KeySegment> {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_contiguous_and_skip_empty_runs() {
        let mut s = Segments::new();
        s.push(2, "a", "first")
            .push(0, "empty", "none")
            .push(3, "b", "second");
        let out = s.finish();
        assert_eq!(
            out.iter()
                .map(|g| (g.start, g.end, g.field))
                .collect::<Vec<_>>(),
            [(0, 2, "a"), (2, 5, "b")]
        );
    }
}
