//! Every schema's acceptance scenarios as functions over any [`rowkit_store::Store`], so the
//! memory store, the redb store and the emulator-backed store run the same code.

pub mod admin;
pub mod check_beside_writers;
pub mod mounttable;
pub mod objmeta;
pub mod tracestore;
pub mod triples;

use rowkit_statemachines::Request;

/// The one row `request` reads: a point read's row, or the key of a `ReadRows` of exactly one
/// key and no range (the read a point read stands for); `None` for any other request. For a
/// scenario that checks which row was read, whichever request kind read it.
pub fn read_key(request: &Request) -> Option<&[u8]> {
    match request {
        Request::ReadRow(r) => Some(&r.row_key),
        Request::ReadRows(r) => match (r.rows.row_keys.as_slice(), r.rows.row_ranges.is_empty()) {
            ([key], true) => Some(key),
            _ => None,
        },
        _ => None,
    }
}
