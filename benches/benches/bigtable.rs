//! Requests per second through the Bigtable adapter and rowkit-client's `TokioDriver` against
//! the emulator (started by `rowkit_bigtable::emulator`): ReadRow (a one-key ReadRows through
//! the ReadRows machine), MutateRow and CheckAndMutateRow, with 1 and 16 requests in flight.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::StreamExt;
use rowkit_bigtable::BigtableConnection;
use rowkit_bigtable::emulator::Emulator;
use rowkit_client::{TokioDriver, run};
use rowkit_codec::model::{ColumnFamily, Mutation, RowFilter, RowSet, Timestamp};
use rowkit_embedded::driver::{Clock, SystemClock};
use rowkit_statemachines::raw::Unary;
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    CheckAndMutateRowRequest, MutateRowRequest, ReadRowsRequest, Request, RetryPolicy,
};

const TABLE: &str = "bench";
const ROWS: u64 = 1000;

fn key(i: u64) -> Vec<u8> {
    format!("row{:05}", i % ROWS).into_bytes()
}

fn set(i: u64) -> Mutation {
    Mutation::SetCell {
        family: "cf".into(),
        qualifier: b"q".to_vec(),
        timestamp: Timestamp::from_millis(1),
        value: format!("value-{i}").into_bytes(),
    }
}

async fn one(conn: &TokioDriver, op: &str, i: u64) {
    match op {
        "ReadRow" => {
            let req = ReadRowsRequest {
                table: TABLE.into(),
                rows: RowSet::key(key(i)),
                ..Default::default()
            };
            let m = ReadRows::new(req, SystemClock.now(), i, RetryPolicy::default());
            let n = run(conn, m, |_| {}).await.unwrap();
            assert_eq!(n, 1);
        }
        "MutateRow" => {
            let req = Request::MutateRow(MutateRowRequest {
                table: TABLE.into(),
                row_key: key(i),
                mutations: vec![set(i)],
                ..Default::default()
            });
            run(conn, Unary::new(req), |_| {}).await.unwrap();
        }
        _ => {
            let req = Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                table: TABLE.into(),
                row_key: key(i),
                predicate: Some(RowFilter::ValueRegex(b"value-.*".to_vec())),
                true_mutations: vec![set(i)],
                false_mutations: vec![],
                ..Default::default()
            });
            run(conn, Unary::new(req), |_| {}).await.unwrap();
        }
    }
}

fn bench(c: &mut Criterion) {
    let Some(emu) = Emulator::shared_or_skip("bigtable bench") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let conn = rt.block_on(async {
        let conn = BigtableConnection::connect(emu.fresh_target(), None)
            .await
            .unwrap();
        conn.create_table(TABLE, &[ColumnFamily::new("cf")])
            .await
            .unwrap();
        let conn = TokioDriver::new(conn);
        for i in 0..ROWS {
            one(&conn, "MutateRow", i).await;
        }
        conn
    });
    let mut group = c.benchmark_group("bigtable-emulator");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(1));
    for op in ["ReadRow", "MutateRow", "CheckAndMutateRow"] {
        for in_flight in [1usize, 16] {
            group.bench_function(format!("{op}/{in_flight} in flight"), |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let start = Instant::now();
                        futures_util::stream::iter(0..iters)
                            .for_each_concurrent(in_flight, |i| {
                                let conn = &conn;
                                async move { one(conn, op, i).await }
                            })
                            .await;
                        start.elapsed()
                    })
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
