//! The binder: turns a parsed query (sqlparser AST) into a physical plan against the catalog.
//!
//! It resolves names (42P01, 42703, 42702), types every expression with PostgreSQL's implicit
//! coercions (untyped literals and parameters take their type from context), decides access
//! paths (clustering-key or index ranges from WHERE conjuncts), join strategies (index
//! nested loop when the inner side has a usable key, else hash join on equality conjuncts,
//! else nested loop) and places aggregation, DISTINCT, ORDER BY and LIMIT.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use sqlparser::ast;

use crate::catalog::{Catalog, IndexKind, TableMeta};
use crate::depth;
use crate::error::{Result, SqlError};

/// The most parameters a statement can have: the protocol counts them in 16 bits (Bind's
/// and ParameterDescription's counts), so PostgreSQL allows at most 65,535.
pub const PARAMETERS_MAX: usize = 65_535;
use crate::functions;
use crate::plan::*;
use crate::system;
use crate::types::{self, Datum, SqlType};

/// A column visible to expressions at some point of a query.
#[derive(Clone, Debug)]
pub struct ScopeColumn {
    pub qualifier: Option<String>,
    pub name: String,
    pub ty: SqlType,
    pub table_oid: u32,
    pub attribute: i16,
    /// The right-hand column of a `JOIN ... USING`: merged into the left one, so only a
    /// qualified reference (or `alias.*`) reaches it.
    pub merged: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub columns: Vec<ScopeColumn>,
}

impl Scope {
    fn from_plan(plan: &Plan, qualifier: Option<&str>) -> Scope {
        Scope {
            columns: plan
                .columns
                .iter()
                .map(|column| ScopeColumn {
                    qualifier: qualifier.map(str::to_string),
                    name: column.name.clone(),
                    ty: column.ty.clone(),
                    table_oid: column.table_oid,
                    attribute: column.attribute,
                    merged: false,
                })
                .collect(),
        }
    }

    fn concat(&self, other: &Scope) -> Scope {
        let mut columns = self.columns.clone();
        columns.extend(other.columns.iter().cloned());
        Scope { columns }
    }

    fn find(&self, qualifier: Option<&str>, name: &str) -> Result<Option<usize>> {
        let mut found = None;
        for (index, column) in self.columns.iter().enumerate() {
            let qualifier_matches = match qualifier {
                Some(wanted) => column.qualifier.as_deref() == Some(wanted),
                None => !column.merged,
            };
            if qualifier_matches && column.name == name {
                if found.is_some() {
                    return Err(SqlError::new(
                        "42702",
                        format!("column reference \"{name}\" is ambiguous"),
                    ));
                }
                found = Some(index);
            }
        }
        Ok(found)
    }

    fn has_qualifier(&self, qualifier: &str) -> bool {
        self.columns.iter().any(|column| column.qualifier.as_deref() == Some(qualifier))
    }
}

/// Normalizes an identifier as PostgreSQL does: unquoted names fold to lower case.
pub fn ident(ident: &ast::Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The last part of a possibly schema-qualified name (`public.t`, `pg_catalog.pg_class`).
pub fn object_name(name: &ast::ObjectName) -> Result<String> {
    match name.0.last() {
        Some(ast::ObjectNamePart::Identifier(part)) => Ok(ident(part)),
        _ => Err(SqlError::syntax(format!("invalid name {name}"))),
    }
}

/// State for binding expressions above an aggregation.
struct Grouping {
    /// The input scope (rows before aggregation).
    input: Scope,
    /// GROUP BY expressions, as text (for matching) and bound.
    keys: Vec<(String, Expr, SqlType)>,
    aggregates: Vec<(String, AggregateCall)>,
}

pub struct Binder<'a> {
    catalog: &'a Catalog,
    /// Parameter types ($1 is index 0); Unknown until inferred.
    pub parameters: Vec<SqlType>,
    /// Enclosing scopes (innermost last) for correlated subqueries.
    outer: Vec<Scope>,
    /// Per subquery nesting level: whether it read an enclosing scope.
    correlated: Vec<bool>,
    ctes: Vec<HashMap<String, (ast::Query, Vec<String>)>>,
    grouping: Option<Grouping>,
    next_id: usize,
    /// The clause being bound where aggregates are not allowed ("WHERE", "JOIN conditions"),
    /// for PostgreSQL's error message.
    clause: Option<&'static str>,
    /// The locking clause of the query whose SELECT is bound next (taken by `select`).
    locking: Option<crate::locking::LockSpec>,
}

