//! Production limits of Cloud Bigtable (`spec/bigtable.md` section 4). Every rowkit store
//! enforces them, even where the emulator is laxer.

/// Longest row key, in bytes.
pub const MAX_ROW_KEY_BYTES: usize = 4096;
/// Longest column qualifier, in bytes.
pub const MAX_QUALIFIER_BYTES: usize = 16 * 1024;
/// Largest cell value, in bytes.
pub const MAX_VALUE_BYTES: usize = 100 * 1024 * 1024;
/// Largest row, in bytes, as counted by [`super::row_size`].
pub const MAX_ROW_BYTES: u64 = 256 * 1024 * 1024;
/// Most mutations in one `MutateRow`, in one `MutateRows` (summed over entries), and in each
/// list of a `CheckAndMutateRow`.
pub const MAX_MUTATIONS: usize = 100_000;
/// Most read-modify-write rules in one request.
pub const MAX_RULES: usize = 100_000;
/// Largest protobuf-encoded `RowFilter`, in bytes.
pub const MAX_FILTER_BYTES: usize = 20_480;
/// Deepest nesting of `Chain`, `Interleave` and `Condition` (a bare leaf has depth 1).
pub const MAX_FILTER_DEPTH: usize = 20;
/// Longest family name, in characters.
pub const MAX_FAMILY_NAME_CHARS: usize = 64;
/// Most column families in one table.
pub const MAX_FAMILIES: usize = 100;
/// Longest table id, in characters.
pub const MAX_TABLE_NAME_CHARS: usize = 50;
/// Longest label of `apply_label_transformer`.
pub const MAX_LABEL_CHARS: usize = 15;
