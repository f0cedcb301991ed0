//! Objects and triples (spec §2.4), and the triple UUID (§2.5).

use alloc::vec::Vec;

use super::anchor::Anchor;
use super::error::{ParseError, Part, Reason};
use super::gotext::trim_space;
use super::literal::Literal;
use super::node::Node;
use super::predicate::Predicate;
use super::uuid::Uuid;

/// The object of a triple.
#[derive(Clone, Debug, PartialEq)]
pub enum Object {
    /// A node.
    Node(Node),
    /// A predicate used as an object.
    Predicate(Predicate),
    /// A literal.
    Literal(Literal),
}

impl Object {
    /// Tries node, then literal, then predicate; if all fail, the predicate error.
    pub fn parse(text: &[u8]) -> Result<Object, ParseError> {
        // Each form rejects any other first byte (after the same trimming) as `BadStart`, so
        // only the forms that can succeed are tried: a failed attempt builds an error.
        match trim_space(text).first() {
            Some(b'/' | b'_') => {
                if let Ok(n) = Node::parse(text) {
                    return Ok(Object::Node(n));
                }
            }
            Some(b'"') => {
                if let Ok(l) = Literal::parse(text) {
                    return Ok(Object::Literal(l));
                }
            }
            _ => {}
        }
        Predicate::parse(text).map(Object::Predicate)
    }

    /// The text form.
    pub fn to_text(&self) -> Vec<u8> {
        match self {
            Object::Node(n) => n.to_text(),
            Object::Predicate(p) => p.to_text(),
            Object::Literal(l) => l.to_text(),
        }
    }

    /// The UUID (the full UUID for a predicate).
    pub fn uuid(&self) -> Uuid {
        self.with_uuid_input(Uuid::v5_of)
    }

    /// Calls `f` with the parts of the bytes the UUID hashes.
    fn with_uuid_input<R>(&self, f: impl FnOnce(&[&[u8]]) -> R) -> R {
        match self {
            Object::Node(n) => n.with_uuid_input(f),
            Object::Predicate(p) => p.with_uuid_input(f),
            Object::Literal(l) => l.with_uuid_input(f),
        }
    }

    /// The predicate, if the object is one.
    pub fn as_predicate(&self) -> Option<&Predicate> {
        match self {
            Object::Predicate(p) => Some(p),
            _ => None,
        }
    }
}

/// A triple: subject node, predicate, object.
#[derive(Clone, Debug, PartialEq)]
pub struct Triple {
    /// The subject.
    pub subject: Node,
    /// The predicate.
    pub predicate: Predicate,
    /// The object.
    pub object: Object,
}

/// RE2 `\s`: ASCII whitespace only.
fn is_re_space(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | 0x0c | b'\r' | b' ')
}

/// The first match of `open W+ close` (any of `closes`): `(start, end)` as Go `FindIndex`.
fn find_split(raw: &[u8], open: u8, closes: &[u8]) -> Option<(usize, usize)> {
    for (i, &c) in raw.iter().enumerate() {
        if c != open {
            continue;
        }
        let mut j = i + 1;
        while j < raw.len() && is_re_space(raw[j]) {
            j += 1;
        }
        if j > i + 1 && j < raw.len() && closes.contains(&raw[j]) {
            return Some((i, j + 1));
        }
    }
    None
}

impl Triple {
    /// Parses the text form (original `triple.Parse`, with an error where it panics).
    pub fn parse(text: &[u8]) -> Result<Triple, ParseError> {
        let raw = trim_space(text);
        let err = |reason| ParseError::new(Part::Triple, reason, raw);
        let inner = |e: ParseError| err(Reason::Inner(alloc::boxed::Box::new(e)));
        let (p0, p1) =
            find_split(raw, b'>', b"\"").ok_or_else(|| err(Reason::MissingPredicateSplit))?;
        let (o0, o1) =
            find_split(raw, b']', b"/\"").ok_or_else(|| err(Reason::MissingObjectSplit))?;
        let p_start = p1 - 1;
        if o0 < p_start {
            return Err(err(Reason::SplitOrder));
        }
        let subject = Node::parse(&raw[..=p0]).map_err(inner)?;
        let predicate = Predicate::parse(&raw[p_start..=o0]).map_err(inner)?;
        let object = Object::parse(&raw[o1 - 1..]).map_err(inner)?;
        Ok(Triple {
            subject,
            predicate,
            object,
        })
    }

