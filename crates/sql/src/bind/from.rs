//! FROM and joins: table references, system views, table functions, join binding.

use super::*;
use crate::optimize::Estimator;

impl<'a> Binder<'a> {
    /// Binds FROM and WHERE: pushes single-relation conjuncts down to their relation, joins
    /// relations left to right on equality conjuncts, and returns what is left to filter.
    pub(crate) fn bind_from_where(
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
        let mut relations: Vec<(Plan, Scope)> = Vec::new();
        // Inner JOIN chains' ON conditions, over the FROM list's columns side by side.
        let mut conditions = Vec::new();
        for item in from {
            if let Some(chain) = self.flatten_inner_chain(item)? {
                let offset: usize = relations.iter().map(|(_, scope)| scope.columns.len()).sum();
                for mut condition in chain.conditions {
                    condition.shift_columns(isize::try_from(offset).expect("a row's width"));
                    conditions.push(condition);
                }
                relations.extend(chain.items);
                continue;
            }
            let before = (!relations.is_empty()).then(|| {
                relations.iter().fold(Scope::default(), |all, (_, scope)| all.concat(scope))
            });
            relations.push(self.bind_from_item(item, before.as_ref())?);
        }
        let (scope, predicate) = self.bind_where(&relations, selection)?;
        let predicate = self.take_correlation(from, &scope, predicate);
        let predicate = conjunction(conditions.into_iter().chain(predicate).collect());
        let (plan, conjuncts) = self.join_relations(relations, predicate)?;
        Ok((plan, scope, conjuncts))
    }

    /// The columns of FROM items side by side, and WHERE bound over them.
    pub(crate) fn bind_where(
        &mut self,
        relations: &[(Plan, Scope)],
        selection: Option<&ast::Expr>,
    ) -> Result<(Scope, Option<Expr>)> {
        let scope = relations.iter().fold(Scope::default(), |all, (_, scope)| all.concat(scope));
        let predicate = match selection {
            Some(selection) => {
                Some(self.clause_coerced("WHERE", selection, &scope, &SqlType::Bool)?)
            }
            None => None,
        };
        Ok((scope, predicate))
    }

