//! SELECT: the select list, grouping and aggregates, HAVING, DISTINCT, row locks.

use super::*;

/// The name of an ORDER BY expression's hidden output column (a sort key that is not in
/// the select list); `*` over a subquery skips it. Other names starting with `?` are real
/// (an unnamed expression's `?column?`).
pub(crate) const HIDDEN_SORT_COLUMN: &str = "?sort?";

impl<'a> Binder<'a> {
    pub(crate) fn select(
        &mut self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
    ) -> Result<Plan> {
        if select.into.is_some() {
            // The top-level SELECT ... INTO was made CREATE TABLE AS by the parser.
            return Err(SqlError::syntax("SELECT ... INTO is not allowed here"));
        }
        // `OVER w` of a WINDOW clause: bound as the inline window it names.
        let resolved = named_windows::resolve(select, order_by)?;
        let (select, order_by) = match &resolved {
            Some((select, order_by)) => (select, order_by.as_slice()),
            None => (select, order_by),
        };
        let keep_unknown = std::mem::take(&mut self.keep_unknown_outputs);
        // Window calls belong to this SELECT's list only (not to WHERE, nor to an enclosing
        // query's list while a subquery is bound).
        let enclosing = (self.windows.take(), self.set_calls.take());
        let outcome = self.select_with_windows(select, order_by, keep_unknown);
        (self.windows, self.set_calls) = enclosing;
        outcome
    }

