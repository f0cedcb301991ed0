//! The Bigtable layout of BadWolf's driver (spec §3): families, the four index rows of a
//! triple and their qualifiers, cell timestamps, the graph row, the lookup prefixes, and the
//! decoding of row keys. This is the only module that builds or reads these keys.

use alloc::string::String;
use alloc::vec::Vec;

use sha2::{Digest, Sha256};

use super::error::KeyError;
use super::node::Node;
use super::predicate::Predicate;
use super::triple::{Object, Triple};
use super::uuid::Uuid;
use crate::model::Timestamp;
use crate::segment::{KeySegment, Segments};

/// Family of triples with an immutable predicate.
pub const FAMILY_IMMUTABLE: &str = "immutable_triple";
/// Family of triples with a temporal predicate.
pub const FAMILY_TEMPORAL: &str = "temporal_triple";
/// Family of graph rows.
pub const FAMILY_GRAPH: &str = "graph";
/// Qualifier of the graph row's cell.
pub const GRAPH_QUALIFIER: &[u8] = b"metadata";
/// Timestamp of every graph cell (quirk 2).
pub const GRAPH_CELL_TIMESTAMP: Timestamp = Timestamp(1_714_000);
/// Upper bound of the original's timestamps (µs).
pub const MAX_VALID_TIMESTAMP: i64 = 253_402_300_000_000_000;
/// The longest graph id: triple row keys are `len(g) + 115` bytes, at most 4096.
pub const MAX_GRAPH_ID_LEN: usize = 3981;
/// Bytes a triple row key adds to the graph id.
pub const TRIPLE_KEY_OVERHEAD: usize = 115;
/// The rowkit default table id.
pub const DEFAULT_TABLE: &str = "badwolf";

/// One of the four index rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Index {
    /// `g:OSP:<O>:<S>:<P'>`, qualifier `SP`.
    Osp,
    /// `g:POS:<P'>:<O>:<S>`, qualifier `OS`.
    Pos,
    /// `g:SOP:<S>:<O>:<P'>`, qualifier `OP`.
    Sop,
    /// `g:SPO:<S>:<P'>:<O>`, qualifier `PO`.
    Spo,
}

impl Index {
    /// The four indices in write order.
    pub const ALL: [Index; 4] = [Index::Osp, Index::Pos, Index::Sop, Index::Spo];

    /// The name in the key (`OSP`, …).
    pub fn name(self) -> &'static str {
        match self {
            Index::Osp => "OSP",
            Index::Pos => "POS",
            Index::Sop => "SOP",
            Index::Spo => "SPO",
        }
    }

    /// The column qualifier (the two letters after the first).
    pub fn qualifier(self) -> &'static [u8] {
        match self {
            Index::Osp => b"SP",
            Index::Pos => b"OS",
            Index::Sop => b"OP",
            Index::Spo => b"PO",
        }
    }

    fn from_name(name: &[u8]) -> Option<Index> {
        Index::ALL.into_iter().find(|i| i.name().as_bytes() == name)
    }
}

/// Rejects graph ids whose triple row keys would exceed Bigtable's 4 KiB key limit.
pub fn check_graph_id(graph: &[u8]) -> Result<(), KeyError> {
    if graph.len() > MAX_GRAPH_ID_LEN {
        return Err(KeyError::GraphIdOverLimit(graph.len()));
    }
    Ok(())
}

/// The row of graph `g`: `graph:<g>`.
pub fn graph_row_key(graph: &[u8]) -> Vec<u8> {
    let mut k = b"graph:".to_vec();
    k.extend_from_slice(graph);
    k
}

/// The prefix of every graph row.
pub const GRAPH_ROW_PREFIX: &[u8] = b"graph:";

/// Original `CorrectTimestamp` (spec §3.3).
pub fn correct_timestamp(ts: i64) -> i64 {
    let mut ts = ts % MAX_VALID_TIMESTAMP;
    if ts < 0 {
        ts = 0;
    }
    if ts < 1_000_000 {
        ts *= 1_000_000;
    }
    ts - ts % 1000
}

