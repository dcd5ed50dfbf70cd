//! Cardinality estimates (design 020): how many rows a plan or a set of joined relations
//! returns, from ANALYZE's statistics (catalog/statistics.rs) where there are some and
//! PostgreSQL's default selectivities where there are none.
//!
//! Predicates on one column are evaluated on the column's most common values and histogram
//! bounds (PostgreSQL's histogram_selectivity, applied to every such predicate: ranges,
//! LIKE, IN lists, functions of the column): the fraction of the values they accept is
//! their selectivity, except that an equality's share of the values outside the most
//! common ones is one distinct value's. An equality between the columns of two relations
//! selects 1 / the larger distinct count. Conjuncts multiply (independence), as PostgreSQL.

use std::sync::Arc;

use crate::catalog::{Catalog, ColumnStatistics, TableMeta, TableStatistics};
use crate::convert::count_f64;
use crate::plan::*;
use crate::types::Datum;

/// Rows assumed for a table never analyzed (PostgreSQL plans an unanalyzed table of ten
/// pages at about this many rows).
pub const UNANALYZED_ROWS: f64 = 1000.0;
/// PostgreSQL's DEFAULT_EQ_SEL.
const EQUALITY_SELECTIVITY: f64 = 0.005;
/// PostgreSQL's DEFAULT_INEQ_SEL.
const INEQUALITY_SELECTIVITY: f64 = 1.0 / 3.0;
/// PostgreSQL's DEFAULT_UNK_SEL: IS NULL on an expression without statistics.
const NULL_SELECTIVITY: f64 = 0.005;
/// PostgreSQL's DEFAULT_NUM_DISTINCT: distinct values of an expression it knows nothing of.
const DISTINCT_DEFAULT: f64 = 200.0;
/// Selectivity of a boolean expression with no better rule (PostgreSQL's 0.5 for a boolean
/// column is for columns; other clauses get DEFAULT_INEQ_SEL-like guesses).
const UNKNOWN_SELECTIVITY: f64 = 1.0 / 3.0;

/// Where an input column's values come from: a table column with statistics.
#[derive(Clone)]
pub struct ColumnOrigin {
    pub statistics: Arc<TableStatistics>,
    /// Index into `statistics.columns`.
    pub column: usize,
}

impl ColumnOrigin {
    pub fn column(&self) -> &ColumnStatistics {
        &self.statistics.columns[self.column]
    }
}

/// The columns a predicate reads: their origins and the rows of the relation each belongs
/// to (distinct counts are capped by it).
pub trait Columns {
    fn origin(&self, column: usize) -> Option<ColumnOrigin>;
    fn relation_rows(&self, column: usize) -> f64;
    /// The row width the predicate reads (to evaluate it on one column's values).
    fn width(&self) -> usize;
}

/// Evaluates predicates on statistics' values for the estimator (the executor implements
/// it: `exec::PlanningEvaluator`; the planner does not depend on the executor).
pub trait Evaluate {
    /// For each of `values`: whether the conjunction of `clauses` is true on a row of
    /// `width` columns holding the value at `column` and NULL elsewhere. None when a
    /// clause cannot be evaluated outside a session.
    fn accepted(
        &self,
        clauses: &[&Expr],
        column: usize,
        width: usize,
        values: &[&Datum],
    ) -> Option<Vec<bool>>;
}

/// The planner's estimator: reads the catalog's statistics; without an evaluator,
/// predicates of one column get default selectivities.
pub struct Estimator<'a> {
    pub catalog: &'a Catalog,
    pub evaluator: Option<&'a dyn Evaluate>,
}

