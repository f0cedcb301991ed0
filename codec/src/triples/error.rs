//! Typed errors of the triple codec (spec §7).

use alloc::string::String;
use alloc::vec::Vec;

use super::anchor::AnchorError;
use super::gotext::UnquoteError;

/// Which text form failed to parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// A node (`/type<id>` or `_:id`).
    Node,
    /// A predicate (`"id"@[…]`).
    Predicate,
    /// A literal (`"v"^^type:t`).
    Literal,
    /// An object (node, literal or predicate).
    Object,
    /// A whole triple.
    Triple,
}

impl core::fmt::Display for Part {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Part::Node => "node",
            Part::Predicate => "predicate",
            Part::Literal => "literal",
            Part::Object => "object",
            Part::Triple => "triple",
        })
    }
}

/// Why a text form was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Reason {
    /// Nothing left after trimming.
    #[error("empty text")]
    Empty,
    /// The first byte is not one the form allows.
    #[error("unexpected first byte")]
    BadStart,
    /// A node without `<`.
    #[error("no '<' before the id")]
    MissingId,
    /// A node type that is not `/…` without a trailing `/` and without space, TAB, LF, CR.
    #[error("invalid node type")]
    InvalidType,
    /// A node not ending with `>`.
    #[error("does not end with '>'")]
    MissingClose,
    /// An empty id, or one containing `<` or `>`.
    #[error("invalid node id")]
    InvalidId,
    /// A blank node shorter than `_:x`.
    #[error("blank node too short")]
    BlankTooShort,
    /// A predicate without `"@[`.
    #[error("no '\"@[' after the id")]
    MissingAnchorMarker,
    /// A predicate with nothing after `"@[`.
    #[error("truncated after '\"@['")]
    Truncated,
    /// The quoted predicate id is malformed.
    #[error("bad quoted id: {0:?}")]
    Unquote(UnquoteError),
    /// The anchor text is empty after stripping quotes.
    #[error("empty anchor")]
    EmptyAnchor,
    /// The anchor is not RFC 3339 as Go parses it.
    #[error(transparent)]
    Anchor(AnchorError),
    /// A literal without `"^^type:` (or with it at the start).
    #[error("no '\"^^type:' after the value")]
    MissingType,
    /// A literal type other than bool, int64, float64, text, blob.
    #[error("unknown literal type {0:?}")]
    UnknownType(String),
    /// The literal value text does not parse as its type.
    #[error("invalid {0} value")]
    BadValue(&'static str),
    /// An int64 literal outside `[−2^55, 2^55−1]`, whose UUID the original cannot compute.
    #[error("int64 value {0} outside [-2^55, 2^55-1] (the original cannot hash it)")]
    Int64OutOfRange(i64),
    /// A triple without the whitespace between subject and predicate.
    #[error("no subject/predicate separator ('>' whitespace '\"')")]
    MissingPredicateSplit,
    /// A triple without the whitespace between predicate and object.
    #[error("no predicate/object separator (']' whitespace '/' or '\"')")]
    MissingObjectSplit,
    /// The predicate/object separator comes before the predicate.
    #[error("object separator before the predicate")]
    SplitOrder,
    /// A part of a triple failed to parse.
    #[error("{0}")]
    Inner(alloc::boxed::Box<ParseError>),
}

/// A text form that failed to parse: what, why, and (a prefix of) the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid {part} {text:?}: {reason}")]
pub struct ParseError {
    /// The form being parsed.
    pub part: Part,
    /// Why it failed.
    pub reason: Reason,
    /// The offending text (lossy UTF-8, at most 200 bytes).
    pub text: String,
}

impl ParseError {
    /// An error for `part` of `text`.
    pub fn new(part: Part, reason: Reason, text: &[u8]) -> ParseError {
        let shown: Vec<u8> = text.iter().copied().take(200).collect();
        ParseError {
            part,
            reason,
            text: String::from_utf8_lossy(&shown).into_owned(),
        }
    }
}

/// Errors of the layout functions (keys, graph ids).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// A graph id longer than 3981 bytes: its triple row keys would exceed 4096 bytes.
    #[error("graph id is {0} bytes, over the limit of 3981")]
    GraphIdOverLimit(usize),
    /// A row key that is neither a triple row nor a graph row.
    #[error("not a triple or graph row key: {0}")]
    NotAKey(String),
}
