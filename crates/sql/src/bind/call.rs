//! Function and aggregate calls.

use super::*;

impl<'a> Binder<'a> {
    pub(crate) fn function(
        &mut self,
        function: &ast::Function,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        let name = self.namespace.function(&function.name)?;
        refuse_call_clauses(function, &name)?;
        if !function.within_group.is_empty() {
            return self.ordered_set_aggregate(function, &name, scope);
        }
        if function.over.is_some() {
            return self.window_call(function, &name, scope);
        }
        if let ast::FunctionArguments::Subquery(query) = &function.args {
            if name == "array" {
                // ARRAY(subquery): the rows' single column as an array.
                let (plan, correlated) = self.subquery(query, scope)?;
                if plan.columns.len() != 1 {
                    return Err(SqlError::syntax("subquery must return only one column"));
                }
                let element = plan.columns[0].ty.clone();
                let id = self.id();
                let ty = crate::types::array_of(&element)?;
                return Ok((Expr::ArraySubquery { plan, correlated, id }, ty));
            }
        }
        let (mut args, distinct, star) = call_arguments(function, &name)?;
        if name == "normalize" && function.name.0.len() == 1 {
            normalization_form_as_text(&mut args)?;
        }
        if is_set_function(&name) && !distinct && !star {
            return self.set_call_placeholder(&name, &args, scope);
        }
        if name == "grouping" && !distinct && !star {
            return self.grouping_call(&args, scope);
        }
        if let Some(aggregate) = aggregate_function(&name, star) {
            return self.aggregate(function, aggregate, &args, distinct);
        }
        if star {
            return Err(SqlError::syntax(format!("{name}(*) is not an aggregate")));
        }
        let _ = hint;
        self.call(&name, &args, scope)
    }

    pub(crate) fn aggregate(
        &mut self,
        function: &ast::Function,
        aggregate: AggregateFunction,
        args: &[ast::Expr],
        distinct: bool,
    ) -> Result<(Expr, SqlType)> {
        let key = function.to_string();
        let input_scope = match self.aggregate_input(&key)? {
            Ok(scope) => scope,
            Err(bound) => return Ok(bound),
        };
        let name = function.name.to_string().to_ascii_lowercase();
        let rewritten = super::whole_row::whole_row_arguments(&name, args, &input_scope)?;
        let args = rewritten.as_deref().unwrap_or(args);
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for arg in args {
            let (expr, ty) =
                self.in_aggregate(None, |binder| binder.expr(arg, &input_scope, None))?;
            types.push(ty);
            bound.push(expr);
        }
        check_aggregate_arguments(aggregate, &name, &types)?;
        let mut bound = statistic_arguments(aggregate, bound, &mut types)?;
        if let [SqlType::Unknown] = types.as_slice() {
            if matches!(aggregate, AggregateFunction::BoolAnd | AggregateFunction::BoolOr) {
                // bool_and('t'): the untyped literal is read as the boolean it stands for.
                let literal = std::mem::replace(&mut bound[0], Expr::Literal(Datum::Null));
                bound[0] = coerce(literal, &SqlType::Unknown, &SqlType::Bool, false)?;
                types[0] = SqlType::Bool;
            }
        }
        for ty in &mut types {
            if *ty == SqlType::Unknown {
                *ty = SqlType::Text;
            }
        }
        let input = types.first().cloned().unwrap_or(SqlType::Int8);
        let aggregate =
            structured_json_agg(aggregate, rewritten.is_some() || input.array_element().is_some());
        let filter = self.aggregate_filter(function, &input_scope)?;
        let output = aggregate_output(aggregate, &input)?;
        let expected_args = match aggregate {
            AggregateFunction::CountStar => 0,
            AggregateFunction::StringAgg
            | AggregateFunction::JsonObjectAgg { .. }
            | AggregateFunction::Regression(_) => 2,
            _ => 1,
        };
        if bound.len() != expected_args {
            return Err(SqlError::undefined_function(&format!("{}", function.name)));
        }
        let order = distinct_order(
            self.aggregate_order(function, &input_scope)?,
            aggregate,
            &bound,
            distinct,
        )?;
        if aggregate == AggregateFunction::ArrayAgg && input.array_element().is_some() {
            return Err(SqlError::unsupported("array_agg of arrays (multidimensional arrays)"));
        }
        let bound = json_aggregate_arguments(aggregate, bound, types)?;
        let call = AggregateCall {
            function: aggregate,
            args: bound,
            distinct,
            order,
            filter,
            input,
            output: output.clone(),
        };
        Ok(self.push_aggregate(key, call))
    }

