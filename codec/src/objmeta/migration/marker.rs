//! The migration marker and checkpoint of a bucket (`docs/migration.md` §2, §3, §7): the two
//! columns of the bucket's metastore row and the `CheckAndMutateRow`s that change them. The
//! records themselves (texts, states, transitions, settle constants) are shared with the trace
//! store in [`crate::migration`] and re-exported here under their objmeta names.
//!
//! The marker is the one fact every aware process and the migrator agree on: which layout is
//! the truth and what writers must do (§3). It is changed only by conditional writes whose
//! predicate is the marker **and** `d:vFormat` as last read (§2.2), so two migrators, a
//! `createBucket` overwrite or a `deleteBucket` never go unnoticed. Decoding is strict (every
//! member checked, unknown members refused): a damaged or hostile marker is a typed error, not
//! a guess.
//!
//! ```
//! use rowkit_codec::objmeta::keys::VFormat;
//! use rowkit_codec::objmeta::migration::marker::{MigrationMarker, MigrationState, RunId};
//! use rowkit_codec::model::Timestamp;
//!
//! let marker = MigrationMarker::new(
//!     RunId(0x3f1c),
//!     VFormat::V0,
//!     VFormat::V1,
//!     MigrationState::Copying,
//!     Timestamp(1_764_428_400_000_000),
//!     90_000_000,
//!     "b-uid",
//! );
//! let text = marker.to_json_text().unwrap();
//! assert_eq!(
//!     text,
//!     r#"{"run":"00000000000000000000000000003f1c","from":"v0","to":"v1","state":"copying","since":1764428400000000,"settle_us":90000000,"bucket_uid":"b-uid"}"#
//! );
//! assert_eq!(MigrationMarker::from_json_bytes(text.as_bytes()), Ok(marker));
//! ```

use alloc::string::String;
use alloc::vec::Vec;

use crate::model::{Row, RowFilter};
use crate::objmeta::cells::{DOC_FAMILY, filters};
use crate::objmeta::json::Json;
use crate::objmeta::keys::{METASTORE, VFormat, row_key};

pub use crate::migration::{
    CLOCK_SKEW_US, DEFAULT_SETTLE_US, Gate, Gates, LEASE_US, MARKER_TIMESTAMP, MARKER_TTL_US,
    MAX_JSON_INTEGER, MAX_REPAIR_WRITE_US, MAX_WRITE_US, MIN_SETTLE_US, MarkerCells, MarkerPlace,
    MarkerRole, MarkerTransitionError, MigrationCheckpoint, MigrationLayout, MigrationRecordError,
    MigrationState, OptionsPolicy, PassCounters, RunId, check_transition, column_present, value_eq,
};

/// An objmeta marker: a migration between key formats (§2.2).
pub type MigrationMarker = crate::migration::MigrationMarker<VFormat>;
/// A change of an objmeta marker (§2.2, §4.5, §4.7).
pub type MarkerChange = crate::migration::MarkerChange<VFormat>;
/// One conditional write of the metastore row (the shared [`crate::migration::MarkerCas`]).
pub type MetastoreCas = crate::migration::MarkerCas;

/// The column (family [`DOC_FAMILY`]) of the marker on the bucket's metastore row (§2.1).
pub const MARKER_COLUMN: &str = "rowkitMigration";
/// The column (family [`DOC_FAMILY`]) of the checkpoint on the same row (§2.1, §7.1).
pub const CHECKPOINT_COLUMN: &str = "rowkitCheckpoint";
/// The column of the bucket's key format (`objmeta.md` 5.4), part of every marker predicate.
pub const VFORMAT_COLUMN: &str = "vFormat";
/// The column of the bucket's attributes (`objmeta.md` 5.4), whose `uid` names the bucket.
pub const VALUE_COLUMN: &str = "value";

impl MigrationLayout for VFormat {
    const SCHEMA: crate::migration::MarkerSchema = crate::migration::MarkerSchema::Objmeta;

    fn layout_name(self) -> &'static str {
        self.as_str()
    }

    fn from_layout_name(name: &str) -> Option<VFormat> {
        VFormat::parse(name).ok()
    }
}

/// The bucket's metastore row `__metastore‖00‖B`, where the marker lives (§2.1).
pub fn metastore_row(bucket: &str) -> Vec<u8> {
    row_key(METASTORE, bucket)
}