impl<'a> Binder<'a> {
    pub fn new(catalog: &'a Catalog, parameters: Vec<SqlType>) -> Binder<'a> {
        Binder {
            catalog,
            parameters,
            outer: Vec::new(),
            correlated: Vec::new(),
            ctes: Vec::new(),
            grouping: None,
            next_id: 0,
            locking: None,
            clause: None,
        }
    }

    fn id(&mut self) -> usize {
        self.next_id += 1;
        self.next_id
    }

    pub fn plan(&mut self, kind: PlanKind, columns: Vec<OutputColumn>) -> Plan {
        let id = self.id();
        Plan { kind, columns, id }
    }

    /// Parameters whose type is still unknown become text.
    pub fn finish_parameters(&mut self) -> Vec<SqlType> {
        for parameter in &mut self.parameters {
            if *parameter == SqlType::Unknown {
                *parameter = SqlType::Text;
            }
        }
        self.parameters.clone()
    }

    pub fn table(&self, name: &ast::ObjectName) -> Result<Arc<TableMeta>> {
        let table = object_name(name)?;
        self.catalog.table(&table).ok_or_else(|| SqlError::undefined_table(&table))
    }

    // ----- queries -----

    pub fn query(&mut self, query: &ast::Query) -> Result<Plan> {
        depth::check_stack_depth()?;
        let mut frame = HashMap::new();
        if let Some(with) = &query.with {
            if with.recursive {
                return Err(SqlError::unsupported("WITH RECURSIVE is not supported"));
            }
            for cte in &with.cte_tables {
                let columns = cte.alias.columns.iter().map(|column| ident(&column.name)).collect();
                frame.insert(ident(&cte.alias.name), ((*cte.query).clone(), columns));
            }
        }
        self.ctes.push(frame);
        let outcome = self.query_body(query);
        self.ctes.pop();
        outcome
    }

    fn query_body(&mut self, query: &ast::Query) -> Result<Plan> {
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
        let locking = crate::locking::LockSpec::of_query(query)?;
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
    fn output_position(&mut self, expr: &ast::Expr, scope: &Scope) -> Result<usize> {
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

    fn set_expr(&mut self, body: &ast::SetExpr) -> Result<Plan> {
        depth::check_stack_depth()?;
        match body {
            ast::SetExpr::Select(select) => self.select(select, &[]),
            ast::SetExpr::Query(query) => self.query(query),
            ast::SetExpr::Values(values) => self.values(values, None),
            ast::SetExpr::SetOperation { left, op, set_quantifier, right } => {
                let left = self.set_expr(left)?;
                let right = self.set_expr(right)?;
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
            _ => Err(SqlError::unsupported(format!("unsupported query: {body}"))),
        }
    }

    /// Wraps `plan` in a projection casting its columns to `columns`' types if they differ.
    fn cast_plan(&mut self, plan: Plan, columns: &[OutputColumn]) -> Plan {
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

    fn select(&mut self, select: &ast::Select, order_by: &[ast::OrderByExpr]) -> Result<Plan> {
        let locking = self.locking.take();
        if let Some(locking) = &locking {
            locking.check_from(&select.from)?;
        }
        let (mut plan, scope, mut conjuncts) =
            self.bind_from_where(&select.from, select.selection.as_ref())?;
        if !conjuncts.is_empty() {
            let predicate = and_all(std::mem::take(&mut conjuncts));
            plan = self.filter(plan, predicate);
        }
        if let Some(locking) = locking.filter(|_| !select.from.is_empty()) {
            // The whole WHERE clause, for the re-check of a changed row (the scan's filter
            // lacks the conjuncts its access path implies, and the pushed-down ones).
            let recheck = match &select.selection {
                Some(selection) => {
                    Some(self.clause_coerced("WHERE", selection, &scope, &SqlType::Bool)?)
                }
                None => None,
            };
            plan = self.lock_rows(plan, locking, recheck)?;
        }
        let group_exprs: Vec<&ast::Expr> = match &select.group_by {
            ast::GroupByExpr::Expressions(exprs, _) => exprs.iter().collect(),
            ast::GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
        };
        let has_aggregates = !group_exprs.is_empty()
            || select.having.is_some()
            || select.projection.iter().any(|item| match item {
                ast::SelectItem::UnnamedExpr(expr)
                | ast::SelectItem::ExprWithAlias { expr, .. } => contains_aggregate(expr),
                _ => false,
            })
            || order_by.iter().any(|item| contains_aggregate(&item.expr));

        // Select list (and, with aggregation, everything above the aggregate).
        let mut grouping_scope = scope.clone();
        if has_aggregates {
            let mut keys = Vec::new();
            for expr in &group_exprs {
                // GROUP BY may name an output column by position or alias.
                let resolved = self.resolve_group_expr(expr, &select.projection)?;
                self.clause = Some("GROUP BY");
                let outcome = self.expr(&resolved, &scope, None);
                self.clause = None;
                let (bound, ty) = outcome?;
                keys.push((resolved.to_string(), bound, ty));
            }
            self.grouping = Some(Grouping { input: scope.clone(), keys, aggregates: Vec::new() });
            grouping_scope = Scope::default();
        }
        let outcome = self.select_list(select, order_by, &grouping_scope);
        let grouping = self.grouping.take();
        let (mut items, mut names, item_types, mut sort_keys, having) = outcome?;
        if let Some(grouping) = grouping {
            let groups: Vec<Expr> = grouping.keys.iter().map(|(_, expr, _)| expr.clone()).collect();
            let mut columns: Vec<OutputColumn> = grouping
                .keys
                .iter()
                .map(|(name, _, ty)| computed_column(name, ty.clone()))
                .collect();
            let aggregates: Vec<AggregateCall> =
                grouping.aggregates.into_iter().map(|(_, call)| call).collect();
            columns
                .extend(aggregates.iter().map(|call| computed_column("agg", call.output.clone())));
            plan = self
                .plan(PlanKind::Aggregate { input: Box::new(plan), groups, aggregates }, columns);
            if let Some(having) = having {
                plan = self.filter(plan, having);
            }
        }
        let visible = items.len();
        // Sort keys that are not output columns become hidden columns.
        let mut hidden = Vec::new();
        for key in &mut sort_keys {
            if let SortTarget::Expr(expr, ty) = &key.0 {
                hidden.push((expr.clone(), ty.clone()));
                key.0 = SortTarget::Column(visible + hidden.len() - 1);
            }
        }
        let distinct = match &select.distinct {
            None | Some(ast::Distinct::All) => false,
            Some(ast::Distinct::Distinct) => true,
            Some(ast::Distinct::On(_)) => {
                return Err(SqlError::unsupported("DISTINCT ON is not supported"))
            }
        };
        if distinct && !hidden.is_empty() {
            return Err(SqlError::new(
                "42P10",
                "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
            ));
        }
        let mut output: Vec<OutputColumn> = Vec::new();
        // Output types are the binder's (a folded literal keeps its type: NULL::integer).
        for ((name, origin), ty) in names.iter().zip(&item_types) {
            let (table_oid, attribute) = origin.unwrap_or((0, 0));
            let ty = if *ty == SqlType::Unknown { SqlType::Text } else { ty.clone() };
            output.push(OutputColumn { name: name.clone(), ty, table_oid, attribute });
        }
        for (_, ty) in &hidden {
            output.push(computed_column("?sort?", ty.clone()));
        }
        items.extend(hidden.into_iter().map(|(expr, _)| expr));
        let identity = items.len() == plan.arity()
            && items
                .iter()
                .enumerate()
                .all(|(index, expr)| matches!(expr, Expr::Column(column) if *column == index));
        plan = if identity {
            let mut plan = plan;
            plan.columns = output.clone();
            plan
        } else {
            self.plan(PlanKind::Project { input: Box::new(plan), exprs: items }, output.clone())
        };
        if distinct {
            plan = self.plan(PlanKind::Distinct { input: Box::new(plan) }, output.clone());
        }
        if !sort_keys.is_empty() {
            let keys = sort_keys
                .into_iter()
                .map(|(target, options)| match target {
                    SortTarget::Column(column) => sort_key(column, &options),
                    SortTarget::Expr(..) => unreachable!("hidden sort keys were replaced above"),
                })
                .collect();
            plan = self.plan(PlanKind::Sort { input: Box::new(plan), keys }, output.clone());
        }
        if output.len() > visible {
            let exprs = (0..visible).map(Expr::Column).collect();
            names.truncate(visible);
            output.truncate(visible);
            plan = self.plan(PlanKind::Project { input: Box::new(plan), exprs }, output);
        }
        Ok(plan)
    }

    /// Puts LockRows over the table scan of a SELECT with a locking clause.
    fn lock_rows(
        &mut self,
        mut plan: Plan,
        locking: crate::locking::LockSpec,
        recheck: Option<Expr>,
    ) -> Result<Plan> {
        fn table_scan(plan: &mut Plan) -> Option<(&Arc<TableMeta>, &mut bool)> {
            match &mut plan.kind {
                PlanKind::Filter { input, .. } => table_scan(input),
                PlanKind::Scan { table, emit_key, .. } => Some((table, emit_key)),
                _ => None,
            }
        }
        let Some((table, emit_key)) = table_scan(&mut plan) else {
            return Err(SqlError::unsupported(format!(
                "{} is only supported on tables",
                locking.mode.clause()
            )));
        };
        *emit_key = true;
        let table = Arc::clone(table);
        let columns = plan.columns.clone();
        let (mode, policy) = (locking.mode, locking.policy);
        let kind = PlanKind::LockRows { input: Box::new(plan), table, mode, policy, recheck };
        Ok(self.plan(kind, columns))
    }

    fn resolve_group_expr(
        &self,
        expr: &ast::Expr,
        projection: &[ast::SelectItem],
    ) -> Result<ast::Expr> {
        if let Some(position) = literal_position(expr) {
            return match projection.get(position.wrapping_sub(1)) {
                Some(ast::SelectItem::UnnamedExpr(expr))
                | Some(ast::SelectItem::ExprWithAlias { expr, .. }) => Ok(expr.clone()),
                _ => Err(SqlError::new(
                    "42P10",
                    format!("GROUP BY position {position} is not in select list"),
                )),
            };
        }
        if let ast::Expr::Identifier(name) = expr {
            let name = ident(name);
            let is_input_column = self.grouping.is_none(); // always true here; names resolve to input first
            let _ = is_input_column;
            for item in projection {
                if let ast::SelectItem::ExprWithAlias { expr: aliased, alias } = item {
                    if ident(alias) == name && !matches!(aliased, ast::Expr::Identifier(_)) {
                        return Ok(aliased.clone());
                    }
                }
            }
        }
        Ok(expr.clone())
    }

    #[allow(clippy::type_complexity)]
    fn select_list(
        &mut self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
        scope: &Scope,
    ) -> Result<(
        Vec<Expr>,
        Vec<(String, Option<(u32, i16)>)>,
        Vec<SqlType>,
        Vec<(SortTarget, ast::OrderByOptions)>,
        Option<Expr>,
    )> {
        let input_scope = match &self.grouping {
            Some(grouping) => grouping.input.clone(),
            None => scope.clone(),
        };
        let mut items = Vec::new();
        let mut names = Vec::new();
        let mut types = Vec::new();
        let mut asts: Vec<Option<ast::Expr>> = Vec::new();
        for item in &select.projection {
            match item {
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    if self.grouping.is_some() {
                        return Err(SqlError::new(
                            "42803",
                            "SELECT * with GROUP BY is not supported",
                        ));
                    }
                    let qualifier = match item {
                        ast::SelectItem::QualifiedWildcard(
                            ast::SelectItemQualifiedWildcardKind::ObjectName(name),
                            _,
                        ) => Some(object_name(name)?),
                        _ => None,
                    };
                    let mut any = false;
                    for (index, column) in input_scope.columns.iter().enumerate() {
                        if column.name.starts_with("?") || column.merged && qualifier.is_none() {
                            continue;
                        }
                        if qualifier.is_none() || column.qualifier == qualifier {
                            items.push(Expr::Column(index));
                            names.push((
                                column.name.clone(),
                                Some((column.table_oid, column.attribute)),
                            ));
                            types.push(column.ty.clone());
                            asts.push(None);
                            any = true;
                        }
                    }
                    if !any && qualifier.is_some() {
                        return Err(SqlError::new(
                            "42P01",
                            format!(
                                "missing FROM-clause entry for table \"{}\"",
                                qualifier.unwrap_or_default()
                            ),
                        ));
                    }
                }
                ast::SelectItem::UnnamedExpr(expr) => {
                    let (bound, ty) = self.expr(expr, scope, None)?;
                    let origin = column_origin(&bound, &input_scope, self.grouping.is_some());
                    names.push((default_name(expr), origin));
                    types.push(ty);
                    items.push(bound);
                    asts.push(Some(expr.clone()));
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    let (bound, ty) = self.expr(expr, scope, None)?;
                    let origin = column_origin(&bound, &input_scope, self.grouping.is_some());
                    names.push((ident(alias), origin));
                    types.push(ty);
                    items.push(bound);
                    asts.push(Some(expr.clone()));
                }
                other => {
                    return Err(SqlError::unsupported(format!("unsupported select item {other}")))
                }
            }
        }
        let having = match &select.having {
            Some(having) => Some(self.coerced(having, scope, &SqlType::Bool)?),
            None => None,
        };
        let mut keys = Vec::new();
        for item in order_by {
            let target = if let Some(position) = literal_position(&item.expr) {
                if position == 0 || position > items.len() {
                    return Err(SqlError::new(
                        "42P10",
                        format!("ORDER BY position {position} is not in select list"),
                    ));
                }
                SortTarget::Column(position - 1)
            } else if let Some(index) =
                self.output_alias(&item.expr, &names, &asts, &input_scope)?
            {
                SortTarget::Column(index)
            } else {
                let text = item.expr.to_string();
                match asts
                    .iter()
                    .position(|candidate| candidate.as_ref().is_some_and(|c| c.to_string() == text))
                {
                    Some(index) => SortTarget::Column(index),
                    None => {
                        let (expr, ty) = self.expr(&item.expr, scope, None)?;
                        SortTarget::Expr(expr, ty)
                    }
                }
            };
            keys.push((target, item.options.clone()));
        }
        Ok((items, names, types, keys, having))
    }

    /// An ORDER BY name that is an output column alias (and not an input column, which
    /// PostgreSQL would prefer for bare names... it prefers the output name).
    fn output_alias(
        &self,
        expr: &ast::Expr,
        names: &[(String, Option<(u32, i16)>)],
        asts: &[Option<ast::Expr>],
        _input: &Scope,
    ) -> Result<Option<usize>> {
        let ast::Expr::Identifier(name) = expr else { return Ok(None) };
        let name = ident(name);
        let matches: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, (output, _))| *output == name)
            .map(|(index, _)| index)
            .collect();
        match matches.len() {
            0 => Ok(None),
            1 => Ok(Some(matches[0])),
            _ => {
                // Duplicates are fine when they are the same expression.
                let first = asts[matches[0]].as_ref().map(ToString::to_string);
                if matches
                    .iter()
                    .all(|&index| asts[index].as_ref().map(ToString::to_string) == first)
                {
                    Ok(Some(matches[0]))
                } else {
                    Err(SqlError::new("42702", format!("ORDER BY \"{name}\" is ambiguous")))
                }
            }
        }
    }

    // ----- FROM and WHERE -----

    /// Binds FROM and WHERE: pushes single-relation conjuncts down to their relation, joins
    /// relations left to right on equality conjuncts, and returns what is left to filter.
    fn bind_from_where(
        &mut self,
        from: &[ast::TableWithJoins],
        selection: Option<&ast::Expr>,
    ) -> Result<(Plan, Scope, Vec<Expr>)> {
        if from.is_empty() {
            let plan = self.plan(PlanKind::OneRow, Vec::new());
            let conjuncts = match selection {
                Some(expr) => {
                    vec![self.clause_coerced("WHERE", expr, &Scope::default(), &SqlType::Bool)?]
                }
                None => Vec::new(),
            };
            return Ok((plan, Scope::default(), conjuncts));
        }
        let mut relations = Vec::new();
        for item in from {
            relations.push(self.table_with_joins(item)?);
        }
        let mut scope = Scope::default();
        let mut bounds = Vec::new();
        for (_, relation_scope) in &relations {
            let start = scope.columns.len();
            scope = scope.concat(relation_scope);
            bounds.push((start, scope.columns.len()));
        }
        let mut conjuncts = Vec::new();
        if let Some(selection) = selection {
            let predicate = self.clause_coerced("WHERE", selection, &scope, &SqlType::Bool)?;
            split_conjuncts(predicate, &mut conjuncts);
        }
        // Push single-relation conjuncts down.
        let mut plans = Vec::new();
        for ((plan, _), &(start, end)) in relations.into_iter().zip(&bounds) {
            let mut mine = Vec::new();
            conjuncts.retain(|conjunct: &Expr| {
                if !conjunct.has_correlated_subquery() && within(conjunct, start, end) {
                    let mut moved = conjunct.clone();
                    moved.shift_columns(-isize::try_from(start).expect("fits"));
                    mine.push(moved);
                    false
                } else {
                    true
                }
            });
            let plan = if mine.is_empty() { plan } else { self.filter(plan, and_all(mine)) };
            plans.push(plan);
        }
        // Join left to right.
        let mut plans = plans.into_iter();
        let mut plan = plans.next().expect("FROM has an item");
        let mut end = bounds[0].1;
        for (right, &(_, right_end)) in plans.zip(&bounds[1..]) {
            let mut mine = Vec::new();
            conjuncts.retain(|conjunct: &Expr| {
                if !conjunct.has_correlated_subquery() && within(conjunct, 0, right_end) {
                    mine.push(conjunct.clone());
                    false
                } else {
                    true
                }
            });
            plan = self.join(plan, right, JoinKind::Inner, mine, end)?;
            end = right_end;
        }
        Ok((plan, scope, conjuncts))
    }

    fn table_with_joins(&mut self, item: &ast::TableWithJoins) -> Result<(Plan, Scope)> {
        let (mut plan, mut scope) = self.table_factor(&item.relation)?;
        for join in &item.joins {
            let (right, right_scope) = self.table_factor(&join.relation)?;
            let (kind, constraint) = match &join.join_operator {
                ast::JoinOperator::Join(constraint) | ast::JoinOperator::Inner(constraint) => {
                    (JoinKind::Inner, Some(constraint))
                }
                ast::JoinOperator::Left(constraint) | ast::JoinOperator::LeftOuter(constraint) => {
                    (JoinKind::Left, Some(constraint))
                }
                ast::JoinOperator::CrossJoin(_) => (JoinKind::Inner, None),
                other => {
                    return Err(SqlError::unsupported(
                        format!("unsupported join {other:?}").chars().take(60).collect::<String>(),
                    ))
                }
            };
            let left_width = scope.columns.len();
            let mut combined = scope.concat(&right_scope);
            let mut conjuncts = Vec::new();
            match constraint {
                Some(ast::JoinConstraint::On(on)) => {
                    let predicate =
                        self.clause_coerced("JOIN conditions", on, &combined, &SqlType::Bool)?;
                    split_conjuncts(predicate, &mut conjuncts);
                }
                Some(ast::JoinConstraint::Using(columns)) => {
                    for column in columns {
                        let name = object_name(column)?;
                        let left = scope
                            .find(None, &name)?
                            .ok_or_else(|| SqlError::undefined_column(&name))?;
                        let right = right_scope
                            .find(None, &name)?
                            .ok_or_else(|| SqlError::undefined_column(&name))?;
                        let (left_ty, right_ty) =
                            (&scope.columns[left].ty, &right_scope.columns[right].ty);
                        let (left_expr, right_expr, bpchar) = compare_operands(
                            Expr::Column(left),
                            left_ty,
                            Expr::Column(left_width + right),
                            right_ty,
                        )?;
                        conjuncts.push(Expr::Compare {
                            op: CompareOp::Eq,
                            left: Box::new(left_expr),
                            right: Box::new(right_expr),
                            bpchar,
                        });
                        combined.columns[left_width + right].merged = true;
                    }
                }
                Some(ast::JoinConstraint::Natural) => {
                    return Err(SqlError::unsupported("NATURAL JOIN"))
                }
                Some(ast::JoinConstraint::None) | None => {}
            }
            plan = self.join(plan, right, kind, conjuncts, left_width)?;
            scope = combined;
        }
        Ok((plan, scope))
    }

    fn table_factor(&mut self, factor: &ast::TableFactor) -> Result<(Plan, Scope)> {
        match factor {
            ast::TableFactor::Table { name, alias, args, .. } => {
                let table_name = object_name(name)?;
                if let Some(args) = args {
                    return self.table_function(&table_name, &args.args, alias.as_ref());
                }
                let qualifier =
                    alias.as_ref().map_or_else(|| table_name.clone(), |alias| ident(&alias.name));
                // A CTE of an enclosing WITH.
                let cte = self.ctes.iter().rev().find_map(|frame| frame.get(&table_name).cloned());
                if let (Some((query, columns)), 1) = (cte, name.0.len()) {
                    let mut plan = self.query(&query)?;
                    rename_columns(&mut plan, &columns);
                    rename_columns(&mut plan, &alias_columns(alias.as_ref()));
                    let scope = Scope::from_plan(&plan, Some(&qualifier));
                    return Ok((plan, scope));
                }
                if let Some(columns) = system::view_columns(&table_name) {
                    let mut plan =
                        self.plan(PlanKind::SystemView { name: table_name.clone() }, columns);
                    rename_columns(&mut plan, &alias_columns(alias.as_ref()));
                    let scope = Scope::from_plan(&plan, Some(&qualifier));
                    return Ok((plan, scope));
                }
                let table = self
                    .catalog
                    .table(&table_name)
                    .ok_or_else(|| SqlError::undefined_table(&table_name))?;
                let mut plan = self.scan(table);
                rename_columns(&mut plan, &alias_columns(alias.as_ref()));
                let scope = Scope::from_plan(&plan, Some(&qualifier));
                Ok((plan, scope))
            }
            ast::TableFactor::Derived { subquery, alias, lateral, .. } => {
                if *lateral {
                    return Err(SqlError::unsupported("LATERAL is not supported"));
                }
                let mut plan = self.query(subquery)?;
                rename_columns(&mut plan, &alias_columns(alias.as_ref()));
                let qualifier = alias.as_ref().map(|alias| ident(&alias.name));
                let scope = Scope::from_plan(&plan, qualifier.as_deref());
                Ok((plan, scope))
            }
            ast::TableFactor::Function { name, args, alias, .. } => {
                let name = object_name(name)?;
                self.table_function(&name, args, alias.as_ref())
            }
            ast::TableFactor::NestedJoin { table_with_joins, alias } => {
                let (plan, scope) = self.table_with_joins(table_with_joins)?;
                if let Some(alias) = alias {
                    let qualifier = ident(&alias.name);
                    let mut scope = scope;
                    for column in &mut scope.columns {
                        column.qualifier = Some(qualifier.clone());
                    }
                    return Ok((plan, scope));
                }
                Ok((plan, scope))
            }
            other => Err(SqlError::unsupported(format!("unsupported FROM item {other}"))),
        }
    }

    fn table_function(
        &mut self,
        name: &str,
        args: &[ast::FunctionArg],
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        if name != "generate_series" {
            // Statistics functions (`tierdb_stat_tier_cache()`) are system views.
            if let (Some(columns), true) = (system::view_columns(name), args.is_empty()) {
                if name.starts_with("tierdb_stat") {
                    let plan = self.plan(PlanKind::SystemView { name: name.to_string() }, columns);
                    let qualifier =
                        alias.map_or_else(|| name.to_string(), |alias| ident(&alias.name));
                    let scope = Scope::from_plan(&plan, Some(&qualifier));
                    return Ok((plan, scope));
                }
            }
            return Err(SqlError::undefined_function(name));
        }
        let empty = Scope::default();
        let mut bound = Vec::new();
        for arg in args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) = arg else {
                return Err(SqlError::syntax("generate_series takes plain arguments"));
            };
            bound.push(self.expr(expr, &empty, Some(&SqlType::Int8))?);
        }
        if bound.len() < 2 || bound.len() > 3 {
            return Err(SqlError::undefined_function("generate_series"));
        }
        let ty = if bound.iter().all(|(_, ty)| ty.is_integer() || *ty == SqlType::Unknown) {
            if bound.iter().any(|(_, ty)| *ty == SqlType::Int8) {
                SqlType::Int8
            } else {
                SqlType::Int4
            }
        } else {
            SqlType::numeric()
        };
        let mut exprs = bound
            .into_iter()
            .map(|(expr, from)| coerce(expr, &from, &ty, false))
            .collect::<Result<Vec<Expr>>>()?
            .into_iter();
        let start = exprs.next().expect("two arguments");
        let stop = exprs.next().expect("two arguments");
        let step = exprs.next();
        let qualifier =
            alias.map_or_else(|| "generate_series".to_string(), |alias| ident(&alias.name));
        let column_name = alias
            .and_then(|alias| alias.columns.first().map(|column| ident(&column.name)))
            .unwrap_or_else(|| qualifier.clone());
        let plan = self
            .plan(PlanKind::Series { start, stop, step }, vec![computed_column(&column_name, ty)]);
        let scope = Scope::from_plan(&plan, Some(&qualifier));
        Ok((plan, scope))
    }

