//! INSERT ... ON CONFLICT execution: each proposed row is inserted speculatively
//! (`Transaction::insert_unless_conflict`); on a conflict DO NOTHING skips it, and DO UPDATE
//! updates the row that holds the value, through `update_by_key`, which waits for a
//! concurrent writer and hands over the latest committed version (PostgreSQL's READ
//! COMMITTED behaviour: the existing row need not be visible to the statement's snapshot).
//!
//! ```text
//!   proposed row --insert_unless_conflict--> Inserted ----------------------> stored
//!        ^                                   Conflict --DO NOTHING----------> skipped
//!        |                                            --DO UPDATE--> update_by_key
//!        |                                                   row gone or value moved: retry
//!        +---------------------------------------------------+
//!                                                            WHERE false: skipped
//!                                                            else:        stored (updated)
//! ```

use std::collections::HashSet;

use super::rows::{check_constraints, complete_row, detached_ctx, table_row};
use super::*;
use crate::catalog::IndexKind;
use crate::plan::{ConflictAction, OnConflictPlan};
use tierdb_engine::{InsertOutcome, Value};

/// Speculative insertions of one row before giving up with 40001: each retry needs a
/// concurrent transaction to have deleted or changed the conflicting row in between, so a
/// statement reaching this bound is starved, not slow.
const CONFLICT_RETRIES_MAX: usize = 1_000;

/// One INSERT ... ON CONFLICT statement's state.
pub(crate) struct Upsert<'plan> {
    plan: &'plan OnConflictPlan,
    /// Row keys this statement inserted or updated (DO UPDATE only): proposing a row for one
    /// of them again is PostgreSQL's 21000, since the outcome would depend on row order.
    touched: HashSet<Vec<u8>>,
}

/// What one DO UPDATE attempt did.
enum Attempt {
    /// The existing row `old` became `new`.
    Updated { old: Row, new: Row },
    /// The WHERE clause of DO UPDATE is false on the existing row.
    Skipped,
    /// The conflicting row was deleted, or no longer holds the value: insert again.
    Retry,
}

impl<'plan> Upsert<'plan> {
    pub(crate) fn new(plan: &'plan OnConflictPlan) -> Upsert<'plan> {
        Upsert { plan, touched: HashSet::new() }
    }

    /// Inserts or handles the conflict of one proposed row. Returns the row stored (inserted
    /// or updated), or None if the row was skipped.
    pub(crate) fn row(
        &mut self,
        table: &BoundTable,
        row: Vec<Option<Datum>>,
        defaults: &[Option<Expr>],
        events: &mut ReferentialEvents,
        ctx: &mut Ctx<'_>,
    ) -> Result<Option<Row>> {
        let (values, proposed) = complete_row(table, row, defaults, ctx)?;
        let updating = matches!(self.plan.action, ConflictAction::Update { .. });
        for _ in 0..CONFLICT_RETRIES_MAX {
            let transaction = ctx.txn.as_deref_mut().expect("insert runs in a transaction");
            let outcome = transaction.insert_unless_conflict(
                &table.handle,
                values.clone(),
                &self.plan.arbiters,
            )?;
            let (key, constraint) = match outcome {
                InsertOutcome::Inserted { key } => {
                    if updating {
                        self.touched.insert(key);
                    }
                    events.inserted(table, &proposed, ctx)?;
                    return Ok(Some(proposed));
                }
                InsertOutcome::Conflict { key, constraint } => (key, constraint),
            };
            let ConflictAction::Update { assignments, filter } = &self.plan.action else {
                return Ok(None);
            };
            if self.touched.contains(&key) {
                return Err(SqlError::new(
                    "21000",
                    "ON CONFLICT DO UPDATE command cannot affect row a second time",
                ));
            }
            let update =
                Update { table, constraint: &constraint, values: &values, proposed: &proposed };
            match update.attempt(&key, assignments, filter.as_ref(), ctx)? {
                Attempt::Updated { old, new } => {
                    self.touched.insert(key);
                    events.updated(table, &old, &new, ctx)?;
                    return Ok(Some(new));
                }
                Attempt::Skipped => return Ok(None),
                Attempt::Retry => {}
            }
        }
        Err(SqlError::new(
            "40001",
            "could not serialize access due to concurrent update (INSERT ... ON CONFLICT retried too often)",
        ))
    }
}

/// A DO UPDATE of the row holding a proposed row's value.
struct Update<'a> {
    table: &'a BoundTable,
    /// The arbiter the conflict was on (engine name: a unique index, or the primary key).
    constraint: &'a str,
    /// The proposed row, as engine values and as the EXCLUDED row.
    values: &'a [Value],
    proposed: &'a [Datum],
}

