//! Plans of INSERT, UPDATE and DELETE.

use crate::plan::{BoundTable, Expr, OutputColumn, Plan};

#[derive(Debug)]
pub(crate) struct InsertPlan {
    pub table: BoundTable,
    pub targets: Vec<usize>,
    pub source: Plan,
    pub defaults: Vec<Option<Expr>>,
    pub on_conflict: Option<OnConflictPlan>,
    pub returning: Option<(Vec<Expr>, Vec<OutputColumn>)>,
    /// The source cannot read the target (it names only other tables; or CREATE TABLE AS,
    /// whose table is newer than its query), so its rows go to the target as the query
    /// makes them instead of being collected first.
    pub stream_source: bool,
}

/// INSERT ... ON CONFLICT: which unique constraints are arbiters, and what a conflict does.
#[derive(Debug)]
pub(crate) struct OnConflictPlan {
    pub arbiters: tierdb_engine::ConflictArbiters,
    /// The arbiter indexes' names, for EXPLAIN (empty for DO NOTHING without a target).
    pub arbiter_names: Vec<String>,
    pub action: ConflictAction,
}

#[derive(Debug)]
pub(crate) enum ConflictAction {
    Nothing,
    /// SET and WHERE over the existing row's columns followed by the proposed row's
    /// (EXCLUDED).
    Update {
        assignments: Vec<(usize, Expr)>,
        filter: Option<Expr>,
    },
}

#[derive(Debug)]
pub(crate) struct UpdatePlan {
    pub table: BoundTable,
    pub scan: Plan,
    pub assignments: Vec<(usize, Expr)>,
    pub filter: Option<Expr>,
    pub returning: Option<(Vec<Expr>, Vec<OutputColumn>)>,
}

#[derive(Debug)]
pub(crate) struct DeletePlan {
    pub table: BoundTable,
    pub scan: Plan,
    /// The WHERE clause, re-checked on a row a concurrent update changed (READ COMMITTED).
    pub filter: Option<Expr>,
    pub returning: Option<(Vec<Expr>, Vec<OutputColumn>)>,
}

/// An INSERT, UPDATE or DELETE: one in a WITH list, or the main statement under a WITH.
#[derive(Debug)]
pub(crate) enum ModifyingPlan {
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
}

impl ModifyingPlan {
    /// The table it writes.
    pub(crate) fn table(&self) -> &BoundTable {
        match self {
            ModifyingPlan::Insert(insert) => &insert.table,
            ModifyingPlan::Update(update) => &update.table,
            ModifyingPlan::Delete(delete) => &delete.table,
        }
    }

    pub(crate) fn returning(&self) -> Option<&(Vec<Expr>, Vec<OutputColumn>)> {
        match self {
            ModifyingPlan::Insert(insert) => insert.returning.as_ref(),
            ModifyingPlan::Update(update) => update.returning.as_ref(),
            ModifyingPlan::Delete(delete) => delete.returning.as_ref(),
        }
    }
}

/// A data-modifying statement of a WITH list: run to completion before the main statement,
/// its RETURNING rows kept as the working table `work_table` that the CTE's references
/// (`PlanKind::WorkTableScan` with `cte`) read.
#[derive(Debug)]
pub(crate) struct CteStatement {
    pub work_table: usize,
    pub statement: ModifyingPlan,
}