    /// The input scope a new aggregate call `key` is bound over, or (Err) the output column
    /// of the same call bound before; 42803 outside a grouped query or inside an aggregate.
    pub(super) fn aggregate_input(&self, key: &str) -> Result<Result<Scope, (Expr, SqlType)>> {
        let Some(grouping) = &self.grouping else {
            if self.aggregate_arguments {
                return Err(SqlError::new("42803", "aggregate function calls cannot be nested"));
            }
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
            return Ok(Err((Expr::Column(position), ty)));
        }
        Ok(Ok(grouping.input.clone()))
    }

    /// Adds a bound aggregate call to the grouping (checked by `aggregate_input`): its
    /// output column and type.
    pub(super) fn push_aggregate(&mut self, key: String, call: AggregateCall) -> (Expr, SqlType) {
        let output = call.output.clone();
        let grouping = self.grouping.as_mut().expect("aggregate_input checked the grouping");
        grouping.aggregates.push((key, call));
        let position = grouping.keys.len() + grouping.aggregates.len() - 1;
        (Expr::Column(position), output)
    }

    /// An aggregate call's own ORDER BY, bound over the aggregate's input.
    fn aggregate_order(
        &mut self,
        function: &ast::Function,
        input_scope: &Scope,
    ) -> Result<Vec<AggregateOrder>> {
        let ast::FunctionArguments::List(list) = &function.args else { return Ok(Vec::new()) };
        let mut order = Vec::new();
        for clause in &list.clauses {
            let ast::FunctionArgumentClause::OrderBy(keys) = clause else { continue };
            for key in keys {
                let (expr, _) =
                    self.in_aggregate(None, |binder| binder.expr(&key.expr, input_scope, None))?;
                let sort = sort_key(0, &key.options);
                order.push(AggregateOrder {
                    expr,
                    descending: sort.descending,
                    nulls_first: sort.nulls_first,
                });
            }
        }
        Ok(order)
    }

    /// An aggregate's `FILTER (WHERE ...)`, bound over the aggregate's input: a boolean
    /// (42804 otherwise) in which aggregates are not allowed (42803, as PostgreSQL says).
    pub(super) fn aggregate_filter(
        &mut self,
        function: &ast::Function,
        input_scope: &Scope,
    ) -> Result<Option<Expr>> {
        let Some(filter) = &function.filter else { return Ok(None) };
        let (expr, ty) =
            self.in_aggregate(Some("FILTER"), |binder| binder.expr(filter, input_scope, None))?;
        filter_condition(expr, &ty).map(Some)
    }

    /// Runs `bind` over an aggregate's input: outside the grouping (its columns are the
    /// input's), with set-returning calls refused (0A000) and, for a FILTER, aggregates
    /// refused under the clause's name. The binder's state is restored on error too.
    pub(super) fn in_aggregate<T>(
        &mut self,
        clause: Option<&'static str>,
        bind: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let saved_grouping = self.grouping.take();
        let saved_set_calls = self.set_calls.take();
        let saved_clause = self.clause;
        if clause.is_some() {
            self.clause = clause;
        }
        let saved_arguments = std::mem::replace(&mut self.aggregate_arguments, clause.is_none());
        let outcome = bind(self);
        self.grouping = saved_grouping;
        self.set_calls = saved_set_calls;
        self.clause = saved_clause;
        self.aggregate_arguments = saved_arguments;
        outcome
    }

