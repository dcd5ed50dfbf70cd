//! Set-returning functions: generate_series, unnest and generate_subscripts in the select
//! list (a ProjectSet node above aggregation and windows, as PostgreSQL plans them) and
//! unnest / generate_subscripts in FROM.
//!
//! While the select list is bound, each call is recorded and stands for a placeholder
//! column, `SET_COLUMN_BASE + its index`; the ProjectSet's output columns replace them.

use super::*;

/// Placeholder columns of set-returning calls: far above any real row width, below the
/// window calls' placeholders.
const SET_COLUMN_BASE: usize = usize::MAX / 4;

/// Whether `name` is a set-returning function tierdb runs.
pub(crate) fn is_set_function(name: &str) -> bool {
    set_function(name).is_some()
}

/// Whether `name` is a one-column set-returning function FROM runs as a ProjectSet
/// (generate_series has its own scan).
pub(crate) fn is_from_set_function(name: &str) -> bool {
    name != "generate_series" && set_function(name).is_some()
}

fn set_function(name: &str) -> Option<SetFunction> {
    Some(match name {
        "generate_series" => SetFunction::Series,
        "unnest" => SetFunction::Unnest,
        "generate_subscripts" => SetFunction::Subscripts,
        "regexp_matches" => SetFunction::RegexpMatches,
        "regexp_split_to_table" => SetFunction::RegexpSplit,
        "pg_partition_ancestors" => SetFunction::PartitionAncestors,
        "jsonb_path_query" | "jsonb_path_query_tz" => SetFunction::JsonPathQuery,
        _ => return json_set_function(name),
    })
}

/// The json and jsonb set-returning functions of one column (json[b]_each has two: it
/// is bound in FROM only, by `json_each_scan`).
fn json_set_function(name: &str) -> Option<SetFunction> {
    let (json, base) = match name.strip_prefix("jsonb_") {
        Some(base) => (false, base),
        None => (true, name.strip_prefix("json_")?),
    };
    let rows = match base {
        "array_elements" => JsonRows::Elements,
        "array_elements_text" => JsonRows::ElementsText,
        "object_keys" => JsonRows::Keys,
        _ => return None,
    };
    Some(SetFunction::Json { rows, json })
}

/// The type a json set-returning function's rows have.
fn json_rows_type(rows: JsonRows, json: bool) -> SqlType {
    match rows {
        JsonRows::Elements | JsonRows::EachValues if json => SqlType::Json,
        JsonRows::Elements | JsonRows::EachValues => SqlType::Jsonb,
        JsonRows::ElementsText
        | JsonRows::Keys
        | JsonRows::EachKeys { .. }
        | JsonRows::EachTexts => SqlType::Text,
    }
}

impl<'a> Binder<'a> {
    /// A set-returning call in an expression: allowed in the select list only (0A000
    /// elsewhere, PostgreSQL's "set-returning functions are not allowed in ...").
    pub(crate) fn set_call_placeholder(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        if self.aggregate_arguments {
            return Err(SqlError::unsupported(
                "aggregate function calls cannot contain set-returning function calls",
            ));
        }
        if self.set_calls.is_none() {
            let place = self.clause.unwrap_or("this context");
            return Err(SqlError::unsupported(format!(
                "set-returning functions are not allowed in {place}"
            )));
        }
        let call = self.set_call(name, args, scope)?;
        let ty = call.ty.clone();
        let calls = self.set_calls.as_mut().expect("checked above");
        calls.push(call);
        Ok((Expr::Column(SET_COLUMN_BASE + calls.len() - 1), ty))
    }