impl Estimator<'_> {
    /// The statistics of table column `column` of a scan of `table`.
    pub fn table_origin(&self, table: &TableMeta, column: usize) -> Option<ColumnOrigin> {
        let statistics = self.catalog.table_statistics(&table.name)?;
        let meta = table.columns.get(column)?;
        let index = statistics
            .columns
            .iter()
            .position(|stats| stats.name == meta.name && stats.ty == meta.ty)?;
        Some(ColumnOrigin { statistics, column: index })
    }

    /// The rows of `table` as last analyzed, or `UNANALYZED_ROWS`.
    pub fn table_rows(&self, table: &TableMeta) -> f64 {
        self.catalog.table_statistics(&table.name).map_or(UNANALYZED_ROWS, |stats| stats.rows)
    }

    /// Where column `column` of `plan`'s output comes from.
    pub fn origin(&self, plan: &Plan, column: usize) -> Option<ColumnOrigin> {
        match &plan.kind {
            PlanKind::Scan { table, projection, .. } => {
                let position = match projection {
                    Some(projection) => *projection.output.get(column)?,
                    None => column,
                };
                self.table_origin(table, position)
            }
            PlanKind::Filter { input, .. }
            | PlanKind::LockRows { input, .. }
            | PlanKind::Sort { input, .. }
            | PlanKind::Limit { input, .. }
            | PlanKind::Distinct { input }
            | PlanKind::Window { input, .. }
            | PlanKind::Ordinality { input }
            | PlanKind::ProjectSet { input, .. } => {
                (column < input.arity()).then(|| self.origin(input, column)).flatten()
            }
            PlanKind::Project { input, exprs } => match exprs.get(column)? {
                Expr::Column(read) => self.origin(input, *read),
                _ => None,
            },
            PlanKind::Aggregate { input, groups, .. } => match groups.get(column)? {
                Expr::Column(read) => self.origin(input, *read),
                _ => None,
            },
            PlanKind::NestedLoopJoin { left, right, .. }
            | PlanKind::HashJoin { left, right, .. }
            | PlanKind::IndexJoin { left, right, .. }
            | PlanKind::LateralJoin { left, right, .. } => {
                if column < left.arity() {
                    self.origin(left, column)
                } else {
                    self.origin(right, column - left.arity())
                }
            }
            _ => None,
        }
    }

    /// Estimated rows `plan` returns.
    pub fn rows(&self, plan: &Plan) -> f64 {
        let rows = match &plan.kind {
            PlanKind::OneRow => 1.0,
            PlanKind::Values { rows } => count_f64(rows.len()),
            PlanKind::Scan { table, access, filter, .. } => {
                let mut conjuncts = Vec::new();
                if let Some(filter) = filter {
                    split_conjuncts(filter.clone(), &mut conjuncts);
                }
                let base = self.table_rows(table) * access_selectivity(table, access);
                // The filter reads the table's row, not the scan's (pruned) output.
                let columns = TableColumns { estimator: self, table, rows: base };
                base * self.selectivity(&conjuncts, &columns)
            }
            PlanKind::Filter { input, predicate } => {
                let rows = self.rows(input);
                let mut conjuncts = Vec::new();
                split_conjuncts(predicate.clone(), &mut conjuncts);
                rows * self
                    .selectivity(&conjuncts, &PlanColumns { estimator: self, plan: input, rows })
            }
            PlanKind::Limit { input, limit, .. } => {
                let rows = self.rows(input);
                match limit {
                    Some(Expr::Literal(Datum::Int(limit))) => rows.min(int_f64(*limit).max(0.0)),
                    _ => rows,
                }
            }
            PlanKind::Aggregate { input, groups, .. } => {
                if groups.is_empty() {
                    1.0
                } else {
                    let rows = self.rows(input);
                    let columns = PlanColumns { estimator: self, plan: input, rows };
                    groups
                        .iter()
                        .map(|group| self.distinct(group, &columns))
                        .product::<f64>()
                        .min(rows)
                }
            }
            PlanKind::Distinct { input } => self.rows(input),
            PlanKind::HashJoin { left, right, kind, left_keys, right_keys, .. } => {
                let (left_rows, right_rows) = (self.rows(left), self.rows(right));
                let left_columns = PlanColumns { estimator: self, plan: left, rows: left_rows };
                let right_columns = PlanColumns { estimator: self, plan: right, rows: right_rows };
                let mut selectivity = 1.0;
                for (left_key, right_key) in left_keys.iter().zip(right_keys) {
                    let distinct = self
                        .distinct(left_key, &left_columns)
                        .max(self.distinct(right_key, &right_columns));
                    selectivity /= distinct.max(1.0);
                }
                let inner = left_rows * right_rows * selectivity;
                if kind.keeps_left() {
                    inner.max(left_rows)
                } else {
                    inner
                }
            }
            PlanKind::IndexJoin { left, .. } | PlanKind::LateralJoin { left, .. } => {
                self.rows(left)
            }
            PlanKind::NestedLoopJoin { left, right, on, .. } => {
                let rows = self.rows(left) * self.rows(right);
                rows * if on.is_some() { UNKNOWN_SELECTIVITY } else { 1.0 }
            }
            PlanKind::Union { inputs, .. } => inputs.iter().map(|input| self.rows(input)).sum(),
            PlanKind::SetDifference { left, .. } => self.rows(left),
            _ => match plan.inputs().first() {
                Some(input) => self.rows(input),
                None => UNANALYZED_ROWS,
            },
        };
        rows.max(1.0)
    }

    /// Rows read to produce `plan`'s: a scan's rows in its access range (its filter does
    /// not spare their reads); otherwise its own rows.
    pub fn read_rows(&self, plan: &Plan) -> f64 {
        match &plan.kind {
            PlanKind::Scan {
                table,
                access: access @ (Access::Index { .. } | Access::Keys { .. }),
                filter,
                ..
            } => self.access_rows(table, access, filter.as_ref()).max(1.0),
            PlanKind::Scan { table, access, .. } => {
                (self.table_rows(table) * access_selectivity(table, access)).max(1.0)
            }
            _ => self.rows(plan),
        }
    }

    /// The selectivity of the conjunction of `conjuncts` over `columns`.
    pub fn selectivity(&self, conjuncts: &[Expr], columns: &dyn Columns) -> f64 {
        // Conjuncts on the same single column are evaluated together (a range's two
        // bounds select their overlap, not the product of each bound's share).
        let mut groups: Vec<(usize, Vec<&Expr>)> = Vec::new();
        let mut selectivity = 1.0;
        for conjunct in conjuncts {
            match single_column(conjunct) {
                Some(column) if columns.origin(column).is_some() => {
                    match groups.iter_mut().find(|(read, _)| *read == column) {
                        Some((_, group)) => group.push(conjunct),
                        None => groups.push((column, vec![conjunct])),
                    }
                }
                _ => selectivity *= self.clause(conjunct, columns),
            }
        }
        for (column, group) in groups {
            selectivity *= self.column_clauses(column, &group, columns);
        }
        selectivity.clamp(0.0, 1.0)
    }

    /// One clause's selectivity, by its shape.
    fn clause(&self, expr: &Expr, columns: &dyn Columns) -> f64 {
        if let Some(column) = single_column(expr) {
            if columns.origin(column).is_some() {
                return self.column_clauses(column, &[expr], columns);
            }
        }
        match expr {
            Expr::And(left, right) => self.clause(left, columns) * self.clause(right, columns),
            Expr::Or(left, right) => {
                let (a, b) = (self.clause(left, columns), self.clause(right, columns));
                a + b - a * b
            }
            Expr::Not(inner) => 1.0 - self.clause(inner, columns),
            Expr::Literal(Datum::Bool(value)) => f64::from(u8::from(*value)),
            Expr::Compare { op: CompareOp::Eq, left, right, .. } => {
                // `a = b` across columns: 1 / the larger distinct count; `a = $1`: one of
                // a's values (a parameter's side counts one distinct value).
                let distinct =
                    self.distinct(left, columns).max(self.distinct(right, columns)).max(1.0);
                1.0 / distinct
            }
            _ => default_clause(expr),
        }
    }

    /// The selectivity of the conjunction of `clauses`, each reading only `column`, from
    /// the column's statistics: evaluated on its most common values and histogram bounds.
    fn column_clauses(&self, column: usize, clauses: &[&Expr], columns: &dyn Columns) -> f64 {
        let Some(origin) = columns.origin(column) else {
            return clauses.iter().map(|clause| self.clause(clause, columns)).product();
        };
        let stats = origin.column();
        let equalities = clauses.iter().map(|clause| equality_values(clause)).min().flatten();
        let outcome = self.evaluator.and_then(|evaluator| {
            let mut values: Vec<&Datum> = vec![&Datum::Null];
            values.extend(stats.common.iter().map(|(value, _)| value));
            values.extend(&stats.histogram);
            let accepted = evaluator.accepted(clauses, column, columns.width(), &values)?;
            let (null, rest) = accepted.split_first()?;
            let (common, histogram) = rest.split_at(stats.common.len());
            let mut selected = if *null { stats.null_fraction } else { 0.0 };
            for ((_, frequency), accepted) in stats.common.iter().zip(common) {
                if *accepted {
                    selected += frequency;
                }
            }
            let rest = (1.0 - stats.null_fraction - stats.common_fraction()).max(0.0);
            selected += rest
                * match equalities {
                    // Each value outside the common ones holds an equal share of the rest.
                    Some(values) => {
                        let others = (stats.distinct - count_f64(stats.common.len())).max(1.0);
                        (count_f64(values) / others).min(1.0)
                    }
                    None if histogram.len() >= 2 => {
                        let hits = histogram.iter().filter(|accepted| **accepted).count();
                        count_f64(hits) / count_f64(histogram.len())
                    }
                    None => INEQUALITY_SELECTIVITY,
                };
            Some(selected)
        });
        match outcome {
            Some(selected) => selected.clamp(1.0 / columns.relation_rows(column).max(1.0), 1.0),
            None => clauses.iter().map(|clause| default_clause(clause)).product(),
        }
    }

    /// Distinct values of `expr` over `columns`: a column's from its statistics, capped by
    /// its relation's rows; otherwise PostgreSQL's default, likewise capped.
    pub fn distinct(&self, expr: &Expr, columns: &dyn Columns) -> f64 {
        match expr {
            Expr::Column(column) => {
                let rows = columns.relation_rows(*column).max(1.0);
                // A filtered relation keeps at most its rows' worth of the values.
                let distinct = columns
                    .origin(*column)
                    .map_or(DISTINCT_DEFAULT, |origin| origin.column().distinct);
                distinct.clamp(1.0, rows)
            }
            Expr::Cast { expr, .. } => self.distinct(expr, columns),
            _ if expr.is_row_independent() => 1.0,
            _ => DISTINCT_DEFAULT.min(self.first_column_rows(expr, columns)),
        }
    }

    fn first_column_rows(&self, expr: &Expr, columns: &dyn Columns) -> f64 {
        let mut read = Vec::new();
        expr.columns(&mut read);
        read.first().map_or(DISTINCT_DEFAULT, |column| columns.relation_rows(*column))
    }
}

