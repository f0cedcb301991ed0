//! BadWolf's temporal triple store on Bigtable (`spec/triples.md`): the data model and its
//! text forms exactly as the Go original parses and prints them, the v5 UUIDs, and the
//! Bigtable layout of the `bwbigtable` driver (four index rows per triple, cell timestamps,
//! graph rows).
//!
//! ```
//! use rowkit_codec::triples::{Triple, keys};
//!
//! let t = Triple::parse(b"/u<joe> \"parent_of\"@[] /u<mary>").unwrap();
//! assert_eq!(t.uuid().to_text(), "c7f35b5c-36f5-508c-9eb3-331a556dee3c");
//! let cells = keys::triple_cells(b"test", &t);
//! assert_eq!(cells[0].family, "immutable_triple");
//! assert_eq!(cells[0].timestamp.0, 72_000_000);
//! ```

mod anchor;
mod error;
pub mod gotext;
mod isprint;
pub mod keys;
mod literal;
mod node;
mod predicate;
mod triple;
mod uuid;

pub use anchor::{Anchor, AnchorError};
pub use error::{KeyError, ParseError, Part, Reason};
pub use literal::{INT64_MAX, INT64_MIN, Literal, LiteralValue};
pub use node::Node;
pub use predicate::{Predicate, put_varint, varint16};
pub use triple::{Object, Triple};
pub use uuid::Uuid;
