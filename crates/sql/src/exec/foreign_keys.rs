//! FOREIGN KEY checks and actions of one INSERT, UPDATE, DELETE or COPY, run when its rows
//! are written, as PostgreSQL's referential-integrity triggers are (AFTER ROW triggers fired
//! at the end of the statement, so a statement may insert a child row before its parent,
//! or move a key that another row takes over):
//!
//! | event (queued per row written) | at the end of the statement |
//! |---|---|
//! | a row with a key of its table's FOREIGN KEY inserted, or the key updated | `SELECT 1 FROM parent x WHERE key FOR SHARE OF x`; none: 23503 |
//! | a referenced row deleted | ON DELETE: NO ACTION (skipped if a row with the key is still there) and RESTRICT: `SELECT 1 FROM child x WHERE key FOR SHARE OF x`, one: 23503; CASCADE: `DELETE FROM child WHERE key`; SET NULL / SET DEFAULT: `UPDATE child SET key = NULL / DEFAULT WHERE key` |
//! | a referenced row's key updated | ON UPDATE: as ON DELETE, but CASCADE is `UPDATE child SET key = new WHERE key = old` |
//!
//! Each query is bound once per statement and run with the key as parameters, in the
//! statement's transaction. A cascaded DELETE or UPDATE queues and runs its own events (a
//! chain of cascades recurses, bounded by the stack check: 54001). Under READ COMMITTED the
//! queries take a fresh snapshot first, as PostgreSQL's do, so that a referencing row
//! committed by a transaction this one waited for (its SHARE lock on the referenced
//! row; FOR KEY SHARE is read as FOR SHARE, parse/lock_strengths.rs) is seen. The events are kept in a row store, which spills to the temp space past
//! work_mem: a bulk load's checks cost no unbounded memory.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::spill::RowStore;
use super::*;
use crate::bind::{bind_delete, bind_update, Binder, Namespace};
use crate::catalog::{ForeignKeyMeta, ReferentialAction, TableMeta};
use crate::plan::deparse::quote_identifier;
use crate::plan::{DeletePlan, UpdatePlan};
use sqlparser::ast;

/// What a queued event is: the first value of its row in the store, the second the index of
/// the FOREIGN KEY (in `meta.foreign_keys` or `referenced_by`), then the key values.
const EVENT_INSERTED_KEY: i64 = 0;
const EVENT_DELETED_KEY: i64 = 1;
const EVENT_UPDATED_KEY: i64 = 2;

/// The events of one statement on one table.
#[derive(Default)]
pub(crate) struct ReferentialEvents {
    store: Option<RowStore>,
}

/// An internal statement of a check or action, bound once per statement.
enum Internal {
    Query(Plan),
    Update(UpdatePlan),
    Delete(DeletePlan),
}

/// The internal statements bound for one statement's events: the event's kind and
/// constraint index, and which of its queries.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    /// The referencing check, or the action of ON DELETE / ON UPDATE.
    Main,
    /// NO ACTION's look for a row still holding the old key.
    StillPresent,
    /// SET DEFAULT's look for rows still referencing the old key.
    StillReferenced,
}

type BoundStatements = HashMap<(i64, usize, Slot), Internal>;

impl ReferentialEvents {
    fn push(&mut self, kind: i64, index: usize, key: Vec<Datum>, ctx: &Ctx<'_>) -> Result<()> {
        if ctx.session.referential_checks_off {
            // Nothing will run (TRUNCATE in a block): queue nothing either.
            return Ok(());
        }
        let mut row = Vec::with_capacity(key.len() + 2);
        row.push(Datum::Int(kind));
        row.push(Datum::Int(i64::try_from(index).expect("a constraint index fits i64")));
        row.extend(key);
        self.store.get_or_insert_with(|| RowStore::new(ctx)).push(row)
    }

    /// A row inserted into `table`: each FOREIGN KEY of the table is checked.
    pub(crate) fn inserted(
        &mut self,
        table: &BoundTable,
        row: &[Datum],
        ctx: &Ctx<'_>,
    ) -> Result<()> {
        for (index, key) in table.foreign_keys.iter().enumerate() {
            if let Some(values) = checked_key(table, key, row)? {
                self.push(EVENT_INSERTED_KEY, index, values, ctx)?;
            }
        }
        Ok(())
    }

