//! ALTER TABLE ... ADD COLUMN and DROP COLUMN (docs/design/016). Neither touches stored
//! rows: the engine maps logical columns over physical slots that are never reused. ADD
//! COLUMN takes a new slot whose *missing value* (what rows stored before it read) is the
//! DEFAULT evaluated once, as PostgreSQL's attmissingval; DROP COLUMN orphans the column's
//! slot and drops the indexes and CHECK constraints on the column, as PostgreSQL does. Both
//! change the engine layout at once and the SQL definition in the statement's transaction
//! (`Catalog::replace_meta`); a rollback or a crash hands the committed layout back
//! (`Catalog::reconcile`, `restore_engine_table`).

use super::ddl::{check_collation, column_type};
use super::*;
use crate::bind::bind_defaults;
use crate::catalog::{engine_columns, ColumnLayout, COLUMNS_MAX};
use crate::plan::Expr;
use crate::types::Datum;

impl Session {
    /// ALTER TABLE ... ADD [COLUMN] [IF NOT EXISTS] name type [DEFAULT e] [NOT NULL].
    pub(super) fn add_column(
        &mut self,
        table: &TableMeta,
        column: &ast::ColumnDef,
        if_not_exists: bool,
    ) -> Result<()> {
        let name = ident(&column.name);
        if table.column_index(&name).is_some() {
            if if_not_exists {
                // Nothing to do (PostgreSQL adds a NOTICE).
                return Ok(());
            }
            return Err(SqlError::new(
                "42701",
                format!("column \"{name}\" of relation \"{}\" already exists", table.name),
            ));
        }
        if table.columns.len() >= COLUMNS_MAX {
            return Err(SqlError::new(
                "54011",
                format!("tables can have at most {COLUMNS_MAX} columns"),
            ));
        }
        let meta = self.added_column_meta(&name, column)?;
        let mut updated = table.clone();
        updated.columns.push(meta);
        let missing = self.missing_value(&updated)?;
        let position = updated.columns.len() - 1;
        if matches!(missing, Value::Null) && !updated.columns[position].nullable {
            // No row may read NULL from a NOT NULL column: only an empty table may take one.
            if self.table_has_rows(table)? {
                updated.check_not_null(position, true, true)?;
            }
        }
        let (_, _, slot_count) = self.catalog.engine().table_layout(&table.name)?;
        let mut layout = table.column_layout();
        layout.slots.push(slot_count);
        layout.missing.push(missing);
        self.install_columns(updated, layout)
    }

    /// The new column of ADD COLUMN, with its options. A serial or identity column needs a
    /// sequence and a value per existing row, and column constraints other than NOT NULL
    /// need an index or a check over the rows: 0A000, by name.
    fn added_column_meta(&self, name: &str, column: &ast::ColumnDef) -> Result<ColumnMeta> {
        if bind::is_serial(&column.data_type) {
            return Err(SqlError::unsupported("ALTER TABLE ... ADD COLUMN of a serial column"));
        }
        let ty = column_type(name, &column.data_type)?;
        let mut meta = ColumnMeta {
            name: name.to_string(),
            ty,
            nullable: true,
            default: None,
            identity: None,
        };
        for option in &column.options {
            let refused = match &option.option {
                ast::ColumnOption::NotNull => {
                    meta.nullable = false;
                    continue;
                }
                ast::ColumnOption::Null => continue,
                ast::ColumnOption::Default(expr) => {
                    meta.default = Some(self.checked_default(expr, &meta.ty)?);
                    continue;
                }
                ast::ColumnOption::Collation(collation) => {
                    check_collation(collation)?;
                    continue;
                }
                ast::ColumnOption::PrimaryKey(_) => "a PRIMARY KEY constraint",
                ast::ColumnOption::Unique(_) => "a UNIQUE constraint",
                ast::ColumnOption::Check(_) => "a CHECK constraint",
                ast::ColumnOption::ForeignKey(_) => "a REFERENCES constraint",
                ast::ColumnOption::Generated { .. } => "an identity or generated column",
                _ => "this column option",
            };
            return Err(SqlError::unsupported(format!(
                "ALTER TABLE ... ADD COLUMN with {refused} (add the column, then the constraint)"
            )));
        }
        Ok(meta)
    }

