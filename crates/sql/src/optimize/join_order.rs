//! Join order (design 020): which FROM item joins which, in what order, and which side of
//! each hash join is built, chosen by estimated cost over every left-deep order (dynamic
//! programming over the subsets of the FROM list, as PostgreSQL's standard planner up to
//! its geqo_threshold), each step either probing the new item with the rows so far or
//! building on them.
//!
//! Cost is counted in row operations: reading a row, probing or building a hash table
//! with it, looking it up in an index, emitting a joined row. The constants below are
//! their relative prices, measured as instructions per row on tierdb's executor
//! (docs/BENCHMARKS.md, "Executor cost per query") rather than PostgreSQL's page costs.

use crate::optimize::estimate::{ColumnOrigin, Columns, Estimator};
use crate::plan::*;

/// FROM items ordered by search; beyond, the FROM order is kept (2^n subsets).
pub const SEARCHED_RELATIONS_MAX: usize = 10;
/// Cost of reading one row of a scan.
pub(super) const SCAN_ROW_COST: f64 = 1.0;
/// Cost of probing a hash table with one row.
const PROBE_ROW_COST: f64 = 1.0;
/// Cost of adding one row to a hash table (allocation and copy).
const BUILD_ROW_COST: f64 = 2.0;
/// Cost of one index lookup (a root-to-leaf descent and a version check).
pub(super) const LOOKUP_COST: f64 = 10.0;
/// Cost of emitting one joined row.
const OUTPUT_ROW_COST: f64 = 0.5;
/// Cost of testing one pair of a nested loop.
const PAIR_COST: f64 = 0.2;

/// One FROM item to join: its plan (filters pushed down), its columns in the FROM list's
/// combined row, its estimated rows and what reading them costs.
pub struct Relation<'p> {
    pub plan: &'p Plan,
    pub start: usize,
    pub end: usize,
    pub rows: f64,
    pub read_cost: f64,
}

/// How a step joins its item with the rows so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A hash join probing with the rows so far (left), built on the item (right).
    BuildItem,
    /// A hash join probing with the item (left), built on the rows so far (right).
    BuildRows,
    /// For each row so far (left), the item (right) looked up by index.
    LookUpItem,
    /// For each row of the item (left), the one item so far (right) looked up by index.
    LookUpRows,
}

impl Side {
    /// Whether the item is the join's right side.
    pub fn item_right(self) -> bool {
        matches!(self, Side::BuildItem | Side::LookUpItem)
    }

    /// Whether the right side is read by index lookups.
    pub fn looks_up(self) -> bool {
        matches!(self, Side::LookUpItem | Side::LookUpRows)
    }
}

/// A chosen order: the first item, then each next item with its side.
#[derive(Debug, PartialEq)]
pub struct JoinOrder {
    pub first: usize,
    pub steps: Vec<(usize, Side)>,
}

/// The combined row of the FROM list, for estimates over it.
pub struct RelationColumns<'a, 'p> {
    pub estimator: &'a Estimator<'a>,
    pub relations: &'a [Relation<'p>],
}

impl RelationColumns<'_, '_> {
    fn relation_of(&self, column: usize) -> Option<(usize, &Relation<'_>)> {
        self.relations
            .iter()
            .enumerate()
            .find(|(_, relation)| column >= relation.start && column < relation.end)
    }
}

impl Columns for RelationColumns<'_, '_> {
    fn origin(&self, column: usize) -> Option<ColumnOrigin> {
        let (_, relation) = self.relation_of(column)?;
        self.estimator.origin(relation.plan, column - relation.start)
    }

    fn relation_rows(&self, column: usize) -> f64 {
        self.relation_of(column).map_or(1.0, |(_, relation)| relation.rows)
    }

    fn width(&self) -> usize {
        self.relations.last().map_or(0, |relation| relation.end)
    }
}

/// A conjunct joining relations: the set it reads (bit per relation) and its selectivity.
struct JoinClause {
    relations: u32,
    selectivity: f64,
    /// `a = b` with its sides in different relations: a hash key or an index probe.
    equality: bool,
}

/// The best way found to join one subset.
#[derive(Clone, Copy)]
struct Best {
    cost: f64,
    /// The subset before the last step and the step (0 for a single item).
    previous: u32,
    item: usize,
    side: Side,
}