/// A table's columns by position, for estimates of a scan's filter (which reads the
/// table's row whatever columns the scan returns).
pub struct TableColumns<'e, 't> {
    pub estimator: &'e Estimator<'e>,
    pub table: &'t TableMeta,
    pub rows: f64,
}

impl Columns for TableColumns<'_, '_> {
    fn origin(&self, column: usize) -> Option<ColumnOrigin> {
        self.estimator.table_origin(self.table, column)
    }

    fn relation_rows(&self, _column: usize) -> f64 {
        self.rows
    }

    fn width(&self) -> usize {
        self.table.columns.len()
    }
}

/// A plan's output columns, for estimates over it.
pub struct PlanColumns<'e, 'p> {
    pub estimator: &'e Estimator<'e>,
    pub plan: &'p Plan,
    pub rows: f64,
}

impl Columns for PlanColumns<'_, '_> {
    fn origin(&self, column: usize) -> Option<ColumnOrigin> {
        self.estimator.origin(self.plan, column)
    }

    fn relation_rows(&self, _column: usize) -> f64 {
        self.rows
    }

    fn width(&self) -> usize {
        self.plan.arity()
    }
}

/// The share of a table an access path reads that its filter does not account for: a point
/// on every column of a unique key reads one row; a range or prefix of the clustering key a
/// tenth (conjuncts it implies may be gone from the filter, plan/access.rs). A secondary
/// index's range and a key list keep their conjuncts in the filter, which counts them.
fn access_selectivity(table: &BoundTable, access: &Access) -> f64 {
    match access {
        Access::Full | Access::Nearest { .. } | Access::Keys { .. } | Access::Index { .. } => 1.0,
        Access::Primary { lower, upper } => {
            let key_columns = table.clustered_key().map_or(usize::MAX, |key| key.columns.len());
            match (lower, upper) {
                (std::ops::Bound::Included(low), std::ops::Bound::Included(high))
                    if low.len() == key_columns && high.len() == key_columns =>
                {
                    0.0
                }
                _ => 0.1,
            }
        }
    }
}

