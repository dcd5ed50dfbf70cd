//! CREATE [OR REPLACE] VIEW and DROP VIEW, and what views refuse of the DDL on the relations
//! they read (docs/design/018): PostgreSQL's dependencies, without its pg_depend.

use super::*;
use crate::catalog::{columns_read, view_uses_column, ViewDependency, ViewMeta};
use crate::output::CommandTag;
use crate::parse::parse_view_query;

impl Session {
    /// CREATE VIEW in the statement's transaction with the name claimed; any other statement
    /// that reaches here is not supported (0A000).
    pub(super) fn view_statement(&mut self, sql: &ast::Statement) -> Result<Output> {
        match sql {
            ast::Statement::CreateView(create) => {
                let tables = [self.namespace().new_table(&create.name)?];
                self.transactional_ddl(&tables, |session| session.create_view(create))
            }
            other => Err(SqlError::unsupported(format!(
                "statement not supported: {}",
                other.to_string().chars().take(80).collect::<String>()
            ))),
        }
    }

    pub(crate) fn create_view(&mut self, create: &ast::CreateView) -> Result<Output> {
        refuse_view_kinds(create)?;
        if crate::bind::needs_statement_with(&create.query) {
            return Err(SqlError::unsupported(
                "views must not contain data-modifying statements in WITH",
            ));
        }
        let name = self.namespace().new_table(&create.name)?;
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        let existing = self.catalog.table(&name);
        match &existing {
            Some(table) if create.or_replace && !table.is_view() => {
                return Err(SqlError::new("42809", format!("\"{name}\" is not a view")))
            }
            Some(_) if !create.or_replace => {
                return Err(SqlError::new("42P07", format!("relation \"{name}\" already exists")))
            }
            _ => {}
        }
        // What is stored is sqlparser's rendering of the query; it is bound from that text
        // here, so that every later use binds what was checked now.
        let text = create.query.to_string();
        let query = parse_view_query(&text)?;
        let plan = Binder::new(&self.catalog, self.namespace(), Vec::new()).query(&query)?;
        let columns = view_columns(create, &plan)?;
        if let Some(existing) = &existing {
            check_replacement(existing, &columns)?;
        }
        let mut meta = TableMeta::with_columns(name.clone(), columns);
        meta.view = Some(ViewMeta { depends_on: self.dependencies(&query, &text), query: text });
        let session_id = self.session_id;
        let replace = existing.is_some();
        Arc::clone(&self.catalog).create_view(self.ddl_transaction(), session_id, meta, replace)?;
        if !replace {
            self.own_new_table(&name)?;
        }
        Ok(Output::command(CommandTag::CreateView))
    }

    /// The tables and views `query` (stored as `text`) names, by catalog name, sorted, with
    /// the columns it may read of each (CTE names that are also tables' names included: a
    /// dependency too many refuses DDL, never misses one).
    fn dependencies(&self, query: &ast::Query, text: &str) -> Vec<ViewDependency> {
        let relations = self.named_relations(query);
        relations
            .into_iter()
            .filter_map(|relation| {
                let table = self.catalog.table(&relation)?;
                Some(ViewDependency { columns: columns_read(text, &table.columns), relation })
            })
            .collect()
    }

