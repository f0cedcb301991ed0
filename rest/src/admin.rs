//! Table administration in Google's JSON shapes: the Bigtable Admin v2 REST
//! binding (`bigtableadmin.googleapis.com`, `google/bigtable/admin/v2/bigtable_table_admin.proto`)
//! under the same `/v2/projects/{p}/instances/{i}` paths as the data API, with the proto3 JSON
//! rules of section 3. The gateway decodes requests and encodes tables with it; `rowkit-fetch`
//! the reverse.
//!
//! | call | HTTP | path | body | answer |
//! |---|---|---|---|---|
//! | CreateTable | `POST` | `…/tables` | `{tableId, table: {columnFamilies}, initialSplits}` | `Table` |
//! | ListTables | `GET` | `…/tables` (`?view=`) | — | `{tables: [Table]}` |
//! | GetTable | `GET` | `…/tables/{t}` (`?view=`) | — | `Table` |
//! | DeleteTable | `DELETE` | `…/tables/{t}` | — | `{}` |
//! | ModifyColumnFamilies | `POST` | `…/tables/{t}:modifyColumnFamilies` | `{modifications}` | `Table` |
//!
//! A GC rule is one of `{"maxNumVersions": 1}`, `{"maxAge": "3600s"}`,
//! `{"intersection": {"rules": […]}}`, `{"union": {"rules": […]}}`; `{}` keeps every cell.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{ColumnFamily, FamilyChange, GcRule};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use crate::convert::{RestError, parse, to_json};
use crate::proto3::{B64, DurationMicros, Int32};
use crate::{TableName, split_table_method};

/// The URL name of ModifyColumnFamilies, after the table's `:`.
const MODIFY_FAMILIES: &str = "modifyColumnFamilies";

/// An admin path: the tables of an instance, one table, or one table's
/// `:modifyColumnFamilies`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminPath {
    /// `/v2/projects/{p}/instances/{i}/tables`: CreateTable (`POST`), ListTables (`GET`).
    Tables {
        /// Project id.
        project: String,
        /// Instance id.
        instance: String,
    },
    /// `/v2/projects/{p}/instances/{i}/tables/{t}`: GetTable (`GET`), DeleteTable (`DELETE`).
    Table(TableName),
    /// `/v2/projects/{p}/instances/{i}/tables/{t}:modifyColumnFamilies` (`POST`).
    ModifyColumnFamilies(TableName),
}

impl AdminPath {
    /// Parses an admin path (`%3A` accepted for `:`); `None` for any other path, the data
    /// calls' included.
    pub fn parse(path: &str) -> Option<AdminPath> {
        let rest = path.strip_prefix("/v2/projects/")?;
        let (project, rest) = rest.split_once('/')?;
        let rest = rest.strip_prefix("instances/")?;
        let (instance, rest) = rest.split_once('/')?;
        let segment_ok = |s: &str| !s.is_empty() && !s.contains('/') && !s.contains(':');
        if !segment_ok(project) || !segment_ok(instance) {
            return None;
        }
        if rest == "tables" {
            return Some(AdminPath::Tables {
                project: project.to_string(),
                instance: instance.to_string(),
            });
        }
        let last = rest.strip_prefix("tables/")?;
        if last.contains('/') {
            return None;
        }
        let modify = last
            .strip_suffix(MODIFY_FAMILIES)
            .and_then(|t| t.strip_suffix(':').or_else(|| strip_suffix_ci(t, "%3a")));
        let (table, modify) = match modify {
            Some(table) => (table, true),
            None if split_table_method(last).is_some() || last.contains(':') => return None,
            None => (last, false),
        };
        if table.is_empty() || table.to_ascii_lowercase().contains("%3a") {
            return None;
        }
        let name = TableName::new(project, instance, table);
        Some(if modify {
            AdminPath::ModifyColumnFamilies(name)
        } else {
            AdminPath::Table(name)
        })
    }
}

/// `text` without `suffix`, compared without regard to ASCII case.
fn strip_suffix_ci<'t>(text: &'t str, suffix: &str) -> Option<&'t str> {
    let at = text.len().checked_sub(suffix.len())?;
    (text.is_char_boundary(at) && text[at..].eq_ignore_ascii_case(suffix)).then(|| &text[..at])
}

