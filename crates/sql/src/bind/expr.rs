//! Scalar expressions: columns, literals, parameters, CASE, subqueries, casts.

use super::*;

impl<'a> Binder<'a> {
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
    pub(crate) fn clause_coerced(
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

    /// Binds a subquery in the scope of the current row; returns it and whether it is
    /// correlated.
    pub(crate) fn subquery(
        &mut self,
        query: &ast::Query,
        scope: &Scope,
    ) -> Result<(Arc<Plan>, bool)> {
        let saved_grouping = self.grouping.take();
        let saved_clause = self.clause.take();
        let scope = match &saved_grouping {
            Some(grouping) => {
                let keys = grouping.keys.iter().map(|(_, expr, _)| expr.clone()).collect();
                Scope { grouped_keys: Some(keys), ..grouping.input.clone() }
            }
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
            // CURRENT_ROLE is a keyword in PostgreSQL, as CURRENT_USER (sqlparser reads it as
            // a name): the same function.
            ast::Expr::Identifier(name)
                if name.quote_style.is_none()
                    && name.value.eq_ignore_ascii_case("current_role") =>
            {
                let current_user =
                    sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
                        .try_with_sql("current_user")
                        .and_then(|mut parser| parser.parse_expr())
                        .map_err(|error| SqlError::new("XX000", error.to_string()))?;
                self.expr(&current_user, scope, hint)
            }
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
                let ty = sql_type(&typed.data_type)?;
                let text = match &typed.value.value {
                    ast::Value::SingleQuotedString(text) => text.clone(),
                    other => other.to_string(),
                };
                if let SqlType::Object(_) = ty {
                    // Resolved by the executor's cast, which has the catalog.
                    let literal = Expr::Literal(Datum::Text(text));
                    return Ok((coerce(literal, &SqlType::Unknown, &ty, true)?, ty));
                }
                Ok((Expr::Literal(types::parse_text(&text, &ty)?), ty))
            }
            ast::Expr::Interval(interval) => self.interval_literal(interval, scope),
            ast::Expr::Nested(inner) => self.expr(inner, scope, hint),
            ast::Expr::Cast { expr: inner, data_type, .. } => {
                let to = sql_type(data_type)?;
                if let (SqlType::Float4 | SqlType::Float8, Some(text)) =
                    (&to, number_literal(inner))
                {
                    // `1e300::float8`: the literal is read as the float it becomes. It is a
                    // numeric first in PostgreSQL, which has no negative zero: `(-0.0)::float8`
                    // is 0.
                    let mut value = types::parse_float(&text, &to)?;
                    if value == 0.0 {
                        value = 0.0;
                    }
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
                    if !ty.is_numeric_family() && ty != SqlType::Interval {
                        return Err(SqlError::undefined_operator(format!(
                            "operator does not exist: - {}",
                            ty.display_name()
                        )));
                    }
                    Ok((Expr::Negate { expr: Box::new(bound), ty: ty.clone() }, ty))
                }
                ast::UnaryOperator::Plus => self.expr(inner, scope, hint),
                ast::UnaryOperator::BitwiseNot
                | ast::UnaryOperator::PGAbs
                | ast::UnaryOperator::PGSquareRoot
                | ast::UnaryOperator::PGCubeRoot => self.prefix_operator(op, inner, scope),
                other => Err(SqlError::unsupported(format!("operator {other} is not supported"))),
            },
            ast::Expr::BinaryOp { left, op, right } => self.binary(left, op, right, scope, hint),
            _ => self.predicate(expr, scope, hint),
        }
    }

