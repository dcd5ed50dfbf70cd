//! No statement can overflow a connection's stack: long flat chains that PostgreSQL 15
//! evaluates (OR/AND/IN lists, `+` and `||` chains, UNION ALL branches, WITH chains, nested
//! parentheses, NOT/minus chains, nested subqueries) give PostgreSQL's result, and absurd
//! depth fails with 54001 "stack depth limit exceeded" while the session stays usable.
//! Sessions run on a thread with the server's connection stack so that a missing guard
//! crashes the test process here as it would crash the server.

mod support;

use support::{value, with_session};
use tierdb_sql::{Datum, Output, Session};

/// The session answers after a refused or successful deep statement.
fn assert_usable(session: &mut Session) {
    assert_eq!(value(session, "SELECT 1").unwrap(), Datum::Int(1));
}

fn assert_too_deep(session: &mut Session, sql: &str) {
    let error = value(session, sql).expect_err("absurd depth is refused");
    assert_eq!(error.sqlstate, "54001", "{error}");
    assert_eq!(error.message, "stack depth limit exceeded");
    assert_usable(session);
}

fn repeated(term: &str, separator: &str, count: usize) -> String {
    vec![term; count].join(separator)
}

fn plus_chain(count: usize) -> String {
    format!("SELECT {}", repeated("1", "+", count))
}

fn nested(open: &str, inner: &str, close: &str, depth: usize) -> String {
    format!("SELECT {}{inner}{}", open.repeat(depth), close.repeat(depth))
}

fn with_chain(count: usize) -> String {
    let links: Vec<String> = (2..=count)
        .map(|index| format!("a{index} AS (SELECT x + 1 AS x FROM a{})", index - 1))
        .collect();
    format!("WITH a1 AS (SELECT 1 AS x), {} SELECT x FROM a{count}", links.join(", "))
}

#[test]
fn plus_chain_postgres_evaluates() {
    with_session(|session| {
        // PostgreSQL 15 (max_stack_depth 2MB) evaluates 3,000 terms and refuses 5,000.
        assert_eq!(value(session, &plus_chain(3_000)).unwrap(), Datum::Int(3_000));
        assert_usable(session);
    });
}

#[test]
fn plus_chain_absurd_is_refused() {
    with_session(|session| {
        assert_too_deep(session, &plus_chain(100_000));
        // Behind text whose quotes a naive scan misreads.
        let chain = repeated("1", "+", 100_000);
        for hiding in ["E'\\''", "$$'$$", "/* ' */"] {
            let mut outputs = session.execute(&format!("SELECT {hiding}, {chain}"));
            let error = outputs.pop().unwrap().expect_err("refused");
            assert_eq!(error.sqlstate, "54001", "{hiding}: {error}");
            assert_usable(session);
        }
    });
}

#[test]
fn or_and_lists() {
    with_session(|session| {
        let mut terms = vec!["1 = 0"; 9_999];
        terms.push("1 = 1");
        let or_list = format!("SELECT {}", terms.join(" OR "));
        assert_eq!(value(session, &or_list).unwrap(), Datum::Bool(true));
        let and_list = format!("SELECT {}", repeated("1 = 1", " AND ", 10_000));
        assert_eq!(value(session, &and_list).unwrap(), Datum::Bool(true));
        let false_and = format!("SELECT {} AND 1 = 0", repeated("1 = 1", " AND ", 9_999));
        assert_eq!(value(session, &false_and).unwrap(), Datum::Bool(false));
        // PostgreSQL 15 also evaluates a 100,000-term OR list; tierdb's bound on the syntax
        // tree's depth (which sqlparser's traversals need stack for) refuses it.
        let long_or = format!("SELECT {} OR 1 = 1", repeated("1 = 0", " OR ", 99_999));
        assert_too_deep(session, &long_or);
    });
}

#[test]
fn or_list_over_a_table() {
    with_session(|session| {
        for result in session.execute("CREATE TABLE t (a int PRIMARY KEY, b text)") {
            result.unwrap();
        }
        for result in session.execute(
            "INSERT INTO t SELECT 1, 'x' UNION ALL SELECT 5000, 'y' UNION ALL SELECT 20000, 'z'",
        ) {
            result.unwrap();
        }
        let terms: Vec<String> = (1..=10_000).map(|index| format!("a = {index}")).collect();
        let sql = format!("SELECT count(*) FROM t WHERE {}", terms.join(" OR "));
        assert_eq!(value(session, &sql).unwrap(), Datum::Int(2));
        let list: Vec<String> = (1..=10_000).map(|index| index.to_string()).collect();
        let sql = format!("SELECT count(*) FROM t WHERE a IN ({})", list.join(", "));
        assert_eq!(value(session, &sql).unwrap(), Datum::Int(2));
        let sql = format!("SELECT count(*) FROM t WHERE a NOT IN ({})", list.join(", "));
        assert_eq!(value(session, &sql).unwrap(), Datum::Int(1));
        assert_usable(session);
    });
}

#[test]
fn in_list() {
    with_session(|session| {
        let list: Vec<String> = (1..=10_000).map(|index| index.to_string()).collect();
        let sql = format!("SELECT 9999 IN ({})", list.join(", "));
        assert_eq!(value(session, &sql).unwrap(), Datum::Bool(true));
        // Negative elements are prefix operators: siblings, not nested.
        let negative: Vec<String> = (1..=10_000).map(|index| format!("-{index}")).collect();
        let sql = format!("SELECT -9999 IN ({})", negative.join(", "));
        assert_eq!(value(session, &sql).unwrap(), Datum::Bool(true));
        assert_usable(session);
    });
}

