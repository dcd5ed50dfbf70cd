//! CHECK constraints in DDL: CREATE TABLE's column and table constraints, ALTER TABLE ...
//! ADD [CONSTRAINT name] CHECK (...) (the rows already there checked in the statement's
//! transaction), DROP CONSTRAINT, and RENAME COLUMN's rewrite of the expressions naming the
//! column. Names are chosen as PostgreSQL's ChooseConstraintName does: `<table>_<column>_check`
//! when the expression reads one column, `<table>_check` otherwise, with a number appended
//! until the name is free. Statements that write rows check them (exec/rows.rs).

use std::collections::HashSet;

use super::*;
use crate::bind::{check_meta, parse_check};
use crate::catalog::CheckMeta;

/// Refuses what a CHECK constraint could carry that tierdb would otherwise ignore.
pub(super) fn refuse_check_options(check: &ast::CheckConstraint) -> Result<()> {
    if check.no_inherit {
        // Without table inheritance NO INHERIT changes only pg_constraint.connoinherit;
        // accepting it and showing false there would be a silent difference.
        return Err(SqlError::unsupported("CHECK constraints with NO INHERIT are not supported"));
    }
    if check.enforced.is_some() {
        return Err(SqlError::syntax("syntax error at or near \"ENFORCED\""));
    }
    Ok(())
}

impl Session {
    /// The CHECK constraints of a new table (`meta` holds its columns), named and bound,
    /// in name order. 42710 for a name given twice.
    pub(super) fn new_checks(
        &self,
        meta: &TableMeta,
        checks: &[(Option<String>, ast::Expr)],
    ) -> Result<Vec<CheckMeta>> {
        let mut taken = self.all_constraint_names();
        let mut made: Vec<CheckMeta> = Vec::with_capacity(checks.len());
        let mut binder = Binder::new(&self.catalog, self.namespace(), Vec::new());
        for (name, expr) in checks {
            let mut check = check_meta(&mut binder, meta, String::new(), expr)?;
            check.name = match name {
                Some(name) if made.iter().any(|existing| existing.name == *name) => {
                    return Err(SqlError::new(
                        "42710",
                        format!("check constraint \"{name}\" already exists"),
                    ));
                }
                Some(name) => name.clone(),
                None => choose_check_name(meta, expr, &taken),
            };
            taken.insert(check.name.clone());
            made.push(check);
        }
        made.sort_by(|left, right| left.name.cmp(&right.name));
        Ok(made)
    }

    /// ALTER TABLE ... ADD [CONSTRAINT name] CHECK (expr) [NOT VALID].
    pub(super) fn add_check_constraint(
        &mut self,
        table: &TableMeta,
        check: &ast::CheckConstraint,
        not_valid: bool,
    ) -> Result<()> {
        refuse_check_options(check)?;
        if not_valid {
            return Err(SqlError::unsupported("NOT VALID constraints are not supported"));
        }
        let mut binder = Binder::new(&self.catalog, self.namespace(), Vec::new());
        let mut made = check_meta(&mut binder, table, String::new(), &check.expr)?;
        made.name = match &check.name {
            Some(name) => {
                let name = ident(name);
                if table_constraint_names(table).any(|existing| existing == name) {
                    return Err(duplicate_constraint(&name, &table.name));
                }
                name
            }
            None => choose_check_name(table, &check.expr, &self.all_constraint_names()),
        };
        if self.some_row_fails(table, &made)? {
            return Err(SqlError::new(
                "23514",
                format!(
                    "check constraint \"{}\" of relation \"{}\" is violated by some row",
                    made.name, table.name
                ),
            ));
        }
        made.oid = self.catalog.next_oid()?;
        let mut updated = table.clone();
        updated.checks.push(made);
        updated.checks.sort_by(|left, right| left.name.cmp(&right.name));
        Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)
    }

    /// Whether a row the statement's transaction sees makes `check` false: `SELECT 1 FROM
    /// table WHERE NOT (expr) LIMIT 1`, run in that transaction (its own rows included).
    fn some_row_fails(&mut self, table: &TableMeta, check: &CheckMeta) -> Result<bool> {
        let quoted = crate::plan::deparse::quote_identifier(&table.name);
        let sql = format!("SELECT 1 FROM public.{quoted} WHERE NOT ({}) LIMIT 1", check.expression);
        self.query_finds_a_row(&sql)
    }

    /// ALTER TABLE ... DROP CONSTRAINT of a CHECK constraint; false when `table` has none
    /// of that name.
    pub(super) fn drop_check_constraint(&mut self, table: &TableMeta, name: &str) -> Result<bool> {
        let Some(position) = table.checks.iter().position(|check| check.name == name) else {
            return Ok(false);
        };
        let mut updated = table.clone();
        updated.checks.remove(position);
        Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)?;
        Ok(true)
    }
}

/// PostgreSQL's 42710 for a constraint name `table` already has.
pub(super) fn duplicate_constraint(name: &str, table: &str) -> SqlError {
    SqlError::new("42710", format!("constraint \"{name}\" for relation \"{table}\" already exists"))
}

/// The names of `table`'s constraints: primary key, UNIQUE, CHECK and FOREIGN KEY.
pub(super) fn table_constraint_names(table: &TableMeta) -> impl Iterator<Item = &str> {
    let keys =
        table.indexes.iter().filter(|index| index.constraint).map(|index| index.name.as_str());
    let checks = table.checks.iter().map(|check| check.name.as_str());
    keys.chain(checks).chain(table.foreign_keys.iter().map(|key| key.name.as_str()))
}

/// PostgreSQL's name for an unnamed CHECK constraint: `<table>_<column>_check` when the
/// expression reads exactly one column, else `<table>_check`; then `...1`, `...2` until
/// free.
fn choose_check_name(table: &TableMeta, expr: &ast::Expr, taken: &HashSet<String>) -> String {
    let mut referenced = crate::parse::column_names(expr);
    referenced.retain(|name| table.column_index(name).is_some());
    let base = match referenced.as_slice() {
        [column] => format!("{}_{column}_check", table.name),
        _ => format!("{}_check", table.name),
    };
    if !taken.contains(&base) {
        return base;
    }
    (1..)
        .map(|suffix| format!("{base}{suffix}"))
        .find(|name| !taken.contains(name))
        .expect("a free name")
}

/// RENAME COLUMN: the CHECK expressions naming `old` name `new` instead (their deparsed
/// forms too), as PostgreSQL's stored expressions refer to columns by number. `table` has
/// the column renamed already.
pub(super) fn rename_in_checks(
    binder: &mut Binder<'_>,
    table: &TableMeta,
    old: &str,
    new: &str,
) -> Result<Vec<CheckMeta>> {
    let mut renamed = Vec::with_capacity(table.checks.len());
    for check in &table.checks {
        let mut expr = parse_check(check)?;
        let _ = ast::visit_expressions_mut(&mut expr, |inner| {
            match inner {
                ast::Expr::Identifier(name) if ident(name) == old => {
                    *name = ast::Ident::with_quote('"', new);
                }
                ast::Expr::CompoundIdentifier(parts) => {
                    if let Some(last) = parts.last_mut().filter(|last| ident(last) == old) {
                        *last = ast::Ident::with_quote('"', new);
                    }
                }
                _ => {}
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        let mut made = check_meta(binder, table, check.name.clone(), &expr)?;
        made.oid = check.oid;
        renamed.push(made);
    }
    Ok(renamed)
}
