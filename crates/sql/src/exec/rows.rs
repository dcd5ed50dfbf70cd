//! Rows on their way between SQL and the engine, shared by INSERT, UPDATE, DELETE and
//! INSERT ... ON CONFLICT: completing a proposed row, engine values as a row, and the READ
//! COMMITTED re-evaluation of a row's latest version outside the statement's transaction.

use super::*;
use crate::catalog::TableMeta;
use crate::system::SessionInfo;
use tierdb_engine::Value;

/// A row to insert completed: defaults for the columns not given, NOT NULL checked. Returns
/// the engine's values and the row.
pub(crate) fn complete_row(
    table: &BoundTable,
    mut row: Vec<Option<Datum>>,
    defaults: &[Option<Expr>],
    ctx: &mut Ctx<'_>,
) -> Result<(Vec<Value>, Row)> {
    // Every default first, then the checks: as in PostgreSQL, a row refused for a NULL still
    // used its sequence values.
    let mut datums = Vec::with_capacity(table.columns.len());
    for index in 0..table.columns.len() {
        datums.push(match row[index].take() {
            Some(datum) => datum,
            None => match &defaults[index] {
                Some(default) => super::eval(default, &[], ctx)?,
                None => Datum::Null,
            },
        });
    }
    let mut values = Vec::with_capacity(table.columns.len());
    for (index, (column, datum)) in table.columns.iter().zip(&datums).enumerate() {
        table.check_not_null(index, datum.is_null(), false)?;
        values.push(datum.to_value(&column.ty)?);
    }
    check_constraints(table, &datums, ctx)?;
    Ok((values, datums))
}

/// The table's CHECK constraints on a row being written, in name order: 23514 for the
/// first one the row makes false (NULL passes, as in PostgreSQL).
pub(crate) fn check_constraints(
    table: &BoundTable,
    row: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<()> {
    for check in table.checks.iter() {
        if let Datum::Bool(false) = super::eval(&check.expr, row, ctx)? {
            return Err(SqlError::new(
                "23514",
                format!(
                    "new row for relation \"{}\" violates check constraint \"{}\"",
                    table.name, check.name
                ),
            ));
        }
    }
    Ok(())
}

/// A context for expressions over one row outside the statement's transaction (rechecks of
/// a row a concurrent update changed), with the statement's memory budget.
pub(crate) fn detached_ctx<'a>(
    params: &'a [Datum],
    session: &'a SessionInfo<'a>,
    time: i64,
    budget: &MemoryBudget,
) -> Ctx<'a> {
    Ctx {
        txn: None,
        params,
        outer: Vec::new(),
        subquery_cache: HashMap::new(),
        stats: Vec::new(),
        analyze: false,
        budget: budget.clone(),
        session,
        statement_time_micros: time,
        interrupt: None,
        work_tables: Default::default(),
    }
}

/// A row of `table` from engine values.
pub(crate) fn table_row(table: &TableMeta, values: &[Value]) -> Row {
    values
        .iter()
        .zip(&table.columns)
        .map(|(value, column)| Datum::from_value(value, &column.ty))
        .collect()
}

/// Whether the latest version of a row (`joined_row`) still passes the statement's WHERE
/// clause (READ COMMITTED, after a concurrent update committed: PostgreSQL's EvalPlanQual).
pub(crate) fn recheck_filter(filter: &Expr, current: &[Datum], ctx: &mut Ctx<'_>) -> Result<bool> {
    Ok(matches!(super::eval(filter, current, ctx)?, Datum::Bool(true)))
}

/// The latest version of a target row followed by `joined`: what followed the target's
/// columns in the row the statement read (its row key's place, the FROM or USING items'
/// columns), kept as they were, as PostgreSQL keeps the other tables' rows.
pub(crate) fn joined_row(table: &TableMeta, latest: &[Value], joined: &[Datum]) -> Row {
    let mut row = table_row(table, latest);
    row.extend(joined.iter().cloned());
    row
}

pub(crate) fn apply_assignments(
    table: &BoundTable,
    assignments: &[(usize, Expr)],
    row: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Row> {
    // `row` may go on past the table's columns (a row key, FROM items' columns).
    let mut new_row = row[..table.columns.len()].to_vec();
    for (position, expr) in assignments {
        new_row[*position] = super::eval(expr, row, ctx)?;
    }
    table.check_row_not_null(&new_row)?;
    check_constraints(table, &new_row, ctx)?;
    Ok(new_row)
}