/// Go `binary.Uvarint`: 0 on overflow or an unterminated buffer.
fn uvarint(buf: &[u8]) -> u64 {
    let mut x = 0u64;
    let mut s = 0u32;
    for (i, &b) in buf.iter().enumerate() {
        if i == 10 {
            return 0;
        }
        if b < 0x80 {
            if i == 9 && b > 1 {
                return 0;
            }
            return x | (u64::from(b) << s);
        }
        x |= u64::from(b & 0x7f) << s;
        s += 7;
    }
    0
}

/// The cell timestamp of a triple: from the anchor if temporal, from SHA-256 of the text if
/// immutable (spec §3.3).
pub fn cell_timestamp(triple: &Triple) -> Timestamp {
    cell_timestamp_with_text(triple, None)
}

/// [`cell_timestamp`] of a triple whose text ([`Triple::to_text`]) the caller may have
/// already: `text`, if given, must be exactly that; the triple is serialised only when it is
/// immutable and no text is given.
pub fn cell_timestamp_with_text(triple: &Triple, text: Option<&[u8]>) -> Timestamp {
    match (triple.predicate.anchor(), text) {
        (Some(a), _) => Timestamp(correct_timestamp(a.unix_nano_wrapping() / 1000)),
        (None, Some(text)) => immutable_timestamp(text),
        (None, None) => immutable_timestamp(&triple.to_text()),
    }
}

/// The cell timestamp of an immutable triple with text `text`.
pub fn immutable_timestamp(text: &[u8]) -> Timestamp {
    let h = Sha256::digest(text);
    Timestamp(correct_timestamp(uvarint(&h) as i64))
}

/// The family a triple's cells live in.
pub fn family(predicate: &Predicate) -> &'static str {
    if predicate.is_immutable() {
        FAMILY_IMMUTABLE
    } else {
        FAMILY_TEMPORAL
    }
}

/// `<g>:<INDEX>:<u1>:<u2>…` from the texts of the UUIDs, in one exactly sized buffer.
fn key_of(graph: &[u8], index: Index, parts: &[[u8; 36]]) -> Vec<u8> {
    // One byte more for the ':' a lookup prefix ends with.
    let mut key = Vec::with_capacity(graph.len() + 5 + 37 * parts.len());
    key.extend_from_slice(graph);
    key.push(b':');
    key.extend_from_slice(index.name().as_bytes());
    for text in parts {
        key.push(b':');
        key.extend_from_slice(text);
    }
    key
}

/// One of a triple's four cells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TripleCell {
    /// Which index row.
    pub index: Index,
    /// The row key.
    pub row_key: Vec<u8>,
    /// The family.
    pub family: &'static str,
    /// The qualifier.
    pub qualifier: &'static [u8],
    /// The cell timestamp.
    pub timestamp: Timestamp,
}

/// The UUIDs a triple's keys are built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyUuids {
    /// Subject UUID.
    pub s: Uuid,
    /// Partial predicate UUID.
    pub p: Uuid,
    /// Object UUID (full UUID for a predicate object).
    pub o: Uuid,
}

impl KeyUuids {
    /// The UUIDs of `triple`.
    pub fn of(triple: &Triple) -> KeyUuids {
        KeyUuids {
            s: triple.subject.uuid(),
            p: triple.predicate.partial_uuid(),
            o: triple.object.uuid(),
        }
    }

    /// The row key of `index` in graph `graph`.
    pub fn row_key(&self, graph: &[u8], index: Index) -> Vec<u8> {
        self.texts().row_key(graph, index)
    }

    /// The four row keys in graph `graph`, in write order OSP, POS, SOP, SPO (each UUID's text
    /// is computed once for all four).
    pub fn row_keys(&self, graph: &[u8]) -> [(Index, Vec<u8>); 4] {
        let texts = self.texts();
        Index::ALL.map(|index| (index, texts.row_key(graph, index)))
    }

    fn texts(&self) -> UuidTexts {
        UuidTexts {
            s: self.s.text_bytes(),
            p: self.p.text_bytes(),
            o: self.o.text_bytes(),
        }
    }
}

/// The canonical texts of a triple's key UUIDs.
struct UuidTexts {
    s: [u8; 36],
    p: [u8; 36],
    o: [u8; 36],
}

