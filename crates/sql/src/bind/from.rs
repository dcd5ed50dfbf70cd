//! FROM and joins: table references, system views, table functions, join binding.

use super::*;

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
        let mut relations = Vec::new();
        for item in from {
            relations.push(self.table_with_joins(item)?);
        }
        let (scope, predicate) = self.bind_where(&relations, selection)?;
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
        Ok((plan, conjuncts))
    }

    pub(crate) fn table_with_joins(&mut self, item: &ast::TableWithJoins) -> Result<(Plan, Scope)> {
        let (mut plan, mut scope) = self.table_factor(&item.relation)?;
        for join in &item.joins {
            let (right, right_scope) = self.table_factor(&join.relation)?;
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
                ast::JoinOperator::CrossJoin(_) => (JoinKind::Inner, None),
                other => {
                    return Err(SqlError::unsupported(
                        format!("unsupported join {other:?}").chars().take(60).collect::<String>(),
                    ))
                }
            };
            if kind == JoinKind::Left {
                let nullable = if right_outer { &plan } else { &right };
                self.refuse_recursive_reference(nullable, "an outer join")?;
            }
            let left_width = scope.columns.len();
            let combined = scope.concat(&right_scope);
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
            plan = if right_outer {
                self.right_join(plan, right, conjuncts, left_width)?
            } else {
                self.join(plan, right, kind, conjuncts, left_width)?
            };
            (plan, scope) = if using.is_empty() {
                (plan, combined)
            } else {
                self.merge_using(plan, combined, left_width, &using, right_outer)?
            };
        }
        Ok((plan, scope))
    }

    /// A join with USING (or NATURAL): the joined columns come first, once each (the left
    /// side's value, the right side's for a RIGHT JOIN, in the common type), then every
    /// column of both sides, where the joined ones are reached only by a qualified name or
    /// `alias.*`, as in PostgreSQL.
    fn merge_using(
        &mut self,
        plan: Plan,
        mut combined: Scope,
        left_width: usize,
        using: &[UsingPair],
        right_outer: bool,
    ) -> Result<(Plan, Scope)> {
        let mut exprs = Vec::with_capacity(using.len() + plan.arity());
        let mut columns = Vec::with_capacity(exprs.capacity());
        let mut merged = Scope::default();
        for pair in using {
            let source = if right_outer { left_width + pair.right } else { pair.left };
            let origin = combined.columns[source].clone();
            let common = SqlType::common(&combined.columns[pair.left].ty, &origin.ty)
                .map(|common| if common == SqlType::Unknown { SqlType::Text } else { common })
                .unwrap_or_else(|| origin.ty.clone());
            exprs.push(coerce(Expr::Column(source), &origin.ty, &common, false)?);
            columns.push(OutputColumn {
                name: pair.name.clone(),
                ty: common.clone(),
                table_oid: origin.table_oid,
                attribute: origin.attribute,
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
            ast::TableFactor::Table { name, alias, args, sample, .. } => {
                if sample.is_some() {
                    // Never a full scan in place of a sample.
                    return Err(SqlError::unsupported("TABLESAMPLE is not supported"));
                }
                if let Some(args) = args {
                    let function = self.namespace.function(name)?;
                    return self.table_function(&function, &args.args, alias.as_ref());
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
                let name = self.namespace.function(name)?;
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
            ast::TableFactor::UNNEST {
                alias, array_exprs, with_offset, with_ordinality, ..
            } => {
                if *with_offset || *with_ordinality {
                    return Err(SqlError::unsupported("unnest ... WITH ORDINALITY"));
                }
                if array_exprs.len() != 1 {
                    return Err(SqlError::unsupported("unnest of several arrays in FROM"));
                }
                self.set_function_scan("unnest", array_exprs, alias.as_ref())
            }
            other => Err(SqlError::unsupported(format!("unsupported FROM item {other}"))),
        }
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
        if matches!(
            name,
            "unnest" | "generate_subscripts" | "regexp_matches" | "regexp_split_to_table"
        ) {
            let mut exprs = Vec::with_capacity(args.len());
            for arg in args {
                let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) = arg else {
                    return Err(SqlError::syntax(format!("{name} takes plain arguments")));
                };
                exprs.push(expr.clone());
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
                let (access, filter) = scan_access(&table, conjuncts, &self.parameters);
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
        let mut columns = left.columns.clone();
        columns.extend(right.columns.iter().cloned());
        let JoinConjuncts { right_only, equalities, residual } =
            split_join_conjuncts(conjuncts, left_width, columns.len());
        let right =
            if right_only.is_empty() { right } else { self.filter(right, and_all(right_only)) };
        let (left, right) = (Box::new(left), Box::new(right));
        // Index nested loop: the inner side is a table whose key the equalities pin.
        let right = match index_lookup_inner(right, &equalities, left_width) {
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
        let shift = left_shift(left_width);
        let (left_keys, right_keys): (Vec<Expr>, Vec<Expr>) = equalities
            .into_iter()
            .map(|(a, mut b)| {
                b.shift_columns(shift);
                (a, b)
            })
            .unzip();
        let join = PlanKind::HashJoin { left, right, kind, left_keys, right_keys, residual };
        Ok(self.plan(join, columns))
    }

    // ----- expressions -----
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
