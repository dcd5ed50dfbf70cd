//! The binder: name scopes (aliases, joins, USING, CTEs, correlated subqueries) and the
//! SQLSTATEs of binding errors, PostgreSQL's in each case. Runs without a server.

use crate::support;

use support::{rows, setup, sqlstate, value, with_session};
use tierdb_sql::{Datum, Session};

fn tables(session: &mut Session) {
    setup(
        session,
        &[
            "CREATE TABLE a (id int PRIMARY KEY, x int, label text)",
            "CREATE TABLE b (id int PRIMARY KEY, x int)",
            "INSERT INTO a VALUES (1, 10, 'one'), (2, 20, 'two')",
            "INSERT INTO b VALUES (1, 100), (3, 300)",
        ],
    );
}

#[test]
fn names_resolve_through_aliases_joins_and_using() {
    with_session(|session| {
        tables(session);
        // An alias hides the table's own name (42P01 in PostgreSQL).
        assert_eq!(sqlstate(session, "SELECT a.x FROM a AS t"), "42P01");
        assert_eq!(
            value(session, "SELECT t.x FROM a AS t WHERE t.id = 2").unwrap(),
            Datum::Int(20)
        );
        // Both tables have x: unqualified it is ambiguous, qualified it is not.
        assert_eq!(sqlstate(session, "SELECT x FROM a JOIN b ON a.id = b.id"), "42702");
        let joined = rows(session, "SELECT a.x, b.x FROM a JOIN b ON a.id = b.id").unwrap();
        assert_eq!(joined, vec![vec![Datum::Int(10), Datum::Int(100)]]);
        // USING merges the join column: `id` names one column.
        let merged = rows(session, "SELECT id FROM a JOIN b USING (id)").unwrap();
        assert_eq!(merged, vec![vec![Datum::Int(1)]]);
        assert_eq!(sqlstate(session, "SELECT nothing FROM a"), "42703");
        assert_eq!(sqlstate(session, "SELECT * FROM missing"), "42P01");
    });
}

#[test]
fn ctes_and_correlated_subqueries_see_their_scopes() {
    with_session(|session| {
        tables(session);
        let sql = "WITH big AS (SELECT id FROM a WHERE x > 15) SELECT count(*) FROM big";
        assert_eq!(value(session, sql).unwrap(), Datum::Int(1));
        // The CTE is not visible outside its statement.
        assert_eq!(sqlstate(session, "SELECT * FROM big"), "42P01");
        // A correlated subquery reads the outer row.
        let sql = "SELECT a.id, (SELECT b.x FROM b WHERE b.id = a.id) FROM a ORDER BY a.id";
        let correlated = rows(session, sql).unwrap();
        assert_eq!(
            correlated,
            vec![vec![Datum::Int(1), Datum::Int(100)], vec![Datum::Int(2), Datum::Null]]
        );
        assert_eq!(sqlstate(session, "SELECT (SELECT id, x FROM b LIMIT 1)"), "42601");
    });
}

#[test]
fn grouping_and_aggregate_placement_errors() {
    with_session(|session| {
        tables(session);
        assert_eq!(sqlstate(session, "SELECT id FROM a WHERE count(*) > 1"), "42803");
        assert_eq!(sqlstate(session, "SELECT id, count(*) FROM a"), "42803");
        assert_eq!(
            sqlstate(session, "SELECT x, count(*) FROM a GROUP BY id HAVING label = 'x'"),
            "42803"
        );
        let grouped =
            rows(session, "SELECT x % 20, count(*) FROM a GROUP BY 1 ORDER BY 1").unwrap();
        assert_eq!(
            grouped,
            vec![vec![Datum::Int(0), Datum::Int(1)], vec![Datum::Int(10), Datum::Int(1)]]
        );
    });
}

#[test]
fn typing_errors_have_postgres_sqlstates() {
    with_session(|session| {
        tables(session);
        assert_eq!(sqlstate(session, "SELECT 1 + true"), "42883");
        assert_eq!(sqlstate(session, "SELECT id FROM a WHERE label = 1"), "42883");
        assert_eq!(sqlstate(session, "SELECT CASE WHEN true THEN 1 ELSE true END"), "42804");
        assert_eq!(sqlstate(session, "SELECT 'abc'::int"), "22P02");
        assert_eq!(sqlstate(session, "SELECT 2147483647::int + 1"), "22003");
        assert_eq!(sqlstate(session, "INSERT INTO a (id, x) VALUES (3, 'x')"), "22P02");
        assert_eq!(sqlstate(session, "INSERT INTO a (id, nothing) VALUES (3, 1)"), "42703");
        assert_eq!(sqlstate(session, "UPDATE a SET x = true"), "42804");
    });
}

#[test]
fn parameters_are_typed_from_context() {
    with_session(|session| {
        tables(session);
        let prepared =
            session.prepare("SELECT label FROM a WHERE id = $1 AND x > $2", &[]).unwrap();
        let types: Vec<String> =
            prepared.parameter_types.iter().map(|ty| ty.display_name()).collect();
        assert_eq!(types, ["integer", "integer"]);
        let error = session.prepare("SELECT $70000", &[]).unwrap_err();
        assert_eq!(error.sqlstate, "42P02");
    });
}
