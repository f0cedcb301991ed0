//! Seeded random inputs (a cheap stand-in for the fuzz targets, `spec/bigtable.md` 15.8): the
//! merger never panics on arbitrary chunk streams, valid streams give the same rows however
//! they are split, and the ReadRows machine always finishes by its deadline whatever it is fed.
#![allow(clippy::unwrap_used)]

use rowkit_codec::model::{Cell, Row, Timestamp};
use rowkit_statemachines::readrows::{ChunkMerger, ReadRows};
use rowkit_statemachines::{
    CellChunk, Code, Machine, ReadRowsRequest, ReadRowsResponse, Response, RetryPolicy, RowStatus,
    SplitMix64, StoreError, Tag,
};

fn pick<'a, T>(rng: &mut SplitMix64, items: &'a [T]) -> &'a T {
    &items[rng.below(items.len() as u64) as usize]
}

fn small_bytes(rng: &mut SplitMix64, max: u64) -> Vec<u8> {
    let len = rng.below(max + 1);
    (0..len).map(|_| *pick(rng, b"ab\0\xff")).collect()
}

/// Any chunk, with fields drawn from small alphabets so that collisions happen.
fn arbitrary_chunk(rng: &mut SplitMix64) -> CellChunk {
    CellChunk {
        row_key: small_bytes(rng, 2),
        family_name: (rng.below(4) != 0).then(|| pick(rng, &["", "f", "g"]).to_string()),
        qualifier: (rng.below(4) != 0).then(|| small_bytes(rng, 1)),
        timestamp_micros: *pick(rng, &[0, 0, 1000, -1]),
        labels: if rng.below(4) == 0 {
            vec!["l".into()]
        } else {
            vec![]
        },
        value: small_bytes(rng, 3),
        value_size: *pick(
            rng,
            &[0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 5, -1, i32::MAX, i32::MIN],
        ),
        row_status: *pick(
            rng,
            &[
                RowStatus::None,
                RowStatus::Commit,
                RowStatus::Commit,
                RowStatus::Reset,
            ],
        ),
    }
}

#[test]
fn arbitrary_chunk_streams_never_panic() {
    let mut total_committed = 0;
    for seed in 0..3000u64 {
        let mut rng = SplitMix64::new(seed);
        let reversed = rng.below(2) == 0;
        let limit = *pick(&mut rng, &[0i64, 1, 2, -3, i64::MAX]);
        let mut merger = ChunkMerger::new(reversed, limit);
        let mut committed: Vec<Vec<u8>> = Vec::new();
        for _ in 0..rng.below(8) {
            let chunks = (0..rng.below(6))
                .map(|_| arbitrary_chunk(&mut rng))
                .collect();
            let response = ReadRowsResponse {
                chunks,
                last_scanned_row_key: if rng.below(5) == 0 {
                    small_bytes(&mut rng, 2)
                } else {
                    vec![]
                },
            };
            let failed = merger.push_response(response).is_err();
            committed.extend(std::iter::from_fn(|| merger.pop_row()).map(|r| r.key));
            if rng.below(6) == 0 {
                merger.start_new_attempt();
            }
            if failed {
                assert!(merger.push_response(ReadRowsResponse::default()).is_err());
                break;
            }
        }
        let _ = merger.end_of_stream();
        assert_eq!(committed.len() as u64, merger.rows_emitted(), "seed {seed}");
        total_committed += committed.len();
        // Committed keys are strictly monotonic in scan direction and within the limit.
        for pair in committed.windows(2) {
            if reversed {
                assert!(pair[0] > pair[1], "seed {seed}");
            } else {
                assert!(pair[0] < pair[1], "seed {seed}");
            }
        }
        if limit > 0 {
            assert!(committed.len() as u64 <= limit as u64, "seed {seed}");
        }
    }
    // The generator must reach the commit paths, not only the error paths.
    assert!(total_committed > 150, "{total_committed}");
}

