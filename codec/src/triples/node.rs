//! Nodes: `/type<id>` and blank nodes `_:id` (spec §2.1).

use alloc::vec::Vec;

use super::error::{ParseError, Part, Reason};
use super::gotext::trim_space;
use super::uuid::Uuid;

/// A node: a type path and an id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    node_type: Vec<u8>,
    id: Vec<u8>,
}

fn valid_type(t: &[u8]) -> bool {
    t.first() == Some(&b'/')
        && t.last() != Some(&b'/')
        && !t.iter().any(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
}

fn valid_id(id: &[u8]) -> bool {
    !id.is_empty() && !id.iter().any(|c| matches!(c, b'<' | b'>'))
}

impl Node {
    /// A node from a type and an id, both validated.
    pub fn new(node_type: &[u8], id: &[u8]) -> Result<Node, ParseError> {
        if !valid_type(node_type) {
            return Err(ParseError::new(Part::Node, Reason::InvalidType, node_type));
        }
        if !valid_id(id) {
            return Err(ParseError::new(Part::Node, Reason::InvalidId, id));
        }
        Ok(Node {
            node_type: node_type.to_vec(),
            id: id.to_vec(),
        })
    }

    /// Parses the text form (original `node.Parse`, with errors instead of panics).
    pub fn parse(text: &[u8]) -> Result<Node, ParseError> {
        let raw = trim_space(text);
        let err = |reason| ParseError::new(Part::Node, reason, raw);
        match raw.first() {
            None => Err(err(Reason::Empty)),
            Some(b'/') => {
                let i = raw
                    .iter()
                    .position(|&c| c == b'<')
                    .ok_or_else(|| err(Reason::MissingId))?;
                if !valid_type(&raw[..i]) {
                    return Err(err(Reason::InvalidType));
                }
                if raw.last() != Some(&b'>') {
                    return Err(err(Reason::MissingClose));
                }
                let id = &raw[i + 1..raw.len() - 1];
                if !valid_id(id) {
                    return Err(err(Reason::InvalidId));
                }
                Ok(Node {
                    node_type: raw[..i].to_vec(),
                    id: id.to_vec(),
                })
            }
            Some(b'_') => {
                let id = raw.get(2..).ok_or_else(|| err(Reason::BlankTooShort))?;
                if !valid_id(id) {
                    return Err(err(Reason::InvalidId));
                }
                Ok(Node {
                    node_type: b"/_".to_vec(),
                    id: id.to_vec(),
                })
            }
            Some(_) => Err(err(Reason::BadStart)),
        }
    }

    /// The type path.
    pub fn node_type(&self) -> &[u8] {
        &self.node_type
    }

    /// The id.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// The text form `type<id>`.
    pub fn to_text(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.node_type.len() + self.id.len() + 2);
        out.extend_from_slice(&self.node_type);
        out.push(b'<');
        out.extend_from_slice(&self.id);
        out.push(b'>');
        out
    }

    /// The UUID: v5 of `type ‖ id`.
    pub fn uuid(&self) -> Uuid {
        self.with_uuid_input(Uuid::v5_of)
    }

    /// Calls `f` with the parts of the bytes the UUID hashes.
    pub(crate) fn with_uuid_input<R>(&self, f: impl FnOnce(&[&[u8]]) -> R) -> R {
        f(&[&self.node_type, &self.id])
    }
}
