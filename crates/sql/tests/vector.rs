//! The vector type inside a session: values survive storage with their dimensions checked,
//! to_regtype finds the type, and keys over vector columns are refused (their stored bytes
//! do not order as pgvector's btree operator class does).

mod support;

use support::{run, setup, sqlstate, value, with_session};
use tierdb_sql::Datum;

#[test]
fn stored_vectors_read_back_and_keep_their_typmod() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE vector_items (id integer PRIMARY KEY, v vector(2))",
                "INSERT INTO vector_items VALUES (1, '[1.5,-2]'), (2, '[0.1,3e-8]')",
            ],
        );
        assert_eq!(
            value(session, "SELECT v::text FROM vector_items WHERE id = 2").unwrap(),
            Datum::Text("[0.1,3e-08]".into())
        );
        assert_eq!(
            value(
                session,
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attname = 'v'"
            )
            .unwrap(),
            Datum::Text("vector(2)".into())
        );
        assert_eq!(sqlstate(session, "INSERT INTO vector_items VALUES (3, '[1,2,3]')"), "22000");
        assert_eq!(value(session, "SELECT to_regtype('vector')").unwrap(), Datum::Int(8400));
        assert_eq!(value(session, "SELECT to_regtype('no_such_type')").unwrap(), Datum::Null);
    });
}

#[test]
fn keys_over_vector_columns_are_refused() {
    with_session(|session| {
        setup(session, &["CREATE TABLE vector_keys (id integer PRIMARY KEY, v vector(2))"]);
        for sql in [
            "CREATE INDEX vector_keys_v ON vector_keys (v)",
            "CREATE TABLE vector_pk (v vector(2) PRIMARY KEY)",
            "CREATE TABLE vector_unique (id integer PRIMARY KEY, v vector UNIQUE)",
        ] {
            let error = run(session, sql).expect_err(sql);
            assert_eq!(error.sqlstate, "0A000", "{sql}");
            assert!(error.message.contains("on vector columns"), "{sql}: {}", error.message);
        }
    });
}
