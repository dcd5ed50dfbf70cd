//! Descriptions of catalog objects: format_type and pg_get_indexdef.

use super::*;
use crate::catalog::{HnswOptions, IndexKind};

/// `format_type(type_oid, typmod)`.
pub fn format_type(type_oid: i64, typmod: i64) -> Option<String> {
    let ty = SqlType::from_oid(u32::try_from(type_oid).ok()?)?;
    if let SqlType::Array(element) = &ty {
        // An array's typmod is its element's: varchar(10)[].
        return Some(format!("{}[]", format_type(i64::from(element.oid()), typmod)?));
    }
    let header = 4;
    let ty = match ty {
        SqlType::Varchar(_) if typmod >= header => {
            SqlType::Varchar(u32::try_from(typmod - header).ok())
        }
        SqlType::Char(_) if typmod >= header => SqlType::Char(u32::try_from(typmod - header).ok()?),
        SqlType::Char(_) => return Some("bpchar".into()),
        // pgvector's typmod is the dimension count, without a header.
        SqlType::Vector(_) if typmod >= 1 => SqlType::Vector(u32::try_from(typmod).ok()),
        SqlType::HalfVec(_) if typmod >= 1 => SqlType::HalfVec(u32::try_from(typmod).ok()),
        SqlType::SparseVec(_) if typmod >= 1 => SqlType::SparseVec(u32::try_from(typmod).ok()),
        // bit's typmod is the length, without a header.
        SqlType::Bit(_) if typmod >= 1 => SqlType::Bit(u32::try_from(typmod).ok()),
        // format_type quotes bit without a typmod (the key word alone means bit(1)).
        SqlType::Bit(_) => return Some("\"bit\"".into()),
        SqlType::VarBit(_) if typmod >= 1 => SqlType::VarBit(u32::try_from(typmod).ok()),
        SqlType::Numeric { .. } if typmod >= header => {
            let packed = typmod - header;
            SqlType::Numeric {
                precision: u32::try_from(packed >> 16).ok(),
                scale: u32::try_from(packed & 0xFFFF).ok(),
            }
        }
        other => other,
    };
    Some(ty.display_name())
}

/// A vector index's method, column and options as PostgreSQL prints pgvector's (after
/// `ON table`): the options given in WITH as quoted strings, none when none were given.
fn hnsw_definition(columns: &[&str], options: &HnswOptions) -> String {
    let mut given = Vec::new();
    if let Some(m) = options.m {
        given.push(format!("m='{m}'"));
    }
    if let Some(ef_construction) = options.ef_construction {
        given.push(format!("ef_construction='{ef_construction}'"));
    }
    if let Some(lists) = options.lists {
        given.push(format!("lists='{lists}'"));
    }
    let with =
        if given.is_empty() { String::new() } else { format!(" WITH ({})", given.join(", ")) };
    // PostgreSQL omits a column's operator class when it is the default (ivfflat's
    // vector_l2_ops; HNSW has no default).
    let class = if options.ivfflat && options.metric == tierdb_vector::hnsw::Metric::L2 {
        String::new()
    } else {
        format!(" {}", options.operator_class())
    };
    format!("USING {} ({}{class}){with}", options.access_method(), columns.join(", "))
}

/// `pg_get_indexdef(index_oid)`.
/// `pg_get_constraintdef`: `PRIMARY KEY (a, b)`, `UNIQUE (a)`, `CHECK ((a > 0))` (pretty:
/// `CHECK (a > 0)`); None for an OID that is no constraint. A FOREIGN KEY's referenced
/// table is qualified when its schema is not among `visible_schemas` (the search_path's).
pub fn constraint_definition(
    catalog: &Catalog,
    oid: i64,
    pretty: bool,
    visible_schemas: &[String],
) -> Option<String> {
    for table in catalog.tables() {
        if let Some(check) = table.checks.iter().find(|check| i64::from(check.oid) == oid) {
            let body = if pretty { &check.pretty } else { &check.definition };
            return Some(format!("CHECK ({body})"));
        }
        if let Some(key) = table.foreign_keys.iter().find(|key| i64::from(key.oid) == oid) {
            return foreign_key_definition(catalog, &table, key, visible_schemas);
        }
        let Some(index) =
            table.indexes.iter().find(|index| index.constraint && i64::from(index.oid) == oid)
        else {
            continue;
        };
        let columns: Vec<String> = index
            .columns
            .iter()
            .map(|&column| crate::plan::deparse::quote_identifier(&table.columns[column].name))
            .collect();
        let kind = if index.primary { "PRIMARY KEY" } else { "UNIQUE" };
        return Some(format!("{kind} ({})", columns.join(", ")));
    }
    None
}

/// `FOREIGN KEY (a, b) REFERENCES p(x, y) [MATCH FULL] [ON UPDATE ...] [ON DELETE ...]`, as
/// PostgreSQL prints it (NO ACTION left out).
fn foreign_key_definition(
    catalog: &Catalog,
    table: &TableMeta,
    key: &crate::catalog::ForeignKeyMeta,
    visible_schemas: &[String],
) -> Option<String> {
    let referenced = catalog.table(&key.referenced_table)?;
    let schema = crate::catalog::relation_schema(&referenced.name);
    let mut referenced_name =
        crate::plan::deparse::quote_identifier(crate::catalog::relation_name(&referenced.name));
    // The session's temp schema is searched first whatever the path says.
    if !visible_schemas.contains(&schema) && !schema.starts_with("pg_temp") {
        referenced_name =
            format!("{}.{referenced_name}", crate::plan::deparse::quote_identifier(&schema));
    }
    let names = |table: &TableMeta, columns: &[usize]| {
        let names: Vec<String> = columns
            .iter()
            .map(|&column| crate::plan::deparse::quote_identifier(&table.columns[column].name))
            .collect();
        names.join(", ")
    };
    let mut text = format!(
        "FOREIGN KEY ({}) REFERENCES {}({})",
        names(table, &key.columns),
        referenced_name,
        names(&referenced, &key.referenced_columns)
    );
    if key.match_full {
        text.push_str(" MATCH FULL");
    }
    for (words, action) in [("ON UPDATE", key.on_update), ("ON DELETE", key.on_delete)] {
        if action != crate::catalog::ReferentialAction::NoAction {
            text.push_str(&format!(" {words} {}", action.words()));
        }
    }
    Some(text)
}

pub fn index_definition(catalog: &Catalog, index_oid: i64, pretty: bool) -> Option<String> {
    for table in catalog.tables() {
        for index in &table.indexes {
            if i64::from(index.oid) == index_oid {
                let columns: Vec<&str> = index
                    .columns
                    .iter()
                    .map(|&column| table.columns[column].name.as_str())
                    .collect();
                let method = match &index.kind {
                    IndexKind::Hnsw(options) => hnsw_definition(&columns, options),
                    _ => format!("USING btree ({})", columns.join(", ")),
                };
                // A partial index's WHERE as ruleutils prints it: parenthesized unless pretty.
                let predicate = index.predicate.as_ref().map_or_else(String::new, |predicate| {
                    let text = if pretty { &predicate.pretty } else { &predicate.definition };
                    format!(" WHERE {text}")
                });
                // The pretty form leaves out the schema of a table on the search path.
                let schema = if pretty { "" } else { "public." };
                return Some(format!(
                    "CREATE {}INDEX {} ON {schema}{} {method}{predicate}",
                    if index.unique { "UNIQUE " } else { "" },
                    index.name,
                    table.name,
                ));
            }
        }
    }
    None
}