/// `/v2/projects/{p}/instances/{i}/tables`: where tables are created and listed.
pub fn tables_path(project: &str, instance: &str) -> String {
    format!("/v2/projects/{project}/instances/{instance}/tables")
}

impl TableName {
    /// `/v2/projects/{p}/instances/{i}/tables/{t}`: GetTable and DeleteTable.
    pub fn admin_path(&self) -> String {
        format!("/v2/{}", self.resource_name())
    }

    /// `/v2/projects/{p}/instances/{i}/tables/{t}:modifyColumnFamilies`.
    pub fn modify_families_path(&self) -> String {
        format!("/v2/{}:{MODIFY_FAMILIES}", self.resource_name())
    }
}

/// What of a table an answer shows (`Table.View`, the `view` query parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableView {
    /// `NAME_ONLY`: the name alone (ListTables' default).
    NameOnly,
    /// `SCHEMA_VIEW`: name, families, granularity (GetTable's default).
    Schema,
    /// `REPLICATION_VIEW`: name and the cluster's replication state.
    Replication,
    /// `ENCRYPTION_VIEW`: name and the cluster's encryption.
    Encryption,
    /// `FULL`: everything.
    Full,
}

impl TableView {
    /// The view a `view` parameter names (its enum name or number); `None` for
    /// `VIEW_UNSPECIFIED` (0), which means the call's default, and `Err` for anything else.
    pub fn parse(value: &str) -> Result<Option<TableView>, RestError> {
        Ok(Some(match value {
            "VIEW_UNSPECIFIED" | "0" => return Ok(None),
            "NAME_ONLY" | "1" => TableView::NameOnly,
            "SCHEMA_VIEW" | "2" => TableView::Schema,
            "REPLICATION_VIEW" | "3" => TableView::Replication,
            "ENCRYPTION_VIEW" | "5" => TableView::Encryption,
            "FULL" | "4" => TableView::Full,
            other => {
                return Err(RestError::Json {
                    what: "Table.View",
                    message: format!(
                        "unknown view {other:?}: expected NAME_ONLY, SCHEMA_VIEW, REPLICATION_VIEW, ENCRYPTION_VIEW or FULL"
                    ),
                });
            }
        }))
    }

    /// Whether the view shows the families.
    pub fn shows_families(self) -> bool {
        matches!(self, TableView::Schema | TableView::Full)
    }
}

// --- shapes ------------------------------------------------------------------------------------

/// `google.bigtable.admin.v2.GcRule`: at most one member; none (`{}`) keeps every cell.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GcRuleJson {
    /// Keep the newest N cells of each column.
    #[serde(
        default,
        alias = "max_num_versions",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_num_versions: Option<Int32>,
    /// Delete cells older than this.
    #[serde(default, alias = "max_age", skip_serializing_if = "Option::is_none")]
    pub max_age: Option<DurationMicros>,
    /// Delete what every rule deletes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intersection: Option<GcRulesJson>,
    /// Delete what any rule deletes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub union: Option<GcRulesJson>,
}

/// `GcRule.Intersection` / `GcRule.Union`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GcRulesJson {
    /// The member rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<GcRuleJson>>,
}

/// `google.bigtable.admin.v2.ColumnFamily`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ColumnFamilyJson {
    /// The GC rule; absent keeps every cell.
    #[serde(default, alias = "gc_rule", skip_serializing_if = "Option::is_none")]
    pub gc_rule: Option<GcRuleJson>,
    /// An aggregate family's type: not modelled by rowkit (`UNIMPLEMENTED` when present).
    #[serde(default, alias = "value_type", skip_serializing)]
    pub value_type: Option<IgnoredAny>,
    /// Output only (statistics); accepted and ignored.
    #[serde(default, skip_serializing)]
    pub stats: Option<IgnoredAny>,
}

