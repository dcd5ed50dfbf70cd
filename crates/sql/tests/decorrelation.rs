//! Correlated subqueries run as joins (bind/decorrelate.rs) and OR factoring
//! (plan/or_factoring.rs), as EXPLAIN shows them: no per-row SubPlan where the correlation is
//! equalities, a SubPlan where it is not, InitPlans for uncorrelated subqueries, a hash join
//! on a key every OR branch repeats. Runs without a server; tests/slt/decorrelation.slt
//! checks the answers against PostgreSQL.

use crate::support;

use support::{explain_lines, rows, setup, with_session};
use tierdb_sql::{Datum, Session};

fn tables(session: &mut Session) {
    setup(
        session,
        &[
            "CREATE TABLE o (id int PRIMARY KEY, k int, x numeric)",
            "CREATE TABLE i (id int PRIMARY KEY, k int, q numeric, tag text)",
            "INSERT INTO o VALUES (1, 1, 5), (2, 2, 50), (3, NULL, 1), (4, 7, 0)",
            "INSERT INTO i VALUES (1, 1, 10), (2, 1, 20), (3, 2, 30), (4, NULL, 40)",
        ],
    );
}

fn plan(session: &mut Session, sql: &str) -> Vec<String> {
    explain_lines(session, sql)
}

fn has(lines: &[String], start: &str) -> bool {
    lines.iter().any(|line| line.starts_with(start))
}

fn ids(session: &mut Session, sql: &str) -> Vec<i64> {
    rows(session, sql)
        .unwrap_or_else(|error| panic!("{sql}: {error}"))
        .into_iter()
        .map(|row| match &row[..] {
            [Datum::Int(id)] => *id,
            other => panic!("an id: {other:?}"),
        })
        .collect()
}

#[test]
fn scalar_aggregate_subqueries_become_left_joins() {
    with_session(|session| {
        tables(session);
        let sql = "SELECT o.id FROM o WHERE o.x < (SELECT 0.5 * avg(i.q) FROM i WHERE i.k = o.k) ORDER BY o.id";
        let lines = plan(session, sql);
        assert!(!has(&lines, "SubPlan"), "{lines:#?}");
        assert!(has(&lines, "->  Hash Left Join"), "{lines:#?}");
        assert!(has(&lines, "->  HashAggregate"), "{lines:#?}");
        assert_eq!(ids(session, sql), [1]);
        // count over no rows is 0, not NULL: ids 3 (NULL key) and 4 (no group).
        let count =
            "SELECT o.id FROM o WHERE (SELECT count(*) FROM i WHERE i.k = o.k) = 0 ORDER BY o.id";
        assert!(!has(&plan(session, count), "SubPlan"));
        assert_eq!(ids(session, count), [3, 4]);
    });
}

#[test]
fn exists_and_not_exists_become_joins() {
    with_session(|session| {
        tables(session);
        let exists =
            "SELECT o.id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k) ORDER BY o.id";
        let lines = plan(session, exists);
        assert!(!has(&lines, "SubPlan") && has(&lines, "->  Hash Join"), "{lines:#?}");
        assert_eq!(ids(session, exists), [1, 2]);
        let not_exists =
            "SELECT o.id FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.k = o.k) ORDER BY o.id";
        let lines = plan(session, not_exists);
        assert!(!has(&lines, "SubPlan") && has(&lines, "->  Hash Left Join"), "{lines:#?}");
        assert_eq!(ids(session, not_exists), [3, 4]);
    });
}

#[test]
fn other_correlations_stay_subplans() {
    with_session(|session| {
        tables(session);
        let sql = "SELECT o.id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND i.q > o.x) ORDER BY o.id";
        let lines = plan(session, sql);
        assert!(lines.iter().any(|line| line == "SubPlan 1"), "{lines:#?}");
        assert_eq!(ids(session, sql), [1]);
        let limited = "SELECT o.id FROM o WHERE 15 < (SELECT i.q FROM i WHERE i.k = o.k ORDER BY i.q DESC LIMIT 1) ORDER BY o.id";
        assert!(has(&plan(session, limited), "SubPlan 1"));
        assert_eq!(ids(session, limited), [1, 2]);
    });
}

#[test]
fn uncorrelated_subqueries_are_init_plans_and_hashed_subplans() {
    with_session(|session| {
        tables(session);
        let lines = plan(
            session,
            "SELECT o.id FROM o WHERE o.x > (SELECT avg(q) FROM i) AND o.k IN (SELECT k FROM i)",
        );
        assert!(has(&lines, "InitPlan 1 (returns $0)"), "{lines:#?}");
        assert!(has(&lines, "SubPlan 2 (hashed)"), "{lines:#?}");
    });
}

#[test]
fn a_join_key_in_every_or_branch_hashes_the_join() {
    with_session(|session| {
        tables(session);
        let sql = "SELECT o.id, i.id FROM o, i WHERE (o.k = i.k AND i.q > 15) OR (o.k = i.k AND o.x > 10) \
                   ORDER BY o.id, i.id";
        let lines = plan(session, sql);
        assert!(has(&lines, "Hash Join") || has(&lines, "->  Hash Join"), "{lines:#?}");
        let pairs = rows(session, sql).expect("runs");
        assert_eq!(pairs.len(), 2, "{pairs:?}");
        // A branch that is only the common conjunct absorbs the OR.
        let absorbed = "SELECT o.id FROM o, i WHERE (o.k = i.k) OR (o.k = i.k AND o.x > 10) ORDER BY o.id, i.id";
        assert!(!has(&plan(session, absorbed), "Nested Loop"));
        assert_eq!(ids(session, absorbed), [1, 1, 2]);
    });
}
