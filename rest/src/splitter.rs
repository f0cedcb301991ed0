//! The incremental splitter for streamed responses (`rest-json.md` 5.2): a byte-level state
//! machine that cuts one JSON array of objects into its elements as the body arrives, in any
//! chunking.
//!
//! The contract is rustls' unbuffered one (`sans-io.md` 1): the caller owns the input, calls
//! [`ArraySplitter::push`] with the bytes it has not yet had consumed, and gets back how many
//! bytes were consumed and at most one complete element, which it must handle before pushing
//! again. No UTF-8 decoding is needed: every structural character is ASCII and cannot occur
//! inside a multi-byte sequence.
//!
//! ```
//! use rowkit_rest::ArraySplitter;
//! let body = br#"[{"a":"]"}, {"b":{}}]"#;
//! let mut s = ArraySplitter::new();
//! let mut elements = Vec::new();
//! for chunk in body.chunks(3) {
//!     let mut input = &chunk[..];
//!     while !input.is_empty() {
//!         let step = s.push(input).unwrap();
//!         input = &input[step.consumed..];
//!         elements.extend(step.element);
//!     }
//! }
//! s.finish().unwrap();
//! assert_eq!(elements, vec![br#"{"a":"]"}"#.to_vec(), br#"{"b":{}}"#.to_vec()]);
//! ```

use alloc::vec::Vec;

/// Default cap on one element's size (`rest-json.md` 5.2): 256 MiB.
pub const DEFAULT_MAX_ELEMENT: usize = 256 << 20;

/// Why a body is not a well-formed JSON array of objects.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SplitError {
    /// The first non-whitespace byte is not `[` (the body may be an error object instead).
    #[error(
        "streamed response does not start with '[' (found byte 0x{byte:02x} at offset {offset})"
    )]
    NotAnArray {
        /// The byte found.
        byte: u8,
        /// Its offset in the body.
        offset: u64,
    },
    /// A byte that cannot appear at this point between elements.
    #[error("unexpected byte 0x{byte:02x} at offset {offset} between array elements")]
    UnexpectedByte {
        /// The byte found.
        byte: u8,
        /// Its offset in the body.
        offset: u64,
    },
    /// Non-whitespace after the closing `]`.
    #[error("data after the end of the array at offset {offset}")]
    TrailingData {
        /// Offset of the first such byte.
        offset: u64,
    },
    /// An element grew past the cap.
    #[error("array element larger than {limit} bytes")]
    ElementTooLarge {
        /// The cap.
        limit: usize,
    },
    /// The body ended before `]` (inside an element or between elements): a dropped
    /// connection, which readers map to `UNAVAILABLE`.
    #[error("response body ended before the end of the array")]
    Truncated,
    /// [`ArraySplitter::push`] was called again after an error.
    #[error("splitter used after an error")]
    Failed,
}

impl SplitError {
    /// The status a reader reports: `UNAVAILABLE` for a truncated body (retryable), `INTERNAL`
    /// for a malformed one.
    pub fn code(&self) -> rowkit_codec::model::Code {
        match self {
            SplitError::Truncated => rowkit_codec::model::Code::Unavailable,
            _ => rowkit_codec::model::Code::Internal,
        }
    }
}

/// The result of one [`ArraySplitter::push`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Bytes of the input consumed; drop them from the front before the next push.
    pub consumed: usize,
    /// A complete element (one JSON object, bytes exactly as received), if one ended within
    /// the consumed bytes. Consumption stops right after it.
    pub element: Option<Vec<u8>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before `[`.
    Start,
    /// After `[`: an element or `]`.
    First,
    /// After an element: `,` or `]`.
    AfterElement,
    /// After `,`: an element.
    AfterComma,
    /// Inside an element.
    Element,
    /// After `]`.
    Done,
    /// An error was returned.
    Failed,
}

/// Cuts a streamed JSON array into its elements; see the module docs.
#[derive(Clone, Debug)]
pub struct ArraySplitter {
    state: State,
    /// Nesting depth of `{`/`[` inside the current element.
    depth: usize,
    in_string: bool,
    escape: bool,
    /// Bytes of the element in progress.
    buf: Vec<u8>,
    max_element: usize,
    /// Bytes consumed so far over the whole body (for error offsets).
    offset: u64,
}

