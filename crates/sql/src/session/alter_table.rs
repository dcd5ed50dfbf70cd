//! ALTER TABLE: ADD PRIMARY KEY / UNIQUE (an index build), ADD CHECK (session/checks.rs),
//! ADD / DROP COLUMN (session/columns.rs), and the changes only the SQL
//! catalog holds: RENAME COLUMN, ALTER COLUMN SET / DROP DEFAULT, SET / DROP NOT NULL. Each
//! runs in the statement's transaction (transactional_ddl.rs) and a statement's operations
//! go in order, all or none. ALTER COLUMN TYPE rewrites the stored rows and is not built
//! yet (0A000, naming the operation).

use super::checks::rename_in_checks;
use super::ddl::{refuse_subquery_in_default, unique_index_error};
use super::foreign_keys::refuse_referenced_index;
use super::*;
use crate::catalog::{ColumnMeta, Identity};
use crate::output::CommandTag;

impl Session {
    pub(crate) fn alter_table(&mut self, alter: &ast::AlterTable) -> Result<Output> {
        let table_name = self.namespace().existing_table(&alter.name)?;
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        if alter.if_exists && self.catalog.table(&table_name).is_none() {
            // Nothing to do (PostgreSQL adds a NOTICE).
            return Ok(Output::command(CommandTag::AlterTable));
        }
        for operation in &alter.operations {
            let table = self
                .catalog
                .table(&table_name)
                .ok_or_else(|| SqlError::undefined_table(&table_name))?;
            let owner_to = matches!(operation, ast::AlterTableOperation::OwnerTo { .. });
            if table.is_view() && !owner_to {
                return Err(SqlError::new(
                    "42809",
                    format!(
                        "ALTER TABLE ... cannot be performed on relation \"{table_name}\" (a view)"
                    ),
                ));
            }
            self.refuse_view_column_change(&table_name, operation)?;
            match operation {
                ast::AlterTableOperation::AddConstraint {
                    constraint: ast::TableConstraint::Check(check),
                    not_valid,
                } => self.add_check_constraint(&table, check, *not_valid)?,
                ast::AlterTableOperation::AddConstraint {
                    constraint: ast::TableConstraint::ForeignKey(key),
                    not_valid,
                } => {
                    if *not_valid {
                        return Err(SqlError::unsupported(
                            "NOT VALID constraints are not supported",
                        ));
                    }
                    self.add_foreign_key(&table, key)?
                }
                ast::AlterTableOperation::AddConstraint { constraint, not_valid } => {
                    if *not_valid {
                        return Err(SqlError::unsupported(not_valid_key(constraint)));
                    }
                    self.add_key_constraint(&table_name, &table, constraint)?
                }
                ast::AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
                    self.rename_column(&table, &ident(old_column_name), &ident(new_column_name))?
                }
                ast::AlterTableOperation::AlterColumn { column_name, op } => {
                    self.alter_column(&table, &ident(column_name), op)?
                }
                ast::AlterTableOperation::DropConstraint { if_exists, name, .. } => {
                    self.drop_constraint(&table, &ident(name), *if_exists)?
                }
                ast::AlterTableOperation::AddColumn { if_not_exists, column_def, .. } => {
                    self.add_column(&table, column_def, *if_not_exists)?
                }
                ast::AlterTableOperation::DropColumn { column_names, if_exists, .. } => {
                    for name in column_names {
                        let table = self.catalog.table(&table_name).expect("claimed above");
                        self.drop_column(&table, &ident(name), *if_exists)?
                    }
                }
                ast::AlterTableOperation::OwnerTo { new_owner } => {
                    self.change_owner(&table_name, new_owner)?
                }
                other => return Err(SqlError::unsupported(unsupported_operation(other))),
            }
        }
        Ok(Output::command(CommandTag::AlterTable))
    }

    /// The column changes views that read the column refuse (`refuse_column_change`).
    fn refuse_view_column_change(
        &self,
        table: &str,
        operation: &ast::AlterTableOperation,
    ) -> Result<()> {
        use super::views::{refuse_column_change, ColumnChange};
        match operation {
            ast::AlterTableOperation::RenameColumn { old_column_name, .. } => {
                let column = ident(old_column_name);
                super::partial_index::refuse_column_change(&self.catalog, table, "RENAME COLUMN")?;
                refuse_column_change(&self.catalog, table, &column, ColumnChange::Rename)
            }
            ast::AlterTableOperation::AlterColumn {
                column_name,
                op: ast::AlterColumnOperation::SetDataType { .. },
            } => {
                let column = ident(column_name);
                refuse_column_change(&self.catalog, table, &column, ColumnChange::Type)
            }
            ast::AlterTableOperation::DropColumn { column_names, .. } => {
                super::partial_index::refuse_column_change(&self.catalog, table, "DROP COLUMN")?;
                for column in column_names {
                    let column = ident(column);
                    refuse_column_change(&self.catalog, table, &column, ColumnChange::Drop)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// ALTER TABLE ... ADD PRIMARY KEY / UNIQUE: a unique index, built now.
    fn add_key_constraint(
        &mut self,
        table_name: &str,
        table: &Arc<TableMeta>,
        constraint: &ast::TableConstraint,
    ) -> Result<()> {
        let (columns, primary, name) = match constraint {
            ast::TableConstraint::PrimaryKey(key) => {
                if table.primary_key().is_some() {
                    return Err(SqlError::new(
                        "42P16",
                        format!("multiple primary keys for table \"{table_name}\" are not allowed"),
                    ));
                }
                (
                    &key.columns,
                    true,
                    key.name.as_ref().map_or_else(|| format!("{table_name}_pkey"), ident),
                )
            }
            ast::TableConstraint::Unique(unique) => (
                &unique.columns,
                false,
                unique.name.as_ref().map_or_else(
                    || {
                        let columns: Vec<String> = unique
                            .columns
                            .iter()
                            .map(|column| match &column.column.expr {
                                ast::Expr::Identifier(name) => ident(name),
                                other => other.to_string(),
                            })
                            .collect();
                        format!("{table_name}_{}_key", columns.join("_"))
                    },
                    ident,
                ),
            ),
            _ => {
                return Err(SqlError::unsupported(
                    "only PRIMARY KEY and UNIQUE constraints are supported",
                ))
            }
        };
        let mut positions = Vec::new();
        for column in columns {
            let ast::Expr::Identifier(column_name) = &column.column.expr else {
                return Err(SqlError::unsupported("constraint on an expression"));
            };
            let column_name = ident(column_name);
            positions.push(table.column_index(&column_name).ok_or_else(|| {
                SqlError::new(
                    "42703",
                    format!("column \"{column_name}\" of relation \"{table_name}\" does not exist"),
                )
            })?);
        }
        if primary {
            for &position in &positions {
                self.check_no_nulls_in_transaction(table, position)?;
            }
        }
        let index = IndexMeta {
            name: name.clone(),
            oid: 0,
            columns: positions,
            unique: true,
            primary,
            constraint: true,
            kind: IndexKind::Secondary,
            predicate: None,
        };
        let options = self.index_build_options();
        Arc::clone(&self.catalog)
            .create_index(self.ddl_transaction(), table_name, index, options)
            .map_err(|error| unique_index_error(error, &name))?;
        Ok(())
    }

    /// ALTER TABLE ... DROP CONSTRAINT of a UNIQUE constraint: its index goes (at COMMIT in
    /// a block, as DROP INDEX). A primary key is the table's clustering key or holds its
    /// rows' identity, so dropping one stays 0A000.
    fn drop_constraint(&mut self, table: &TableMeta, name: &str, if_exists: bool) -> Result<()> {
        if self.drop_check_constraint(table, name)? || self.drop_foreign_key(table, name)? {
            return Ok(());
        }
        let Some(index) = table.indexes.iter().find(|index| index.constraint && index.name == name)
        else {
            if if_exists {
                // Nothing to do (PostgreSQL adds a NOTICE).
                return Ok(());
            }
            return Err(SqlError::new(
                "42704",
                format!("constraint \"{name}\" of relation \"{}\" does not exist", table.name),
            ));
        };
        if index.primary {
            return Err(SqlError::unsupported("ALTER TABLE ... DROP CONSTRAINT of a primary key"));
        }
        let what = format!("constraint {name} on table {}", table.name);
        refuse_referenced_index(&self.catalog, table, name, &what)?;
        self.drop_index_now_or_at_commit(table, name)
    }

    fn rename_column(&mut self, table: &TableMeta, old: &str, new: &str) -> Result<()> {
        let position = table
            .column_index(old)
            .ok_or_else(|| SqlError::new("42703", format!("column \"{old}\" does not exist")))?;
        if table.column_index(new).is_some() {
            return Err(SqlError::new(
                "42701",
                format!("column \"{new}\" of relation \"{}\" already exists", table.name),
            ));
        }
        let mut updated = table.clone();
        updated.columns[position].name = new.to_string();
        let mut binder = Binder::new(&self.catalog, self.namespace(), Vec::new());
        updated.checks = rename_in_checks(&mut binder, &updated, old, new)?;
        Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)?;
        // The sequences OWNED BY the column (an identity column's among them) follow it.
        for sequence in self.catalog.owned_sequences(&table.name, Some(old)) {
            let mut renamed = (*sequence).clone();
            if let Some(options) = renamed.sequence.as_mut() {
                options.owner = Some((table.name.clone(), new.to_string()));
            }
            self.claim_for_ddl(std::slice::from_ref(&sequence.name))?;
            Arc::clone(&self.catalog).alter_sequence_object(self.ddl_transaction(), renamed)?;
        }
        Ok(())
    }

    fn alter_column(
        &mut self,
        table: &Arc<TableMeta>,
        name: &str,
        operation: &ast::AlterColumnOperation,
    ) -> Result<()> {
        let position = table.column_index(name).ok_or_else(|| {
            SqlError::new(
                "42703",
                format!("column \"{name}\" of relation \"{}\" does not exist", table.name),
            )
        })?;
        let column = &table.columns[position];
        let mut updated = (**table).clone();
        match operation {
            ast::AlterColumnOperation::SetDefault { value } => {
                refuse_identity(table, column)?;
                refuse_sequence_default(column)?;
                updated.columns[position].default = Some(self.checked_default(value, &column.ty)?);
            }
            ast::AlterColumnOperation::DropDefault => {
                refuse_identity(table, column)?;
                refuse_sequence_default(column)?;
                updated.columns[position].default = None;
            }
            ast::AlterColumnOperation::SetNotNull => {
                if column.nullable {
                    self.check_no_nulls_in_transaction(table, position)?;
                    updated.columns[position].nullable = false;
                }
            }
            ast::AlterColumnOperation::DropNotNull => {
                if table.primary_key().is_some_and(|key| key.columns.contains(&position)) {
                    return Err(SqlError::new(
                        "42P16",
                        format!("column \"{name}\" is in a primary key"),
                    ));
                }
                refuse_identity(table, column)?;
                self.catalog.engine().allow_nulls(&table.name, position)?;
                updated.columns[position].nullable = true;
            }
            ast::AlterColumnOperation::SetDataType { .. } => {
                return Err(SqlError::unsupported("ALTER TABLE ... ALTER COLUMN ... TYPE"))
            }
            ast::AlterColumnOperation::AddGenerated { .. } => {
                return Err(SqlError::unsupported("ALTER TABLE ... ALTER COLUMN ... ADD GENERATED"))
            }
        }
        Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)
    }

    /// A DEFAULT expression checked as CREATE TABLE checks it (it binds, without a subquery,
    /// and converts to the column's type), as stored.
    pub(super) fn checked_default(&self, expr: &ast::Expr, ty: &SqlType) -> Result<String> {
        refuse_subquery_in_default(expr)?;
        let sequence = self.refuse_sequence_in_default(expr)?;
        let mut binder = Binder::new(&self.catalog, self.namespace(), Vec::new());
        let (bound, from) = binder.expr(expr, &bind::Scope::default(), Some(ty))?;
        bind::coerce(bound, &from, ty, false)?;
        // `nextval('public.s'::regclass)` stored as PostgreSQL prints it back (and as
        // `default_sequences` reads it): `nextval('s'::regclass)`.
        match (sequence, expr) {
            (Some(name), ast::Expr::Function(_)) => {
                let quoted = crate::identifiers::quote_identifier(&name).replace('\'', "''");
                Ok(format!("nextval('{quoted}'::regclass)"))
            }
            _ => Ok(expr.to_string()),
        }
    }

    /// A DEFAULT that calls nextval: its sequence is resolved now, as PostgreSQL resolves
    /// the regclass constant (42P01 for none). A sequence of CREATE SEQUENCE is returned
    /// (DROP SEQUENCE finds the DEFAULT by it); a column's DEFAULT may not take another
    /// serial or identity column's (0A000): dropping that column's table would reset the
    /// sequence under this one.
    fn refuse_sequence_in_default(&self, expr: &ast::Expr) -> Result<Option<String>> {
        let mut named = Vec::new();
        let _ = ast::visit_expressions(expr, |inner| {
            if let ast::Expr::Function(function) = inner {
                let is_nextval = function.name.0.last().is_some_and(|part| {
                    part.as_ident().is_some_and(|part| part.value.eq_ignore_ascii_case("nextval"))
                });
                if is_nextval {
                    named.push(sequence_argument(function));
                }
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        // The first call decides: every outcome below refuses the DEFAULT.
        if let Some(name) = named.into_iter().next() {
            let Some(parts) = name else {
                return Err(SqlError::unsupported(
                    "a DEFAULT calling nextval() with a computed argument is not supported",
                ));
            };
            let name = match parts.as_slice() {
                [name] => name.clone(),
                [schema, name] if schema == crate::bind::SCHEMA_PUBLIC => name.clone(),
                [schema, _] if !crate::bind::SCHEMAS.contains(&schema.as_str()) => {
                    return Err(SqlError::new(
                        "3F000",
                        format!("schema \"{schema}\" does not exist"),
                    ));
                }
                // pg_catalog and information_schema have no sequences.
                _ => return Err(SqlError::undefined_table(&parts.join("."))),
            };
            if self.catalog.sequence_object(&name).is_some()
                && !self.hidden_tables().contains(&name)
            {
                return Ok(Some(name));
            }
            if !self.catalog.is_column_sequence(&name) {
                return Err(SqlError::undefined_table(&parts.join(".")));
            }
            return Err(SqlError::unsupported(format!(
                "a DEFAULT taking values from the sequence \"{name}\" of another column is not supported"
            )));
        }
        Ok(None)
    }

    /// SET NOT NULL's check: no row the statement's transaction sees has a NULL there (its
    /// own uncommitted rows included).
    fn check_no_nulls_in_transaction(&mut self, table: &TableMeta, position: usize) -> Result<()> {
        let transaction = self.ddl_transaction();
        let handle = transaction.table(&table.name)?;
        let mut resume: Option<Vec<u8>> = None;
        loop {
            let page = transaction.scan_page(
                &handle,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                resume.as_deref(),
                exec::SCAN_PAGE_ROWS,
            )?;
            let complete = page.len() < exec::SCAN_PAGE_ROWS;
            for (key, row) in page {
                let is_null = matches!(row.get(position), Some(Value::Null) | None);
                table.check_not_null(position, is_null, true)?;
                resume = Some(key);
            }
            if complete {
                return Ok(());
            }
        }
    }
}

/// PostgreSQL's 0A000 for NOT VALID on a key constraint (only CHECK and FOREIGN KEY
/// constraints can be NOT VALID there).
fn not_valid_key(constraint: &ast::TableConstraint) -> &'static str {
    match constraint {
        ast::TableConstraint::PrimaryKey(_) => "PRIMARY KEY constraints cannot be marked NOT VALID",
        ast::TableConstraint::Unique(_) => "UNIQUE constraints cannot be marked NOT VALID",
        _ => "NOT VALID constraints are not supported",
    }
}

/// An identity column's default and NOT NULL belong to the identity (42601, as PostgreSQL).
fn refuse_identity(table: &TableMeta, column: &ColumnMeta) -> Result<()> {
    match column.identity {
        Some(Identity::Always | Identity::ByDefault) => Err(SqlError::syntax(format!(
            "column \"{}\" of relation \"{}\" is an identity column",
            column.name, table.name
        ))),
        None => Ok(()),
    }
}

/// A serial column's sequence is found through its default (DROP TABLE drops it then), so
/// its default stays until a column can own a sequence on its own.
fn refuse_sequence_default(column: &ColumnMeta) -> Result<()> {
    match column.default.as_deref().and_then(crate::catalog::sequence_of_default) {
        Some(_) => Err(SqlError::unsupported(
            "ALTER TABLE ... ALTER COLUMN ... SET / DROP DEFAULT of a serial column",
        )),
        None => Ok(()),
    }
}

/// The name of an ALTER TABLE operation tierdb does not carry out, for its 0A000.
fn unsupported_operation(operation: &ast::AlterTableOperation) -> String {
    let name = match operation {
        ast::AlterTableOperation::RenameTable { .. } => "RENAME TO",
        ast::AlterTableOperation::RenameConstraint { .. } => "RENAME CONSTRAINT",
        _ => {
            let text = operation.to_string();
            return format!("ALTER TABLE ... {}", text.chars().take(60).collect::<String>());
        }
    };
    format!("ALTER TABLE ... {name}")
}

/// The name parts of the sequence a `nextval('name')` or `nextval('name'::regclass)` call
/// names, as regclass reads them; None for any other argument.
fn sequence_argument(function: &ast::Function) -> Option<Vec<String>> {
    let ast::FunctionArguments::List(list) = &function.args else { return None };
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(argument))] = list.args.as_slice()
    else {
        return None;
    };
    let literal = match argument {
        ast::Expr::Cast { expr, .. } => expr.as_ref(),
        other => other,
    };
    let ast::Expr::Value(value) = literal else { return None };
    let ast::Value::SingleQuotedString(text) = &value.value else { return None };
    crate::exec::name_parts(text).ok()
}
