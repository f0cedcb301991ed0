//! The typed errors of the objmeta codecs.

use alloc::string::String;

/// Why an objmeta value (version id, key, JSON document, listing input) cannot be decoded or
/// built. Messages of the version-id variants are Arsenal's, word for word (`objmeta.md` 3.3).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ObjmetaCodecError {
    /// An external version id whose length is neither 32 nor more than 32.
    #[error("cannot decode str {len}")]
    CannotDecodeStr {
        /// Its length in UTF-16 code units.
        len: usize,
    },
    /// A hex-encoded version id that decodes to nothing.
    #[error("invalid decoded value")]
    InvalidDecodedValue,
    /// A base62 version id that does not decode to 27 characters.
    #[error("decoded {input} is not length 27")]
    NotLength27 {
        /// The external id as given.
        input: String,
    },
    /// A character outside the base62 alphabet in the byte part of a base62 id.
    #[error("Non-base62 character")]
    NonBase62Character {
        /// Offset of the character in the input.
        offset: usize,
    },
    /// `inc` produced an ill-formed UTF-16 string (`objmeta.md` 4.2, quirk 16).
    #[error("inc({input:?}) is not well-formed UTF-16")]
    IllFormedInc {
        /// The string that was incremented.
        input: String,
    },
    /// A JSON text that does not parse.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// Line (1-based).
        line: usize,
        /// Column (1-based).
        column: usize,
        /// What serde_json reported.
        message: String,
    },
    /// A JSON value that is not an object where an object is required.
    #[error("{what} is not a JSON object")]
    NotAnObject {
        /// What was expected to be an object.
        what: &'static str,
    },
    /// A row key without the `00` that ends the collection name.
    #[error("row key has no 0x00 after the collection name")]
    NoCollectionSeparator,
    /// A row key whose collection or Arsenal key is not valid UTF-8.
    #[error("row key is not valid UTF-8 at byte {offset}")]
    NotUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// A collection name that is not an S3 bucket or one of the internal collections.
    #[error("collection {collection:?} is not an S3 bucket name or an internal collection")]
    NotACollection {
        /// The collection as read.
        collection: String,
    },
    /// A vFormat other than `v0` / `v1`.
    #[error("unknown vFormat {0:?}")]
    UnknownVFormat(String),
}
