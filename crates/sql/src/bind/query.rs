//! Queries: WITH, set operations (UNION/INTERSECT/EXCEPT), VALUES, ORDER BY, LIMIT.

use super::*;

impl<'a> Binder<'a> {
    pub fn query(&mut self, query: &ast::Query) -> Result<Plan> {
        depth::check_stack_depth()?;
        let frame = self.cte_frame(query.with.as_ref())?;
        self.ctes.push(frame);
        let outcome = self.query_body(query);
        self.ctes.pop();
        self.finish_query(outcome?)
    }

    /// The rewrites of a bound query's plan (JSON keys, vector indexes, column pruning).
    pub(crate) fn finish_query(&mut self, mut plan: Plan) -> Result<Plan> {
        crate::plan::refuse_json_keys(&plan)?;
        crate::plan::use_vector_indexes(&mut plan);
        crate::optimize::prune_columns(&mut plan);
        crate::optimize::fold_constants(&mut plan)?;
        Ok(plan)
    }

    pub(crate) fn query_body(&mut self, query: &ast::Query) -> Result<Plan> {
        let order_by: &[ast::OrderByExpr] = match &query.order_by {
            Some(ast::OrderBy { kind: ast::OrderByKind::Expressions(exprs), .. }) => exprs,
            Some(_) => return Err(SqlError::unsupported("ORDER BY ALL is not supported")),
            None => &[],
        };
        let (limit, offset) = match &query.limit_clause {
            Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
                (limit.as_ref(), offset.as_ref().map(|offset| &offset.value))
            }
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
                (Some(limit), Some(offset))
            }
            None => (None, None),
        };
        let fetch_count = fetch_limit(query)?;
        let limit = limit.or(fetch_count.as_ref());
        let locking = locking::LockSpec::of_query(query)?;
        let mut plan = match query.body.as_ref() {
            ast::SetExpr::Select(select) => {
                self.locking = locking;
                self.select(select, order_by)?
            }
            other => {
                let plan = self.set_expr(other)?;
                if order_by.is_empty() {
                    plan
                } else {
                    let scope = Scope::from_plan(&plan, None);
                    let mut keys = Vec::new();
                    for item in order_by {
                        let column = self.output_position(&item.expr, &scope)?;
                        keys.push(sort_key(column, &item.options));
                    }
                    let columns = plan.columns.clone();
                    self.plan(PlanKind::Sort { input: Box::new(plan), keys }, columns)
                }
            }
        };
        if limit.is_some() || offset.is_some() {
            let empty = Scope::default();
            let limit = match limit {
                Some(expr) => Some(self.coerced(expr, &empty, &SqlType::Int8)?),
                None => None,
            };
            let offset = match offset {
                Some(expr) => Some(self.coerced(expr, &empty, &SqlType::Int8)?),
                None => None,
            };
            let columns = plan.columns.clone();
            plan = self.plan(PlanKind::Limit { input: Box::new(plan), limit, offset }, columns);
        }
        Ok(plan)
    }

    /// ORDER BY over a set operation: by position or output name.
    pub(crate) fn output_position(&mut self, expr: &ast::Expr, scope: &Scope) -> Result<usize> {
        if let Some(position) = literal_position(expr) {
            if position == 0 || position > scope.columns.len() {
                return Err(SqlError::new(
                    "42P10",
                    format!("ORDER BY position {position} is not in select list"),
                ));
            }
            return Ok(position - 1);
        }
        if let ast::Expr::Identifier(name) = expr {
            if let Some(index) = scope.find(None, &ident(name))? {
                return Ok(index);
            }
        }
        Err(SqlError::unsupported("ORDER BY on a set operation must name an output column"))
    }

    pub(crate) fn set_expr(&mut self, body: &ast::SetExpr) -> Result<Plan> {
        depth::check_stack_depth()?;
        match body {
            ast::SetExpr::Select(select) => self.select(select, &[]),
            ast::SetExpr::Query(query) => self.query(query),
            ast::SetExpr::Values(values) => self.values(values, None),
            ast::SetExpr::SetOperation { left, op, set_quantifier, right } => {
                let left = self.set_operand(left)?;
                let right = self.set_operand(right)?;
                if left.arity() != right.arity() {
                    return Err(SqlError::syntax(
                        "each UNION query must have the same number of columns",
                    ));
                }
                let mut columns = left.columns.clone();
                for (column, other) in columns.iter_mut().zip(&right.columns) {
                    column.ty = SqlType::common(&column.ty, &other.ty).ok_or_else(|| {
                        SqlError::datatype_mismatch(format!(
                            "UNION types {} and {} cannot be matched",
                            column.ty.display_name(),
                            other.ty.display_name()
                        ))
                    })?;
                    if column.ty == SqlType::Unknown {
                        column.ty = SqlType::Text;
                    }
                }
                let left = self.cast_plan(left, &columns);
                let right = self.cast_plan(right, &columns);
                let all = matches!(set_quantifier, ast::SetQuantifier::All);
                // Where a recursive term may not read its working table (parse_cte.c).
                match op {
                    ast::SetOperator::Except | ast::SetOperator::Minus => {
                        self.refuse_recursive_reference(&right, "EXCEPT")?;
                        if all {
                            self.refuse_recursive_reference(&left, "EXCEPT")?;
                        }
                    }
                    ast::SetOperator::Intersect if all => {
                        self.refuse_recursive_reference(&left, "INTERSECT")?;
                        self.refuse_recursive_reference(&right, "INTERSECT")?;
                    }
                    _ => {}
                }
                match op {
                    ast::SetOperator::Union => {
                        Ok(self.plan(PlanKind::Union { inputs: vec![left, right], all }, columns))
                    }
                    ast::SetOperator::Except | ast::SetOperator::Minus => Ok(self.plan(
                        PlanKind::SetDifference {
                            left: Box::new(left),
                            right: Box::new(right),
                            intersect: false,
                            all,
                        },
                        columns,
                    )),
                    ast::SetOperator::Intersect => Ok(self.plan(
                        PlanKind::SetDifference {
                            left: Box::new(left),
                            right: Box::new(right),
                            intersect: true,
                            all,
                        },
                        columns,
                    )),
                }
            }
            // INSERT, UPDATE or DELETE under a WITH where a query is expected (PostgreSQL's
            // grammar allows them at the top level only: `Binder::statement_with`).
            body if is_data_modifying(body) => {
                Err(SqlError::syntax(format!("syntax error at or near \"{}\"", first_word(body))))
            }
            _ => Err(SqlError::unsupported(format!("unsupported query: {body}"))),
        }
    }

    /// One side of a set operation: a SELECT there leaves its untyped literals untyped, so
    /// that they take the other side's type (`SELECT 1 UNION SELECT NULL` is integer).
    fn set_operand(&mut self, operand: &ast::SetExpr) -> Result<Plan> {
        self.keep_unknown_outputs = match operand {
            ast::SetExpr::Select(_) => true,
            // A parenthesized SELECT, `SELECT 1 UNION (SELECT NULL)`; with its own ORDER BY
            // or LIMIT it is a query whose outputs are resolved, as in PostgreSQL.
            ast::SetExpr::Query(query) => {
                matches!(query.body.as_ref(), ast::SetExpr::Select(_))
                    && query.order_by.is_none()
                    && query.limit_clause.is_none()
                    && query.fetch.is_none()
            }
            _ => false,
        };
        let outcome = self.set_expr(operand);
        self.keep_unknown_outputs = false;
        outcome
    }

    /// INSERT's query: a plain SELECT leaves its untyped literals untyped, so that they take
    /// the target columns' types (`INSERT INTO t (n) SELECT '5'`, `SELECT NULL`).
    pub(crate) fn insert_query(&mut self, query: &ast::Query) -> Result<Plan> {
        // An ORDER BY resolves the outputs it sorts by to text (PostgreSQL's
        // transformSortClause); tierdb resolves them all then.
        self.keep_unknown_outputs =
            matches!(query.body.as_ref(), ast::SetExpr::Select(_)) && query.order_by.is_none();
        let outcome = self.query(query);
        self.keep_unknown_outputs = false;
        outcome
    }

    /// Wraps `plan` in a projection casting its columns to `columns`' types if they differ.
    pub(crate) fn cast_plan(&mut self, plan: Plan, columns: &[OutputColumn]) -> Plan {
        if plan.columns.iter().zip(columns).all(|(a, b)| a.ty == b.ty) {
            return plan;
        }
        let exprs = plan
            .columns
            .iter()
            .zip(columns)
            .enumerate()
            .map(|(index, (from, to))| cast_expr(Expr::Column(index), &from.ty, &to.ty, false))
            .collect();
        self.plan(PlanKind::Project { input: Box::new(plan), exprs }, columns.to_vec())
    }

    /// VALUES rows; `targets` gives the column types to coerce to (INSERT).
    pub fn values(&mut self, values: &ast::Values, targets: Option<&[SqlType]>) -> Result<Plan> {
        let empty = Scope::default();
        let width = values.rows.first().map_or(0, |row| row.len());
        let mut rows = Vec::new();
        let mut types: Vec<SqlType> = vec![SqlType::Unknown; width];
        for row in &values.rows {
            if row.len() != width {
                return Err(SqlError::syntax("VALUES lists must all be the same length"));
            }
            let mut bound = Vec::with_capacity(width);
            for (index, item) in row.iter().enumerate() {
                let hint = targets.and_then(|targets| targets.get(index));
                let (expr, ty) = self.expr(item, &empty, hint)?;
                types[index] = SqlType::common(&types[index], &ty).unwrap_or(ty.clone());
                bound.push((expr, ty));
            }
            rows.push(bound);
        }
        let types: Vec<SqlType> = types
            .into_iter()
            .enumerate()
            .map(|(index, ty)| match targets.and_then(|targets| targets.get(index)) {
                Some(target) => target.clone(),
                None if ty == SqlType::Unknown => SqlType::Text,
                None => ty,
            })
            .collect();
        let rows = rows
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .zip(&types)
                    .map(|((expr, from), to)| coerce(expr, &from, to, false))
                    .collect::<Result<Vec<Expr>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let columns = types
            .iter()
            .enumerate()
            .map(|(index, ty)| computed_column(&format!("column{}", index + 1), ty.clone()))
            .collect();
        Ok(self.plan(PlanKind::Values { rows }, columns))
    }
}

