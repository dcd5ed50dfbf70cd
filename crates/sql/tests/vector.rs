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

#[test]
fn index_methods_and_clauses_that_would_be_ignored_are_refused() {
    with_session(|session| {
        setup(
            session,
            &["CREATE TABLE embeddings (id integer PRIMARY KEY, n integer, v vector(3))"],
        );
        for (sql, message) in [
            (
                "CREATE INDEX ON embeddings USING hnsw (v vector_l2_ops)",
                "index access method \"hnsw\" is not supported",
            ),
            (
                "CREATE INDEX ON embeddings USING hnsw (v vector_cosine_ops) WITH (m = 16)",
                "index access method \"hnsw\" is not supported",
            ),
            (
                "CREATE INDEX ON embeddings USING ivfflat (v vector_l2_ops) WITH (lists = 10)",
                "index access method \"ivfflat\" is not supported",
            ),
            (
                "CREATE INDEX ON embeddings USING hash (n)",
                "index access method \"hash\" is not supported",
            ),
            (
                "CREATE INDEX ON embeddings USING gin (n)",
                "index access method \"gin\" is not supported",
            ),
            (
                "CREATE INDEX ON embeddings (n int4_ops)",
                "index operator class int4_ops is not supported",
            ),
            ("CREATE INDEX ON embeddings (n) WHERE n > 0", "partial indexes"),
            ("CREATE UNIQUE INDEX ON embeddings (n) WHERE n > 0", "partial indexes"),
            ("CREATE INDEX ON embeddings (n) INCLUDE (id)", "INCLUDE"),
            ("CREATE UNIQUE INDEX ON embeddings (n) NULLS NOT DISTINCT", "NULLS NOT DISTINCT"),
            ("CREATE INDEX ON embeddings (n) WITH (fillfactor = 70)", "storage parameters"),
        ] {
            let error = run(session, sql).expect_err(sql);
            assert_eq!(error.sqlstate, "0A000", "{sql}");
            assert!(error.message.contains(message), "{sql}: {}", error.message);
        }
        let error =
            run(session, "CREATE INDEX ON embeddings USING no_such_method (n)").unwrap_err();
        assert_eq!(error.sqlstate, "42704");
        assert_eq!(error.message, "access method \"no_such_method\" does not exist");
        // Nothing was created by the refused statements; btree still works, named or not.
        run(session, "CREATE INDEX embeddings_n ON embeddings USING btree (n)").unwrap();
        run(session, "CREATE INDEX ON embeddings (id, n)").unwrap();
        assert_eq!(
            value(session, "SELECT count(*) FROM pg_indexes WHERE tablename = 'embeddings'")
                .unwrap(),
            Datum::Int(3)
        );
    });
}
