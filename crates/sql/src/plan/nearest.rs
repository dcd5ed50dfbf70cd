//! The vector index scan, HNSW or ivfflat (docs/design/014-vector-indexes.md): `SELECT ... FROM t ORDER BY col
//! <op> query LIMIT k`, where `<op>` is the operator of a vector index on `col` and `query` a
//! constant or a parameter, reads the index's nearest rows instead of sorting the table.

use crate::catalog::{IndexKind, TableMeta};
use crate::plan::*;
use crate::types::{Datum, SqlType};
use tierdb_vector::hnsw::Metric;

/// The metric an operator orders by.
fn metric_of(operator: &str) -> Option<Metric> {
    Some(match operator {
        "<->" => Metric::L2,
        "<#>" => Metric::InnerProduct,
        "<=>" => Metric::Cosine,
        "<+>" => Metric::L1,
        "<~>" => Metric::BitHamming,
        "<%>" => Metric::BitJaccard,
        _ => return None,
    })
}

/// The vector index on `column` ordering by `operator` (over halfvec when `half`) that a
/// scan filtered by `conjuncts` may read, if the table has one: a partial index only when
/// the conjuncts imply its predicate (as for a partial B+tree index), and then in
/// preference to a full one (it holds fewer rows, all of them wanted). With `partial_only`
/// (the scan already reads a secondary index), only a partial one.
fn vector_index<'t>(
    table: &'t TableMeta,
    column: usize,
    operator: &str,
    half: bool,
    conjuncts: &[Expr],
    partial_only: bool,
) -> Option<&'t str> {
    let metric = metric_of(operator)?;
    let metric = if half { metric.half() } else { metric };
    let candidates = table.indexes.iter().filter(|index| {
        index.columns == [column]
            && matches!(index.kind, IndexKind::Hnsw(options) if options.metric == metric)
            && predicate_implied(table, index, conjuncts, None)
    });
    let best = candidates.max_by_key(|index| {
        let predicate_size =
            index.predicate.as_ref().map_or(0, |predicate| predicate.conjuncts.len());
        // Among equals, the index made first.
        (predicate_size, std::cmp::Reverse(index.oid))
    })?;
    (!partial_only || best.predicate.is_some()).then_some(best.name.as_str())
}

/// Rewrites a query plan whose root is `Limit` over a sort by one distance operator on a
/// full scan of one table (the binder's `Limit(Project(Sort(Project(Scan))))`, the outer
/// projection present when the sort key is not selected) into a scan of the HNSW index:
/// the sort goes, the scan returns rows nearest first and the limit stops it. A partial
/// index serves only a query whose WHERE implies its predicate. A WHERE filter stays on the
/// scan, applied to the index's rows as pgvector's executor does:
/// without `hnsw.iterative_scan` fewer rows than the LIMIT may pass it; with it, the scan
/// continues until the LIMIT is filled (or `hnsw.max_scan_tuples`).
pub(crate) fn use_vector_indexes(plan: &mut Plan) {
    let PlanKind::Limit { input, limit: Some(_), .. } = &mut plan.kind else { return };
    let sort = match &mut input.kind {
        PlanKind::Project { input: inner, .. } if matches!(inner.kind, PlanKind::Sort { .. }) => {
            inner
        }
        _ => input,
    };
    if let Some(scan) = nearest_scan(sort) {
        **sort = scan;
    }
}

/// The table column an operand reads: a vector (halfvec, bit) column, possibly coerced from
/// `vector(n)` to the operator's `vector` (`halfvec(n)` to `halfvec`, `bit(n)` to `bit`).
fn vector_column(operand: &Expr) -> Option<usize> {
    match operand {
        Expr::Column(column) => Some(*column),
        Expr::Cast { expr, from: SqlType::Vector(_), to: SqlType::Vector(None), .. }
        | Expr::Cast { expr, from: SqlType::HalfVec(_), to: SqlType::HalfVec(None), .. }
        | Expr::Cast { expr, from: SqlType::Bit(_), to: SqlType::Bit(None), .. } => {
            match expr.as_ref() {
                Expr::Column(column) => Some(*column),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The sort's input with its scan reading the index, when the sort has that shape.
fn nearest_scan(sort: &Plan) -> Option<Plan> {
    let PlanKind::Sort { input: project, keys } = &sort.kind else { return None };
    // pgvector's index orders ascending with NULL distances left out: NULLS FIRST and DESC
    // need the sort.
    let [key] = keys.as_slice() else { return None };
    if key.descending || key.nulls_first {
        return None;
    }
    let PlanKind::Project { input: scan, exprs } = &project.kind else { return None };
    let PlanKind::Scan {
        table,
        access,
        filter,
        emit_key: false,
        backward: false,
        projection: None,
    } = &scan.kind
    else {
        return None;
    };
    // A secondary index's range or key list leaves every conjunct in the filter, so a partial
    // vector index the filter implies may replace it; a primary key range may have dropped
    // conjuncts it guarantees (`scan_access`), so it stays.
    let partial_only = match access {
        Access::Full => false,
        Access::Index { .. } | Access::Keys { name: Some(_), .. } => true,
        _ => return None,
    };
    let mut conjuncts = Vec::new();
    if let Some(filter) = filter {
        split_conjuncts(filter.clone(), &mut conjuncts);
    }
    let Expr::Function(call) = exprs.get(key.column)? else { return None };
    let operator = call.operator?;
    let [column, query] = call.args.as_slice() else { return None };
    let column = vector_column(column)?;
    if !matches!(
        query,
        Expr::Literal(Datum::Vector(_) | Datum::HalfVec(_) | Datum::Bit(_)) | Expr::Parameter(_)
    ) {
        return None;
    }
    let half = matches!(call.arg_types.first(), Some(SqlType::HalfVec(_)));
    let name = vector_index(table, column, operator, half, &conjuncts, partial_only)?.to_string();
    let mut project = (**project).clone();
    let PlanKind::Project { input: scan, .. } = &mut project.kind else { unreachable!() };
    let PlanKind::Scan { access, .. } = &mut scan.kind else { unreachable!() };
    *access = Access::Nearest { name, column, operator, query: query.clone() };
    Some(project)
}
