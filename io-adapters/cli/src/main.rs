//! The rowkit command line (being written).
fn main() {}
