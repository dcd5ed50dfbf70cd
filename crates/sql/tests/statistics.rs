//! ANALYZE's statistics and the join order chosen from them (design 020): what is gathered,
//! that it survives a restart of the catalog, the estimates EXPLAIN prints, and that a FROM
//! list is joined starting from its selective items whatever the order written, with the
//! same rows as the written order.

use crate::support;

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
fn a_secondary_index_is_read_only_when_it_selects_few_enough_rows() {
    with_session(|session| {
        tables(session);
        setup(session, &["CREATE INDEX big_k ON big (k)"]);
        // Not analyzed: the rule's index, whatever the share.
        let lines = plan_lines(session, "SELECT count(*) FROM big WHERE k < 400");
        assert!(lines.iter().any(|line| line.contains("Index Scan using big_k")), "{lines:#?}");
        setup(session, &["ANALYZE big"]);
        // k < 5: 1% of the rows, by the index; k < 400: 80%, by a full scan (a lookup per
        // row costs ten rows of a scan, design 020).
        let lines = plan_lines(session, "SELECT count(*) FROM big WHERE k < 5");
        assert!(lines.iter().any(|line| line.contains("Index Scan using big_k")), "{lines:#?}");
        let lines = plan_lines(session, "SELECT count(*) FROM big WHERE k < 400");
        assert!(lines.iter().any(|line| line.contains("Seq Scan on big")), "{lines:#?}");
        // The estimate reads the filter over the table's columns though the scan returns
        // none of them (count(*)), and a secondary index's conjunct is counted once.
        assert!((14_000.0..=18_000.0).contains(&node(&lines, "Seq Scan on big").0), "{lines:#?}");
        let lines = plan_lines(session, "SELECT count(*) FROM big WHERE k < 5");
        assert!((150.0..=250.0).contains(&node(&lines, "Index Scan").0), "{lines:#?}");
        // A key list of many keys on the index: a full scan; of a few: the index.
        let many: Vec<String> = (0..300).map(|key| key.to_string()).collect();
        let lines = plan_lines(
            session,
            &format!("SELECT count(*) FROM big WHERE k IN ({})", many.join(", ")),
        );
        assert!(lines.iter().any(|line| line.contains("Seq Scan on big")), "{lines:#?}");
        let lines = plan_lines(session, "SELECT count(*) FROM big WHERE k IN (1, 2, 3)");
        assert!(lines.iter().any(|line| line.contains("using big_k")), "{lines:#?}");
        // Both answer the same.
        for sql in [
            "SELECT count(*), sum(id) FROM big WHERE k < 400",
            "SELECT count(*), sum(id) FROM big WHERE k < 5",
        ] {
            let expected = rows(session, &sql.replace("k <", "k + 0 <")).unwrap();
            assert_eq!(rows(session, sql).unwrap(), expected, "{sql}");
        }
    });
}