    /// The value rows stored before the last column of `table` existed read for it: its
    /// DEFAULT evaluated once now (NULL without one), as PostgreSQL's attmissingval. A
    /// volatile DEFAULT (random(), nextval) would give each row its own value, which needs
    /// a rewrite of every row: 0A000 rather than one value for all.
    fn missing_value(&mut self, table: &TableMeta) -> Result<Value> {
        let column = table.columns.last().expect("the added column");
        if column.default.is_none() {
            return Ok(Value::Null);
        }
        let mut binder = Binder::new(&self.catalog, self.namespace(), Vec::new());
        let default = bind_defaults(&mut binder, table)?
            .pop()
            .flatten()
            .expect("the added column has a default");
        if Expr::is_volatile(&default) {
            return Err(SqlError::unsupported(
                "ALTER TABLE ... ADD COLUMN with a volatile DEFAULT (each existing row would need its own value)",
            ));
        }
        let datum = self.evaluate_once(&default)?;
        datum.to_value(&column.ty)
    }

    /// Evaluates an expression that reads no row, in the statement's transaction.
    fn evaluate_once(&mut self, expr: &Expr) -> Result<Datum> {
        self.with_row_ctx(|ctx| exec::eval(expr, &[], ctx))
    }

    /// Whether the statement's transaction sees a row of `table` (its own rows included).
    fn table_has_rows(&mut self, table: &TableMeta) -> Result<bool> {
        let transaction = self.ddl_transaction();
        let handle = transaction.table(&table.name)?;
        let unbounded = std::ops::Bound::Unbounded;
        Ok(!transaction.scan_page(&handle, unbounded, unbounded, None, 1)?.is_empty())
    }

    /// ALTER TABLE ... DROP [COLUMN] [IF EXISTS] name [CASCADE | RESTRICT]: the indexes
    /// and CHECK constraints on the column go with it (as in PostgreSQL, whatever the
    /// behaviour: nothing outside the table can depend on a column here). A primary key's
    /// column is the table's clustering key, and a vector index is not built again if the
    /// drop rolls back: both 0A000.
    pub(super) fn drop_column(
        &mut self,
        table: &TableMeta,
        name: &str,
        if_exists: bool,
    ) -> Result<()> {
        let Some(position) = table.column_index(name) else {
            if if_exists {
                // Nothing to do (PostgreSQL adds a NOTICE).
                return Ok(());
            }
            return Err(SqlError::new(
                "42703",
                format!("column \"{name}\" of relation \"{}\" does not exist", table.name),
            ));
        };
        refuse_dropped_column(table, position)?;
        refuse_referenced_column(&self.catalog, table, position)?;
        let mut updated = table.clone();
        // The table's own FOREIGN KEYs on the column go with it (as in PostgreSQL); the
        // others name columns by position and follow the renumbering.
        updated.foreign_keys.retain(|key| !key.columns.contains(&position));
        for key in &mut updated.foreign_keys {
            shift_positions(&mut key.columns, position);
            if key.referenced_table == table.name {
                shift_positions(&mut key.referenced_columns, position);
            }
        }
        let mut layout = table.column_layout();
        updated.columns.remove(position);
        layout.slots.remove(position);
        layout.missing.remove(position);
        updated.set_column_layout(layout);
        let mut checks = Vec::with_capacity(updated.checks.len());
        for check in updated.checks.drain(..) {
            if !expression_names(&check.expression, name)? {
                checks.push(check);
            }
        }
        updated.checks = checks;
        let (gone, kept): (Vec<IndexMeta>, Vec<IndexMeta>) =
            updated.indexes.drain(..).partition(|index| index.columns.contains(&position));
        updated.indexes = kept;
        for index in &mut updated.indexes {
            for column in &mut index.columns {
                if *column > position {
                    *column -= 1;
                }
            }
        }
        for index in &gone {
            // At once, before the layout that no longer has the column: a rollback builds
            // it again (`restore_engine_table`).
            self.catalog.engine().drop_index(&table.name, &index.name)?;
        }
        let layout = updated.column_layout();
        self.install_columns(updated, layout)?;
        // The sequences OWNED BY the column go with it.
        for sequence in self.catalog.owned_sequences(&table.name, Some(name)) {
            self.claim_for_ddl(std::slice::from_ref(&sequence.name))?;
            Arc::clone(&self.catalog)
                .drop_sequence_object(self.ddl_transaction(), &sequence.name)?;
        }
        self.renumber_referencing_keys(&table.name, position)
    }

