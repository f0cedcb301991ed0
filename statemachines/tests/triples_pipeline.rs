#![allow(clippy::unwrap_used, clippy::cloned_ref_to_slice_refs)]
//! `spec/triples.md` §12 scenario 13: the time-bound and paging rules of the lookup pipeline
//! as pure functions, and the request shapes of the machines.

use rowkit_codec::triples::{Anchor, Predicate, Triple};
use rowkit_statemachines::triples::{
    LookupOptions, NewGraph, OperationConfig, TriplesError, filter_candidates,
};
use rowkit_statemachines::{Machine, Request, Response, Timestamp};

const A13: &str = "2013-07-19T13:12:04.669618843-07:00";
const A14: &str = "2014-07-19T13:12:04.669618843-07:00";
const A15: &str = "2015-07-19T13:12:04.669618843-07:00";

fn t(anchor: Option<&str>) -> Triple {
    let p = match anchor {
        Some(a) => format!("\"foo\"@[{a}]"),
        None => "\"foo\"@[]".into(),
    };
    Triple::parse(format!("/u<a>\t{p}\t/u<b>").as_bytes()).unwrap()
}

fn a(s: &str) -> Anchor {
    Anchor::parse(s.as_bytes()).unwrap()
}

fn keeps(c: Vec<Triple>, op: Option<&Predicate>, lo: LookupOptions) -> Vec<Triple> {
    filter_candidates(c, op, &lo).unwrap()
}

#[test]
fn scenario_13_time_bounds() {
    let imm = t(None);
    let (t13, t14, t15) = (t(Some(A13)), t(Some(A14)), t(Some(A15)));
    let got = keeps(
        vec![imm.clone(), t14.clone()],
        None,
        LookupOptions::default(),
    );
    assert_eq!(got.len(), 2);
    let lower = |x: &str| LookupOptions {
        lower_anchor: Some(a(x)),
        ..Default::default()
    };
    let upper = |x: &str| LookupOptions {
        upper_anchor: Some(a(x)),
        ..Default::default()
    };
    assert_eq!(keeps(vec![t14.clone()], None, lower(A13)), [t14.clone()]);
    assert!(keeps(vec![t13.clone()], None, lower(A14)).is_empty());
    assert_eq!(keeps(vec![t14.clone()], None, upper(A15)), [t14.clone()]);
    assert!(keeps(vec![t15.clone()], None, upper(A14)).is_empty());
    // Bounds are inclusive.
    assert_eq!(keeps(vec![t14.clone()], None, lower(A14)), [t14.clone()]);
    assert_eq!(keeps(vec![t14.clone()], None, upper(A14)), [t14.clone()]);
    let q = Predicate::parse(format!("\"foo\"@[{A14}]").as_bytes()).unwrap();
    assert_eq!(
        keeps(vec![t14.clone()], Some(&q), lower(A13)),
        [t14.clone()]
    );
    assert!(keeps(vec![t13.clone()], Some(&q), lower(A14)).is_empty());
    assert_eq!(
        keeps(vec![t14.clone()], Some(&q), upper(A15)),
        [t14.clone()]
    );
    // An anchored query predicate drops other anchors and keeps immutables.
    let got = keeps(
        vec![imm.clone(), t13, t14.clone(), t15],
        Some(&q),
        LookupOptions::default(),
    );
    assert_eq!(got.len(), 2);
    assert!(got.contains(&imm) && got.contains(&t14));
}

#[test]
fn scenario_13_paging() {
    let items: Vec<Triple> = (0..11)
        .map(|i| Triple::parse(format!("/u<a{i:02}>\t\"p\"@[]\t/u<b>").as_bytes()).unwrap())
        .collect();
    let lo = LookupOptions {
        max_elements: 1,
        ..Default::default()
    };
    let got = keeps(items.clone(), None, lo);
    assert_eq!(got, [items[0].clone()]);
    // A negative product skips nothing; a huge one skips everything.
    let lo = LookupOptions {
        max_elements: 2,
        offset: -3,
        ..Default::default()
    };
    assert_eq!(keeps(items.clone(), None, lo).len(), 2);
    let lo = LookupOptions {
        max_elements: 2,
        offset: 100,
        ..Default::default()
    };
    assert!(keeps(items, None, lo).is_empty());
}

#[test]
fn options_errors_need_no_data() {
    let lo = LookupOptions {
        latest_anchor: true,
        filter_options: Some(rowkit_statemachines::triples::FilterOptions {
            operation: rowkit_statemachines::triples::FilterOperation::IS_IMMUTABLE,
            field: rowkit_statemachines::triples::FilterField::PREDICATE,
            value: None,
        }),
        ..Default::default()
    };
    assert_eq!(
        filter_candidates(vec![], None, &lo)
            .unwrap_err()
            .to_string(),
        "cannot have LatestAnchor and FilterOptions used at the same time inside lookup options"
    );
}

#[test]
fn new_graph_is_one_check_and_mutate_and_rejects_long_ids() {
    let config = OperationConfig::new("badwolf", Timestamp::from_secs(60));
    let mut m = NewGraph::new(b"g", config.clone(), Timestamp(0), 1);
    let (tag, request) = m.poll_request().unwrap();
    let Request::CheckAndMutateRow(r) = request else {
        panic!("{request:?}")
    };
    assert_eq!(r.row_key, b"graph:g");
    assert!(m.poll_request().is_none());
    m.handle_response(
        tag,
        Ok(Response::CheckAndMutateRow {
            predicate_matched: true,
        }),
        Timestamp(1),
    );
    assert_eq!(
        m.result().unwrap().unwrap_err().to_string(),
        "graph \"g\" already exist"
    );
    let long = vec![b'x'; 3982];
    let mut m = NewGraph::new(&long, config.clone(), Timestamp(0), 1);
    assert!(m.poll_request().is_none());
    assert!(matches!(m.result(), Some(Err(TriplesError::Key(_)))));
    assert!(
        NewGraph::new(&long[..3981], config, Timestamp(0), 1)
            .poll_request()
            .is_some()
    );
}
