//! ListObject: placeholder.
