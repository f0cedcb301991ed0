//! Resource names: `projects/{project}/instances/{instance}/tables/{table}` and their parents.

use rowkit_statemachines::{Code, StoreError};

/// The table id of a full table name; `INVALID_ARGUMENT` for anything else.
pub fn table_id(name: &str) -> Result<String, StoreError> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        ["projects", p, "instances", i, "tables", t]
            if !p.is_empty() && !i.is_empty() && !t.is_empty() =>
        {
            Ok((*t).to_string())
        }
        _ => Err(StoreError::new(
            Code::InvalidArgument,
            format!(
                "invalid table name {name:?}: expected projects/{{project}}/instances/{{instance}}/tables/{{table}}"
            ),
        )),
    }
}

/// Checks an instance name (`projects/{project}/instances/{instance}`, the parent of tables).
pub fn check_instance(parent: &str) -> Result<(), StoreError> {
    let parts: Vec<&str> = parent.split('/').collect();
    match parts.as_slice() {
        ["projects", p, "instances", i] if !p.is_empty() && !i.is_empty() => Ok(()),
        _ => Err(StoreError::new(
            Code::InvalidArgument,
            format!(
                "invalid instance name {parent:?}: expected projects/{{project}}/instances/{{instance}}"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names() {
        assert_eq!(table_id("projects/p/instances/i/tables/t").unwrap(), "t");
        for bad in [
            "t",
            "projects/p/instances/i/tables/",
            "projects/p/instances/i/tables/t/x",
        ] {
            assert_eq!(
                table_id(bad).unwrap_err().code,
                Code::InvalidArgument,
                "{bad}"
            );
        }
        assert!(check_instance("projects/p/instances/i").is_ok());
        assert!(check_instance("projects/p").is_err());
    }
}