/// The one column `expr` reads, when it reads exactly one, no subquery, parameter or
/// volatile function (so that it can be evaluated on the column's statistics).
fn single_column(expr: &Expr) -> Option<usize> {
    let mut read = Vec::new();
    expr.columns(&mut read);
    read.dedup();
    let [column] = read[..] else { return None };
    evaluable(expr).then_some(column)
}

/// Whether an expression can be evaluated without a session: no subquery, parameter, outer
/// reference or volatile function anywhere in it.
fn evaluable(expr: &Expr) -> bool {
    let here = match expr {
        Expr::Parameter(_)
        | Expr::Outer { .. }
        | Expr::InSubquery { .. }
        | Expr::Exists { .. }
        | Expr::ScalarSubquery { .. }
        | Expr::ArraySubquery { .. } => false,
        Expr::Function(call) => !call.function.volatile,
        _ => true,
    };
    here && expr.children().into_iter().all(evaluable)
}

/// The number of values an equality clause accepts (`c = v`: 1, `c IN (a, b)`: 2), or
/// None for other clauses.
fn equality_values(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Compare { op: CompareOp::Eq, left, right, .. }
            if left.is_row_independent() || right.is_row_independent() =>
        {
            Some(1)
        }
        Expr::InList { list, negated: false, .. } => Some(list.len()),
        _ => None,
    }
}

