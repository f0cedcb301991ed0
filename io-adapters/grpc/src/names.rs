//! Resource names: `projects/{project}/instances/{instance}/tables/{table}`, the instance's
//! clusters and app profiles, and their parents.

use rowkit_statemachines::{Code, StoreError};

/// The table id of a full table name; `INVALID_ARGUMENT` for anything else.
pub fn table_id(name: &str) -> Result<String, StoreError> {
    table(name).map(|(_, id)| id)
}

/// The instance and table id of a full table name; `INVALID_ARGUMENT` for anything else.
pub(crate) fn table(name: &str) -> Result<(Instance, String), StoreError> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        ["projects", p, "instances", i, "tables", t]
            if !p.is_empty() && !i.is_empty() && !t.is_empty() =>
        {
            let instance = Instance {
                project: (*p).to_string(),
                instance: (*i).to_string(),
            };
            Ok((instance, (*t).to_string()))
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
    instance(parent).map(|_| ())
}

/// The project and instance an instance-level name names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Instance {
    pub(crate) project: String,
    pub(crate) instance: String,
}

impl Instance {
    /// `projects/{project}/instances/{instance}`.
    pub(crate) fn name(&self) -> String {
        format!("projects/{}/instances/{}", self.project, self.instance)
    }
}

/// Parses `projects/{project}/instances/{instance}`; `INVALID_ARGUMENT` for anything else.
pub(crate) fn instance(name: &str) -> Result<Instance, StoreError> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        ["projects", p, "instances", i] if !p.is_empty() && !i.is_empty() => Ok(Instance {
            project: (*p).to_string(),
            instance: (*i).to_string(),
        }),
        _ => Err(StoreError::new(
            Code::InvalidArgument,
            format!(
                "invalid instance name {name:?}: expected projects/{{project}}/instances/{{instance}}"
            ),
        )),
    }
}

/// Parses `projects/{project}`; `INVALID_ARGUMENT` for anything else.
pub(crate) fn project(name: &str) -> Result<String, StoreError> {
    match name.split('/').collect::<Vec<_>>().as_slice() {
        ["projects", p] if !p.is_empty() => Ok((*p).to_string()),
        _ => Err(StoreError::new(
            Code::InvalidArgument,
            format!("invalid project name {name:?}: expected projects/{{project}}"),
        )),
    }
}

/// Parses `projects/{project}/instances/{instance}/{collection}/{id}` (a cluster, an app
/// profile) into its instance and id; `INVALID_ARGUMENT` for anything else.
pub(crate) fn instance_child(
    name: &str,
    collection: &str,
) -> Result<(Instance, String), StoreError> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        ["projects", p, "instances", i, c, id]
            if *c == collection && !p.is_empty() && !i.is_empty() && !id.is_empty() =>
        {
            Ok((
                Instance {
                    project: (*p).to_string(),
                    instance: (*i).to_string(),
                },
                (*id).to_string(),
            ))
        }
        _ => Err(StoreError::new(
            Code::InvalidArgument,
            format!(
                "invalid name {name:?}: expected projects/{{project}}/instances/{{instance}}/{collection}/{{id}}"
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
        let (instance, id) = table("projects/p/instances/i/tables/t").unwrap();
        assert_eq!(
            (instance.name().as_str(), id.as_str()),
            ("projects/p/instances/i", "t")
        );
        assert_eq!(project("projects/p").unwrap(), "p");
        assert!(project("projects/p/instances/i").is_err());
        let (instance, id) =
            instance_child("projects/p/instances/i/clusters/c", "clusters").unwrap();
        assert_eq!((instance.instance.as_str(), id.as_str()), ("i", "c"));
        assert!(instance_child("projects/p/instances/i/appProfiles/c", "clusters").is_err());
    }
}
