//! Expression evaluation over a row: operators, LIKE, arithmetic, subqueries, calls.

use std::borrow::Cow;

use super::*;

/// Runs a subquery (cached when uncorrelated) in the context of `row`.
/// Whether `subquery_rows` keeps the rows for the statement's next evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowCache {
    /// An uncorrelated subquery: the same rows every time, run once.
    Keep,
    /// A correlated one (other rows each time), or a caller that keeps its own form of
    /// the rows (IN keeps them hashed).
    Skip,
}

pub(crate) fn subquery_rows(
    plan: &Plan,
    cache: RowCache,
    id: usize,
    row: &[Datum],
    ctx: &mut Ctx<'_>,
    limit: Option<usize>,
) -> Result<Vec<Row>> {
    if cache == RowCache::Keep {
        if let Some(CachedSubquery::Rows(rows)) = ctx.subquery_cache.get(&id) {
            return Ok(rows.clone());
        }
    }
    if ctx.txn.is_none() {
        return Err(SqlError::unsupported("subqueries are not supported in this position"));
    }
    ctx.outer.push(row.to_vec());
    let mut rows = Vec::new();
    let outcome = run(plan, ctx, &[], &mut |_, row| {
        rows.push(row);
        Ok(limit.is_none_or(|limit| rows.len() < limit))
    });
    ctx.outer.pop();
    outcome?;
    if cache == RowCache::Keep {
        ctx.subquery_cache.insert(id, CachedSubquery::Rows(rows.clone()));
    }
    Ok(rows)
}

/// What an uncorrelated subquery left for the next evaluation: its rows, or, for `= ANY
/// (subquery)`, its rows hashed (PostgreSQL's hashed subplan).
pub enum CachedSubquery {
    Rows(Vec<Row>),
    In(super::subquery_comparison::HashedRows),
}

/// Evaluates a projection over a row the caller gives up. A column that no later expression
/// reads is moved out instead of cloned (a text value is then not copied again per row).
pub(crate) fn project(exprs: &[Expr], mut row: Row, ctx: &mut Ctx<'_>) -> Result<Row> {
    let mut projected = Vec::with_capacity(exprs.len());
    for (position, expr) in exprs.iter().enumerate() {
        let movable = match expr {
            Expr::Column(index) => {
                *index < row.len()
                    && exprs[position + 1..]
                        .iter()
                        .all(|later| matches!(later, Expr::Column(other) if other != index))
            }
            _ => false,
        };
        projected.push(match expr {
            Expr::Column(index) if movable => std::mem::replace(&mut row[*index], Datum::Null),
            _ => eval(expr, &row, ctx)?,
        });
    }
    Ok(projected)
}

