//! Decorrelation: a correlated subquery of WHERE whose only ties to the enclosing row are
//! equalities `inner column = outer expression` becomes a join with the subquery grouped
//! by those inner columns, run once, instead of the subquery run again for every row.
//!
//! ```text
//! WHERE x < (SELECT 0.2 * avg(q) FROM t WHERE t.k = o.k)
//!   ─► o LEFT JOIN (SELECT 0.2 * avg(q), true, k FROM t GROUP BY k) d ON o.k = d.k
//!      WHERE x < CASE WHEN d.marker IS NULL THEN <the value over no rows> ELSE d.value END
//! WHERE EXISTS (SELECT ... FROM t WHERE t.k = o.k AND p(t))
//!   ─► o JOIN (SELECT 1, true, k FROM t WHERE p(t) GROUP BY k) d ON o.k = d.k
//! WHERE NOT EXISTS (...)  ─► the same as a LEFT JOIN, WHERE d.marker IS NULL
//! ```
//!
//! Exact by construction: the grouped side has one row per key, so no enclosing row is
//! repeated; a key the enclosing row's value matches by `=` is exactly a group the
//! subquery's own `=` would have selected (the equality is the same comparison); a NULL on
//! either side matches nothing, as `=` selects no row; an enclosing row without a group
//! gets what the aggregate gives over no rows (count 0, the others NULL, computed through
//! the select expression: the COUNT bug). Anything else stays a correlated subquery and
//! runs as before: another reference to an enclosing query (a non-equality, a reference in
//! the select list, in a nested subquery), GROUP BY, HAVING, DISTINCT, ORDER BY, LIMIT,
//! WITH, set operations, locking clauses, volatile functions, a char(n) (bpchar) equality
//! (its groups would split values `=` finds equal).
//!
//! How: the subquery's text is bound again (`bind_grouped`) with a `Target` naming its
//! SELECT; `take_correlation` lifts the equalities out of that SELECT's WHERE before its
//! conjuncts are pushed down, and `group_by_correlation` / `correlation_outputs` group it
//! by their inner columns and add a marker column and the keys to its output. The binder
//! counts the references it resolves to enclosing scopes while doing so: when they are not
//! all in the lifted equalities, the subquery stays correlated.

use super::*;

/// Output columns of a grouped subquery: its value, a marker (true, NULL when the join
/// found no group), then the keys.
const VALUE_COLUMN: usize = 0;
const MARKER_COLUMN: usize = 1;
const KEYS_START: usize = 2;

/// A correlated subquery being bound again grouped by its correlation.
pub(crate) struct Target {
    /// The address of the first item of its SELECT's FROM list (identity only).
    from: usize,
    /// The length of the enclosing-scope stack inside it: references to scopes below
    /// this are to the enclosing queries.
    level: usize,
    /// The equalities taken out of its WHERE: the inner column (over its FROM scope) with
    /// its type, and the outer expression (reading the enclosing row as `Outer` depth 1).
    keys: Vec<(usize, SqlType, Expr)>,
    /// How many enclosing-scope references the outer expressions hold.
    outer_references: usize,
    taken: bool,
}

/// A subquery bound grouped: its plan and the outer side of each key equality.
struct Grouped {
    plan: Plan,
    outer_keys: Vec<Expr>,
}

