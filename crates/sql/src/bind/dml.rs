//! INSERT, UPDATE and DELETE binding: targets, sources, the rows UPDATE and DELETE touch,
//! RETURNING.

use super::assignments::{
    assignable, assignment_error, bind_assignments, bind_defaults, is_default_keyword,
};
use super::*;
use crate::plan::{DeletePlan, InsertPlan, UpdatePlan};

pub(crate) fn bind_insert(binder: &mut Binder<'_>, insert: &ast::Insert) -> Result<InsertPlan> {
    let ast::TableObject::TableName(name) = &insert.table else {
        return Err(SqlError::unsupported("INSERT into a table function"));
    };
    let table = binder.bind_table(binder.table(name)?)?;
    let alias = insert.table_alias.as_ref().map(|alias| ident(&alias.alias));
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
    check_identity_values(&table, &targets, insert.source.as_deref())?;
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
                        let is_default = is_default_keyword(item);
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
    let on_conflict = match &insert.on {
        None => None,
        Some(ast::OnInsert::OnConflict(on_conflict)) => Some(super::on_conflict::bind_on_conflict(
            binder,
            &table,
            alias.as_deref(),
            on_conflict,
        )?),
        Some(_) => return Err(SqlError::unsupported("ON DUPLICATE KEY UPDATE")),
    };
    let returning = match &insert.returning {
        Some(items) => Some(binder.returning_as(items, &table, alias.as_deref())?),
        None => None,
    };
    Ok(InsertPlan { table, targets, source, defaults, on_conflict, returning })
}

/// A GENERATED ALWAYS AS IDENTITY column takes only DEFAULT (PostgreSQL's 428C9; tierdb's
/// parser has no OVERRIDING SYSTEM VALUE, so the override is a syntax error, never ignored).
fn check_identity_values(
    table: &BoundTable,
    targets: &[usize],
    source: Option<&ast::Query>,
) -> Result<()> {
    let Some(source) = source else { return Ok(()) };
    for (index, &target) in targets.iter().enumerate() {
        let column = &table.columns[target];
        if column.identity != Some(crate::catalog::Identity::Always) {
            continue;
        }
        let only_defaults = match source.body.as_ref() {
            ast::SetExpr::Values(values) => {
                values.rows.iter().all(|row| row.get(index).is_none_or(is_default_keyword))
            }
            _ => false,
        };
        if !only_defaults {
            return Err(SqlError::new(
                "428C9",
                format!("cannot insert a non-DEFAULT value into column \"{}\"", column.name),
            ));
        }
    }
    Ok(())
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
    let assignments = bind_assignments(binder, &table, &update.assignments, &scope)?;
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