/// Evaluates an expression over `row`.
pub fn eval(expr: &Expr, row: &[Datum], ctx: &mut Ctx<'_>) -> Result<Datum> {
    // Leaves do not recurse: the stack check (a thread-local read and a stack probe) is paid
    // by the nodes above them only, not once per column read per row.
    if !matches!(expr, Expr::Column(_) | Expr::Literal(_)) {
        depth::check_stack_depth()?;
    }
    Ok(match expr {
        Expr::Column(index) => row
            .get(*index)
            .cloned()
            .ok_or_else(|| SqlError::internal(format!("column {index} out of range")))?,
        Expr::Outer { depth, index } => {
            let position = ctx
                .outer
                .len()
                .checked_sub(*depth)
                .ok_or_else(|| SqlError::internal("outer row missing"))?;
            ctx.outer[position].get(*index).cloned().unwrap_or(Datum::Null)
        }
        Expr::Literal(datum) => datum.clone(),
        Expr::Parameter(index) => ctx.params.get(*index).cloned().ok_or_else(|| {
            SqlError::new("08P01", format!("there is no parameter ${}", index + 1))
        })?,
        Expr::Arithmetic { op, left, right, ty } => {
            let left = operand(left, row, ctx)?;
            let right = operand(right, row, ctx)?;
            types::arithmetic(*op, &left, &right, ty)?
        }
        Expr::Negate { expr, ty } => types::negate(eval(expr, row, ctx)?, ty)?,
        Expr::Compare { op, left, right, bpchar } => {
            let left = operand(left, row, ctx)?;
            let right = operand(right, row, ctx)?;
            compare(*op, &left, &right, *bpchar)
        }
        Expr::Concat(left, right) => {
            let left = eval(left, row, ctx)?;
            let right = eval(right, row, ctx)?;
            match (left, right) {
                (Datum::Text(mut left), Datum::Text(right)) => {
                    functions::check_text_bytes(left.len().saturating_add(right.len()))?;
                    left.push_str(&right);
                    Datum::Text(left)
                }
                _ => Datum::Null,
            }
        }
        Expr::And(..) | Expr::Or(..) | Expr::Not(_) => {
            truth(expr, row, ctx)?.map_or(Datum::Null, Datum::Bool)
        }
        Expr::IsNull { expr, negated } => {
            Datum::Bool(operand(expr, row, ctx)?.is_null() != *negated)
        }
        Expr::IsBool { expr, value, negated } => {
            let matches = matches!(eval(expr, row, ctx)?, Datum::Bool(flag) if flag == *value);
            Datum::Bool(matches != *negated)
        }
        Expr::IsDistinct { left, right, negated } => {
            let left = operand(left, row, ctx)?;
            let right = operand(right, row, ctx)?;
            let distinct = match (left.is_null(), right.is_null()) {
                (true, true) => false,
                (true, false) | (false, true) => true,
                _ => left.compare(&right) != Some(Ordering::Equal),
            };
            Datum::Bool(distinct != *negated)
        }
        Expr::Cast { expr, from, to, explicit } => {
            let value = eval(expr, row, ctx)?;
            let from = if *from == SqlType::Unknown { SqlType::Text } else { from.clone() };
            match to {
                SqlType::Object(kind) if from != *to => {
                    super::objects::cast_to_object(value, &from, *kind, ctx.session)?
                }
                _ => types::cast(value, &from, to, *explicit)?,
            }
        }
        Expr::Function(call) if call.function.name() == "coalesce" => {
            // Arguments after the first non-NULL one are not evaluated (their errors do not
            // happen), as in PostgreSQL.
            for arg in &call.args {
                let value = eval(arg, row, ctx)?;
                if !value.is_null() {
                    return Ok(value);
                }
            }
            Datum::Null
        }
        Expr::Function(call) => call_function(call, row, ctx)?,
        Expr::Case { operand, branches, otherwise } => {
            eval_case(operand.as_deref(), branches, otherwise.as_deref(), row, ctx)?
        }
        Expr::InList { expr, list, negated } => eval_in_list(expr, list, *negated, row, ctx)?,
        Expr::InSubquery { .. } => {
            super::subquery_comparison::eval_subquery_comparison(expr, row, ctx)?
        }
        Expr::Exists { plan, negated, correlated, id } => {
            let subquery = Subquery { plan, correlated: *correlated, id: *id };
            Datum::Bool(subquery.rows(row, ctx, Some(1))?.is_empty() == *negated)
        }
        Expr::ArraySubquery { plan, correlated, id } => {
            eval_array_subquery(&Subquery { plan, correlated: *correlated, id: *id }, row, ctx)?
        }
        Expr::ScalarSubquery { plan, correlated, id } => {
            eval_scalar_subquery(&Subquery { plan, correlated: *correlated, id: *id }, row, ctx)?
        }
        Expr::Like { expr, pattern, negated, case_insensitive } => {
            eval_like(expr, pattern, *negated, *case_insensitive, row, ctx)?
        }
        Expr::MakeArray(elements) => types::array_datum(
            elements.iter().map(|element| eval(element, row, ctx)).collect::<Result<_>>()?,
        ),
        Expr::Subscript { .. } | Expr::AnyAll { .. } => eval_array_operation(expr, row, ctx)?,
    })
}

/// An operand's value: borrowed when it is a column of the row or a literal (no copy of a
/// string or array per row), else evaluated.
fn operand<'r>(expr: &'r Expr, row: &'r [Datum], ctx: &mut Ctx<'_>) -> Result<Cow<'r, Datum>> {
    match expr {
        Expr::Column(index) => row
            .get(*index)
            .map(Cow::Borrowed)
            .ok_or_else(|| SqlError::internal(format!("column {index} out of range"))),
        Expr::Literal(datum) => Ok(Cow::Borrowed(datum)),
        _ => eval(expr, row, ctx).map(Cow::Owned),
    }
}