    pub(crate) fn call(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        if let Some(rewritten) = super::whole_row::whole_row_arguments(name, args, scope)? {
            // row_to_json and to_json of a record are the record's json object itself.
            if matches!(name, "row_to_json" | "to_json") && rewritten.len() == 1 {
                return self.expr(&rewritten[0], scope, None);
            }
            return self.call(name, &rewritten, scope);
        }
        let mut bound = Vec::with_capacity(args.len());
        for arg in args {
            bound.push(self.expr(arg, scope, None)?);
        }
        bind_call(name, bound)
    }

    /// `text IS [NOT] [form] NORMALIZED`: PostgreSQL's grammar makes it a call of
    /// is_normalized(text, form), NFC when no form is written.
    pub(crate) fn is_normalized(
        &mut self,
        inner: &ast::Expr,
        form: Option<&ast::NormalizationForm>,
        negated: bool,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let form = form.map_or_else(|| "NFC".to_string(), ToString::to_string);
        let args = [inner.clone(), ast::Expr::value(ast::Value::SingleQuotedString(form))];
        let (call, ty) = self.call("is_normalized", &args, scope)?;
        Ok((if negated { Expr::Not(Box::new(call)) } else { call }, ty))
    }

    // ----- INSERT, UPDATE, DELETE helpers -----
}