/// Where a bucket's marker lives (§2.1): its metastore row, family `d`, `d:vFormat` in every
/// marker predicate, `d:value` making the row the bucket's.
pub fn metastore_place(bucket: &str) -> MarkerPlace {
    MarkerPlace {
        row: metastore_row(bucket),
        family: DOC_FAMILY,
        marker_column: MARKER_COLUMN,
        checkpoint_column: CHECKPOINT_COLUMN,
        layout_column: Some(VFORMAT_COLUMN),
        anchor_column: Some(VALUE_COLUMN),
    }
}

/// The `d:vFormat` cell value a bucket of key format `vf` holds (`"v1"` with its quotes), as
/// `createBucket` writes it and the switch CAS writes it (§4.5).
pub fn vformat_cell(vf: VFormat) -> Vec<u8> {
    Json::str(vf.as_str()).stringify().into_bytes()
}

/// [`crate::migration::check_marker_change`] for a bucket whose `d:vFormat` reads `vformat`.
pub fn check_marker_change(
    previous: Option<&MigrationMarker>,
    vformat: VFormat,
    change: &MarkerChange,
    gates: Gates,
) -> Result<(), MarkerTransitionError> {
    crate::migration::check_marker_change(previous, Some(vformat), change, gates)
}

/// The migration's columns of the metastore row as read, raw: the bytes a predicate must name
/// (never re-encoded: another writer's text may differ from ours byte for byte).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MigrationColumns {
    /// `d:value` (the bucket's attributes); `None`: the row is not a bucket.
    pub value: Option<Vec<u8>>,
    /// `d:vFormat`.
    pub vformat: Option<Vec<u8>>,
    /// `d:rowkitMigration`.
    pub marker: Option<Vec<u8>>,
    /// `d:rowkitCheckpoint`.
    pub checkpoint: Option<Vec<u8>>,
}

impl From<MarkerCells> for MigrationColumns {
    fn from(cells: MarkerCells) -> MigrationColumns {
        MigrationColumns {
            value: cells.anchor,
            vformat: cells.layout,
            marker: cells.marker,
            checkpoint: cells.checkpoint,
        }
    }
}

impl From<MigrationColumns> for MarkerCells {
    fn from(columns: MigrationColumns) -> MarkerCells {
        MarkerCells {
            anchor: columns.value,
            layout: columns.vformat,
            marker: columns.marker,
            checkpoint: columns.checkpoint,
        }
    }
}

impl MigrationColumns {
    /// The newest cell of each column in `row` (read with `LatestN(1)`).
    pub fn from_row(row: &Row) -> MigrationColumns {
        MigrationColumns::from(metastore_place("").cells_of(Some(row)))
    }

    /// The bucket's key format as Arsenal reads it (`objmeta.md` 4.3): `v1` only for the
    /// cell `"v1"`; absent or anything else is v0.
    pub fn vformat(&self) -> VFormat {
        let text = self.vformat.as_deref().map(String::from_utf8_lossy);
        match text.as_deref().map(Json::parse) {
            Some(Ok(Json::String(s))) => VFormat::from_stored(&s),
            _ => VFormat::V0,
        }
    }
}

/// A `d:` column "as last read": [`value_eq`] of the bytes read, or for a column read absent
/// `Condition(column present, BlockAll, EXISTS)` — still absent, on a row that still has its
/// `d:value` (a deleted bucket does not match).
pub fn column_as_read(qualifier: &str, value: Option<&[u8]>) -> RowFilter {
    // The bucket's place always has `row_exists`, so every column as read is a filter.
    metastore_place("")
        .column_as_read(qualifier, value)
        .unwrap_or(RowFilter::BlockAll)
}

