//! System views computed from the catalog and the page store: enough of `pg_catalog` and
//! `information_schema` for psql and drivers, and tierdb's statistics
//! (`tierdb_stat_tier_cache`, `tierdb_stat_statements`, `tierdb_stat_buffer_pool`).
//!
//! Every view is one entry of a views table (`VIEWS` in views.rs for pg_catalog, then
//! information_views.rs, stat_views.rs, catalog_views.rs): its names, and its columns each
//! written beside the value it takes from a row's source item, so a column and its value
//! cannot drift apart.
//!
//! OIDs: namespaces pg_catalog = 11, public = 2200, information_schema = 13000; tables and
//! indexes get OIDs from the catalog's counter (16384 and up); types use PostgreSQL's OIDs.

/// One entry of a views table: its names, and its columns each beside the value it takes
/// from an item of the view's source (or, without a source, no rows).
macro_rules! view {
    ($names:expr, |$context:ident| $items:expr, |$item:pat_param| {
        $($column:ident : $ty:ident = $value:expr),+ $(,)?
    }) => {
        SystemView {
            names: $names,
            columns: &[$((stringify!($column), ViewType::$ty)),+],
            rows: |$context| $items.into_iter().map(|$item| vec![$($value),+]).collect(),
        }
    };
    ($names:expr, { $($column:ident : $ty:ident),+ $(,)? }) => {
        SystemView {
            names: $names,
            columns: &[$((stringify!($column), ViewType::$ty)),+],
            rows: |_| Vec::new(),
        }
    };
}

mod catalog_views;
mod describe;
mod information_columns;
mod information_views;
mod sequence_views;
mod sequences;
mod stat_views;
mod user_views;
mod values;
mod views;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use crate::catalog::{is_internal_table, Catalog, TableMeta};
use crate::error::Result;
use crate::plan::{computed_column, OutputColumn};
use crate::types::{Row, SqlType};
pub(crate) use describe::*;
pub use sequences::{SequenceRef, SequenceValues};
pub use user_views::view_definition;
use views::VIEWS;

/// The first OID of the system views that are not PostgreSQL catalogs.
const SYSTEM_VIEW_OID_BASE: u32 = 12_000;

/// PostgreSQL 15's fixed OIDs of the catalogs tierdb has as views.
const CATALOG_OIDS: &[(&str, u32)] = &[
    ("pg_type", 1247),
    ("pg_attribute", 1249),
    ("pg_proc", 1255),
    ("pg_class", 1259),
    ("pg_database", 1262),
    ("pg_tablespace", 1213),
    ("pg_am", 2601),
    ("pg_attrdef", 2604),
    ("pg_constraint", 2606),
    ("pg_description", 2609),
    ("pg_index", 2610),
    ("pg_inherits", 2611),
    ("pg_namespace", 2615),
    ("pg_opclass", 2616),
    ("pg_rewrite", 2618),
    ("pg_trigger", 2620),
    ("pg_sequence", 2224),
    ("pg_extension", 3079),
    ("pg_foreign_table", 3118),
    ("pg_policy", 3256),
    ("pg_partitioned_table", 3350),
    ("pg_statistic_ext", 3381),
    ("pg_collation", 3456),
    ("pg_event_trigger", 3466),
    ("pg_publication", 6104),
    ("pg_publication_rel", 6106),
    ("pg_publication_namespace", 6237),
    ("pg_default_acl", 826),
    ("pg_foreign_server", 1417),
    ("pg_foreign_data_wrapper", 2328),
    ("pg_amop", 2602),
    ("pg_amproc", 2603),
    ("pg_cast", 2605),
    ("pg_conversion", 2607),
    ("pg_language", 2612),
    ("pg_operator", 2617),
    ("pg_opfamily", 2753),
    ("pg_largeobject_metadata", 2995),
    ("pg_init_privs", 3394),
    ("pg_range", 3541),
    ("pg_transform", 3576),
    ("pg_ts_dict", 3600),
    ("pg_ts_parser", 3601),
    ("pg_ts_config", 3602),
    ("pg_ts_template", 3764),
    ("pg_subscription", 6100),
    ("pg_auth_members", 1261),
    ("pg_db_role_setting", 2964),
];

/// Each system view's name with its OID: a catalog's fixed one, else numbered from
/// `SYSTEM_VIEW_OID_BASE` in `VIEWS` order.
pub fn view_oids() -> impl Iterator<Item = (&'static str, u32)> {
    let mut next = SYSTEM_VIEW_OID_BASE;
    all_views().flat_map(|view| view.names.iter()).map(move |&name| {
        let oid = CATALOG_OIDS.iter().find(|(catalog, _)| *catalog == name).map_or_else(
            || {
                next += 1;
                next
            },
            |(_, oid)| *oid,
        );
        (name, oid)
    })
}

