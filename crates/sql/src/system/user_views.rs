//! The catalogs of user views (docs/design/018): pg_views, information_schema.views and
//! `pg_get_viewdef`. pg_class, pg_attribute, information_schema.tables and .columns list
//! views with the tables (views.rs).

use super::views::{owner_name, text};
use super::{SystemView, ViewType};
use crate::catalog::{Catalog, TableMeta};
use crate::types::Datum;

/// The views, after `CATALOG_VIEWS` (system/mod.rs `all_views`).
pub static USER_VIEW_CATALOG: &[SystemView] = &[
    view!(&["pg_views"], |c| c.tables.iter().filter(|table| table.is_view()).map(|table| (c.catalog, table)), |(catalog, table)| {
        schemaname: Name = text("public"),
        viewname: Name = text(&table.name),
        viewowner: Name = owner_name(catalog, &table.name),
        definition: Text = definition(table).map_or(Datum::Null, Datum::Text),
    }),
    // tierdb refuses INSERT, UPDATE and DELETE on views: none is updatable or insertable
    // (PostgreSQL's simple views are).
    view!(&["views"], |c| c.tables.iter().filter(|table| table.is_view()).map(|table| (c.session, table)), |(session, table)| {
        table_catalog: Text = text(session.database),
        table_schema: Text = text("public"),
        table_name: Text = text(&table.name),
        view_definition: Text = definition(table).map_or(Datum::Null, Datum::Text),
        check_option: Text = text("NONE"),
        is_updatable: Text = text("NO"),
        is_insertable_into: Text = text("NO"),
        is_trigger_updatable: Text = text("NO"),
        is_trigger_deletable: Text = text("NO"),
        is_trigger_insertable_into: Text = text("NO"),
    }),
];

/// `pg_get_viewdef(oid)`: the view's query as PostgreSQL prints it (`definition`), None
/// for an OID that is not a view's.
pub fn view_definition(catalog: &Catalog, view_oid: i64) -> Option<String> {
    let table = catalog.tables().into_iter().find(|table| i64::from(table.oid) == view_oid)?;
    definition(&table)
}

/// A view's definition: its stored query, after a space and before a semicolon as
/// PostgreSQL's ruleutils prints it.
fn definition(table: &TableMeta) -> Option<String> {
    let view = table.view.as_ref()?;
    Some(format!(" {};", view.query))
}
