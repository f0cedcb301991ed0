//! Node rows (§6, §9): decoding a row read with `LatestN(1)` into a [`NodeRow`].

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Deref;

use super::key::{ChildRef, decode_child_qualifier};
use super::{
    FAMILY_CHILDREN, FAMILY_META, FAMILY_SERVERS, Permissions, PermsDecodeError, QUAL_CREATOR,
    QUAL_ID, QUAL_PERMS, QUAL_STICKY, QUAL_VERSION, decode_flags_into, decode_permissions,
    is_expired,
};
use crate::model::Row;

/// One mounted server of a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerEntry {
    /// The server address (the qualifier, as given to Mount).
    pub server: String,
    /// Its deadline: the cell timestamp in µs.
    pub deadline_us: i64,
}

/// A node's permissions as decoded from its stored `m:p` text, kept with that text and shared:
/// nodes whose rows hold the same text (the leaves of one directory usually do) can share one
/// decoded copy instead of parsing it again ([`decode_node_sharing`]). Reads as the
/// [`Permissions`] (`Deref`); two are equal when their permissions are.
#[derive(Clone, Debug, Default)]
pub struct NodePermissions(Arc<StoredPermissions>);

#[derive(Debug, Default)]
struct StoredPermissions {
    /// The stored text (empty for a row without `m:p`: a stored empty text does not decode).
    text: Vec<u8>,
    permissions: Permissions,
}

impl NodePermissions {
    /// Decodes a stored `m:p` text ([`decode_permissions`]).
    pub fn decode(text: &[u8]) -> Result<NodePermissions, PermsDecodeError> {
        Ok(NodePermissions(Arc::new(StoredPermissions {
            permissions: decode_permissions(text)?,
            text: text.to_vec(),
        })))
    }

    /// The stored text they were decoded from (empty when the row had no `m:p`).
    pub fn text(&self) -> &[u8] {
        &self.0.text
    }

    /// The permissions.
    pub fn permissions(&self) -> &Permissions {
        &self.0.permissions
    }
}

impl Deref for NodePermissions {
    type Target = Permissions;

    fn deref(&self) -> &Permissions {
        &self.0.permissions
    }
}

impl PartialEq for NodePermissions {
    fn eq(&self, other: &NodePermissions) -> bool {
        self.0.permissions == other.0.permissions
    }
}

impl Eq for NodePermissions {}

/// A decoded node row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRow {
    /// The node name (`key[9..]`, no leading `/`; root = `""`).
    pub name: String,
    /// The row key as read.
    pub row_key: Vec<u8>,
    /// `m:i` (8 bytes; `ROOTNODE` for the root).
    pub id: Vec<u8>,
    /// `m:c`: creator id.
    pub creator: String,
    /// Timestamp of `m:c`.
    pub creation_time_us: i64,
    /// `m:p` decoded (empty when absent).
    pub permissions: NodePermissions,
    /// `m:v` raw bytes (parsed only when used: a bad one is `BadVersionString`, not undecodable).
    pub version: Vec<u8>,
    /// `m:s` present.
    pub sticky: bool,
    /// Live servers in qualifier order.
    pub servers: Vec<ServerEntry>,
    /// Expired servers in qualifier order.
    pub expired_servers: Vec<ServerEntry>,
    /// OR of the live servers' `mt` flags.
    pub mt: bool,
    /// OR of the live servers' `leaf` flags.
    pub leaf: bool,
    /// Child references in qualifier order (id, then name); short qualifiers skipped.
    pub children: Vec<ChildRef>,
}

impl NodeRow {
    /// The version as text (lossy for non-UTF-8 garbage).
    pub fn version_str(&self) -> String {
        String::from_utf8_lossy(&self.version).into_owned()
    }
}