/// Every system view: the computed ones, the catalogs of objects tierdb has none of, then
/// those of user views (after the others, so that the OIDs numbered in order stay).
pub fn all_views() -> impl Iterator<Item = &'static SystemView> {
    VIEWS
        .iter()
        .chain(information_views::INFORMATION_VIEWS)
        .chain(stat_views::STAT_VIEWS)
        .chain(catalog_views::CATALOG_VIEWS)
        .chain(user_views::USER_VIEW_CATALOG)
        .chain(sequence_views::SEQUENCE_CATALOG)
}

/// The OID of the system view `name` (its `tableoid`).
pub fn view_oid(name: &str) -> Option<u32> {
    view_oids().find(|(view, _)| *view == name).map(|(_, oid)| oid)
}

/// Session facts for functions and system views.
pub struct SessionInfo<'a> {
    pub database: &'a str,
    pub user: &'a str,
    pub backend_pid: i32,
    /// The session's number in the catalog's waits and advisory locks.
    pub session_id: u64,
    pub catalog: &'a Catalog,
    /// pgvector's `hnsw.ef_search`, `hnsw.iterative_scan`, `hnsw.max_scan_tuples` and
    /// `hnsw.scan_mem_multiplier`, and `ivfflat.probes`, `ivfflat.iterative_scan` and
    /// `ivfflat.max_probes`, read by vector index scans when they run.
    pub vector_scan: tierdb_engine::NearestOptions,
    /// Tables the session does not see: created by other sessions' open transactions, or
    /// dropped by its own open block.
    pub hidden_tables: Vec<String>,
    /// Whether `public` is on the search_path (regclass prints its tables unqualified).
    pub public_on_path: bool,
    /// FOREIGN KEY checks and actions are off: TRUNCATE in a block deletes the rows of
    /// tables that only reference each other (PostgreSQL's TRUNCATE fires no triggers).
    pub referential_checks_off: bool,
    /// The session's settings, read by current_setting and checked by set_config.
    pub settings: &'a dyn SessionSettings,
    /// set_config's changes, in call order (one per name and scope: a later call replaces
    /// an earlier one), applied to the session when the statement succeeds: a failed
    /// statement's transaction rolls its setting changes back in PostgreSQL too.
    pub setting_changes: RefCell<Vec<SettingChange>>,
    /// The session's currval and lastval values (exec/sequences.rs).
    pub sequence_values: &'a RefCell<SequenceValues>,
    /// The sequences this statement's sequence calls named, by the name as written.
    pub sequence_refs: RefCell<HashMap<String, SequenceRef>>,
}

/// The session's settings as a statement reads and checks them: implemented by the session
/// (session/settings.rs), which cannot be borrowed whole while its transaction runs the
/// statement.
pub trait SessionSettings {
    /// The value SHOW prints; None for a name that is not a parameter.
    fn current(&self, name: &str) -> Option<String>;
    /// What SET `name` = `value` would store, as SHOW prints it, or SET's error.
    fn check(&self, name: &str, value: &str) -> Result<String>;
    /// The value RESET returns `name` to, or RESET's error.
    fn reset_value(&self, name: &str) -> Result<String>;
    /// Every parameter as pg_settings shows it, in name order.
    fn rows(&self) -> Vec<SettingRow>;
}

/// One row of pg_settings.
#[derive(Clone, Debug)]
pub struct SettingRow {
    pub name: &'static str,
    /// The value in `unit`s (SHOW's `4MB` is `4096` for unit `kB`).
    pub setting: String,
    pub unit: &'static str,
    pub category: &'static str,
    pub short_description: &'static str,
    pub context: &'static str,
    /// `bool`, `integer`, `real`, `string` or `enum`.
    pub kind: &'static str,
    /// `default`, or `session` for a value the session changed.
    pub source: &'static str,
    pub minimum: &'static str,
    pub maximum: &'static str,
    pub enum_values: &'static [&'static str],
    /// The built-in default in `unit`s.
    pub boot_value: &'static str,
    /// What RESET returns to, in `unit`s.
    pub reset_value: String,
}

/// One set_config call: `value` None resets the setting; `local` as SET LOCAL.
#[derive(Clone, Debug)]
pub struct SettingChange {
    pub name: String,
    pub value: Option<String>,
    pub local: bool,
    /// The new value as current_setting shows it.
    pub shown: String,
}

