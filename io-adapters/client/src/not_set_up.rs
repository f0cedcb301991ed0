//! What to say when a schema's first call finds its table missing (a store not set up): the
//! CLI and the JavaScript classes both turn the store's `NOT_FOUND: table "gold" not found`
//! into "no trace store here (table "gold" does not exist): …" with their own remedy.

/// The table of `tables` that an error `message` says does not exist: the store's
/// `table "ID" not found` (an embedded or memory store, through a gateway too) or Bigtable's
/// `table "projects/P/instances/I/tables/ID" not found`, wherever in the message it stands
/// (a schema's error may wrap the store's). A missing family is not this.
pub fn missing_table<'t>(message: &str, tables: &[&'t str]) -> Option<&'t str> {
    tables.iter().copied().find(|table| {
        message.contains(&format!("table \"{table}\" not found"))
            || message.contains(&format!("/tables/{table}\" not found"))
    })
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
        let tables = ["mounttable", "mounttable-counter"];
        assert_eq!(
            missing_table("NOT_FOUND: table \"mounttable\" not found", &tables),
            Some("mounttable")
        );
        assert_eq!(
            missing_table(
                "InternalError: NOT_FOUND: table \"projects/p/instances/i/tables/mounttable-counter\" not found",
                &tables
            ),
            Some("mounttable-counter")
        );
        assert_eq!(
            missing_table("NOT_FOUND: table \"other\" not found", &tables),
            None
        );
        assert_eq!(
            missing_table(
                "NOT_FOUND: column family \"m\" not found in table \"mounttable\"",
                &tables
            ),
            None
        );
        assert_eq!(missing_table("table \"mounttable\" exists", &tables), None);
        assert_eq!(
            not_set_up_message("trace store", "gold", "Set up creates its tables"),
            "no trace store here (table \"gold\" does not exist): Set up creates its tables"
        );
    }
}