pub(crate) enum SortTarget {
    Column(usize),
    Expr(Expr, SqlType),
}

pub(crate) fn sort_key(column: usize, options: &ast::OrderByOptions) -> SortKey {
    let descending = matches!(options.sort, Some(ast::OrderBySort::Desc));
    SortKey { column, descending, nulls_first: options.nulls_first.unwrap_or(descending) }
}

pub(crate) fn literal_position(expr: &ast::Expr) -> Option<usize> {
    match expr {
        ast::Expr::Value(value) => match &value.value {
            ast::Value::Number(text, _) => text.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// `FETCH FIRST [n] ROW[S] ONLY` as the LIMIT it is (n defaults to 1). After a LIMIT it is
/// PostgreSQL's syntax error; WITH TIES is not supported (0A000), PERCENT is not PostgreSQL's.
fn fetch_limit(query: &ast::Query) -> Result<Option<ast::Expr>> {
    let Some(fetch) = &query.fetch else { return Ok(None) };
    if matches!(&query.limit_clause, Some(ast::LimitClause::LimitOffset { limit: Some(_), .. }))
        || matches!(&query.limit_clause, Some(ast::LimitClause::OffsetCommaLimit { .. }))
    {
        return Err(SqlError::syntax("syntax error at or near \"FETCH\""));
    }
    if fetch.percent {
        return Err(SqlError::syntax("syntax error at or near \"PERCENT\""));
    }
    if fetch.with_ties {
        return Err(SqlError::unsupported("FETCH FIRST ... WITH TIES is not supported"));
    }
    let one = || ast::Expr::value(ast::Value::Number("1".into(), false));
    Ok(Some(fetch.quantity.clone().unwrap_or_else(one)))
}

/// Whether a query body is INSERT, UPDATE, DELETE or MERGE: a WITH list's data-modifying
/// statement, or a data-modifying statement under a WITH.
pub(crate) fn is_data_modifying(body: &ast::SetExpr) -> bool {
    matches!(
        body,
        ast::SetExpr::Insert(_)
            | ast::SetExpr::Update(_)
            | ast::SetExpr::Delete(_)
            | ast::SetExpr::Merge(_)
    )
}

/// A data-modifying statement in a WITH list that is not the statement's own (PostgreSQL's
/// 0A000; the statement's own is bound by `Binder::statement_with`).
pub(crate) fn data_modifying_with() -> SqlError {
    SqlError::unsupported(
        "WITH clause containing a data-modifying statement must be at the top level",
    )
}

/// The first keyword of a data-modifying statement (for its syntax error).
fn first_word(body: &ast::SetExpr) -> &'static str {
    match body {
        ast::SetExpr::Insert(_) => "INSERT",
        ast::SetExpr::Update(_) => "UPDATE",
        ast::SetExpr::Delete(_) => "DELETE",
        _ => "MERGE",
    }
}