    /// The text form `S ␉ P ␉ O`, also the Bigtable cell value.
    pub fn to_text(&self) -> Vec<u8> {
        let mut out = self.subject.to_text();
        out.push(b'\t');
        out.extend_from_slice(&self.predicate.to_text());
        out.push(b'\t');
        out.extend_from_slice(&self.object.to_text());
        out
    }

    /// The text form ([`Triple::to_text`]) when it is certain to parse back to this very
    /// triple, so that a stored cell holding exactly these bytes is known to be this triple
    /// without parsing it; `None` when that is not certain (not every triple round-trips:
    /// spec §9 quirk 19). A conservative check: subject and object nodes and the predicate
    /// id of plain ASCII (no white space, none of `<>[]"\@^`), an anchor that its own text
    /// parses back to; a literal or predicate object is never certain here.
    ///
    /// Why it is exact: the text is then `/T<I>␉"ID"@[A]␉/T'<I'>` with none of the bytes the
    /// parser splits on inside the parts, so the first `>`+space+`"` ends the subject, the
    /// first `]`+space+`/` ends the predicate, the nodes split at their only `<`, the id
    /// needs no unquoting and nothing is trimmed.
    pub fn round_trip_text(&self) -> Option<Vec<u8>> {
        fn plain(bytes: &[u8]) -> bool {
            !bytes.is_empty()
                && bytes.iter().all(|&c| {
                    c.is_ascii_graphic()
                        && !matches!(c, b'<' | b'>' | b'[' | b']' | b'"' | b'\\' | b'@' | b'^')
                })
        }
        let node = |n: &Node| {
            n.node_type().first() == Some(&b'/') && plain(n.node_type()) && plain(n.id())
        };
        let anchor = match self.predicate.anchor() {
            None => true,
            Some(a) => Anchor::parse(a.to_text().as_bytes()).as_ref() == Ok(a),
        };
        let object = match &self.object {
            Object::Node(n) => node(n),
            Object::Predicate(_) | Object::Literal(_) => false,
        };
        (node(&self.subject) && plain(self.predicate.id()) && anchor && object)
            .then(|| self.to_text())
    }

    /// The triple UUID: v5 of `S.uuid ‖ P.full_uuid ‖ O.uuid`.
    pub fn uuid(&self) -> Uuid {
        Uuid::v5_of(&[
            self.subject.uuid().as_bytes(),
            self.predicate.uuid().as_bytes(),
            self.object.uuid().as_bytes(),
        ])
    }

    /// Whether `self` has the UUID of `other`, which is `other_uuid()`: exactly
    /// `self.uuid() == other_uuid()`, but when subject, predicate and object each hash the
    /// same bytes as `other`'s, their UUIDs and so the triples' are equal without hashing
    /// anything (the common answer of `Exist`, which reads the triple back); only otherwise
    /// are both hashed.
    pub fn same_uuid(&self, other: &Triple, other_uuid: impl FnOnce() -> Uuid) -> bool {
        let same_inputs = self
            .subject
            .with_uuid_input(|a| other.subject.with_uuid_input(|b| Uuid::same_input(a, b)))
            && self
                .predicate
                .with_uuid_input(|a| other.predicate.with_uuid_input(|b| Uuid::same_input(a, b)))
            && self
                .object
                .with_uuid_input(|a| other.object.with_uuid_input(|b| Uuid::same_input(a, b)));
        same_inputs || self.uuid() == other_uuid()
    }
}
