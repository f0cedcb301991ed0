//! Criterion benches of rowkit (being written).