impl Binder<'_> {
    /// Remembers a correlated subquery's text for `decorrelate`.
    pub(crate) fn remember_correlated(&mut self, id: usize, query: &ast::Query) {
        self.correlated_queries.insert(id, query.clone());
    }

    /// Counts a reference resolved in the enclosing scope at `position` of the stack,
    /// when it is outside the subquery being bound again (see `Target`).
    pub(crate) fn count_outer_reference(&mut self, position: usize) {
        if self.decorrelation.as_ref().is_some_and(|target| position < target.level) {
            self.outer_references += 1;
        }
    }

    /// Rewrites the correlated EXISTS / NOT EXISTS conjuncts and correlated scalar
    /// subqueries of `conjuncts` (WHERE over `plan`, whose columns are `scope`'s) into joins
    /// of `plan` with the subqueries grouped; the joined columns come after `scope`'s, so
    /// the references of what stays correlated still read the same positions.
    pub(crate) fn decorrelate(
        &mut self,
        mut plan: Plan,
        scope: &Scope,
        conjuncts: Vec<Expr>,
    ) -> Result<(Plan, Vec<Expr>)> {
        assert_eq!(plan.arity(), scope.columns.len(), "WHERE is over the FROM row");
        // A few enclosing rows (a point read) run the subquery a few times, each reading
        // only its key's rows where an index allows: cheaper than grouping a whole table.
        if is_small_result(&plan) {
            return Ok((plan, conjuncts));
        }
        let mut kept = Vec::with_capacity(conjuncts.len());
        for mut conjunct in conjuncts {
            if !conjunct.has_correlated_subquery() {
                kept.push(conjunct);
                continue;
            }
            if let Some((negated, id)) = correlated_exists(&conjunct) {
                if let Some(grouped) = self.bind_grouped(id, scope, true) {
                    let width = plan.arity();
                    let kind = if negated { JoinKind::Left } else { JoinKind::Inner };
                    plan = self.join_grouped(plan, grouped, kind)?;
                    if negated {
                        let marker = Box::new(Expr::Column(width + MARKER_COLUMN));
                        kept.push(Expr::IsNull { expr: marker, negated: false });
                    }
                    continue;
                }
            }
            plan = self.decorrelate_scalars(plan, scope, &mut conjunct)?;
            kept.push(conjunct);
        }
        Ok((plan, kept))
    }

    /// Replaces each correlated scalar subquery of `expr` that can be grouped by a column
    /// of a LEFT JOIN of `plan` with it.
    fn decorrelate_scalars(
        &mut self,
        mut plan: Plan,
        scope: &Scope,
        expr: &mut Expr,
    ) -> Result<Plan> {
        if let Expr::ScalarSubquery { correlated: true, id, .. } = expr {
            let id = *id;
            if let Some(grouped) = self.bind_grouped(id, scope, false) {
                if let Some(empty) = value_over_no_rows(&grouped.plan) {
                    let width = plan.arity();
                    plan = self.join_grouped(plan, grouped, JoinKind::Left)?;
                    let value = Expr::Column(width + VALUE_COLUMN);
                    *expr = match empty {
                        Expr::Literal(Datum::Null) => value,
                        empty => Expr::Case {
                            operand: None,
                            branches: vec![(
                                Expr::IsNull {
                                    expr: Box::new(Expr::Column(width + MARKER_COLUMN)),
                                    negated: false,
                                },
                                empty,
                            )],
                            otherwise: Some(Box::new(value)),
                        },
                    };
                }
            }
            return Ok(plan);
        }
        for child in expr.children_mut() {
            plan = self.decorrelate_scalars(plan, scope, child)?;
        }
        Ok(plan)
    }

    /// `plan` joined with a grouped subquery on its key equalities.
    fn join_grouped(&mut self, plan: Plan, grouped: Grouped, kind: JoinKind) -> Result<Plan> {
        let width = plan.arity();
        let equalities = grouped
            .outer_keys
            .into_iter()
            .enumerate()
            .map(|(position, mut outer)| {
                outer_to_columns(&mut outer);
                Expr::Compare {
                    op: CompareOp::Eq,
                    left: Box::new(outer),
                    right: Box::new(Expr::Column(width + KEYS_START + position)),
                    bpchar: false,
                }
            })
            .collect();
        self.join(plan, grouped.plan, kind, equalities, width)
    }

    /// Binds the correlated subquery `id` again, grouped by its correlation equalities;
    /// None when it cannot be (it then stays correlated). `exists`: its select list is
    /// replaced by `1` (EXISTS reads no column of it).
    fn bind_grouped(&mut self, id: usize, scope: &Scope, exists: bool) -> Option<Grouped> {
        let mut query = self.correlated_queries.get(&id)?.clone();
        if !groupable(&query, exists) {
            return None;
        }
        let ast::SetExpr::Select(select) = query.body.as_mut() else {
            unreachable!("groupable: a SELECT");
        };
        if exists {
            let one = ast::Expr::Value(ast::Value::Number("1".into(), false).with_empty_span());
            select.projection = vec![ast::SelectItem::UnnamedExpr(one)];
        }
        let from = select.from.first()? as *const ast::TableWithJoins as usize;
        let saved_grouping = self.grouping.take();
        let saved_clause = self.clause.take();
        let saved_target = self.decorrelation.replace(Target {
            from,
            level: self.outer.len() + 1,
            keys: Vec::new(),
            outer_references: 0,
            taken: false,
        });
        let saved_references = std::mem::replace(&mut self.outer_references, 0);
        self.outer.push(scope.clone());
        self.correlated.push(false);
        let outcome = self.query(&query);
        self.correlated.pop();
        self.outer.pop();
        let references = std::mem::replace(&mut self.outer_references, saved_references);
        let target = std::mem::replace(&mut self.decorrelation, saved_target)?;
        self.grouping = saved_grouping;
        self.clause = saved_clause;
        let plan = outcome.ok()?;
        if target.keys.is_empty() || references != target.outer_references {
            return None;
        }
        assert_eq!(plan.arity(), KEYS_START + target.keys.len(), "value, marker, keys");
        Some(Grouped {
            plan,
            outer_keys: target.keys.into_iter().map(|(.., outer)| outer).collect(),
        })
    }

    /// For the SELECT being bound again grouped: takes the correlation equalities out of
    /// its WHERE (`predicate`, over `scope`, its FROM row).
    pub(crate) fn take_correlation(
        &mut self,
        from: &[ast::TableWithJoins],
        scope: &Scope,
        predicate: Option<Expr>,
    ) -> Option<Expr> {
        let Some(target) = self.decorrelation.as_mut() else {
            return predicate;
        };
        let address = from.first().map(|item| item as *const ast::TableWithJoins as usize);
        if target.taken || address != Some(target.from) {
            return predicate;
        }
        target.taken = true;
        let mut conjuncts = Vec::new();
        if let Some(predicate) = predicate {
            split_conjuncts(predicate, &mut conjuncts);
        }
        let mut kept = Vec::new();
        for conjunct in conjuncts {
            match correlation_equality(&conjunct) {
                Some((column, outer)) => {
                    target.outer_references += count_outer(&outer);
                    target.keys.push((column, scope.columns[column].ty.clone(), outer));
                }
                None => kept.push(conjunct),
            }
        }
        conjunction(kept)
    }

    /// For the SELECT being bound again grouped: groups it by the inner key columns (after
    /// `bind_grouping`, whose answer `grouped` is). Returns whether the SELECT groups.
    pub(crate) fn group_by_correlation(
        &mut self,
        select: &ast::Select,
        scope: &Scope,
        grouped: bool,
    ) -> bool {
        let Some(keys) = self.correlation_keys(select) else {
            return grouped;
        };
        let grouping = self.grouping.get_or_insert_with(|| Grouping {
            input: scope.clone(),
            keys: Vec::new(),
            aggregates: Vec::new(),
            sets: None,
        });
        assert!(grouping.keys.is_empty(), "a grouped subquery has no GROUP BY of its own");
        for (position, (column, ty)) in keys.into_iter().enumerate() {
            let text = format!("?correlation {position}?");
            grouping.keys.push((text, Expr::Column(column), ty));
        }
        true
    }

    /// For the SELECT being bound again grouped: its output after the select list (one
    /// value): the marker, then the grouping keys.
    pub(crate) fn correlation_outputs(
        &self,
        select: &ast::Select,
        items: &mut Vec<Expr>,
        names: &mut Vec<(String, Option<(u32, i16)>)>,
        types: &mut Vec<SqlType>,
    ) {
        let Some(keys) = self.correlation_keys(select) else {
            return;
        };
        assert_eq!(items.len(), MARKER_COLUMN, "a grouped subquery has one value");
        items.push(Expr::Literal(Datum::Bool(true)));
        names.push(("?marker?".into(), None));
        types.push(SqlType::Bool);
        for (position, (_, ty)) in keys.into_iter().enumerate() {
            items.push(Expr::Column(position));
            names.push((format!("?key{position}?"), None));
            types.push(ty);
        }
    }

    /// The inner key columns when `select` is the SELECT being bound again grouped.
    fn correlation_keys(&self, select: &ast::Select) -> Option<Vec<(usize, SqlType)>> {
        let target = self.decorrelation.as_ref()?;
        let address = select.from.first()? as *const ast::TableWithJoins as usize;
        (target.taken && address == target.from && !target.keys.is_empty())
            .then(|| target.keys.iter().map(|(column, ty, _)| (*column, ty.clone())).collect())
    }
}

