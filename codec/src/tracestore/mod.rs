//! Skia Gold's Bigtable trace store (`spec/tracestore.md`), both layouts: row keys and shards
//! ([`keys`]), the OrderedParamSet and its text encoding ([`ops`]) and Go gob form ([`gob`]),
//! cell values, digest map and id counter ([`cells`]), layouts and setup ([`layout`]), and
//! the codec's error ([`CodecError`]).
//!
//! ```
//! use rowkit_codec::tracestore::{keys, ops::{OrderedParamSet, params_from}};
//!
//! let pos = keys::repo_index_position(300).unwrap();
//! assert_eq!((pos.tile_key, pos.offset), (2147483646, 44));
//! let mut ops = OrderedParamSet::new();
//! ops.update(&[("arch".to_string(), vec!["riscv".to_string(), "arm".to_string()])].into());
//! let enc = ops.encode_params(&params_from([("arch", "arm")])).unwrap();
//! assert_eq!(enc, ",0=1,");
//! assert_eq!(keys::trace_row_name(pos.tile_key, enc.as_bytes()), b"11:ts:t:2147483646:,0=1,".to_vec());
//! ```

pub mod cells;
mod error;
pub mod gob;
pub mod keys;
pub mod layout;
pub mod migration;
pub mod ops;

pub use error::CodecError;
pub use gob::{decode_ops_gob, encode_ops_gob, ops_hash};
pub use layout::{Layout, SetupRequest, detect_layout};
pub use ops::{OrderedParamSet, ParamSet, Params};