    pub fn scan(&mut self, table: Arc<TableMeta>) -> Plan {
        let columns = table
            .columns
            .iter()
            .enumerate()
            .map(|(index, column)| OutputColumn {
                name: column.name.clone(),
                ty: column.ty.clone(),
                table_oid: table.oid,
                attribute: i16::try_from(index + 1).unwrap_or(0),
            })
            .collect();
        self.plan(
            PlanKind::Scan {
                table,
                access: Access::Full,
                filter: None,
                emit_key: false,
                backward: false,
            },
            columns,
        )
    }

    /// Adds a predicate above `plan`, merging it into a scan (and choosing its access path).
    pub fn filter(&mut self, plan: Plan, predicate: Expr) -> Plan {
        match plan.kind {
            PlanKind::Scan { table, access: Access::Full, filter, emit_key, backward } => {
                let mut conjuncts = Vec::new();
                if let Some(filter) = filter {
                    split_conjuncts(filter, &mut conjuncts);
                }
                split_conjuncts(predicate, &mut conjuncts);
                let access = choose_access(&table, &conjuncts, None);
                conjuncts.retain(|conjunct| !self.implied_by_access(&table, &access, conjunct));
                let filter = if conjuncts.is_empty() { None } else { Some(and_all(conjuncts)) };
                Plan {
                    kind: PlanKind::Scan { table, access, filter, emit_key, backward },
                    columns: plan.columns,
                    id: plan.id,
                }
            }
            kind => {
                let columns = plan.columns.clone();
                let input = Plan { kind, columns: plan.columns, id: plan.id };
                self.plan(PlanKind::Filter { input: Box::new(input), predicate }, columns)
            }
        }
    }

    /// Whether `conjunct` holds for every row `access` returns, so that the scan need not
    /// test it again (a range query otherwise evaluates its bounds once per row): a
    /// comparison of a one-column integer primary key with an integer literal or parameter
    /// that is itself the access bound. Integer keys encode in the order of their values, so
    /// the bound is exactly the predicate; other types (collations, char padding, casts,
    /// floats) and other accesses (a bound on a key prefix also admits longer keys) keep it.
    fn implied_by_access(&self, table: &TableMeta, access: &Access, conjunct: &Expr) -> bool {
        let Access::Primary { lower, upper } = access else { return false };
        let Some(key) = table.clustered_key() else { return false };
        let [column] = key.columns[..] else { return false };
        if !table.columns[column].ty.is_integer() {
            return false;
        }
        let Expr::Compare { op, left, right, bpchar: false } = conjunct else { return false };
        let (op, value) = match (left.as_ref(), right.as_ref()) {
            (Expr::Column(index), value) if *index == column => (*op, value),
            (value, Expr::Column(index)) if *index == column => (op.flip(), value),
            _ => return false,
        };
        let integer = match value {
            Expr::Literal(Datum::Int(_)) => true,
            Expr::Parameter(index) => self.parameters.get(*index).is_some_and(SqlType::is_integer),
            _ => false,
        };
        let is_bound = |bound: &Bound<Vec<Expr>>, inclusive: bool| match bound {
            Bound::Included(values) if inclusive => same_integer_value(values, value),
            Bound::Excluded(values) if !inclusive => same_integer_value(values, value),
            _ => false,
        };
        integer
            && match op {
                CompareOp::Eq => is_bound(lower, true) && is_bound(upper, true),
                CompareOp::GtEq => is_bound(lower, true),
                CompareOp::Gt => is_bound(lower, false),
                CompareOp::LtEq => is_bound(upper, true),
                CompareOp::Lt => is_bound(upper, false),
                _ => false,
            }
    }

    /// Joins `left` (columns 0..left_width) with `right` on `conjuncts` (over the combined row).
    fn join(
        &mut self,
        left: Plan,
        right: Plan,
        kind: JoinKind,
        conjuncts: Vec<Expr>,
        left_width: usize,
    ) -> Result<Plan> {
        let mut columns = left.columns.clone();
        columns.extend(right.columns.iter().cloned());
        let total = columns.len();
        let mut right_only = Vec::new();
        let mut equalities = Vec::new();
        let mut residual = Vec::new();
        for conjunct in conjuncts {
            if !conjunct.has_correlated_subquery() && within(&conjunct, left_width, total) {
                let mut moved = conjunct;
                moved.shift_columns(-isize::try_from(left_width).expect("fits"));
                right_only.push(moved);
                continue;
            }
            if let Expr::Compare { op: CompareOp::Eq, left: a, right: b, bpchar: false } = &conjunct
            {
                if within(a, 0, left_width)
                    && within(b, left_width, total)
                    && !a.has_correlated_subquery()
                {
                    equalities.push(((**a).clone(), (**b).clone()));
                    continue;
                }
                if within(b, 0, left_width)
                    && within(a, left_width, total)
                    && !b.has_correlated_subquery()
                {
                    equalities.push(((**b).clone(), (**a).clone()));
                    continue;
                }
            }
            residual.push(conjunct);
        }
        let right =
            if right_only.is_empty() { right } else { self.filter(right, and_all(right_only)) };
        let shift = -isize::try_from(left_width).expect("fits");
        // Index nested loop: the right side is a full scan of a table whose key the
        // equalities pin.
        if let PlanKind::Scan { table, access: Access::Full, .. } = &right.kind {
            let probes: Vec<Expr> = equalities
                .iter()
                .map(|(_, b)| {
                    let mut b = b.clone();
                    b.shift_columns(shift);
                    Expr::Compare {
                        op: CompareOp::Eq,
                        left: Box::new(b),
                        right: Box::new(Expr::Literal(Datum::Null)),
                        bpchar: false,
                    }
                })
                .collect();
            let _ = probes;
            let mut keyed = Vec::new();
            for (a, b) in &equalities {
                let mut b = b.clone();
                b.shift_columns(shift);
                keyed.push(Expr::Compare {
                    op: CompareOp::Eq,
                    left: Box::new(b),
                    right: Box::new(a.clone()),
                    bpchar: false,
                });
            }
            let access = choose_access(table, &keyed, Some(left_width));
            if !matches!(access, Access::Full) {
                let table = Arc::clone(table);
                let (filter, emit_key, backward, id, right_columns) = match right.kind {
                    PlanKind::Scan { filter, emit_key, backward, .. } => {
                        (filter, emit_key, backward, right.id, right.columns)
                    }
                    _ => unreachable!("matched a scan above"),
                };
                let right = Plan {
                    kind: PlanKind::Scan { table, access, filter, emit_key, backward },
                    columns: right_columns,
                    id,
                };
                let mut all_residual = residual;
                for (a, b) in equalities {
                    all_residual.push(Expr::Compare {
                        op: CompareOp::Eq,
                        left: Box::new(a),
                        right: Box::new(b),
                        bpchar: false,
                    });
                }
                let residual =
                    if all_residual.is_empty() { None } else { Some(and_all(all_residual)) };
                return Ok(self.plan(
                    PlanKind::IndexJoin {
                        left: Box::new(left),
                        right: Box::new(right),
                        kind,
                        residual,
                    },
                    columns,
                ));
            }
        }
        let residual = if residual.is_empty() { None } else { Some(and_all(residual)) };
        if equalities.is_empty() {
            return Ok(self.plan(
                PlanKind::NestedLoopJoin {
                    left: Box::new(left),
                    right: Box::new(right),
                    kind,
                    on: residual,
                },
                columns,
            ));
        }
        let (left_keys, right_keys): (Vec<Expr>, Vec<Expr>) = equalities
            .into_iter()
            .map(|(a, mut b)| {
                b.shift_columns(shift);
                (a, b)
            })
            .unzip();
        Ok(self.plan(
            PlanKind::HashJoin {
                left: Box::new(left),
                right: Box::new(right),
                kind,
                left_keys,
                right_keys,
                residual,
            },
            columns,
        ))
    }