#[test]
fn concatenation_chain() {
    with_session(|session| {
        // PostgreSQL 15 evaluates 2,000 terms and refuses 5,000.
        let sql = format!("SELECT length({})", repeated("'a'", " || ", 2_000));
        assert_eq!(value(session, &sql).unwrap(), Datum::Int(2_000));
        let absurd = format!("SELECT length({})", repeated("'a'", " || ", 100_000));
        assert_too_deep(session, &absurd);
    });
}

#[test]
fn union_all_branches() {
    with_session(|session| {
        // PostgreSQL 15 evaluates 5,000 branches and refuses 10,000.
        let sql =
            format!("SELECT count(*) FROM ({}) AS s", repeated("SELECT 1", " UNION ALL ", 5_000));
        assert_eq!(value(session, &sql).unwrap(), Datum::Int(5_000));
        let absurd =
            format!("SELECT count(*) FROM ({}) AS s", repeated("SELECT 1", " UNION ALL ", 100_000));
        assert_too_deep(session, &absurd);
    });
}

#[test]
fn with_chain_of_a_thousand() {
    with_session(|session| {
        assert_eq!(value(session, &with_chain(1_000)).unwrap(), Datum::Int(1_000));
        assert_usable(session);
    });
}

#[test]
fn nested_parentheses() {
    with_session(|session| {
        assert_eq!(value(session, &nested("(", "1", ")", 1_000)).unwrap(), Datum::Int(1));
        assert_too_deep(session, &nested("(", "1", ")", 100_000));
    });
}

#[test]
fn not_and_minus_chains() {
    with_session(|session| {
        assert_eq!(value(session, &nested("NOT ", "true", "", 1_000)).unwrap(), Datum::Bool(true));
        assert_eq!(value(session, &nested("- ", "1", "", 1_000)).unwrap(), Datum::Int(1));
        assert_too_deep(session, &nested("NOT ", "true", "", 100_000));
        assert_too_deep(session, &nested("- ", "1", "", 100_000));
        let case = nested("CASE WHEN true THEN ", "1", " END", 1_000);
        assert_eq!(value(session, &case).unwrap(), Datum::Int(1));
        assert_too_deep(session, &nested("CASE WHEN true THEN ", "1", " END", 100_000));
    });
}

#[test]
fn nested_subqueries() {
    with_session(|session| {
        // PostgreSQL 15 evaluates 1,000 levels and refuses 3,000.
        assert_eq!(value(session, &nested("(SELECT ", "1", ")", 1_000)).unwrap(), Datum::Int(1));
        assert_too_deep(session, &nested("(SELECT ", "1", ")", 100_000));
        // Between the two, whichever happens (evaluation or 54001), the session survives.
        for depth in [2_000, 2_500, 3_000, 10_000] {
            let outcome = value(session, &nested("(SELECT ", "1", ")", depth));
            assert!(
                matches!(&outcome, Ok(Datum::Int(1)))
                    || matches!(&outcome, Err(error) if error.sqlstate == "54001"),
                "{depth}: {outcome:?}"
            );
            assert_usable(session);
        }
    });
}

#[test]
fn deep_statements_in_extended_protocol() {
    with_session(|session| {
        let error = session.prepare(&nested("(", "1", ")", 100_000), &[]).expect_err("refused");
        assert_eq!(error.sqlstate, "54001");
        let error = session.prepare(&plus_chain(100_000), &[]).expect_err("refused");
        assert_eq!(error.sqlstate, "54001");
        let mut prepared = session.prepare(&plus_chain(3_000), &[]).unwrap();
        match session.execute_prepared(&mut prepared, &[]).unwrap() {
            Output::Rows { rows, .. } => assert_eq!(rows, vec![vec![Datum::Int(3_000)]]),
            other => panic!("expected rows, got {other:?}"),
        }
        assert_usable(session);
    });
}

#[test]
fn deep_column_default_is_used() {
    with_session(|session| {
        // Deeper than sqlparser's default recursion limit (50), which the stored default
        // was once parsed with.
        let default = format!("{}7{}", "(".repeat(200), ")".repeat(200));
        let create = format!("CREATE TABLE d (a int PRIMARY KEY, b int DEFAULT {default})");
        for result in session.execute(&create) {
            result.unwrap();
        }
        for result in session.execute("INSERT INTO d (a) VALUES (1)") {
            result.unwrap();
        }
        assert_eq!(value(session, "SELECT b FROM d").unwrap(), Datum::Int(7));
    });
}

#[test]
fn huge_values_are_refused() {
    with_session(|session| {
        // Each would build a text over 1 GB from a small input: refused before building it.
        for sql in [
            "SELECT repeat('x', 2000000000)",
            "SELECT lpad('x', 2000000000)",
            "SELECT rpad('x', 300000000, 'ab')",
            "SELECT replace(repeat('x', 1000000), 'x', repeat('y', 2000))",
            "SELECT array_to_string(('{' || repeat('a,', 1000000) || 'a}')::text[], repeat('-', 2000))",
        ] {
            let error = value(session, sql).expect_err("refused");
            assert_eq!(error.sqlstate, "54000", "{sql}: {error}");
            assert_usable(session);
        }
        let error = value(session, "SELECT cast('1' AS char(2147483647))").expect_err("refused");
        assert_eq!(error.sqlstate, "22023");
        assert_eq!(error.message, "length for type char cannot exceed 10485760");
        assert_eq!(value(session, "SELECT length(repeat('ab', 1000))").unwrap(), Datum::Int(2000));
    });
}
