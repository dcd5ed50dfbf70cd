//! Window function calls (`f(...) OVER (PARTITION BY ... ORDER BY ... frame)`) in the select
//! list and ORDER BY.
//!
//! While the select list is bound, each call is recorded (`PendingWindow`) and stands for a
//! placeholder column, `WINDOW_COLUMN_BASE + its index`. After the aggregate (if any), the
//! calls are planned: one Window node per distinct window, each over a Sort by the window's
//! PARTITION BY and ORDER BY expressions (appended to the row by a Project), and the
//! placeholders are renumbered to the Window nodes' output columns.

use super::*;
use crate::parse::frame_exclusion::{split_window_name, FrameExclusion as ParsedExclusion};
use crate::plan::{FrameExclusion, WindowCall, WindowFrame, WindowFunction, WindowSpec};

/// Placeholder columns of window calls start here (far above any real row width).
pub(super) const WINDOW_COLUMN_BASE: usize = usize::MAX / 2;

/// A window call of the SELECT being bound.
pub(crate) struct PendingWindow {
    /// The OVER clause's text: calls with the same window share a Window node.
    key: String,
    partition: Vec<Expr>,
    /// ORDER BY expressions with (descending, nulls_first).
    order: Vec<(Expr, bool, bool)>,
    frame: WindowFrame,
    call: WindowCall,
}

impl<'a> Binder<'a> {
    /// Binds a call with OVER; its value is a placeholder column (module docs).
    pub(crate) fn window_call(
        &mut self,
        function: &ast::Function,
        name: &str,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        // Windows of this SELECT's WINDOW clause were resolved (bind/named_windows.rs); a
        // name left is one the clause does not define.
        let spec = match &function.over {
            Some(ast::WindowType::WindowSpec(spec)) => spec,
            Some(ast::WindowType::NamedWindow(name)) => return Err(no_such_window(name)),
            None => unreachable!("a window call has OVER"),
        };
        // The name may carry the frame's exclusion (parse/frame_exclusion.rs).
        let (base, exclusion) = split_window_name(spec);
        let exclusion = match exclusion {
            ParsedExclusion::NoOthers => FrameExclusion::NoOthers,
            ParsedExclusion::CurrentRow => FrameExclusion::CurrentRow,
            ParsedExclusion::Group => FrameExclusion::Group,
            ParsedExclusion::Ties => FrameExclusion::Ties,
        };
        if let Some(base) = base {
            return Err(no_such_window(&base));
        }
        if self.in_window_call {
            return Err(SqlError::new("42P20", "window function calls cannot be nested"));
        }
        if self.windows.is_none() {
            let place =
                self.clause.map_or_else(|| "here".to_string(), |clause| format!("in {clause}"));
            return Err(SqlError::new(
                "42P20",
                format!("window functions are not allowed {place}"),
            ));
        }
        let (args, distinct, star) = call_arguments(function, name)?;
        if distinct {
            return Err(SqlError::unsupported("DISTINCT is not implemented for window functions"));
        }
        let args = super::whole_row::whole_row_arguments(name, &args, scope)?.unwrap_or(args);
        self.in_window_call = true;
        let bound = self.bind_window_parts(spec, &args, scope).and_then(|parts| {
            let frame =
                self.window_frame(spec.window_frame.as_ref(), exclusion, &parts.3, scope)?;
            Ok((parts, frame))
        });
        self.in_window_call = false;
        let ((partition, order, args, _), frame) = bound?;
        let mut call = window_function(name, star, args)?;
        if let Some(filter) = &function.filter {
            self.window_filter(filter, scope, &mut call)?;
        }
        let output = call.output.clone();
        let windows = self.windows.as_mut().expect("checked above");
        let index = windows.len();
        windows.push(PendingWindow { key: spec.to_string(), partition, order, frame, call });
        Ok((Expr::Column(WINDOW_COLUMN_BASE + index), output))
    }