/// PostgreSQL's signatures of the aggregates whose arguments take no other type:
/// bool_and / bool_or / every(boolean), string_agg(text, text) and string_agg(bytea, bytea),
/// an untyped literal fitting either (42883 naming the argument types otherwise, as
/// PostgreSQL's function lookup does; never an implicit cast PostgreSQL does not have).
pub(crate) fn check_aggregate_arguments(
    aggregate: AggregateFunction,
    name: &str,
    types: &[SqlType],
) -> Result<()> {
    let is_bytea = |ty: &SqlType| matches!(ty, SqlType::Bytea | SqlType::Unknown);
    let overloaded = matches!(
        aggregate,
        AggregateFunction::Sum | AggregateFunction::Avg | AggregateFunction::Bitwise(_)
    );
    if overloaded && types == [SqlType::Unknown] {
        // sum, avg and bit_and have a signature for each integer or numeric type and
        // interval or bit, none preferred (variance's are all numeric: float8 is).
        return Err(SqlError::new("42725", format!("function {name}(unknown) is not unique")));
    }
    let fits = match (aggregate, types) {
        (AggregateFunction::BoolAnd | AggregateFunction::BoolOr, [input]) => {
            matches!(input, SqlType::Bool | SqlType::Unknown)
        }
        (AggregateFunction::StringAgg, [value, delimiter]) => {
            (value.is_text() && delimiter.is_text()) || (is_bytea(value) && is_bytea(delimiter))
        }
        (AggregateFunction::Regression(_), [y, x]) => float8_argument(y) && float8_argument(x),
        (AggregateFunction::Variance { .. }, [input]) => float8_argument(input),
        (AggregateFunction::Bitwise(_), [input]) => {
            matches!(input, SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
                || matches!(input, SqlType::Bit(_) | SqlType::VarBit(_))
        }
        (
            AggregateFunction::BoolAnd
            | AggregateFunction::BoolOr
            | AggregateFunction::StringAgg
            | AggregateFunction::Regression(_)
            | AggregateFunction::Variance { .. }
            | AggregateFunction::Bitwise(_),
            _,
        ) => false,
        _ => true,
    };
    if fits && aggregate == AggregateFunction::StringAgg && types[0] == SqlType::Bytea {
        return Err(SqlError::unsupported("string_agg(bytea, bytea) is not supported"));
    }
    if fits {
        return Ok(());
    }
    let names: Vec<&str> = types
        .iter()
        .map(|ty| if *ty == SqlType::Unknown { "unknown" } else { ty.message_name() })
        .collect();
    Err(SqlError::undefined_function(&format!("{name}({})", names.join(", "))))
}

/// The result type of an aggregate over an argument of type `input` (42883 when it has none).
pub(crate) fn aggregate_output(aggregate: AggregateFunction, input: &SqlType) -> Result<SqlType> {
    Ok(match aggregate {
        AggregateFunction::CountStar | AggregateFunction::Count => SqlType::Int8,
        AggregateFunction::Sum => match input {
            SqlType::Vector(_) => SqlType::Vector(None),
            SqlType::HalfVec(_) => SqlType::HalfVec(None),
            SqlType::Int2 | SqlType::Int4 => SqlType::Int8,
            SqlType::Int8 | SqlType::Numeric { .. } => SqlType::numeric(),
            SqlType::Float4 => SqlType::Float4,
            SqlType::Float8 => SqlType::Float8,
            SqlType::Interval => SqlType::Interval,
            other => {
                return Err(SqlError::undefined_function(&format!("sum({})", other.display_name())))
            }
        },
        AggregateFunction::Avg => match input {
            SqlType::Vector(_) => SqlType::Vector(None),
            SqlType::HalfVec(_) => SqlType::HalfVec(None),
            ty if ty.is_integer() => SqlType::numeric(),
            SqlType::Numeric { .. } => SqlType::numeric(),
            SqlType::Float4 | SqlType::Float8 => SqlType::Float8,
            SqlType::Interval => SqlType::Interval,
            other => {
                return Err(SqlError::undefined_function(&format!("avg({})", other.display_name())))
            }
        },
        AggregateFunction::Min | AggregateFunction::Max => min_max_output(aggregate, input)?,
        AggregateFunction::BoolAnd | AggregateFunction::BoolOr => SqlType::Bool,
        // string_agg takes text or bytea; a bit string has no implicit cast to either.
        AggregateFunction::StringAgg if matches!(input, SqlType::Bit(_) | SqlType::VarBit(_)) => {
            let name = format!("string_agg({}, unknown)", input.message_name());
            return Err(SqlError::undefined_function(&name));
        }
        AggregateFunction::StringAgg => SqlType::Text,
        AggregateFunction::ArrayAgg => crate::types::array_of(&text_if_unknown(input))?,
        AggregateFunction::JsonAgg { binary: false, .. }
        | AggregateFunction::JsonObjectAgg { binary: false } => SqlType::Json,
        AggregateFunction::JsonAgg { binary: true, .. }
        | AggregateFunction::JsonObjectAgg { binary: true } => SqlType::Jsonb,
        AggregateFunction::Variance { sample, root } => match input {
            SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Numeric { .. } => {
                SqlType::numeric()
            }
            SqlType::Float4 | SqlType::Float8 => SqlType::Float8,
            other => {
                let name = variance_name(sample, root);
                let name = format!("{name}({})", other.display_name());
                return Err(SqlError::undefined_function(&name));
            }
        },
        AggregateFunction::Bitwise(operation) => bitwise_output(operation, input)?,
        AggregateFunction::Regression(Regression::Count) => SqlType::Int8,
        AggregateFunction::Regression(_) => SqlType::Float8,
        // The binder coerced the value to the type the result has (bind/ordered_set.rs).
        AggregateFunction::OrderedSet(_) => input.clone(),
    })
}

/// bit_and, bit_or and bit_xor keep their integer argument's type; tierdb does not have
/// their bit string forms (0A000).
fn bitwise_output(operation: BitOperation, input: &SqlType) -> Result<SqlType> {
    let name = match operation {
        BitOperation::And => "bit_and",
        BitOperation::Or => "bit_or",
        BitOperation::Xor => "bit_xor",
    };
    match input {
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => Ok(input.clone()),
        SqlType::Bit(_) | SqlType::VarBit(_) => {
            Err(SqlError::unsupported(format!("{name} of bit strings is not supported")))
        }
        other => Err(SqlError::undefined_function(&format!("{name}({})", other.display_name()))),
    }
}

/// Whether an argument converts implicitly to double precision (corr and regr_*'s only
/// signature, a percentile's fraction): the numeric types and an untyped literal.
pub(super) fn float8_argument(ty: &SqlType) -> bool {
    matches!(
        ty,
        SqlType::Int2
            | SqlType::Int4
            | SqlType::Int8
            | SqlType::Numeric { .. }
            | SqlType::Float4
            | SqlType::Float8
            | SqlType::Unknown
    )
}

/// corr, covar_* and regr_*'s arguments converted to double precision, as PostgreSQL's
/// implicit casts do (checked by `check_aggregate_arguments`); an untyped literal in
/// variance or stddev is double precision too (the numeric category's preferred type).
pub(crate) fn statistic_arguments(
    aggregate: AggregateFunction,
    bound: Vec<Expr>,
    types: &mut [SqlType],
) -> Result<Vec<Expr>> {
    let convert = match aggregate {
        AggregateFunction::Regression(_) => true,
        AggregateFunction::Variance { .. } => types == [SqlType::Unknown],
        _ => false,
    };
    if !convert {
        return Ok(bound);
    }
    let mut converted = Vec::with_capacity(bound.len());
    for (expr, ty) in bound.into_iter().zip(types.iter_mut()) {
        converted.push(coerce(expr, ty, &SqlType::Float8, false)?);
        *ty = SqlType::Float8;
    }
    Ok(converted)
}

/// min and max exist for the types PostgreSQL 15 gives them: not for boolean, bytea, json,
/// jsonb, uuid, bit strings or vector (42883).
fn min_max_output(aggregate: AggregateFunction, input: &SqlType) -> Result<SqlType> {
    match input {
        SqlType::Bool
        | SqlType::Bytea
        | SqlType::Json
        | SqlType::Jsonb
        | SqlType::Uuid
        | SqlType::Bit(_)
        | SqlType::VarBit(_)
        | SqlType::Vector(_)
        | SqlType::HalfVec(_)
        | SqlType::SparseVec(_) => {
            let name = if aggregate == AggregateFunction::Min { "min" } else { "max" };
            // PostgreSQL names the argument type without its modifier (bit, not bit(4)).
            let argument = super::assignments::column_type_name(input);
            Err(SqlError::undefined_function(&format!("{name}({argument})")))
        }
        other => Ok(text_if_char(other)),
    }
}

/// json_agg marked as aggregating arrays or records (`structured`), for its layout.
pub(crate) fn structured_json_agg(
    aggregate: AggregateFunction,
    structured: bool,
) -> AggregateFunction {
    match aggregate {
        AggregateFunction::JsonAgg { binary, .. } => {
            AggregateFunction::JsonAgg { binary, structured }
        }
        other => other,
    }
}

/// The json aggregates' arguments as their accumulators take them: each value through
/// to_json or to_jsonb (whose NULL the accumulator writes as `null`), an object key as text.
fn json_aggregate_arguments(
    aggregate: AggregateFunction,
    bound: Vec<Expr>,
    types: Vec<SqlType>,
) -> Result<Vec<Expr>> {
    let (binary, keyed) = match aggregate {
        AggregateFunction::JsonAgg { binary, .. } => (binary, false),
        AggregateFunction::JsonObjectAgg { binary } => (binary, true),
        _ => return Ok(bound),
    };
    let convert = if binary { "to_jsonb" } else { "to_json" };
    let mut arguments = bound.into_iter().zip(types);
    let mut converted = Vec::with_capacity(2);
    if keyed {
        let (key, ty) = arguments.next().ok_or_else(|| SqlError::internal("a key argument"))?;
        converted.push(coerce(key, &ty, &SqlType::Text, true)?);
    }
    let (value, ty) = arguments.next().ok_or_else(|| SqlError::internal("a value argument"))?;
    converted.push(bind_call(convert, vec![(value, ty)])?.0);
    Ok(converted)
}

/// The arguments of a call: expressions, DISTINCT, and `*`.
/// normalize(text, NFD): PostgreSQL's grammar reads the form as a keyword, which sqlparser
/// parses as a column name; the call takes it as text. Anything else there is the
/// grammar's 42601 (only pg_catalog.normalize takes the form as a text value).
fn normalization_form_as_text(args: &mut [ast::Expr]) -> Result<()> {
    let Some(second) = args.get(1) else { return Ok(()) };
    let form = match second {
        ast::Expr::Identifier(ident) if ident.quote_style.is_none() => {
            Some(ident.value.to_ascii_uppercase())
        }
        _ => None,
    };
    match form {
        Some(form) if ["NFC", "NFD", "NFKC", "NFKD"].contains(&form.as_str()) => {
            args[1] = ast::Expr::value(ast::Value::SingleQuotedString(form));
            Ok(())
        }
        _ => Err(SqlError::syntax(format!("syntax error at or near \"{second}\""))),
    }
}

pub(crate) fn call_arguments(
    function: &ast::Function,
    name: &str,
) -> Result<(Vec<ast::Expr>, bool, bool)> {
    match &function.args {
        ast::FunctionArguments::None => Ok((Vec::new(), false, false)),
        ast::FunctionArguments::Subquery(_) => {
            Err(SqlError::unsupported("function over a subquery"))
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
            Ok((args, distinct, star))
        }
    }
}

pub(crate) fn aggregate_function(name: &str, star: bool) -> Option<AggregateFunction> {
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
        "array_agg" => AggregateFunction::ArrayAgg,
        "json_agg" => AggregateFunction::JsonAgg { binary: false, structured: false },
        "jsonb_agg" => AggregateFunction::JsonAgg { binary: true, structured: false },
        "json_object_agg" => AggregateFunction::JsonObjectAgg { binary: false },
        "jsonb_object_agg" => AggregateFunction::JsonObjectAgg { binary: true },
        "var_samp" | "variance" => AggregateFunction::Variance { sample: true, root: false },
        "var_pop" => AggregateFunction::Variance { sample: false, root: false },
        "stddev_samp" | "stddev" => AggregateFunction::Variance { sample: true, root: true },
        "stddev_pop" => AggregateFunction::Variance { sample: false, root: true },
        "bit_and" => AggregateFunction::Bitwise(BitOperation::And),
        "bit_or" => AggregateFunction::Bitwise(BitOperation::Or),
        "bit_xor" => AggregateFunction::Bitwise(BitOperation::Xor),
        name => AggregateFunction::Regression(regression(name)?),
    })
}