impl SessionInfo<'_> {
    /// current_setting(`name`): set_config's change in this statement, else the session's.
    pub fn setting(&self, name: &str) -> Option<String> {
        let name = name.to_lowercase();
        let changes = self.setting_changes.borrow();
        if let Some(change) = changes.iter().rev().find(|change| change.name == name) {
            return Some(change.shown.clone());
        }
        self.settings.current(&name)
    }

    /// set_config(`name`, `value`, `local`): checked now, applied when the statement ends.
    /// Returns the new value as current_setting shows it.
    pub fn change_setting(&self, name: &str, value: Option<&str>, local: bool) -> Result<String> {
        let name = name.to_lowercase();
        let shown = match value {
            Some(value) => self.settings.check(&name, value)?,
            None => self.settings.reset_value(&name)?,
        };
        let mut changes = self.setting_changes.borrow_mut();
        changes.retain(|change| change.name != name || change.local != local);
        changes.push(SettingChange {
            name,
            value: value.map(str::to_string),
            local,
            shown: shown.clone(),
        });
        Ok(shown)
    }
}

/// What a view's rows are computed from.
pub struct ViewContext<'a> {
    pub catalog: &'a Catalog,
    pub session: &'a SessionInfo<'a>,
    /// The user's tables (not tierdb's internal ones), read once per scan of the view.
    pub tables: Vec<Arc<TableMeta>>,
}

/// One system view.
pub struct SystemView {
    /// The names it is queried by (`pg_roles` and `pg_user` share one definition).
    pub names: &'static [&'static str],
    pub columns: &'static [(&'static str, ViewType)],
    pub rows: fn(&ViewContext<'_>) -> Vec<Row>,
}

/// A system view column's type: the scalar types by name, and the array types the
/// catalogs use (a `SqlType::Array` holds a box, which a static table cannot).
#[derive(Clone, Copy, Debug)]
pub enum ViewType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Name,
    Oid,
    Text,
    TimestampTz,
    Int2Vector,
    OidVector,
    Int2Array,
    OidArray,
    TextArray,
    CharArray,
    Regproc,
    Regtype,
}

impl ViewType {
    pub fn sql_type(self) -> SqlType {
        let array = |element: SqlType| SqlType::Array(Box::new(element));
        match self {
            ViewType::Bool => SqlType::Bool,
            ViewType::Int2 => SqlType::Int2,
            ViewType::Int4 => SqlType::Int4,
            ViewType::Int8 => SqlType::Int8,
            ViewType::Float4 => SqlType::Float4,
            ViewType::Float8 => SqlType::Float8,
            ViewType::Name => SqlType::Name,
            ViewType::Oid => SqlType::Oid,
            ViewType::Text => SqlType::Text,
            ViewType::TimestampTz => SqlType::TimestampTz,
            ViewType::Int2Vector => SqlType::Int2Vector,
            ViewType::OidVector => SqlType::OidVector,
            ViewType::Int2Array => array(SqlType::Int2),
            ViewType::OidArray => array(SqlType::Oid),
            ViewType::TextArray => array(SqlType::Text),
            ViewType::CharArray => array(SqlType::Char(1)),
            ViewType::Regproc => SqlType::Object(crate::types::ObjectKind::Procedure),
            ViewType::Regtype => SqlType::Object(crate::types::ObjectKind::Type),
        }
    }
}

impl SystemView {
    pub fn output_columns(&self) -> Vec<OutputColumn> {
        self.columns.iter().map(|(name, ty)| computed_column(name, ty.sql_type())).collect()
    }
}

/// The view called `name`, if any.
pub fn view(name: &str) -> Option<&'static SystemView> {
    all_views().find(|view| view.names.contains(&name))
}

/// The columns of a system view, or None if `name` is not one.
pub fn view_columns(name: &str) -> Option<Vec<OutputColumn>> {
    view(name).map(SystemView::output_columns)
}

/// The rows of a system view (none for a name that is not one: the binder only plans scans
/// of views it found).
pub fn view_rows(name: &str, catalog: &Catalog, session: &SessionInfo<'_>) -> Vec<Row> {
    let Some(view) = view(name) else { return Vec::new() };
    let tables = catalog
        .tables()
        .into_iter()
        .filter(|table| !is_internal_table(&table.name))
        .filter(|table| !session.hidden_tables.contains(&table.name))
        .filter(|table| !crate::catalog::is_other_sessions_temp(&table.name, session.session_id))
        .collect();
    let context = ViewContext { catalog, session, tables };
    let rows = (view.rows)(&context);
    debug_assert!(rows.iter().all(|row| row.len() == view.columns.len()), "{name}: row width");
    rows
}