    /// A window aggregate's `FILTER (WHERE ...)`, over the window's input row (PostgreSQL:
    /// 0A000 for a window function that is not an aggregate, 42804 for a non-boolean).
    fn window_filter(
        &mut self,
        filter: &ast::Expr,
        scope: &Scope,
        call: &mut WindowCall,
    ) -> Result<()> {
        let WindowFunction::Aggregate(aggregate) = &mut call.function else {
            return Err(SqlError::unsupported(
                "FILTER is not implemented for non-aggregate window functions",
            ));
        };
        self.in_window_call = true;
        let saved_clause = self.clause.replace("FILTER");
        let bound = self.expr(filter, scope, None);
        self.clause = saved_clause;
        self.in_window_call = false;
        let (expr, ty) = bound?;
        aggregate.filter = Some(filter_condition(expr, &ty)?);
        Ok(())
    }

    #[allow(clippy::type_complexity)]
    fn bind_window_parts(
        &mut self,
        spec: &ast::WindowSpec,
        args: &[ast::Expr],
        scope: &Scope,
    ) -> Result<(Vec<Expr>, Vec<(Expr, bool, bool)>, Vec<(Expr, SqlType)>, Vec<SqlType>)> {
        let mut partition = Vec::new();
        for expr in &spec.partition_by {
            partition.push(self.expr(expr, scope, None)?.0);
        }
        let mut order = Vec::new();
        let mut order_types = Vec::new();
        for item in &spec.order_by {
            let descending = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
            let nulls_first = item.options.nulls_first.unwrap_or(descending);
            let (expr, ty) = self.expr(&item.expr, scope, None)?;
            order.push((expr, descending, nulls_first));
            order_types.push(ty);
        }
        let mut bound = Vec::new();
        for arg in args {
            bound.push(self.expr(arg, scope, None)?);
        }
        Ok((partition, order, bound, order_types))
    }

    /// Plans the window calls over `plan`; returns the plan and each call's output column.
    pub(crate) fn window_plan(
        &mut self,
        mut plan: Plan,
        windows: Vec<PendingWindow>,
    ) -> (Plan, Vec<usize>) {
        let mut positions = vec![0; windows.len()];
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for (index, window) in windows.iter().enumerate() {
            match groups.iter_mut().find(|(key, _)| *key == window.key) {
                Some((_, members)) => members.push(index),
                None => groups.push((window.key.clone(), vec![index])),
            }
        }
        for (_, members) in groups {
            let first = &windows[members[0]];
            let base = plan.arity();
            let keys: Vec<Expr> = first
                .partition
                .iter()
                .cloned()
                .chain(first.order.iter().map(|(expr, ..)| expr.clone()))
                .collect();
            // The window's columns: PARTITION BY then ORDER BY, appended after `base`.
            let partition_count = first.partition.len();
            let spec = WindowSpec {
                partition: (base..base + partition_count).collect(),
                order: first
                    .order
                    .iter()
                    .enumerate()
                    .map(|(offset, (_, descending, nulls_first))| SortKey {
                        column: base + partition_count + offset,
                        descending: *descending,
                        nulls_first: *nulls_first,
                    })
                    .collect(),
                frame: first.frame.clone(),
            };
            let mut columns = plan.columns.clone();
            if !keys.is_empty() {
                let mut exprs: Vec<Expr> = (0..base).map(Expr::Column).collect();
                exprs.extend(keys.iter().cloned());
                columns.extend(keys.iter().map(|_| computed_column("?window?", SqlType::Text)));
                plan =
                    self.plan(PlanKind::Project { input: Box::new(plan), exprs }, columns.clone());
                let partition_keys = spec.partition.iter().map(|&column| SortKey {
                    column,
                    descending: false,
                    nulls_first: false,
                });
                let sort_keys = partition_keys.chain(spec.order.iter().cloned()).collect();
                plan = self.plan(
                    PlanKind::Sort { input: Box::new(plan), keys: sort_keys },
                    columns.clone(),
                );
            }
            let width = columns.len();
            let mut calls = Vec::new();
            for (slot, &member) in members.iter().enumerate() {
                positions[member] = width + slot;
                let call = windows[member].call.clone();
                columns.push(computed_column(&call.function.name(), call.output.clone()));
                calls.push(call);
            }
            plan = self.plan(PlanKind::Window { input: Box::new(plan), spec, calls }, columns);
        }
        (plan, positions)
    }
}

