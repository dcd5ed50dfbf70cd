//! System views computed from the catalog and the page store: enough of `pg_catalog` and
//! `information_schema` for psql and drivers, and tierdb's statistics
//! (`tierdb_stat_tier_cache`, `tierdb_stat_statements`).
//!
//! OIDs: namespaces pg_catalog = 11, public = 2200, information_schema = 13000; tables and
//! indexes get OIDs from the catalog's counter (16384 and up); types use PostgreSQL's OIDs.

mod describe;

use crate::catalog::{is_internal_table, Catalog};
use crate::error::Result;
use crate::plan::computed_column;
use crate::plan::OutputColumn;
use crate::types::Row;
use crate::types::{Datum, SqlType};
pub(crate) use describe::*;

/// Session facts for functions.
pub struct SessionInfo<'a> {
    pub database: &'a str,
    pub user: &'a str,
    pub backend_pid: i32,
    pub catalog: &'a crate::catalog::Catalog,
}

const NAMESPACE_CATALOG: i64 = 11;
const NAMESPACE_PUBLIC: i64 = 2200;
const NAMESPACE_INFORMATION: i64 = 13_000;
const AM_BTREE: i64 = 403;
const AM_HEAP: i64 = 2;

fn columns(spec: &[(&str, SqlType)]) -> Vec<OutputColumn> {
    spec.iter().map(|(name, ty)| computed_column(name, ty.clone())).collect()
}