/// A subscript, slice or `op ANY/ALL (array)`.
fn eval_array_operation(expr: &Expr, row: &[Datum], ctx: &mut Ctx<'_>) -> Result<Datum> {
    let optional = |bound: &Option<Box<Expr>>, ctx: &mut Ctx<'_>| {
        bound.as_ref().map(|bound| eval(bound, row, ctx)).transpose()
    };
    match expr {
        Expr::Subscript { array, lower, upper, slice } => {
            let array = eval(array, row, ctx)?;
            let lower = optional(lower, ctx)?;
            let upper = optional(upper, ctx)?;
            super::arrays::subscript(&array, lower, upper, *slice)
        }
        Expr::AnyAll { op, left, array, all } => {
            let left = eval(left, row, ctx)?;
            let array = eval(array, row, ctx)?;
            super::arrays::any_all(*op, &left, &array, *all)
        }
        other => Err(SqlError::internal(format!("not an array operation: {other:?}"))),
    }
}

/// A boolean expression's truth value (None: NULL), without a datum per node: the filters
/// of scans, joins and Filter nodes run per row. AND, OR, NOT and comparisons of columns
/// and constants are evaluated here; anything else by `eval`.
pub(crate) fn truth(expr: &Expr, row: &[Datum], ctx: &mut Ctx<'_>) -> Result<Option<bool>> {
    match expr {
        Expr::And(left, right) => connective(left, right, false, row, ctx),
        Expr::Or(left, right) => connective(left, right, true, row, ctx),
        Expr::Not(inner) => {
            depth::check_stack_depth()?;
            Ok(truth(inner, row, ctx)?.map(|value| !value))
        }
        Expr::Compare { op, left, right, bpchar } => {
            let left = operand(left, row, ctx)?;
            let right = operand(right, row, ctx)?;
            Ok(super::compare::compare_truth(*op, &left, &right, *bpchar))
        }
        _ => Ok(match eval(expr, row, ctx)? {
            Datum::Bool(value) => Some(value),
            _ => None,
        }),
    }
}

/// Whether a predicate holds (is true, not false or NULL) for `row`.
pub(crate) fn holds(expr: &Expr, row: &[Datum], ctx: &mut Ctx<'_>) -> Result<bool> {
    Ok(truth(expr, row, ctx)? == Some(true))
}

