//! Column pruning: each scan decodes and returns only the columns read above it.
//!
//! A row is decoded into one value per column, and a text column costs an allocation and a
//! copy. A join, an aggregate or a DISTINCT typically reads two or three columns of a wide
//! row, and would carry the whole row through its hash table, its sort or its temporary
//! files (a hash join of two 5-column tables on one integer held 187 bytes a row). This pass
//! walks the plan from the top, with the set of output columns each node's parent reads,
//! narrows each scan to the columns that reach a reader (`PlanKind::Scan::projection`), and
//! renumbers the column references above it.
//!
//! `prune` returns, for the node it pruned, where each of its old output positions went
//! (`Mapping`, order-preserving); the parent renumbers its own expressions over that input
//! and derives its own mapping. Nodes that compute their output (Project, Aggregate) keep
//! their width, so renumbering stops there.
//!
//! What a node reads of its input, given the set `needed` of its own outputs read above:
//!
//! | node                          | reads of its input(s)                                     |
//! |-------------------------------|-----------------------------------------------------------|
//! | Filter                        | `needed` and the predicate's columns                      |
//! | Project                       | the columns of every expression (all are evaluated)       |
//! | Sort                          | `needed` and the sort keys                                |
//! | Limit                         | `needed`                                                  |
//! | Aggregate                     | the columns of the groups and of every aggregate argument |
//! | Expand                        | `needed` among the input's columns, and the keys' columns |
//! | NestedLoopJoin, HashJoin      | `needed`, the keys and the condition, split by side        |
//! | Scan                          | decodes `needed` and its filter's columns, returns `needed` |
//! | IndexJoin, LockRows, Distinct, Window, Union, SetDifference | everything                 |
//!
//! Everything is read wherever the answer depends on whole rows (DISTINCT and set
//! operations compare every column), where a row is a probe for an inner plan (index joins
//! evaluate the inner scan's bounds on the outer row by position), where rows are written
//! back (a scan that emits keys feeds UPDATE, DELETE or a row lock, which need every
//! column), and where an expression holds a subquery (a correlated subquery reads the
//! current row by position through `Expr::Outer`, which `Expr::columns` does not see).

use crate::plan::{Expr, Plan, PlanKind, ScanProjection};

/// A set of column positions of one plan's output.
#[derive(Clone, Debug)]
struct Needed {
    columns: Vec<bool>,
}

impl Needed {
    fn all(width: usize) -> Needed {
        Needed { columns: vec![true; width] }
    }

    fn none(width: usize) -> Needed {
        Needed { columns: vec![false; width] }
    }

    /// Adds the columns `expr` reads; everything when it holds a subquery.
    fn add_expr(&mut self, expr: &Expr) {
        if has_subquery(expr) {
            self.columns.fill(true);
            return;
        }
        let mut columns = Vec::new();
        expr.columns(&mut columns);
        for column in columns {
            // A column past the width belongs to a probe row (index joins): not ours.
            if let Some(needed) = self.columns.get_mut(column) {
                *needed = true;
            }
        }
    }

    fn add_exprs<'e>(&mut self, exprs: impl IntoIterator<Item = &'e Expr>) {
        for expr in exprs {
            self.add_expr(expr);
        }
    }

    /// The part of a join's output set that falls on the left side (`0..left_width`) or
    /// the right side (`left_width..`), as positions of that side.
    fn split(&self, left_width: usize) -> (Needed, Needed) {
        let (left, right) = self.columns.split_at(left_width.min(self.columns.len()));
        (Needed { columns: left.to_vec() }, Needed { columns: right.to_vec() })
    }
}

/// Whether `expr` contains a subquery anywhere (`Expr::columns` does not look inside one).
fn has_subquery(expr: &Expr) -> bool {
    let mut found = false;
    visit(expr, &mut |expr| {
        found |= matches!(
            expr,
            Expr::InSubquery { .. }
                | Expr::Exists { .. }
                | Expr::ScalarSubquery { .. }
                | Expr::ArraySubquery { .. }
        );
    });
    found
}

fn visit(expr: &Expr, on: &mut dyn FnMut(&Expr)) {
    on(expr);
    for child in expr.children() {
        visit(child, on);
    }
}

/// Where each old output position of a pruned plan went (None: dropped).
type Mapping = Vec<Option<usize>>;

fn identity(width: usize) -> Mapping {
    (0..width).map(Some).collect()
}