/// `Table.ClusterState`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterStateJson {
    /// `READY` in a replication view.
    #[serde(
        default,
        alias = "replication_state",
        skip_serializing_if = "Option::is_none"
    )]
    pub replication_state: Option<String>,
    /// `[{"encryptionType": "GOOGLE_DEFAULT_ENCRYPTION"}]` in an encryption view.
    #[serde(
        default,
        alias = "encryption_info",
        skip_serializing_if = "Option::is_none"
    )]
    pub encryption_info: Option<Vec<EncryptionInfoJson>>,
}

/// `EncryptionInfo` (the parts rowkit answers).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionInfoJson {
    /// `GOOGLE_DEFAULT_ENCRYPTION`.
    #[serde(default, alias = "encryption_type")]
    pub encryption_type: String,
}

/// `google.bigtable.admin.v2.Table`, the fields rowkit serves. In a request only
/// `columnFamilies` (and `granularity` `MILLIS` or unspecified) carry meaning; output-only
/// fields are accepted and ignored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TableJson {
    /// `projects/{p}/instances/{i}/tables/{t}`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Cluster id -> state (replication and encryption views).
    #[serde(
        default,
        alias = "cluster_states",
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_states: Option<BTreeMap<String, ClusterStateJson>>,
    /// Family name -> family.
    #[serde(
        default,
        alias = "column_families",
        skip_serializing_if = "Option::is_none"
    )]
    pub column_families: Option<BTreeMap<String, ColumnFamilyJson>>,
    /// Timestamp granularity: rowkit tables are `MILLIS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granularity: Option<EnumJson>,
    /// Deletion protection: rowkit has none (`UNIMPLEMENTED` when `true`).
    #[serde(
        default,
        alias = "deletion_protection",
        skip_serializing_if = "core::ops::Not::not"
    )]
    pub deletion_protection: bool,
}

/// A proto enum value: its name (emitted) or its number (accepted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EnumJson {
    /// `"MILLIS"`.
    Name(String),
    /// `1`.
    Number(i32),
}

/// `CreateTableRequest.Split`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SplitJson {
    /// The split's row key.
    #[serde(default)]
    pub key: B64,
}

/// `google.bigtable.admin.v2.CreateTableRequest` (the parent comes from the URL).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateTableRequestJson {
    /// Optional; when present it must be the URL's instance.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parent: String,
    /// The new table's id.
    #[serde(default, alias = "table_id")]
    pub table_id: String,
    /// The table: its families.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<TableJson>,
    /// Row keys the table starts split at.
    #[serde(
        default,
        alias = "initial_splits",
        skip_serializing_if = "Option::is_none"
    )]
    pub initial_splits: Option<Vec<SplitJson>>,
}

/// `google.bigtable.admin.v2.ListTablesResponse` (one page: rowkit lists every table).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListTablesResponseJson {
    /// The tables, in the view asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<Vec<TableJson>>,
    /// Never set by rowkit.
    #[serde(
        default,
        alias = "next_page_token",
        skip_serializing_if = "String::is_empty"
    )]
    pub next_page_token: String,
}

/// `ModifyColumnFamiliesRequest.Modification`: `id` and one of `create`, `update`, `drop`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModificationJson {
    /// The family's name.
    #[serde(default)]
    pub id: String,
    /// Add the family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<ColumnFamilyJson>,
    /// Replace its GC rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<ColumnFamilyJson>,
    /// Drop it (must be `true` when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop: Option<bool>,
    /// Which fields `update` replaces: only the GC rule exists (`"gcRule"`).
    #[serde(
        default,
        alias = "update_mask",
        skip_serializing_if = "Option::is_none"
    )]
    pub update_mask: Option<String>,
}

/// `google.bigtable.admin.v2.ModifyColumnFamiliesRequest` (the table comes from the URL).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModifyColumnFamiliesRequestJson {
    /// Optional; when present it must be the URL's table.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The changes, applied in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modifications: Option<Vec<ModificationJson>>,
    /// Accepted and ignored (rowkit gives no warnings).
    #[serde(
        default,
        alias = "ignore_warnings",
        skip_serializing_if = "core::ops::Not::not"
    )]
    pub ignore_warnings: bool,
}

// --- conversions -------------------------------------------------------------------------------