impl UuidTexts {
    /// The one place that orders the parts of each index's row key.
    fn row_key(&self, graph: &[u8], index: Index) -> Vec<u8> {
        let (s, p, o) = (self.s, self.p, self.o);
        match index {
            Index::Osp => key_of(graph, index, &[o, s, p]),
            Index::Pos => key_of(graph, index, &[p, o, s]),
            Index::Sop => key_of(graph, index, &[s, o, p]),
            Index::Spo => key_of(graph, index, &[s, p, o]),
        }
    }
}

/// The four cells of `triple` in graph `graph`, in write order OSP, POS, SOP, SPO.
pub fn triple_cells(graph: &[u8], triple: &Triple) -> [TripleCell; 4] {
    triple_cells_with_text(graph, triple, None)
}

/// [`triple_cells`] of a triple whose text the caller may have already (as
/// [`cell_timestamp_with_text`] takes it).
pub fn triple_cells_with_text(
    graph: &[u8],
    triple: &Triple,
    text: Option<&[u8]>,
) -> [TripleCell; 4] {
    let family = family(&triple.predicate);
    let timestamp = cell_timestamp_with_text(triple, text);
    KeyUuids::of(triple)
        .row_keys(graph)
        .map(|(index, row_key)| TripleCell {
            index,
            row_key,
            family,
            qualifier: index.qualifier(),
            timestamp,
        })
}

/// The row `Exist` reads: `g:POS:<P'>:<O>:<S>`.
pub fn exist_row_key(graph: &[u8], triple: &Triple) -> Vec<u8> {
    KeyUuids::of(triple).row_key(graph, Index::Pos)
}

/// The row-key prefix a lookup scans (spec §5.1), always ending in `:`.
#[derive(Clone, Debug, PartialEq)]
pub enum LookupPrefix<'a> {
    /// `<g>:SPO:<S>:<P'>:` (Objects, TriplesForSubjectAndPredicate).
    SubjectPredicate(&'a Node, &'a Predicate),
    /// `<g>:POS:<P'>:<O>:` (Subjects, TriplesForPredicateAndObject).
    PredicateObject(&'a Predicate, &'a Object),
    /// `<g>:SPO:<S>:` (PredicatesForSubject, TriplesForSubject).
    Subject(&'a Node),
    /// `<g>:OSP:<O>:` (PredicatesForObject, TriplesForObject).
    Object(&'a Object),
    /// `<g>:SOP:<S>:<O>:` (PredicatesForSubjectAndObject).
    SubjectObject(&'a Node, &'a Object),
    /// `<g>:POS:<P'>:` (TriplesForPredicate).
    Predicate(&'a Predicate),
    /// `<g>:POS:` (Triples).
    All,
}

impl LookupPrefix<'_> {
    /// The prefix bytes in graph `graph`.
    pub fn key(&self, graph: &[u8]) -> Vec<u8> {
        let mut key = match self {
            LookupPrefix::SubjectPredicate(s, p) => key_of(
                graph,
                Index::Spo,
                &[s.uuid().text_bytes(), p.partial_uuid().text_bytes()],
            ),
            LookupPrefix::PredicateObject(p, o) => key_of(
                graph,
                Index::Pos,
                &[p.partial_uuid().text_bytes(), o.uuid().text_bytes()],
            ),
            LookupPrefix::Subject(s) => key_of(graph, Index::Spo, &[s.uuid().text_bytes()]),
            LookupPrefix::Object(o) => key_of(graph, Index::Osp, &[o.uuid().text_bytes()]),
            LookupPrefix::SubjectObject(s, o) => key_of(
                graph,
                Index::Sop,
                &[s.uuid().text_bytes(), o.uuid().text_bytes()],
            ),
            LookupPrefix::Predicate(p) => {
                key_of(graph, Index::Pos, &[p.partial_uuid().text_bytes()])
            }
            LookupPrefix::All => key_of(graph, Index::Pos, &[]),
        };
        key.push(b':');
        key
    }
}

/// The prefix of every row of one index of a graph: `<g>:<IDX>:`.
pub fn index_prefix(graph: &[u8], index: Index) -> Vec<u8> {
    let mut key = key_of(graph, index, &[]);
    key.push(b':');
    key
}

/// Whether `key` has the exact length of a triple row of graph `graph` (fix 17).
pub fn is_triple_row_of(graph: &[u8], key: &[u8]) -> bool {
    key.len() == graph.len() + TRIPLE_KEY_OVERHEAD
}

/// A decoded row key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodedKey {
    /// A triple index row.
    Triple {
        /// The graph id.
        graph: Vec<u8>,
        /// The index.
        index: Index,
        /// The subject, partial-predicate and object UUIDs.
        uuids: KeyUuids,
    },
    /// A graph row `graph:<g>`.
    Graph {
        /// The graph id.
        graph: Vec<u8>,
    },
}

