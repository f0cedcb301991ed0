//! The trace store's side of the live layout migration (`docs/migration.md` §2.1, §5): where
//! the marker and the checkpoint live — row `:rk:m:0000000000:`, family `O`, columns `marker`
//! (both tables) and `checkpoint` (the source) — and the trace store's layouts as migration
//! layouts. The records themselves are [`crate::migration`]'s.

use crate::migration::{MarkerPlace, MarkerSchema, MigrationLayout};

use super::Layout;
use super::cells::FAMILY_OPS;
use super::keys::migration_row_name;

/// The column (family `O`) of the marker, in both tables (§2.1).
pub const MARKER_COLUMN: &str = "marker";
/// The column (family `O`) of the checkpoint, in the source table (§2.1).
pub const CHECKPOINT_COLUMN: &str = "checkpoint";

/// A trace store marker: a migration between table layouts (§2.2).
pub type TraceMigrationMarker = crate::migration::MigrationMarker<Layout>;
/// A change of a trace store marker.
pub type TraceMarkerChange = crate::migration::MarkerChange<Layout>;

impl MigrationLayout for Layout {
    const SCHEMA: MarkerSchema = MarkerSchema::TraceStore;

    fn layout_name(self) -> &'static str {
        self.name()
    }

    fn from_layout_name(name: &str) -> Option<Layout> {
        Layout::parse(name)
    }
}

/// Where a table's marker lives (§2.1): `:rk:m:0000000000:`, family `O` (present in both
/// layouts), no layout column (a table's layout is its families), and no row to anchor a
/// predicate to before the start (the marker row is created by the first marker write).
pub fn marker_place() -> MarkerPlace {
    MarkerPlace {
        row: migration_row_name(),
        family: FAMILY_OPS,
        marker_column: MARKER_COLUMN,
        checkpoint_column: CHECKPOINT_COLUMN,
        layout_column: None,
        anchor_column: None,
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec;

    use super::*;
    use crate::migration::{
        MarkerRole, MigrationRecordError, MigrationState, RunId, column_present, value_eq,
    };
    use crate::model::{Mutation, Timestamp};

    fn marker() -> TraceMigrationMarker {
        TraceMigrationMarker {
            target_table: Some("T2".into()),
            source_table: Some("T1".into()),
            role: Some(MarkerRole::Source),
            ..TraceMigrationMarker::new(
                RunId(7),
                Layout::Md5,
                Layout::DigestId,
                MigrationState::Copying,
                Timestamp(5),
                90_000_000,
                "",
            )
        }
    }

    #[test]
    fn trace_marker_round_trips_without_bucket_uid() {
        let text = marker().to_json_text().unwrap();
        assert_eq!(
            text,
            r#"{"run":"00000000000000000000000000000007","from":"md5","to":"digest-id","state":"copying","since":5,"settle_us":90000000,"target_table":"T2","source_table":"T1","role":"source"}"#
        );
        assert_eq!(
            TraceMigrationMarker::from_json_bytes(text.as_bytes()),
            Ok(marker())
        );
        let no_role = text.replace(r#","role":"source""#, "");
        assert_eq!(
            TraceMigrationMarker::from_json_bytes(no_role.as_bytes()),
            Err(MigrationRecordError::MissingMember("role"))
        );
        let objmeta_layout = text.replace(r#""md5""#, r#""v0""#);
        assert_eq!(
            TraceMigrationMarker::from_json_bytes(objmeta_layout.as_bytes()),
            Err(MigrationRecordError::UnknownLayout {
                member: "from",
                value: "v0".into()
            })
        );
        let empty_target = TraceMigrationMarker {
            target_table: Some(alloc::string::String::new()),
            ..marker()
        };
        assert_eq!(
            empty_target.to_json_text(),
            Err(MigrationRecordError::Empty("target_table"))
        );
    }

    #[test]
    fn the_first_marker_write_needs_no_row() {
        let place = marker_place();
        assert_eq!(place.row, b":rk:m:0000000000:".to_vec());
        let start = place.write_marker(None, None, "M");
        let set = Mutation::set_cell("O", b"marker", Timestamp(0), b"M".to_vec());
        assert_eq!(start.predicate, column_present("O", "marker"));
        assert_eq!(
            (start.true_mutations, start.false_mutations),
            (vec![], vec![set.clone()])
        );
        let next = place.write_marker(Some(b"OLD"), None, "M");
        assert_eq!(next.predicate, value_eq("O", "marker", b"OLD"));
        assert_eq!(
            (next.true_mutations, next.false_mutations),
            (vec![set], vec![])
        );
    }
}