/// A GC rule in Google's JSON.
pub fn gc_rule_to_json(rule: &GcRule) -> GcRuleJson {
    let list = |rules: &[GcRule]| GcRulesJson {
        rules: Some(rules.iter().map(gc_rule_to_json).collect()),
    };
    match rule {
        GcRule::MaxNumVersions(n) => GcRuleJson {
            max_num_versions: Some(Int32(i32::try_from(*n).unwrap_or(i32::MAX))),
            ..Default::default()
        },
        GcRule::MaxAge(micros) => GcRuleJson {
            max_age: Some(DurationMicros(*micros)),
            ..Default::default()
        },
        GcRule::Intersection(rules) => GcRuleJson {
            intersection: Some(list(rules)),
            ..Default::default()
        },
        GcRule::Union(rules) => GcRuleJson {
            union: Some(list(rules)),
            ..Default::default()
        },
    }
}

/// A GC rule from Google's JSON; `None` for `{}` (keep every cell). Empty members of an
/// intersection or union are left out, as the gRPC conversion does. The rule's values (at
/// least one version, ages of at least 1 ms) are the store's to check.
pub fn gc_rule_from_json(rule: GcRuleJson) -> Result<Option<GcRule>, RestError> {
    let members = [
        ("maxNumVersions", rule.max_num_versions.is_some()),
        ("maxAge", rule.max_age.is_some()),
        ("intersection", rule.intersection.is_some()),
        ("union", rule.union.is_some()),
    ];
    let set: Vec<&str> = members.iter().filter(|m| m.1).map(|m| m.0).collect();
    if set.len() > 1 {
        return Err(RestError::OneofConflict {
            field: "GcRule",
            members: set.join(", "),
        });
    }
    let nested = |list: GcRulesJson| -> Result<Vec<GcRule>, RestError> {
        let mut rules = Vec::new();
        for r in list.rules.unwrap_or_default() {
            rules.extend(gc_rule_from_json(r)?);
        }
        Ok(rules)
    };
    Ok(Some(if let Some(n) = rule.max_num_versions {
        GcRule::MaxNumVersions(u32::try_from(n.0).map_err(|_| RestError::OutOfRange {
            field: "GcRule.maxNumVersions",
            value: i64::from(n.0),
        })?)
    } else if let Some(age) = rule.max_age {
        GcRule::MaxAge(age.0)
    } else if let Some(list) = rule.intersection {
        GcRule::Intersection(nested(list)?)
    } else if let Some(list) = rule.union {
        GcRule::Union(nested(list)?)
    } else {
        return Ok(None);
    }))
}

/// A family in Google's JSON.
pub fn family_to_json(family: &ColumnFamily) -> ColumnFamilyJson {
    ColumnFamilyJson {
        gc_rule: family.gc_rule.as_ref().map(gc_rule_to_json),
        ..Default::default()
    }
}

/// The family `name` from Google's JSON.
pub fn family_from_json(name: &str, family: ColumnFamilyJson) -> Result<ColumnFamily, RestError> {
    if family.value_type.is_some() {
        return Err(RestError::Unimplemented {
            field: "ColumnFamily.valueType (aggregate families)",
        });
    }
    Ok(ColumnFamily {
        name: name.to_string(),
        gc_rule: match family.gc_rule {
            Some(rule) => gc_rule_from_json(rule)?,
            None => None,
        },
    })
}

/// The id of the instance's one cluster, as rowkit's servers name it in a table's
/// `clusterStates` and in the instance admin.
pub fn cluster_id(instance: &str) -> String {
    format!("{instance}-c1")
}

/// Table `name` with `families` in `view`: what GetTable, CreateTable and ModifyColumnFamilies
/// answer (`families` is read only by the views that show them).
pub fn table_to_json(name: &TableName, families: &[ColumnFamily], view: TableView) -> TableJson {
    let mut table = TableJson {
        name: name.resource_name(),
        ..Default::default()
    };
    if view.shows_families() {
        table.column_families = Some(
            families
                .iter()
                .map(|f| (f.name.clone(), family_to_json(f)))
                .collect(),
        );
        table.granularity = Some(EnumJson::Name("MILLIS".into()));
    }
    let replication = matches!(view, TableView::Replication | TableView::Full);
    let encryption = matches!(view, TableView::Encryption | TableView::Full);
    if replication || encryption {
        // One cluster, always ready, with Google's default encryption (as every production
        // table without a CMEK key).
        let state = ClusterStateJson {
            replication_state: Some(
                if replication {
                    "READY"
                } else {
                    "STATE_NOT_KNOWN"
                }
                .into(),
            ),
            encryption_info: encryption.then(|| {
                vec![EncryptionInfoJson {
                    encryption_type: "GOOGLE_DEFAULT_ENCRYPTION".into(),
                }]
            }),
        };
        table.cluster_states = Some(BTreeMap::from([(cluster_id(&name.instance), state)]));
    }
    table
}