impl<'a> Binder<'a> {
    /// SELECT DISTINCT ON (`on`): the first row of each group of equal `on` values in the
    /// ORDER BY's order (`order`), planned as `row_number() OVER (PARTITION BY on ORDER BY
    /// order) = 1` over `plan`.
    pub(crate) fn distinct_on(
        &mut self,
        plan: Plan,
        on: Vec<Expr>,
        order: Vec<(Expr, bool, bool)>,
    ) -> Plan {
        let call = WindowCall {
            function: WindowFunction::RowNumber,
            args: Vec::new(),
            output: SqlType::Int8,
        };
        let window = PendingWindow {
            key: String::new(),
            partition: on,
            order,
            frame: WindowFrame::DEFAULT,
            call,
        };
        let (plan, positions) = self.window_plan(plan, vec![window]);
        let first = Expr::Compare {
            op: CompareOp::Eq,
            left: Box::new(Expr::Column(positions[0])),
            right: Box::new(Expr::Literal(Datum::Int(1))),
            bpchar: false,
        };
        self.filter(plan, first)
    }

    /// The DISTINCT ON expressions over the select list's input (a number is a select-list
    /// position, as in ORDER BY).
    pub(crate) fn distinct_on_exprs(
        &mut self,
        exprs: &[ast::Expr],
        items: &[Expr],
        scope: &Scope,
    ) -> Result<Vec<Expr>> {
        let mut bound = Vec::with_capacity(exprs.len());
        for expr in exprs {
            let value = match literal_position(expr) {
                Some(position) if (1..=items.len()).contains(&position) => {
                    items[position - 1].clone()
                }
                Some(position) => {
                    return Err(SqlError::new(
                        "42P10",
                        format!("DISTINCT ON position {position} is not in select list"),
                    ))
                }
                None => self.expr(expr, scope, None)?.0,
            };
            if has_window(&value) {
                return Err(SqlError::unsupported(
                    "window functions in DISTINCT ON are not supported",
                ));
            }
            bound.push(value);
        }
        Ok(bound)
    }
}

/// The ORDER BY must start with the DISTINCT ON expressions (in any order), as PostgreSQL
/// requires: 42P10 otherwise.
pub(crate) fn check_distinct_on_order(on: &[Expr], order: &[(Expr, bool, bool)]) -> Result<()> {
    let on: Vec<String> = on.iter().map(|expr| format!("{expr:?}")).collect();
    let mut matched = Vec::new();
    for (expr, ..) in order {
        if matched.len() == on.len() {
            break;
        }
        let text = format!("{expr:?}");
        if !on.contains(&text) {
            return Err(SqlError::new(
                "42P10",
                "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
            ));
        }
        if !matched.contains(&text) {
            matched.push(text);
        }
    }
    Ok(())
}

/// Renumbers window placeholders in `expr` to the planned columns.
pub(crate) fn place_windows(expr: &mut Expr, positions: &[usize]) {
    expr.map_columns(&mut |column| {
        if column >= WINDOW_COLUMN_BASE {
            positions[column - WINDOW_COLUMN_BASE]
        } else {
            column
        }
    });
}

/// Whether `expr` holds a window call's placeholder.
pub(crate) fn has_window(expr: &Expr) -> bool {
    let mut columns = Vec::new();
    expr.columns(&mut columns);
    columns.iter().any(|&column| column >= WINDOW_COLUMN_BASE)
}

