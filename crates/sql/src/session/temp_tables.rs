//! The session's temporary tables (docs/design/019-temp-tables.md): their names, ON COMMIT
//! DELETE ROWS / DROP at each commit, DISCARD TEMP / ALL, and the drop at session end.

use super::*;
use crate::catalog::{relation_name, split_temp_name, temp_schema};
use crate::sizes::{parse_size_bytes, SizeSyntax};

impl Session {
    /// The catalog name CREATE TABLE makes, and whether it is a temp table: TEMP, or a name
    /// in pg_temp. ON COMMIT on a permanent table is PostgreSQL's 42P16.
    pub(super) fn new_table_name(&self, create: &ast::CreateTable) -> Result<(String, bool)> {
        let namespace = self.namespace();
        let temporary = create.temporary || namespace.names_temp_schema(&create.name)?;
        if !temporary {
            if create.on_commit.is_some() {
                return Err(SqlError::new(
                    "42P16",
                    "ON COMMIT can only be used on temporary tables",
                ));
            }
            return Ok((namespace.new_table(&create.name)?, false));
        }
        Ok((namespace.new_temp_table(&create.name)?, true))
    }

    /// A temp table was made: its ON COMMIT action is kept until it is gone.
    pub(super) fn note_temp_table(&mut self, name: &str, on_commit: Option<&ast::OnCommit>) {
        assert!(split_temp_name(name).is_some_and(|(session, _)| session == self.session_id));
        self.temp_used = true;
        if self.temp_buffers_used.is_none() {
            self.temp_buffers_used = Some(self.temp_buffers());
        }
        match on_commit {
            Some(action @ (ast::OnCommit::DeleteRows | ast::OnCommit::Drop)) => {
                self.temp_on_commit.insert(name.to_string(), *action);
            }
            _ => {
                self.temp_on_commit.remove(name);
            }
        }
    }

    /// The relation names (without schema) of the session's temp tables, for its namespace.
    pub(super) fn temp_relation_names(&self) -> Vec<String> {
        if !self.temp_used {
            return Vec::new();
        }
        let names = self.catalog.temp_tables(self.session_id);
        names.iter().map(|name| relation_name(name).to_string()).collect()
    }

    /// The catalog name of the index `name` names: an index of a temp table, named from its
    /// table (`pg_temp_N.t_pkey`), before a permanent one (pg_temp is searched first).
    pub(super) fn temp_index_name(&self, name: String) -> String {
        if !self.temp_used {
            return name;
        }
        let internal = crate::catalog::temp_table_name_in(&self.temp_schema(), &name);
        match self.catalog.index_table(&internal) {
            Some(_) => internal,
            None => name,
        }
    }

    /// The catalog name of the table a front statement (VACUUM, ANALYZE) names unqualified:
    /// the session's temp table of that name first, as pg_temp is searched first.
    pub(super) fn temp_table_or(&self, name: &str) -> String {
        if !self.temp_used {
            return name.to_string();
        }
        let internal = crate::catalog::temp_table_name_in(&self.temp_schema(), name);
        match self.catalog.table(&internal) {
            Some(_) => internal,
            None => name.to_string(),
        }
    }

    /// The session's temp schema, `pg_temp_N`.
    pub(super) fn temp_schema(&self) -> String {
        temp_schema(self.session_id)
    }

    /// After a commit: ON COMMIT DELETE ROWS empties its tables, ON COMMIT DROP drops its
    /// tables (every commit of the session, autocommit statements too, as PostgreSQL's
    /// PreCommit_on_commit_actions; the rows are gone for everyone then, the table being
    /// the session's own). Errors are logged: the commit has happened.
    pub(super) fn after_commit(&mut self) {
        if self.temp_on_commit.is_empty() {
            return;
        }
        let actions: Vec<(String, ast::OnCommit)> =
            self.temp_on_commit.iter().map(|(name, action)| (name.clone(), *action)).collect();
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        for (name, action) in actions {
            if catalog.table(&name).is_none() {
                self.temp_on_commit.remove(&name);
                continue;
            }
            let outcome = match action {
                ast::OnCommit::Drop => {
                    self.temp_on_commit.remove(&name);
                    catalog.drop_table(&name)
                }
                _ => catalog.truncate_table(&name),
            };
            if let Err(error) = outcome {
                tracing::error!(table = %name, %error, "ON COMMIT action of a temporary table");
            }
        }
    }