    // ----- expressions -----

    /// Binds an expression and coerces it to `ty`.
    pub fn coerced(&mut self, expr: &ast::Expr, scope: &Scope, ty: &SqlType) -> Result<Expr> {
        let (bound, from) = self.expr(expr, scope, Some(ty))?;
        if *ty == SqlType::Bool && from != SqlType::Bool && from != SqlType::Unknown {
            return Err(SqlError::datatype_mismatch(format!(
                "argument of WHERE must be type boolean, not type {}",
                from.display_name()
            )));
        }
        coerce(bound, &from, ty, false)
    }

    /// `coerced` for a clause where aggregates are not allowed.
    fn clause_coerced(
        &mut self,
        clause: &'static str,
        expr: &ast::Expr,
        scope: &Scope,
        ty: &SqlType,
    ) -> Result<Expr> {
        let saved = self.clause.replace(clause);
        let outcome = self.coerced(expr, scope, ty);
        self.clause = saved;
        outcome
    }

    fn resolve_column(
        &mut self,
        qualifier: Option<&str>,
        name: &str,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        if let Some(grouping) = &self.grouping {
            // Above an aggregation a column must be a group key.
            let text = match qualifier {
                Some(qualifier) => format!("{qualifier}.{name}"),
                None => name.to_string(),
            };
            for (index, (key, _, ty)) in grouping.keys.iter().enumerate() {
                if key.to_lowercase() == text
                    || key.to_lowercase().rsplit('.').next() == Some(name)
                        && qualifier.is_none()
                        && key.to_lowercase() == name
                {
                    return Ok((Expr::Column(index), ty.clone()));
                }
            }
            // A key given qualified matches an unqualified use and vice versa.
            let input = grouping.input.clone();
            if let Some(position) = input.find(qualifier, name)? {
                for (index, (_, expr, ty)) in grouping.keys.iter().enumerate() {
                    if matches!(expr, Expr::Column(column) if *column == position) {
                        return Ok((Expr::Column(index), ty.clone()));
                    }
                }
                return Err(SqlError::new(
                    "42803",
                    format!(
                        "column \"{}.{}\" must appear in the GROUP BY clause or be used in an aggregate function",
                        input.columns[position].qualifier.clone().unwrap_or_default(),
                        name
                    ),
                ));
            }
        } else if let Some(index) = scope.find(qualifier, name)? {
            return Ok((Expr::Column(index), scope.columns[index].ty.clone()));
        }
        // Enclosing queries (correlated subqueries).
        for depth in 1..=self.outer.len() {
            let outer = &self.outer[self.outer.len() - depth];
            if let Some(index) = outer.find(qualifier, name)? {
                let levels = self.correlated.len();
                for level in 0..depth.min(levels) {
                    self.correlated[levels - 1 - level] = true;
                }
                return Ok((Expr::Outer { depth, index }, outer.columns[index].ty.clone()));
            }
        }
        Err(match qualifier {
            Some(qualifier) => {
                let known = scope.has_qualifier(qualifier)
                    || self.grouping.as_ref().is_some_and(|g| g.input.has_qualifier(qualifier))
                    || self.outer.iter().any(|outer| outer.has_qualifier(qualifier));
                if known {
                    SqlError::undefined_column(&format!("{qualifier}.{name}"))
                } else {
                    SqlError::new(
                        "42P01",
                        format!("missing FROM-clause entry for table \"{qualifier}\""),
                    )
                }
            }
            None => SqlError::undefined_column(name),
        })
    }

    /// Binds a subquery in the scope of the current row; returns it and whether it is
    /// correlated.
    fn subquery(&mut self, query: &ast::Query, scope: &Scope) -> Result<(Arc<Plan>, bool)> {
        let saved_grouping = self.grouping.take();
        let saved_clause = self.clause.take();
        let scope = match &saved_grouping {
            Some(grouping) => grouping.input.clone(),
            None => scope.clone(),
        };
        self.outer.push(scope);
        self.correlated.push(false);
        let outcome = self.query(query);
        let correlated = self.correlated.pop().unwrap_or(false);
        self.outer.pop();
        self.grouping = saved_grouping;
        self.clause = saved_clause;
        Ok((Arc::new(outcome?), correlated))
    }

