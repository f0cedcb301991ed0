#![allow(clippy::unwrap_used, clippy::cloned_ref_to_slice_refs)]
//! `spec/triples.md` §12 scenario 13: the time-bound and paging rules of the lookup pipeline
//! as pure functions, and the request shapes of the machines.

use rowkit_codec::triples::{Anchor, Predicate, Triple};
use rowkit_statemachines::operation::Start;
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
    let config = OperationConfig::new("badwolf");
    let mut m = NewGraph::new(
        config.clone(),
        b"g",
        Start::within(Timestamp(0), 1, 60_000_000),
    );
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
    let mut m = NewGraph::new(
        config.clone(),
        &long,
        Start::within(Timestamp(0), 1, 60_000_000),
    );
    assert!(m.poll_request().is_none());
    assert!(matches!(m.result(), Some(Err(TriplesError::Key(_)))));
    assert!(
        NewGraph::new(
            config,
            &long[..3981],
            Start::within(Timestamp(0), 1, 60_000_000)
        )
        .poll_request()
        .is_some()
    );
}

/// Spec §5.2 taken literally (hold all of `C`, stable sort, skip, take): the reference the
/// streaming [`filter_candidates`] pipeline must equal.
fn literal_pipeline(c: &[Triple], op: Option<&Predicate>, lo: &LookupOptions) -> Vec<Triple> {
    use std::collections::BTreeMap;
    let bounded = |t: &Triple| {
        let Some(anchor) = t.predicate.anchor() else {
            return true;
        };
        op.and_then(Predicate::anchor)
            .is_none_or(|q| anchor.same_instant(q))
            && lo
                .lower_anchor
                .is_none_or(|l| !anchor.cmp_instant(&l).is_lt())
            && lo
                .upper_anchor
                .is_none_or(|u| !anchor.cmp_instant(&u).is_gt())
    };
    let mut kept: Vec<Triple> = c.iter().filter(|t| bounded(t)).cloned().collect();
    if lo.latest_anchor {
        let op_text = op.map(Predicate::to_text);
        kept.retain(|t| op_text.as_ref().is_none_or(|q| *q == t.predicate.to_text()));
        kept.retain(|t| !t.predicate.is_immutable());
        let mut latest: BTreeMap<_, Anchor> = BTreeMap::new();
        for t in &kept {
            let a = *t.predicate.anchor().unwrap();
            latest
                .entry(t.predicate.partial_uuid())
                .and_modify(|cur: &mut Anchor| {
                    if a.cmp_instant(cur).is_gt() {
                        *cur = a;
                    }
                })
                .or_insert(a);
        }
        kept.retain(|t| {
            t.predicate
                .anchor()
                .unwrap()
                .same_instant(&latest[&t.predicate.partial_uuid()])
        });
    }
    kept.sort_by_key(|t| t.to_text());
    let skip = lo.max_elements.wrapping_mul(lo.offset).max(0) as usize;
    let limit = if lo.max_elements > 0 {
        lo.max_elements as usize
    } else {
        usize::MAX
    };
    kept.into_iter().skip(skip).take(limit).collect()
}

#[test]
fn streaming_pipeline_equals_the_literal_spec_on_random_candidate_sets() {
    let anchors = [None, Some(A13), Some(A14), Some(A15)];
    let mut rng = rowkit_statemachines::SplitMix64::new(2026);
    for round in 0..2000 {
        let n = (rng.next_u64() % 12) as usize;
        let c: Vec<Triple> = (0..n)
            .map(|_| {
                let anchor = anchors[(rng.next_u64() % 4) as usize];
                let p = match anchor {
                    Some(a) => format!("\"p{}\"@[{a}]", rng.next_u64() % 2),
                    None => format!("\"p{}\"@[]", rng.next_u64() % 2),
                };
                let text = format!(
                    "/u<s{}>\t{p}\t/u<o{}>",
                    rng.next_u64() % 3,
                    rng.next_u64() % 2
                );
                Triple::parse(text.as_bytes()).unwrap()
            })
            .collect();
        let pick = |rng: &mut rowkit_statemachines::SplitMix64| {
            anchors[(rng.next_u64() % 4) as usize].map(a)
        };
        let lo = LookupOptions {
            max_elements: (rng.next_u64() % 4) as i64 - 1,
            offset: (rng.next_u64() % 3) as i64,
            lower_anchor: pick(&mut rng),
            upper_anchor: pick(&mut rng),
            latest_anchor: rng.next_u64().is_multiple_of(2),
            ..Default::default()
        };
        let op = match rng.next_u64() % 3 {
            0 => None,
            1 => Some(Predicate::parse(format!("\"p0\"@[{A14}]").as_bytes()).unwrap()),
            _ => Some(Predicate::parse(b"\"p1\"@[]").unwrap()),
        };
        let want = literal_pipeline(&c, op.as_ref(), &lo);
        let got = filter_candidates(c.clone(), op.as_ref(), &lo).unwrap();
        assert_eq!(got, want, "round {round}: {lo:?} op {op:?}");
    }
}
