//! The shared Bigtable evaluator on arbitrary filter trees over arbitrary rows: validation and
//! evaluation never panic; the output is canonically ordered and made only of input cells
//! (values possibly stripped, labels possibly set); evaluation is deterministic; and a read
//! through the whole store path (MemoryStore, chunking with split values, the ReadRows merger)
//! returns exactly what the filter returns on its own.
#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use rowkit_client::run_blocking;
use rowkit_codec::model::{
    Cell, ColumnFamily, KeyBound, Row, RowFilter, RowSet, Timestamp, TimestampRange,
    compare_canonical,
};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    MutateRowRequest, ReadRowsRequest, Request, RetryPolicy, SplitMix64, raw::Unary,
};
use rowkit_store::driver::{Clock, ManualClock};
use rowkit_store::semantics::CompiledFilter;
use rowkit_store::{ChunkingOptions, MemoryStore, Store, StoreOptions};

const FAMILIES: [&str; 3] = ["a", "b", "c.d"];

/// Small alphabets so that regexes, ranges and duplicates actually hit.
fn bytes(u: &mut Unstructured) -> Result<Vec<u8>> {
    let len = u.int_in_range(0..=3)?;
    (0..len).map(|_| Ok(*u.choose(b"ab\0\xff\n.")?)).collect()
}

fn pattern(u: &mut Unstructured) -> Result<Vec<u8>> {
    let len = u.int_in_range(0..=6)?;
    (0..len)
        .map(|_| Ok(*u.choose(b"ab.*+?|()[]^$\\C{}1,-\xe9:")?))
        .collect()
}

fn bound(u: &mut Unstructured) -> Result<KeyBound> {
    Ok(match u.int_in_range(0..=2)? {
        0 => KeyBound::Unbounded,
        1 => KeyBound::Closed(bytes(u)?),
        _ => KeyBound::Open(bytes(u)?),
    })
}

fn filter(u: &mut Unstructured, depth: u32) -> Result<RowFilter> {
    let composite = depth < 24 && u.ratio(1, 3)?;
    if composite {
        let kind = u.int_in_range(0..=2)?;
        if kind == 2 {
            return Ok(RowFilter::Condition {
                predicate: part(u, depth)?,
                true_filter: part(u, depth)?,
                false_filter: part(u, depth)?,
            });
        }
        let n = u.int_in_range(0..=3)?;
        let kids = (0..n)
            .map(|_| filter(u, depth + 1))
            .collect::<Result<Vec<_>>>()?;
        return Ok(if kind == 0 {
            RowFilter::Chain(kids)
        } else {
            RowFilter::Interleave(kids)
        });
    }
    Ok(match u.int_in_range(0..=15)? {
        0 => RowFilter::Sink,
        1 => RowFilter::PassAll,
        2 => RowFilter::BlockAll,
        3 => RowFilter::RowKeyRegex(pattern(u)?),
        4 => RowFilter::RowSample(*u.choose(&[0.0, 0.5, 0.999, 1.0, -1.0, f64::NAN])?),
        5 => RowFilter::FamilyNameRegex(String::from_utf8_lossy(&pattern(u)?).into_owned()),
        6 => RowFilter::ColumnQualifierRegex(pattern(u)?),
        7 => RowFilter::ColumnRange {
            family: u.choose(&FAMILIES)?.to_string(),
            start: bound(u)?,
            end: bound(u)?,
        },
        8 => RowFilter::TimestampRange(TimestampRange {
            start: *u.choose(&[0, 1000, 2000, -1])?,
            end: *u.choose(&[0, 2000, 3000, -5])?,
        }),
        9 => RowFilter::ValueRegex(pattern(u)?),
        10 => RowFilter::ValueRange {
            start: bound(u)?,
            end: bound(u)?,
        },
        11 => RowFilter::CellsPerRowOffset(u.int_in_range(-1..=4)?),
        12 => RowFilter::CellsPerRowLimit(u.int_in_range(-1..=4)?),
        13 => RowFilter::CellsPerColumnLimit(u.int_in_range(-1..=3)?),
        14 => RowFilter::StripValue,
        _ => RowFilter::ApplyLabel(
            u.choose(&["l", "x-1", "", "Bad", "abcdefghijklmnop"])?
                .to_string(),
        ),
    })
}