/// An integer value as f64 for the estimates (a histogram position, rounded above 2^53).
fn int_f64(value: i64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let value = value as f64;
    value
}

/// A clause's default selectivity, without statistics: PostgreSQL's defaults by its shape.
fn default_clause(expr: &Expr) -> f64 {
    match expr {
        Expr::Compare { op: CompareOp::Eq, .. } => EQUALITY_SELECTIVITY,
        Expr::Compare { op: CompareOp::NotEq, .. } => 1.0 - EQUALITY_SELECTIVITY,
        Expr::Compare { .. } => INEQUALITY_SELECTIVITY,
        Expr::Like { negated, .. } => negated_if(*negated, EQUALITY_SELECTIVITY),
        Expr::InList { list, negated, .. } => {
            negated_if(*negated, (count_f64(list.len()) * EQUALITY_SELECTIVITY).min(1.0))
        }
        Expr::IsNull { negated, .. } => negated_if(*negated, NULL_SELECTIVITY),
        _ => UNKNOWN_SELECTIVITY,
    }
}

/// The share of rows a clause keeps, from the share its positive form keeps.
fn negated_if(negated: bool, selected: f64) -> f64 {
    debug_assert!((0.0..=1.0).contains(&selected));
    if negated {
        1.0 - selected
    } else {
        selected
    }
}