    /// A row of `table` updated from `old` to `new`: a changed FOREIGN KEY is checked, and
    /// a changed referenced key acts on the referencing rows.
    pub(crate) fn updated(
        &mut self,
        table: &BoundTable,
        old: &[Datum],
        new: &[Datum],
        ctx: &Ctx<'_>,
    ) -> Result<()> {
        for (index, key) in table.foreign_keys.iter().enumerate() {
            if project(old, &key.columns) == project(new, &key.columns) {
                continue;
            }
            if let Some(values) = checked_key(table, key, new)? {
                self.push(EVENT_INSERTED_KEY, index, values, ctx)?;
            }
        }
        for (index, (_, key)) in table.referenced_by.iter().enumerate() {
            let (before, after) =
                (project(old, &key.referenced_columns), project(new, &key.referenced_columns));
            if before == after || before.iter().any(Datum::is_null) {
                continue;
            }
            let mut values = before;
            values.extend(after);
            self.push(EVENT_UPDATED_KEY, index, values, ctx)?;
        }
        Ok(())
    }

    /// A row of `table` deleted: the rows referencing its key are acted on.
    pub(crate) fn deleted(
        &mut self,
        table: &BoundTable,
        old: &[Datum],
        ctx: &Ctx<'_>,
    ) -> Result<()> {
        for (index, (_, key)) in table.referenced_by.iter().enumerate() {
            let values = project(old, &key.referenced_columns);
            if !values.iter().any(Datum::is_null) {
                self.push(EVENT_DELETED_KEY, index, values, ctx)?;
            }
        }
        Ok(())
    }

    /// Runs the queued checks and actions, in the order of the rows.
    /// Deferred instead while the parts of a statement with data-modifying statements in
    /// WITH run (`Ctx::deferred_events`).
    pub(crate) fn finish(self, table: &BoundTable, ctx: &mut Ctx<'_>) -> Result<()> {
        if self.store.is_none() {
            return Ok(());
        }
        if let Some(deferred) = ctx.deferred_events.as_mut() {
            deferred.push((table.clone(), self));
            return Ok(());
        }
        let Some(store) = self.store else { return Ok(()) };
        crate::depth::check_stack_depth()?;
        ctx.txn()?.refresh_snapshot();
        let mut rows = store.into_rows()?;
        let mut bound = BoundStatements::new();
        while let Some(event) = rows.next_row()? {
            ctx.check_cancel()?;
            let (kind, index) = match (&event[0], &event[1]) {
                (Datum::Int(kind), Datum::Int(index)) => {
                    (*kind, usize::try_from(*index).expect("queued as a count"))
                }
                _ => return Err(SqlError::internal("malformed referential event")),
            };
            let key = &event[2..];
            match kind {
                EVENT_INSERTED_KEY => check_referenced(table, index, key, &mut bound, ctx)?,
                _ => act_on_referencing(table, kind, index, key, &mut bound, ctx)?,
            }
        }
        Ok(())
    }
}

/// The values of `row` at `columns`.
fn project(row: &[Datum], columns: &[usize]) -> Vec<Datum> {
    columns.iter().map(|&column| row[column].clone()).collect()
}

/// The key `row` holds for `key` if it must be checked: none when a value is NULL (MATCH
/// SIMPLE) or all are (MATCH FULL, where some but not all NULL is 23503 at once).
fn checked_key(
    table: &TableMeta,
    key: &ForeignKeyMeta,
    row: &[Datum],
) -> Result<Option<Vec<Datum>>> {
    let values = project(row, &key.columns);
    let nulls = values.iter().filter(|value| value.is_null()).count();
    if nulls == 0 {
        return Ok(Some(values));
    }
    if key.match_full && nulls < values.len() {
        return Err(crate::catalog::foreign_key_violation(&table.name, &key.name));
    }
    Ok(None)
}