/// Renumbers the column references of `expr` over an input pruned as `mapping`.
fn renumber(expr: &mut Expr, mapping: &Mapping) {
    expr.map_columns(&mut |column| {
        mapping[column].expect("a column read above a scan is kept by the scan")
    });
}

/// Narrows every scan of `plan` to the columns its ancestors read, renumbering the plan's
/// expressions; all of `plan`'s own output is read (it is a query's result), so its width
/// and columns do not change.
pub fn prune_columns(plan: &mut Plan) {
    let width = plan.arity();
    let mapping = prune(plan, Needed::all(width));
    debug_assert_eq!(mapping, identity(width), "a query's own columns are all kept");
}

/// Prunes `plan` to `needed` (some of its output may be dropped) and says where its old
/// output positions went.
fn prune(plan: &mut Plan, needed: Needed) -> Mapping {
    assert_eq!(needed.columns.len(), plan.arity(), "needed set of plan {}", plan.id);
    let mapping = match &mut plan.kind {
        PlanKind::OneRow
        | PlanKind::Values { .. }
        | PlanKind::SystemView { .. }
        | PlanKind::Series { .. }
        | PlanKind::WorkTableScan { .. } => identity(plan.columns.len()),
        PlanKind::Scan { table, filter, emit_key, projection, .. } => {
            prune_scan(table, filter.as_ref(), *emit_key, projection, &needed)
        }
        PlanKind::Filter { input, predicate } => {
            let mut needed = needed;
            needed.add_expr(predicate);
            let mapping = prune(input, needed);
            renumber(predicate, &mapping);
            mapping
        }
        PlanKind::Project { input, exprs } => {
            let mut reads = Needed::none(input.arity());
            reads.add_exprs(exprs.iter());
            let mapping = prune(input, reads);
            exprs.iter_mut().for_each(|expr| renumber(expr, &mapping));
            identity(exprs.len())
        }
        PlanKind::Sort { input, keys } => {
            let mut needed = needed;
            for key in keys.iter() {
                needed.columns[key.column] = true;
            }
            let mapping = prune(input, needed);
            for key in keys.iter_mut() {
                key.column = mapping[key.column].expect("a sort key is kept");
            }
            mapping
        }
        PlanKind::Limit { input, .. } => prune(input, needed),
        PlanKind::Aggregate { input, groups, aggregates } => {
            let mut reads = Needed::none(input.arity());
            reads.add_exprs(groups.iter());
            reads.add_exprs(aggregates.iter().flat_map(|call| call.args.iter()));
            reads.add_exprs(
                aggregates.iter().flat_map(|call| call.order.iter().map(|key| &key.expr)),
            );
            reads.add_exprs(aggregates.iter().filter_map(|call| call.filter.as_ref()));
            let mapping = prune(input, reads);
            groups.iter_mut().for_each(|expr| renumber(expr, &mapping));
            for call in aggregates.iter_mut() {
                call.args.iter_mut().for_each(|expr| renumber(expr, &mapping));
                call.order.iter_mut().for_each(|key| renumber(&mut key.expr, &mapping));
                call.filter.iter_mut().for_each(|expr| renumber(expr, &mapping));
            }
            identity(plan.columns.len())
        }
        PlanKind::NestedLoopJoin { left, right, on, .. } => {
            let mut needed = needed;
            if let Some(on) = on {
                needed.add_expr(on);
            }
            let (left_needed, right_needed) = needed.split(left.arity());
            let left_mapping = prune(left, left_needed);
            let right_mapping = prune(right, right_needed);
            let mapping = combined(&left_mapping, &right_mapping);
            if let Some(on) = on {
                renumber(on, &mapping);
            }
            mapping
        }
        PlanKind::HashJoin { left, right, left_keys, right_keys, residual, .. } => {
            prune_hash_join((left, right), (left_keys, right_keys), residual.as_mut(), needed)
        }
        PlanKind::IndexJoin { left, right, .. }
        | PlanKind::LateralJoin { left, right, .. }
        | PlanKind::SetDifference { left, right, .. }
        | PlanKind::RecursiveUnion { non_recursive: left, recursive: right, .. } => {
            let (left_width, right_width) = (left.arity(), right.arity());
            prune(left, Needed::all(left_width));
            prune(right, Needed::all(right_width));
            identity(plan.columns.len())
        }
        PlanKind::Expand { input, keys, .. } => {
            // The input's columns read above and the keys' columns; the appended keys,
            // set number and flag stay (the Aggregate above groups and filters by them).
            let width = input.arity();
            let (mut reads, _) = needed.split(width);
            reads.add_exprs(keys.iter());
            let input_mapping = prune(input, reads);
            keys.iter_mut().for_each(|key| renumber(key, &input_mapping));
            combined(&input_mapping, &identity(plan.columns.len() - width))
        }
        PlanKind::ProjectSet { input, .. } => {
            // Keeps its input whole: its calls' arguments read the input's columns.
            let width = input.arity();
            prune(input, Needed::all(width));
            identity(plan.columns.len())
        }
        PlanKind::LockRows { input, .. }
        | PlanKind::Ordinality { input }
        | PlanKind::Distinct { input }
        | PlanKind::Window { input, .. } => {
            let width = input.arity();
            prune(input, Needed::all(width));
            identity(plan.columns.len())
        }
        PlanKind::Union { inputs, .. } => {
            for input in inputs.iter_mut() {
                let width = input.arity();
                prune(input, Needed::all(width));
            }
            identity(plan.columns.len())
        }
    };
    narrow_columns(plan, &mapping);
    mapping
}