/// AND (`decisive` false) and OR (`decisive` true) with SQL's three-valued logic: the
/// decisive value on either side decides, else NULL on either side makes NULL. The right
/// side is not evaluated when the left one decides.
fn connective(
    left: &Expr,
    right: &Expr,
    decisive: bool,
    row: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Option<bool>> {
    depth::check_stack_depth()?;
    let left = truth(left, row, ctx)?;
    if left == Some(decisive) {
        return Ok(left);
    }
    Ok(match (left, truth(right, row, ctx)?) {
        (_, Some(value)) if value == decisive => Some(decisive),
        (Some(_), Some(_)) => Some(!decisive),
        _ => None,
    })
}

/// CASE: the result of the first branch whose condition holds (or whose value equals the
/// operand), else the ELSE value or NULL.
fn eval_case(
    operand: Option<&Expr>,
    branches: &[(Expr, Expr)],
    otherwise: Option<&Expr>,
    row: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Datum> {
    let operand = match operand {
        Some(operand) => Some(eval(operand, row, ctx)?),
        None => None,
    };
    for (condition, result) in branches {
        let hit = match &operand {
            Some(value) => {
                let candidate = eval(condition, row, ctx)?;
                value.compare(&candidate) == Some(Ordering::Equal)
            }
            None => holds(condition, row, ctx)?,
        };
        if hit {
            return eval(result, row, ctx);
        }
    }
    match otherwise {
        Some(otherwise) => eval(otherwise, row, ctx),
        None => Ok(Datum::Null),
    }
}

/// `value [NOT] IN (candidates)` with SQL's three-valued logic: NULL when no candidate
/// matches and one of them is NULL.
fn in_candidates<'c>(
    value: &Datum,
    candidates: impl Iterator<Item = Result<Cow<'c, Datum>>>,
    negated: bool,
) -> Result<Datum> {
    let mut saw_null = false;
    for candidate in candidates {
        let candidate = candidate?;
        if candidate.is_null() {
            saw_null = true;
        } else if value.compare(&candidate) == Some(Ordering::Equal) {
            return Ok(Datum::Bool(!negated));
        }
    }
    Ok(if saw_null { Datum::Null } else { Datum::Bool(negated) })
}

fn eval_in_list(
    expr: &Expr,
    list: &[Expr],
    negated: bool,
    row: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Datum> {
    let value = operand(expr, row, ctx)?;
    if value.is_null() {
        return Ok(Datum::Null);
    }
    // Lazily, as PostgreSQL: the candidates after the first match are not evaluated.
    in_candidates(&value, list.iter().map(|item| operand(item, row, ctx)), negated)
}

/// The subquery's identity: its plan, whether it reads the outer row, and its cache id.
struct Subquery<'p> {
    plan: &'p Plan,
    correlated: bool,
    id: usize,
}

impl Subquery<'_> {
    fn rows(&self, row: &[Datum], ctx: &mut Ctx<'_>, limit: Option<usize>) -> Result<Vec<Row>> {
        let cache = if self.correlated { RowCache::Skip } else { RowCache::Keep };
        subquery_rows(self.plan, cache, self.id, row, ctx, limit)
    }
}

/// ARRAY(subquery), as the text of a one-dimensional array.
fn eval_array_subquery(subquery: &Subquery<'_>, row: &[Datum], ctx: &mut Ctx<'_>) -> Result<Datum> {
    let rows = subquery.rows(row, ctx, None)?;
    if rows.len() > types::ARRAY_ELEMENTS_MAX {
        return Err(types::array_too_large());
    }
    Ok(types::array_datum(rows.into_iter().map(|mut row| row.swap_remove(0)).collect()))
}