/// An inserted or updated key of the table's FOREIGN KEY `index` must be a key of a row
/// of the referenced table (locked FOR SHARE until the transaction ends).
fn check_referenced(
    table: &BoundTable,
    index: usize,
    key: &[Datum],
    bound: &mut BoundStatements,
    ctx: &mut Ctx<'_>,
) -> Result<()> {
    let foreign_key = &table.foreign_keys[index];
    let referenced = &table.references[index];
    let make = || {
        let sql = select_key(referenced, &foreign_key.referenced_columns);
        (sql, column_types(table, &foreign_key.columns))
    };
    if !run_once_bound(bound, (EVENT_INSERTED_KEY, index, Slot::Main), make, key, ctx)? {
        return Err(crate::catalog::foreign_key_violation(&table.name, &foreign_key.name));
    }
    Ok(())
}

/// A deleted or updated key of this table that `referenced_by[index]` references: the
/// constraint's action on the referencing rows.
fn act_on_referencing(
    table: &BoundTable,
    kind: i64,
    index: usize,
    key: &[Datum],
    bound: &mut BoundStatements,
    ctx: &mut Ctx<'_>,
) -> Result<()> {
    let (referencing, foreign_key) = &table.referenced_by[index];
    let action =
        if kind == EVENT_DELETED_KEY { foreign_key.on_delete } else { foreign_key.on_update };
    let old = &key[..foreign_key.columns.len()];
    if action == ReferentialAction::NoAction {
        // The key may be back (another row of the statement took it): nothing references
        // a missing key then.
        let make = || {
            let sql = select_key(table, &foreign_key.referenced_columns);
            (sql, column_types(table, &foreign_key.referenced_columns))
        };
        if run_once_bound(bound, (kind, index, Slot::StillPresent), make, old, ctx)? {
            return Ok(());
        }
    }
    let make = || {
        let sql = action_sql(referencing, foreign_key, action, kind == EVENT_UPDATED_KEY);
        let mut types = column_types(table, &foreign_key.referenced_columns);
        if action == ReferentialAction::Cascade && kind == EVENT_UPDATED_KEY {
            types.extend(types.clone());
        }
        (sql, types)
    };
    let params = match action {
        ReferentialAction::Cascade if kind == EVENT_UPDATED_KEY => key,
        _ => old,
    };
    let mut found = run_once_bound(bound, (kind, index, Slot::Main), make, params, ctx)?;
    if action == ReferentialAction::SetDefault {
        // A default equal to the old key leaves the rows referencing it unchanged (so their
        // own check does not run): as PostgreSQL, look for them as NO ACTION would.
        let make = || {
            let sql = select_key(referencing, &foreign_key.columns);
            (sql, column_types(table, &foreign_key.referenced_columns))
        };
        found = run_once_bound(bound, (kind, index, Slot::StillReferenced), make, old, ctx)?;
    }
    let refused = matches!(
        action,
        ReferentialAction::NoAction | ReferentialAction::Restrict | ReferentialAction::SetDefault
    );
    if found && refused {
        return Err(SqlError::new(
            "23503",
            format!(
                "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
                table.name, foreign_key.name, referencing.name
            ),
        ));
    }
    Ok(())
}

fn column_types(table: &TableMeta, columns: &[usize]) -> Vec<SqlType> {
    columns.iter().map(|&column| table.columns[column].ty.clone()).collect()
}

/// `x.a = $1 AND x.b = $2` over `columns` of `table`, parameters from `first`.
fn key_condition(table: &TableMeta, columns: &[usize], qualifier: &str, first: usize) -> String {
    let terms: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(number, &column)| {
            let name = quote_identifier(&table.columns[column].name);
            format!("{qualifier}{name} = ${}", first + number)
        })
        .collect();
    terms.join(" AND ")
}

/// The rows of `table` holding the key `$1...` in `columns`, locked FOR SHARE (PostgreSQL's
/// FOR KEY SHARE, which tierdb takes as the stronger shared lock).
fn select_key(table: &TableMeta, columns: &[usize]) -> String {
    format!(
        "SELECT 1 FROM {} x WHERE {} FOR SHARE OF x",
        crate::catalog::qualified_sql_name(&table.name),
        key_condition(table, columns, "x.", 1)
    )
}

