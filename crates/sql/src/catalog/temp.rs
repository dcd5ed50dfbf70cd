//! Temporary tables' names (docs/design/019-temp-tables.md): a temp table `t` of session N is
//! an ordinary catalog table named `pg_temp_N.t`. The dot never occurs in a permanent table's
//! name (CREATE TABLE refuses one), so the name alone says whose temp table it is; what users
//! see (relname, errors) is the part after the dot.

use super::*;

/// The prefix of every temp schema's name.
pub const TEMP_SCHEMA_PREFIX: &str = "pg_temp_";
/// The alias of the session's own temp schema.
pub const TEMP_SCHEMA_ALIAS: &str = "pg_temp";
/// pg_namespace OID of session N's temp schema: 2^29 + N, above the catalog's counter's range
/// in practice and below the DEFAULT and sequence OID ranges (meta.rs).
const TEMP_NAMESPACE_OID_BASE: u32 = 1 << 29;

/// The temp schema of `session`: `pg_temp_N`.
pub fn temp_schema(session: u64) -> String {
    format!("{TEMP_SCHEMA_PREFIX}{session}")
}

/// The catalog name of temp table `name` in temp schema `schema` (`pg_temp_N`).
pub fn temp_table_name_in(schema: &str, name: &str) -> String {
    debug_assert!(schema.starts_with(TEMP_SCHEMA_PREFIX), "a temp schema");
    format!("{schema}.{name}")
}

/// The session and relation name of a temp table's catalog name; None for a permanent one.
pub fn split_temp_name(name: &str) -> Option<(u64, &str)> {
    let rest = name.strip_prefix(TEMP_SCHEMA_PREFIX)?;
    let (session, relation) = rest.split_once('.')?;
    Some((session.parse().ok()?, relation))
}

/// Whether a name given for a permanent table has the form of a temp table's catalog name
/// (refused: it would be read as a temp table).
pub fn looks_temporary(name: &str) -> bool {
    name.starts_with(TEMP_SCHEMA_PREFIX) && name.contains('.')
}

/// The name users see: a temp table's without its schema.
pub fn relation_name(name: &str) -> &str {
    split_temp_name(name).map_or(name, |(_, relation)| relation)
}

/// The schema a relation is in, as pg_namespace names it.
pub fn relation_schema(name: &str) -> String {
    match split_temp_name(name) {
        Some((session, _)) => temp_schema(session),
        None => "public".to_string(),
    }
}

/// pg_namespace OID of `session`'s temp schema.
pub fn temp_namespace_oid(session: u64) -> u32 {
    let offset = u32::try_from(session % u64::from(TEMP_NAMESPACE_OID_BASE)).expect("fits");
    TEMP_NAMESPACE_OID_BASE + offset
}

/// Whether `name` is a temp table of a session other than `session` (not there for it).
pub fn is_other_sessions_temp(name: &str, session: u64) -> bool {
    split_temp_name(name).is_some_and(|(owner, _)| owner != session)
}

/// A table's catalog name as SQL text that names it in every session state: a temp table
/// through pg_temp, a permanent one through public (the search_path may be empty: pg_dump
/// empties it).
pub fn qualified_sql_name(name: &str) -> String {
    let quoted = |part: &str| format!("\"{}\"", part.replace('"', "\"\""));
    match split_temp_name(name) {
        Some((_, relation)) => format!("{TEMP_SCHEMA_ALIAS}.{}", quoted(relation)),
        None => format!("public.{}", quoted(name)),
    }
}

impl Catalog {
    /// The catalog names of `session`'s temp tables (created or committed), in name order.
    pub fn temp_tables(&self, session: u64) -> Vec<String> {
        let prefix = format!("{}.", temp_schema(session));
        let mut names: Vec<String> =
            self.tables.read().keys().filter(|name| name.starts_with(&prefix)).cloned().collect();
        names.sort();
        names
    }

    /// At startup: the temp tables a crash left (their sessions are gone) are dropped: their
    /// definition rows, owned sequences and privileges; their rows were in the temp tables'
    /// store, which went with the process (`Engine::create_temp_table`).
    pub(super) fn drop_crashed_temp_tables(&self) -> Result<()> {
        let names: Vec<String> = self
            .tables
            .read()
            .keys()
            .filter(|name| split_temp_name(name).is_some())
            .cloned()
            .collect();
        for name in names {
            if self.table(&name).is_none() {
                continue;
            }
            tracing::info!(table = %name, "dropping a temporary table left by a crash");
            self.drop_table(&name)?;
        }
        Ok(())
    }
}