    /// Binds a set-returning call's arguments and types its result.
    pub(crate) fn set_call(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        scope: &Scope,
    ) -> Result<SetCall> {
        let function = set_function(name).ok_or_else(|| SqlError::undefined_function(name))?;
        let mut bound = Vec::with_capacity(args.len());
        for arg in args {
            bound.push(self.expr(arg, scope, None)?);
        }
        let types: Vec<SqlType> = bound.iter().map(|(_, ty)| ty.clone()).collect();
        let no_function = || crate::functions::no_function(name, &types);
        let (targets, ty) = match function {
            SetFunction::Series => series_types(&types).ok_or_else(no_function)?,
            SetFunction::Unnest => {
                let [array] = types.as_slice() else { return Err(no_function()) };
                let element = array.array_element().ok_or_else(no_function)?.clone();
                (vec![array.clone()], element)
            }
            SetFunction::Subscripts => {
                let array = types.first().filter(|ty| ty.array_element().is_some());
                let array = array.ok_or_else(no_function)?;
                let mut targets = vec![array.clone(), SqlType::Int4];
                match types.len() {
                    2 => {}
                    3 => targets.push(SqlType::Bool),
                    _ => return Err(no_function()),
                }
                (targets, SqlType::Int4)
            }
            SetFunction::RegexpMatches | SetFunction::RegexpSplit => {
                if !(2..=3).contains(&types.len()) || types.iter().any(|ty| !ty.is_text()) {
                    return Err(no_function());
                }
                let ty = match function {
                    SetFunction::RegexpMatches => SqlType::Array(Box::new(SqlType::Text)),
                    _ => SqlType::Text,
                };
                (vec![SqlType::Text; types.len()], ty)
            }
            SetFunction::Json { rows, json } => {
                let argument = if json { SqlType::Json } else { SqlType::Jsonb };
                match types.as_slice() {
                    [ty] if *ty == argument || *ty == SqlType::Unknown => {}
                    _ => return Err(no_function()),
                }
                (vec![argument], json_rows_type(rows, json))
            }
            SetFunction::JsonPathQuery => {
                let signature = crate::functions::jsonpath_signature(name, &types, SqlType::Jsonb)?;
                let targets = signature.arguments.into_iter().map(|coercion| match coercion {
                    crate::functions::Coercion::Implicit(ty)
                    | crate::functions::Coercion::Explicit(ty) => ty,
                    crate::functions::Coercion::Keep => SqlType::Unknown,
                });
                (targets.collect(), SqlType::Jsonb)
            }
            SetFunction::JsonRecord { .. } => {
                return Err(SqlError::internal("json record functions are bound in FROM"))
            }
            SetFunction::PartitionAncestors => {
                let regclass = SqlType::Object(crate::types::ObjectKind::Class);
                if types.len() != 1 {
                    return Err(no_function());
                }
                (vec![regclass.clone()], regclass)
            }
        };
        let mut coerced = Vec::with_capacity(bound.len());
        // A regclass argument reads a name from text ('public.t'), as its input function.
        let explicit = function == SetFunction::PartitionAncestors;
        for ((expr, from), to) in bound.into_iter().zip(&targets) {
            coerced.push(coerce(expr, &from, to, explicit)?);
        }
        Ok(SetCall { function, args: coerced, ty })
    }

    /// The ProjectSet node of the select list's set-returning calls over `plan`; their
    /// placeholders in `items` and the sort keys become its columns.
    pub(crate) fn project_set_plan(
        &mut self,
        plan: Plan,
        calls: Vec<SetCall>,
        items: &mut [Expr],
        sort_keys: &mut [(SortTarget, ast::OrderByOptions)],
    ) -> Plan {
        if calls.is_empty() {
            return plan;
        }
        let base = plan.arity();
        let mut columns = plan.columns.clone();
        for call in &calls {
            columns.push(computed_column("?set?", call.ty.clone()));
        }
        items.iter_mut().for_each(|item| place_set_calls(item, base));
        for (target, _) in sort_keys.iter_mut() {
            if let SortTarget::Expr(expr, _) = target {
                place_set_calls(expr, base);
            }
        }
        self.plan(PlanKind::ProjectSet { input: Box::new(plan), calls }, columns)
    }

    /// `unnest(array)` or `generate_subscripts(...)` in FROM: a ProjectSet over one empty
    /// row, its one column named after the function or the alias.
    pub(crate) fn set_function_scan(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        let call = self.set_call(name, args, &Scope::default())?;
        let qualifier = alias.map_or_else(|| name.to_string(), |alias| ident(&alias.name));
        // PostgreSQL names the column of a function with an OUT parameter after it (an
        // alias still names the one column).
        let out_name = matches!(
            call.function,
            SetFunction::Json { rows: JsonRows::Elements | JsonRows::ElementsText, .. }
        )
        .then(|| "value".to_string());
        let column_name = alias
            .and_then(|alias| alias.columns.first().map(|column| ident(&column.name)))
            .or_else(|| if alias.is_some() { None } else { out_name })
            .unwrap_or_else(|| qualifier.clone());
        let column = computed_column(&column_name, call.ty.clone());
        let one_row = self.plan(PlanKind::OneRow, Vec::new());
        let plan = self.plan(
            PlanKind::ProjectSet { input: Box::new(one_row), calls: vec![call] },
            vec![column],
        );
        let scope = Scope::from_plan(&plan, Some(&qualifier));
        Ok((plan, scope))
    }
}