    /// Binds predicates: IS [NOT] NULL/TRUE/FALSE, IS DISTINCT FROM, BETWEEN, IN, EXISTS
    /// (`expr` binds the others).
    pub(crate) fn predicate(
        &mut self,
        expr: &ast::Expr,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        match expr {
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
            ast::Expr::InList { expr: inner, list, negated } if is_row(inner) => {
                self.row_in_list(inner, list, *negated, scope, hint)
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
            ast::Expr::InSubquery { expr: inner, subquery, negated } => self.subquery_comparison(
                inner,
                CompareOp::Eq,
                Quantifier::Any,
                *negated,
                subquery,
                scope,
            ),
            ast::Expr::Exists { subquery, negated } => {
                let (plan, correlated) = self.subquery(subquery, scope)?;
                let id = self.id();
                if correlated {
                    self.remember_correlated(id, subquery);
                }
                Ok((Expr::Exists { plan, negated: *negated, correlated, id }, SqlType::Bool))
            }
            ast::Expr::IsNormalized { expr: inner, form, negated } => {
                self.is_normalized(inner, form.as_ref(), *negated, scope)
            }
            _ => self.special_form(expr, scope, hint),
        }
    }

    /// Binds subqueries, LIKE, CASE, calls and the SQL-syntax functions (SUBSTRING, TRIM,
    /// POSITION, EXTRACT, ...), and refuses what tierdb does not bind (0A000).
    pub(crate) fn special_form(
        &mut self,
        expr: &ast::Expr,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        match expr {
            ast::Expr::Subquery(query) => {
                let (plan, correlated) = self.subquery(query, scope)?;
                if plan.arity() != 1 {
                    return Err(SqlError::syntax("subquery must return only one column"));
                }
                let ty = plan.columns[0].ty.clone();
                let id = self.id();
                if correlated {
                    self.remember_correlated(id, query);
                }
                Ok((Expr::ScalarSubquery { plan, correlated, id }, ty))
            }
            ast::Expr::Like { negated, expr: inner, pattern, escape_char, any: false }
            | ast::Expr::ILike { negated, expr: inner, pattern, escape_char, any: false } => {
                let value = self.text_arg(inner, scope)?;
                let mut pattern = self.text_arg(pattern, scope)?;
                if let Some(escape) = escape_char {
                    // PostgreSQL's parser rewrites `LIKE p ESCAPE e` as `LIKE like_escape(p, e)`.
                    let escape = self.text_arg(escape, scope)?;
                    let arguments = vec![(pattern, SqlType::Text), (escape, SqlType::Text)];
                    pattern = bind_call("like_escape", arguments)?.0;
                }
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
            ast::Expr::SimilarTo { negated, expr: inner, pattern, escape_char } => {
                self.similar_to(inner, pattern, escape_char.as_deref(), *negated, scope)
            }
            ast::Expr::Case { operand, conditions, else_result, .. } => {
                self.case(operand.as_deref(), conditions, else_result.as_deref(), scope, hint)
            }
            ast::Expr::Function(function) => self.function(function, scope, hint),
            ast::Expr::Substring { .. }
            | ast::Expr::Trim { .. }
            | ast::Expr::Position { .. }
            | ast::Expr::Overlay { .. }
            | ast::Expr::Ceil { .. }
            | ast::Expr::Floor { .. }
            | ast::Expr::Extract { .. } => self.syntax_function(expr, scope),
            ast::Expr::Collate { expr: inner, .. } => self.expr(inner, scope, hint),
            // PostgreSQL's grammar makes `x AT TIME ZONE z` the call timezone(z, x).
            ast::Expr::AtTimeZone { timestamp, time_zone } => self.call(
                "timezone",
                &[time_zone.as_ref().clone(), timestamp.as_ref().clone()],
                scope,
            ),
            ast::Expr::CompoundFieldAccess { root, access_chain } => {
                self.subscript(root, access_chain, scope)
            }
            ast::Expr::Array(array) => self.array_constructor(array, scope, hint),
            ast::Expr::AnyOp { .. } | ast::Expr::AllOp { .. } => {
                self.quantified_comparison(expr, scope, hint)
            }
            ast::Expr::Tuple(_) => Err(SqlError::unsupported(
                "row constructors are supported only in comparisons and IN lists of rows",
            )),
            other => Err(SqlError::unsupported(format!("unsupported expression: {other}"))),
        }
    }

    /// SUBSTRING, TRIM, POSITION, OVERLAY, CEIL, FLOOR and EXTRACT written in SQL's syntax, bound as
    /// calls of the functions PostgreSQL's grammar turns them into.
    fn syntax_function(&mut self, expr: &ast::Expr, scope: &Scope) -> Result<(Expr, SqlType)> {
        match expr {
            ast::Expr::Substring {
                expr: inner, substring_from, substring_for, shorthand, ..
            } => {
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
                // substring(text, pattern) is a regular expression's match; substr has no
                // such form.
                self.call(if *shorthand { "substr" } else { "substring" }, &args, scope)
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
            ast::Expr::Overlay { expr: inner, overlay_what, overlay_from, overlay_for } => {
                let mut args = vec![inner.as_ref().clone(), overlay_what.as_ref().clone()];
                args.push(overlay_from.as_ref().clone());
                args.extend(overlay_for.iter().map(|count| count.as_ref().clone()));
                self.call("overlay", &args, scope)
                    .map_err(|error| super::operators::qualified_in_error(error, "overlay"))
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
                self.call("extract", &[field, inner.as_ref().clone()], scope)
            }
            other => unreachable!("not a syntax function: {other}"),
        }
    }

    /// `x op ANY / ALL (subquery or array)`.
    fn quantified_comparison(
        &mut self,
        expr: &ast::Expr,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        match expr {
            ast::Expr::AnyOp { left, compare_op, right, .. }
            | ast::Expr::AllOp { left, compare_op, right }
                if matches!(right.as_ref(), ast::Expr::Subquery(_)) =>
            {
                let ast::Expr::Subquery(query) = right.as_ref() else {
                    unreachable!("matched above");
                };
                let quantifier = if matches!(expr, ast::Expr::AllOp { .. }) {
                    Quantifier::All
                } else {
                    Quantifier::Any
                };
                let op = arrays::compare_operator(compare_op).ok_or_else(|| {
                    SqlError::unsupported(format!(
                        "operator {compare_op} with a subquery is not supported"
                    ))
                })?;
                self.subquery_comparison(left, op, quantifier, false, query, scope)
            }
            ast::Expr::AnyOp { left, compare_op, right, .. } => {
                // `x = ANY (ARRAY[...])` from drivers: an IN list (index ranges use it).
                if let (ast::BinaryOperator::Eq, ast::Expr::Array(array)) =
                    (compare_op, right.as_ref())
                {
                    if !array.elem.is_empty() {
                        let list = ast::Expr::InList {
                            expr: left.clone(),
                            list: array.elem.clone(),
                            negated: false,
                        };
                        return self.expr(&list, scope, hint);
                    }
                }
                self.any_all(left, compare_op, right, false, scope)
            }
            ast::Expr::AllOp { left, compare_op, right } => {
                self.any_all(left, compare_op, right, true, scope)
            }
            other => unreachable!("not a quantified comparison: {other}"),
        }
    }

    /// `(a, b) IN ((1, 2), ...)`: row equalities joined by OR (NOT IN: negated).
    fn row_in_list(
        &mut self,
        row: &ast::Expr,
        list: &[ast::Expr],
        negated: bool,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        let mut equalities = Vec::with_capacity(list.len());
        for item in list {
            let equal = row_comparison(row, CompareOp::Eq, item)?;
            equalities.push(ast::Expr::Nested(Box::new(equal)));
        }
        let any = equalities
            .into_iter()
            .reduce(|all, next| ast::Expr::BinaryOp {
                left: Box::new(all),
                op: ast::BinaryOperator::Or,
                right: Box::new(next),
            })
            .ok_or_else(|| SqlError::syntax("syntax error at or near \")\""))?;
        let test = if negated {
            ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Not,
                expr: Box::new(ast::Expr::Nested(Box::new(any))),
            }
        } else {
            any
        };
        self.expr(&test, scope, hint)
    }

    /// `a [NOT] SIMILAR TO p [ESCAPE e]`, bound as PostgreSQL's parser rewrites it:
    /// `a ~ similar_to_escape(p [, e])`.
    fn similar_to(
        &mut self,
        value: &ast::Expr,
        pattern: &ast::Expr,
        escape: Option<&ast::Expr>,
        negated: bool,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let (value, value_ty) = self.expr(value, scope, Some(&SqlType::Text))?;
        if !value_ty.is_text() {
            return Err(SqlError::undefined_operator(format!(
                "operator does not exist: {} ~ text",
                value_ty.display_name()
            )));
        }
        let value = coerce(value, &value_ty, &SqlType::Text, false)?;
        let mut arguments = vec![(self.text_arg(pattern, scope)?, SqlType::Text)];
        if let Some(escape) = escape {
            arguments.push((self.text_arg(escape, scope)?, SqlType::Text));
        }
        let (pattern, _) = bind_call("similar_to_escape", arguments)?;
        let operator = if negated { "regex_not_match" } else { "regex_match" };
        bind_call(operator, vec![(value, SqlType::Text), (pattern, SqlType::Text)])
    }

    pub(crate) fn text_arg(&mut self, expr: &ast::Expr, scope: &Scope) -> Result<Expr> {
        let (bound, ty) = self.expr(expr, scope, Some(&SqlType::Text))?;
        if !ty.is_text() {
            return Err(SqlError::undefined_operator(format!(
                "operator does not exist: {} ~~ text",
                ty.display_name()
            )));
        }
        coerce(bound, &ty, &SqlType::Text, false)
    }

    pub(crate) fn case(
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
        // PostgreSQL resolves the result type over ELSE (a NULL when absent) first, then the
        // THEN results (types::select_common_type).
        let mut result_types =
            vec![otherwise.as_ref().map_or(SqlType::Unknown, |(_, ty)| ty.clone())];
        result_types.extend(branches.iter().map(|(_, (_, ty))| ty.clone()));
        let result_ty = types::select_common_type(&result_types).map_err(|(left, right)| {
            SqlError::datatype_mismatch(format!(
                "CASE types {} and {} cannot be matched",
                left.display_name(),
                right.display_name()
            ))
        })?;
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

    pub(crate) fn value(
        &mut self,
        value: &ast::Value,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        match value {
            ast::Value::Number(text, _) => self.number(text),
            ast::Value::SingleQuotedString(text)
            | ast::Value::EscapedStringLiteral(text)
            | ast::Value::DollarQuotedString(ast::DollarQuotedString { value: text, .. }) => {
                Ok((Expr::Literal(Datum::Text(text.clone())), SqlType::Unknown))
            }
            ast::Value::Boolean(flag) => Ok((Expr::Literal(Datum::Bool(*flag)), SqlType::Bool)),
            // B'0101' and X'1F': bit constants (bit_in reads the prefix PostgreSQL's lexer
            // keeps, so B'b01' fails as there).
            ast::Value::SingleQuotedByteStringLiteral(text) => {
                let bits = types::parse_bit_string(&format!("b{text}"))?;
                Ok((Expr::Literal(types::bit_datum(bits)), SqlType::Bit(None)))
            }
            ast::Value::HexStringLiteral(text) => {
                let bits = types::parse_bit_string(&format!("x{text}"))?;
                Ok((Expr::Literal(types::bit_datum(bits)), SqlType::Bit(None)))
            }
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
                        // A parameter of an object identifier type arrives as its name in
                        // text; the cast the binder adds resolves it with the catalog.
                        if let SqlType::Object(_) = hint {
                            self.parameters[index] = SqlType::Text;
                        } else if *hint != SqlType::Unknown {
                            self.parameters[index] = hint.clone();
                        }
                    }
                }
                Ok((Expr::Parameter(index), self.parameters[index].clone()))
            }
            other => Err(SqlError::unsupported(format!("unsupported literal {other}"))),
        }
    }

    pub(crate) fn number(&mut self, text: &str) -> Result<(Expr, SqlType)> {
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
    pub(crate) fn comparable(
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
}

/// `-(a ^ b)` as PostgreSQL parses `-a ^ b`: `(-a) ^ b` (`^` is left-associative).
pub(crate) fn negate_power_base(expr: &ast::Expr) -> ast::Expr {
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
pub(crate) fn chain_operands<'a>(
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
pub(crate) fn balanced_tree(
    mut operands: Vec<Expr>,
    combine: fn(Box<Expr>, Box<Expr>) -> Expr,
) -> Expr {
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

/// The text of a (possibly negated) number literal.
pub(crate) fn number_literal(expr: &ast::Expr) -> Option<String> {
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

pub(crate) fn is_placeholder(expr: &ast::Expr) -> bool {
    matches!(expr, ast::Expr::Value(value) if matches!(value.value, ast::Value::Placeholder(_)))
}
