//! `tierdb_check_vector_index(regclass)`: a jsonb report of an HNSW index's check against
//! its table (counts, and no violations for a sound index); 42809 for a relation that is not
//! an HNSW index, 42P01 for a name or OID that is no relation, 42501 without SELECT on the
//! table.

use crate::support;

use support::{session_as, setup, sqlstate, value, with_session};
use tierdb_sql::Datum;

/// A field of the report as text (`->>`).
fn field(session: &mut tierdb_sql::Session, name: &str) -> String {
    let sql = format!("SELECT tierdb_check_vector_index('items_v_idx') ->> '{name}'");
    match value(session, &sql).unwrap() {
        Datum::Text(text) => text,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn the_check_reports_counts_and_no_violations() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE items (id integer PRIMARY KEY, v vector(3))",
                "INSERT INTO items SELECT i, ('[' || i || ',' || i % 7 || ',' || i % 13 || ']')::vector(3) \
                 FROM generate_series(1, 150) AS i",
                "INSERT INTO items VALUES (1000, NULL)",
                "CREATE INDEX items_v_idx ON items USING hnsw (v vector_l2_ops) WITH (m = 4)",
                "INSERT INTO items SELECT i, ('[' || i || ',' || i % 5 || ',' || i % 11 || ']')::vector(3) \
                 FROM generate_series(151, 200) AS i",
                "DELETE FROM items WHERE id = 7",
                "UPDATE items SET v = '[0.5,0.5,0.5]' WHERE id = 8",
            ],
        );
        assert_eq!(field(session, "violation_count"), "0");
        assert_eq!(field(session, "violations"), "[]");
        assert_eq!(field(session, "rows_indexed"), "199", "200 rows, one deleted");
        assert_eq!(field(session, "rows_missing"), "0");
        assert_eq!(field(session, "node_count"), "201", "200 rows and row 8's new vector");
        assert_eq!(field(session, "nodes_reached"), "201");
        assert_eq!(field(session, "nodes_reached_layer0"), "201");
        let entries =
            |session: &mut tierdb_sql::Session, name| field(session, name).parse::<u64>().unwrap();
        assert_eq!(entries(session, "entries_live") + entries(session, "entries_dead"), 201);
        // Inside a transaction block, its own inserts are checked too.
        setup(session, &["BEGIN", "INSERT INTO items VALUES (5000, '[9,9,9]')"]);
        assert_eq!(field(session, "rows_indexed"), "200");
        setup(session, &["ROLLBACK"]);

        setup(session, &["CREATE INDEX items_id ON items (id)"]);
        assert_eq!(sqlstate(session, "SELECT tierdb_check_vector_index('items_id')"), "42809");
        assert_eq!(sqlstate(session, "SELECT tierdb_check_vector_index('items')"), "42809");
        assert_eq!(sqlstate(session, "SELECT tierdb_check_vector_index('no_such')"), "42P01");
        assert_eq!(sqlstate(session, "SELECT tierdb_check_vector_index(123456)"), "42P01");
        assert_eq!(value(session, "SELECT tierdb_check_vector_index(NULL)").unwrap(), Datum::Null);
        // The check reads the table's rows: a role needs SELECT on it.
        setup(session, &["CREATE USER alice"]);
        let mut alice = session_as(session, "alice");
        let check = "SELECT tierdb_check_vector_index('items_v_idx') ->> 'violation_count'";
        assert_eq!(sqlstate(&mut alice, check), "42501");
        setup(session, &["GRANT SELECT ON items TO alice"]);
        assert_eq!(value(&mut alice, check).unwrap(), Datum::Text("0".into()));
    });
}