/// A conjunct `[NOT] EXISTS (correlated subquery)`: whether negated, and its id.
fn correlated_exists(conjunct: &Expr) -> Option<(bool, usize)> {
    match conjunct {
        Expr::Exists { correlated: true, negated, id, .. } => Some((*negated, *id)),
        Expr::Not(inner) => correlated_exists(inner).map(|(negated, id)| (!negated, id)),
        _ => None,
    }
}

/// Whether a subquery's shape allows grouping it by its correlation (see the module doc).
fn groupable(query: &ast::Query, exists: bool) -> bool {
    let ast::SetExpr::Select(select) = query.body.as_ref() else {
        return false;
    };
    let plain_query = query.with.is_none()
        && query.order_by.is_none()
        && query.limit_clause.is_none()
        && query.fetch.is_none()
        && query.locks.is_empty();
    let group_by_empty =
        matches!(&select.group_by, ast::GroupByExpr::Expressions(exprs, _) if exprs.is_empty());
    let plain_select = select.distinct.is_none()
        && select.having.is_none()
        && group_by_empty
        && select.selection.is_some()
        && !select.from.is_empty();
    let aggregates = select.projection.iter().any(|item| match item {
        ast::SelectItem::UnnamedExpr(expr) | ast::SelectItem::ExprWithAlias { expr, .. } => {
            contains_aggregate(expr)
        }
        _ => false,
    });
    // EXISTS over rows, not over an aggregate (whose one row always exists); a scalar
    // subquery of one aggregated value.
    let shape = if exists {
        !aggregates && !has_set_function(select)
    } else {
        aggregates && select.projection.len() == 1
    };
    plain_query && plain_select && shape && !has_volatile_call(query)
}