/// A table's id and families, as a client reads them from an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSchema {
    /// The table id (the last segment of its name).
    pub id: String,
    /// Its families, ascending by name (empty in a view without them).
    pub families: Vec<ColumnFamily>,
}

fn schema_from_json(table: TableJson) -> Result<TableSchema, RestError> {
    let id = table
        .name
        .rsplit_once("/tables/")
        .map_or(table.name.as_str(), |(_, id)| id)
        .to_string();
    // A BTreeMap iterates by name: the families come out ascending.
    let families = table
        .column_families
        .unwrap_or_default()
        .into_iter()
        .map(|(name, f)| family_from_json(&name, f))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TableSchema { id, families })
}

/// A `Table` answer as JSON.
pub fn encode_table(table: &TableJson) -> Result<Vec<u8>, RestError> {
    to_json("Table", table)
}

/// A `Table` answer read back.
pub fn decode_table(body: &[u8]) -> Result<TableSchema, RestError> {
    schema_from_json(parse("Table", body)?)
}

/// A ListTables answer as JSON.
pub fn encode_list_tables(tables: Vec<TableJson>) -> Result<Vec<u8>, RestError> {
    to_json(
        "ListTablesResponse",
        &ListTablesResponseJson {
            tables: (!tables.is_empty()).then_some(tables),
            next_page_token: String::new(),
        },
    )
}

/// A ListTables answer read back, in the order served.
pub fn decode_list_tables(body: &[u8]) -> Result<Vec<TableSchema>, RestError> {
    let list: ListTablesResponseJson = parse("ListTablesResponse", body)?;
    list.tables
        .unwrap_or_default()
        .into_iter()
        .map(schema_from_json)
        .collect()
}

/// What a CreateTable request asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreateTable {
    /// The new table's id.
    pub table_id: String,
    /// Its families.
    pub families: Vec<ColumnFamily>,
    /// Row keys it starts split at.
    pub initial_splits: Vec<Vec<u8>>,
}

/// The body of a CreateTable request.
pub fn encode_create_table(create: &CreateTable) -> Result<Vec<u8>, RestError> {
    let families = create
        .families
        .iter()
        .map(|f| (f.name.clone(), family_to_json(f)))
        .collect();
    let splits: Vec<SplitJson> = create
        .initial_splits
        .iter()
        .map(|k| SplitJson {
            key: B64(k.clone()),
        })
        .collect();
    to_json(
        "CreateTableRequest",
        &CreateTableRequestJson {
            parent: String::new(),
            table_id: create.table_id.clone(),
            table: Some(TableJson {
                column_families: Some(families),
                ..Default::default()
            }),
            initial_splits: (!splits.is_empty()).then_some(splits),
        },
    )
}

/// Checks a request's optional resource name against the URL's.
fn check_name(field: &'static str, expected: &str, found: &str) -> Result<(), RestError> {
    if found.is_empty() || found == expected {
        Ok(())
    } else {
        Err(RestError::Json {
            what: field,
            message: format!("{found:?} does not match the URL's {expected:?}"),
        })
    }
}

