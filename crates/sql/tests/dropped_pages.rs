//! DROP TABLE and TRUNCATE give their pages back (docs/design/008-mvcc.md, "Dropped trees"):
//! pg_database_size shrinks by about the dropped table's pg_total_relation_size once VACUUM
//! (or the engine's purge thread) has freed them, as PostgreSQL's does at DROP.

use crate::support;

use support::{setup, value, with_session};
use tierdb_sql::{Datum, Session};

fn bytes(session: &mut Session, sql: &str) -> i64 {
    match value(session, sql).unwrap() {
        Datum::Int(bytes) => bytes,
        other => panic!("{sql}: {other:?}"),
    }
}

const DATABASE_SIZE: &str = "SELECT pg_database_size(current_database())";

#[test]
fn database_size_shrinks_after_drop_table_and_truncate() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE t_drop_pages (id int PRIMARY KEY, body text)",
                "CREATE INDEX t_drop_pages_body ON t_drop_pages (body)",
                "INSERT INTO t_drop_pages SELECT g, repeat('x', 200) || g FROM generate_series(1, 20000) g",
                "CREATE TABLE t_trunc_pages (id int PRIMARY KEY, body text)",
                "INSERT INTO t_trunc_pages SELECT g, repeat('y', 200) || g FROM generate_series(1, 20000) g",
            ],
        );
        let dropped = bytes(session, "SELECT pg_total_relation_size('t_drop_pages')");
        let truncated = bytes(session, "SELECT pg_total_relation_size('t_trunc_pages')");
        assert!(dropped > 4 << 20 && truncated > 2 << 20, "{dropped} {truncated}");
        let before = bytes(session, DATABASE_SIZE);
        setup(session, &["DROP TABLE t_drop_pages", "TRUNCATE t_trunc_pages", "VACUUM"]);
        let after = bytes(session, DATABASE_SIZE);
        // The catalog's own pages move a little; everything else of the two tables is gone.
        let freed = before - after;
        let expected = dropped + truncated;
        assert!(
            freed > expected - (64 << 10) && freed <= expected,
            "pg_database_size went from {before} to {after}: {freed} bytes freed, the tables held {expected}"
        );
        assert_eq!(bytes(session, "SELECT count(*) FROM t_trunc_pages"), 0);
        setup(session, &["DROP TABLE t_trunc_pages", "VACUUM"]);
    });
}