impl Default for ArraySplitter {
    fn default() -> Self {
        ArraySplitter::new()
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl ArraySplitter {
    /// A splitter with the default element cap ([`DEFAULT_MAX_ELEMENT`]).
    pub fn new() -> ArraySplitter {
        ArraySplitter::with_max_element(DEFAULT_MAX_ELEMENT)
    }

    /// A splitter that rejects elements larger than `max_element` bytes.
    pub fn with_max_element(max_element: usize) -> ArraySplitter {
        ArraySplitter {
            state: State::Start,
            depth: 0,
            in_string: false,
            escape: false,
            buf: Vec::new(),
            max_element,
            offset: 0,
        }
    }

    /// Whether the closing `]` has been seen.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Whether no byte other than whitespace has been consumed yet (a caller may then treat the
    /// body as something other than an array, e.g. an error object).
    pub fn is_at_start(&self) -> bool {
        self.state == State::Start
    }

    /// Consumes bytes from the front of `input` until an element completes or the input runs
    /// out. Call again with the unconsumed rest after handling [`Split::element`].
    pub fn push(&mut self, input: &[u8]) -> Result<Split, SplitError> {
        if self.state == State::Failed {
            return Err(SplitError::Failed);
        }
        let mut i = 0;
        while i < input.len() {
            let b = input[i];
            let at = self.offset + i as u64;
            match self.state {
                State::Element => {
                    // Scan ahead inside the element without per-byte state dispatch.
                    let start = i;
                    let mut end = None;
                    while i < input.len() {
                        let b = input[i];
                        i += 1;
                        if self.in_string {
                            if self.escape {
                                self.escape = false;
                            } else if b == b'\\' {
                                self.escape = true;
                            } else if b == b'"' {
                                self.in_string = false;
                            }
                        } else {
                            match b {
                                b'"' => self.in_string = true,
                                b'{' | b'[' => self.depth += 1,
                                b'}' | b']' => {
                                    self.depth = self.depth.saturating_sub(1);
                                    if self.depth == 0 {
                                        end = Some(i);
                                        break;
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    let piece = &input[start..i];
                    if self.buf.len().saturating_add(piece.len()) > self.max_element {
                        return self.fail(SplitError::ElementTooLarge {
                            limit: self.max_element,
                        });
                    }
                    self.buf.extend_from_slice(piece);
                    if end.is_some() {
                        self.state = State::AfterElement;
                        self.offset += i as u64;
                        return Ok(Split {
                            consumed: i,
                            element: Some(core::mem::take(&mut self.buf)),
                        });
                    }
                    continue;
                }
                _ if is_ws(b) => {}
                State::Start if b == b'[' => self.state = State::First,
                State::Start => {
                    return self.fail(SplitError::NotAnArray {
                        byte: b,
                        offset: at,
                    });
                }
                State::First | State::AfterElement if b == b']' => self.state = State::Done,
                State::AfterElement if b == b',' => self.state = State::AfterComma,
                State::First | State::AfterComma if b == b'{' => {
                    // Re-scan this byte in the element state so depth counts it.
                    self.state = State::Element;
                    self.depth = 0;
                    self.in_string = false;
                    self.escape = false;
                    continue;
                }
                State::Done => return self.fail(SplitError::TrailingData { offset: at }),
                State::First | State::AfterElement | State::AfterComma => {
                    return self.fail(SplitError::UnexpectedByte {
                        byte: b,
                        offset: at,
                    });
                }
                State::Failed => return Err(SplitError::Failed),
            }
            i += 1;
        }
        self.offset += i as u64;
        Ok(Split {
            consumed: i,
            element: None,
        })
    }

    /// Ends the body: `Ok` only after the closing `]`.
    pub fn finish(&self) -> Result<(), SplitError> {
        match self.state {
            State::Done => Ok(()),
            State::Failed => Err(SplitError::Failed),
            _ => Err(SplitError::Truncated),
        }
    }

    fn fail(&mut self, e: SplitError) -> Result<Split, SplitError> {
        self.state = State::Failed;
        self.buf = Vec::new();
        Err(e)
    }

    /// Convenience for callers holding a whole chunk: pushes all of `input`, collecting every
    /// element that completes. On an error, the elements completed earlier in this `input` are
    /// dropped with it; use [`ArraySplitter::push`] to handle each one before the error.
    pub fn push_all(&mut self, mut input: &[u8]) -> Result<Vec<Vec<u8>>, SplitError> {
        let mut out = Vec::new();
        while !input.is_empty() {
            let step = self.push(input)?;
            input = &input[step.consumed..];
            out.extend(step.element);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use alloc::vec;

    fn split_by(body: &[u8], sizes: &[usize]) -> Result<Vec<Vec<u8>>, SplitError> {
        let mut s = ArraySplitter::new();
        let mut out = Vec::new();
        let mut rest = body;
        let mut k = 0;
        while !rest.is_empty() {
            let n = sizes[k % sizes.len()].clamp(1, rest.len());
            k += 1;
            out.extend(s.push_all(&rest[..n])?);
            rest = &rest[n..];
        }
        s.finish()?;
        Ok(out)
    }

    #[test]
    fn every_chunking_gives_the_same_elements() {
        let body = br#" [ {"a":"x]}\"{[","b":[1,{"c":2}]} ,
            {"e":"\\"} ,{}]  "#;
        let expected = vec![
            br#"{"a":"x]}\"{[","b":[1,{"c":2}]}"#.to_vec(),
            br#"{"e":"\\"}"#.to_vec(),
            b"{}".to_vec(),
        ];
        for n in 1..body.len() {
            assert_eq!(split_by(body, &[n]).unwrap(), expected, "chunk size {n}");
        }
        assert_eq!(split_by(body, &[1, 7, 2]).unwrap(), expected);
    }

    #[test]
    fn empty_array_and_errors() {
        assert_eq!(split_by(b"[]", &[1]).unwrap(), Vec::<Vec<u8>>::new());
        assert_eq!(split_by(b"\n[\n]\n", &[2]).unwrap(), Vec::<Vec<u8>>::new());
        assert!(matches!(
            split_by(br#"{"error":{}}"#, &[4]),
            Err(SplitError::NotAnArray {
                byte: b'{',
                offset: 0
            })
        ));
        assert_eq!(split_by(br#"[{"a":1}"#, &[3]), Err(SplitError::Truncated));
        assert_eq!(split_by(br#"[{"a":1"#, &[3]), Err(SplitError::Truncated));
        assert_eq!(split_by(b"[", &[3]), Err(SplitError::Truncated));
        assert!(matches!(
            split_by(b"[] x", &[1]),
            Err(SplitError::TrailingData { offset: 3 })
        ));
        assert!(matches!(
            split_by(b"[{},,{}]", &[1]),
            Err(SplitError::UnexpectedByte { byte: b',', .. })
        ));
        assert!(matches!(
            split_by(b"[1]", &[1]),
            Err(SplitError::UnexpectedByte { byte: b'1', .. })
        ));
        assert!(matches!(
            split_by(b"[{}{}]", &[1]),
            Err(SplitError::UnexpectedByte { byte: b'{', .. })
        ));
        assert_eq!(
            SplitError::Truncated.code(),
            rowkit_codec::model::Code::Unavailable
        );
    }

    #[test]
    fn element_cap_is_enforced_across_chunks() {
        let mut s = ArraySplitter::with_max_element(8);
        assert!(s.push_all(b"[{\"a\":").is_ok());
        assert_eq!(
            s.push_all(b"\"xyz\"}]"),
            Err(SplitError::ElementTooLarge { limit: 8 })
        );
        assert_eq!(s.push(b"]"), Err(SplitError::Failed));
        let mut s = ArraySplitter::with_max_element(8);
        assert_eq!(s.push_all(b"[{\"a\":12}]").unwrap().len(), 1);
    }

    #[test]
    fn push_stops_after_each_element() {
        let mut s = ArraySplitter::new();
        let body = b"[{},{}]";
        let step = s.push(body).unwrap();
        assert_eq!(step.consumed, 3);
        assert_eq!(step.element.as_deref(), Some(&b"{}"[..]));
        let step = s.push(&body[3..]).unwrap();
        assert_eq!(step.consumed, 3);
        let step = s.push(&body[6..]).unwrap();
        assert_eq!((step.consumed, step.element), (1, None));
        assert!(s.is_done());
    }
}