impl Binder<'_> {
    /// json[b]_each[_text](value) in FROM: (key text, value json[b] or text), a ProjectSet
    /// of two calls in step over one empty row, the keys and the values.
    pub(crate) fn json_each_scan(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        let json = !name.starts_with("jsonb");
        let text = name.ends_with("_text");
        let values = if text { JsonRows::EachTexts } else { JsonRows::EachValues };
        // The argument is bound as the one-column function of its type, then shared.
        let keys_of = if json { "json_object_keys" } else { "jsonb_object_keys" };
        let mut keys = self.set_call(keys_of, args, &Scope::default())?;
        keys.function = SetFunction::Json { rows: JsonRows::EachKeys { text }, json };
        if keys.args.iter().any(Expr::is_volatile) {
            return Err(SqlError::unsupported(format!("{name} of a volatile argument")));
        }
        let value = SetCall {
            function: SetFunction::Json { rows: values, json },
            args: keys.args.clone(),
            ty: json_rows_type(values, json),
        };
        let qualifier = alias.map_or_else(|| name.to_string(), |alias| ident(&alias.name));
        let names = alias_columns(alias);
        let name_at = |index: usize, default: &str| {
            names.get(index).cloned().unwrap_or_else(|| default.to_string())
        };
        let columns = vec![
            computed_column(&name_at(0, "key"), keys.ty.clone()),
            computed_column(&name_at(1, "value"), value.ty.clone()),
        ];
        let one_row = self.plan(PlanKind::OneRow, Vec::new());
        let calls = vec![keys, value];
        let plan = self.plan(PlanKind::ProjectSet { input: Box::new(one_row), calls }, columns);
        let scope = Scope::from_plan(&plan, Some(&qualifier));
        Ok((plan, scope))
    }
}

/// json[b]_to_record and json[b]_to_recordset: (set, json).
pub(crate) fn json_record_function(name: &str) -> Option<(bool, bool)> {
    Some(match name {
        "json_to_record" => (false, true),
        "jsonb_to_record" => (false, false),
        "json_to_recordset" => (true, true),
        "jsonb_to_recordset" => (true, false),
        _ => return None,
    })
}

impl Binder<'_> {
    /// json[b]_to_record[set](value) AS alias(column type, ...) in FROM: a ProjectSet of one
    /// call per column in step over one empty row, each reading its key of the objects.
    pub(crate) fn json_record_scan(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        let (set, json) = json_record_function(name).expect("a json record function");
        let definitions = alias.map(|alias| alias.columns.as_slice()).unwrap_or_default();
        if definitions.is_empty() || definitions.iter().any(|column| column.data_type.is_none()) {
            return Err(SqlError::syntax(
                "a column definition list is required for functions returning \"record\"",
            ));
        }
        // The argument is bound as json[b]_object_keys's (json or jsonb, or untyped).
        let keys_of = if json { "json_object_keys" } else { "jsonb_object_keys" };
        let argument = self.set_call(keys_of, args, &Scope::default())?.args;
        if argument.iter().any(Expr::is_volatile) {
            return Err(SqlError::unsupported(format!("{name} of a volatile argument")));
        }
        let mut columns = Vec::with_capacity(definitions.len());
        let mut calls = Vec::with_capacity(definitions.len());
        for definition in definitions {
            let column_name = ident(&definition.name);
            let ty = types::sql_type(definition.data_type.as_ref().expect("checked above"))?;
            columns.push(computed_column(&column_name, ty.clone()));
            let mut call_args = argument.clone();
            call_args.push(Expr::Literal(Datum::Text(column_name)));
            calls.push(SetCall {
                function: SetFunction::JsonRecord { set, json },
                args: call_args,
                ty,
            });
        }
        let qualifier = alias.map_or_else(|| name.to_string(), |alias| ident(&alias.name));
        let one_row = self.plan(PlanKind::OneRow, Vec::new());
        let plan = self.plan(PlanKind::ProjectSet { input: Box::new(one_row), calls }, columns);
        let scope = Scope::from_plan(&plan, Some(&qualifier));
        Ok((plan, scope))
    }
}

/// The query `pg_options_to_table(options)` stands for; `options_argument` is replaced
/// by the call's argument.
const OPTIONS_TABLE_QUERY: &str = "SELECT split_part(option, '=', 1) AS option_name, \
     substr(option, strpos(option, '=') + 1) AS option_value \
     FROM unnest(options_argument::text[]) AS option";

impl Binder<'_> {
    /// pg_options_to_table(options text[]): each `name=value` element of a catalog's options
    /// (reloptions, attoptions) as a row (option_name, option_value), bound as the query
    /// over unnest it stands for.
    pub(crate) fn options_table(
        &mut self,
        args: &[ast::FunctionArg],
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(options))] = args else {
            return Err(SqlError::undefined_function("pg_options_to_table"));
        };
        let mut plan = self.internal_query(OPTIONS_TABLE_QUERY, "options_argument", options)?;
        rename_columns(&mut plan, &alias_columns(alias));
        let qualifier = alias.map_or_else(|| "pg_options_to_table".into(), |a| ident(&a.name));
        let scope = Scope::from_plan(&plan, Some(&qualifier));
        Ok((plan, scope))
    }
}