impl Update<'_> {
    fn attempt(
        &self,
        key: &[u8],
        assignments: &[(usize, Expr)],
        filter: Option<&Expr>,
        ctx: &mut Ctx<'_>,
    ) -> Result<Attempt> {
        let table = self.table;
        // The columns of a unique index the conflict was on: the latest version must still
        // hold the proposed values there (a primary key conflict names the row by its key).
        let conflict_columns = table
            .indexes
            .iter()
            .find(|index| index.kind == IndexKind::Secondary && index.name == self.constraint)
            .map(|index| index.columns.as_slice());
        let (params, session, time) = (ctx.params, ctx.session, ctx.statement_time_micros);
        let budget = ctx.budget.clone();
        let (mut seen, mut moved) = (false, false);
        let mut failure: Option<SqlError> = None;
        let mut updated: Option<(Row, Row)> = None;
        // A new row with another primary key: the engine updates rows in place under their
        // key, so it becomes a delete and an insert (as in UPDATE).
        let mut rekeyed: Option<Vec<Value>> = None;
        let key_columns: &[usize] = table.clustered_key().map_or(&[], |key| &key.columns);
        let mut change = |latest: &Vec<Value>| -> Option<Vec<Value>> {
            seen = true;
            if conflict_columns.is_some_and(|columns| {
                columns.iter().any(|&column| latest[column] != self.values[column])
            }) {
                moved = true;
                return None;
            }
            let mut detached = detached_ctx(params, session, time, &budget);
            match self.new_row(latest, assignments, filter, &mut detached) {
                Ok(Some((old, row, values))) => {
                    updated = Some((old, row));
                    if key_columns.iter().any(|&column| values[column] != latest[column]) {
                        rekeyed = Some(values);
                        return None;
                    }
                    Some(values)
                }
                Ok(None) => None,
                Err(error) => {
                    failure = Some(error);
                    None
                }
            }
        };
        let transaction = ctx.txn.as_deref_mut().expect("insert runs in a transaction");
        let mut changed = transaction.update_by_key(&table.handle, key, &mut change)?;
        if let Some(error) = failure {
            return Err(error);
        }
        if let Some(values) = rekeyed {
            transaction.delete_by_key(&table.handle, key)?;
            transaction.insert(&table.handle, values)?;
            changed = true;
        }
        if !seen || moved {
            return Ok(Attempt::Retry);
        }
        Ok(match updated {
            Some((old, new)) if changed => Attempt::Updated { old, new },
            _ => Attempt::Skipped,
        })
    }

    /// The existing row and the row after SET, if WHERE holds: expressions see the existing
    /// row's columns followed by EXCLUDED's.
    fn new_row(
        &self,
        latest: &[Value],
        assignments: &[(usize, Expr)],
        filter: Option<&Expr>,
        ctx: &mut Ctx<'_>,
    ) -> Result<Option<(Row, Row, Vec<Value>)>> {
        let table = self.table;
        let existing = table_row(table, latest);
        let mut both = existing.clone();
        both.extend(self.proposed.iter().cloned());
        if let Some(filter) = filter {
            if !matches!(eval(filter, &both, ctx)?, Datum::Bool(true)) {
                return Ok(None);
            }
        }
        let mut row = existing.clone();
        for (position, expr) in assignments {
            row[*position] = eval(expr, &both, ctx)?;
        }
        table.check_row_not_null(&row)?;
        check_constraints(table, &row, ctx)?;
        let values = row
            .iter()
            .zip(&table.columns)
            .map(|(datum, column)| datum.to_value(&column.ty))
            .collect::<Result<Vec<Value>>>()?;
        Ok(Some((existing, row, values)))
    }
}