/// A random valid stream: rows with random cells, values split at random points, some rows
/// reset and resent, scan markers between rows. Returns the responses and the rows it encodes.
fn valid_stream(rng: &mut SplitMix64) -> (Vec<ReadRowsResponse>, Vec<Row>) {
    let mut responses = vec![ReadRowsResponse::default()];
    let mut rows = Vec::new();
    let row_count = rng.below(5);
    for r in 0..row_count {
        let key = format!("row{r}").into_bytes();
        if rng.below(4) == 0 {
            responses.push(ReadRowsResponse {
                chunks: vec![],
                last_scanned_row_key: format!("row{r}").into_bytes(),
            });
            continue;
        }
        let cells: Vec<Cell> = (0..1 + rng.below(3))
            .map(|_| Cell {
                family: pick(rng, &["", "f", "g"]).to_string(),
                qualifier: small_bytes(rng, 2),
                timestamp: Timestamp(*pick(rng, &[0, 1000, 2000])),
                value: small_bytes(rng, 6),
                labels: if rng.below(3) == 0 {
                    vec!["l".into()]
                } else {
                    vec![]
                },
            })
            .collect();
        let row = Row { key, cells };
        // Sometimes send part of the row, reset it, then send it whole.
        if rng.below(4) == 0 {
            let mut chunks = encode(&row, rng);
            chunks.truncate(1 + rng.below(chunks.len() as u64) as usize);
            if let Some(last) = chunks.last_mut() {
                last.row_status = RowStatus::None;
            }
            chunks.push(CellChunk {
                row_status: RowStatus::Reset,
                ..CellChunk::default()
            });
            push_chunks(&mut responses, chunks);
        }
        push_chunks(&mut responses, encode(&row, rng));
        rows.push(row);
    }
    (responses, rows)
}

fn push_chunks(responses: &mut Vec<ReadRowsResponse>, chunks: Vec<CellChunk>) {
    responses.push(ReadRowsResponse {
        chunks,
        last_scanned_row_key: vec![],
    });
}

/// Encodes a row as a server would (`spec/bigtable.md` 9.3), splitting values at random.
fn encode(row: &Row, rng: &mut SplitMix64) -> Vec<CellChunk> {
    let mut chunks = Vec::new();
    let mut column: Option<(&str, &[u8])> = None;
    for (i, cell) in row.cells.iter().enumerate() {
        let mut first = CellChunk {
            row_key: if i == 0 { row.key.clone() } else { vec![] },
            timestamp_micros: cell.timestamp.0,
            labels: cell.labels.clone(),
            ..CellChunk::default()
        };
        let this = (cell.family.as_str(), cell.qualifier.as_slice());
        if column.map(|c| c.0) != Some(this.0) || i == 0 {
            first.family_name = Some(cell.family.clone());
            first.qualifier = Some(cell.qualifier.clone());
        } else if column.map(|c| c.1) != Some(this.1) {
            first.qualifier = Some(cell.qualifier.clone());
        }
        column = Some(this);
        let pieces = if cell.value.len() >= 2 && rng.below(2) == 0 {
            let cut = 1 + rng.below(cell.value.len() as u64 - 1) as usize;
            vec![&cell.value[..cut], &cell.value[cut..]]
        } else {
            vec![&cell.value[..]]
        };
        let total = i32::try_from(cell.value.len()).unwrap();
        let last_piece = pieces.len() - 1;
        for (p, piece) in pieces.into_iter().enumerate() {
            let mut chunk = if p == 0 {
                first.clone()
            } else {
                CellChunk::default()
            };
            chunk.value = piece.to_vec();
            chunk.value_size = if p < last_piece { total } else { 0 };
            chunks.push(chunk);
        }
    }
    if let Some(last) = chunks.last_mut() {
        last.row_status = RowStatus::Commit;
    }
    chunks
}

/// Re-splits responses at random chunk boundaries; a response's scan marker stays on its
/// first piece.
fn resplit(responses: &[ReadRowsResponse], rng: &mut SplitMix64) -> Vec<ReadRowsResponse> {
    let mut out = Vec::new();
    for response in responses {
        let mut rest = response.chunks.as_slice();
        let mut marker = response.last_scanned_row_key.clone();
        loop {
            let take = rng.below(rest.len() as u64 + 1) as usize;
            let (group, tail) = rest.split_at(take);
            out.push(ReadRowsResponse {
                chunks: group.to_vec(),
                last_scanned_row_key: std::mem::take(&mut marker),
            });
            rest = tail;
            if rest.is_empty() {
                break;
            }
        }
    }
    out
}