    pub fn expr(
        &mut self,
        expr: &ast::Expr,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        depth::check_stack_depth()?;
        // Above an aggregation, a whole expression may be a GROUP BY key.
        if let Some(grouping) = &self.grouping {
            let text = expr.to_string();
            if let Some(index) = grouping.keys.iter().position(|(key, _, _)| *key == text) {
                let ty = grouping.keys[index].2.clone();
                return Ok((Expr::Column(index), ty));
            }
        }
        match expr {
            ast::Expr::Identifier(name) => self.resolve_column(None, &ident(name), scope),
            ast::Expr::CompoundIdentifier(parts) => {
                let names: Vec<String> = parts.iter().map(ident).collect();
                let (qualifier, name) = match names.as_slice() {
                    [qualifier, name] => (qualifier.clone(), name.clone()),
                    [.., qualifier, name] => (qualifier.clone(), name.clone()),
                    _ => return Err(SqlError::syntax("invalid column reference")),
                };
                self.resolve_column(Some(&qualifier), &name, scope)
            }
            ast::Expr::Value(value) => self.value(&value.value, hint),
            ast::Expr::TypedString(typed) => {
                let ty = functions::sql_type(&typed.data_type)?;
                let text = match &typed.value.value {
                    ast::Value::SingleQuotedString(text) => text.clone(),
                    other => other.to_string(),
                };
                Ok((Expr::Literal(types::parse_text(&text, &ty)?), ty))
            }
            ast::Expr::Nested(inner) => self.expr(inner, scope, hint),
            ast::Expr::Cast { expr: inner, data_type, .. } => {
                let to = functions::sql_type(data_type)?;
                if let (SqlType::Float4 | SqlType::Float8, Some(text)) =
                    (&to, number_literal(inner))
                {
                    // `1e300::float8`: the literal is read as the float it becomes.
                    let value = types::parse_float(&text, &to)?;
                    return Ok((Expr::Literal(Datum::Float(value)), to));
                }
                let (bound, from) = self.expr(inner, scope, Some(&to))?;
                Ok((coerce(bound, &from, &to, true)?, to))
            }
            ast::Expr::UnaryOp { op, expr: inner } => match op {
                ast::UnaryOperator::Not => {
                    let bound = self.coerced(inner, scope, &SqlType::Bool)?;
                    Ok((Expr::Not(Box::new(bound)), SqlType::Bool))
                }
                ast::UnaryOperator::Minus => {
                    // PostgreSQL's unary minus binds tighter than `^`: -2 ^ 2 is (-2) ^ 2.
                    if let ast::Expr::BinaryOp { op: ast::BinaryOperator::PGExp, .. } =
                        inner.as_ref()
                    {
                        return self.expr(&negate_power_base(inner), scope, hint);
                    }
                    if let ast::Expr::Value(value) = inner.as_ref() {
                        if let ast::Value::Number(text, _) = &value.value {
                            return self.number(&format!("-{text}"));
                        }
                    }
                    let (bound, ty) = self.expr(inner, scope, hint)?;
                    let ty = if ty == SqlType::Unknown { SqlType::numeric() } else { ty };
                    if !ty.is_numeric_family() {
                        return Err(SqlError::undefined_operator(format!(
                            "operator does not exist: - {}",
                            ty.display_name()
                        )));
                    }
                    Ok((Expr::Negate { expr: Box::new(bound), ty: ty.clone() }, ty))
                }
                ast::UnaryOperator::Plus => self.expr(inner, scope, hint),
                other => Err(SqlError::unsupported(format!("operator {other} is not supported"))),
            },
            ast::Expr::BinaryOp { left, op, right } => self.binary(left, op, right, scope, hint),
            ast::Expr::IsNull(inner) | ast::Expr::IsNotNull(inner) => {
                let (bound, _) = self.expr(inner, scope, None)?;
                Ok((
                    Expr::IsNull {
                        expr: Box::new(bound),
                        negated: matches!(expr, ast::Expr::IsNotNull(_)),
                    },
                    SqlType::Bool,
                ))
            }
            ast::Expr::IsTrue(inner)
            | ast::Expr::IsNotTrue(inner)
            | ast::Expr::IsFalse(inner)
            | ast::Expr::IsNotFalse(inner) => {
                let bound = self.coerced(inner, scope, &SqlType::Bool)?;
                let value = matches!(expr, ast::Expr::IsTrue(_) | ast::Expr::IsNotTrue(_));
                let negated = matches!(expr, ast::Expr::IsNotTrue(_) | ast::Expr::IsNotFalse(_));
                Ok((Expr::IsBool { expr: Box::new(bound), value, negated }, SqlType::Bool))
            }
            ast::Expr::IsDistinctFrom(left, right) | ast::Expr::IsNotDistinctFrom(left, right) => {
                let (left, right, _) = self.comparable(left, right, scope)?;
                Ok((
                    Expr::IsDistinct {
                        left: Box::new(left),
                        right: Box::new(right),
                        negated: matches!(expr, ast::Expr::IsNotDistinctFrom(..)),
                    },
                    SqlType::Bool,
                ))
            }
            ast::Expr::Between { expr: inner, negated, low, high } => {
                let (value_low, low, bpchar_low) = self.comparable(inner, low, scope)?;
                let (value_high, high, bpchar_high) = self.comparable(inner, high, scope)?;
                let range = Expr::And(
                    Box::new(Expr::Compare {
                        op: CompareOp::GtEq,
                        left: Box::new(value_low),
                        right: Box::new(low),
                        bpchar: bpchar_low,
                    }),
                    Box::new(Expr::Compare {
                        op: CompareOp::LtEq,
                        left: Box::new(value_high),
                        right: Box::new(high),
                        bpchar: bpchar_high,
                    }),
                );
                Ok((if *negated { Expr::Not(Box::new(range)) } else { range }, SqlType::Bool))
            }
            ast::Expr::InList { expr: inner, list, negated } => {
                let (value, value_ty) = self.expr(inner, scope, None)?;
                let mut items = Vec::new();
                let mut common = value_ty.clone();
                for item in list {
                    let (bound, ty) = self.expr(item, scope, Some(&value_ty))?;
                    common = SqlType::common(&common, &ty).ok_or_else(|| {
                        SqlError::undefined_operator(format!(
                            "operator does not exist: {} = {}",
                            value_ty.display_name(),
                            ty.display_name()
                        ))
                    })?;
                    items.push((bound, ty));
                }
                let common = if common == SqlType::Unknown { SqlType::Text } else { common };
                let value = coerce(value, &value_ty, &text_if_char(&common), false)?;
                let items = items
                    .into_iter()
                    .map(|(bound, ty)| coerce(bound, &ty, &text_if_char(&common), false))
                    .collect::<Result<Vec<Expr>>>()?;
                Ok((
                    Expr::InList { expr: Box::new(value), list: items, negated: *negated },
                    SqlType::Bool,
                ))
            }
            ast::Expr::InSubquery { expr: inner, subquery, negated } => {
                let (value, value_ty) = self.expr(inner, scope, None)?;
                let (plan, correlated) = self.subquery(subquery, scope)?;
                if plan.arity() != 1 {
                    return Err(SqlError::syntax("subquery has too many columns"));
                }
                let subquery_ty = plan.columns[0].ty.clone();
                let value = if value_ty == SqlType::Unknown {
                    coerce(value, &value_ty, &subquery_ty, false)?
                } else {
                    value
                };
                let id = self.id();
                Ok((
                    Expr::InSubquery {
                        expr: Box::new(value),
                        plan,
                        negated: *negated,
                        correlated,
                        id,
                    },
                    SqlType::Bool,
                ))
            }
            ast::Expr::Exists { subquery, negated } => {
                let (plan, correlated) = self.subquery(subquery, scope)?;
                let id = self.id();
                Ok((Expr::Exists { plan, negated: *negated, correlated, id }, SqlType::Bool))
            }
            ast::Expr::Subquery(query) => {
                let (plan, correlated) = self.subquery(query, scope)?;
                if plan.arity() != 1 {
                    return Err(SqlError::syntax("subquery must return only one column"));
                }
                let ty = plan.columns[0].ty.clone();
                let id = self.id();
                Ok((Expr::ScalarSubquery { plan, correlated, id }, ty))
            }
            ast::Expr::Like { negated, expr: inner, pattern, escape_char, any: false }
            | ast::Expr::ILike { negated, expr: inner, pattern, escape_char, any: false } => {
                if escape_char.is_some() {
                    return Err(SqlError::unsupported("LIKE ... ESCAPE is not supported"));
                }
                let value = self.text_arg(inner, scope)?;
                let pattern = self.text_arg(pattern, scope)?;
                Ok((
                    Expr::Like {
                        expr: Box::new(value),
                        pattern: Box::new(pattern),
                        negated: *negated,
                        case_insensitive: matches!(expr, ast::Expr::ILike { .. }),
                    },
                    SqlType::Bool,
                ))
            }
            ast::Expr::Case { operand, conditions, else_result, .. } => {
                self.case(operand.as_deref(), conditions, else_result.as_deref(), scope, hint)
            }
            ast::Expr::Function(function) => self.function(function, scope, hint),
            ast::Expr::Substring { expr: inner, substring_from, substring_for, .. } => {
                let mut args = vec![inner.as_ref().clone()];
                args.push(
                    substring_from
                        .as_deref()
                        .cloned()
                        .unwrap_or(ast::Expr::value(ast::Value::Number("1".into(), false))),
                );
                if let Some(length) = substring_for {
                    args.push(length.as_ref().clone());
                }
                self.call("substr", &args, scope)
            }
            ast::Expr::Trim { expr: inner, trim_where, trim_what, trim_characters } => {
                let name = match trim_where {
                    Some(ast::TrimWhereField::Leading) => "ltrim",
                    Some(ast::TrimWhereField::Trailing) => "rtrim",
                    _ => "btrim",
                };
                let mut args = vec![inner.as_ref().clone()];
                if let Some(what) = trim_what {
                    args.push(what.as_ref().clone());
                } else if let Some(characters) = trim_characters {
                    args.extend(characters.iter().cloned());
                }
                self.call(name, &args, scope)
            }
            ast::Expr::Position { expr: needle, r#in } => {
                self.call("strpos", &[r#in.as_ref().clone(), needle.as_ref().clone()], scope)
            }
            ast::Expr::Ceil { expr: inner, .. } => {
                self.call("ceil", &[inner.as_ref().clone()], scope)
            }
            ast::Expr::Floor { expr: inner, .. } => {
                self.call("floor", &[inner.as_ref().clone()], scope)
            }
            ast::Expr::Extract { field, expr: inner, .. } => {
                let field = ast::Expr::value(ast::Value::SingleQuotedString(
                    field.to_string().to_lowercase(),
                ));
                self.call("date_part", &[field, inner.as_ref().clone()], scope)
            }
            ast::Expr::Collate { expr: inner, .. } => self.expr(inner, scope, hint),
            ast::Expr::CompoundFieldAccess { root, access_chain } => {
                // array[index] on array text (catalog queries).
                let [ast::AccessExpr::Subscript(ast::Subscript::Index { index })] =
                    access_chain.as_slice()
                else {
                    return Err(SqlError::unsupported(format!("unsupported field access: {expr}")));
                };
                self.call("array_element", &[root.as_ref().clone(), index.clone()], scope)
            }
            ast::Expr::AnyOp { left, compare_op, right, .. } => {
                // `x = ANY (ARRAY[...])` from drivers: an IN list.
                if let (ast::BinaryOperator::Eq, ast::Expr::Array(array)) =
                    (compare_op, right.as_ref())
                {
                    let list = ast::Expr::InList {
                        expr: left.clone(),
                        list: array.elem.clone(),
                        negated: false,
                    };
                    return self.expr(&list, scope, hint);
                }
                // `x = ANY (array_text)`: membership in an array value.
                if *compare_op == ast::BinaryOperator::Eq {
                    let (value, value_ty) = self.expr(left, scope, None)?;
                    let (array, array_ty) = self.expr(right, scope, Some(&SqlType::Text))?;
                    let value = coerce(value, &value_ty, &SqlType::Text, true)?;
                    let array = coerce(array, &array_ty, &SqlType::Text, true)?;
                    let call = FunctionCall {
                        name: "array_contains".into(),
                        args: vec![array, value],
                        arg_types: vec![SqlType::Text, SqlType::Text],
                        output: SqlType::Bool,
                    };
                    return Ok((Expr::Function(call), SqlType::Bool));
                }
                Err(SqlError::unsupported("ANY with this operator is not supported"))
            }
            other => Err(SqlError::unsupported(format!("unsupported expression: {other}"))),
        }
    }

    fn text_arg(&mut self, expr: &ast::Expr, scope: &Scope) -> Result<Expr> {
        let (bound, ty) = self.expr(expr, scope, Some(&SqlType::Text))?;
        if !ty.is_text() {
            return Err(SqlError::undefined_operator(format!(
                "operator does not exist: {} ~~ text",
                ty.display_name()
            )));
        }
        coerce(bound, &ty, &SqlType::Text, false)
    }

    fn case(
        &mut self,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        otherwise: Option<&ast::Expr>,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        let operand = match operand {
            Some(operand) => Some(self.expr(operand, scope, None)?),
            None => None,
        };
        let mut branches = Vec::new();
        let mut result_ty = SqlType::Unknown;
        for when in conditions {
            let condition = match &operand {
                Some((_, operand_ty)) => {
                    let (bound, ty) = self.expr(&when.condition, scope, Some(operand_ty))?;
                    let common = SqlType::common(operand_ty, &ty).unwrap_or(operand_ty.clone());
                    (coerce(bound, &ty, &common, false)?, common)
                }
                None => (self.coerced(&when.condition, scope, &SqlType::Bool)?, SqlType::Bool),
            };
            let (result, ty) = self.expr(&when.result, scope, hint)?;
            branches.push((condition, (result, ty)));
        }
        let otherwise = match otherwise {
            Some(expr) => Some(self.expr(expr, scope, hint)?),
            None => None,
        };
        // PostgreSQL resolves the result type over ELSE first, then the THEN results.
        for ty in otherwise.iter().map(|(_, ty)| ty).chain(branches.iter().map(|(_, (_, ty))| ty)) {
            result_ty = SqlType::common(&result_ty, ty).ok_or_else(|| {
                SqlError::datatype_mismatch(format!(
                    "CASE types {} and {} cannot be matched",
                    result_ty.display_name(),
                    ty.display_name()
                ))
            })?;
        }
        if result_ty == SqlType::Unknown {
            result_ty = SqlType::Text;
        }
        let result_ty = text_if_char(&result_ty);
        let operand_expr = match operand {
            Some((expr, ty)) => {
                let common =
                    branches.first().map_or(ty.clone(), |(condition, _)| condition.1.clone());
                Some(Box::new(coerce(expr, &ty, &common, false)?))
            }
            None => None,
        };
        let branches = branches
            .into_iter()
            .map(|((condition, _), (result, ty))| {
                Ok((condition, coerce(result, &ty, &result_ty, false)?))
            })
            .collect::<Result<Vec<_>>>()?;
        let otherwise = match otherwise {
            Some((expr, ty)) => Some(Box::new(coerce(expr, &ty, &result_ty, false)?)),
            None => None,
        };
        Ok((Expr::Case { operand: operand_expr, branches, otherwise }, result_ty))
    }

    fn value(&mut self, value: &ast::Value, hint: Option<&SqlType>) -> Result<(Expr, SqlType)> {
        match value {
            ast::Value::Number(text, _) => self.number(text),
            ast::Value::SingleQuotedString(text)
            | ast::Value::EscapedStringLiteral(text)
            | ast::Value::DollarQuotedString(ast::DollarQuotedString { value: text, .. }) => {
                Ok((Expr::Literal(Datum::Text(text.clone())), SqlType::Unknown))
            }
            ast::Value::Boolean(flag) => Ok((Expr::Literal(Datum::Bool(*flag)), SqlType::Bool)),
            ast::Value::Null => Ok((Expr::Literal(Datum::Null), SqlType::Unknown)),
            ast::Value::Placeholder(text) => {
                let number: usize = text
                    .strip_prefix('$')
                    .and_then(|digits| digits.parse().ok())
                    .filter(|&number| number >= 1)
                    .ok_or_else(|| SqlError::syntax(format!("invalid parameter {text}")))?;
                if number > PARAMETERS_MAX {
                    // The parameter types grow to the highest number used: an unbounded
                    // $N would be an allocation of N entries (found by fuzzing: $2333...).
                    return Err(SqlError::new("42P02", format!("there is no parameter {text}")));
                }
                let index = number - 1;
                if index >= self.parameters.len() {
                    self.parameters.resize(index + 1, SqlType::Unknown);
                }
                if self.parameters[index] == SqlType::Unknown {
                    if let Some(hint) = hint {
                        if *hint != SqlType::Unknown {
                            self.parameters[index] = hint.clone();
                        }
                    }
                }
                Ok((Expr::Parameter(index), self.parameters[index].clone()))
            }
            other => Err(SqlError::unsupported(format!("unsupported literal {other}"))),
        }
    }

    fn number(&mut self, text: &str) -> Result<(Expr, SqlType)> {
        if let Ok(value) = text.parse::<i64>() {
            if i32::try_from(value).is_ok() {
                return Ok((Expr::Literal(Datum::Int(value)), SqlType::Int4));
            }
            return Ok((Expr::Literal(Datum::Int(value)), SqlType::Int8));
        }
        if let Ok(decimal) = types::parse_numeric(text) {
            return Ok((Expr::Literal(Datum::Numeric(decimal)), SqlType::numeric()));
        }
        // tierdb's numeric holds 28 significant digits (rust_decimal); PostgreSQL's holds far
        // more. A literal beyond that is an error rather than a silently rounded value
        // (a cast to a float type parses the literal as that type instead: see `Cast`).
        Err(SqlError::new(
            "22003",
            format!("numeric literal {text} is out of range: tierdb's numeric holds at most 28 significant digits"),
        ))
    }

    /// Binds two operands for comparison; returns them coerced and whether bpchar rules apply.
    fn comparable(
        &mut self,
        left: &ast::Expr,
        right: &ast::Expr,
        scope: &Scope,
    ) -> Result<(Expr, Expr, bool)> {
        let (left, left_ty, right, right_ty) = if is_placeholder(left) {
            let (right, right_ty) = self.expr(right, scope, None)?;
            let (left, left_ty) = self.expr(left, scope, Some(&right_ty))?;
            (left, left_ty, right, right_ty)
        } else {
            let (left, left_ty) = self.expr(left, scope, None)?;
            let (right, right_ty) = self.expr(right, scope, Some(&left_ty))?;
            (left, left_ty, right, right_ty)
        };
        compare_operands(left, &left_ty, right, &right_ty)
    }

    fn binary(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        use ast::BinaryOperator as B;
        let compare = match op {
            B::Eq => Some(CompareOp::Eq),
            B::NotEq => Some(CompareOp::NotEq),
            B::Lt => Some(CompareOp::Lt),
            B::LtEq => Some(CompareOp::LtEq),
            B::Gt => Some(CompareOp::Gt),
            B::GtEq => Some(CompareOp::GtEq),
            _ => None,
        };
        if let Some(op) = compare {
            let (left, right, bpchar) = self.comparable(left, right, scope)?;
            return Ok((
                Expr::Compare { op, left: Box::new(left), right: Box::new(right), bpchar },
                SqlType::Bool,
            ));
        }
        match op {
            B::And | B::Or => {
                // A 10,000-term OR list (ORM filters) is a 10,000-deep syntax tree: its
                // operands are bound in a loop and combined into a balanced tree, so that
                // neither binding nor evaluation recurses once per term.
                let mut operands = Vec::new();
                for operand in chain_operands(left, op, right) {
                    operands.push(self.coerced(operand, scope, &SqlType::Bool)?);
                }
                let combine = if *op == B::And { Expr::And } else { Expr::Or };
                Ok((balanced_tree(operands, combine), SqlType::Bool))
            }
            B::StringConcat => {
                let (left, left_ty) = self.expr(left, scope, Some(&SqlType::Text))?;
                let (right, right_ty) = self.expr(right, scope, Some(&SqlType::Text))?;
                let left = coerce(left, &left_ty, &SqlType::Text, true)?;
                let right = coerce(right, &right_ty, &SqlType::Text, true)?;
                Ok((Expr::Concat(Box::new(left), Box::new(right)), SqlType::Text))
            }
            B::PGLikeMatch | B::PGILikeMatch | B::PGNotLikeMatch | B::PGNotILikeMatch => {
                let value = self.text_arg(left, scope)?;
                let pattern = self.text_arg(right, scope)?;
                Ok((
                    Expr::Like {
                        expr: Box::new(value),
                        pattern: Box::new(pattern),
                        negated: matches!(op, B::PGNotLikeMatch | B::PGNotILikeMatch),
                        case_insensitive: matches!(op, B::PGILikeMatch | B::PGNotILikeMatch),
                    },
                    SqlType::Bool,
                ))
            }
            B::PGCustomBinaryOperator(parts) => {
                let symbol = parts.last().map(String::as_str).unwrap_or_default();
                let op = match symbol {
                    "~" => B::PGRegexMatch,
                    "~*" => B::PGRegexIMatch,
                    "!~" => B::PGRegexNotMatch,
                    "!~*" => B::PGRegexNotIMatch,
                    "=" => B::Eq,
                    "<>" => B::NotEq,
                    "<" => B::Lt,
                    "<=" => B::LtEq,
                    ">" => B::Gt,
                    ">=" => B::GtEq,
                    "~~" => B::PGLikeMatch,
                    other => {
                        return Err(SqlError::undefined_operator(format!(
                            "operator does not exist: {other}"
                        )))
                    }
                };
                self.binary(left, &op, right, scope, hint)
            }
            B::PGRegexMatch | B::PGRegexIMatch | B::PGRegexNotMatch | B::PGRegexNotIMatch => {
                let value = self.text_arg(left, scope)?;
                let pattern = self.text_arg(right, scope)?;
                let name = match op {
                    B::PGRegexMatch => "regex_match",
                    B::PGRegexIMatch => "regex_imatch",
                    B::PGRegexNotMatch => "regex_not_match",
                    _ => "regex_not_imatch",
                };
                Ok((
                    Expr::Function(FunctionCall {
                        name: name.into(),
                        args: vec![value, pattern],
                        arg_types: vec![SqlType::Text, SqlType::Text],
                        output: SqlType::Bool,
                    }),
                    SqlType::Bool,
                ))
            }
            B::Plus | B::Minus | B::Multiply | B::Divide | B::Modulo | B::PGExp => {
                let arithmetic = match op {
                    B::Plus => ArithmeticOp::Add,
                    B::Minus => ArithmeticOp::Subtract,
                    B::Multiply => ArithmeticOp::Multiply,
                    B::Divide => ArithmeticOp::Divide,
                    B::Modulo => ArithmeticOp::Modulo,
                    _ => ArithmeticOp::Power,
                };
                let (left, left_ty, right, right_ty) = if is_placeholder(left) {
                    let (right, right_ty) = self.expr(right, scope, hint)?;
                    let (left, left_ty) = self.expr(left, scope, Some(&right_ty))?;
                    (left, left_ty, right, right_ty)
                } else {
                    let (left, left_ty) = self.expr(left, scope, hint)?;
                    let (right, right_ty) = self.expr(right, scope, Some(&left_ty))?;
                    (left, left_ty, right, right_ty)
                };
                arithmetic_expr(arithmetic, left, &left_ty, right, &right_ty)
            }
            other => Err(SqlError::unsupported(format!("operator {other} is not supported"))),
        }
    }

    fn function(
        &mut self,
        function: &ast::Function,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        let name = object_name(&function.name)?;
        if function.over.is_some() {
            return Err(SqlError::unsupported("window functions are not supported"));
        }
        let (args, distinct, star) = match &function.args {
            ast::FunctionArguments::None => (Vec::new(), false, false),
            ast::FunctionArguments::Subquery(query) if name == "array" => {
                // ARRAY(subquery): the rows as a PostgreSQL array literal ({a,b}), text.
                let (plan, correlated) = self.subquery(query, scope)?;
                let id = self.id();
                return Ok((Expr::ArraySubquery { plan, correlated, id }, SqlType::Text));
            }
            ast::FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported("function over a subquery"))
            }
            ast::FunctionArguments::List(list) => {
                let mut args = Vec::new();
                let mut star = false;
                for arg in &list.args {
                    match arg {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) => {
                            args.push(expr.clone())
                        }
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        _ => {
                            return Err(SqlError::unsupported(format!(
                                "unsupported argument in {name}"
                            )))
                        }
                    }
                }
                let distinct =
                    matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct));
                (args, distinct, star)
            }
        };
        if let Some(aggregate) = aggregate_function(&name, star) {
            return self.aggregate(function, aggregate, &args, distinct);
        }
        if star {
            return Err(SqlError::syntax(format!("{name}(*) is not an aggregate")));
        }
        let _ = hint;
        self.call(&name, &args, scope)
    }

    fn aggregate(
        &mut self,
        function: &ast::Function,
        aggregate: AggregateFunction,
        args: &[ast::Expr],
        distinct: bool,
    ) -> Result<(Expr, SqlType)> {
        let key = function.to_string();
        let Some(grouping) = &self.grouping else {
            let place =
                self.clause.map_or_else(|| "here".to_string(), |clause| format!("in {clause}"));
            return Err(SqlError::new(
                "42803",
                format!("aggregate functions are not allowed {place}"),
            ));
        };
        if let Some(index) = grouping.aggregates.iter().position(|(existing, _)| *existing == key) {
            let position = grouping.keys.len() + index;
            let ty = grouping.aggregates[index].1.output.clone();
            return Ok((Expr::Column(position), ty));
        }
        let input_scope = grouping.input.clone();
        let saved = self.grouping.take();
        let mut bound = Vec::new();
        let mut input = SqlType::Int8;
        for (index, arg) in args.iter().enumerate() {
            let outcome = self.expr(arg, &input_scope, None);
            let (expr, ty) = match outcome {
                Ok(value) => value,
                Err(error) => {
                    self.grouping = saved;
                    return Err(error);
                }
            };
            let ty = if ty == SqlType::Unknown { SqlType::Text } else { ty };
            let expr =
                coerce(expr, &SqlType::Unknown, &ty, false).unwrap_or(expr_clone_placeholder());
            let _ = expr;
            let (expr2, _) = match self.expr(arg, &input_scope, None) {
                Ok(value) => value,
                Err(error) => {
                    self.grouping = saved;
                    return Err(error);
                }
            };
            if index == 0 {
                input = ty.clone();
            }
            bound.push(expr2);
        }
        self.grouping = saved;
        let output = match aggregate {
            AggregateFunction::CountStar | AggregateFunction::Count => SqlType::Int8,
            AggregateFunction::Sum => match &input {
                SqlType::Int2 | SqlType::Int4 => SqlType::Int8,
                SqlType::Int8 | SqlType::Numeric { .. } => SqlType::numeric(),
                SqlType::Float4 => SqlType::Float4,
                SqlType::Float8 => SqlType::Float8,
                other => {
                    return Err(SqlError::undefined_function(&format!(
                        "sum({})",
                        other.display_name()
                    )))
                }
            },
            AggregateFunction::Avg => match &input {
                ty if ty.is_integer() => SqlType::numeric(),
                SqlType::Numeric { .. } => SqlType::numeric(),
                SqlType::Float4 | SqlType::Float8 => SqlType::Float8,
                other => {
                    return Err(SqlError::undefined_function(&format!(
                        "avg({})",
                        other.display_name()
                    )))
                }
            },
            AggregateFunction::Min | AggregateFunction::Max => text_if_char(&input),
            AggregateFunction::BoolAnd | AggregateFunction::BoolOr => SqlType::Bool,
            AggregateFunction::StringAgg => SqlType::Text,
        };
        let expected_args = match aggregate {
            AggregateFunction::CountStar => 0,
            AggregateFunction::StringAgg => 2,
            _ => 1,
        };
        if bound.len() != expected_args {
            return Err(SqlError::undefined_function(&format!("{}", function.name)));
        }
        let call = AggregateCall {
            function: aggregate,
            args: bound,
            distinct,
            input,
            output: output.clone(),
        };
        let grouping = self.grouping.as_mut().expect("checked above");
        grouping.aggregates.push((key, call));
        let position = grouping.keys.len() + grouping.aggregates.len() - 1;
        Ok((Expr::Column(position), output))
    }

    fn call(&mut self, name: &str, args: &[ast::Expr], scope: &Scope) -> Result<(Expr, SqlType)> {
        let mut bound = Vec::with_capacity(args.len());
        for arg in args {
            bound.push(self.expr(arg, scope, None)?);
        }
        functions::bind_call(name, bound)
    }

    // ----- INSERT, UPDATE, DELETE helpers -----

    /// Binds a RETURNING list over the table's row.
    pub fn returning(
        &mut self,
        items: &[ast::SelectItem],
        table: &TableMeta,
    ) -> Result<(Vec<Expr>, Vec<OutputColumn>)> {
        let scan = self.scan(Arc::new(table.clone()));
        let scope = Scope::from_plan(&scan, Some(&table.name));
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        for item in items {
            match item {
                ast::SelectItem::Wildcard(_) => {
                    for (index, column) in scope.columns.iter().enumerate() {
                        exprs.push(Expr::Column(index));
                        columns.push(OutputColumn {
                            name: column.name.clone(),
                            ty: column.ty.clone(),
                            table_oid: column.table_oid,
                            attribute: column.attribute,
                        });
                    }
                }
                ast::SelectItem::UnnamedExpr(expr)
                | ast::SelectItem::ExprWithAlias { expr, .. } => {
                    let (bound, ty) = self.expr(expr, &scope, None)?;
                    let name = match item {
                        ast::SelectItem::ExprWithAlias { alias, .. } => ident(alias),
                        _ => default_name(expr),
                    };
                    let ty = if ty == SqlType::Unknown { SqlType::Text } else { ty };
                    columns.push(computed_column(&name, ty));
                    exprs.push(bound);
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "unsupported RETURNING item {other}"
                    )))
                }
            }
        }
        Ok((exprs, columns))
    }

    /// A scope over one table's columns (UPDATE/DELETE expressions).
    pub fn table_scope(&mut self, table: &Arc<TableMeta>, alias: Option<&str>) -> (Plan, Scope) {
        let plan = self.scan(Arc::clone(table));
        let scope = Scope::from_plan(&plan, Some(alias.unwrap_or(&table.name)));
        (plan, scope)
    }
}

