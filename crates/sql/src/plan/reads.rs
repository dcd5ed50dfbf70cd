//! The tables a bound statement reads: every table any scan, row lock or index lookup of
//! its plan touches, in its inputs and in the subqueries of every expression (views and
//! CTEs are already expanded to the scans they run). Used to refuse the statements with
//! data-modifying statements in WITH whose parts would see each other's writes
//! (`bind/modifying_with.rs`), so it must never miss a read: every node kind and every
//! expression place is matched without a catch-all arm. It also notes the calls of
//! sequence functions, whose values depend on the order the parts run in.

use std::collections::HashSet;
use std::ops::Bound;

use super::dml::{ConflictAction, DeletePlan, InsertPlan, ModifyingPlan, UpdatePlan};
use super::window::{FrameBound, WindowFunction};
use super::{Access, AggregateCall, Expr, Plan, PlanKind};

/// What a statement reads.
#[derive(Default)]
pub(crate) struct Reads {
    /// The tables' catalog names.
    pub tables: HashSet<String>,
    /// Whether it calls nextval, setval, currval or lastval (a serial column's default
    /// too): its values depend on the order the statements using sequences run in.
    pub sequences: bool,
}

/// Functions whose results depend on the order of the statements that call them.
const SEQUENCE_FUNCTIONS: [&str; 4] = ["nextval", "setval", "currval", "lastval"];

/// What `plan` reads, into `reads`.
pub(crate) fn plan_reads(plan: &Plan, reads: &mut Reads) {
    let mut exprs: Vec<&Expr> = Vec::new();
    node_reads(&plan.kind, reads, &mut exprs);
    for expr in exprs {
        expr_reads(expr, reads);
    }
    for input in plan.inputs() {
        plan_reads(input, reads);
    }
}

/// The tables an INSERT, UPDATE or DELETE reads.
pub(crate) fn modifying_reads(statement: &ModifyingPlan) -> Reads {
    let mut reads = Reads::default();
    match statement {
        ModifyingPlan::Insert(insert) => insert_reads(insert, &mut reads),
        ModifyingPlan::Update(update) => update_reads(update, &mut reads),
        ModifyingPlan::Delete(delete) => delete_reads(delete, &mut reads),
    }
    reads
}

/// The tables an INSERT reads: its source's, its expressions', and its target when ON
/// CONFLICT looks for the rows its new rows conflict with.
fn insert_reads(insert: &InsertPlan, reads: &mut Reads) {
    plan_reads(&insert.source, reads);
    // The defaults of the columns the INSERT does not name (the others are never run).
    for (column, default) in insert.defaults.iter().enumerate() {
        if let (false, Some(default)) = (insert.targets.contains(&column), default) {
            expr_reads(default, reads);
        }
    }
    if let Some(on_conflict) = &insert.on_conflict {
        reads.tables.insert(insert.table.name.clone());
        if let ConflictAction::Update { assignments, filter } = &on_conflict.action {
            for (_, expr) in assignments {
                expr_reads(expr, reads);
            }
            filter.iter().for_each(|filter| expr_reads(filter, reads));
        }
    }
    returning_reads(&insert.returning, reads);
}

/// The tables an UPDATE reads (its target among them: its scan).
fn update_reads(update: &UpdatePlan, reads: &mut Reads) {
    plan_reads(&update.scan, reads);
    for (_, expr) in &update.assignments {
        expr_reads(expr, reads);
    }
    update.filter.iter().for_each(|filter| expr_reads(filter, reads));
    returning_reads(&update.returning, reads);
}

/// The tables a DELETE reads (its target among them: its scan).
fn delete_reads(delete: &DeletePlan, reads: &mut Reads) {
    plan_reads(&delete.scan, reads);
    delete.filter.iter().for_each(|filter| expr_reads(filter, reads));
    returning_reads(&delete.returning, reads);
}

fn returning_reads(returning: &Option<(Vec<Expr>, Vec<super::OutputColumn>)>, reads: &mut Reads) {
    for expr in returning.iter().flat_map(|(exprs, _)| exprs) {
        expr_reads(expr, reads);
    }
}