/// Decodes a row key (spec §11, key decode): a triple row iff `n = len − 115 ≥ 0`,
/// `key[n..n+5]` is `:OSP:`/`:POS:`/`:SOP:`/`:SPO:` and the rest is three canonical UUIDs
/// joined by `:`; else a graph row if it starts with `graph:`.
pub fn decode_row_key(key: &[u8]) -> Result<DecodedKey, KeyError> {
    if let Some(n) = key.len().checked_sub(TRIPLE_KEY_OVERHEAD)
        && key[n] == b':'
        && key[n + 4] == b':'
        && let Some(index) = Index::from_name(&key[n + 1..n + 4])
    {
        let rest = &key[n + 5..];
        let u = |i: usize| Uuid::parse_canonical(&rest[i * 37..i * 37 + 36]);
        if rest[36] == b':'
            && rest[73] == b':'
            && let (Some(a), Some(b), Some(c)) = (u(0), u(1), u(2))
        {
            let uuids = match index {
                Index::Osp => KeyUuids { o: a, s: b, p: c },
                Index::Pos => KeyUuids { p: a, o: b, s: c },
                Index::Sop => KeyUuids { s: a, o: b, p: c },
                Index::Spo => KeyUuids { s: a, p: b, o: c },
            };
            return Ok(DecodedKey::Triple {
                graph: key[..n].to_vec(),
                index,
                uuids,
            });
        }
    }
    if let Some(graph) = key.strip_prefix(GRAPH_ROW_PREFIX) {
        return Ok(DecodedKey::Graph {
            graph: graph.to_vec(),
        });
    }
    Err(KeyError::NotAKey(crate::escape::escape(key)))
}

/// The segments of a triple store row key (as [`decode_row_key`] reads it): a triple row's
/// graph id, index and three UUIDs in the index's order, or a graph row's prefix and graph id.
pub fn row_key_segments(key: &[u8]) -> Result<Vec<KeySegment>, KeyError> {
    let mut s = Segments::new();
    match decode_row_key(key)? {
        DecodedKey::Triple { graph, index, .. } => {
            s.push(graph.len(), "graph", "the graph id");
            s.push(1, "separator", "':'");
            s.push(
                3,
                "index",
                "index: the order of the three UUIDs (OSP, POS, SOP or SPO)",
            );
            let [a, b, c] = match index {
                Index::Osp => [OBJECT, SUBJECT, PREDICATE],
                Index::Pos => [PREDICATE, OBJECT, SUBJECT],
                Index::Sop => [SUBJECT, OBJECT, PREDICATE],
                Index::Spo => [SUBJECT, PREDICATE, OBJECT],
            };
            for (field, meaning) in [a, b, c] {
                s.push(1, "separator", "':'");
                s.push(36, field, meaning);
            }
        }
        DecodedKey::Graph { graph } => {
            s.push(
                GRAPH_ROW_PREFIX.len(),
                "namespace",
                "'graph:': a graph's row",
            );
            s.push(graph.len(), "graph", "the graph id");
        }
    }
    Ok(s.finish())
}

/// The UUID segments' fields and meanings.
const SUBJECT: (&str, &str) = ("subject", "UUID of the subject node");
const PREDICATE: (&str, &str) = (
    "predicate",
    "UUID of the predicate's id (without its time anchor: the partial predicate)",
);
const OBJECT: (&str, &str) = ("object", "UUID of the object (node, literal or predicate)");

/// The graph id as text for messages (lossy UTF-8).
pub fn graph_display(graph: &[u8]) -> String {
    String::from_utf8_lossy(graph).into_owned()
}