    /// Other tables' FOREIGN KEYs name `table`'s columns by position: after the column at
    /// `dropped` goes, those past it move down. The referencing tables are claimed first
    /// (their definitions change in this transaction).
    fn renumber_referencing_keys(&mut self, table: &str, dropped: usize) -> Result<()> {
        let referencing: Vec<String> = self
            .catalog
            .tables()
            .iter()
            .filter(|other| other.name != table)
            .filter(|other| other.foreign_keys.iter().any(|key| key.referenced_table == table))
            .map(|other| other.name.clone())
            .collect();
        if referencing.is_empty() {
            return Ok(());
        }
        self.claim_for_ddl(&referencing)?;
        for name in &referencing {
            let Some(meta) = self.catalog.table(name) else { continue };
            let mut updated = (*meta).clone();
            for key in updated.foreign_keys.iter_mut().filter(|key| key.referenced_table == table) {
                shift_positions(&mut key.referenced_columns, dropped);
            }
            Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)?;
        }
        Ok(())
    }

    /// Gives the engine the new columns, then stores the new definition in the statement's
    /// transaction.
    fn install_columns(&mut self, mut updated: TableMeta, layout: ColumnLayout) -> Result<()> {
        self.catalog.mark_column_change(self.session_id, &updated.name);
        let columns = engine_columns(&updated);
        self.catalog.engine().set_layout(
            &updated.name,
            columns,
            layout.slots.clone(),
            layout.missing.clone(),
        )?;
        updated.set_column_layout(layout);
        Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)
    }
}

/// Column positions after the one at `dropped` move down by one.
fn shift_positions(columns: &mut [usize], dropped: usize) {
    for column in columns.iter_mut().filter(|column| **column > dropped) {
        *column -= 1;
    }
}

/// DROP COLUMN of a column a FOREIGN KEY references: 2BP01, as PostgreSQL without CASCADE.
fn refuse_referenced_column(catalog: &Catalog, table: &TableMeta, position: usize) -> Result<()> {
    for referencing in catalog.tables() {
        for key in referencing.foreign_keys.iter().filter(|key| key.referenced_table == table.name)
        {
            if key.referenced_columns.contains(&position) {
                return Err(SqlError::new(
                    "2BP01",
                    format!(
                        "cannot drop column {} of table {} because other objects depend on it",
                        table.columns[position].name, table.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// DROP COLUMN's refusals: the clustering key, serial and identity columns (their
/// sequence would stay behind), and vector-indexed columns.
fn refuse_dropped_column(table: &TableMeta, position: usize) -> Result<()> {
    let column = &table.columns[position];
    let on_column = |index: &&IndexMeta| index.columns.contains(&position);
    let refused = if table.indexes.iter().filter(on_column).any(|index| index.primary) {
        Some("of a primary key column (the table's clustering key)")
    } else if table.indexes.iter().filter(on_column).any(|index| index.kind != IndexKind::Secondary)
    {
        Some("of a column with a vector index (drop the index first)")
    } else if column.identity.is_some()
        || column.default.as_deref().and_then(crate::catalog::sequence_of_default).is_some()
    {
        Some("of a serial or identity column")
    } else {
        None
    };
    match refused {
        Some(what) => Err(SqlError::unsupported(format!("ALTER TABLE ... DROP COLUMN {what}"))),
        None => Ok(()),
    }
}

/// Whether the stored CHECK expression `text` names column `column`.
fn expression_names(text: &str, column: &str) -> Result<bool> {
    let expr = crate::parse::parse_stored_expression(text)?;
    Ok(crate::parse::column_names(&expr).iter().any(|name| name == column))
}