/// A scalar subquery: NULL without rows, its value with one, 21000 with more.
fn eval_scalar_subquery(
    subquery: &Subquery<'_>,
    row: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Datum> {
    let mut rows = subquery.rows(row, ctx, Some(2))?;
    match rows.len() {
        0 => Ok(Datum::Null),
        1 => Ok(rows.swap_remove(0).swap_remove(0)),
        _ => Err(SqlError::new(
            "21000",
            "more than one row returned by a subquery used as an expression",
        )),
    }
}

fn eval_like(
    expr: &Expr,
    pattern: &Expr,
    negated: bool,
    case_insensitive: bool,
    row: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Datum> {
    let value = operand(expr, row, ctx)?;
    let pattern = operand(pattern, row, ctx)?;
    Ok(match (&*value, &*pattern) {
        (Datum::Text(value), Datum::Text(pattern)) => {
            let matched = if case_insensitive {
                like(&value.to_lowercase(), &pattern.to_lowercase())
            } else {
                like(value, pattern)
            };
            Datum::Bool(matched != negated)
        }
        _ => Datum::Null,
    })
}

/// Evaluates a scalar function call through its registry entry.
fn call_function(call: &FunctionCall, row: &[Datum], ctx: &mut Ctx<'_>) -> Result<Datum> {
    let args = call.args.iter().map(|arg| eval(arg, row, ctx)).collect::<Result<Vec<Datum>>>()?;
    let catalog = ctx.session.catalog;
    let session_info = ctx.session;
    let sequence = |call: crate::functions::SequenceCall<'_>| {
        super::sequences::sequence_call(call, session_info)
    };
    let transaction_id = ctx.txn.as_ref().map(|transaction| transaction.virtual_id());
    let no_limits = tierdb_engine::WaitLimits::default();
    let limits = ctx.interrupt.unwrap_or(&no_limits);
    let advisory = |call: crate::functions::AdvisoryCall| {
        super::advisory::advisory_call(call, session_info, transaction_id, limits)
    };
    let format_type = |oid: i64, typmod: i64| crate::system::format_type(oid, typmod);
    let index_definition =
        |oid: i64, pretty: bool| crate::system::index_definition(catalog, oid, pretty);
    let view_definition =
        |oid: i64| crate::system::view_definition(catalog, oid, session_info.public_on_path);
    let session = ctx.session;
    let constraint_definition = |oid: i64, pretty: bool| {
        // A referenced table off the search_path is printed qualified (pg_dump sets it
        // empty).
        let path = session.setting("search_path").unwrap_or_default();
        let visible = crate::bind::search_path_schemas(&path, true);
        crate::system::constraint_definition(catalog, oid, pretty, &visible)
    };
    let object_by_name = |kind, name: &str| {
        Ok(super::objects::object_by_name(kind, name, session)?.map(Datum::Object))
    };
    let serial_sequence =
        |table: &str, column: &str| super::objects::serial_sequence(table, column, session);
    let setting = |name: &str| session.setting(name);
    let change_setting =
        |name: &str, value: Option<&str>, local: bool| session.change_setting(name, value, local);
    let role_name = |oid: i64| {
        let role = catalog.role_by_oid(u32::try_from(oid).ok()?)?;
        Some(role.name.clone())
    };
    let current_schemas = |implicit: bool| {
        let path = session.setting("search_path").unwrap_or_default();
        crate::bind::search_path_schemas(&path, implicit)
    };
    let sequence_state = |oid: i64| {
        let state = super::objects::sequence_state(oid, session)?;
        Ok((state.last_value, state.log_count, state.is_called))
    };
    let txn = std::cell::RefCell::new(ctx.txn.as_deref_mut());
    let check_vector_index = |oid: i64| match txn.borrow_mut().as_deref_mut() {
        Some(txn) => super::vector_check::check_vector_index(oid, session, txn),
        None => Err(SqlError::unsupported("tierdb_check_vector_index outside a transaction")),
    };
    let has_privilege = |call: crate::functions::PrivilegeCall<'_>| {
        super::privilege_checks::has_privilege(call, session)
    };
    let context = FunctionContext {
        database: ctx.session.database,
        user: ctx.session.user,
        backend_pid: ctx.session.backend_pid,
        statement_time_micros: ctx.statement_time_micros,
        sequence: &sequence,
        advisory: &advisory,
        format_type: &format_type,
        index_definition: &index_definition,
        view_definition: &view_definition,
        constraint_definition: &constraint_definition,
        object_by_name: &object_by_name,
        serial_sequence: &serial_sequence,
        setting: &setting,
        change_setting: &change_setting,
        role_name: &role_name,
        current_schemas: &current_schemas,
        sequence_state: &sequence_state,
        check_vector_index: &check_vector_index,
        has_privilege: &has_privilege,
        relation_visible: &|oid| super::objects::relation_visible(oid, session),
        relation_size: &|oid, kind| super::relation_sizes::relation_size(oid, kind, session),
        database_pages: &|| catalog.engine().store().pages_in_use(),
    };
    call.function.call(args, &call.arg_types, &call.output, &context)
}

/// SQL LIKE with `%` and `_` and backslash escapes.
pub fn like(value: &str, pattern: &str) -> bool {
    let value: Vec<char> = value.chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    // Iterative matcher with backtracking on the last `%`.
    let (mut v, mut p) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while v < value.len() {
        if p < pattern.len() {
            match pattern[p] {
                '%' => {
                    star = Some((p, v));
                    p += 1;
                    continue;
                }
                '_' => {
                    v += 1;
                    p += 1;
                    continue;
                }
                '\\' if p + 1 < pattern.len() && pattern[p + 1] == value[v] => {
                    v += 1;
                    p += 2;
                    continue;
                }
                // An escaped character that does not match.
                '\\' if p + 1 < pattern.len() => {}
                c if c == value[v] => {
                    v += 1;
                    p += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((star_p, star_v)) => {
                p = star_p + 1;
                v = star_v + 1;
                star = Some((star_p, star_v + 1));
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == '%' {
        p += 1;
    }
    p == pattern.len()
}
