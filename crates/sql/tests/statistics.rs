//! ANALYZE's statistics and the join order chosen from them (design 020): what is gathered,
//! that it survives a restart of the catalog, the estimates EXPLAIN prints, and that a FROM
//! list is joined starting from its selective items whatever the order written, with the
//! same rows as the written order.

mod support;

use std::sync::Arc;

use support::{rows, setup, sqlstate, with_session};
use tierdb_sql::{Datum, Session};

fn tables(session: &mut Session) {
    setup(
        session,
        &[
            "CREATE TABLE big (id int PRIMARY KEY, k int, pad text)",
            "CREATE TABLE mid (id int PRIMARY KEY, small_id int, big_k int)",
            "CREATE TABLE small (id int PRIMARY KEY, name text)",
            "INSERT INTO big SELECT g, g % 500, 'x' FROM generate_series(1, 20000) g",
            "INSERT INTO mid SELECT g, g % 20 + 1, g % 700 FROM generate_series(1, 2000) g",
            "INSERT INTO small SELECT g, 'n' || g FROM generate_series(1, 20) g",
            "INSERT INTO small VALUES (21, NULL), (22, NULL)",
        ],
    );
}

/// EXPLAIN's lines, untrimmed (the indentation is the tree).
fn plan_lines(session: &mut Session, sql: &str) -> Vec<String> {
    rows(session, &format!("EXPLAIN {sql}"))
        .unwrap()
        .into_iter()
        .map(|row| match &row[..] {
            [Datum::Text(line)] => line.clone(),
            other => panic!("a plan line: {other:?}"),
        })
        .collect()
}

/// The estimated rows and indentation of the first line naming `node`.
fn node(lines: &[String], node: &str) -> (f64, usize) {
    let line = lines
        .iter()
        .find(|line| line.contains(node))
        .unwrap_or_else(|| panic!("{node} in {lines:#?}"));
    let rows = line
        .split("(rows=")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|rows| rows.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("an estimate in {line}"));
    (rows, line.len() - line.trim_start().len())
}

#[test]
fn analyze_gathers_rows_nulls_distinct_and_common_values_and_keeps_them() {
    with_session(|session| {
        tables(session);
        setup(session, &["ANALYZE small", "VACUUM ANALYZE big"]);
        let catalog = Arc::clone(session.catalog());
        let small = catalog.table_statistics("small").expect("small was analyzed");
        assert_eq!(small.rows, 22.0);
        let name = &small.columns[1];
        assert_eq!(name.name, "name");
        assert!((name.null_fraction - 2.0 / 22.0).abs() < 1e-9, "{name:?}");
        assert_eq!(name.distinct, 20.0);
        assert_eq!(name.common.len(), 20, "every value of a whole small table is common");
        let big = catalog.table_statistics("big").expect("big was analyzed");
        assert_eq!(big.rows, 20000.0);
        assert_eq!(big.columns[1].distinct, 500.0, "k = g % 500 over 20,000 rows");
        assert!(catalog.table_statistics("mid").is_none(), "mid was not analyzed");
        // A catalog opened again on the same engine reads them back.
        let reopened = tierdb_sql::Catalog::open(Arc::clone(catalog.engine())).unwrap();
        assert_eq!(reopened.table_statistics("big").as_deref(), Some(&*big));
        // A dropped table's statistics go with it; a new table of the name has none.
        setup(session, &["DROP TABLE small", "CREATE TABLE small (id int PRIMARY KEY)"]);
        assert!(catalog.table_statistics("small").is_none());
        assert_eq!(sqlstate(session, "ANALYZE nosuch"), "42P01");
    });
}

#[test]
fn explain_prints_estimates_from_the_statistics() {
    with_session(|session| {
        tables(session);
        setup(session, &["ANALYZE"]);
        let lines = plan_lines(session, "SELECT * FROM big WHERE k = 7");
        let (estimate, _) = node(&lines, "Seq Scan on big");
        assert!((30.0..=50.0).contains(&estimate), "40 rows have k = 7: {lines:#?}");
        let lines = plan_lines(session, "SELECT * FROM big WHERE k < 50");
        let (estimate, _) = node(&lines, "Seq Scan on big");
        assert!((1500.0..=2500.0).contains(&estimate), "2,000 rows have k < 50: {lines:#?}");
        let lines = plan_lines(session, "SELECT * FROM small WHERE name LIKE 'n1%'");
        let (estimate, _) = node(&lines, "Seq Scan on small");
        assert_eq!(estimate, 11.0, "n1 and n10 to n19: {lines:#?}");
        let lines = plan_lines(session, "SELECT * FROM small WHERE name IS NULL");
        assert_eq!(node(&lines, "Seq Scan on small").0, 2.0, "{lines:#?}");
        let costs_off = rows(session, "EXPLAIN (COSTS OFF) SELECT * FROM small").unwrap();
        assert_eq!(costs_off, vec![vec![Datum::Text("Seq Scan on small".into())]]);
    });
}

#[test]
fn a_from_list_joins_its_selective_items_first_with_the_same_rows() {
    with_session(|session| {
        tables(session);
        setup(session, &["ANALYZE"]);
        let written = "SELECT big.id, mid.id, small.name FROM big, mid, small \
            WHERE big.k = mid.big_k AND mid.small_id = small.id AND small.name = 'n3' \
            ORDER BY 1, 2";
        let lines = plan_lines(session, written);
        let (_, big) = node(&lines, "Seq Scan on big");
        let (_, mid) = node(&lines, "on mid");
        let (small_rows, small) = node(&lines, "on small");
        assert_eq!(small_rows, 1.0, "{lines:#?}");
        assert!(mid == small && small > big, "small and mid join before big: {lines:#?}");
        let reordered = rows(session, written).unwrap();
        // The same query with the joins forced into the written order by a subquery that
        // the planner does not reorder: the same rows.
        let forced = rows(
            session,
            "SELECT x.bid, x.mid_id, small.name FROM \
             (SELECT big.id AS bid, mid.id AS mid_id, mid.small_id FROM big JOIN mid ON big.k = mid.big_k) x \
             JOIN small ON x.small_id = small.id WHERE small.name = 'n3' ORDER BY 1, 2",
        )
        .unwrap();
        assert!(reordered.len() > 1000, "{} rows", reordered.len());
        assert_eq!(reordered, forced);
    });
}