/// The columns of a system view, or None if `name` is not one.
pub fn view_columns(name: &str) -> Option<Vec<OutputColumn>> {
    use SqlType::*;
    Some(columns(match name {
        "pg_namespace" => &[("oid", Oid), ("nspname", Name), ("nspowner", Oid)],
        "pg_class" => &[
            ("oid", Oid),
            ("relname", Name),
            ("relnamespace", Oid),
            ("reltype", Oid),
            ("relowner", Oid),
            ("relam", Oid),
            ("relkind", Text),
            ("relpersistence", Text),
            ("reltuples", Float4),
            ("relhasindex", Bool),
            ("relispartition", Bool),
            ("relchecks", Int2),
            ("relhasrules", Bool),
            ("relhastriggers", Bool),
            ("relrowsecurity", Bool),
            ("relforcerowsecurity", Bool),
            ("reltablespace", Oid),
            ("reloftype", Oid),
            ("relreplident", Text),
            ("reltoastrelid", Oid),
            ("relpages", Int4),
            ("relnatts", Int2),
            ("relpartbound", Text),
            ("reloptions", Text),
            ("relacl", Text),
        ],
        "pg_attribute" => &[
            ("attrelid", Oid),
            ("attname", Name),
            ("atttypid", Oid),
            ("attnum", Int2),
            ("atttypmod", Int4),
            ("attnotnull", Bool),
            ("atthasdef", Bool),
            ("attisdropped", Bool),
            ("attidentity", Text),
            ("attgenerated", Text),
            ("attcollation", Oid),
            ("attlen", Int2),
        ],
        "pg_type" => &[
            ("oid", Oid),
            ("typname", Name),
            ("typnamespace", Oid),
            ("typlen", Int2),
            ("typtype", Text),
            ("typbasetype", Oid),
            ("typelem", Oid),
            ("typrelid", Oid),
            ("typcollation", Oid),
            ("typarray", Oid),
        ],
        "pg_index" => &[
            ("indexrelid", Oid),
            ("indrelid", Oid),
            ("indnatts", Int2),
            ("indisunique", Bool),
            ("indisprimary", Bool),
            ("indisclustered", Bool),
            ("indisvalid", Bool),
            ("indisreplident", Bool),
            ("indkey", Text),
        ],
        "pg_am" => &[("oid", Oid), ("amname", Name), ("amtype", Text)],
        "pg_database" => &[
            ("oid", Oid),
            ("datname", Name),
            ("datdba", Oid),
            ("encoding", Int4),
            ("datcollate", Text),
            ("datctype", Text),
            ("datallowconn", Bool),
        ],
        "pg_settings" => &[
            ("name", Text),
            ("setting", Text),
            ("unit", Text),
            ("category", Text),
            ("short_desc", Text),
        ],
        "pg_roles" | "pg_user" => {
            &[("oid", Oid), ("rolname", Name), ("rolsuper", Bool), ("usename", Name)]
        }
        "pg_attrdef" => &[("oid", Oid), ("adrelid", Oid), ("adnum", Int2), ("adbin", Text)],
        "pg_constraint" => &[
            ("oid", Oid),
            ("conname", Name),
            ("connamespace", Oid),
            ("contype", Text),
            ("conrelid", Oid),
            ("conindid", Oid),
            ("condeferrable", Bool),
            ("condeferred", Bool),
            ("conkey", Text),
        ],
        "pg_inherits" => {
            &[("inhrelid", Oid), ("inhparent", Oid), ("inhseqno", Int4), ("inhdetachpending", Bool)]
        }
        "pg_partitioned_table" => &[("partrelid", Oid), ("partstrat", Text)],
        "pg_collation" => &[("oid", Oid), ("collname", Name), ("collnamespace", Oid)],
        "pg_policy" => &[
            ("oid", Oid),
            ("polname", Name),
            ("polrelid", Oid),
            ("polcmd", Text),
            ("polpermissive", Bool),
            ("polroles", Text),
            ("polqual", Text),
            ("polwithcheck", Text),
        ],
        "pg_statistic_ext" => &[
            ("oid", Oid),
            ("stxrelid", Oid),
            ("stxname", Name),
            ("stxnamespace", Oid),
            ("stxkeys", Text),
            ("stxkind", Text),
            ("stxstattarget", Int4),
        ],
        "pg_publication" => &[
            ("oid", Oid),
            ("pubname", Name),
            ("puballtables", Bool),
            ("pubinsert", Bool),
            ("pubupdate", Bool),
            ("pubdelete", Bool),
            ("pubtruncate", Bool),
            ("pubviaroot", Bool),
        ],
        "pg_publication_rel" => {
            &[("oid", Oid), ("prpubid", Oid), ("prrelid", Oid), ("prqual", Text), ("prattrs", Text)]
        }
        "pg_publication_namespace" => &[("oid", Oid), ("pnpubid", Oid), ("pnnspid", Oid)],
        "pg_trigger" => &[
            ("oid", Oid),
            ("tgrelid", Oid),
            ("tgname", Name),
            ("tgisinternal", Bool),
            ("tgenabled", Text),
            ("tgparentid", Oid),
        ],
        "pg_rewrite" => &[("oid", Oid), ("rulename", Name), ("ev_class", Oid)],
        "pg_tablespace" => &[("oid", Oid), ("spcname", Name)],
        "pg_foreign_table" => &[("ftrelid", Oid), ("ftserver", Oid)],
        "pg_extension" => &[("oid", Oid), ("extname", Name), ("extversion", Text)],
        "pg_proc" => &[("oid", Oid), ("proname", Name), ("pronamespace", Oid)],
        "pg_event_trigger" => &[("oid", Oid), ("evtname", Name)],
        "pg_sequence" => &[("seqrelid", Oid), ("seqtypid", Oid)],
        "pg_description" => {
            &[("objoid", Oid), ("classoid", Oid), ("objsubid", Int4), ("description", Text)]
        }
        "pg_tables" => {
            &[("schemaname", Name), ("tablename", Name), ("tableowner", Name), ("hasindexes", Bool)]
        }
        "pg_indexes" => {
            &[("schemaname", Name), ("tablename", Name), ("indexname", Name), ("indexdef", Text)]
        }
        "tables" => &[
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("table_type", Text),
        ],
        "columns" => &[
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("column_name", Text),
            ("ordinal_position", Int4),
            ("column_default", Text),
            ("is_nullable", Text),
            ("data_type", Text),
            ("character_maximum_length", Int4),
            ("numeric_precision", Int4),
            ("numeric_scale", Int4),
        ],
        "schemata" => &[("catalog_name", Text), ("schema_name", Text), ("schema_owner", Text)],
        "tierdb_stat_tier_cache" => &[
            ("total_size", Int8),
            ("used_size", Int8),
            ("hits", Int8),
            ("misses", Int8),
            ("writes", Int8),
            ("invalidations", Int8),
            ("hit_ratio", Float8),
        ],
        "tierdb_stat_statements" => &[
            ("query", Text),
            ("calls", Int8),
            ("total_exec_time", Float8),
            ("mean_exec_time", Float8),
            ("rows", Int8),
            ("shared_blks_hit", Int8),
            ("tier_blks_hit", Int8),
            ("storage_blks_read", Int8),
        ],
        "tierdb_stat_buffer_pool" => {
            &[("hits", Int8), ("misses", Int8), ("evictions", Int8), ("hit_ratio", Float8)]
        }
        _ => return None,
    }))
}

