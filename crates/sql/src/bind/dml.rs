//! INSERT, UPDATE and DELETE binding: targets, sources, the rows UPDATE and DELETE touch,
//! RETURNING.

use super::assignments::{
    assignable, assignment_error, bind_assignments, bind_defaults, is_default_keyword,
};
use super::*;
use crate::parse::overriding::Overriding;
use crate::plan::{DeletePlan, InsertPlan, UpdatePlan};

pub(crate) fn bind_insert(binder: &mut Binder<'_>, insert: &ast::Insert) -> Result<InsertPlan> {
    let ast::TableObject::TableName(name) = &insert.table else {
        return Err(SqlError::unsupported("INSERT into a table function"));
    };
    let table = binder.table(name)?;
    refuse_view_target(&table, "insert into")?;
    let stream_source = insert
        .source
        .as_deref()
        .is_some_and(|query| reads_only_other_tables(binder, query, &table));
    let table = binder.bind_target_table(table)?;
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
    let overriding = crate::parse::overriding::overriding(insert);
    if overriding.is_none() {
        check_identity_values(&table, &targets, insert.source.as_deref())?;
    }
    let defaults = bind_defaults(binder, &table)?;
    let target_types: Vec<SqlType> =
        targets.iter().map(|&target| table.columns[target].ty.clone()).collect();
    let source = match &insert.source {
        None => binder.plan(crate::plan::PlanKind::Values { rows: vec![Vec::new()] }, Vec::new()),
        Some(query) => match query.body.as_ref() {
            ast::SetExpr::Values(values) if undecorated(query) => {
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
                let plan = binder.insert_query(query)?;
                if plan.arity() > targets.len() {
                    return Err(SqlError::syntax(
                        "INSERT has more expressions than target columns",
                    ));
                }
                // Untyped literals take their target column's type.
                let mut columns = plan.columns.clone();
                for (index, column) in columns.iter_mut().enumerate() {
                    if column.ty == SqlType::Unknown {
                        column.ty = table.columns[targets[index]].ty.clone();
                    }
                }
                let plan = binder.cast_plan(plan, &columns);
                for (index, column) in plan.columns.iter().enumerate() {
                    let target = &table.columns[targets[index]];
                    if !assignable(&column.ty, &target.ty) {
                        return Err(SqlError::datatype_mismatch(format!(
                            "column \"{}\" is of type {} but expression is of type {}",
                            target.name,
                            super::assignments::column_type_name(&target.ty),
                            column.ty.display_name()
                        )));
                    }
                }
                plan
            }
        },
    };
    let targets = targets[..source.arity().min(targets.len())].to_vec();
    let source = match overriding {
        Some(Overriding::User) => identity_defaults(binder, source, &table, &targets, &defaults),
        _ => source,
    };
    let stream_source = stream_source && !reads_target(&source, &table);
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
    Ok(InsertPlan { table, targets, source, defaults, on_conflict, returning, stream_source })
}

/// Whether the bound source scans the target: a CTE named like another table, bound from
/// the WITH around the INSERT, can (the names `reads_only_other_tables` sees miss it).
fn reads_target(source: &Plan, table: &BoundTable) -> bool {
    let mut reads = crate::plan::Reads::default();
    crate::plan::plan_reads(source, &mut reads);
    reads.tables.contains(&table.name)
}

/// Whether every relation `query` names is a table other than `target` (no view, CTE name or
/// system relation, which could reach the target unseen): then the query cannot see the
/// INSERT's own rows, and they can be written as it makes them (`InsertPlan::stream_source`).
fn reads_only_other_tables(binder: &Binder<'_>, query: &ast::Query, target: &TableMeta) -> bool {
    let other = ast::visit_relations(query, |name| match binder.table(name) {
        Ok(table) if table.name != target.name && !table.is_view() => {
            std::ops::ControlFlow::Continue(())
        }
        _ => std::ops::ControlFlow::Break(()),
    });
    other.is_continue()
}

/// OVERRIDING USER VALUE: the values given for identity columns replaced by their
/// sequences' (the given ones were bound and type-checked, as PostgreSQL's parser does,
/// but are not evaluated).
fn identity_defaults(
    binder: &mut Binder<'_>,
    source: Plan,
    table: &BoundTable,
    targets: &[usize],
    defaults: &[Option<Expr>],
) -> Plan {
    let is_identity = |target: usize| table.columns[target].identity.is_some();
    if !targets.iter().any(|&target| is_identity(target)) {
        return source;
    }
    let exprs = targets
        .iter()
        .enumerate()
        .map(|(index, &target)| match (&defaults[target], is_identity(target)) {
            (Some(default), true) => default.clone(),
            _ => Expr::Column(index),
        })
        .collect();
    let columns = source.columns.clone();
    binder.plan(crate::plan::PlanKind::Project { input: Box::new(source), exprs }, columns)
}

/// Without OVERRIDING SYSTEM VALUE, a GENERATED ALWAYS AS IDENTITY column takes only
/// DEFAULT (PostgreSQL's 428C9).
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
    if !update.table.joins.is_empty() {
        return Err(SqlError::unsupported("UPDATE of a join"));
    }
    let from: &[ast::TableWithJoins] = match &update.from {
        None => &[],
        Some(ast::UpdateTableFromKind::AfterSet(from)) => from,
        Some(ast::UpdateTableFromKind::BeforeSet(_)) => {
            return Err(SqlError::syntax("syntax error at or near \"FROM\""))
        }
    };
    let (table, alias) =
        target_table(binder, &update.table.relation, "update", "UPDATE of a non-table")?;
    let (scan, scope) =
        bind_target_rows(binder, &table, alias.as_deref(), from, update.selection.as_ref())?;
    let assignments = bind_assignments(binder, &table, &update.assignments, &scope.scope)?;
    let returning = bind_returning(binder, &scope.scope, update.returning.as_deref())?;
    Ok(UpdatePlan { table, scan, assignments, filter: scope.filter, returning })
}

