//! The semantics suite as data (placeholder: being written).
