//! Node rows (§6, §9): decoding a row read with `LatestN(1)` into a [`NodeRow`].

use alloc::string::String;
use alloc::vec::Vec;

use super::key::{ChildRef, decode_child_qualifier};
use super::{
    FAMILY_CHILDREN, FAMILY_META, FAMILY_SERVERS, Permissions, QUAL_CREATOR, QUAL_ID, QUAL_PERMS,
    QUAL_STICKY, QUAL_VERSION, decode_flags_into, decode_permissions, is_expired,
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
    pub permissions: Permissions,
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
        permissions: Permissions::default(),
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
                QUAL_PERMS => node.permissions = decode_permissions(&cell.value)?,
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
