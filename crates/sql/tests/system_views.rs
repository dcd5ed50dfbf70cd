//! System views: every view of the registry answers `SELECT *` with rows as wide as its
//! columns and values of its columns' types, over a catalog with tables, indexes, defaults
//! and NOT NULL columns.

use crate::support;

use support::{run, setup, with_session};
use tierdb_sql::{all_views, Datum, Output, Session, SqlType};

/// A catalog with something in every view that lists user objects.
fn populate(session: &mut Session) {
    setup(
        session,
        &[
            "CREATE TABLE accounts (id serial PRIMARY KEY, owner varchar(20) NOT NULL, \
             balance numeric(10,2) DEFAULT 0, opened date, code char(3))",
            "CREATE UNIQUE INDEX accounts_owner ON accounts (owner)",
            "CREATE TABLE events (at timestamptz, note text, flag boolean)",
            "INSERT INTO accounts (owner) VALUES ('ann')",
        ],
    );
}

/// Whether a non-NULL value has the representation of a column type.
fn fits(value: &Datum, ty: &SqlType) -> bool {
    matches!(
        (value, ty),
        (Datum::Null, _)
            | (Datum::Int(_), SqlType::Oid | SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
            | (Datum::Text(_), SqlType::Text | SqlType::Name)
            | (Datum::Bool(_), SqlType::Bool)
            | (Datum::Float(_), SqlType::Float4 | SqlType::Float8)
            | (Datum::Object(_), SqlType::Object(_))
    ) || matches!(value, Datum::Array(array)
            if ty.array_element().is_some()
                && array.elements.iter().all(|element| fits(element, ty.array_element().expect("an array type"))))
}

/// How a view is queried: statistics as table functions, the rest by qualified name.
fn query(name: &str) -> String {
    if name.starts_with("tierdb_stat") {
        format!("SELECT * FROM {name}()")
    } else if name.starts_with("pg_") {
        format!("SELECT * FROM pg_catalog.{name}")
    } else {
        format!("SELECT * FROM information_schema.{name}")
    }
}

#[test]
fn every_view_has_rows_of_its_columns() {
    with_session(|session| {
        populate(session);
        let mut with_rows = 0;
        for view in all_views() {
            for name in view.names {
                let sql = query(name);
                let (columns, rows) = match run(session, &sql) {
                    Ok(Output::Rows { columns, rows, .. }) => (columns, rows),
                    other => panic!("{sql}: {other:?}"),
                };
                let names: Vec<&str> = columns.iter().map(|column| column.name.as_str()).collect();
                let expected: Vec<&str> = view.columns.iter().map(|(name, _)| *name).collect();
                assert_eq!(names, expected, "{sql}: the view's columns in order");
                for row in &rows {
                    assert_eq!(row.len(), view.columns.len(), "{sql}: row width");
                    for (value, (column, ty)) in row.iter().zip(view.columns) {
                        let ty = ty.sql_type();
                        assert!(fits(value, &ty), "{sql}: {column} {ty:?} holds {value:?}");
                    }
                }
                with_rows += usize::from(!rows.is_empty());
            }
        }
        assert!(with_rows >= 15, "most views list something ({with_rows} did)");
    });
}

#[test]
fn views_describe_the_catalog() {
    with_session(|session| {
        populate(session);
        let rows = match run(
            session,
            "SELECT attname, attnum, attnotnull, atthasdef FROM pg_catalog.pg_attribute a \
             JOIN pg_catalog.pg_class c ON a.attrelid = c.oid WHERE c.relname = 'accounts' \
             ORDER BY attnum",
        ) {
            Ok(Output::Rows { rows, .. }) => rows,
            other => panic!("{other:?}"),
        };
        let expected =
            [("id", 1, true, true), ("owner", 2, true, false), ("balance", 3, false, true)];
        for (row, (name, number, not_null, has_default)) in rows.iter().zip(expected) {
            assert_eq!(
                row,
                &vec![
                    Datum::Text(name.into()),
                    Datum::Int(number),
                    Datum::Bool(not_null),
                    Datum::Bool(has_default)
                ]
            );
        }
        assert_eq!(rows.len(), 5, "one row per column");
        let indexes = match run(session, "SELECT indexname FROM pg_catalog.pg_indexes ORDER BY 1") {
            Ok(Output::Rows { rows, .. }) => rows,
            other => panic!("{other:?}"),
        };
        assert_eq!(indexes.len(), 2, "the primary key and the unique index: {indexes:?}");
    });
}