fn merge_all(responses: Vec<ReadRowsResponse>) -> Result<Vec<Row>, ()> {
    let mut merger = ChunkMerger::new(false, 0);
    for r in responses {
        merger.push_response(r).map_err(|_| ())?;
    }
    merger.end_of_stream().map_err(|_| ())?;
    Ok(std::iter::from_fn(|| merger.pop_row()).collect())
}

#[test]
fn valid_streams_merge_to_their_rows_however_split() {
    for seed in 0..500u64 {
        let mut rng = SplitMix64::new(seed);
        let (responses, rows) = valid_stream(&mut rng);
        assert_eq!(
            merge_all(responses.clone()),
            Ok(rows.clone()),
            "seed {seed}"
        );
        for _ in 0..10 {
            let split = resplit(&responses, &mut rng);
            assert_eq!(merge_all(split), Ok(rows.clone()), "seed {seed}");
        }
    }
}

#[test]
fn read_rows_machine_always_finishes_by_its_deadline() {
    let policy = RetryPolicy {
        initial_backoff: 1_000,
        max_backoff: 50_000,
        attempt_timeout: 30_000,
        operation_timeout: 1_000_000,
    };
    let codes = [
        Code::Unavailable,
        Code::DeadlineExceeded,
        Code::Aborted,
        Code::Internal,
        Code::NotFound,
    ];
    let (mut oks, mut retried) = (0, 0);
    for seed in 0..500u64 {
        let mut rng = SplitMix64::new(seed);
        let request = ReadRowsRequest {
            rows_limit: *pick(&mut rng, &[0, 1, 3]),
            reversed: rng.below(2) == 0,
            ..ReadRowsRequest::default()
        };
        let mut m = ReadRows::new(request, Timestamp(0), seed, policy);
        let mut now = Timestamp(0);
        let mut current: Option<Tag> = None;
        let mut result = None;
        for _ in 0..10_000 {
            if let Some((tag, _)) = m.poll_request() {
                current = Some(tag);
            }
            while m.poll_abort().is_some() {}
            while m.poll_event().is_some() {}
            if let Some(r) = m.result() {
                result = Some(r);
                break;
            }
            let tag = match (current, rng.below(10)) {
                // Now and then a response to an old or unknown tag.
                (Some(Tag(t)), 0) => Tag(t.wrapping_sub(1)),
                (Some(t), _) => t,
                (None, _) => Tag(rng.below(3)),
            };
            now = now.saturating_add_micros(rng.below(20_000) as i64 - 2_000);
            match rng.below(12) {
                0..=5 => {
                    let chunks = (0..rng.below(4))
                        .map(|_| arbitrary_chunk(&mut rng))
                        .collect();
                    let part = ReadRowsResponse {
                        chunks,
                        last_scanned_row_key: vec![],
                    };
                    m.handle_response(tag, Ok(Response::ReadRowsPart(part)), now);
                }
                6 => m.handle_response(tag, Ok(Response::StreamEnd), now),
                7 | 8 => {
                    let code = *pick(&mut rng, &codes);
                    m.handle_response(tag, Err(StoreError::new(code, "x")), now);
                }
                _ => {
                    let at = m.poll_timeout().expect("a running machine has a timeout");
                    now = now.max(at);
                    m.handle_timeout(now);
                }
            }
        }
        let result = result.unwrap_or_else(|| panic!("seed {seed}: no result"));
        assert!(
            now <= Timestamp(1_000_000) || result.is_err(),
            "seed {seed}"
        );
        oks += usize::from(result.is_ok());
        retried += usize::from(m.retries() > 0);
        assert!(m.poll_timeout().is_none(), "seed {seed}");
    }
    assert!(oks > 20 && retried > 20, "{oks} ok, {retried} retried");
}