/// Decodes a CreateTable body sent to the tables of `project`/`instance`.
pub fn decode_create_table(
    project: &str,
    instance: &str,
    body: &[u8],
) -> Result<CreateTable, RestError> {
    let r: CreateTableRequestJson = parse("CreateTableRequest", body)?;
    check_name(
        "CreateTableRequest.parent",
        &format!("projects/{project}/instances/{instance}"),
        &r.parent,
    )?;
    if r.table_id.is_empty() {
        return Err(RestError::Json {
            what: "CreateTableRequest",
            message: "tableId is required".into(),
        });
    }
    let table = r.table.unwrap_or_default();
    if table.deletion_protection {
        return Err(RestError::Unimplemented {
            field: "Table.deletionProtection",
        });
    }
    match &table.granularity {
        None => {}
        Some(EnumJson::Name(n)) if n == "MILLIS" || n == "TIMESTAMP_GRANULARITY_UNSPECIFIED" => {}
        Some(EnumJson::Number(0 | 1)) => {}
        Some(other) => {
            return Err(RestError::Json {
                what: "Table.granularity",
                message: format!("{other:?}: rowkit tables have MILLIS granularity"),
            });
        }
    }
    let families = table
        .column_families
        .unwrap_or_default()
        .into_iter()
        .map(|(name, f)| family_from_json(&name, f))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CreateTable {
        table_id: r.table_id,
        families,
        initial_splits: r
            .initial_splits
            .unwrap_or_default()
            .into_iter()
            .map(|s| s.key.0)
            .collect(),
    })
}

/// The body of a ModifyColumnFamilies request.
pub fn encode_modify_families(changes: &[FamilyChange]) -> Result<Vec<u8>, RestError> {
    let modifications = changes
        .iter()
        .map(|c| match c {
            FamilyChange::Create(f) => ModificationJson {
                id: f.name.clone(),
                create: Some(family_to_json(f)),
                ..Default::default()
            },
            FamilyChange::Update(f) => ModificationJson {
                id: f.name.clone(),
                update: Some(family_to_json(f)),
                ..Default::default()
            },
            FamilyChange::Drop(name) => ModificationJson {
                id: name.clone(),
                drop: Some(true),
                ..Default::default()
            },
        })
        .collect();
    to_json(
        "ModifyColumnFamiliesRequest",
        &ModifyColumnFamiliesRequestJson {
            modifications: Some(modifications),
            ..Default::default()
        },
    )
}