    /// DISCARD TEMP, DISCARD ALL and the session's end: drops every temp table of the
    /// session. Inside a block (DISCARD TEMP) its open DDL would be undone under it: 0A000.
    pub(super) fn drop_temp_tables(&mut self) -> Result<()> {
        if !self.temp_used {
            return Ok(());
        }
        if self.state != BlockState::Idle {
            return Err(SqlError::unsupported(
                "DISCARD TEMP inside a transaction block is not supported",
            ));
        }
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        for name in catalog.temp_tables(self.session_id) {
            if catalog.table(&name).is_some() {
                catalog.drop_table(&name)?;
            }
        }
        self.temp_on_commit.clear();
        self.temp_used = false;
        // Normally gone with the last table already; also one a failed CREATE left empty.
        catalog.engine().release_temp_store(self.session_id);
        Ok(())
    }

    /// The session and the pages of its temp tables' buffer pool, for CREATE TABLE
    /// (`Catalog::create_table`): the temp_buffers in force at its first temp table.
    pub(super) fn temp_owner(&self) -> (u64, u64) {
        (self.session_id, self.temp_buffers_used.unwrap_or_else(|| self.temp_buffers()))
    }

    /// The session's temp_buffers setting, in pages.
    fn temp_buffers(&self) -> u64 {
        let stored = self.settings.get("temp_buffers");
        let bytes = stored.and_then(|text| parse_size_bytes(text, SizeSyntax::SETTING));
        debug_assert!(bytes.is_some() || stored.is_none(), "checked when it was SET");
        bytes.map_or(tierdb_engine::TEMP_BUFFERS_DEFAULT, |bytes| bytes / TEMP_BUFFER_BYTES)
    }

    /// SET temp_buffers to `shown` (checked by `check_temp_buffers`): once the session has
    /// used temp tables, only to the value in force then, with PostgreSQL's 22023.
    pub(super) fn check_temp_buffers_unused(&self, shown: &str) -> Result<()> {
        let Some(used) = self.temp_buffers_used else { return Ok(()) };
        let bytes = parse_size_bytes(shown, SizeSyntax::SETTING).expect("checked setting");
        let buffers = bytes / TEMP_BUFFER_BYTES;
        if buffers == used {
            return Ok(());
        }
        // PostgreSQL's DETAIL: "temp_buffers" cannot be changed after any temporary tables
        // have been accessed in the session.
        Err(SqlError::new(
            "22023",
            format!("invalid value for parameter \"temp_buffers\": {buffers}"),
        ))
    }
}

/// The size of one temp buffer, PostgreSQL's block (and tierdb's page): temp_buffers
/// counts them.
const TEMP_BUFFER_BYTES: u64 = 8192;

/// SET temp_buffers = `value`: a number of 8 kB buffers, or a size with a unit (rounded to
/// buffers as PostgreSQL's rint), from `TEMP_BUFFERS_MIN` to `TEMP_BUFFERS_MAX` (22023 with
/// PostgreSQL's wording otherwise). Returns the value as SHOW prints it.
pub(super) fn check_temp_buffers(value: &str) -> Result<String> {
    let invalid = || {
        SqlError::new("22023", format!("invalid value for parameter \"temp_buffers\": \"{value}\""))
    };
    let plain = value.trim().chars().all(|c| c.is_ascii_digit());
    let buffers = if plain {
        value.trim().parse::<u64>().map_err(|_| invalid())?
    } else {
        let bytes = parse_size_bytes(value, SizeSyntax::SETTING).ok_or_else(invalid)?;
        let (whole, rest) = (bytes / TEMP_BUFFER_BYTES, bytes % TEMP_BUFFER_BYTES);
        // rint: halves to even.
        let half = TEMP_BUFFER_BYTES / 2;
        whole + u64::from(rest > half || (rest == half && whole % 2 == 1))
    };
    let (low, high) = (tierdb_engine::TEMP_BUFFERS_MIN, tierdb_engine::TEMP_BUFFERS_MAX);
    if !(low..=high).contains(&buffers) {
        return Err(SqlError::new(
            "22023",
            format!(
                "{buffers} 8kB is outside the valid range for parameter \"temp_buffers\" ({low} .. {high})"
            ),
        ));
    }
    Ok(crate::sizes::format_memory(buffers * TEMP_BUFFER_BYTES))
}