/// The order an aggregate's input is folded in with DISTINCT: PostgreSQL sorts a DISTINCT
/// aggregate's input, so array_agg and string_agg see their distinct values ascending
/// unless the call's ORDER BY says otherwise, and that ORDER BY may only name arguments
/// (42P10).
fn distinct_order(
    order: Vec<AggregateOrder>,
    aggregate: AggregateFunction,
    args: &[Expr],
    distinct: bool,
) -> Result<Vec<AggregateOrder>> {
    if !distinct {
        return Ok(order);
    }
    let arguments: Vec<String> = args.iter().map(|arg| format!("{arg:?}")).collect();
    if order.iter().any(|key| !arguments.contains(&format!("{:?}", key.expr))) {
        return Err(SqlError::new(
            "42P10",
            "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
        ));
    }
    let ordered = matches!(aggregate, AggregateFunction::ArrayAgg | AggregateFunction::StringAgg);
    // A float sum depends on the order it is taken in: the statistical aggregates fold
    // their distinct values in PostgreSQL's sorted order too.
    let statistic =
        matches!(aggregate, AggregateFunction::Variance { .. } | AggregateFunction::Regression(_));
    let ascending =
        |expr: &Expr| AggregateOrder { expr: expr.clone(), descending: false, nulls_first: false };
    match (order.is_empty(), ordered, args.first()) {
        (true, true, Some(first)) => Ok(vec![ascending(first)]),
        (true, false, Some(_)) if statistic => Ok(args.iter().map(ascending).collect()),
        _ => Ok(order),
    }
}