fn oid(value: i64) -> Datum {
    Datum::Int(value)
}

fn text(value: &str) -> Datum {
    Datum::Text(value.to_string())
}

const BUILTIN_TYPES: &[(i64, &str, i16)] = &[
    (16, "bool", 1),
    (17, "bytea", -1),
    (19, "name", 64),
    (20, "int8", 8),
    (21, "int2", 2),
    (23, "int4", 4),
    (25, "text", -1),
    (26, "oid", 4),
    (700, "float4", 4),
    (701, "float8", 8),
    (705, "unknown", -2),
    (1042, "bpchar", -1),
    (1043, "varchar", -1),
    (1082, "date", 4),
    (1114, "timestamp", 8),
    (1184, "timestamptz", 8),
    (1700, "numeric", -1),
];

/// The rows of a system view.
pub fn view_rows(name: &str, catalog: &Catalog, session: &SessionInfo<'_>) -> Result<Vec<Row>> {
    let tables: Vec<_> =
        catalog.tables().into_iter().filter(|table| !is_internal_table(&table.name)).collect();
    let mut rows = Vec::new();
    match name {
        "pg_namespace" => {
            rows.push(vec![oid(NAMESPACE_CATALOG), text("pg_catalog"), oid(10)]);
            rows.push(vec![oid(NAMESPACE_PUBLIC), text("public"), oid(10)]);
            rows.push(vec![oid(NAMESPACE_INFORMATION), text("information_schema"), oid(10)]);
        }
        "pg_class" => {
            for table in &tables {
                let natts = i64::try_from(table.columns.len()).unwrap_or(0);
                rows.push(class_row(
                    table.oid,
                    &table.name,
                    "r",
                    AM_HEAP,
                    !table.indexes.is_empty(),
                    natts,
                ));
                for index in &table.indexes {
                    rows.push(class_row(
                        index.oid,
                        &index.name,
                        "i",
                        AM_BTREE,
                        false,
                        i64::try_from(index.columns.len()).unwrap_or(0),
                    ));
                }
            }
        }
        "pg_attribute" => {
            for table in &tables {
                for (position, column) in table.columns.iter().enumerate() {
                    rows.push(vec![
                        oid(i64::from(table.oid)),
                        text(&column.name),
                        oid(i64::from(column.ty.oid())),
                        Datum::Int(i64::try_from(position + 1).unwrap_or(0)),
                        Datum::Int(i64::from(column.ty.typmod())),
                        Datum::Bool(!column.nullable),
                        Datum::Bool(column.default.is_some()),
                        Datum::Bool(false),
                        text(""),
                        text(""),
                        oid(0),
                        Datum::Int(i64::from(column.ty.length())),
                    ]);
                }
            }
        }
        "pg_type" => {
            for (type_oid, type_name, length) in BUILTIN_TYPES {
                rows.push(vec![
                    oid(*type_oid),
                    text(type_name),
                    oid(NAMESPACE_CATALOG),
                    Datum::Int(i64::from(*length)),
                    text("b"),
                    oid(0),
                    oid(0),
                    oid(0),
                    oid(0),
                    oid(0),
                ]);
            }
        }
        "pg_index" => {
            for table in &tables {
                for index in &table.indexes {
                    let key: Vec<String> =
                        index.columns.iter().map(|column| (column + 1).to_string()).collect();
                    rows.push(vec![
                        oid(i64::from(index.oid)),
                        oid(i64::from(table.oid)),
                        Datum::Int(i64::try_from(index.columns.len()).unwrap_or(0)),
                        Datum::Bool(index.unique),
                        Datum::Bool(index.primary),
                        // indisclustered is CLUSTER's mark; tierdb's clustering key is not that.
                        Datum::Bool(false),
                        Datum::Bool(true),
                        Datum::Bool(false),
                        text(&key.join(" ")),
                    ]);
                }
            }
        }
        "pg_am" => {
            rows.push(vec![oid(AM_HEAP), text("heap"), text("t")]);
            rows.push(vec![oid(AM_BTREE), text("btree"), text("i")]);
        }
        "pg_database" => {
            rows.push(vec![
                oid(16_384),
                text(session.database),
                oid(10),
                Datum::Int(6),
                text("C"),
                text("C"),
                Datum::Bool(true),
            ]);
        }
        "pg_roles" | "pg_user" => {
            rows.push(vec![oid(10), text(session.user), Datum::Bool(true), text(session.user)]);
        }
        "pg_constraint" => {
            for table in &tables {
                // Constraints: primary keys (unique indexes made by CREATE UNIQUE INDEX are
                // not constraints in PostgreSQL either).
                for index in table.indexes.iter().filter(|index| index.primary) {
                    let key: Vec<String> =
                        index.columns.iter().map(|column| (column + 1).to_string()).collect();
                    rows.push(vec![
                        oid(i64::from(index.oid)),
                        text(&index.name),
                        oid(NAMESPACE_PUBLIC),
                        text(if index.primary { "p" } else { "u" }),
                        oid(i64::from(table.oid)),
                        oid(i64::from(index.oid)),
                        Datum::Bool(false),
                        Datum::Bool(false),
                        text(&format!("{{{}}}", key.join(","))),
                    ]);
                }
            }
        }
        "pg_attrdef" => {
            for table in &tables {
                for (position, column) in table.columns.iter().enumerate() {
                    if let Some(default) = &column.default {
                        rows.push(vec![
                            oid(0),
                            oid(i64::from(table.oid)),
                            Datum::Int(i64::try_from(position + 1).unwrap_or(0)),
                            text(default),
                        ]);
                    }
                }
            }
        }
        "pg_tables" => {
            for table in &tables {
                rows.push(vec![
                    text("public"),
                    text(&table.name),
                    text(session.user),
                    Datum::Bool(!table.indexes.is_empty()),
                ]);
            }
        }
        "pg_indexes" => {
            for table in &tables {
                for index in &table.indexes {
                    rows.push(vec![
                        text("public"),
                        text(&table.name),
                        text(&index.name),
                        text(&index_definition(catalog, i64::from(index.oid)).unwrap_or_default()),
                    ]);
                }
            }
        }
        "tables" => {
            for table in &tables {
                rows.push(vec![
                    text(session.database),
                    text("public"),
                    text(&table.name),
                    text("BASE TABLE"),
                ]);
            }
        }
        "columns" => {
            for table in &tables {
                for (position, column) in table.columns.iter().enumerate() {
                    let (length, precision, scale) = match &column.ty {
                        SqlType::Varchar(length) => (length.map(i64::from), None, None),
                        SqlType::Char(length) => (Some(i64::from(*length)), None, None),
                        SqlType::Numeric { precision, scale } => {
                            (None, precision.map(i64::from), scale.map(i64::from))
                        }
                        SqlType::Int2 => (None, Some(16), Some(0)),
                        SqlType::Int4 => (None, Some(32), Some(0)),
                        SqlType::Int8 => (None, Some(64), Some(0)),
                        _ => (None, None, None),
                    };
                    let optional = |value: Option<i64>| value.map_or(Datum::Null, Datum::Int);
                    rows.push(vec![
                        text(session.database),
                        text("public"),
                        text(&table.name),
                        text(&column.name),
                        Datum::Int(i64::try_from(position + 1).unwrap_or(0)),
                        column.default.as_deref().map_or(Datum::Null, text),
                        text(if column.nullable { "YES" } else { "NO" }),
                        text(column.ty.display_name().split('(').next().unwrap_or_default()),
                        optional(length),
                        optional(precision),
                        optional(scale),
                    ]);
                }
            }
        }
        "schemata" => {
            for schema in ["pg_catalog", "public", "information_schema"] {
                rows.push(vec![text(session.database), text(schema), text(session.user)]);
            }
        }
        "tierdb_stat_tier_cache" => {
            let store = catalog.engine().store();
            let signed = |value: u64| Datum::Int(i64::try_from(value).unwrap_or(i64::MAX));
            let (total_size, used_size, hits, misses, writes, invalidations) = match store.tier() {
                Some(tier) => {
                    let (_, used_slots) = tier.usage();
                    let stats = tier.stats();
                    (
                        tier.capacity_bytes(),
                        used_slots.saturating_mul(8192),
                        stats.hits.get(),
                        stats.misses.get(),
                        stats.writes.get(),
                        stats.invalidations.get(),
                    )
                }
                None => (0, 0, 0, 0, 0, 0),
            };
            let lookups = hits + misses;
            #[allow(clippy::cast_precision_loss)]
            let ratio = if lookups == 0 { 0.0 } else { hits as f64 / lookups as f64 };
            rows.push(vec![
                signed(total_size),
                signed(used_size),
                signed(hits),
                signed(misses),
                signed(writes),
                signed(invalidations),
                Datum::Float(ratio),
            ]);
        }
        "tierdb_stat_statements" => {
            let signed = |value: u64| Datum::Int(i64::try_from(value).unwrap_or(i64::MAX));
            for (query, entry) in catalog.statement_stats().snapshot() {
                #[allow(clippy::cast_precision_loss)]
                let total_ms = entry.total_time_ns as f64 / 1e6;
                #[allow(clippy::cast_precision_loss)]
                let mean_ms = if entry.calls == 0 { 0.0 } else { total_ms / entry.calls as f64 };
                rows.push(vec![
                    Datum::Text(query),
                    signed(entry.calls),
                    Datum::Float(total_ms),
                    Datum::Float(mean_ms),
                    signed(entry.rows),
                    signed(entry.shared_hits),
                    signed(entry.tier_hits),
                    signed(entry.storage_reads),
                ]);
            }
        }
        "tierdb_stat_buffer_pool" => {
            let store = catalog.engine().store();
            let stats = store.pool_stats();
            let hits = stats.hits.get();
            let misses = stats.misses.get();
            let total = hits + misses;
            #[allow(clippy::cast_precision_loss)]
            let ratio = if total == 0 { 0.0 } else { hits as f64 / total as f64 };
            let signed = |value: u64| Datum::Int(i64::try_from(value).unwrap_or(i64::MAX));
            rows.push(vec![
                signed(hits),
                signed(misses),
                signed(stats.evictions.get()),
                Datum::Float(ratio),
            ]);
        }
        _ => {}
    }
    Ok(rows)
}

fn class_row(object: u32, name: &str, kind: &str, am: i64, has_index: bool, natts: i64) -> Row {
    vec![
        oid(i64::from(object)),
        text(name),
        oid(NAMESPACE_PUBLIC),
        oid(0),
        oid(10),
        oid(am),
        text(kind),
        text("p"),
        Datum::Float(-1.0),
        Datum::Bool(has_index),
        Datum::Bool(false),
        Datum::Int(0),
        Datum::Bool(false),
        Datum::Bool(false),
        Datum::Bool(false),
        Datum::Bool(false),
        oid(0),
        oid(0),
        text("d"),
        oid(0),
        Datum::Int(0),
        Datum::Int(natts),
        Datum::Null,
        Datum::Null,
        Datum::Null,
    ]
}