/// Why a node row did not decode (§9 step 5: an `Internal` error, not "missing").
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NodeDecodeError {
    /// The key is shorter than 9 bytes.
    #[error("row key of {len} bytes is too short for a node (9 needed)")]
    ShortKey {
        /// Key length.
        len: usize,
    },
    /// The name part of the key is not UTF-8.
    #[error("node name in the row key is not UTF-8 at byte {offset}")]
    NameNotUtf8 {
        /// Offset in the key.
        offset: usize,
    },
    /// `m:p` did not decode.
    #[error("permissions of the node: {0}")]
    Permissions(#[from] super::PermsDecodeError),
    /// A live server's flags did not decode.
    #[error("mount flags of server {server:?}: {error}")]
    Flags {
        /// The server qualifier (lossy).
        server: String,
        /// Why.
        error: super::FlagsDecodeError,
    },
    /// A text field (creator, server, child name) is not UTF-8.
    #[error("{field} is not UTF-8")]
    NotUtf8 {
        /// Which field.
        field: &'static str,
    },
}

/// Decodes a node row at time `now_us` (which decides which servers are expired).
pub fn decode_node(row: &Row, now_us: i64) -> Result<NodeRow, NodeDecodeError> {
    decode_node_sharing(row, now_us, |_| None)
}

/// [`decode_node`], taking the permissions from `known` when it has some decoded from the very
/// text the row stores (compared here: anything else `known` gives is ignored), so that rows
/// with one text share one decoded copy.
pub fn decode_node_sharing(
    row: &Row,
    now_us: i64,
    mut known: impl FnMut(&[u8]) -> Option<NodePermissions>,
) -> Result<NodeRow, NodeDecodeError> {
    let name_bytes =
        super::decode_row_key(&row.key).ok_or(NodeDecodeError::ShortKey { len: row.key.len() })?;
    let name = core::str::from_utf8(name_bytes).map_err(|e| NodeDecodeError::NameNotUtf8 {
        offset: 9 + e.valid_up_to(),
    })?;
    let mut node = NodeRow {
        name: String::from(name),
        row_key: row.key.clone(),
        id: Vec::new(),
        creator: String::new(),
        creation_time_us: 0,
        permissions: NodePermissions::default(),
        version: Vec::new(),
        sticky: false,
        servers: Vec::new(),
        expired_servers: Vec::new(),
        mt: false,
        leaf: false,
        children: Vec::new(),
    };
    let mut last: Option<(&str, &[u8])> = None;
    for cell in &row.cells {
        // LatestN(1) is asked for, but be robust: only the newest cell of a column counts.
        if last == Some((cell.family.as_str(), cell.qualifier.as_slice())) {
            continue;
        }
        last = Some((cell.family.as_str(), cell.qualifier.as_slice()));
        match cell.family.as_str() {
            FAMILY_META => match cell.qualifier.as_slice() {
                QUAL_ID => node.id = cell.value.clone(),
                QUAL_STICKY => node.sticky = true,
                QUAL_VERSION => node.version = cell.value.clone(),
                QUAL_PERMS => {
                    node.permissions = match known(&cell.value) {
                        Some(p) if p.text() == cell.value.as_slice() => p,
                        _ => NodePermissions::decode(&cell.value)?,
                    }
                }
                QUAL_CREATOR => {
                    node.creator = String::from(
                        core::str::from_utf8(&cell.value)
                            .map_err(|_| NodeDecodeError::NotUtf8 { field: "creator" })?,
                    );
                    node.creation_time_us = cell.timestamp.0;
                }
                _ => {}
            },
            FAMILY_SERVERS => {
                let server = String::from(
                    core::str::from_utf8(&cell.qualifier)
                        .map_err(|_| NodeDecodeError::NotUtf8 { field: "server" })?,
                );
                let entry = ServerEntry {
                    server,
                    deadline_us: cell.timestamp.0,
                };
                if is_expired(entry.deadline_us, now_us) {
                    node.expired_servers.push(entry);
                } else {
                    decode_flags_into(&cell.value, &mut node.mt, &mut node.leaf).map_err(
                        |error| NodeDecodeError::Flags {
                            server: entry.server.clone(),
                            error,
                        },
                    )?;
                    node.servers.push(entry);
                }
            }
            FAMILY_CHILDREN => match decode_child_qualifier(&cell.qualifier) {
                Ok(c) => node.children.push(ChildRef {
                    written_us: cell.timestamp.0,
                    ..c
                }),
                Err(super::QualifierDecodeError::TooShort { .. }) => {}
                Err(super::QualifierDecodeError::NotUtf8 { .. }) => {
                    return Err(NodeDecodeError::NotUtf8 {
                        field: "child name",
                    });
                }
            },
            _ => {}
        }
    }
    Ok(node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Cell, Timestamp};

    fn node_row(perms: &[u8]) -> Row {
        Row {
            key: super::super::row_key("a/b"),
            cells: alloc::vec![Cell {
                family: String::from(FAMILY_META),
                qualifier: QUAL_PERMS.to_vec(),
                timestamp: Timestamp(1_000),
                value: perms.to_vec(),
                labels: Vec::new(),
            }],
        }
    }

    /// Permissions offered for the row's very text are shared; any others are not used, and
    /// either way the node equals the one decoded alone.
    #[test]
    fn shares_permissions_of_the_same_text_only() {
        let text =
            br#"{"Admin":{"In":["root"],"NotIn":null},"Resolve":{"In":["..."],"NotIn":null}}"#;
        let other = br#"{"Admin":{"In":["root:bob"],"NotIn":null}}"#;
        let row = node_row(text);
        let alone = decode_node(&row, 0).unwrap();
        let known = NodePermissions::decode(text).unwrap();
        let shared = decode_node_sharing(&row, 0, |t| (t == text).then(|| known.clone())).unwrap();
        assert_eq!(shared, alone);
        assert!(Arc::ptr_eq(&shared.permissions.0, &known.0));
        let foreign = NodePermissions::decode(other).unwrap();
        let not_shared = decode_node_sharing(&row, 0, |_| Some(foreign.clone())).unwrap();
        assert_eq!(not_shared, alone);
        assert!(!Arc::ptr_eq(&not_shared.permissions.0, &foreign.0));
        assert_eq!(not_shared.permissions.text(), text);
        // A text that does not decode fails whatever is offered.
        let bad = node_row(b"{\"Admin\":3}");
        assert!(decode_node_sharing(&bad, 0, |_| Some(known.clone())).is_err());
    }
}