/// The predicate of every marker change (§2.2): `AND(marker as last read, d:vFormat as last
/// read)`, each [`column_as_read`].
pub fn marker_predicate(marker: Option<&[u8]>, vformat: Option<&[u8]>) -> RowFilter {
    filters::and(
        column_as_read(MARKER_COLUMN, marker),
        column_as_read(VFORMAT_COLUMN, vformat),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migration::Truth;
    use crate::model::{KeyBound, Mutation, Timestamp};
    use MigrationState::*;
    use alloc::boxed::Box;
    use alloc::string::ToString;
    use alloc::vec;

    const RUN_HEX: &str = "3f1c0000000000000000000000000abc";
    const RUN: RunId = RunId(0x3f1c_0000_0000_0000_0000_0000_0000_0abc);

    fn marker() -> MigrationMarker {
        MigrationMarker::new(
            RUN,
            VFormat::V0,
            VFormat::V1,
            Copying,
            Timestamp(1_764_428_400_000_000),
            90_000_000,
            "8a3f-uid",
        )
    }

    const MARKER_TEXT: &str = r#"{"run":"3f1c0000000000000000000000000abc","from":"v0","to":"v1","state":"copying","since":1764428400000000,"settle_us":90000000,"bucket_uid":"8a3f-uid"}"#;

    fn checkpoint() -> MigrationCheckpoint {
        MigrationCheckpoint {
            run: RUN,
            state: Copying,
            pass: 1,
            cursor: Some(b"photos/2024\x00x".to_vec()),
            owner: "host:42".into(),
            lease_until: Timestamp(1_764_429_000_000_000),
            counters: PassCounters {
                rows_scanned: 1000,
                copied: 990,
                deleted: 1,
                stamped: 2,
                unchanged: 3,
                stragglers: 0,
                conflicts: 4,
            },
            pass_rows_previous: None,
            started: Timestamp(1_764_428_400_000_000),
            updated: Timestamp(1_764_428_460_000_000),
        }
    }

    const CHECKPOINT_TEXT: &str = r#"{"run":"3f1c0000000000000000000000000abc","state":"copying","pass":1,"cursor":"hex:70686f746f732f323032340078","owner":"host:42","lease_until":1764429000000000,"rows_scanned":1000,"copied":990,"deleted":1,"stamped":2,"unchanged":3,"stragglers":0,"conflicts":4,"pass_rows_previous":null,"started":1764428400000000,"updated":1764428460000000}"#;

    #[test]
    fn marker_json_round_trip() {
        assert_eq!(marker().to_json_text().unwrap(), MARKER_TEXT);
        assert_eq!(
            MigrationMarker::from_json_bytes(MARKER_TEXT.as_bytes()),
            Ok(marker())
        );
        assert_eq!(RUN.to_string(), RUN_HEX);
        assert_eq!(RunId(1).to_string(), "00000000000000000000000000000001");
    }

    #[test]
    fn marker_with_trace_store_members_round_trips() {
        let m = MigrationMarker {
            target_table: Some("T2".into()),
            source_table: Some("T1".into()),
            role: Some(MarkerRole::Source),
            options: Some(OptionsPolicy::Drop),
            ..marker()
        };
        let text = m.to_json_text().unwrap();
        assert_eq!(
            text,
            r#"{"run":"3f1c0000000000000000000000000abc","from":"v0","to":"v1","state":"copying","since":1764428400000000,"settle_us":90000000,"bucket_uid":"8a3f-uid","target_table":"T2","source_table":"T1","role":"source","options":"drop"}"#
        );
        assert_eq!(MigrationMarker::from_json_bytes(text.as_bytes()), Ok(m));
        // null optional members read as absent (§2.2's example writes `"target_table":null`).
        let with_nulls = r#"{"run":"3f1c0000000000000000000000000abc","from":"v0","to":"v1","state":"copying","since":1764428400000000,"settle_us":90000000,"bucket_uid":"8a3f-uid","target_table":null,"role":null}"#;
        assert_eq!(
            MigrationMarker::from_json_bytes(with_nulls.as_bytes()),
            Ok(marker())
        );
    }

    /// `MARKER_TEXT` with `old` replaced by `new` (each test names the one change it makes).
    fn damaged(old: &str, new: &str) -> Result<MigrationMarker, MigrationRecordError> {
        assert!(MARKER_TEXT.contains(old), "{old}");
        MigrationMarker::from_json_bytes(MARKER_TEXT.replacen(old, new, 1).as_bytes())
    }

    #[test]
    fn marker_decoding_errors() {
        use MigrationRecordError as E;
        assert_eq!(
            MigrationMarker::from_json_bytes(b"\xff{}"),
            Err(E::NotUtf8 { offset: 0 })
        );
        assert!(matches!(
            MigrationMarker::from_json_bytes(b"{\"run\":"),
            Err(E::Json(_))
        ));
        assert_eq!(
            MigrationMarker::from_json_bytes(b"[1]"),
            Err(E::NotAnObject)
        );
        assert_eq!(
            MigrationMarker::from_json_bytes(b"{}"),
            Err(E::MissingMember("from"))
        );
        assert_eq!(
            damaged(r#","bucket_uid":"8a3f-uid""#, ""),
            Err(E::MissingMember("bucket_uid"))
        );
        assert_eq!(
            damaged(r#""state":"copying""#, r#""state":"copying","extra":1"#),
            Err(E::UnknownMember("extra".into()))
        );
        assert_eq!(
            damaged(r#""state":"copying""#, r#""state":"paused""#),
            Err(E::UnknownState("paused".into()))
        );
        assert_eq!(
            damaged(r#""state":"copying""#, r#""state":"Copying""#),
            Err(E::UnknownState("Copying".into()))
        );
        assert_eq!(
            damaged(r#""state":"copying""#, r#""state":3"#),
            Err(E::WrongType {
                member: "state",
                expected: "a string"
            })
        );
        assert_eq!(
            damaged(RUN_HEX, "3F1C0000000000000000000000000ABC"),
            Err(E::BadRunId("3F1C0000000000000000000000000ABC".into()))
        );
        assert_eq!(damaged(RUN_HEX, "3f1c"), Err(E::BadRunId("3f1c".into())));
        assert_eq!(
            damaged(RUN_HEX, "3f1c000000000000000000000000zabc"),
            Err(E::BadRunId("3f1c000000000000000000000000zabc".into()))
        );
        assert_eq!(
            damaged(r#""to":"v1""#, r#""to":"v0""#),
            Err(E::SameLayout("v0"))
        );
        assert_eq!(
            damaged(r#""to":"v1""#, r#""to":"v2""#),
            Err(E::UnknownLayout {
                member: "to",
                value: "v2".into()
            })
        );
        assert_eq!(
            damaged(r#""since":1764428400000000"#, r#""since":-1"#),
            Err(E::BadInteger { member: "since" })
        );
        assert_eq!(
            damaged(r#""since":1764428400000000"#, r#""since":1.5"#),
            Err(E::BadInteger { member: "since" })
        );
        assert_eq!(
            damaged(r#""since":1764428400000000"#, r#""since":9007199254740992"#),
            Err(E::BadInteger { member: "since" })
        );
        assert_eq!(
            damaged(r#""settle_us":90000000"#, r#""settle_us":"90s""#),
            Err(E::WrongType {
                member: "settle_us",
                expected: "a number"
            })
        );
        assert_eq!(
            damaged(r#""since":1764428400000000"#, r#""since":null"#),
            Err(E::WrongType {
                member: "since",
                expected: "a number"
            })
        );
        assert_eq!(
            damaged(r#""bucket_uid":"8a3f-uid""#, r#""bucket_uid":"""#),
            Err(E::Empty("bucket_uid"))
        );
        assert_eq!(
            damaged(
                r#""bucket_uid":"8a3f-uid""#,
                r#""bucket_uid":"u","role":"middle""#
            ),
            Err(E::UnknownValue {
                member: "role",
                value: "middle".into()
            })
        );
        assert_eq!(
            damaged(
                r#""bucket_uid":"8a3f-uid""#,
                r#""bucket_uid":"u","options":"keep""#
            ),
            Err(E::UnknownValue {
                member: "options",
                value: "keep".into()
            })
        );
    }

    #[test]
    fn marker_encoding_refuses_what_would_not_read_back() {
        use MigrationRecordError as E;
        let m = MigrationMarker {
            since: Timestamp(-1),
            ..marker()
        };
        assert_eq!(m.to_json_text(), Err(E::BadInteger { member: "since" }));
        let m = MigrationMarker {
            settle_us: 1 << 53,
            ..marker()
        };
        assert_eq!(
            m.to_json_text(),
            Err(E::BadInteger {
                member: "settle_us"
            })
        );
        let m = MigrationMarker {
            to: VFormat::V0,
            ..marker()
        };
        assert_eq!(m.to_json_text(), Err(E::SameLayout("v0")));
        let m = MigrationMarker {
            bucket_uid: String::new(),
            ..marker()
        };
        assert_eq!(m.to_json_text(), Err(E::Empty("bucket_uid")));
    }

    #[test]
    fn checkpoint_json_round_trip() {
        assert_eq!(checkpoint().to_json_text().unwrap(), CHECKPOINT_TEXT);
        assert_eq!(
            MigrationCheckpoint::from_json_bytes(CHECKPOINT_TEXT.as_bytes()),
            Ok(checkpoint())
        );
        let first = MigrationCheckpoint {
            cursor: None,
            pass_rows_previous: Some(7),
            pass: 2,
            ..checkpoint()
        };
        let text = first.to_json_text().unwrap();
        assert!(text.contains(r#""pass":2,"cursor":null,"#), "{text}");
        assert!(text.contains(r#""pass_rows_previous":7,"#), "{text}");
        assert_eq!(
            MigrationCheckpoint::from_json_bytes(text.as_bytes()),
            Ok(first)
        );
        // An empty key (the first Arsenal key of a bucket can be "") is `hex:`.
        let empty = MigrationCheckpoint {
            cursor: Some(vec![]),
            ..checkpoint()
        };
        let text = empty.to_json_text().unwrap();
        assert!(text.contains(r#""cursor":"hex:","#), "{text}");
        assert_eq!(
            MigrationCheckpoint::from_json_bytes(text.as_bytes()),
            Ok(empty)
        );
    }

    fn damaged_checkpoint(
        old: &str,
        new: &str,
    ) -> Result<MigrationCheckpoint, MigrationRecordError> {
        assert!(CHECKPOINT_TEXT.contains(old), "{old}");
        MigrationCheckpoint::from_json_bytes(CHECKPOINT_TEXT.replacen(old, new, 1).as_bytes())
    }

    #[test]
    fn checkpoint_decoding_errors() {
        use MigrationRecordError as E;
        let cursor = r#""cursor":"hex:70686f746f732f323032340078""#;
        for bad in [
            r#""cursor":"70686f746f""#,
            r#""cursor":"hex:7""#,
            r#""cursor":"hex:7G""#,
            r#""cursor":"hex:7A""#,
        ] {
            let text = bad
                .trim_start_matches(r#""cursor":""#)
                .trim_end_matches('"');
            assert_eq!(
                damaged_checkpoint(cursor, bad),
                Err(E::BadCursor(text.into())),
                "{bad}"
            );
        }
        assert_eq!(
            damaged_checkpoint(r#""pass":1"#, r#""pass":0"#),
            Err(E::ZeroPass)
        );
        assert_eq!(
            damaged_checkpoint(r#""owner":"host:42""#, r#""owner":"""#),
            Err(E::Empty("owner"))
        );
        assert_eq!(
            damaged_checkpoint(r#""copied":990,"#, ""),
            Err(E::MissingMember("copied"))
        );
        assert_eq!(
            damaged_checkpoint(r#""conflicts":4"#, r#""conflicts":-4"#),
            Err(E::BadInteger {
                member: "conflicts"
            })
        );
        assert_eq!(
            damaged_checkpoint(r#""state":"copying""#, r#""state":"done""#),
            Err(E::UnknownState("done".into()))
        );
        assert_eq!(
            damaged_checkpoint(r#""updated":1764428460000000"#, r#""updated":1,"lease":2"#),
            Err(E::UnknownMember("lease".into()))
        );
        assert_eq!(
            damaged_checkpoint(
                r#""pass_rows_previous":null"#,
                r#""pass_rows_previous":"x""#
            ),
            Err(E::WrongType {
                member: "pass_rows_previous",
                expected: "a number"
            })
        );
    }

    /// §3's diagram, written out: every (previous, next) pair that is allowed.
    const ALLOWED: &[(Option<MigrationState>, Option<MigrationState>)] = &[
        (None, Some(Copying)),
        (Some(Copying), Some(Verifying)),
        (Some(Verifying), Some(Copying)),
        (Some(Verifying), Some(Switching)),
        (Some(Switching), Some(Switched)),
        (Some(Switched), Some(Cleaning)),
        (Some(Switched), Some(Switching)),
        (Some(Copying), Some(Aborting)),
        (Some(Verifying), Some(Aborting)),
        (Some(Switching), Some(Aborting)),
        (Some(Cleaning), None),
        (Some(Aborting), None),
    ];

    #[test]
    fn every_transition_allowed_or_refused() {
        let mut all = vec![None];
        all.extend(MigrationState::ALL.into_iter().map(Some));
        let mut allowed = 0;
        for &from in &all {
            for &to in &all {
                let expected = ALLOWED.contains(&(from, to));
                let got = check_transition(from, to, Gates::ALL);
                if expected {
                    allowed += 1;
                    assert_eq!(got, Ok(()), "{from:?} -> {to:?}");
                } else {
                    assert_eq!(
                        got,
                        Err(MarkerTransitionError::Refused { from, to }),
                        "{from:?} -> {to:?}"
                    );
                }
            }
        }
        assert_eq!(allowed, ALLOWED.len());
        // Refused on purpose although §3 says "any state before cleaning": it deletes the truth.
        assert!(!Aborting.may_follow(Some(Switched)));
        assert_eq!(
            check_transition(Some(Switched), Some(Aborting), Gates::ALL)
                .unwrap_err()
                .to_string(),
            "migration state aborting cannot follow switched"
        );
        assert_eq!(
            check_transition(None, None, Gates::ALL)
                .unwrap_err()
                .to_string(),
            "migration state (none) cannot follow (none)"
        );
    }

    #[test]
    fn gates() {
        let none = Gates::default();
        assert_eq!(
            check_transition(Some(Verifying), Some(Switching), none),
            Err(MarkerTransitionError::GateClosed {
                state: Switching,
                gate: Gate::Switch
            })
        );
        assert_eq!(
            check_transition(
                Some(Switched),
                Some(Cleaning),
                Gates {
                    switch: true,
                    finish: false
                }
            ),
            Err(MarkerTransitionError::GateClosed {
                state: Cleaning,
                gate: Gate::Finish
            })
        );
        assert_eq!(
            check_transition(Some(Switched), Some(Switching), none),
            Err(MarkerTransitionError::GateClosed {
                state: Switching,
                gate: Gate::Switch
            })
        );
        let switch_only = Gates {
            switch: true,
            finish: false,
        };
        assert_eq!(
            check_transition(Some(Verifying), Some(Switching), switch_only),
            Ok(())
        );
        for (from, to) in [
            (None, Some(Copying)),
            (Some(Copying), Some(Verifying)),
            (Some(Switching), Some(Switched)),
            (Some(Copying), Some(Aborting)),
            (Some(Aborting), None),
        ] {
            assert_eq!(
                check_transition(from, to, none),
                Ok(()),
                "{from:?} -> {to:?}"
            );
        }
        assert_eq!(
            check_transition(Some(Switched), Some(Cleaning), none)
                .unwrap_err()
                .to_string(),
            "entering cleaning needs --finish"
        );
    }

    #[test]
    fn state_properties() {
        assert_eq!(
            MigrationState::ALL.map(MigrationState::as_str),
            [
                "copying",
                "verifying",
                "switching",
                "switched",
                "cleaning",
                "aborting"
            ]
        );
        assert_eq!(
            MigrationState::ALL.map(MigrationState::truth),
            [
                Truth::From,
                Truth::From,
                Truth::From,
                Truth::To,
                Truth::To,
                Truth::From
            ]
        );
        assert_eq!(
            MigrationState::ALL.map(MigrationState::is_fence),
            [false, false, true, false, false, true]
        );
        for s in MigrationState::ALL {
            assert_eq!(MigrationState::parse(s.as_str()), Ok(s));
        }
    }

    #[test]
    fn marker_changes() {
        use MarkerTransitionError as E;
        let copying = marker();
        let verifying = copying.with_state(Verifying, Timestamp(2));
        let switching = copying.with_state(Switching, Timestamp(3));
        let switched = copying.with_state(Switched, Timestamp(4));
        let all = Gates::ALL;
        let w = |m: &MigrationMarker| MarkerChange::Write(m.clone());
        assert_eq!(
            check_marker_change(None, VFormat::V0, &w(&copying), all),
            Ok(())
        );
        assert_eq!(
            check_marker_change(None, VFormat::V1, &w(&copying), all),
            Err(E::WrongVFormat {
                expected: "v0",
                actual: "v1"
            })
        );
        assert_eq!(
            check_marker_change(Some(&copying), VFormat::V0, &w(&verifying), all),
            Ok(())
        );
        let other_run = MigrationMarker {
            run: RunId(9),
            ..verifying.clone()
        };
        assert_eq!(
            check_marker_change(Some(&copying), VFormat::V0, &w(&other_run), all),
            Err(E::Changed("run"))
        );
        let other_settle = MigrationMarker {
            settle_us: 1,
            ..verifying.clone()
        };
        assert_eq!(
            check_marker_change(Some(&copying), VFormat::V0, &w(&other_settle), all),
            Err(E::Changed("settle_us"))
        );
        let other_uid = MigrationMarker {
            bucket_uid: "x".into(),
            ..verifying.clone()
        };
        assert_eq!(
            check_marker_change(Some(&copying), VFormat::V0, &w(&other_uid), all),
            Err(E::Changed("bucket_uid"))
        );
        // Switched only through the switch CAS, and the switch CAS only into switched.
        assert_eq!(
            check_marker_change(Some(&switching), VFormat::V0, &w(&switched), all),
            Err(E::SwitchOnlyBySwitchCas)
        );
        assert_eq!(
            check_marker_change(
                Some(&verifying),
                VFormat::V0,
                &MarkerChange::Switch(switching.clone()),
                all
            ),
            Err(E::SwitchOnlyBySwitchCas)
        );
        assert_eq!(
            check_marker_change(
                Some(&switching),
                VFormat::V0,
                &MarkerChange::Switch(switched.clone()),
                all
            ),
            Ok(())
        );
        // After the switch the bucket is `to`.
        let cleaning = copying.with_state(Cleaning, Timestamp(5));
        assert_eq!(
            check_marker_change(Some(&switched), VFormat::V1, &w(&cleaning), all),
            Ok(())
        );
        assert_eq!(
            check_marker_change(Some(&switched), VFormat::V0, &w(&cleaning), all),
            Err(E::WrongVFormat {
                expected: "v1",
                actual: "v0"
            })
        );
        assert_eq!(
            check_marker_change(Some(&cleaning), VFormat::V1, &MarkerChange::Remove, all),
            Ok(())
        );
        assert_eq!(
            check_marker_change(Some(&copying), VFormat::V0, &MarkerChange::Remove, all),
            Err(E::Refused {
                from: Some(Copying),
                to: None
            })
        );
        // §4.9: switched rolls back by a swapped run entering switching.
        let rollback = MigrationMarker {
            run: RunId(77),
            from: VFormat::V1,
            to: VFormat::V0,
            state: Switching,
            ..copying.clone()
        };
        assert_eq!(
            check_marker_change(Some(&switched), VFormat::V1, &w(&rollback), all),
            Ok(())
        );
        let not_swapped = MigrationMarker {
            run: RunId(77),
            ..switching.clone()
        };
        assert_eq!(
            check_marker_change(Some(&switched), VFormat::V1, &w(&not_swapped), all),
            Err(E::Changed("run"))
        );
        let same = MigrationMarker {
            to: VFormat::V0,
            ..copying.clone()
        };
        assert_eq!(
            check_marker_change(None, VFormat::V0, &w(&same), all),
            Err(E::SameLayout("v0"))
        );
    }

    #[test]
    fn predicates_and_mutations() {
        let d = || RowFilter::FamilyNameRegex("d".into());
        let col = |q: &[u8]| RowFilter::ColumnQualifierRegex(q.to_vec());
        let eq = |v: &[u8]| RowFilter::ValueRange {
            start: KeyBound::Closed(v.to_vec()),
            end: KeyBound::Closed(v.to_vec()),
        };
        let exists = RowFilter::Chain(vec![d(), col(b"value")]);
        assert_eq!(metastore_row("b"), b"__metastore\x00b");
        assert_eq!(vformat_cell(VFormat::V1), b"\"v1\"");
        assert_eq!(
            value_eq("d", "rowkitMigration", b"m"),
            RowFilter::Chain(vec![d(), col(b"rowkitMigration"), eq(b"m")])
        );
        let absent_marker = RowFilter::Condition {
            predicate: Some(Box::new(RowFilter::Chain(vec![
                d(),
                col(b"rowkitMigration"),
            ]))),
            true_filter: Some(Box::new(RowFilter::BlockAll)),
            false_filter: Some(Box::new(exists.clone())),
        };
        let vformat_eq = RowFilter::Chain(vec![d(), col(b"vFormat"), eq(b"\"v0\"")]);
        let start = metastore_place("b").write_marker(None, Some(b"\"v0\""), "M");
        assert_eq!(
            start.predicate,
            RowFilter::Condition {
                predicate: Some(Box::new(absent_marker)),
                true_filter: Some(Box::new(vformat_eq.clone())),
                false_filter: Some(Box::new(RowFilter::BlockAll)),
            }
        );
        assert_eq!(
            start.true_mutations,
            vec![Mutation::SetCell {
                family: "d".into(),
                qualifier: b"rowkitMigration".to_vec(),
                timestamp: Timestamp(0),
                value: b"M".to_vec(),
            }]
        );
        assert!(start.false_mutations.is_empty());
        let switch = metastore_place("b").switch(
            Some(b"OLD"),
            Some(b"\"v0\""),
            vformat_cell(VFormat::V1),
            "NEW",
        );
        assert_eq!(
            switch.predicate,
            RowFilter::Condition {
                predicate: Some(Box::new(RowFilter::Chain(vec![
                    d(),
                    col(b"rowkitMigration"),
                    eq(b"OLD")
                ]))),
                true_filter: Some(Box::new(vformat_eq)),
                false_filter: Some(Box::new(RowFilter::BlockAll)),
            }
        );
        assert_eq!(
            switch.true_mutations,
            vec![
                Mutation::SetCell {
                    family: "d".into(),
                    qualifier: b"vFormat".to_vec(),
                    timestamp: Timestamp(0),
                    value: b"\"v1\"".to_vec(),
                },
                Mutation::SetCell {
                    family: "d".into(),
                    qualifier: b"rowkitMigration".to_vec(),
                    timestamp: Timestamp(0),
                    value: b"NEW".to_vec(),
                },
            ]
        );
        let remove = metastore_place("b").remove(Some(b"OLD"), Some(b"\"v1\""));
        assert_eq!(
            remove.true_mutations,
            vec![
                Mutation::DeleteFromColumn {
                    family: "d".into(),
                    qualifier: b"rowkitMigration".to_vec(),
                    range: None,
                },
                Mutation::DeleteFromColumn {
                    family: "d".into(),
                    qualifier: b"rowkitCheckpoint".to_vec(),
                    range: None,
                },
            ]
        );
        let next = metastore_place("b").write_checkpoint(Some(b"C1"), "C2");
        assert_eq!(
            next.predicate,
            RowFilter::Chain(vec![d(), col(b"rowkitCheckpoint"), eq(b"C1")])
        );
        let first = metastore_place("b").write_checkpoint(None, "C1");
        assert_eq!(
            first.predicate,
            RowFilter::Condition {
                predicate: Some(Box::new(RowFilter::Chain(vec![
                    d(),
                    col(b"rowkitCheckpoint")
                ]))),
                true_filter: Some(Box::new(RowFilter::BlockAll)),
                false_filter: Some(Box::new(RowFilter::Chain(vec![
                    d(),
                    col(b"rowkitMigration")
                ]))),
            }
        );
        assert_eq!(
            first.true_mutations,
            vec![Mutation::SetCell {
                family: "d".into(),
                qualifier: b"rowkitCheckpoint".to_vec(),
                timestamp: Timestamp(0),
                value: b"C1".to_vec(),
            }]
        );
    }

    #[test]
    fn columns_of_a_row() {
        use crate::model::Cell;
        let cell = |f: &str, q: &str, v: &[u8]| Cell {
            family: f.into(),
            qualifier: q.as_bytes().to_vec(),
            timestamp: Timestamp(0),
            value: v.to_vec(),
            labels: vec![],
        };
        let row = Row {
            key: b"__metastore\x00b".to_vec(),
            cells: vec![
                cell("d", "rowkitCheckpoint", b"C"),
                cell("d", "rowkitMigration", b"M"),
                cell("d", "vFormat", b"\"v1\""),
                cell("d", "value", b"{}"),
                cell("f", "rowkitMigration", b"not this one"),
            ],
        };
        let c = MigrationColumns::from_row(&row);
        assert_eq!(
            c,
            MigrationColumns {
                value: Some(b"{}".to_vec()),
                vformat: Some(b"\"v1\"".to_vec()),
                marker: Some(b"M".to_vec()),
                checkpoint: Some(b"C".to_vec()),
            }
        );
        assert_eq!(c.vformat(), VFormat::V1);
        let v0 = MigrationColumns {
            vformat: Some(b"\"v2\"".to_vec()),
            ..MigrationColumns::default()
        };
        assert_eq!(v0.vformat(), VFormat::V0);
        assert_eq!(MigrationColumns::default().vformat(), VFormat::V0);
    }
}