/// Decodes a ModifyColumnFamilies body sent to `table`: its changes, in order.
pub fn decode_modify_families(
    table: &TableName,
    body: &[u8],
) -> Result<Vec<FamilyChange>, RestError> {
    let r: ModifyColumnFamiliesRequestJson = parse("ModifyColumnFamiliesRequest", body)?;
    check_name(
        "ModifyColumnFamiliesRequest.name",
        &table.resource_name(),
        &r.name,
    )?;
    let modifications = r.modifications.unwrap_or_default();
    if modifications.is_empty() {
        return Err(RestError::Json {
            what: "ModifyColumnFamiliesRequest",
            message: "modifications is empty: nothing to change".into(),
        });
    }
    modifications
        .into_iter()
        .map(|m| {
            if let Some(mask) = &m.update_mask
                && !mask.is_empty()
                && mask != "gcRule"
                && mask != "gc_rule"
            {
                return Err(RestError::Json {
                    what: "Modification.updateMask",
                    message: format!("{mask:?}: only gcRule can be updated"),
                });
            }
            let set = [
                ("create", m.create.is_some()),
                ("update", m.update.is_some()),
                ("drop", m.drop.is_some()),
            ];
            let members: Vec<&str> = set.iter().filter(|s| s.1).map(|s| s.0).collect();
            match (m.create, m.update, m.drop) {
                _ if members.len() > 1 => Err(RestError::OneofConflict {
                    field: "Modification",
                    members: members.join(", "),
                }),
                (Some(f), None, None) => Ok(FamilyChange::Create(family_from_json(&m.id, f)?)),
                (None, Some(f), None) => Ok(FamilyChange::Update(family_from_json(&m.id, f)?)),
                (None, None, Some(true)) => Ok(FamilyChange::Drop(m.id)),
                (None, None, Some(false)) => Err(RestError::FalseLeaf {
                    field: "Modification.drop",
                }),
                _ => Err(RestError::OneofUnset {
                    field: "Modification (create, update or drop)",
                }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn paths() {
        let t = TableName::new("p", "i", "t");
        assert_eq!(
            AdminPath::parse("/v2/projects/p/instances/i/tables"),
            Some(AdminPath::Tables {
                project: "p".into(),
                instance: "i".into()
            })
        );
        assert_eq!(
            AdminPath::parse("/v2/projects/p/instances/i/tables/t"),
            Some(AdminPath::Table(t.clone()))
        );
        for modify in [
            "/v2/projects/p/instances/i/tables/t:modifyColumnFamilies",
            "/v2/projects/p/instances/i/tables/t%3AmodifyColumnFamilies",
        ] {
            assert_eq!(
                AdminPath::parse(modify),
                Some(AdminPath::ModifyColumnFamilies(t.clone())),
                "{modify}"
            );
        }
        for not_admin in [
            "/v2/projects/p/instances/i/tables/t:readRows",
            "/v2/projects/p/instances/i/tables/t%3AreadRows",
            "/v2/projects/p/instances/i/tables/t:nope",
            "/v2/projects/p/instances/i/tables/",
            "/v2/projects/p/instances/i/tables/t/x",
            "/v2/projects/p/instances/i/tables/:modifyColumnFamilies",
            "/v2/projects/p/instances/i",
            "/v2/projects//instances/i/tables",
        ] {
            assert_eq!(AdminPath::parse(not_admin), None, "{not_admin}");
        }
        assert_eq!(t.admin_path(), "/v2/projects/p/instances/i/tables/t");
        assert_eq!(
            t.modify_families_path(),
            "/v2/projects/p/instances/i/tables/t:modifyColumnFamilies"
        );
        assert_eq!(tables_path("p", "i"), "/v2/projects/p/instances/i/tables");
    }

    #[test]
    fn gc_rules_in_googles_json() {
        let rule = GcRule::Union(vec![
            GcRule::MaxNumVersions(3),
            GcRule::Intersection(vec![GcRule::MaxAge(3_600_000_000), GcRule::MaxAge(1500)]),
        ]);
        let text = serde_json::to_string(&gc_rule_to_json(&rule)).unwrap();
        assert_eq!(
            text,
            r#"{"union":{"rules":[{"maxNumVersions":3},{"intersection":{"rules":[{"maxAge":"3600s"},{"maxAge":"0.001500s"}]}}]}}"#
        );
        let back: GcRuleJson = serde_json::from_str(&text).unwrap();
        assert_eq!(gc_rule_from_json(back).unwrap(), Some(rule));
        let none: GcRuleJson = serde_json::from_str("{}").unwrap();
        assert_eq!(gc_rule_from_json(none).unwrap(), None);
        let proto_names: GcRuleJson = serde_json::from_str(r#"{"max_num_versions": "2"}"#).unwrap();
        assert_eq!(
            gc_rule_from_json(proto_names).unwrap(),
            Some(GcRule::MaxNumVersions(2))
        );
        let two: GcRuleJson =
            serde_json::from_str(r#"{"maxNumVersions": 1, "maxAge": "1s"}"#).unwrap();
        let e = gc_rule_from_json(two).unwrap_err().to_string();
        assert!(e.contains("maxNumVersions, maxAge"), "{e}");
        let negative: GcRuleJson = serde_json::from_str(r#"{"maxNumVersions": -1}"#).unwrap();
        assert!(gc_rule_from_json(negative).is_err());
        assert!(serde_json::from_str::<GcRuleJson>(r#"{"maxVersions": 1}"#).is_err());
    }

    #[test]
    fn create_table_round_trip_and_checks() {
        let create = CreateTable {
            table_id: "t".into(),
            families: vec![ColumnFamily::new("a"), ColumnFamily::max_versions("b", 1)],
            initial_splits: vec![b"m".to_vec()],
        };
        let body = encode_create_table(&create).unwrap();
        assert_eq!(
            core::str::from_utf8(&body).unwrap(),
            r#"{"tableId":"t","table":{"columnFamilies":{"a":{},"b":{"gcRule":{"maxNumVersions":1}}}},"initialSplits":[{"key":"bQ=="}]}"#
        );
        assert_eq!(decode_create_table("p", "i", &body).unwrap(), create);
        let bad = |body: &str| decode_create_table("p", "i", body.as_bytes()).unwrap_err();
        assert!(bad("{}").to_string().contains("tableId is required"));
        assert!(
            bad(r#"{"tableId":"t","parent":"projects/q/instances/i"}"#)
                .to_string()
                .contains("does not match")
        );
        assert!(
            bad(r#"{"tableId":"t","table":{"columnFamilies":{"a":{"gcRule":{"maxAge":"1h"}}}}}"#)
                .to_string()
                .contains("not a duration")
        );
        assert_eq!(
            bad(r#"{"tableId":"t","table":{"columnFamilies":{"a":{"valueType":{}}}}}"#).code(),
            rowkit_codec::model::Code::Unimplemented
        );
        assert!(bad("[]").to_string().contains("expected a JSON object"));
    }

    #[test]
    fn modifications_round_trip_and_checks() {
        let changes = vec![
            FamilyChange::Create(ColumnFamily::max_versions("a", 2)),
            FamilyChange::Update(ColumnFamily::new("b")),
            FamilyChange::Drop("c".into()),
        ];
        let body = encode_modify_families(&changes).unwrap();
        assert_eq!(
            core::str::from_utf8(&body).unwrap(),
            r#"{"modifications":[{"id":"a","create":{"gcRule":{"maxNumVersions":2}}},{"id":"b","update":{}},{"id":"c","drop":true}]}"#
        );
        let t = TableName::new("p", "i", "t");
        assert_eq!(decode_modify_families(&t, &body).unwrap(), changes);
        let bad = |body: &str| decode_modify_families(&t, body.as_bytes()).unwrap_err();
        assert!(
            bad(r#"{"modifications":[{"id":"a"}]}"#)
                .to_string()
                .contains("no member")
        );
        assert!(
            bad(r#"{"modifications":[{"id":"a","drop":false}]}"#)
                .to_string()
                .contains("must be true")
        );
        assert!(
            bad(r#"{"modifications":[{"id":"a","drop":true,"create":{}}]}"#)
                .to_string()
                .contains("create, drop")
        );
        assert!(bad(r#"{"modifications":[]}"#).to_string().contains("empty"));
        assert!(
            bad(r#"{"modifications":[{"id":"a","update":{},"updateMask":"valueType"}]}"#)
                .to_string()
                .contains("only gcRule")
        );
    }

    #[test]
    fn tables_in_each_view() {
        let t = TableName::new("p", "i", "t");
        let families = [ColumnFamily::max_versions("cf", 1)];
        let text = |view| {
            String::from_utf8(encode_table(&table_to_json(&t, &families, view)).unwrap()).unwrap()
        };
        assert_eq!(
            text(TableView::Schema),
            r#"{"name":"projects/p/instances/i/tables/t","columnFamilies":{"cf":{"gcRule":{"maxNumVersions":1}}},"granularity":"MILLIS"}"#
        );
        assert_eq!(
            text(TableView::NameOnly),
            r#"{"name":"projects/p/instances/i/tables/t"}"#
        );
        assert_eq!(
            text(TableView::Full),
            r#"{"name":"projects/p/instances/i/tables/t","clusterStates":{"i-c1":{"replicationState":"READY","encryptionInfo":[{"encryptionType":"GOOGLE_DEFAULT_ENCRYPTION"}]}},"columnFamilies":{"cf":{"gcRule":{"maxNumVersions":1}}},"granularity":"MILLIS"}"#
        );
        let schema = decode_table(text(TableView::Full).as_bytes()).unwrap();
        assert_eq!(
            schema,
            TableSchema {
                id: "t".into(),
                families: families.to_vec()
            }
        );
        let list = encode_list_tables(vec![table_to_json(&t, &[], TableView::NameOnly)]).unwrap();
        assert_eq!(
            decode_list_tables(&list).unwrap(),
            vec![TableSchema {
                id: "t".into(),
                families: Vec::new()
            }]
        );
        assert_eq!(decode_list_tables(b"{}").unwrap(), Vec::new());
        assert_eq!(TableView::parse("FULL").unwrap(), Some(TableView::Full));
        assert_eq!(TableView::parse("2").unwrap(), Some(TableView::Schema));
        assert_eq!(TableView::parse("VIEW_UNSPECIFIED").unwrap(), None);
        assert!(TableView::parse("ALL").is_err());
    }
}
