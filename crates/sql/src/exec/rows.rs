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
        deferred_events: None,
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

/// Session settings for evaluating expressions outside any session (the planner's
/// estimates): none are set, none may be.
struct NoSettings;

impl crate::system::SessionSettings for NoSettings {
    fn current(&self, _name: &str) -> Option<String> {
        None
    }

    fn check(&self, name: &str, _value: &str) -> Result<String> {
        Err(SqlError::unsupported(format!("setting \"{name}\" while planning")))
    }

    fn reset_value(&self, name: &str) -> Result<String> {
        Err(SqlError::unsupported(format!("setting \"{name}\" while planning")))
    }

    fn rows(&self) -> Vec<crate::system::SettingRow> {
        Vec::new()
    }
}

/// Runs `body` with a context for row-independent, non-volatile expressions outside any
/// session and transaction: the planner evaluates predicates on statistics' values with it
/// (no subquery, parameter or setting is read there; a function that needs one fails, and
/// the estimate falls back to a default).
pub(crate) fn with_planning_ctx<T>(
    catalog: &crate::catalog::Catalog,
    body: impl FnOnce(&mut Ctx<'_>) -> T,
) -> T {
    let sequence_values = std::cell::RefCell::new(crate::system::SequenceValues::default());
    let info = SessionInfo {
        database: "",
        user: "",
        backend_pid: 0,
        session_id: 0,
        catalog,
        vector_scan: tierdb_engine::NearestOptions::from(
            tierdb_vector::hnsw::ScanOptions::unbounded(tierdb_vector::hnsw::EF_SEARCH_DEFAULT),
        ),
        hidden_tables: Vec::new(),
        public_on_path: true,
        referential_checks_off: false,
        settings: &NoSettings,
        setting_changes: std::cell::RefCell::default(),
        sequence_values: &sequence_values,
        sequence_refs: std::cell::RefCell::default(),
    };
    let budget = MemoryBudget::for_session(
        1 << 20,
        1.0,
        std::sync::Arc::new(tierdb_storage::TempUsage::default()),
    );
    let mut ctx = detached_ctx(&[], &info, 0, &budget);
    body(&mut ctx)
}

/// The executor's side of the planner's estimates (`optimize::Evaluate`): predicates of one
/// column evaluated on statistics' values, outside any session.
pub struct PlanningEvaluator<'a> {
    pub catalog: &'a crate::catalog::Catalog,
}

impl crate::optimize::Evaluate for PlanningEvaluator<'_> {
    fn accepted(
        &self,
        clauses: &[&crate::plan::Expr],
        column: usize,
        width: usize,
        values: &[&Datum],
    ) -> Option<Vec<bool>> {
        with_planning_ctx(self.catalog, |ctx| {
            let mut row = vec![Datum::Null; width];
            values
                .iter()
                .map(|value| {
                    row[column] = (*value).clone();
                    clauses.iter().try_fold(true, |all, clause| {
                        let result = super::eval(clause, &row, ctx).ok()?;
                        Some(all && result.as_bool().unwrap_or(false))
                    })
                })
                .collect()
        })
    }
}
