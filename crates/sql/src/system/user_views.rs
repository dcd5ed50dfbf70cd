//! The catalogs of user views (docs/design/018): pg_views, information_schema.views and
//! `pg_get_viewdef`. pg_class, pg_attribute, information_schema.tables and .columns list
//! views with the tables (views.rs).

use super::values::text;
use super::views::owner_name;
use super::{SystemView, ViewType};
use crate::catalog::{Catalog, TableMeta};
use crate::types::Datum;
use sqlparser::ast;

/// The views, after `CATALOG_VIEWS` (system/mod.rs `all_views`).
pub static USER_VIEW_CATALOG: &[SystemView] = &[
    view!(&["pg_views"], |c| c.tables.iter().filter(|table| table.is_view()).map(|table| (c.catalog, table, c.session.public_on_path)), |(catalog, table, public_on_path)| {
        schemaname: Name = text("public"),
        viewname: Name = text(&table.name),
        viewowner: Name = owner_name(catalog, &table.name),
        definition: Text = definition(table, public_on_path).map_or(Datum::Null, Datum::Text),
    }),
    // tierdb refuses INSERT, UPDATE and DELETE on views: none is updatable or insertable
    // (PostgreSQL's simple views are).
    view!(&["views"], |c| c.tables.iter().filter(|table| table.is_view()).map(|table| (c.session, table)), |(session, table)| {
        table_catalog: Text = text(session.database),
        table_schema: Text = text("public"),
        table_name: Text = text(&table.name),
        view_definition: Text = definition(table, session.public_on_path).map_or(Datum::Null, Datum::Text),
        check_option: Text = text("NONE"),
        is_updatable: Text = text("NO"),
        is_insertable_into: Text = text("NO"),
        is_trigger_updatable: Text = text("NO"),
        is_trigger_deletable: Text = text("NO"),
        is_trigger_insertable_into: Text = text("NO"),
    }),
];

/// `pg_get_viewdef(oid)`: the view's query as PostgreSQL prints it (`definition`), None
/// for an OID that is not a view's. `public_on_path`: whether the session's search_path has
/// public (else the relations the query names are qualified, as PostgreSQL's are).
pub fn view_definition(catalog: &Catalog, view_oid: i64, public_on_path: bool) -> Option<String> {
    let table = catalog.tables().into_iter().find(|table| i64::from(table.oid) == view_oid)?;
    definition(&table, public_on_path)
}

/// A view's definition: its stored query, after a space and before a semicolon as
/// PostgreSQL's ruleutils prints it; the relations it names qualified with `public.` when
/// public is not on the search_path (pg_dump empties it, and its dump must restore).
fn definition(table: &TableMeta, public_on_path: bool) -> Option<String> {
    let view = table.view.as_ref()?;
    let Ok(mut query) = crate::parse::parse_view_query(&view.query) else {
        return Some(format!(" {};", view.query));
    };
    name_output_columns(&mut query.body, table);
    if public_on_path {
        return Some(format!(" {query};"));
    }
    // A WITH name that is also a relation's stays unqualified (it may name the CTE).
    let mut ctes = Vec::new();
    collect_cte_names(&query, &mut ctes);
    let _ = ast::visit_relations_mut(&mut query, |name| {
        let single = match name.0.as_slice() {
            [ast::ObjectNamePart::Identifier(part)] => Some(crate::parse::names::ident(part)),
            _ => None,
        };
        let qualify = single.is_some_and(|single| {
            !ctes.contains(&single)
                && view.depends_on.iter().any(|dependency| dependency.relation == single)
        });
        if qualify {
            name.0.insert(0, ast::ObjectNamePart::Identifier(ast::Ident::new("public")));
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    Some(format!(" {query};"))
}

/// The names of every WITH list's CTEs in `query` (nested ones too).
fn collect_cte_names(query: &ast::Query, names: &mut Vec<String>) {
    struct Collector<'a>(&'a mut Vec<String>);
    impl ast::Visitor for Collector<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, query: &ast::Query) -> std::ops::ControlFlow<()> {
            for cte in query.with.iter().flat_map(|with| with.cte_tables.iter()) {
                self.0.push(crate::parse::names::ident(&cte.alias.name));
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = ast::Visit::visit(query, &mut Collector(names));
}

/// Names the select list's outputs as the view's columns (`AS name` where the column list
/// of CREATE VIEW renamed them, or where an expression has no name of its own), so that the
/// definition re-creates the view's columns (pg_dump writes no column list).
fn name_output_columns(body: &mut ast::SetExpr, table: &TableMeta) {
    let select = match body {
        ast::SetExpr::Select(select) => select,
        ast::SetExpr::SetOperation { left, .. } => return name_output_columns(left, table),
        ast::SetExpr::Query(query) => return name_output_columns(&mut query.body, table),
        _ => return,
    };
    if select.projection.iter().any(|item| {
        matches!(item, ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..))
    }) {
        return;
    }
    for (item, column) in select.projection.iter_mut().zip(&table.columns) {
        // Quoted where PostgreSQL would quote it; the text is printed as it is.
        let alias = ast::Ident::new(crate::identifiers::quote_identifier(&column.name));
        match item {
            ast::SelectItem::UnnamedExpr(expr) => {
                let named = match &*expr {
                    ast::Expr::Identifier(ident) => Some(ident),
                    ast::Expr::CompoundIdentifier(parts) => parts.last(),
                    _ => None,
                };
                if named.is_none_or(|ident| crate::parse::names::ident(ident) != column.name) {
                    *item = ast::SelectItem::ExprWithAlias { expr: expr.clone(), alias };
                }
            }
            ast::SelectItem::ExprWithAlias { alias: existing, .. } => *existing = alias,
            _ => {}
        }
    }
}