/// The call for a window function name and its bound arguments, with PostgreSQL's types.
fn window_function(name: &str, star: bool, args: Vec<(Expr, SqlType)>) -> Result<WindowCall> {
    let types: Vec<SqlType> = args.iter().map(|(_, ty)| ty.clone()).collect();
    let signature = || {
        let list: Vec<String> = types.iter().map(SqlType::display_name).collect();
        SqlError::undefined_function(&format!("{name}({})", list.join(", ")))
    };
    let value_type =
        |ty: &SqlType| if *ty == SqlType::Unknown { SqlType::Text } else { ty.clone() };
    // The value functions are polymorphic (anycompatible): their result has no type
    // modifier, and lag / lead's default joins the value in their common type.
    let shifted_type = |types: &[SqlType]| -> Result<SqlType> {
        let mut output = value_type(&types[0]);
        if let Some(default) = types.get(2) {
            output = SqlType::common(&output, default).ok_or_else(signature)?;
        }
        Ok(without_typmod(value_type(&output)))
    };
    if let Some(aggregate) = aggregate_function(name, star) {
        super::call::check_aggregate_arguments(aggregate, name, &types)?;
        let mut types = types.clone();
        let (expressions, _): (Vec<Expr>, Vec<SqlType>) = args.into_iter().unzip();
        let expressions = super::call::statistic_arguments(aggregate, expressions, &mut types)?;
        let input = types.first().map_or(SqlType::Int8, value_type);
        let aggregate =
            super::call::structured_json_agg(aggregate, input.array_element().is_some());
        let output = aggregate_output(aggregate, &input)?;
        let args: Vec<(Expr, SqlType)> = expressions.into_iter().zip(types).collect();
        let bool_input =
            matches!(aggregate, AggregateFunction::BoolAnd | AggregateFunction::BoolOr);
        let args = args
            .into_iter()
            .map(|(expr, ty)| match ty {
                // bool_and('t') OVER (): the untyped literal is the boolean it stands for.
                SqlType::Unknown if bool_input => coerce(expr, &ty, &SqlType::Bool, false),
                _ => Ok(expr),
            })
            .collect::<Result<Vec<_>>>()?;
        let input = if bool_input { SqlType::Bool } else { input };
        let call = AggregateCall {
            function: aggregate,
            args,
            distinct: false,
            order: Vec::new(),
            filter: None,
            input,
            output: output.clone(),
        };
        return Ok(WindowCall {
            function: WindowFunction::Aggregate(call),
            args: Vec::new(),
            output,
        });
    }
    let (function, output) = match (name, args.len()) {
        ("row_number", 0) => (WindowFunction::RowNumber, SqlType::Int8),
        ("rank", 0) => (WindowFunction::Rank, SqlType::Int8),
        ("dense_rank", 0) => (WindowFunction::DenseRank, SqlType::Int8),
        ("percent_rank", 0) => (WindowFunction::PercentRank, SqlType::Float8),
        ("cume_dist", 0) => (WindowFunction::CumeDist, SqlType::Float8),
        ("ntile", 1) => (WindowFunction::Ntile, SqlType::Int4),
        ("lag", 1..=3) => (WindowFunction::Lag, shifted_type(&types)?),
        ("lead", 1..=3) => (WindowFunction::Lead, shifted_type(&types)?),
        ("first_value", 1) => (WindowFunction::FirstValue, shifted_type(&types[..1])?),
        ("last_value", 1) => (WindowFunction::LastValue, shifted_type(&types[..1])?),
        ("nth_value", 2) => (WindowFunction::NthValue, shifted_type(&types[..1])?),
        (
            "row_number" | "rank" | "dense_rank" | "percent_rank" | "cume_dist" | "ntile" | "lag"
            | "lead" | "first_value" | "last_value" | "nth_value",
            _,
        ) => return Err(signature()),
        _ => {
            return Err(SqlError::new(
                "42809",
                format!(
                    "OVER specified, but {name} is not a window function nor an aggregate function"
                ),
            ))
        }
    };
    let mut bound = Vec::with_capacity(args.len());
    for (position, (expr, ty)) in args.into_iter().enumerate() {
        // Offsets and counts are integers; the value and lag / lead's default take the
        // result's type.
        let target = match (position, &function) {
            (0, WindowFunction::Ntile) | (1, _) => SqlType::Int4,
            _ => output.clone(),
        };
        bound.push(coerce(expr, &ty, &target, false)?);
    }
    Ok(WindowCall { function, args: bound, output })
}

fn no_such_window(name: &ast::Ident) -> SqlError {
    SqlError::new("42704", format!("window \"{}\" does not exist", ident(name)))
}

/// A type without its modifier, as a polymorphic function's result has it.
pub(super) fn without_typmod(ty: SqlType) -> SqlType {
    match ty {
        SqlType::Numeric { .. } => SqlType::numeric(),
        SqlType::Varchar(_) => SqlType::Varchar(None),
        other => other,
    }
}