/// The tables of one node (not its inputs) into `reads`, its expressions into `exprs`.
fn node_reads<'p>(kind: &'p PlanKind, reads: &mut Reads, exprs: &mut Vec<&'p Expr>) {
    match kind {
        PlanKind::OneRow
        | PlanKind::SystemView { .. }
        | PlanKind::Ordinality { .. }
        | PlanKind::Sort { .. }
        | PlanKind::Distinct { .. }
        | PlanKind::Union { .. }
        | PlanKind::SetDifference { .. }
        | PlanKind::RecursiveUnion { .. }
        | PlanKind::WorkTableScan { .. } => {}
        PlanKind::Values { rows } => exprs.extend(rows.iter().flatten()),
        PlanKind::Scan { table, access, filter, .. } => {
            reads.tables.insert(table.name.clone());
            access_exprs(access, exprs);
            exprs.extend(filter);
        }
        PlanKind::Series { start, stop, step } => {
            exprs.extend([start, stop]);
            exprs.extend(step);
        }
        PlanKind::ProjectSet { calls, .. } => exprs.extend(calls.iter().flat_map(|c| &c.args)),
        PlanKind::Filter { predicate, .. } => exprs.push(predicate),
        PlanKind::LockRows { table, recheck, .. } => {
            reads.tables.insert(table.name.clone());
            exprs.extend(recheck);
        }
        PlanKind::Project { exprs: list, .. } => exprs.extend(list),
        PlanKind::NestedLoopJoin { on, .. } | PlanKind::LateralJoin { on, .. } => exprs.extend(on),
        PlanKind::HashJoin { left_keys, right_keys, residual, .. } => {
            exprs.extend(left_keys.iter().chain(right_keys));
            exprs.extend(residual);
        }
        PlanKind::IndexJoin { residual, .. } => exprs.extend(residual),
        PlanKind::Aggregate { groups, aggregates, .. } => {
            exprs.extend(groups);
            aggregates.iter().for_each(|call| aggregate_exprs(call, exprs));
        }
        PlanKind::Expand { keys, .. } => exprs.extend(keys),
        PlanKind::Window { calls, spec, .. } => {
            for bound in [&spec.frame.start, &spec.frame.end] {
                if let FrameBound::Preceding(offset) | FrameBound::Following(offset) = bound {
                    exprs.push(offset);
                }
            }
            for call in calls {
                exprs.extend(&call.args);
                if let WindowFunction::Aggregate(aggregate) = &call.function {
                    aggregate_exprs(aggregate, exprs);
                }
            }
        }
        PlanKind::Limit { limit, offset, .. } => {
            exprs.extend(limit);
            exprs.extend(offset);
        }
    }
}

fn aggregate_exprs<'p>(call: &'p AggregateCall, exprs: &mut Vec<&'p Expr>) {
    exprs.extend(&call.args);
    exprs.extend(call.order.iter().map(|order| &order.expr));
    exprs.extend(&call.filter);
}

fn access_exprs<'p>(access: &'p Access, exprs: &mut Vec<&'p Expr>) {
    let bound = |bound: &'p Bound<Vec<Expr>>| match bound {
        Bound::Included(values) | Bound::Excluded(values) => values.as_slice(),
        Bound::Unbounded => &[],
    };
    match access {
        Access::Full => {}
        Access::Primary { lower, upper } | Access::Index { lower, upper, .. } => {
            exprs.extend(bound(lower).iter().chain(bound(upper)));
        }
        Access::Keys { keys, array, .. } => {
            exprs.extend(keys.iter().flatten());
            exprs.extend(array.as_deref());
        }
        Access::Nearest { query, .. } => exprs.push(query),
    }
}

/// What the subqueries and function calls of `expr` (at any depth) read.
fn expr_reads(expr: &Expr, reads: &mut Reads) {
    match expr {
        Expr::Function(call) if SEQUENCE_FUNCTIONS.contains(&call.function.names[0]) => {
            reads.sequences = true;
        }
        Expr::InSubquery { plan, subquery_exprs, .. } => {
            plan_reads(plan, reads);
            subquery_exprs.iter().for_each(|expr| expr_reads(expr, reads));
        }
        Expr::Exists { plan, .. }
        | Expr::ScalarSubquery { plan, .. }
        | Expr::ArraySubquery { plan, .. } => plan_reads(plan, reads),
        _ => {}
    }
    for child in expr.children() {
        expr_reads(child, reads);
    }
}
