//! What to say when a schema's first call finds its table missing (a store not set up): the
//! CLI and the JavaScript classes both turn the store's `NOT_FOUND: table "gold" not found`
//! into "no trace store here (table "gold" does not exist): …" with their own remedy.

/// The table an error `message` says does not exist: the store's `table "ID" not found` (an
/// embedded or memory store, through a gateway too) or Bigtable's
/// `table "projects/P/instances/I/tables/ID" not found`, wherever in the message it stands (a
/// schema's error may wrap the store's). A missing family is not this.
pub fn missing_table(message: &str) -> Option<&str> {
    let (before, _) = message.split_once("\" not found")?;
    let (_, name) = before.rsplit_once("table \"")?;
    let id = name.rsplit_once("/tables/").map_or(name, |(_, id)| id);
    (!id.is_empty() && !id.contains('"')).then_some(id)
}

/// `no WHAT here (table "TABLE" does not exist): REMEDY`, e.g. `no trace store here (table
/// "gold" does not exist): Set up creates its tables`.
pub fn not_set_up_message(what: &str, table: &str, remedy: &str) -> String {
    format!("no {what} here (table \"{table}\" does not exist): {remedy}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_missing_table_in_the_stores_words() {
        assert_eq!(
            missing_table("NOT_FOUND: table \"mounttable\" not found"),
            Some("mounttable")
        );
        assert_eq!(
            missing_table(
                "InternalError: NOT_FOUND: table \"projects/p/instances/i/tables/mt-counter\" not found"
            ),
            Some("mt-counter")
        );
        assert_eq!(
            missing_table("NOT_FOUND: column family \"m\" not found in table \"mounttable\""),
            None
        );
        assert_eq!(missing_table("table \"mounttable\" exists"), None);
        assert_eq!(missing_table("NOT_FOUND: no store at /tmp/x.redb"), None);
        assert_eq!(
            not_set_up_message("trace store", "gold", "Set up creates its tables"),
            "no trace store here (table \"gold\" does not exist): Set up creates its tables"
        );
    }
}