#[test]
fn reltuples_reads_analyzes_count() {
    with_session(|session| {
        tables(session);
        setup(session, &["CREATE INDEX big_k ON big (k)", "CREATE SEQUENCE counter"]);
        let reltuples = |session: &mut Session| {
            rows(session, "SELECT relname::text, reltuples::float8, relpages FROM pg_class WHERE relname IN ('big', 'big_pkey', 'big_k', 'counter') ORDER BY relname").unwrap()
        };
        let row = |name: &str, tuples: f64, pages: i64| {
            vec![Datum::Text(name.into()), Datum::Float(tuples), Datum::Int(pages)]
        };
        assert_eq!(
            reltuples(session),
            vec![
                row("big", -1.0, 0),
                row("big_k", 0.0, 0),
                row("big_pkey", 0.0, 0),
                row("counter", 1.0, 1)
            ]
        );
        setup(session, &["DELETE FROM big WHERE id <= 500", "ANALYZE big"]);
        assert_eq!(
            reltuples(session),
            vec![
                row("big", 19_500.0, 0),
                row("big_k", 19_500.0, 0),
                row("big_pkey", 19_500.0, 0),
                row("counter", 1.0, 1)
            ]
        );
        // TRUNCATE forgets the count (and the statistics), as PostgreSQL resets reltuples.
        setup(session, &["TRUNCATE big"]);
        assert!(session.catalog().table_statistics("big").is_none());
        assert_eq!(reltuples(session)[0], row("big", -1.0, 0));
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

/// An explicit inner JOIN chain is ordered by cost like a FROM list (PostgreSQL flattens
/// it); an outer join in the chain keeps the chain as written.
#[test]
fn an_inner_join_chain_is_ordered_like_a_from_list() {
    with_session(|session| {
        tables(session);
        setup(session, &["ANALYZE"]);
        let chain = "SELECT big.id, mid.id, small.name FROM big \
            JOIN mid ON big.k = mid.big_k INNER JOIN small ON mid.small_id = small.id \
            WHERE small.name = 'n3' ORDER BY 1, 2";
        let lines = plan_lines(session, chain);
        let (_, big) = node(&lines, "Seq Scan on big");
        let (_, mid) = node(&lines, "on mid");
        let (_, small) = node(&lines, "on small");
        assert!(mid == small && small > big, "small and mid join before big: {lines:#?}");
        let listed = "SELECT big.id, mid.id, small.name FROM big, mid, small \
            WHERE big.k = mid.big_k AND mid.small_id = small.id AND small.name = 'n3' \
            ORDER BY 1, 2";
        let chained = rows(session, chain).unwrap();
        assert!(chained.len() > 1000, "{} rows", chained.len());
        assert_eq!(chained, rows(session, listed).unwrap());
        // A LEFT JOIN keeps its rows without a partner: the chain is not flattened.
        let outer = "SELECT small.id, mid.id FROM small LEFT JOIN mid ON mid.small_id = small.id \
            JOIN big ON big.id = small.id WHERE small.id > 20 ORDER BY 1, 2";
        assert_eq!(
            rows(session, outer).unwrap(),
            vec![vec![Datum::Int(21), Datum::Null], vec![Datum::Int(22), Datum::Null]]
        );
        // An ON clause reads only its chain's items, as in PostgreSQL.
        let sql = "SELECT 1 FROM small s, big JOIN mid ON mid.id = s.id";
        assert_eq!(sqlstate(session, sql), "42P01");
    });
}

/// Autoanalyze's choice of tables: those never analyzed once they hold rows, then those
/// whose changed rows pass 50 + 10% of the rows last counted; never views, temp tables or a
/// table created by a block still open. What it gathers is ANALYZE's statistics.
#[test]
fn autoanalyze_gathers_the_tables_whose_rows_changed_enough() {
    with_session(|session| {
        tables(session);
        setup(
            session,
            &[
                "CREATE VIEW small_names AS SELECT name FROM small",
                "CREATE TEMP TABLE scratch AS SELECT g FROM generate_series(1, 5000) g",
            ],
        );
        let catalog = Arc::clone(session.catalog());
        let stop = std::sync::atomic::AtomicBool::new(false);
        let candidates = |catalog: &tierdb_sql::Catalog| -> Vec<String> {
            catalog.autoanalyze_candidates().iter().map(|meta| meta.name.clone()).collect()
        };
        // small's 22 rows are below the threshold and fill less than 8 pages.
        assert_eq!(candidates(&catalog), ["big", "mid"]);
        assert_eq!(tierdb_sql::analyze_candidates(&catalog, &stop), 2);
        assert_eq!(catalog.table_statistics("big").expect("analyzed").rows, 20_000.0);
        assert!(catalog.table_statistics("small").is_none());
        assert!(candidates(&catalog).is_empty());
        setup(session, &["INSERT INTO small SELECT g, 'm' FROM generate_series(100, 151) g"]);
        assert_eq!(candidates(&catalog), ["small"]);
        assert_eq!(tierdb_sql::analyze_candidates(&catalog, &stop), 1);
        assert_eq!(catalog.table_statistics("small").expect("analyzed").rows, 74.0);
        // 50 + 10% of 74 rows is 57.4: 57 changed rows are not enough, 58 are.
        setup(session, &["UPDATE small SET name = 'u' WHERE id >= 100 OR id <= 5"]);
        assert!(candidates(&catalog).is_empty());
        setup(session, &["UPDATE small SET name = 'u' WHERE id = 6"]);
        assert_eq!(candidates(&catalog), ["small"]);
        assert_eq!(tierdb_sql::analyze_candidates(&catalog, &stop), 1);
        // DELETE counts; ANALYZE by hand resets the count.
        setup(session, &["DELETE FROM big WHERE id <= 2100"]);
        assert_eq!(candidates(&catalog), ["big"]);
        setup(session, &["ANALYZE big"]);
        assert!(candidates(&catalog).is_empty());
        // A table created in an open block is not analyzed before it commits.
        setup(
            session,
            &["BEGIN", "CREATE TABLE fresh AS SELECT g AS id FROM generate_series(1, 20000) g"],
        );
        assert!(candidates(&catalog).is_empty(), "{:?}", candidates(&catalog));
        setup(session, &["COMMIT"]);
        assert_eq!(candidates(&catalog), ["fresh"]);
    });
}