fn expr_clone_placeholder() -> Expr {
    Expr::Literal(Datum::Null)
}

enum SortTarget {
    Column(usize),
    Expr(Expr, SqlType),
}

fn sort_key(column: usize, options: &ast::OrderByOptions) -> SortKey {
    let descending = matches!(options.sort, Some(ast::OrderBySort::Desc));
    SortKey { column, descending, nulls_first: options.nulls_first.unwrap_or(descending) }
}

/// `-(a ^ b)` as PostgreSQL parses `-a ^ b`: `(-a) ^ b` (`^` is left-associative).
fn negate_power_base(expr: &ast::Expr) -> ast::Expr {
    match expr {
        ast::Expr::BinaryOp { left, op: ast::BinaryOperator::PGExp, right } => {
            ast::Expr::BinaryOp {
                left: Box::new(negate_power_base(left)),
                op: ast::BinaryOperator::PGExp,
                right: right.clone(),
            }
        }
        other => {
            ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr: Box::new(other.clone()) }
        }
    }
}

/// The operands of a left-deep chain `a op b op c ...` of one operator, in order, found
/// without recursion.
fn chain_operands<'a>(
    left: &'a ast::Expr,
    op: &ast::BinaryOperator,
    right: &'a ast::Expr,
) -> Vec<&'a ast::Expr> {
    let mut operands = vec![right];
    let mut current = left;
    while let ast::Expr::BinaryOp { left: inner_left, op: inner_op, right: inner_right } = current {
        if inner_op != op {
            break;
        }
        operands.push(inner_right);
        current = inner_left;
    }
    operands.push(current);
    operands.reverse();
    operands
}