/// Whether the select list calls a set-returning function (which decides how many rows
/// there are, so EXISTS depends on it).
fn has_set_function(select: &ast::Select) -> bool {
    calls_any(&select.projection, &|name| is_set_function(name))
}

/// Whether the query calls a volatile function anywhere (run per enclosing row, it would
/// be called another number of times grouped).
fn has_volatile_call(query: &ast::Query) -> bool {
    calls_any(query, &|name| {
        crate::functions::lookup(name).is_some_and(|function| function.volatile)
            || matches!(name, "nextval" | "setval" | "random" | "gen_random_uuid")
    })
}

fn calls_any<V: ast::Visit>(node: &V, test: &dyn Fn(&str) -> bool) -> bool {
    struct Finder<'t> {
        test: &'t dyn Fn(&str) -> bool,
    }
    impl ast::Visitor for Finder<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &ast::Expr) -> std::ops::ControlFlow<()> {
            if let ast::Expr::Function(function) = expr {
                if object_name(&function.name).is_ok_and(|name| (self.test)(&name)) {
                    return std::ops::ControlFlow::Break(());
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    ast::Visit::visit(node, &mut Finder { test }).is_break()
}

/// `inner column = outer expression` (either way round): the column, and the expression,
/// which reads only the enclosing row (`Outer` depth 1), no subquery, nothing volatile.
fn correlation_equality(conjunct: &Expr) -> Option<(usize, Expr)> {
    let Expr::Compare { op: CompareOp::Eq, left, right, bpchar: false } = conjunct else {
        return None;
    };
    let pair = |inner: &Expr, outer: &Expr| match inner {
        Expr::Column(column) if reads_only_enclosing_row(outer) && count_outer(outer) > 0 => {
            Some((*column, outer.clone()))
        }
        _ => None,
    };
    pair(left, right).or_else(|| pair(right, left))
}

fn reads_only_enclosing_row(expr: &Expr) -> bool {
    let here = match expr {
        Expr::Column(_)
        | Expr::InSubquery { .. }
        | Expr::Exists { .. }
        | Expr::ScalarSubquery { .. }
        | Expr::ArraySubquery { .. } => false,
        Expr::Outer { depth, .. } => *depth == 1,
        Expr::Function(call) => !call.function.volatile,
        _ => true,
    };
    here && expr.children().into_iter().all(reads_only_enclosing_row)
}

fn count_outer(expr: &Expr) -> usize {
    usize::from(matches!(expr, Expr::Outer { .. }))
        + expr.children().into_iter().map(count_outer).sum::<usize>()
}

/// An outer key expression moved into the enclosing query: its row is now the input row.
fn outer_to_columns(expr: &mut Expr) {
    if let Expr::Outer { depth, index } = *expr {
        assert_eq!(depth, 1, "a key reads only the enclosing row");
        *expr = Expr::Column(index);
        return;
    }
    for child in expr.children_mut() {
        outer_to_columns(child);
    }
}

/// The value a grouped scalar subquery's select expression has over no rows: each
/// aggregate's value over no rows (count 0, the others NULL) put in its place. None when
/// the expression reads something else of the aggregate's output.
fn value_over_no_rows(plan: &Plan) -> Option<Expr> {
    let PlanKind::Project { input, exprs } = &plan.kind else {
        return None;
    };
    let PlanKind::Aggregate { groups, aggregates, .. } = &input.kind else {
        return None;
    };
    let mut value = exprs[VALUE_COLUMN].clone();
    if !replace_aggregates(&mut value, groups.len(), aggregates) {
        return None;
    }
    Some(value)
}

fn replace_aggregates(expr: &mut Expr, keys: usize, aggregates: &[AggregateCall]) -> bool {
    if let Expr::Column(column) = *expr {
        let Some(call) = column.checked_sub(keys).and_then(|index| aggregates.get(index)) else {
            return false;
        };
        *expr = match call.function {
            AggregateFunction::Count | AggregateFunction::CountStar => Expr::Literal(Datum::Int(0)),
            _ => Expr::Literal(Datum::Null),
        };
        return true;
    }
    if matches!(expr, Expr::Outer { .. }) {
        return false;
    }
    expr.children_mut().into_iter().all(|child| replace_aggregates(child, keys, aggregates))
}
