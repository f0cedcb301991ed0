//! Criterion benches of rowkit's hot paths; run `cargo bench -p rowkit-benches`, results and
//! the machine they were taken on in `benches/README.md`.
//!
//! This library holds the workload builders the benches share, so every bench measures the
//! same, reproducible data.
//!
//! ```
//! let row = rowkit_benches::wide_row(b"r", 2, 3, 4);
//! assert_eq!(row.cells.len(), 2 * 3 * 4);
//! ```
#![forbid(unsafe_code)]

use rowkit_codec::model::{Cell, Row, Timestamp};

/// A row with `families × columns × versions` cells in canonical order; values are 16 bytes.
pub fn wide_row(key: &[u8], families: usize, columns: usize, versions: usize) -> Row {
    let mut cells = Vec::with_capacity(families * columns * versions);
    for f in 0..families {
        for c in 0..columns {
            for v in (0..versions).rev() {
                cells.push(Cell {
                    family: format!("f{f}"),
                    qualifier: format!("col{c:05}").into_bytes(),
                    timestamp: Timestamp::from_millis(1 + v as i64),
                    value: format!("value-{f}-{c:05}-{v:02}").into_bytes(),
                    labels: Vec::new(),
                });
            }
        }
    }
    Row {
        key: key.to_vec(),
        cells,
    }
}

/// The `i`-th triple of the triple-store benches, as text: `/u<s{i/10}> "p{i%7}"@[] /u<o{i%1000}>`,
/// and every fourth one temporal (`"seen"` with a nanosecond anchor in January 2020).
pub fn triple_text(i: u64) -> String {
    if i % 4 == 3 {
        format!(
            "/u<s{}>\t\"seen\"@[2020-01-{:02}T00:00:{:02}.{:09}Z]\t/u<o{}>",
            i / 10,
            1 + i % 28,
            i % 60,
            i,
            i % 1000
        )
    } else {
        format!("/u<s{}>\t\"p{}\"@[]\t/u<o{}>", i / 10, i % 7, i % 1000)
    }
}