fn part(u: &mut Unstructured, depth: u32) -> Result<Option<Box<RowFilter>>> {
    Ok(if u.arbitrary()? {
        Some(Box::new(filter(u, depth + 1)?))
    } else {
        None
    })
}

#[derive(Debug)]
struct Input {
    key: Vec<u8>,
    cells: Vec<Cell>,
    filter: RowFilter,
    split_values_every: Option<usize>,
    chunks_per_response: Option<usize>,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Input> {
        let mut key = bytes(u)?;
        key.insert(0, b'r');
        let n = u.int_in_range(0..=12)?;
        let mut cells = Vec::with_capacity(n);
        for _ in 0..n {
            cells.push(Cell {
                family: u.choose(&FAMILIES)?.to_string(),
                qualifier: bytes(u)?,
                timestamp: Timestamp::from_millis(u.int_in_range(0..=3)?),
                value: bytes(u)?,
                labels: Vec::new(),
            });
        }
        // A stored row: canonical order, one cell per (family, qualifier, timestamp).
        cells.sort_by(compare_canonical);
        cells.dedup_by(|a, b| compare_canonical(a, b).is_eq());
        Ok(Input {
            key,
            cells,
            filter: filter(u, 0)?,
            split_values_every: if u.arbitrary()? {
                Some(u.int_in_range(1..=3)?)
            } else {
                None
            },
            chunks_per_response: if u.arbitrary()? {
                Some(u.int_in_range(1..=3)?)
            } else {
                None
            },
        })
    }
}

/// Strips what a filter may change (value, labels) to compare a cell with its source.
fn identity(c: &Cell) -> (&str, &[u8], Timestamp) {
    (&c.family, &c.qualifier, c.timestamp)
}

fuzz_target!(|input: Input| {
    let Ok(compiled) = CompiledFilter::new(&input.filter) else {
        return;
    };
    let out = compiled.apply(&input.key, input.cells.clone(), &mut SplitMix64::new(9));
    assert!(
        out.windows(2)
            .all(|w| compare_canonical(&w[0], &w[1]).is_le()),
        "not canonical"
    );
    for c in &out {
        let source = input
            .cells
            .iter()
            .find(|s| identity(s) == identity(c))
            .expect("invented a cell");
        assert!(
            c.value.is_empty() || c.value == source.value,
            "changed a value"
        );
        assert!(c.labels.len() <= 1, "more than one label");
    }
    assert_eq!(
        out,
        compiled.apply(&input.key, input.cells.clone(), &mut SplitMix64::new(9))
    );

    if compiled.is_random() || input.cells.is_empty() {
        return;
    }
    // The same row through the store: write it, read it back with the filter.
    let store =
        MemoryStore::new().with_options(StoreOptions::default().with_chunking(ChunkingOptions {
            split_values_every: input.split_values_every,
            chunks_per_response: input.chunks_per_response,
        }));
    let families: Vec<ColumnFamily> = FAMILIES.iter().map(|f| ColumnFamily::new(*f)).collect();
    store.create_table("t", &families).expect("valid schema");
    let clock = ManualClock::new(Timestamp::from_secs(10));
    let mutations = input.cells.iter().map(|c| c.to_set_cell()).collect();
    let write = Request::MutateRow(MutateRowRequest {
        table: "t".into(),
        app_profile_id: String::new(),
        row_key: input.key.clone(),
        mutations,
    });
    run_blocking(&store, &clock, Unary::new(write), |_| {}).expect("write succeeds");
    let read = ReadRowsRequest {
        table: "t".into(),
        rows: RowSet::key(input.key.clone()),
        filter: Some(input.filter.clone()),
        ..ReadRowsRequest::default()
    };
    let mut rows: Vec<Row> = Vec::new();
    run_blocking(
        &store,
        &clock,
        ReadRows::new(read, clock.now(), 1, RetryPolicy::default()),
        |r| rows.push(r),
    )
    .expect("read succeeds");
    let expected: Vec<Row> = if out.is_empty() {
        vec![]
    } else {
        vec![Row {
            key: input.key.clone(),
            cells: out,
        }]
    };
    assert_eq!(rows, expected, "store path differs from the filter alone");
});