/// A table scan decodes and returns only the needed columns (and the filter's).
fn prune_scan(
    table: &crate::plan::BoundTable,
    filter: Option<&Expr>,
    emit_key: bool,
    projection: &mut Option<ScanProjection>,
    needed: &Needed,
) -> Mapping {
    // Rows with keys are written back or locked: they need every column.
    if emit_key {
        return identity(needed.columns.len());
    }
    // The scan may be pruned already (a derived table's query was pruned when it
    // was bound): `needed` is over its current output.
    let width = table.columns.len();
    let current: Vec<usize> = match projection {
        Some(projection) => projection.output.clone(),
        None => (0..width).collect(),
    };
    let output: Vec<usize> = current
        .iter()
        .zip(&needed.columns)
        .filter_map(|(&column, &keep)| keep.then_some(column))
        .collect();
    let mapping = kept(&needed.columns);
    if output.len() == width {
        *projection = None;
        return mapping;
    }
    let mut decode = Needed::none(width);
    for &column in &output {
        decode.columns[column] = true;
    }
    if let Some(filter) = filter {
        decode.add_expr(filter);
    }
    *projection = Some(ScanProjection { decode: decode.columns, output });
    mapping
}

/// A hash join reads its keys and residual besides what is needed above it.
fn prune_hash_join(
    (left, right): (&mut Plan, &mut Plan),
    (left_keys, right_keys): (&mut [Expr], &mut [Expr]),
    residual: Option<&mut Expr>,
    needed: Needed,
) -> Mapping {
    let mut needed = needed;
    if let Some(residual) = residual.as_deref() {
        needed.add_expr(residual);
    }
    let (mut left_needed, mut right_needed) = needed.split(left.arity());
    left_needed.add_exprs(left_keys.iter());
    right_needed.add_exprs(right_keys.iter());
    let left_mapping = prune(left, left_needed);
    let right_mapping = prune(right, right_needed);
    left_keys.iter_mut().for_each(|expr| renumber(expr, &left_mapping));
    right_keys.iter_mut().for_each(|expr| renumber(expr, &right_mapping));
    let mapping = combined(&left_mapping, &right_mapping);
    if let Some(residual) = residual {
        renumber(residual, &mapping);
    }
    mapping
}

/// The mapping that keeps the positions marked in `kept_columns`, in order.
fn kept(kept_columns: &[bool]) -> Mapping {
    let mut next = 0;
    kept_columns
        .iter()
        .map(|&keep| {
            keep.then(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

/// A join's mapping: the left side's, then the right side's after the kept left columns.
fn combined(left: &Mapping, right: &Mapping) -> Mapping {
    let left_kept = left.iter().flatten().count();
    left.iter()
        .copied()
        .chain(right.iter().map(|position| position.map(|position| position + left_kept)))
        .collect()
}

/// Drops from `plan.columns` the positions `mapping` dropped.
fn narrow_columns(plan: &mut Plan, mapping: &Mapping) {
    assert_eq!(mapping.len(), plan.columns.len(), "a mapping covers plan {}", plan.id);
    let mut position = 0;
    plan.columns.retain(|_| {
        let keep = mapping[position].is_some();
        position += 1;
        keep
    });
}
