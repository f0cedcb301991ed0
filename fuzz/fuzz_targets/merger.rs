//! The ReadRows chunk merger on arbitrary chunk streams (`spec/bigtable.md` 15.8): it never
//! panics, and cutting the same stream into responses differently never changes the rows it
//! commits nor whether (and after which row) it fails.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rowkit_codec::model::Row;
use rowkit_statemachines::readrows::ChunkMerger;
use rowkit_statemachines::{CellChunk, ReadRowsResponse, RowStatus};

#[derive(Arbitrary, Debug)]
struct Chunk {
    row_key: Vec<u8>,
    family_name: Option<String>,
    qualifier: Option<Vec<u8>>,
    timestamp_micros: i64,
    labels: Vec<String>,
    value: Vec<u8>,
    value_size: i32,
    status: u8,
}

#[derive(Arbitrary, Debug)]
struct Response {
    last_scanned_row_key: Vec<u8>,
    chunks: Vec<Chunk>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    reversed: bool,
    rows_limit: i64,
    responses: Vec<Response>,
    /// Where to cut each response's chunk list for the re-split feeding.
    cuts: Vec<u8>,
}

fn chunk(c: &Chunk) -> CellChunk {
    CellChunk {
        row_key: c.row_key.clone(),
        family_name: c.family_name.clone(),
        qualifier: c.qualifier.clone(),
        timestamp_micros: c.timestamp_micros,
        labels: c.labels.clone(),
        value: c.value.clone(),
        value_size: c.value_size,
        row_status: match c.status % 3 {
            0 => RowStatus::None,
            1 => RowStatus::Commit,
            _ => RowStatus::Reset,
        },
    }
}

/// Feeds the responses, returning the committed rows and whether the stream failed.
fn feed(input: &Input, split: bool) -> (Vec<Row>, bool) {
    let mut merger = ChunkMerger::new(input.reversed, input.rows_limit);
    let mut rows = Vec::new();
    let mut cuts = input.cuts.iter().copied().cycle();
    let mut failed = false;
    'outer: for response in &input.responses {
        let chunks: Vec<CellChunk> = response.chunks.iter().map(chunk).collect();
        let mut pieces = Vec::new();
        if split && !input.cuts.is_empty() {
            let mut rest = chunks.as_slice();
            loop {
                // Pieces of 0..=3 chunks (empty responses included); bounded so the loop ends.
                let cut = usize::from(cuts.next().unwrap_or(0) % 4);
                let n = if pieces.len() > 2 * chunks.len() + 4 {
                    rest.len()
                } else {
                    cut.min(rest.len())
                };
                let (head, tail) = rest.split_at(n);
                pieces.push(ReadRowsResponse {
                    chunks: head.to_vec(),
                    // The scan marker stays on the first piece (bigtable.md 15.8).
                    last_scanned_row_key: if pieces.is_empty() {
                        response.last_scanned_row_key.clone()
                    } else {
                        Vec::new()
                    },
                });
                rest = tail;
                if rest.is_empty() {
                    break;
                }
            }
        } else {
            pieces.push(ReadRowsResponse {
                chunks,
                last_scanned_row_key: response.last_scanned_row_key.clone(),
            });
        }
        for piece in pieces {
            let r = merger.push_response(piece);
            while let Some(row) = merger.pop_row() {
                rows.push(row);
            }
            if r.is_err() {
                failed = true;
                break 'outer;
            }
        }
    }
    if !failed {
        failed = merger.end_of_stream().is_err();
        while let Some(row) = merger.pop_row() {
            rows.push(row);
        }
    }
    (rows, failed)
}

fuzz_target!(|input: Input| {
    let whole = feed(&input, false);
    let split = feed(&input, true);
    assert_eq!(whole, split, "re-splitting changed the merge");
});
