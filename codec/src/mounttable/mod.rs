//! Vanadium's btmtd mount table on Bigtable (`spec/mounttable.md`): the one place where its row
//! keys, child qualifiers, versions, permissions JSON, mount flags, counters and node rows are
//! encoded and decoded.
//!
//! ```
//! use rowkit_codec::mounttable::{row_key, decode_row_key};
//! assert_eq!(row_key("foo"), b"88e481b8/foo".to_vec());
//! assert_eq!(decode_row_key(b"88e481b8/foo"), Some(&b"foo"[..]));
//! ```

mod address;
mod caller;
mod counter;
mod flags;
mod key;
mod names;
mod node;
mod perms;

pub use address::validate_server;
pub use caller::{Caller, creator_of};
pub use counter::{
    CounterDecodeError, CounterKind, counter_row_key, counter_row_key_segments, decode_counter_row,
    decode_counter_row_key, decode_counter_value, encode_counter_value,
};
pub use flags::{FlagsDecodeError, MountFlags, decode_flags_into, encode_flags};
pub use key::{
    ChildRef, QualifierDecodeError, VersionError, child_qualifier, decode_child_qualifier,
    decode_row_key, fnv1_32, format_version, next_version, parse_version, row_key,
    row_key_for_cleaned, row_key_segments,
};
pub use names::{clean, dir, join, normalize_suffix, path_clean, split};
pub use node::{
    NodeDecodeError, NodePermissions, NodeRow, ServerEntry, decode_node, decode_node_sharing,
};
pub use perms::{
    AccessList, Permissions, PermsDecodeError, blessing_pattern_is_valid, blessing_pattern_matches,
    decode_permissions, decode_permissions_file, default_root_permissions, encode_permissions,
    encode_permissions_string,
};

/// Node families: metadata.
pub const FAMILY_META: &str = "m";
/// Node families: servers (one cell per mounted server).
pub const FAMILY_SERVERS: &str = "s";
/// Node families: children (one cell per child reference).
pub const FAMILY_CHILDREN: &str = "c";
/// The counter table's only family.
pub const FAMILY_COUNTER: &str = "m";
/// Metadata qualifier: node id.
pub const QUAL_ID: &[u8] = b"i";
/// Metadata qualifier: creator.
pub const QUAL_CREATOR: &[u8] = b"c";
/// Metadata qualifier: permissions JSON.
pub const QUAL_PERMS: &[u8] = b"p";
/// Metadata qualifier: sticky marker.
pub const QUAL_STICKY: &[u8] = b"s";
/// Metadata qualifier: version.
pub const QUAL_VERSION: &[u8] = b"v";
/// Counter qualifier.
pub const QUAL_COUNTER: &[u8] = b"c";
/// The root node's id.
pub const ROOT_ID: &[u8; 8] = b"ROOTNODE";
/// Creator id of the server itself.
pub const SERVER_USER: &str = "self:?:ServerUser";
/// Creator id of an unauthenticated caller.
pub const UNAUTHENTICATED_USER: &str = "self:?:Unauthenticated";
/// Value of child-reference and sticky cells.
pub const MARKER_VALUE: &[u8] = &[0x01];
/// Default node table name.
pub const DEFAULT_TABLE: &str = "mounttable";
/// Suffix of the counter table name.
pub const COUNTER_TABLE_SUFFIX: &str = "-counters";
/// TTL used when a mount asks for 0 seconds.
pub const TTL_ZERO_REPLACEMENT_S: u64 = u32::MAX as u64;

/// Permission tags.
pub mod tags {
    /// Administer a node.
    pub const ADMIN: &str = "Admin";
    /// Mount servers on a node.
    pub const MOUNT: &str = "Mount";
    /// Read (list, resolve) a node.
    pub const READ: &str = "Read";
    /// Create children.
    pub const CREATE: &str = "Create";
    /// Resolve through a node.
    pub const RESOLVE: &str = "Resolve";
}

/// The counter table of a node table: `<table>-counters`.
pub fn counter_table(node_table: &str) -> alloc::string::String {
    alloc::format!("{node_table}{COUNTER_TABLE_SUFFIX}")
}

/// Mount deadline (§8): `floor_ms(now + ttl s)`, `ttl = 0` meaning `u32::MAX` seconds.
pub fn mount_deadline(now_us: i64, ttl_s: u32) -> i64 {
    let ttl = if ttl_s == 0 {
        TTL_ZERO_REPLACEMENT_S as i64
    } else {
        i64::from(ttl_s)
    };
    let d = now_us.saturating_add(ttl.saturating_mul(1_000_000));
    d - d.rem_euclid(1000)
}

/// Whether a server with cell timestamp `deadline_us` is expired at `now_us` (§8: `ts < now`).
pub fn is_expired(deadline_us: i64, now_us: i64) -> bool {
    deadline_us < now_us
}