    /// The tables and views `query` names, by catalog name, sorted.
    fn named_relations(&self, query: &ast::Query) -> Vec<String> {
        let namespace = self.namespace();
        let mut names = Vec::new();
        let _ = ast::visit_relations(query, |name| {
            if let Ok(table) = namespace.existing_table(name) {
                if self.catalog.table(&table).is_some() && !names.contains(&table) {
                    names.push(table);
                }
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        names.sort();
        names
    }

    /// DROP VIEW: the views and, with CASCADE, the views that read them, in the statement's
    /// transaction. Without CASCADE a view that another reads is 2BP01. The caller holds the
    /// DDL lock.
    pub(super) fn drop_views(
        &mut self,
        if_exists: bool,
        names: &[ast::ObjectName],
        cascade: bool,
    ) -> Result<Output> {
        let mut dropped = Vec::new();
        for name in names {
            let name = match self.namespace().existing_table(name) {
                Err(error) if if_exists && matches!(error.sqlstate, "3F000" | "42P01") => continue,
                name => name?,
            };
            match self.catalog.table(&name) {
                None if if_exists => continue,
                None => {
                    return Err(SqlError::new("42P01", format!("view \"{name}\" does not exist")))
                }
                Some(table) if !table.is_view() => {
                    return Err(SqlError::new("42809", format!("\"{name}\" is not a view")))
                }
                Some(_) => dropped.push(name),
            }
        }
        self.drop_dependent_views(&dropped, "view", cascade)?;
        for name in &dropped {
            Arc::clone(&self.catalog).drop_view(self.ddl_transaction(), name)?;
        }
        Ok(Output::command(CommandTag::DropView))
    }

    /// Before DROP of `relations` (of kind `kind`: "table", "view"): the views reading them
    /// are dropped (CASCADE) or make it fail with PostgreSQL's 2BP01. The caller holds the
    /// DDL lock.
    pub(super) fn drop_dependent_views(
        &mut self,
        relations: &[String],
        kind: &str,
        cascade: bool,
    ) -> Result<()> {
        let dependents = self.catalog.dependent_views_transitively(relations);
        let Some(first) = dependents.first() else { return Ok(()) };
        if !cascade {
            let relation = relations
                .iter()
                .find(|relation| {
                    first.view.as_ref().is_some_and(|view| {
                        view.depends_on.iter().any(|dependency| dependency.relation == **relation)
                    })
                })
                .unwrap_or(&relations[0]);
            return Err(SqlError::new(
                "2BP01",
                format!("cannot drop {kind} {relation} because other objects depend on it"),
            ));
        }
        let names: Vec<String> = dependents.iter().map(|view| view.name.clone()).collect();
        self.claim_for_ddl(&names)?;
        for name in names.iter().rev() {
            Arc::clone(&self.catalog).drop_view(self.ddl_transaction(), name)?;
        }
        Ok(())
    }
}

/// The DDL of a column that views read: DROP COLUMN is 2BP01 and ALTER COLUMN TYPE 0A000, as
/// in PostgreSQL; RENAME COLUMN is 0A000 (PostgreSQL's views follow the column by its
/// number; tierdb's store its name: docs/design/018).
pub(super) fn refuse_column_change(
    catalog: &Catalog,
    table: &str,
    column: &str,
    change: ColumnChange,
) -> Result<()> {
    let Some(view) = catalog
        .dependent_views(table)
        .into_iter()
        .find(|view| view.view.as_ref().is_some_and(|meta| view_uses_column(meta, table, column)))
    else {
        return Ok(());
    };
    Err(match change {
        ColumnChange::Drop => SqlError::new(
            "2BP01",
            format!("cannot drop column {column} of table {table} because other objects depend on it"),
        ),
        ColumnChange::Type => {
            SqlError::unsupported("cannot alter type of a column used by a view or rule")
        }
        ColumnChange::Rename => SqlError::unsupported(format!(
            "RENAME of a column that a view reads is not supported (view \"{}\" reads column \"{column}\" of table \"{table}\")",
            view.name
        )),
    })
}

/// What DDL does to a column (`refuse_column_change`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ColumnChange {
    Drop,
    Type,
    Rename,
}

/// The kinds of views tierdb does not have: 0A000 naming each.
fn refuse_view_kinds(create: &ast::CreateView) -> Result<()> {
    let refused = [
        (create.materialized, "CREATE MATERIALIZED VIEW is not supported"),
        (create.temporary, "CREATE TEMPORARY VIEW is not supported"),
        (
            !matches!(create.options, ast::CreateTableOptions::None),
            "CREATE VIEW ... WITH (options) is not supported",
        ),
    ];
    if let Some((_, feature)) = refused.iter().find(|(refused, _)| *refused) {
        return Err(SqlError::unsupported(*feature));
    }
    if create.if_not_exists {
        return Err(SqlError::new("42601", "syntax error at or near \"NOT\""));
    }
    Ok(())
}

/// The view's columns: the query's, named by the column list if there is one (42601 for
/// more names than columns, 42701 for a name given twice).
fn view_columns(create: &ast::CreateView, plan: &Plan) -> Result<Vec<ColumnMeta>> {
    if create.columns.len() > plan.columns.len() {
        return Err(SqlError::new("42601", "CREATE VIEW specifies more column names than columns"));
    }
    let mut columns: Vec<ColumnMeta> = Vec::with_capacity(plan.columns.len());
    for (position, output) in plan.columns.iter().enumerate() {
        let name =
            create.columns.get(position).map_or_else(|| output.name.clone(), |c| ident(&c.name));
        if columns.iter().any(|column| column.name == name) {
            return Err(SqlError::new(
                "42701",
                format!("column \"{name}\" specified more than once"),
            ));
        }
        columns.push(ColumnMeta {
            name,
            ty: output.ty.clone(),
            nullable: true,
            default: None,
            identity: None,
        });
    }
    if columns.len() > crate::catalog::COLUMNS_MAX {
        return Err(SqlError::new(
            "54011",
            format!("tables can have at most {} columns", crate::catalog::COLUMNS_MAX),
        ));
    }
    Ok(columns)
}

/// CREATE OR REPLACE VIEW keeps the view's columns, in order, with their names and types,
/// and may add columns after them (PostgreSQL's 42P16 otherwise).
fn check_replacement(existing: &TableMeta, columns: &[ColumnMeta]) -> Result<()> {
    if columns.len() < existing.columns.len() {
        return Err(SqlError::new("42P16", "cannot drop columns from view"));
    }
    for (old, new) in existing.columns.iter().zip(columns) {
        if old.name != new.name {
            return Err(SqlError::new(
                "42P16",
                format!("cannot change name of view column \"{}\" to \"{}\"", old.name, new.name),
            ));
        }
        if old.ty != new.ty {
            return Err(SqlError::new(
                "42P16",
                format!(
                    "cannot change data type of view column \"{}\" from {} to {}",
                    old.name,
                    old.ty.display_name(),
                    new.ty.display_name()
                ),
            ));
        }
    }
    Ok(())
}
