//! Whole-request validation (`spec/bigtable.md` 4, 13): everything is checked before a row is
//! read or written.

use std::collections::BTreeSet;

use rowkit_codec::model::{
    ColumnFamily, Mutation, ValidationError, limits, validate_family_name, validate_mutation,
    validate_row_key, validate_rule, validate_table_name,
};
use rowkit_statemachines::{
    CheckAndMutateRowRequest, Code, MutateRowsRequest, ReadModifyWriteRowRequest, ReadRowRequest,
    ReadRowsRequest, Request, StoreError,
};

use super::filter::CompiledFilter;

/// The families a table declares (a handful: a scan costs less than building a set per
/// request).
pub(crate) struct Schema<'f> {
    families: &'f [ColumnFamily],
}

impl<'f> Schema<'f> {
    pub(crate) fn new(families: &'f [ColumnFamily]) -> Schema<'f> {
        Schema { families }
    }

    fn check_family(&self, family: &str) -> Result<(), ValidationError> {
        if self.families.iter().any(|f| f.name == family) {
            Ok(())
        } else {
            Err(ValidationError::FamilyNotFound {
                name: family.to_string(),
            })
        }
    }
}

/// Checks a table id and its families before the table is created: id syntax, at most 100
/// families, family name syntax, distinct names, valid GC rules.
pub fn validate_schema(table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
    validate_table_name(table)?;
    if families.len() > limits::MAX_FAMILIES {
        return Err(ValidationError::TooManyFamilies {
            count: families.len(),
        }
        .into());
    }
    let mut seen = BTreeSet::new();
    for family in families {
        validate_family_name(&family.name)?;
        if let Some(rule) = &family.gc_rule {
            rule.validate()?;
        }
        if !seen.insert(family.name.as_str()) {
            return Err(StoreError::new(
                Code::InvalidArgument,
                format!("duplicate column family {:?}", family.name),
            ));
        }
    }
    Ok(())
}

/// An engine's check, inside a row transaction, that a cell's family is in the table's schema
/// as of that transaction ([`crate::RowWrite::put`]): `NOT_FOUND` if it is not.
pub(crate) fn check_put_family(families: &[ColumnFamily], family: &str) -> Result<(), StoreError> {
    Ok(Schema::new(families).check_family(family)?)
}

/// An engine's check before [`crate::TableStorage::set_family`] adds `family`: a family of
/// that name dropped earlier must have its cells purged first, or the new family would show
/// them (`FAILED_PRECONDITION`).
pub(crate) fn check_not_dropped(
    table: &str,
    dropped: &[String],
    family: &str,
) -> Result<(), StoreError> {
    if dropped.iter().any(|d| d == family) {
        return Err(StoreError::new(
            Code::FailedPrecondition,
            format!(
                "column family {family:?} of table {table:?} was dropped and its cells are \
                 still being purged"
            ),
        ));
    }
    Ok(())
}

/// `dropped` with `family` added (ascending, each once): an engine's record of a family
/// [`crate::TableStorage::remove_family`] removed.
pub(crate) fn with_dropped(dropped: &[String], family: &str) -> Vec<String> {
    let mut out = dropped.to_vec();
    if let Err(i) = out.binary_search_by(|d| d.as_str().cmp(family)) {
        out.insert(i, family.to_string());
    }
    out
}

/// `families` without `family`, for an engine's [`crate::TableStorage::remove_family`]
/// (`NOT_FOUND` if the table has no such family).
pub(crate) fn remove_from_schema(
    table: &str,
    families: &[ColumnFamily],
    family: &str,
) -> Result<Vec<ColumnFamily>, StoreError> {
    if !families.iter().any(|f| f.name == family) {
        return Err(StoreError::new(
            Code::NotFound,
            format!("column family {family:?} not found in table {table:?}"),
        ));
    }
    Ok(families
        .iter()
        .filter(|f| f.name != family)
        .cloned()
        .collect())
}

/// Validates mutations on their own and against the schema (unknown family -> `NOT_FOUND`).
fn check_mutations(mutations: &[Mutation], schema: &Schema<'_>) -> Result<(), ValidationError> {
    for m in mutations {
        validate_mutation(m)?;
        if let Some(family) = m.family() {
            schema.check_family(family)?;
        }
    }
    Ok(())
}

/// One row's key and mutation list as `MutateRow` (and each `MutateRows` entry) requires.
pub(crate) fn check_row_mutations(
    key: &[u8],
    mutations: &[Mutation],
    schema: &Schema<'_>,
) -> Result<(), ValidationError> {
    validate_row_key(key)?;
    if mutations.is_empty() {
        return Err(ValidationError::NoMutations);
    }
    if mutations.len() > limits::MAX_MUTATIONS {
        return Err(ValidationError::TooManyMutations {
            count: mutations.len(),
        });
    }
    check_mutations(mutations, schema)
}

/// ReadRows: row set, `rows_limit`, filter. Returns the compiled filter.
pub(crate) fn check_read(req: &ReadRowsRequest) -> Result<Option<CompiledFilter>, StoreError> {
    if req.rows_limit < 0 {
        return Err(ValidationError::NegativeRowsLimit(req.rows_limit).into());
    }
    req.rows.validate()?;
    req.filter.as_ref().map(CompiledFilter::new).transpose()
}

/// A point read: the key and the filter. Returns the compiled filter.
pub(crate) fn check_read_row(req: &ReadRowRequest) -> Result<Option<CompiledFilter>, StoreError> {
    validate_row_key(&req.row_key)?;
    req.filter.as_ref().map(CompiledFilter::new).transpose()
}

/// MutateRows: the whole-request checks (entries present, at most 100 000 mutations in total).
/// Per-entry problems are reported per entry by [`check_row_mutations`].
pub(crate) fn check_batch(req: &MutateRowsRequest) -> Result<(), ValidationError> {
    if req.entries.is_empty() {
        return Err(ValidationError::NoEntries);
    }
    let total = req
        .entries
        .iter()
        .fold(0usize, |acc, e| acc.saturating_add(e.mutations.len()));
    if total > limits::MAX_MUTATIONS {
        return Err(ValidationError::TooManyMutations { count: total });
    }
    Ok(())
}

/// CheckAndMutateRow: key, both lists (not both empty, each within the limit, every mutation
/// valid whichever branch runs), predicate. Returns the compiled predicate.
pub(crate) fn check_conditional(
    req: &CheckAndMutateRowRequest,
    schema: &Schema<'_>,
) -> Result<Option<CompiledFilter>, StoreError> {
    validate_row_key(&req.row_key)?;
    if req.true_mutations.is_empty() && req.false_mutations.is_empty() {
        return Err(ValidationError::NoMutations.into());
    }
    for list in [&req.true_mutations, &req.false_mutations] {
        if list.len() > limits::MAX_MUTATIONS {
            return Err(ValidationError::TooManyMutations { count: list.len() }.into());
        }
        check_mutations(list, schema)?;
    }
    req.predicate.as_ref().map(CompiledFilter::new).transpose()
}

/// ReadModifyWriteRow: key, 1..=100 000 rules, each valid with a declared family.
pub(crate) fn check_rmw(
    req: &ReadModifyWriteRowRequest,
    schema: &Schema<'_>,
) -> Result<(), ValidationError> {
    validate_row_key(&req.row_key)?;
    if req.rules.is_empty() {
        return Err(ValidationError::NoRules);
    }
    if req.rules.len() > limits::MAX_RULES {
        return Err(ValidationError::TooManyRules {
            count: req.rules.len(),
        });
    }
    for rule in &req.rules {
        validate_rule(rule)?;
        schema.check_family(&rule.family)?;
    }
    Ok(())
}

/// Validates a whole request against a table's families exactly as a local store does before
/// touching data (`spec/bigtable.md` 4, 13), including compiling every regex. For `MutateRows`
/// only whole-request errors are reported; entry errors are per entry and do not fail the
/// request. Whether the table exists is not checked here.
///
/// ```
/// use rowkit_codec::model::{ColumnFamily, RowFilter};
/// use rowkit_store::semantics::validate_request;
/// use rowkit_statemachines::{Code, ReadRowsRequest, Request};
///
/// let bad = Request::ReadRows(ReadRowsRequest {
///     table: "t".into(),
///     filter: Some(RowFilter::ValueRegex(b"(".to_vec())),
///     ..Default::default()
/// });
/// let err = validate_request(&bad, &[ColumnFamily::new("cf")]).unwrap_err();
/// assert_eq!(err.code, Code::InvalidArgument);
/// assert!(err.message.contains("value_regex_filter"));
/// ```
pub fn validate_request(request: &Request, families: &[ColumnFamily]) -> Result<(), StoreError> {
    let schema = Schema::new(families);
    match request {
        Request::ReadRows(r) => check_read(r).map(drop),
        Request::ReadRow(r) => check_read_row(r).map(drop),
        Request::MutateRow(r) => Ok(check_row_mutations(&r.row_key, &r.mutations, &schema)?),
        Request::MutateRows(r) => Ok(check_batch(r)?),
        Request::CheckAndMutateRow(r) => check_conditional(r, &schema).map(drop),
        Request::ReadModifyWriteRow(r) => Ok(check_rmw(r, &schema)?),
        Request::SampleRowKeys(_) => Ok(()),
    }
}
