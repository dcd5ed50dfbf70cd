//! INSERT, UPDATE and DELETE binding: targets, defaults, assignments, RETURNING.

use super::*;
use crate::catalog::sequence_of_default;
use crate::catalog::ColumnMeta;
use crate::plan::{DeletePlan, InsertPlan, UpdatePlan};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

pub(crate) fn bind_defaults(
    binder: &mut Binder<'_>,
    table: &TableMeta,
) -> Result<Vec<Option<Expr>>> {
    let scope = super::Scope::default();
    table
        .columns
        .iter()
        .map(|column| match &column.default {
            Some(text) => {
                if let Some(sequence) = sequence_of_default(text) {
                    let name = Expr::Literal(Datum::Text(sequence.to_string()));
                    let (call, _) = bind_call("nextval", vec![(name, SqlType::Text)])?;
                    return Ok(Some(Expr::Cast {
                        expr: Box::new(call),
                        from: SqlType::Int8,
                        to: column.ty.clone(),
                        explicit: false,
                    }));
                }
                // Parsed with the limit its CREATE TABLE was parsed with.
                let expr = Parser::new(&PostgreSqlDialect {})
                    .with_recursion_limit(depth::PARSER_RECURSION_LIMIT)
                    .try_with_sql(text)
                    .and_then(|mut parser| parser.parse_expr())
                    .map_err(|error| {
                        SqlError::internal(format!("stored default does not parse: {error}"))
                    })?;
                let (bound, from) = binder.expr(&expr, &scope, Some(&column.ty))?;
                Ok(Some(super::coerce(bound, &from, &column.ty, false)?))
            }
            None => Ok(None),
        })
        .collect()
}

pub(crate) fn bind_insert(binder: &mut Binder<'_>, insert: &ast::Insert) -> Result<InsertPlan> {
    let ast::TableObject::TableName(name) = &insert.table else {
        return Err(SqlError::unsupported("INSERT into a table function"));
    };
    let table = binder.bind_table(binder.table(name)?)?;
    if insert.on.is_some() {
        return Err(SqlError::unsupported("ON CONFLICT is not supported"));
    }
    let targets: Vec<usize> = if insert.columns.is_empty() {
        (0..table.columns.len()).collect()
    } else {
        insert
            .columns
            .iter()
            .map(|column| {
                let column = object_name(column)?;
                table.column_index(&column).ok_or_else(|| {
                    SqlError::new(
                        "42703",
                        format!(
                            "column \"{column}\" of relation \"{}\" does not exist",
                            table.name
                        ),
                    )
                })
            })
            .collect::<Result<Vec<usize>>>()?
    };
    let defaults = bind_defaults(binder, &table)?;
    let target_types: Vec<SqlType> =
        targets.iter().map(|&target| table.columns[target].ty.clone()).collect();
    let source = match &insert.source {
        None => binder.plan(crate::plan::PlanKind::Values { rows: vec![Vec::new()] }, Vec::new()),
        Some(query) => match query.body.as_ref() {
            ast::SetExpr::Values(values)
                if query.order_by.is_none() && query.limit_clause.is_none() =>
            {
                // DEFAULT in a VALUES row means the column default.
                let mut rows = Vec::new();
                for row in &values.rows {
                    if row.len() > targets.len() {
                        return Err(SqlError::syntax(
                            "INSERT has more expressions than target columns",
                        ));
                    }
                    let mut bound = Vec::new();
                    for (index, item) in row.iter().enumerate() {
                        let target = targets[index];
                        let ty = &target_types[index];
                        let is_default = matches!(item, ast::Expr::Identifier(name) if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("default"));
                        if is_default {
                            bound.push(
                                defaults[target].clone().unwrap_or(Expr::Literal(Datum::Null)),
                            );
                            continue;
                        }
                        let (expr, from) = binder.expr(item, &super::Scope::default(), Some(ty))?;
                        bound.push(super::coerce(expr, &from, ty, false).map_err(|error| {
                            assignment_error(error, &table.columns[target], &from)
                        })?);
                    }
                    rows.push(bound);
                }
                let width = values.rows.first().map_or(0, |row| row.len());
                let columns = target_types
                    .iter()
                    .take(width)
                    .enumerate()
                    .map(|(i, ty)| computed_column(&format!("column{}", i + 1), ty.clone()))
                    .collect();
                binder.plan(crate::plan::PlanKind::Values { rows }, columns)
            }
            _ => {
                let plan = binder.query(query)?;
                if plan.arity() > targets.len() {
                    return Err(SqlError::syntax(
                        "INSERT has more expressions than target columns",
                    ));
                }
                for (index, column) in plan.columns.iter().enumerate() {
                    let target = &table.columns[targets[index]];
                    if !assignable(&column.ty, &target.ty) {
                        return Err(SqlError::datatype_mismatch(format!(
                            "column \"{}\" is of type {} but expression is of type {}",
                            target.name,
                            target.ty.display_name(),
                            column.ty.display_name()
                        )));
                    }
                }
                plan
            }
        },
    };
    let targets = targets[..source.arity().min(targets.len())].to_vec();
    let returning = match &insert.returning {
        Some(items) => Some(binder.returning(items, &table)?),
        None => None,
    };
    Ok(InsertPlan { table, targets, source, defaults, returning })
}