/// The two-argument statistical aggregate of a name.
fn regression(name: &str) -> Option<Regression> {
    Some(match name {
        "regr_count" => Regression::Count,
        "regr_avgx" => Regression::AverageX,
        "regr_avgy" => Regression::AverageY,
        "regr_sxx" => Regression::SumSquaresX,
        "regr_syy" => Regression::SumSquaresY,
        "regr_sxy" => Regression::SumProducts,
        "regr_slope" => Regression::Slope,
        "regr_intercept" => Regression::Intercept,
        "regr_r2" => Regression::DeterminationCoefficient,
        "corr" => Regression::Correlation,
        "covar_pop" => Regression::CovariancePopulation,
        "covar_samp" => Regression::CovarianceSample,
        _ => return None,
    })
}

fn text_if_unknown(ty: &SqlType) -> SqlType {
    if *ty == SqlType::Unknown {
        SqlType::Text
    } else {
        ty.clone()
    }
}

/// Clauses of a call that tierdb does not evaluate are refused, never read and ignored
/// (an ignored `FILTER (WHERE ...)` counts rows it should not; an ignored `ORDER BY` in
/// string_agg concatenates in the wrong order).
pub(crate) fn refuse_call_clauses(function: &ast::Function, name: &str) -> Result<()> {
    if function.filter.is_some() {
        // A window call's FILTER is bound with the window (bind/window.rs).
        let aggregate =
            aggregate_function(name, false).is_some() || !function.within_group.is_empty();
        if !aggregate && function.over.is_none() {
            return Err(SqlError::new(
                "42809",
                format!("FILTER specified, but {name} is not an aggregate function"),
            ));
        }
    }
    if !function.within_group.is_empty() && function.over.is_some() {
        let message = match OrderedSet::of_name(name) {
            Some(_) => format!("OVER is not supported for ordered-set aggregate {name}"),
            None => format!("OVER with WITHIN GROUP ({name}) is not supported"),
        };
        return Err(SqlError::unsupported(message));
    }
    if function.null_treatment.is_some() {
        return Err(SqlError::unsupported(format!(
            "IGNORE/RESPECT NULLS on {name} is not supported"
        )));
    }
    if !matches!(function.parameters, ast::FunctionArguments::None) {
        return Err(SqlError::syntax(format!("syntax error in the call of {name}")));
    }
    if let ast::FunctionArguments::List(list) = &function.args {
        let aggregate = aggregate_function(name, false).is_some();
        for clause in &list.clauses {
            if matches!(clause, ast::FunctionArgumentClause::OrderBy(_)) {
                if aggregate && function.over.is_none() {
                    continue;
                }
                if !aggregate {
                    return Err(SqlError::new(
                        "42809",
                        format!("ORDER BY specified, but {name} is not an aggregate function"),
                    ));
                }
            }
            let what = match clause {
                ast::FunctionArgumentClause::OrderBy(_) => "ORDER BY inside a window aggregate",
                ast::FunctionArgumentClause::Limit(_) => "LIMIT inside a call",
                _ => "this clause inside a call",
            };
            return Err(SqlError::unsupported(format!("{what} ({name}) is not supported")));
        }
    }
    Ok(())
}

/// A bound FILTER condition: boolean (42804 otherwise, as PostgreSQL says).
pub(crate) fn filter_condition(expr: Expr, ty: &SqlType) -> Result<Expr> {
    if *ty != SqlType::Bool && *ty != SqlType::Unknown {
        return Err(SqlError::datatype_mismatch(format!(
            "argument of FILTER must be type boolean, not type {}",
            ty.display_name()
        )));
    }
    coerce(expr, ty, &SqlType::Bool, false)
}
