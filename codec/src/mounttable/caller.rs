//! The caller of an operation and its creator id (§12.4).

use alloc::string::String;
use alloc::vec::Vec;

/// Who is calling: blessing names and whether it presents the server's own key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    /// The caller's blessing names.
    pub blessing_names: Vec<String>,
    /// Whether the caller is the server itself (always authorized).
    pub is_server: bool,
}

impl Caller {
    /// A caller with these names.
    pub fn new(names: &[&str], is_server: bool) -> Caller {
        Caller {
            blessing_names: names.iter().map(|s| String::from(*s)).collect(),
            is_server,
        }
    }
}

/// The creator id charged for nodes the caller creates (the first of §12.4's ids).
pub fn creator_of(caller: &Caller) -> String {
    if let Some(name) = caller.blessing_names.first() {
        let parts: Vec<&str> = name.split(':').collect();
        if parts.len() >= 3 && parts[1].len() == 1 {
            return parts[..3].join(":");
        }
        return String::from(parts[0]);
    }
    if caller.is_server {
        return String::from(super::SERVER_USER);
    }
    String::from(super::UNAUTHENTICATED_USER)
}