pub(crate) fn assignable(from: &SqlType, to: &SqlType) -> bool {
    from == to
        || *from == SqlType::Unknown
        || (from.is_numeric_family() && to.is_numeric_family())
        || to.is_text()
        || (from.is_temporal() && to.is_temporal())
}

pub(crate) fn assignment_error(error: SqlError, column: &ColumnMeta, from: &SqlType) -> SqlError {
    if error.sqlstate == "42804" {
        SqlError::datatype_mismatch(format!(
            "column \"{}\" is of type {} but expression is of type {}",
            column.name,
            column.ty.display_name(),
            from.display_name()
        ))
    } else {
        error
    }
}

pub(crate) fn bind_update(binder: &mut Binder<'_>, update: &ast::Update) -> Result<UpdatePlan> {
    if update.from.is_some() {
        return Err(SqlError::unsupported("UPDATE ... FROM is not supported"));
    }
    let (table, alias) = match &update.table.relation {
        ast::TableFactor::Table { name, alias, .. } => (
            binder.bind_table(binder.table(name)?)?,
            alias.as_ref().map(|alias| ident(&alias.name)),
        ),
        _ => return Err(SqlError::unsupported("UPDATE of a non-table")),
    };
    let (scan, scope) = binder.table_scope(&table, alias.as_deref());
    let mut assignments = Vec::new();
    for assignment in &update.assignments {
        let ast::AssignmentTarget::ColumnName(column) = &assignment.target else {
            return Err(SqlError::unsupported("multi-column assignment"));
        };
        let column = object_name(column)?;
        let position = table.column_index(&column).ok_or_else(|| {
            SqlError::new(
                "42703",
                format!("column \"{column}\" of relation \"{}\" does not exist", table.name),
            )
        })?;
        let ty = table.columns[position].ty.clone();
        let is_default = matches!(&assignment.value, ast::Expr::Identifier(name) if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("default"));
        let expr = if is_default {
            bind_defaults(binder, &table)?[position].clone().unwrap_or(Expr::Literal(Datum::Null))
        } else {
            let (expr, from) = binder.expr(&assignment.value, &scope, Some(&ty))?;
            super::coerce(expr, &from, &ty, false)
                .map_err(|error| assignment_error(error, &table.columns[position], &from))?
        };
        assignments.push((position, expr));
    }
    let (scan, filter, returning) = bind_target_rows(
        binder,
        scan,
        &scope,
        &table,
        update.selection.as_ref(),
        update.returning.as_deref(),
    )?;
    Ok(UpdatePlan { table, scan, assignments, filter, returning })
}

/// The part UPDATE and DELETE share: the WHERE clause over the target's scan (which then
/// emits row keys) and the RETURNING list.
#[allow(clippy::type_complexity)]
fn bind_target_rows(
    binder: &mut Binder<'_>,
    scan: Plan,
    scope: &Scope,
    table: &BoundTable,
    selection: Option<&ast::Expr>,
    returning: Option<&[ast::SelectItem]>,
) -> Result<(Plan, Option<Expr>, Option<(Vec<Expr>, Vec<OutputColumn>)>)> {
    let filter = match selection {
        Some(selection) => Some(binder.coerced(selection, scope, &SqlType::Bool)?),
        None => None,
    };
    let mut scan = match &filter {
        Some(filter) => binder.filter(scan, filter.clone()),
        None => scan,
    };
    set_emit_key(&mut scan);
    let returning = match returning {
        Some(items) => Some(binder.returning(items, table)?),
        None => None,
    };
    Ok((scan, filter, returning))
}

pub(crate) fn bind_delete(binder: &mut Binder<'_>, delete: &ast::Delete) -> Result<DeletePlan> {
    let from = match &delete.from {
        ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => from,
    };
    if from.len() != 1 || !from[0].joins.is_empty() || delete.using.is_some() {
        return Err(SqlError::unsupported("DELETE with USING or joins is not supported"));
    }
    let (table, alias) = match &from[0].relation {
        ast::TableFactor::Table { name, alias, .. } => (
            binder.bind_table(binder.table(name)?)?,
            alias.as_ref().map(|alias| ident(&alias.name)),
        ),
        _ => return Err(SqlError::unsupported("DELETE from a non-table")),
    };
    let (scan, scope) = binder.table_scope(&table, alias.as_deref());
    let (scan, filter, returning) = bind_target_rows(
        binder,
        scan,
        &scope,
        &table,
        delete.selection.as_ref(),
        delete.returning.as_deref(),
    )?;
    Ok(DeletePlan { table, scan, filter, returning })
}

pub(crate) fn set_emit_key(plan: &mut Plan) {
    if let crate::plan::PlanKind::Scan { emit_key, .. } = &mut plan.kind {
        *emit_key = true;
    }
}