pub(crate) fn bind_delete(binder: &mut Binder<'_>, delete: &ast::Delete) -> Result<DeletePlan> {
    let from = match &delete.from {
        ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => from,
    };
    if from.len() != 1 || !from[0].joins.is_empty() || !delete.tables.is_empty() {
        return Err(SqlError::unsupported("DELETE of a join"));
    }
    let using = delete.using.as_deref().unwrap_or_default();
    let (table, alias) =
        target_table(binder, &from[0].relation, "delete from", "DELETE from a non-table")?;
    let (scan, scope) =
        bind_target_rows(binder, &table, alias.as_deref(), using, delete.selection.as_ref())?;
    let returning = bind_returning(binder, &scope.scope, delete.returning.as_deref())?;
    Ok(DeletePlan { table, scan, filter: scope.filter, returning })
}

/// 0A000 for a statement writing to a view (`verb`: "insert into", "update", "delete
/// from"; PostgreSQL's words for a view it cannot update): PostgreSQL's automatically updatable views and INSTEAD OF triggers are not
/// supported.
fn refuse_view_target(table: &TableMeta, verb: &str) -> Result<()> {
    match table.is_view() {
        true => Err(SqlError::unsupported(format!(
            "cannot {verb} view \"{}\" (writing through views is not supported)",
            table.name
        ))),
        false => Ok(()),
    }
}

/// The table UPDATE or DELETE changes, and its alias.
fn target_table(
    binder: &mut Binder<'_>,
    relation: &ast::TableFactor,
    verb: &str,
    unsupported: &str,
) -> Result<(BoundTable, Option<String>)> {
    match relation {
        ast::TableFactor::Table { name, alias, args: None, .. } => {
            let table = binder.table(name)?;
            refuse_view_target(&table, verb)?;
            Ok((binder.bind_target_table(table)?, alias.as_ref().map(|alias| ident(&alias.name))))
        }
        _ => Err(SqlError::unsupported(unsupported)),
    }
}

/// The names UPDATE's SET and WHERE see (the target's columns, its hidden row key, then the
/// FROM items' columns), and the WHERE clause bound over them.
struct TargetScope {
    scope: Scope,
    filter: Option<Expr>,
}

/// The rows UPDATE and DELETE touch: the target's rows that pass WHERE, each followed by
/// its engine row key (a bytea column no name reaches) and, with UPDATE ... FROM or DELETE
/// ... USING, by the columns of the one joined row of the other tables that PostgreSQL also
/// picks: when a target row joins several, an arbitrary one (here the first of its key).
fn bind_target_rows(
    binder: &mut Binder<'_>,
    table: &BoundTable,
    alias: Option<&str>,
    from: &[ast::TableWithJoins],
    selection: Option<&ast::Expr>,
) -> Result<(Plan, TargetScope)> {
    let (mut scan, mut scope) = binder.table_scope(table, alias);
    set_emit_key(&mut scan);
    let key = OutputColumn { name: "ctid".into(), ty: SqlType::Bytea, table_oid: 0, attribute: 0 };
    scope.columns.push(ScopeColumn {
        qualifier: None,
        name: key.name.clone(),
        ty: key.ty.clone(),
        table_oid: 0,
        attribute: 0,
        merged: true,
        relation: 0,
        nullable: false,
    });
    scan.columns.push(key);
    let target_name = alias.unwrap_or(&table.name).to_string();
    if from.is_empty() {
        let filter = match selection {
            Some(selection) => Some(binder.coerced(selection, &scope, &SqlType::Bool)?),
            None => None,
        };
        let plan = match &filter {
            Some(filter) => binder.filter(scan, filter.clone()),
            None => scan,
        };
        return Ok((plan, TargetScope { scope, filter }));
    }
    let mut relations = vec![(scan, scope)];
    for item in from {
        let (plan, scope) = binder.table_with_joins(item)?;
        if scope.columns.iter().any(|column| column.qualifier.as_deref() == Some(&target_name)) {
            return Err(SqlError::new(
                "42712",
                format!("table name \"{target_name}\" specified more than once"),
            ));
        }
        relations.push((plan, scope));
    }
    let (scope, filter) = binder.bind_where(&relations, selection)?;
    let (mut plan, rest) = binder.join_relations(relations, filter.clone())?;
    if !rest.is_empty() {
        plan = binder.filter(plan, and_all(rest));
    }
    let key_column = table.columns.len();
    let plan = binder.distinct_on(plan, vec![Expr::Column(key_column)], Vec::new());
    Ok((plan, TargetScope { scope, filter }))
}

fn bind_returning(
    binder: &mut Binder<'_>,
    scope: &Scope,
    returning: Option<&[ast::SelectItem]>,
) -> Result<Option<(Vec<Expr>, Vec<OutputColumn>)>> {
    match returning {
        Some(items) => Ok(Some(binder.returning_in(items, scope)?)),
        None => Ok(None),
    }
}

pub(crate) fn set_emit_key(plan: &mut Plan) {
    if let crate::plan::PlanKind::Scan { emit_key, .. } = &mut plan.kind {
        *emit_key = true;
    }
}

/// A query with no ORDER BY, LIMIT, OFFSET or FETCH: its VALUES rows are the rows inserted.
fn undecorated(query: &ast::Query) -> bool {
    query.order_by.is_none() && query.limit_clause.is_none() && query.fetch.is_none()
}
