//! The session's temporary tables (docs/design/019-temp-tables.md): their names, ON COMMIT
//! DELETE ROWS / DROP at each commit, DISCARD TEMP / ALL, and the drop at session end.

use super::*;
use crate::catalog::{relation_name, split_temp_name, temp_schema};

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
        Ok(())
    }
}
