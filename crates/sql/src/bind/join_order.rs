//! A FROM list joined in the order the optimizer chooses by cost (optimize/join_order.rs,
//! design 020) instead of the order written. The joined row's columns follow the order of
//! joining; a projection on top restores the FROM list's order, which the scope (and every
//! expression bound over it) reads.

use super::*;
use crate::optimize::{choose_join_order, relations_read, Estimator, JoinRelation};

impl Binder<'_> {
    /// Joins `plans` (the FROM items, their own conjuncts pushed in; item `i` has columns
    /// `bounds[i]` of the combined row) on `conjuncts` in the cheapest order found, taking
    /// the conjuncts it applies out of `conjuncts`. None when the order is not searched.
    pub(crate) fn join_by_cost(
        &mut self,
        plans: Vec<Plan>,
        bounds: &[(usize, usize)],
        conjuncts: &mut Vec<Expr>,
    ) -> Result<std::result::Result<Plan, Vec<Plan>>> {
        let order = {
            let estimator = Estimator { catalog: self.catalog, evaluator: self.evaluator };
            let relations: Vec<JoinRelation<'_>> = plans
                .iter()
                .zip(bounds)
                .map(|(plan, &(start, end))| JoinRelation {
                    plan,
                    start,
                    end,
                    rows: estimator.rows(plan),
                    read_cost: estimator.read_rows(plan),
                })
                .collect();
            let index_join =
                |item: usize, subset: u32| index_joinable(&relations, item, subset, conjuncts);
            choose_join_order(&estimator, &relations, conjuncts, &index_join)
        };
        let Some(order) = order else { return Ok(Err(plans)) };
        let columns: Vec<OutputColumn> =
            plans.iter().flat_map(|plan| plan.columns.iter().cloned()).collect();
        let mut items: Vec<Option<Plan>> = plans.into_iter().map(Some).collect();
        let mut layout = vec![order.first];
        let mut plan = items[order.first].take().expect("each item joins once");
        for (item, side) in order.steps {
            let right = items[item].take().expect("each item joins once");
            let next = if side.item_right() {
                [layout.as_slice(), &[item]].concat()
            } else {
                [&[item], layout.as_slice()].concat()
            };
            let mine = take_within(conjuncts, bounds, &next);
            let mine = mine.into_iter().map(|conjunct| remap(conjunct, bounds, &next)).collect();
            let left_width = layout_width(bounds, &layout);
            let lookups = side.looks_up();
            plan = if side.item_right() {
                self.join_by(plan, right, JoinKind::Inner, mine, left_width, lookups)?
            } else {
                let item_width = layout_width(bounds, &[item]);
                self.join_by(right, plan, JoinKind::Inner, mine, item_width, lookups)?
            };
            layout = next;
        }
        assert!(items.iter().all(Option::is_none), "every FROM item is joined");
        if layout.windows(2).all(|pair| pair[0] < pair[1]) {
            return Ok(Ok(plan));
        }
        let width = columns.len();
        let exprs =
            (0..width).map(|column| Expr::Column(position(bounds, &layout, column))).collect();
        Ok(Ok(self.plan(PlanKind::Project { input: Box::new(plan), exprs }, columns)))
    }
}

/// Takes the conjuncts that read only the items of `layout` (and no correlated subquery).
fn take_within(
    conjuncts: &mut Vec<Expr>,
    bounds: &[(usize, usize)],
    layout: &[usize],
) -> Vec<Expr> {
    let mut taken = Vec::new();
    conjuncts.retain(|conjunct| {
        let mut read = Vec::new();
        conjunct.columns(&mut read);
        let inside = read.iter().all(|&column| {
            layout.iter().any(|&item| column >= bounds[item].0 && column < bounds[item].1)
        });
        if inside && !conjunct.has_correlated_subquery() {
            taken.push(conjunct.clone());
            false
        } else {
            true
        }
    });
    taken
}

/// `conjunct` over the columns of `layout` (the items in that order) instead of the FROM
/// list's combined row.
fn remap(mut conjunct: Expr, bounds: &[(usize, usize)], layout: &[usize]) -> Expr {
    conjunct.map_columns(&mut |column| position(bounds, layout, column));
    conjunct
}

/// Where column `column` of the combined row is in a row of the items of `layout`.
fn position(bounds: &[(usize, usize)], layout: &[usize], column: usize) -> usize {
    let mut offset = 0;
    for &item in layout {
        let (start, end) = bounds[item];
        if column >= start && column < end {
            return offset + column - start;
        }
        offset += end - start;
    }
    unreachable!("column {column} belongs to an item of the layout")
}

fn layout_width(bounds: &[(usize, usize)], layout: &[usize]) -> usize {
    layout.iter().map(|&item| bounds[item].1 - bounds[item].0).sum()
}

/// Whether item `item` can be read by index lookups keyed by the rows of the items in
/// `subset` (bit per item): a full scan of a table whose key the equalities between them
/// pin (plan/join.rs decides the same when the join is built).
fn index_joinable(
    relations: &[JoinRelation<'_>],
    item: usize,
    subset: u32,
    conjuncts: &[Expr],
) -> bool {
    let bounds: Vec<(usize, usize)> =
        relations.iter().map(|relation| (relation.start, relation.end)).collect();
    let mut layout: Vec<usize> = (0..relations.len()).filter(|i| subset & (1 << i) != 0).collect();
    let left_width = layout_width(&bounds, &layout);
    layout.push(item);
    let item_bit = 1u32 << item;
    let mut equalities = Vec::new();
    for conjunct in conjuncts.iter().filter(|conjunct| !conjunct.has_correlated_subquery()) {
        let Expr::Compare { op: CompareOp::Eq, left, right, bpchar: false } = conjunct else {
            continue;
        };
        for (outer, inner) in [(left, right), (right, left)] {
            let outer_read = relations_read(outer, relations);
            if outer_read != 0
                && outer_read & !subset == 0
                && relations_read(inner, relations) == item_bit
            {
                let outer = remap((**outer).clone(), &bounds, &layout);
                let inner = remap((**inner).clone(), &bounds, &layout);
                equalities.push((outer, inner));
            }
        }
    }
    !equalities.is_empty() && lookup_access(relations[item].plan, &equalities, left_width).is_some()
}