/// Chooses the order of joining `relations` on `conjuncts` (over the combined row; those
/// reading one relation were pushed into it already). `index_join(item, subset)`: whether
/// the item can be read by index lookups keyed by the rows of `subset`.
pub fn choose(
    estimator: &Estimator<'_>,
    relations: &[Relation<'_>],
    conjuncts: &[Expr],
    index_join: &dyn Fn(usize, u32) -> bool,
) -> Option<JoinOrder> {
    let count = relations.len();
    if !(2..=SEARCHED_RELATIONS_MAX).contains(&count) {
        return None;
    }
    let columns = RelationColumns { estimator, relations };
    let clauses: Vec<JoinClause> = conjuncts
        .iter()
        .filter(|conjunct| !conjunct.has_correlated_subquery())
        .map(|conjunct| JoinClause {
            relations: relations_read(conjunct, relations),
            selectivity: estimator.selectivity(std::slice::from_ref(conjunct), &columns),
            equality: is_equality_between(conjunct, relations),
        })
        .collect();
    let mut clauses = clauses;
    bound_by_unique_keys(estimator, relations, conjuncts, &mut clauses);
    let subsets = 1usize << count;
    let rows: Vec<f64> =
        (0..subsets).map(|subset| subset_rows(subset_bits(subset), relations, &clauses)).collect();
    let mut best: Vec<Option<Best>> = vec![None; subsets];
    for (item, relation) in relations.iter().enumerate() {
        let only = 1usize << item;
        best[only] = Some(Best {
            cost: SCAN_ROW_COST * relation.read_cost,
            previous: 0,
            item,
            side: Side::BuildItem,
        });
    }
    for subset in 1..subsets {
        let Some(current) = best[subset] else { continue };
        let connected: Vec<usize> = (0..count)
            .filter(|item| subset & (1 << item) == 0)
            .filter(|item| joins(subset_bits(subset), *item, &clauses, false))
            .collect();
        let candidates: Vec<usize> = if connected.is_empty() {
            (0..count).filter(|item| subset & (1 << item) == 0).collect()
        } else {
            connected
        };
        for item in candidates {
            let next = subset | (1 << item);
            let step = Step {
                subset: subset_bits(subset),
                item,
                left_rows: rows[subset],
                item_rows: relations[item].rows,
                output_rows: rows[next],
                keyed: joins(subset_bits(subset), item, &clauses, true),
            };
            for (cost, side) in step_costs(&step, current.cost, relations, index_join) {
                if best[next].is_none_or(|known| cost < known.cost) {
                    best[next] = Some(Best { cost, previous: subset_bits(subset), item, side });
                }
            }
        }
    }
    Some(unwind(&best, subsets - 1))
}

/// One candidate step: joining `item` to the rows of `subset`.
struct Step {
    subset: u32,
    item: usize,
    left_rows: f64,
    item_rows: f64,
    output_rows: f64,
    /// Whether an equality joins them (else a nested loop over every pair).
    keyed: bool,
}

/// The costs of the ways to take a step, with the side each puts the item on.
fn step_costs(
    step: &Step,
    before: f64,
    relations: &[Relation<'_>],
    index_join: &dyn Fn(usize, u32) -> bool,
) -> Vec<(f64, Side)> {
    let read = SCAN_ROW_COST * relations[step.item].read_cost;
    let output = OUTPUT_ROW_COST * step.output_rows;
    if !step.keyed {
        let pairs = PAIR_COST * step.left_rows * step.item_rows;
        return vec![(before + read + pairs + output, Side::BuildItem)];
    }
    let mut costs = vec![
        (
            before
                + read
                + PROBE_ROW_COST * step.left_rows
                + BUILD_ROW_COST * step.item_rows
                + output,
            Side::BuildItem,
        ),
        (
            before
                + read
                + PROBE_ROW_COST * step.item_rows
                + BUILD_ROW_COST * step.left_rows
                + output,
            Side::BuildRows,
        ),
    ];
    if index_join(step.item, step.subset) {
        costs.push((before + LOOKUP_COST * step.left_rows + output, Side::LookUpItem));
    }
    // A single item on the right of the item's lookups: its own read is not needed.
    if step.subset.count_ones() == 1 {
        let only = usize::try_from(step.subset.trailing_zeros()).expect("a bit index fits usize");
        if index_join(only, 1 << step.item) {
            let cost = before - SCAN_ROW_COST * relations[only].read_cost
                + read
                + LOOKUP_COST * step.item_rows;
            costs.push((cost + output, Side::LookUpRows));
        }
    }
    costs
}

/// The order that reached `subset` at the least cost.
fn unwind(best: &[Option<Best>], full: usize) -> JoinOrder {
    let mut steps = Vec::new();
    let mut subset = full;
    loop {
        let found = best[subset].expect("every subset on the best path was reached");
        if found.previous == 0 {
            steps.reverse();
            return JoinOrder { first: found.item, steps };
        }
        steps.push((found.item, found.side));
        subset = usize::try_from(found.previous).expect("a subset fits usize");
    }
}

/// Estimated rows of joining the relations of `subset`: their rows times the selectivity
/// of every clause among them.
fn subset_rows(subset: u32, relations: &[Relation<'_>], clauses: &[JoinClause]) -> f64 {
    let mut rows: f64 = relations
        .iter()
        .enumerate()
        .filter(|(item, _)| subset & (1 << item) != 0)
        .map(|(_, relation)| relation.rows)
        .product();
    for clause in clauses {
        if clause.relations != 0 && clause.relations & !subset == 0 {
            rows *= clause.selectivity;
        }
    }
    rows.max(1.0)
}

/// Whether a clause (an equality, with `equality`) reads `item` and only it and relations
/// of `subset`.
fn joins(subset: u32, item: usize, clauses: &[JoinClause], equality: bool) -> bool {
    let with = subset | (1 << item);
    clauses.iter().any(|clause| {
        (clause.equality || !equality)
            && clause.relations & (1 << item) != 0
            && clause.relations & subset != 0
            && clause.relations & !with == 0
    })
}

/// The relations a conjunct reads, one bit each.
pub fn relations_read(conjunct: &Expr, relations: &[Relation<'_>]) -> u32 {
    let mut read = Vec::new();
    conjunct.columns(&mut read);
    let mut bits = 0u32;
    for column in read {
        if let Some(item) =
            relations.iter().position(|relation| column >= relation.start && column < relation.end)
        {
            bits |= 1 << item;
        }
    }
    bits
}

fn subset_bits(subset: usize) -> u32 {
    u32::try_from(subset).expect("at most SEARCHED_RELATIONS_MAX relations")
}

/// Whether `conjunct` is `a = b` with `a` and `b` reading disjoint, non-empty sets of
/// relations.
fn is_equality_between(conjunct: &Expr, relations: &[Relation<'_>]) -> bool {
    let Expr::Compare { op: CompareOp::Eq, left, right, bpchar: false } = conjunct else {
        return false;
    };
    let (a, b) = (relations_read(left, relations), relations_read(right, relations));
    a != 0 && b != 0 && a & b == 0
}

/// Equalities between two relations whose columns on one side cover a unique key of the
/// table that side scans match each row of the other side with at most one row of it:
/// together they select 1 / that table's rows, not the product of their selectivities
/// (which treats `ps_partkey = l_partkey AND ps_suppkey = l_suppkey` as independent and
/// estimates a few rows where every lineitem row matches).
fn bound_by_unique_keys(
    estimator: &Estimator<'_>,
    relations: &[Relation<'_>],
    conjuncts: &[Expr],
    clauses: &mut [JoinClause],
) {
    let conjuncts: Vec<&Expr> =
        conjuncts.iter().filter(|conjunct| !conjunct.has_correlated_subquery()).collect();
    debug_assert_eq!(conjuncts.len(), clauses.len(), "one clause per conjunct");
    for (first, relation) in relations.iter().enumerate() {
        for second in 0..relations.len() {
            if first == second {
                continue;
            }
            let pair = (1u32 << first) | (1u32 << second);
            // `first`'s columns in equalities with columns of `second`.
            let mut members = Vec::new();
            let mut columns = Vec::new();
            for (index, (conjunct, clause)) in conjuncts.iter().zip(clauses.iter()).enumerate() {
                if !clause.equality || clause.relations != pair {
                    continue;
                }
                let Expr::Compare { left, right, .. } = conjunct else { continue };
                for side in [left, right] {
                    if let Expr::Column(column) = **side {
                        if column >= relation.start && column < relation.end {
                            columns.push(column - relation.start);
                            members.push(index);
                        }
                    }
                }
            }
            let Some(table_rows) = unique_key_rows(estimator, relation, &columns) else {
                continue;
            };
            let together: f64 = members.iter().map(|&index| clauses[index].selectivity).product();
            let bound = 1.0 / table_rows.max(1.0);
            if together < bound {
                for (position, &index) in members.iter().enumerate() {
                    clauses[index].selectivity = if position == 0 { bound } else { 1.0 };
                }
            }
        }
    }
}

/// The rows of the table `relation` scans when `columns` (positions in its rows) cover
/// one of the table's unique keys.
fn unique_key_rows(
    estimator: &Estimator<'_>,
    relation: &Relation<'_>,
    columns: &[usize],
) -> Option<f64> {
    let PlanKind::Scan { table, projection: None, emit_key: false, .. } = &relation.plan.kind
    else {
        return None;
    };
    let covered = table.indexes.iter().any(|index| {
        index.unique
            && index.predicate.is_none()
            && !index.columns.is_empty()
            && index.columns.iter().all(|column| columns.contains(column))
    });
    covered.then(|| estimator.table_rows(table))
}