    /// Joins bound FROM items left to right on the conjuncts of `predicate` (over their
    /// columns side by side), pushing single-relation conjuncts down to their relation;
    /// returns what is left to filter.
    pub(crate) fn join_relations(
        &mut self,
        relations: Vec<(Plan, Scope)>,
        predicate: Option<Expr>,
    ) -> Result<(Plan, Vec<Expr>)> {
        assert!(!relations.is_empty(), "a FROM list has an item");
        let mut width = 0;
        let mut bounds = Vec::new();
        for (_, relation_scope) in &relations {
            bounds.push((width, width + relation_scope.columns.len()));
            width += relation_scope.columns.len();
        }
        let mut conjuncts = Vec::new();
        if let Some(predicate) = predicate {
            split_factored(predicate, &mut conjuncts);
        }
        let lateral: Vec<bool> =
            relations.iter().map(|(plan, _)| self.lateral_items.contains(&plan.id)).collect();
        // Push single-relation conjuncts down (not into a LATERAL item: it runs with the
        // left row as an outer row, which would shift the conjunct's outer references).
        let mut plans = Vec::new();
        for (((plan, _), &(start, end)), &lateral) in
            relations.into_iter().zip(&bounds).zip(&lateral)
        {
            if lateral {
                plans.push(plan);
                continue;
            }
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
        // Join in the cheapest order found; left to right when none was searched (too many
        // items, or a LATERAL one).
        if !lateral.contains(&true) {
            match self.join_by_cost(plans, &bounds, &mut conjuncts)? {
                Ok(plan) => return Ok((plan, conjuncts)),
                Err(unsearched) => plans = unsearched,
            }
        }
        let mut plans = plans.into_iter();
        let mut plan = plans.next().expect("FROM has an item");
        let mut end = bounds[0].1;
        for ((right, &(_, right_end)), &lateral) in plans.zip(&bounds[1..]).zip(&lateral[1..]) {
            let mut mine = Vec::new();
            conjuncts.retain(|conjunct: &Expr| {
                if !conjunct.has_correlated_subquery() && within(conjunct, 0, right_end) {
                    mine.push(conjunct.clone());
                    false
                } else {
                    true
                }
            });
            plan = if lateral {
                self.lateral_join(plan, right, JoinKind::Inner, mine)
            } else {
                self.join(plan, right, JoinKind::Inner, mine, end)?
            };
            end = right_end;
        }
        Ok((plan, conjuncts))
    }

    pub(crate) fn table_with_joins(&mut self, item: &ast::TableWithJoins) -> Result<(Plan, Scope)> {
        self.bind_from_item(item, None)
    }

    /// A FROM list item; `before` is the scope of the items before it, which its LATERAL
    /// parts may read (the item is then registered in `lateral_items`).
    fn bind_from_item(
        &mut self,
        item: &ast::TableWithJoins,
        before: Option<&Scope>,
    ) -> Result<(Plan, Scope)> {
        let levels: Vec<Scope> = before.into_iter().cloned().collect();
        let (mut plan, mut scope, reads) = self.lateral_factor(&item.relation, &levels)?;
        let mut reads_before = reads.first().copied().unwrap_or(false);
        for join in &item.joins {
            let mut join_levels = levels.clone();
            join_levels.push(scope.clone());
            let (mut right, mut right_scope, reads) =
                self.lateral_factor(&join.relation, &join_levels)?;
            let mut reads_left = reads.last().copied().unwrap_or(false);
            if reads_left && refuses_lateral(&join.join_operator) {
                // PostgreSQL: the combining JOIN type must be INNER or LEFT for a LATERAL
                // reference. One that only read enclosing queries binds without the left.
                (right, right_scope) = self
                    .table_factor(&join.relation)
                    .map_err(|error| invalid_reference(error, &join_levels))?;
                reads_left = false;
            } else if before.is_some() && reads[0] {
                reads_before = true;
            }
            // RIGHT JOIN is planned as a LEFT JOIN with the sides swapped (`right_join`).
            let mut right_outer = false;
            let (kind, constraint) = match &join.join_operator {
                ast::JoinOperator::Join(constraint) | ast::JoinOperator::Inner(constraint) => {
                    (JoinKind::Inner, Some(constraint))
                }
                ast::JoinOperator::Left(constraint) | ast::JoinOperator::LeftOuter(constraint) => {
                    (JoinKind::Left, Some(constraint))
                }
                ast::JoinOperator::Right(constraint)
                | ast::JoinOperator::RightOuter(constraint) => {
                    right_outer = true;
                    (JoinKind::Left, Some(constraint))
                }
                ast::JoinOperator::FullOuter(constraint) => (JoinKind::Full, Some(constraint)),
                ast::JoinOperator::CrossJoin(_) => (JoinKind::Inner, None),
                other => {
                    return Err(SqlError::unsupported(
                        format!("unsupported join {other:?}").chars().take(60).collect::<String>(),
                    ))
                }
            };
            if kind == JoinKind::Full {
                self.refuse_recursive_reference(&plan, "an outer join")?;
                self.refuse_recursive_reference(&right, "an outer join")?;
            } else if kind == JoinKind::Left {
                let nullable = if right_outer { &plan } else { &right };
                self.refuse_recursive_reference(nullable, "an outer join")?;
            }
            let left_width = scope.columns.len();
            let mut combined = scope.concat(&right_scope);
            let nullable = match (kind, right_outer) {
                (JoinKind::Full, _) => 0..combined.columns.len(),
                (JoinKind::Left, true) => 0..left_width,
                (JoinKind::Left, false) => left_width..combined.columns.len(),
                _ => 0..0,
            };
            for column in &mut combined.columns[nullable] {
                column.nullable = true;
            }
            let mut conjuncts = Vec::new();
            let using = match constraint {
                Some(ast::JoinConstraint::On(on)) => {
                    let predicate =
                        self.clause_coerced("JOIN conditions", on, &combined, &SqlType::Bool)?;
                    split_conjuncts(predicate, &mut conjuncts);
                    Vec::new()
                }
                Some(ast::JoinConstraint::Using(columns)) => {
                    let names = columns.iter().map(object_name).collect::<Result<Vec<_>>>()?;
                    using_pairs(&names, &scope, &right_scope)?
                }
                Some(ast::JoinConstraint::Natural) => {
                    using_pairs(&natural_names(&scope, &right_scope), &scope, &right_scope)?
                }
                Some(ast::JoinConstraint::None) | None => Vec::new(),
            };
            for pair in &using {
                let (left_expr, right_expr, bpchar) = compare_operands(
                    Expr::Column(pair.left),
                    &combined.columns[pair.left].ty,
                    Expr::Column(left_width + pair.right),
                    &combined.columns[left_width + pair.right].ty,
                )?;
                conjuncts.push(Expr::Compare {
                    op: CompareOp::Eq,
                    left: Box::new(left_expr),
                    right: Box::new(right_expr),
                    bpchar,
                });
            }
            plan = if reads_left {
                self.lateral_join(plan, right, kind, conjuncts)
            } else if right_outer {
                self.right_join(plan, right, conjuncts, left_width)?
            } else {
                self.join(plan, right, kind, conjuncts, left_width)?
            };
            (plan, scope) = if using.is_empty() {
                (plan, combined)
            } else {
                let merged = match (kind, right_outer) {
                    (JoinKind::Full, _) => MergedValue::Coalesce,
                    (_, true) => MergedValue::Right,
                    (_, false) => MergedValue::Left,
                };
                self.merge_using(plan, combined, left_width, &using, merged)?
            };
        }
        if reads_before {
            self.lateral_items.push(plan.id);
        }
        Ok((plan, scope))
    }

    /// Binds `factor` to the right of FROM items whose scopes are `levels` (the FROM list's
    /// earlier items, then a JOIN chain's left side). A LATERAL subquery or a function
    /// call (LATERAL without the word, as in PostgreSQL) is bound with them as enclosing
    /// scopes, innermost last; returns per level whether it read it (a reference to a
    /// level marks the levels inside it too: all are pushed as outer rows when it runs).
    fn lateral_factor(
        &mut self,
        factor: &ast::TableFactor,
        levels: &[Scope],
    ) -> Result<(Plan, Scope, Vec<bool>)> {
        let lateral = match factor {
            ast::TableFactor::Derived { lateral, .. } => *lateral,
            ast::TableFactor::Table { args, .. } => args.is_some(),
            ast::TableFactor::Function { .. } | ast::TableFactor::UNNEST { .. } => true,
            _ => false,
        };
        if levels.is_empty() || !lateral {
            let (plan, scope) =
                self.table_factor(factor).map_err(|error| invalid_reference(error, levels))?;
            return Ok((plan, scope, vec![false; levels.len()]));
        }
        let outer_depth = self.outer.len();
        let correlated_depth = self.correlated.len();
        for level in levels {
            self.outer.push(level.clone());
            self.correlated.push(false);
        }
        let outcome = self.table_factor(factor);
        let reads = self.correlated.split_off(correlated_depth);
        self.outer.truncate(outer_depth);
        let (plan, scope) = outcome?;
        Ok((plan, scope, reads))
    }

    /// `left` joined with a LATERAL `right` that reads it (`JoinKind::Inner` or `Left`).
    fn lateral_join(
        &mut self,
        left: Plan,
        right: Plan,
        kind: JoinKind,
        conjuncts: Vec<Expr>,
    ) -> Plan {
        assert!(!kind.keeps_right(), "PostgreSQL refuses a LATERAL reference here");
        let mut columns = left.columns.clone();
        columns.extend(right.columns.iter().cloned());
        let (left, right) = (Box::new(left), Box::new(right));
        let on = conjunction(conjuncts);
        self.plan(PlanKind::LateralJoin { left, right, kind, on }, columns)
    }

    /// A join with USING (or NATURAL): the joined columns come first, once each (the left
    /// side's value, the right side's for a RIGHT JOIN, COALESCE of both for a FULL JOIN,
    /// in the common type), then every column of both sides, where the joined ones are
    /// reached only by a qualified name or `alias.*`, as in PostgreSQL.
    fn merge_using(
        &mut self,
        plan: Plan,
        mut combined: Scope,
        left_width: usize,
        using: &[UsingPair],
        merged_value: MergedValue,
    ) -> Result<(Plan, Scope)> {
        let mut exprs = Vec::with_capacity(using.len() + plan.arity());
        let mut columns = Vec::with_capacity(exprs.capacity());
        let mut merged = Scope::default();
        for pair in using {
            let right = left_width + pair.right;
            let source = if merged_value == MergedValue::Right { right } else { pair.left };
            let origin = combined.columns[source].clone();
            let other = &combined.columns[if source == right { pair.left } else { right }];
            let left_type = &combined.columns[pair.left].ty;
            let common = SqlType::common(left_type, &combined.columns[right].ty)
                .map(|common| if common == SqlType::Unknown { SqlType::Text } else { common })
                .unwrap_or_else(|| origin.ty.clone());
            let value = coerce(Expr::Column(source), &origin.ty, &common, false)?;
            let (value, table_oid, attribute) = if merged_value == MergedValue::Coalesce {
                // PostgreSQL's COALESCE(left, right): a column of neither table.
                let right_value = coerce(Expr::Column(right), &other.ty, &common, false)?;
                let present = Expr::IsNull { expr: Box::new(value.clone()), negated: true };
                let coalesced = Expr::Case {
                    operand: None,
                    branches: vec![(present, value)],
                    otherwise: Some(Box::new(right_value)),
                };
                (coalesced, 0, 0)
            } else {
                (value, origin.table_oid, origin.attribute)
            };
            exprs.push(value);
            columns.push(OutputColumn {
                name: pair.name.clone(),
                ty: common.clone(),
                table_oid,
                attribute,
            });
            merged.columns.push(ScopeColumn {
                qualifier: None,
                name: pair.name.clone(),
                ty: common,
                merged: false,
                ..origin
            });
        }
        for pair in using {
            combined.columns[pair.left].merged = true;
            combined.columns[left_width + pair.right].merged = true;
        }
        exprs.extend((0..plan.arity()).map(Expr::Column));
        columns.extend(plan.columns.iter().cloned());
        let plan = self.plan(PlanKind::Project { input: Box::new(plan), exprs }, columns);
        Ok((plan, merged.concat(&combined)))
    }

    pub(crate) fn table_factor(&mut self, factor: &ast::TableFactor) -> Result<(Plan, Scope)> {
        match factor {
            ast::TableFactor::Table { name, alias, args, sample, with_ordinality, .. } => {
                if sample.is_some() {
                    // Never a full scan in place of a sample.
                    return Err(SqlError::unsupported("TABLESAMPLE is not supported"));
                }
                if let Some(args) = args {
                    let function = self.namespace.function(name)?;
                    let found = self.table_function(&function, &args.args, alias.as_ref())?;
                    return Ok(self.with_ordinality(found, *with_ordinality, &function, alias));
                }
                let table_name = object_name(name)?;
                let qualifier =
                    alias.as_ref().map_or_else(|| table_name.clone(), |alias| ident(&alias.name));
                // A CTE of an enclosing WITH.
                if name.0.len() == 1 {
                    if let Some(mut plan) = self.cte_reference(&table_name)? {
                        rename_columns(&mut plan, &alias_columns(alias.as_ref()));
                        let scope = Scope::from_plan(&plan, Some(&qualifier));
                        return Ok((plan, scope));
                    }
                }
                let table = match self.namespace.relation(name)? {
                    Relation::View(view) => {
                        let mut columns = system::view_columns(&view).expect("resolved as a view");
                        // As PostgreSQL's catalogs: the columns name their relation (the
                        // row description's table OID, and the `tableoid` system column).
                        let oid = system::view_oid(&view).expect("a view has an OID");
                        for (position, column) in columns.iter_mut().enumerate() {
                            column.table_oid = oid;
                            column.attribute = crate::catalog::attribute_number(position);
                        }
                        let mut plan = self.plan(PlanKind::SystemView { name: view }, columns);
                        rename_columns(&mut plan, &alias_columns(alias.as_ref()));
                        let scope = Scope::from_relation(&plan, &qualifier, oid);
                        return Ok((plan, scope));
                    }
                    Relation::Table { name, .. } if self.is_sequence(&name) => {
                        return self.sequence_relation(&name, &qualifier, alias.as_ref());
                    }
                    Relation::Table { name, display } => self
                        .catalog
                        .table(&name)
                        .ok_or_else(|| SqlError::undefined_table(&display))?,
                };
                let oid = table.oid;
                let mut plan = match table.is_view() {
                    true => self.view_reference(&table)?,
                    false => self.scan(self.bind_table(table)?),
                };
                rename_columns(&mut plan, &alias_columns(alias.as_ref()));
                let scope = Scope::from_relation(&plan, &qualifier, oid);
                Ok((plan, scope))
            }
            ast::TableFactor::Derived { subquery, alias, .. } => {
                let mut plan = self.query(subquery)?;
                let qualifier = alias.as_ref().map(|alias| ident(&alias.name));
                let names = alias_columns(alias.as_ref());
                if names.len() > plan.arity() {
                    return Err(SqlError::new(
                        "42P10",
                        format!(
                            "table \"{}\" has {} columns available but {} columns specified",
                            qualifier.as_deref().unwrap_or_default(),
                            plan.arity(),
                            names.len()
                        ),
                    ));
                }
                rename_columns(&mut plan, &names);
                let scope = Scope::from_plan(&plan, qualifier.as_deref());
                Ok((plan, scope))
            }
            ast::TableFactor::Function { name, args, alias, with_ordinality, .. } => {
                let name = self.namespace.function(name)?;
                let found = self.table_function(&name, args, alias.as_ref())?;
                Ok(self.with_ordinality(found, *with_ordinality, &name, alias))
            }
            ast::TableFactor::NestedJoin { table_with_joins, alias } => {
                let (plan, scope) = self.table_with_joins(table_with_joins)?;
                if let Some(alias) = alias {
                    let qualifier = ident(&alias.name);
                    let mut scope = scope;
                    for column in &mut scope.columns {
                        column.qualifier = Some(qualifier.clone());
                    }
                    // A column list names the join's visible columns in order.
                    let names = alias_columns(Some(alias));
                    let visible = scope.columns.iter_mut().filter(|column| !column.merged);
                    for (column, name) in visible.zip(names) {
                        column.name = name;
                    }
                    return Ok((plan, scope));
                }
                Ok((plan, scope))
            }
            ast::TableFactor::UNNEST {
                alias, array_exprs, with_offset, with_ordinality, ..
            } => {
                if *with_offset {
                    return Err(SqlError::unsupported("unnest ... WITH OFFSET"));
                }
                if array_exprs.len() != 1 {
                    return Err(SqlError::unsupported("unnest of several arrays in FROM"));
                }
                let found = self.set_function_scan("unnest", array_exprs, alias.as_ref())?;
                Ok(self.with_ordinality(found, *with_ordinality, "unnest", alias))
            }
            other => Err(SqlError::unsupported(format!("unsupported FROM item {other}"))),
        }
    }

    /// A FROM function's plan and scope, WITH ORDINALITY when `numbered`: its row number
    /// appended as a bigint column named by the alias's next column name, else
    /// `ordinality`.
    fn with_ordinality(
        &mut self,
        (plan, scope): (Plan, Scope),
        numbered: bool,
        function: &str,
        alias: &Option<ast::TableAlias>,
    ) -> (Plan, Scope) {
        if !numbered {
            return (plan, scope);
        }
        let alias = alias.as_ref();
        let position = plan.arity();
        let column_name = alias
            .and_then(|alias| alias.columns.get(position).map(|column| ident(&column.name)))
            .unwrap_or_else(|| "ordinality".to_string());
        let mut columns = plan.columns.clone();
        columns.push(computed_column(&column_name, SqlType::Int8));
        let plan = self.plan(PlanKind::Ordinality { input: Box::new(plan) }, columns);
        let qualifier = alias.map_or_else(|| function.to_string(), |alias| ident(&alias.name));
        let scope = Scope::from_plan(&plan, Some(&qualifier));
        (plan, scope)
    }

    pub(crate) fn table_function(
        &mut self,
        name: &str,
        args: &[ast::FunctionArg],
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        if name == "pg_options_to_table" {
            return self.options_table(args, alias);
        }
        let json_each =
            matches!(name, "json_each" | "json_each_text" | "jsonb_each" | "jsonb_each_text");
        let json_record = super::set_functions::json_record_function(name).is_some();
        if json_each || json_record || super::set_functions::is_from_set_function(name) {
            let mut exprs = Vec::with_capacity(args.len());
            for arg in args {
                let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) = arg else {
                    return Err(SqlError::syntax(format!("{name} takes plain arguments")));
                };
                exprs.push(expr.clone());
            }
            if json_each {
                return self.json_each_scan(name, &exprs, alias);
            }
            if json_record {
                return self.json_record_scan(name, &exprs, alias);
            }
            return self.set_function_scan(name, &exprs, alias);
        }
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
            if POSTGRES_SET_FUNCTIONS.contains(&name) {
                // PostgreSQL has it; a missing function would be a silent difference.
                return Err(SqlError::unsupported(format!("{name} in FROM is not supported")));
            }
            return Err(SqlError::undefined_function(name));
        }
        let empty = Scope::default();
        let mut bound = Vec::new();
        for arg in args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) = arg else {
                return Err(SqlError::syntax("generate_series takes plain arguments"));
            };
            bound.push(self.expr(expr, &empty, None)?);
        }
        let types: Vec<SqlType> = bound.iter().map(|(_, ty)| ty.clone()).collect();
        let (targets, ty) = super::set_functions::series_types(&types)
            .ok_or_else(|| crate::functions::no_function("generate_series", &types))?;
        let mut exprs = bound
            .into_iter()
            .zip(&targets)
            .map(|((expr, from), to)| coerce(expr, &from, to, false))
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

    pub fn scan(&mut self, table: BoundTable) -> Plan {
        let columns = relation_columns(&table);
        self.plan(
            PlanKind::Scan {
                table,
                access: Access::Full,
                filter: None,
                emit_key: false,
                backward: false,
                projection: None,
            },
            columns,
        )
    }

    /// Adds a predicate above `plan`, merging it into a scan (and choosing its access path).
    pub fn filter(&mut self, plan: Plan, predicate: Expr) -> Plan {
        match plan.kind {
            PlanKind::Scan {
                table,
                access: Access::Full,
                filter,
                emit_key,
                backward,
                projection,
            } => {
                let mut conjuncts = Vec::new();
                if let Some(filter) = filter {
                    split_conjuncts(filter, &mut conjuncts);
                }
                split_conjuncts(predicate, &mut conjuncts);
                let (mut access, filter) = scan_access(&table, conjuncts, &self.parameters);
                let estimator = Estimator { catalog: self.catalog, evaluator: self.evaluator };
                if estimator.full_scan_is_cheaper(&table, &access, filter.as_ref()) {
                    // Every conjunct a secondary index or key list bounds stays in the filter.
                    access = Access::Full;
                }
                Plan {
                    kind: PlanKind::Scan { table, access, filter, emit_key, backward, projection },
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

    /// Joins `left` (columns 0..left_width) with `right` on `conjuncts` (over the combined row).
    /// `left RIGHT JOIN right ON conjuncts` (conjuncts over left's columns then right's): a
    /// LEFT JOIN of right with left, then a projection back to left's columns then right's.
    fn right_join(
        &mut self,
        left: Plan,
        right: Plan,
        mut conjuncts: Vec<Expr>,
        left_width: usize,
    ) -> Result<Plan> {
        if conjuncts.iter().any(Expr::has_correlated_subquery) {
            // Such a subquery reads the joined row by position, which the swap reorders.
            return Err(SqlError::unsupported(
                "RIGHT JOIN with a correlated subquery in its condition is not supported",
            ));
        }
        let right_width = right.arity();
        let swap = |column: usize| {
            if column < left_width {
                right_width + column
            } else {
                column - left_width
            }
        };
        for conjunct in &mut conjuncts {
            conjunct.map_columns(&mut |column| swap(column));
        }
        let mut columns = left.columns.clone();
        columns.extend(right.columns.iter().cloned());
        let swapped = self.join(right, left, JoinKind::Left, conjuncts, right_width)?;
        let exprs =
            (0..left_width + right_width).map(|column| Expr::Column(swap(column))).collect();
        Ok(self.plan(PlanKind::Project { input: Box::new(swapped), exprs }, columns))
    }

    pub(crate) fn join(
        &mut self,
        left: Plan,
        right: Plan,
        kind: JoinKind,
        conjuncts: Vec<Expr>,
        left_width: usize,
    ) -> Result<Plan> {
        self.join_by(left, right, kind, conjuncts, left_width, true)
    }

    /// `join`, reading the right side by index lookups only when `lookups` allows (the
    /// cost-based order chose a hash join otherwise).
    pub(crate) fn join_by(
        &mut self,
        left: Plan,
        right: Plan,
        kind: JoinKind,
        conjuncts: Vec<Expr>,
        left_width: usize,
        lookups: bool,
    ) -> Result<Plan> {
        let mut columns = left.columns.clone();
        columns.extend(right.columns.iter().cloned());
        if kind == JoinKind::Full {
            return self.full_join(left, right, conjuncts, left_width, columns);
        }
        let JoinConjuncts { right_only, equalities, residual } =
            split_join_conjuncts(conjuncts, left_width, columns.len());
        let right =
            if right_only.is_empty() { right } else { self.filter(right, and_all(right_only)) };
        let (left, right) = (Box::new(left), Box::new(right));
        // Index nested loop: the inner side is a table whose key the equalities pin.
        let inner =
            if lookups { index_lookup_inner(right, &equalities, left_width) } else { Err(right) };
        let right = match inner {
            Ok(right) => {
                let mut all_residual = residual;
                all_residual.extend(equality_conditions(equalities));
                let residual = conjunction(all_residual);
                return Ok(self.plan(PlanKind::IndexJoin { left, right, kind, residual }, columns));
            }
            Err(right) => right,
        };
        let residual = conjunction(residual);
        if equalities.is_empty() {
            return Ok(
                self.plan(PlanKind::NestedLoopJoin { left, right, kind, on: residual }, columns)
            );
        }
        let (left_keys, right_keys) = hash_keys(equalities, left_width);
        let join = PlanKind::HashJoin { left, right, kind, left_keys, right_keys, residual };
        Ok(self.plan(join, columns))
    }

    /// FULL JOIN: a hash join on the equalities between the sides, the other conjuncts
    /// tested on each pair (no conjunct filters a side before the join: its rows are
    /// emitted unmatched instead). Without an equality only a condition reading no column
    /// (`ON true`) is joined, by a nested loop; PostgreSQL refuses the rest.
    fn full_join(
        &mut self,
        left: Plan,
        right: Plan,
        conjuncts: Vec<Expr>,
        left_width: usize,
        columns: Vec<OutputColumn>,
    ) -> Result<Plan> {
        let JoinConjuncts { right_only, equalities, mut residual } =
            split_join_conjuncts(conjuncts, left_width, columns.len());
        for mut conjunct in right_only {
            conjunct.shift_columns(isize::try_from(left_width).expect("a width fits isize"));
            residual.push(conjunct);
        }
        let (left, right) = (Box::new(left), Box::new(right));
        if equalities.is_empty() {
            let reads_row = residual.iter().any(|conjunct| {
                let mut read = Vec::new();
                conjunct.columns(&mut read);
                !read.is_empty() || conjunct.has_correlated_subquery()
            });
            if reads_row {
                return Err(SqlError::unsupported(
                    "FULL JOIN is only supported with merge-joinable or hash-joinable join conditions",
                ));
            }
            let on = conjunction(residual);
            let kind = JoinKind::Full;
            return Ok(self.plan(PlanKind::NestedLoopJoin { left, right, kind, on }, columns));
        }
        let (left_keys, right_keys) = hash_keys(equalities, left_width);
        let residual = conjunction(residual);
        let kind = JoinKind::Full;
        let join = PlanKind::HashJoin { left, right, kind, left_keys, right_keys, residual };
        Ok(self.plan(join, columns))
    }

    // ----- expressions -----
}

/// PostgreSQL's set-returning functions tierdb does not run in FROM (0A000 there, not
/// 42883).
const POSTGRES_SET_FUNCTIONS: &[&str] =
    &["json_populate_recordset", "jsonb_populate_recordset", "string_to_table"];

/// Whether a LATERAL reference to the left side is refused for this join (RIGHT, FULL).
fn refuses_lateral(operator: &ast::JoinOperator) -> bool {
    matches!(
        operator,
        ast::JoinOperator::Right(_)
            | ast::JoinOperator::RightOuter(_)
            | ast::JoinOperator::FullOuter(_)
    )
}

/// PostgreSQL's 42P01 for a FROM item that names an item before it without LATERAL:
/// `missing FROM-clause entry` becomes `invalid reference to FROM-clause entry` when one
/// of `levels` has that name.
fn invalid_reference(error: SqlError, levels: &[Scope]) -> SqlError {
    let prefix = "missing FROM-clause entry for table \"";
    let Some(name) = error.message.strip_prefix(prefix).and_then(|rest| rest.strip_suffix('"'))
    else {
        return error;
    };
    if error.sqlstate != "42P01" || !levels.iter().any(|level| level.has_qualifier(name)) {
        return error;
    }
    SqlError::new("42P01", format!("invalid reference to FROM-clause entry for table \"{name}\""))
}

/// Where a USING column's merged value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MergedValue {
    Left,
    /// RIGHT JOIN: the right side's value.
    Right,
    /// FULL JOIN: the left side's value, or the right side's when it is NULL.
    Coalesce,
}

/// One column of a USING list: its name and its position on each side.
struct UsingPair {
    name: String,
    left: usize,
    right: usize,
}

/// The USING columns found on both sides (PostgreSQL's 42703 and 42701 otherwise).
fn using_pairs(names: &[String], left: &Scope, right: &Scope) -> Result<Vec<UsingPair>> {
    let mut pairs: Vec<UsingPair> = Vec::with_capacity(names.len());
    for name in names {
        if pairs.iter().any(|pair| pair.name == *name) {
            return Err(SqlError::new(
                "42701",
                format!("column name \"{name}\" appears more than once in USING clause"),
            ));
        }
        let find = |scope: &Scope, side: &str| {
            let missing = || {
                SqlError::new(
                    "42703",
                    format!("column \"{name}\" specified in USING clause does not exist in {side} table"),
                )
            };
            match scope.find(None, name) {
                Ok(Some(position)) => Ok(position),
                Ok(None) => Err(missing()),
                Err(_) => Err(SqlError::new(
                    "42702",
                    format!("common column name \"{name}\" appears more than once in {side} table"),
                )),
            }
        };
        pairs.push(UsingPair {
            name: name.clone(),
            left: find(left, "left")?,
            right: find(right, "right")?,
        });
    }
    Ok(pairs)
}

/// NATURAL JOIN's columns: the names both sides have, in the left side's order, once each
/// (`using_pairs` refuses a name a side has twice).
fn natural_names(left: &Scope, right: &Scope) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for column in left.columns.iter().filter(|column| !column.merged) {
        let common = right.columns.iter().any(|other| !other.merged && other.name == column.name);
        if common && !names.contains(&column.name) {
            names.push(column.name.clone());
        }
    }
    names
}

/// The output columns of a scan of table or view `table`: its columns, naming it and their
/// attribute numbers (RowDescription, `tableoid`).
pub(crate) fn relation_columns(table: &TableMeta) -> Vec<OutputColumn> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(index, column)| OutputColumn {
            name: column.name.clone(),
            ty: column.ty.clone(),
            table_oid: table.oid,
            attribute: crate::catalog::attribute_number(index),
        })
        .collect()
}

/// A hash join's keys from the equalities between its sides: each right expression moved
/// from the joined row's numbering onto the right side's own columns.
fn hash_keys(equalities: Vec<(Expr, Expr)>, left_width: usize) -> (Vec<Expr>, Vec<Expr>) {
    let shift = left_shift(left_width);
    equalities
        .into_iter()
        .map(|(left, mut right)| {
            right.shift_columns(shift);
            (left, right)
        })
        .unzip()
}