/// The statement of `action` on `referencing`'s rows that hold the old key (`$1...`; the new
/// key follows for an ON UPDATE CASCADE).
fn action_sql(
    referencing: &TableMeta,
    key: &ForeignKeyMeta,
    action: ReferentialAction,
    update: bool,
) -> String {
    let table = crate::catalog::qualified_sql_name(&referencing.name);
    let condition = key_condition(referencing, &key.columns, "", 1);
    let set = |value: &dyn Fn(usize) -> String| -> String {
        let terms: Vec<String> = key
            .columns
            .iter()
            .enumerate()
            .map(|(number, &column)| {
                format!(
                    "{} = {}",
                    quote_identifier(&referencing.columns[column].name),
                    value(number)
                )
            })
            .collect();
        terms.join(", ")
    };
    match action {
        ReferentialAction::NoAction | ReferentialAction::Restrict => {
            select_key(referencing, &key.columns)
        }
        ReferentialAction::Cascade if update => {
            let width = key.columns.len();
            let assignments = set(&|number| format!("${}", width + number + 1));
            format!("UPDATE {table} SET {assignments} WHERE {condition}")
        }
        ReferentialAction::Cascade => format!("DELETE FROM {table} WHERE {condition}"),
        ReferentialAction::SetNull => {
            format!("UPDATE {table} SET {} WHERE {condition}", set(&|_| "NULL".to_string()))
        }
        ReferentialAction::SetDefault => {
            format!("UPDATE {table} SET {} WHERE {condition}", set(&|_| "DEFAULT".to_string()))
        }
    }
}

/// Runs the internal statement of `slot`, bound by the first call from `make`'s text and
/// parameter types.
fn run_once_bound(
    bound: &mut BoundStatements,
    slot: (i64, usize, Slot),
    make: impl FnOnce() -> (String, Vec<SqlType>),
    params: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<bool> {
    let internal = match bound.entry(slot) {
        Entry::Occupied(entry) => entry.into_mut(),
        Entry::Vacant(entry) => {
            let (sql, types) = make();
            entry.insert(bind_internal(&sql, types, ctx)?)
        }
    };
    run_internal(internal, params, ctx)
}

/// Binds an internal statement with parameters of `types`.
fn bind_internal(sql: &str, types: Vec<SqlType>, ctx: &Ctx<'_>) -> Result<Internal> {
    let statement = crate::parse::parse_internal_statement(sql)?;
    let session = ctx.session.session_id;
    let namespace = Namespace {
        temp_schema: crate::catalog::temp_schema(session),
        temp_tables: ctx
            .session
            .catalog
            .temp_tables(session)
            .iter()
            .map(|name| crate::catalog::relation_name(name).to_string())
            .collect(),
        ..Namespace::new(ctx.session.database, "public")
    };
    let mut binder = Binder::new(ctx.session.catalog, namespace, types);
    Ok(match &statement {
        ast::Statement::Query(query) => Internal::Query(binder.query(query)?),
        ast::Statement::Update(update) => Internal::Update(bind_update(&mut binder, update)?),
        ast::Statement::Delete(delete) => Internal::Delete(bind_delete(&mut binder, delete)?),
        _ => return Err(SqlError::internal(format!("internal statement {sql}"))),
    })
}

/// Runs an internal statement with `params` in the statement's transaction: whether a query
/// found a row (a DELETE or UPDATE: whether it changed one).
fn run_internal(internal: &Internal, params: &[Datum], ctx: &mut Ctx<'_>) -> Result<bool> {
    let mut nested = Ctx {
        txn: ctx.txn.as_deref_mut(),
        params,
        outer: Vec::new(),
        subquery_cache: HashMap::new(),
        stats: Vec::new(),
        analyze: false,
        budget: ctx.budget.clone(),
        session: ctx.session,
        statement_time_micros: ctx.statement_time_micros,
        interrupt: ctx.interrupt,
        work_tables: Default::default(),
        deferred_events: None,
    };
    let changed = |output: crate::output::Output| match output {
        crate::output::Output::Command { rows, .. } => rows > 0,
        _ => true,
    };
    Ok(match internal {
        Internal::Query(plan) => !super::collect(plan, &mut nested, &[])?.is_empty(),
        Internal::Update(update) => changed(run_update(update, &mut nested)?),
        Internal::Delete(delete) => changed(run_delete(delete, &mut nested)?),
    })
}