    fn select_with_windows(
        &mut self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
        keep_unknown: bool,
    ) -> Result<Plan> {
        let locking = self.locking.take();
        if let Some(locking) = &locking {
            locking.check_from(&select.from)?;
        }
        let (mut plan, scope, mut conjuncts) =
            self.bind_from_where(&select.from, select.selection.as_ref())?;
        if locking.is_none() && plan.arity() == scope.columns.len() {
            (plan, conjuncts) = self.decorrelate(plan, &scope, conjuncts)?;
        }
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
        // Select list (and, with aggregation, everything above the aggregate).
        let grouped = self.bind_grouping(select, order_by, &scope)?;
        let grouped = self.group_by_correlation(select, &scope, grouped);
        let grouping_scope = if grouped { Scope::default() } else { scope };
        self.windows = Some(Vec::new());
        self.set_calls = Some(Vec::new());
        let outcome = self.select_list(select, order_by, &grouping_scope);
        let set_calls = self.set_calls.take().unwrap_or_default();
        let on = match (&select.distinct, &outcome) {
            (Some(ast::Distinct::On(exprs)), Ok((items, ..))) => {
                Some(self.distinct_on_exprs(exprs, items, &grouping_scope))
            }
            _ => None,
        };
        let grouping = self.grouping.take();
        let windows = self.windows.take().unwrap_or_default();
        let (mut items, mut names, mut item_types, mut sort_keys, having) = outcome?;
        self.correlation_outputs(select, &mut items, &mut names, &mut item_types);
        let on = on.transpose()?;
        if having.as_ref().is_some_and(has_window) {
            return Err(SqlError::new("42P20", "window functions are not allowed in HAVING"));
        }
        // Checked from the text before parsing too; here after `*` is expanded.
        if items.len() > crate::parse::limits::TARGET_LIST_ENTRIES_MAX {
            return Err(crate::parse::limits::target_list_error());
        }
        if let Some(grouping) = grouping {
            plan = self.aggregate_plan(plan, grouping, having)?;
        }
        plan = self.windows_plan(plan, windows, &mut items, &mut sort_keys);
        plan = self.project_set_plan(plan, set_calls, &mut items, &mut sort_keys);
        if let Some(on) = on {
            plan = self.distinct_on_plan(plan, on, &items, &sort_keys)?;
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
        // DISTINCT ON was planned above.
        let distinct = matches!(select.distinct, Some(ast::Distinct::Distinct));
        if distinct && !hidden.is_empty() {
            return Err(SqlError::new(
                "42P10",
                "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
            ));
        }
        let mut output = output_columns(&names, &item_types, keep_unknown && !distinct);
        for (_, ty) in &hidden {
            output.push(computed_column(HIDDEN_SORT_COLUMN, ty.clone()));
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

    /// The Window nodes of the select list's window calls over `plan`; the placeholders in
    /// `items` and the ORDER BY expressions become their columns.
    fn windows_plan(
        &mut self,
        plan: Plan,
        windows: Vec<window::PendingWindow>,
        items: &mut [Expr],
        sort_keys: &mut [(SortTarget, ast::OrderByOptions)],
    ) -> Plan {
        if windows.is_empty() {
            return plan;
        }
        let (plan, positions) = self.window_plan(plan, windows);
        items.iter_mut().for_each(|item| place_windows(item, &positions));
        for (target, _) in sort_keys.iter_mut() {
            if let SortTarget::Expr(expr, _) = target {
                place_windows(expr, &positions);
            }
        }
        plan
    }

    /// DISTINCT ON (`on`) over `plan`, in the order of the query's ORDER BY.
    fn distinct_on_plan(
        &mut self,
        plan: Plan,
        on: Vec<Expr>,
        items: &[Expr],
        sort_keys: &[(SortTarget, ast::OrderByOptions)],
    ) -> Result<Plan> {
        let order: Vec<(Expr, bool, bool)> = sort_keys
            .iter()
            .map(|(target, options)| {
                let key = sort_key(0, options);
                let expr = match target {
                    SortTarget::Column(column) => items[*column].clone(),
                    SortTarget::Expr(expr, _) => expr.clone(),
                };
                (expr, key.descending, key.nulls_first)
            })
            .collect();
        check_distinct_on_order(&on, &order)?;
        Ok(self.distinct_on(plan, on, order))
    }

    /// With GROUP BY, HAVING or an aggregate in the select list or ORDER BY: binds the
    /// grouping keys and starts the grouping state. Returns whether the SELECT aggregates.
    pub(crate) fn bind_grouping(
        &mut self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
        scope: &Scope,
    ) -> Result<bool> {
        let mut group_exprs: Vec<&ast::Expr> = match &select.group_by {
            ast::GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => {
                exprs.iter().collect()
            }
            // `GROUP BY a GROUPING SETS (...)`, `WITH ROLLUP`: not PostgreSQL's grammar.
            ast::GroupByExpr::Expressions(..) => {
                return Err(SqlError::syntax("syntax error in GROUP BY"))
            }
            ast::GroupByExpr::All(_) => {
                return Err(SqlError::syntax("syntax error at or near \"ALL\""))
            }
        };
        // GROUP BY DISTINCT (parse/group_by_quantifier.rs): duplicate sets removed.
        let distinct = match group_exprs.first().copied().and_then(is_distinct_mark) {
            Some(item) => {
                group_exprs[0] = item;
                true
            }
            None => false,
        };
        let has_aggregates = !group_exprs.is_empty()
            || select.having.is_some()
            || select.projection.iter().any(|item| match item {
                ast::SelectItem::UnnamedExpr(expr)
                | ast::SelectItem::ExprWithAlias { expr, .. } => contains_aggregate(expr),
                _ => false,
            })
            || order_by.iter().any(|item| contains_aggregate(&item.expr));

        if has_aggregates {
            if let Some(sets) = grouping_sets::grouping_sets(&group_exprs)? {
                self.bind_grouping_sets(sets, distinct, &select.projection, scope)?;
                return Ok(true);
            }
            let mut keys = Vec::new();
            for expr in &group_exprs {
                // GROUP BY may name an output column by position or alias.
                let resolved = self.resolve_group_expr(expr, &select.projection, scope)?;
                self.clause = Some("GROUP BY");
                let outcome = self.expr(&resolved, scope, None);
                self.clause = None;
                let (bound, ty) = outcome?;
                keys.push((resolved.to_string(), bound, ty));
            }
            self.grouping =
                Some(Grouping { input: scope.clone(), keys, aggregates: Vec::new(), sets: None });
        }
        Ok(has_aggregates)
    }

    /// The Aggregate node over `plan` for `grouping`, with HAVING above it.
    pub(super) fn aggregate_plan(
        &mut self,
        plan: Plan,
        grouping: Grouping,
        having: Option<Expr>,
    ) -> Result<Plan> {
        if !grouping.aggregates.is_empty() {
            self.refuse_recursive_aggregate(&plan)?;
        }
        let mut grouping = grouping;
        let (plan, groups) = match grouping.sets.take() {
            Some(sets) => self.expand_grouping_sets(plan, &mut grouping, sets),
            None => {
                let groups = grouping.keys.iter().map(|(_, expr, _)| expr.clone()).collect();
                (plan, groups)
            }
        };
        let mut columns: Vec<OutputColumn> =
            grouping.keys.iter().map(|(name, _, ty)| computed_column(name, ty.clone())).collect();
        let aggregates: Vec<AggregateCall> =
            grouping.aggregates.into_iter().map(|(_, call)| call).collect();
        columns.extend(aggregates.iter().map(|call| computed_column("agg", call.output.clone())));
        let plan =
            self.plan(PlanKind::Aggregate { input: Box::new(plan), groups, aggregates }, columns);
        Ok(match having {
            Some(having) => self.filter(plan, having),
            None => plan,
        })
    }

    /// Puts LockRows over the table scan of a SELECT with a locking clause.
    pub(crate) fn lock_rows(
        &mut self,
        mut plan: Plan,
        locking: locking::LockSpec,
        recheck: Option<Expr>,
    ) -> Result<Plan> {
        fn table_scan(plan: &mut Plan) -> Option<(&BoundTable, &mut bool)> {
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
        let table = table.clone();
        let columns = plan.columns.clone();
        let (mode, policy) = (locking.mode, locking.policy);
        let kind = PlanKind::LockRows { input: Box::new(plan), table, mode, policy, recheck };
        Ok(self.plan(kind, columns))
    }

    /// A GROUP BY item as the expression it names: an output column's by position, an
    /// output column's by alias when no input column has that name (input columns come
    /// first, as in PostgreSQL), else itself.
    pub(crate) fn resolve_group_expr(
        &self,
        expr: &ast::Expr,
        projection: &[ast::SelectItem],
        scope: &Scope,
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
            if scope.find(None, &name)?.is_none() {
                for item in projection {
                    if let ast::SelectItem::ExprWithAlias { expr: aliased, alias } = item {
                        if ident(alias) == name {
                            return Ok(aliased.clone());
                        }
                    }
                }
            }
        }
        Ok(expr.clone())
    }

    #[allow(clippy::type_complexity)]
    pub(crate) fn select_list(
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
                    for index in input_scope.wildcard_columns(qualifier.as_deref())? {
                        let column = &input_scope.columns[index];
                        items.push(Expr::Column(index));
                        names.push((
                            column.name.clone(),
                            Some((column.table_oid, column.attribute)),
                        ));
                        types.push(column.ty.clone());
                        asts.push(None);
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
    pub(crate) fn output_alias(
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
}

/// PostgreSQL's name for an unaliased select item.
pub(crate) fn default_name(expr: &ast::Expr) -> String {
    match expr {
        ast::Expr::Identifier(name) => ident(name),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        ast::Expr::Function(function) => {
            object_name(&function.name).unwrap_or_else(|_| "?column?".into())
        }
        ast::Expr::Cast { .. } => name_with_strength(expr).0,
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
        ast::Expr::IsNormalized { .. } => "is_normalized".into(),
        ast::Expr::Trim { .. } => "btrim".into(),
        ast::Expr::Position { .. } => "position".into(),
        ast::Expr::Overlay { .. } => "overlay".into(),
        ast::Expr::Ceil { .. } => "ceil".into(),
        ast::Expr::Floor { .. } => "floor".into(),
        ast::Expr::Extract { .. } => "extract".into(),
        ast::Expr::Interval(_) => "interval".into(),
        ast::Expr::Array(_) => "array".into(),
        ast::Expr::CompoundFieldAccess { root, .. } => default_name(root),
        ast::Expr::TypedString(typed) => sql_type(&typed.data_type)
            .map(|ty| type_column_name(&ty))
            .unwrap_or_else(|_| "?column?".into()),
        _ => "?column?".into(),
    }
}

/// PostgreSQL's FigureColnameInternal: a select item's name and how strongly it was chosen
/// (0 none, 1 a type's or CASE's name, 2 a column's, function's or subquery's). A cast keeps
/// its operand's name unless that is weaker than a type name: `x::regtype::text` is x,
/// `'a'::regclass::text` and `(-x)::text` are text.
fn name_with_strength(expr: &ast::Expr) -> (String, u8) {
    match expr {
        ast::Expr::Nested(inner) => name_with_strength(inner),
        ast::Expr::Cast { expr: operand, data_type, .. } => {
            let (inner, strength) = name_with_strength(operand);
            if strength > 1 {
                return (inner, strength);
            }
            (sql_type(data_type).map(|ty| type_column_name(&ty)).unwrap_or(inner), 1)
        }
        ast::Expr::Case { .. } | ast::Expr::TypedString(_) | ast::Expr::Interval(_) => {
            (default_name(expr), 1)
        }
        ast::Expr::Subquery(_) => (default_name(expr), 2),
        _ => {
            let name = default_name(expr);
            let strength = if name == "?column?" { 0 } else { 2 };
            (name, strength)
        }
    }
}

pub(crate) fn type_column_name(ty: &SqlType) -> String {
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
        SqlType::Time => "time".into(),
        // `'{1}'::int[]` is named after the element type, as PostgreSQL's last type name.
        SqlType::Array(element) => type_column_name(element),
        other => other.display_name(),
    }
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
                    let ordered_set = !function.within_group.is_empty();
                    if function.over.is_none()
                        && (ordered_set || aggregate_function(&name, star).is_some())
                    {
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

/// A SELECT's output columns: the binder's types (a folded literal keeps its type:
/// NULL::integer), an untyped literal's text unless `keep_unknown`.
fn output_columns(
    names: &[(String, Option<(u32, i16)>)],
    types: &[SqlType],
    keep_unknown: bool,
) -> Vec<OutputColumn> {
    names
        .iter()
        .zip(types)
        .map(|((name, origin), ty)| {
            let (table_oid, attribute) = origin.unwrap_or((0, 0));
            let ty = match ty {
                SqlType::Unknown if !keep_unknown => SqlType::Text,
                other => other.clone(),
            };
            OutputColumn { name: name.clone(), ty, table_oid, attribute }
        })
        .collect()
}