/// Combines the operands of an associative operator pairwise, in order, into a tree of
/// logarithmic depth.
fn balanced_tree(mut operands: Vec<Expr>, combine: fn(Box<Expr>, Box<Expr>) -> Expr) -> Expr {
    assert!(!operands.is_empty(), "a chain has operands");
    while operands.len() > 1 {
        let mut combined = Vec::with_capacity(operands.len().div_ceil(2));
        let mut pending = operands.into_iter();
        while let Some(first) = pending.next() {
            match pending.next() {
                Some(second) => combined.push(combine(Box::new(first), Box::new(second))),
                None => combined.push(first),
            }
        }
        operands = combined;
    }
    operands.pop().expect("one operand is left")
}

fn literal_position(expr: &ast::Expr) -> Option<usize> {
    match expr {
        ast::Expr::Value(value) => match &value.value {
            ast::Value::Number(text, _) => text.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// The text of a (possibly negated) number literal.
fn number_literal(expr: &ast::Expr) -> Option<String> {
    match expr {
        ast::Expr::Value(value) => match &value.value {
            ast::Value::Number(text, _) => Some(text.clone()),
            _ => None,
        },
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => {
            number_literal(expr).map(|text| format!("-{text}"))
        }
        ast::Expr::Nested(inner) => number_literal(inner),
        _ => None,
    }
}

fn is_placeholder(expr: &ast::Expr) -> bool {
    matches!(expr, ast::Expr::Value(value) if matches!(value.value, ast::Value::Placeholder(_)))
}

fn alias_columns(alias: Option<&ast::TableAlias>) -> Vec<String> {
    alias
        .map(|alias| alias.columns.iter().map(|column| ident(&column.name)).collect())
        .unwrap_or_default()
}

fn rename_columns(plan: &mut Plan, names: &[String]) {
    for (column, name) in plan.columns.iter_mut().zip(names) {
        column.name = name.clone();
    }
}

pub fn computed_column(name: &str, ty: SqlType) -> OutputColumn {
    OutputColumn { name: name.to_string(), ty, table_oid: 0, attribute: 0 }
}

fn column_origin(expr: &Expr, scope: &Scope, grouped: bool) -> Option<(u32, i16)> {
    match expr {
        Expr::Column(index) if !grouped => {
            scope.columns.get(*index).map(|column| (column.table_oid, column.attribute))
        }
        _ => None,
    }
}

/// PostgreSQL's name for an unaliased select item.
fn default_name(expr: &ast::Expr) -> String {
    match expr {
        ast::Expr::Identifier(name) => ident(name),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        ast::Expr::Function(function) => {
            object_name(&function.name).unwrap_or_else(|_| "?column?".into())
        }
        ast::Expr::Cast { expr, data_type, .. } => match expr.as_ref() {
            ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) => default_name(expr),
            ast::Expr::Value(_) => functions::sql_type(data_type)
                .map(|ty| type_column_name(&ty))
                .unwrap_or_else(|_| "?column?".into()),
            other => default_name(other),
        },
        ast::Expr::Nested(inner) => default_name(inner),
        ast::Expr::Case { .. } => "case".into(),
        ast::Expr::Exists { .. } => "exists".into(),
        ast::Expr::Subquery(query) => match query.body.as_ref() {
            ast::SetExpr::Select(select) => match select.projection.first() {
                Some(ast::SelectItem::UnnamedExpr(expr)) => default_name(expr),
                Some(ast::SelectItem::ExprWithAlias { alias, .. }) => ident(alias),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        ast::Expr::Substring { .. } => "substring".into(),
        ast::Expr::Trim { .. } => "btrim".into(),
        ast::Expr::Position { .. } => "position".into(),
        ast::Expr::Ceil { .. } => "ceil".into(),
        ast::Expr::Floor { .. } => "floor".into(),
        ast::Expr::Extract { .. } => "extract".into(),
        ast::Expr::TypedString(typed) => functions::sql_type(&typed.data_type)
            .map(|ty| type_column_name(&ty))
            .unwrap_or_else(|_| "?column?".into()),
        _ => "?column?".into(),
    }
}

fn type_column_name(ty: &SqlType) -> String {
    match ty {
        SqlType::Int2 => "int2".into(),
        SqlType::Int4 => "int4".into(),
        SqlType::Int8 => "int8".into(),
        SqlType::Float4 => "float4".into(),
        SqlType::Float8 => "float8".into(),
        SqlType::Numeric { .. } => "numeric".into(),
        SqlType::Bool => "bool".into(),
        SqlType::Varchar(_) => "varchar".into(),
        SqlType::Char(_) => "bpchar".into(),
        SqlType::Timestamp => "timestamp".into(),
        SqlType::TimestampTz => "timestamptz".into(),
        other => other.display_name(),
    }
}

fn aggregate_function(name: &str, star: bool) -> Option<AggregateFunction> {
    Some(match name {
        "count" if star => AggregateFunction::CountStar,
        "count" => AggregateFunction::Count,
        "sum" => AggregateFunction::Sum,
        "avg" => AggregateFunction::Avg,
        "min" => AggregateFunction::Min,
        "max" => AggregateFunction::Max,
        "bool_and" | "every" => AggregateFunction::BoolAnd,
        "bool_or" => AggregateFunction::BoolOr,
        "string_agg" => AggregateFunction::StringAgg,
        _ => return None,
    })
}

pub(crate) fn contains_aggregate(expr: &ast::Expr) -> bool {
    /// Finds an aggregate call of this query level (not inside a subquery, whose aggregates
    /// belong to the subquery).
    struct Finder {
        depth: usize,
        found: bool,
    }
    impl ast::Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _query: &ast::Query) -> std::ops::ControlFlow<()> {
            self.depth += 1;
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _query: &ast::Query) -> std::ops::ControlFlow<()> {
            self.depth -= 1;
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, inner: &ast::Expr) -> std::ops::ControlFlow<()> {
            if self.depth > 0 {
                return std::ops::ControlFlow::Continue(());
            }
            if let ast::Expr::Function(function) = inner {
                let star = matches!(&function.args, ast::FunctionArguments::List(list)
                    if list.args.iter().any(|arg| matches!(arg, ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard))));
                if let Ok(name) = object_name(&function.name) {
                    if function.over.is_none() && aggregate_function(&name, star).is_some() {
                        self.found = true;
                        return std::ops::ControlFlow::Break(());
                    }
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut finder = Finder { depth: 0, found: false };
    let _ = ast::Visit::visit(expr, &mut finder);
    finder.found
}

fn text_if_char(ty: &SqlType) -> SqlType {
    match ty {
        SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Name => SqlType::Text,
        other => other.clone(),
    }
}

pub fn split_conjuncts(expr: Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::And(left, right) => {
            split_conjuncts(*left, out);
            split_conjuncts(*right, out);
        }
        other => out.push(other),
    }
}

pub fn and_all(mut conjuncts: Vec<Expr>) -> Expr {
    let mut expr = conjuncts.pop().unwrap_or(Expr::Literal(Datum::Bool(true)));
    while let Some(previous) = conjuncts.pop() {
        expr = Expr::And(Box::new(previous), Box::new(expr));
    }
    expr
}

fn within(expr: &Expr, start: usize, end: usize) -> bool {
    let mut columns = Vec::new();
    expr.columns(&mut columns);
    columns.iter().all(|&column| column >= start && column < end)
}

fn cast_expr(expr: Expr, from: &SqlType, to: &SqlType, explicit: bool) -> Expr {
    if from == to {
        return expr;
    }
    Expr::Cast { expr: Box::new(expr), from: from.clone(), to: to.clone(), explicit }
}

/// Coerces a bound expression of type `from` to `to`: untyped literals are converted now
/// (so a bad literal fails at bind time, 22P02), others get a cast node.
pub fn coerce(expr: Expr, from: &SqlType, to: &SqlType, explicit: bool) -> Result<Expr> {
    if from == to
        && !matches!(
            to,
            SqlType::Char(_)
                | SqlType::Varchar(Some(_))
                | SqlType::Numeric { precision: Some(_), .. }
        )
    {
        return Ok(expr);
    }
    if *to == SqlType::Unknown {
        return Ok(expr);
    }
    match (&expr, from) {
        (Expr::Literal(Datum::Null), _) => Ok(expr),
        (Expr::Literal(Datum::Text(text)), SqlType::Unknown) => {
            let datum = if explicit {
                types::cast(Datum::Text(text.clone()), &SqlType::Text, to, true)?
            } else {
                types::parse_text(text, to)?
            };
            Ok(Expr::Literal(datum))
        }
        (Expr::Literal(datum), _) if !from.is_text() || explicit || to.is_text() => {
            if !explicit && !implicitly_castable(from, to) {
                return Err(SqlError::datatype_mismatch(format!(
                    "column is of type {} but expression is of type {}",
                    to.display_name(),
                    from.display_name()
                )));
            }
            Ok(Expr::Literal(types::cast(datum.clone(), from, to, explicit)?))
        }
        (Expr::Parameter(_), SqlType::Unknown) => {
            Ok(Expr::Cast { expr: Box::new(expr), from: SqlType::Text, to: to.clone(), explicit })
        }
        _ => {
            if !explicit && !implicitly_castable(from, to) {
                return Err(SqlError::datatype_mismatch(format!(
                    "column is of type {} but expression is of type {}",
                    to.display_name(),
                    from.display_name()
                )));
            }
            Ok(cast_expr(expr, from, to, explicit))
        }
    }
}

/// PostgreSQL's implicit and assignment casts that tierdb supports.
fn implicitly_castable(from: &SqlType, to: &SqlType) -> bool {
    if from == to || *from == SqlType::Unknown {
        return true;
    }
    if from.is_numeric_family() && to.is_numeric_family() {
        return true;
    }
    if to.is_text() {
        return true;
    }
    if from.is_temporal() && to.is_temporal() {
        return true;
    }
    false
}

fn compare_operands(
    left: Expr,
    left_ty: &SqlType,
    right: Expr,
    right_ty: &SqlType,
) -> Result<(Expr, Expr, bool)> {
    let bpchar = matches!(left_ty, SqlType::Char(_))
        && matches!(right_ty, SqlType::Char(_) | SqlType::Unknown)
        || matches!(right_ty, SqlType::Char(_)) && *left_ty == SqlType::Unknown;
    let common = SqlType::common(left_ty, right_ty).ok_or_else(|| {
        SqlError::undefined_operator(format!(
            "operator does not exist: {} = {}",
            left_ty.display_name(),
            right_ty.display_name()
        ))
    })?;
    if bpchar {
        let target = if matches!(left_ty, SqlType::Char(_)) { left_ty } else { right_ty };
        // An untyped literal compared with char(n) is padded as char(n).
        let left =
            if *left_ty == SqlType::Unknown { coerce(left, left_ty, target, true)? } else { left };
        let right = if *right_ty == SqlType::Unknown {
            coerce(right, right_ty, target, true)?
        } else {
            right
        };
        return Ok((left, right, true));
    }
    let common = match common {
        SqlType::Unknown => SqlType::Text,
        other => text_if_char(&other),
    };
    let coerce_side = |expr: Expr, ty: &SqlType| -> Result<Expr> {
        if *ty == SqlType::Unknown || matches!(ty, SqlType::Char(_)) && common == SqlType::Text {
            coerce(expr, ty, &common, false)
        } else {
            Ok(expr)
        }
    };
    Ok((coerce_side(left, left_ty)?, coerce_side(right, right_ty)?, false))
}

fn arithmetic_expr(
    op: ArithmeticOp,
    left: Expr,
    left_ty: &SqlType,
    right: Expr,
    right_ty: &SqlType,
) -> Result<(Expr, SqlType)> {
    // Dates: date + integer, date - integer, date - date.
    if *left_ty == SqlType::Date
        && (right_ty.is_integer() || *right_ty == SqlType::Unknown)
        && matches!(op, ArithmeticOp::Add | ArithmeticOp::Subtract)
    {
        let right = coerce(right, right_ty, &SqlType::Int4, false)?;
        return Ok((
            Expr::Arithmetic {
                op,
                left: Box::new(left),
                right: Box::new(right),
                ty: SqlType::Date,
            },
            SqlType::Date,
        ));
    }
    if *left_ty == SqlType::Date && *right_ty == SqlType::Date && op == ArithmeticOp::Subtract {
        return Ok((
            Expr::Arithmetic {
                op,
                left: Box::new(left),
                right: Box::new(right),
                ty: SqlType::Int4,
            },
            SqlType::Int4,
        ));
    }
    let left_known = if *left_ty == SqlType::Unknown { right_ty.clone() } else { left_ty.clone() };
    let right_known =
        if *right_ty == SqlType::Unknown { left_known.clone() } else { right_ty.clone() };
    let left_known = if left_known == SqlType::Unknown { SqlType::numeric() } else { left_known };
    let right_known =
        if right_known == SqlType::Unknown { SqlType::numeric() } else { right_known };
    let ty = if op == ArithmeticOp::Power {
        if left_known == SqlType::numeric()
            || matches!(left_known, SqlType::Numeric { .. })
            || matches!(right_known, SqlType::Numeric { .. })
        {
            if left_known.is_integer() && right_known.is_integer() {
                SqlType::Float8
            } else {
                SqlType::numeric()
            }
        } else {
            SqlType::Float8
        }
    } else {
        SqlType::arithmetic(&left_known, &right_known).ok_or_else(|| {
            SqlError::undefined_operator(format!(
                "operator does not exist: {} {} {}",
                left_ty.display_name(),
                match op {
                    ArithmeticOp::Add => "+",
                    ArithmeticOp::Subtract => "-",
                    ArithmeticOp::Multiply => "*",
                    ArithmeticOp::Divide => "/",
                    ArithmeticOp::Modulo => "%",
                    ArithmeticOp::Power => "^",
                },
                right_ty.display_name()
            ))
        })?
    };
    let ty = match ty {
        SqlType::Numeric { .. } => SqlType::numeric(),
        other => other,
    };
    let left = coerce(
        left,
        left_ty,
        &if *left_ty == SqlType::Unknown { ty.clone() } else { left_ty.clone() },
        false,
    )?;
    let right = coerce(
        right,
        right_ty,
        &if *right_ty == SqlType::Unknown { ty.clone() } else { right_ty.clone() },
        false,
    )?;
    Ok((Expr::Arithmetic { op, left: Box::new(left), right: Box::new(right), ty: ty.clone() }, ty))
}

/// Whether a one-value bound is the integer literal or parameter `value`.
fn same_integer_value(bound: &[Expr], value: &Expr) -> bool {
    match (bound, value) {
        ([Expr::Parameter(a)], Expr::Parameter(b)) => a == b,
        ([Expr::Literal(Datum::Int(a))], Expr::Literal(Datum::Int(b))) => a == b,
        _ => false,
    }
}

/// Chooses an access path for a scan of `table` from its conjuncts: the clustering key or
/// the index whose leading columns the conjuncts pin with the longest equality prefix
/// (then one range). With `probe_width`, key values may read the probe row (index joins):
/// a conjunct's other side must then only read columns below `probe_width`... expressed as
/// `Column` indexes into the probe row, while the table side is a column of the table.
pub fn choose_access(table: &TableMeta, conjuncts: &[Expr], probe_width: Option<usize>) -> Access {
    let mut best: Option<(usize, bool, Access)> = None;
    for index in &table.indexes {
        let (equal_count, access) = key_access(table, index, conjuncts, probe_width);
        let Some(access) = access else { continue };
        let clustered = index.kind == IndexKind::Clustered;
        let better = match &best {
            None => true,
            Some((count, was_clustered, _)) => {
                equal_count > *count || (equal_count == *count && clustered && !was_clustered)
            }
        };
        if better {
            best = Some((equal_count, clustered, access));
        }
    }
    best.map_or(Access::Full, |(_, _, access)| access)
}

/// For one index: how many leading columns are pinned by equalities, and the access.
fn key_access(
    table: &TableMeta,
    index: &crate::catalog::IndexMeta,
    conjuncts: &[Expr],
    probe_width: Option<usize>,
) -> (usize, Option<Access>) {
    let mut equal = Vec::new();
    let mut lower = Bound::Unbounded;
    let mut upper = Bound::Unbounded;
    for &column in &index.columns {
        let column_ty = &table.columns[column].ty;
        if let Some(value) = find_bound(conjuncts, column, column_ty, &[CompareOp::Eq], probe_width)
        {
            equal.push(value.1);
            continue;
        }
        // A range on the next column.
        for (op, value) in find_all_bounds(conjuncts, column, column_ty, probe_width) {
            match op {
                CompareOp::Gt | CompareOp::GtEq => {
                    if matches!(lower, Bound::Unbounded) {
                        let mut values = equal.clone();
                        values.push(value);
                        lower = if op == CompareOp::Gt {
                            Bound::Excluded(values)
                        } else {
                            Bound::Included(values)
                        };
                    }
                }
                CompareOp::Lt | CompareOp::LtEq => {
                    if matches!(upper, Bound::Unbounded) {
                        let mut values = equal.clone();
                        values.push(value);
                        upper = if op == CompareOp::Lt {
                            Bound::Excluded(values)
                        } else {
                            Bound::Included(values)
                        };
                    }
                }
                _ => {}
            }
        }
        break;
    }
    let equal_count = equal.len();
    if equal_count == 0 && matches!(lower, Bound::Unbounded) && matches!(upper, Bound::Unbounded) {
        return (0, None);
    }
    if equal_count > 0 {
        if matches!(lower, Bound::Unbounded) {
            lower = Bound::Included(equal.clone());
        }
        if matches!(upper, Bound::Unbounded) {
            upper = Bound::Included(equal);
        }
    }
    let access = match index.kind {
        IndexKind::Clustered => Access::Primary { lower, upper },
        IndexKind::Secondary => Access::Index { name: index.name.clone(), lower, upper },
    };
    (equal_count, Some(access))
}

fn usable_key_value(expr: &Expr, column_ty: &SqlType, probe_width: Option<usize>) -> Option<Expr> {
    let ok_columns = match probe_width {
        None => expr.is_row_independent(),
        Some(_) => {
            !expr.has_correlated_subquery()
                && !matches!(
                    expr,
                    Expr::InSubquery { .. }
                        | Expr::Exists { .. }
                        | Expr::ScalarSubquery { .. }
                        | Expr::ArraySubquery { .. }
                )
        }
    };
    if !ok_columns {
        return None;
    }
    let ty = expr_literal_type(expr);
    // Only values of the column's own storage family can be encoded as its key.
    match ty {
        Some(ty)
            if ty.key_kind() == column_ty.key_kind()
                && (ty.is_integer() == column_ty.is_integer()) => {}
        Some(_) => return None,
        None => {}
    }
    Some(expr.clone())
}

/// The type of a key value expression when it is obvious (literal, cast); None for others.
fn expr_literal_type(expr: &Expr) -> Option<SqlType> {
    match expr {
        Expr::Literal(Datum::Int(_)) => Some(SqlType::Int8),
        Expr::Literal(Datum::Float(_)) => Some(SqlType::Float8),
        Expr::Literal(Datum::Numeric(_)) => Some(SqlType::numeric()),
        Expr::Literal(Datum::Text(_)) => Some(SqlType::Text),
        Expr::Literal(Datum::Bool(_)) => Some(SqlType::Bool),
        Expr::Literal(Datum::Date(_)) => Some(SqlType::Date),
        Expr::Literal(Datum::Timestamp(_)) => Some(SqlType::Timestamp),
        Expr::Literal(Datum::TimestampTz(_)) => Some(SqlType::TimestampTz),
        Expr::Literal(Datum::Null) => Some(SqlType::Unknown),
        Expr::Cast { to, .. } => Some(to.clone()),
        Expr::Arithmetic { ty, .. } => Some(ty.clone()),
        _ => None,
    }
}

fn find_bound(
    conjuncts: &[Expr],
    column: usize,
    column_ty: &SqlType,
    ops: &[CompareOp],
    probe_width: Option<usize>,
) -> Option<(CompareOp, Expr)> {
    find_all_bounds(conjuncts, column, column_ty, probe_width)
        .into_iter()
        .find(|(op, _)| ops.contains(op))
}

fn find_all_bounds(
    conjuncts: &[Expr],
    column: usize,
    column_ty: &SqlType,
    probe_width: Option<usize>,
) -> Vec<(CompareOp, Expr)> {
    let mut found = Vec::new();
    for conjunct in conjuncts {
        let Expr::Compare { op, left, right, bpchar } = conjunct else { continue };
        if *bpchar && !matches!(column_ty, SqlType::Char(_)) {
            continue;
        }
        // With a probe row (index joins) the conjuncts are `table column = probe value`, and
        // a `Column` on the right names a probe column, not one of the table's.
        let (op, value) = match (left.as_ref(), right.as_ref()) {
            (Expr::Column(index), value) if *index == column => (*op, value),
            (value, Expr::Column(index)) if *index == column && probe_width.is_none() => {
                (op.flip(), value)
            }
            _ => continue,
        };
        if op == CompareOp::NotEq {
            continue;
        }
        if let Some(value) = usable_key_value(value, column_ty, probe_width) {
            if matches!(value, Expr::Literal(Datum::Null)) {
                continue;
            }
            found.push((op, value));
        }
    }
    found
}