/// The row a sequence reads as (`SELECT last_value, is_called FROM seq`, as pg_dump
/// reads it); `sequence_argument` is replaced by the sequence's name.
const SEQUENCE_ROW_QUERY: &str =
    "SELECT tierdb_sequence_state(sequence_argument::regclass, 0) AS last_value, \
     tierdb_sequence_state(sequence_argument::regclass, 1) AS log_cnt, \
     tierdb_sequence_state(sequence_argument::regclass, 2) = 1 AS is_called";

impl Binder<'_> {
    /// Whether `name` is a serial or identity column's sequence (and not a table).
    pub(crate) fn is_sequence(&self, name: &str) -> bool {
        self.catalog.table(name).is_none()
            && (self.catalog.is_column_sequence(name)
                || self.catalog.sequence_object(name).is_some())
    }

    /// A sequence in FROM: its one row (last_value, log_cnt, is_called).
    pub(crate) fn sequence_relation(
        &mut self,
        name: &str,
        qualifier: &str,
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        let literal = ast::Expr::value(ast::Value::SingleQuotedString(format!(
            "public.{}",
            crate::identifiers::quote_identifier(name)
        )));
        let mut plan = self.internal_query(SEQUENCE_ROW_QUERY, "sequence_argument", &literal)?;
        rename_columns(&mut plan, &alias_columns(alias));
        let scope = Scope::from_plan(&plan, Some(qualifier));
        Ok((plan, scope))
    }

    /// Binds `sql`, a query tierdb writes, with each identifier `placeholder` replaced by
    /// `argument`.
    fn internal_query(
        &mut self,
        sql: &str,
        placeholder: &str,
        argument: &ast::Expr,
    ) -> Result<Plan> {
        let ast::Statement::Query(mut query) = crate::parse::parse_internal_statement(sql)? else {
            return Err(SqlError::internal(format!("{sql} is not a query")));
        };
        let _ = ast::visit_expressions_mut(&mut query, |expr| {
            if matches!(expr, ast::Expr::Identifier(name) if name.value == placeholder) {
                *expr = argument.clone();
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        self.query(&query)
    }
}

/// generate_series's argument and result types: integers (bigint if any is), else
/// numeric; None for other types.
/// generate_series's argument types and its value type for the argument types given, as
/// PostgreSQL 15 resolves its candidates: integers (bigint when one is), numeric, and
/// (timestamp, timestamp, interval) or (timestamptz, timestamptz, interval).
pub(crate) fn series_types(types: &[SqlType]) -> Option<(Vec<SqlType>, SqlType)> {
    if !(2..=3).contains(&types.len()) {
        return None;
    }
    if let Some(ty) = timestamp_series_type(types) {
        return Some((vec![ty.clone(), ty.clone(), SqlType::Interval], ty));
    }
    let integers = types.iter().all(|ty| ty.is_integer() || *ty == SqlType::Unknown);
    let ty = if integers {
        if types.contains(&SqlType::Int8) {
            SqlType::Int8
        } else {
            SqlType::Int4
        }
    } else if types.iter().all(|ty| ty.is_numeric_family() || *ty == SqlType::Unknown)
        && !types.iter().any(|ty| matches!(ty, SqlType::Float4 | SqlType::Float8))
    {
        SqlType::numeric()
    } else {
        return None;
    };
    Some((vec![ty.clone(); types.len()], ty))
}

/// The timestamp generate_series the types call, if one: the candidate with more exact
/// matches among start and stop, timestamptz (the preferred type of the date and time
/// category) on a tie, as func_select_candidate chooses. Dates cast to either; unknown
/// literals take the candidate's types, though not all three at once (that call is an
/// integer series).
fn timestamp_series_type(types: &[SqlType]) -> Option<SqlType> {
    let [start, stop, step] = types else { return None };
    let datetime = |ty: &SqlType| {
        matches!(ty, SqlType::Timestamp | SqlType::TimestampTz | SqlType::Date | SqlType::Unknown)
    };
    let step_fits = matches!(step, SqlType::Interval | SqlType::Unknown);
    let all_unknown = [start, stop, step].iter().all(|ty| **ty == SqlType::Unknown);
    if !datetime(start) || !datetime(stop) || !step_fits || all_unknown {
        return None;
    }
    let exact = |wanted: &SqlType| [start, stop].iter().filter(|ty| **ty == wanted).count();
    if exact(&SqlType::Timestamp) > exact(&SqlType::TimestampTz) {
        Some(SqlType::Timestamp)
    } else {
        Some(SqlType::TimestampTz)
    }
}

/// Renumbers the placeholders of set-returning calls to the ProjectSet's columns, which
/// follow its input's `base` columns.
pub(crate) fn place_set_calls(expr: &mut Expr, base: usize) {
    expr.map_columns(&mut |column| {
        if (SET_COLUMN_BASE..super::window::WINDOW_COLUMN_BASE).contains(&column) {
            base + column - SET_COLUMN_BASE
        } else {
            column
        }
    });
}
