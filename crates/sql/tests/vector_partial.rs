//! Partial HNSW and ivfflat indexes (`CREATE INDEX ... USING hnsw (...) WHERE ...`, as
//! pgvector documents them for filtering): the build and every write index only the rows the
//! predicate makes true; a query uses the index only when its WHERE implies the predicate
//! (else another index or the exact sort), and then answers what the exact sort answers;
//! UPDATEs moving rows in and out, DELETE and VACUUM's purge, the check function,
//! iterative scans with a further filter, pg_indexes, DROP, ALTER and a restart.

use crate::support;

use support::{
    explain, ids, message, open_session, rows, run, setup, value, with_session,
    CONNECTION_STACK_BYTES,
};
use tierdb_sql::{Datum, Session};

/// 400 rows in 4 categories (`id % 4`), vectors at distinct distances from the queries.
fn items(session: &mut Session) {
    let values: Vec<String> = (1..=400)
        .map(|id| {
            let offset = f64::from(id) / 997.0;
            let vector = format!("[{},{},{}]", f64::from(id % 17) + offset, id % 5, id / 10);
            format!("({id}, {}, '{vector}')", id % 4)
        })
        .collect();
    setup(
        session,
        &[
            "CREATE TABLE items (id integer PRIMARY KEY, category integer, v vector(3))",
            &format!("INSERT INTO items VALUES {}", values.join(", ")),
        ],
    );
}

/// The exact answer of `ORDER BY v <-> query LIMIT limit` under `filter`.
fn exact(session: &mut Session, filter: &str, query: &str, limit: usize) -> Vec<i64> {
    let sql = format!(
        "SELECT id FROM items WHERE {filter} ORDER BY l2_distance(v, '{query}'), id LIMIT {limit}"
    );
    assert!(explain(session, &sql).contains("Sort"), "{sql}");
    ids(session, &sql)
}

fn nearest(filter: &str, query: &str, limit: usize) -> String {
    format!("SELECT id FROM items WHERE {filter} ORDER BY v <-> '{query}' LIMIT {limit}")
}

/// A field of `tierdb_check_vector_index(index)`, as text.
fn check_field(session: &mut Session, index: &str, field: &str) -> String {
    let sql = format!("SELECT tierdb_check_vector_index('{index}') ->> '{field}'");
    match value(session, &sql).unwrap() {
        Datum::Text(text) => text,
        other => panic!("{field}: {other:?}"),
    }
}

/// The query answers the exact sort's rows, through `index`.
fn assert_answers(session: &mut Session, index: &str, filter: &str, query: &str) {
    let sql = nearest(filter, query, 10);
    let plan = explain(session, &sql);
    assert!(plan.contains(&format!("Index Scan using {index} on items")), "{sql}: {plan}");
    assert_eq!(ids(session, &sql), exact(session, filter, query, 10), "{sql}");
}

#[test]
fn a_partial_hnsw_index_serves_only_queries_implying_its_predicate() {
    with_session(|session| {
        items(session);
        setup(
            session,
            &[
                "CREATE INDEX items_c1 ON items USING hnsw (v vector_l2_ops) WITH (m = 4) \
                 WHERE category = 1",
                "SET hnsw.ef_search = 400",
            ],
        );
        let query = "[3,1,4]";
        assert_answers(session, "items_c1", "category = 1", query);
        // More conjuncts than the predicate: still implied; they stay in the filter.
        assert_answers(session, "items_c1", "category = 1 AND id % 2 = 1", query);
        assert_answers(session, "items_c1", "id % 3 = 0 AND (category = 1)", query);
        // Not implied: no filter, another category, a weaker condition.
        for filter in ["true", "category = 2", "category >= 1", "category = 1 OR id = 2"] {
            let sql = nearest(filter, query, 10);
            let plan = explain(session, &sql);
            assert!(!plan.contains("items_c1") && plan.contains("Sort"), "{sql}: {plan}");
            assert_eq!(ids(session, &sql), exact(session, filter, query, 10), "{sql}");
        }
        // Only the 100 rows of category 1 are in the graph.
        assert_eq!(check_field(session, "items_c1", "node_count"), "100");
        assert_eq!(check_field(session, "items_c1", "rows_indexed"), "100");
        assert_eq!(check_field(session, "items_c1", "violation_count"), "0");
        // A full index serves the other categories; the partial one stays preferred for its.
        setup(session, &["CREATE INDEX items_all ON items USING hnsw (v vector_l2_ops)"]);
        assert_answers(session, "items_all", "category = 2", query);
        assert_answers(session, "items_c1", "category = 1", query);
        assert_answers(session, "items_all", "true", query);
        // A B+tree index on the filtered column: the implied partial vector index still wins
        // (the B+tree range left every conjunct in the filter).
        setup(
            session,
            &["DROP INDEX items_all", "CREATE INDEX items_category ON items (category)"],
        );
        assert_answers(session, "items_c1", "category = 1", query);
    });
}

#[test]
fn updates_moving_rows_in_and_out_deletes_and_vacuum_keep_the_index_exact() {
    with_session(|session| {
        items(session);
        setup(
            session,
            &[
                "CREATE INDEX items_c1 ON items USING hnsw (v vector_l2_ops) WHERE category = 1",
                "SET hnsw.ef_search = 400",
            ],
        );
        let query = "[3,1,4]";
        let before = exact(session, "category = 1", query, 10);
        // Out of the predicate with the vector kept, and with a new one.
        setup(
            session,
            &[
                &format!("UPDATE items SET category = 0 WHERE id = {}", before[0]),
                &format!("UPDATE items SET category = 2, v = '[3,1,4]' WHERE id = {}", before[1]),
            ],
        );
        // Into it with the vector kept (row 42 of category 2, first moved near the query),
        // and with a new one (row 4, category 0).
        setup(
            session,
            &[
                "UPDATE items SET v = '[3,1,4.02]' WHERE id = 42",
                "UPDATE items SET category = 1 WHERE id = 42",
                "UPDATE items SET category = 1, v = '[3,1,4.01]' WHERE id = 4",
            ],
        );
        assert_answers(session, "items_c1", "category = 1", query);
        let answer = ids(session, &nearest("category = 1", query, 10));
        assert!(!answer.contains(&before[0]) && !answer.contains(&before[1]), "{answer:?}");
        assert_eq!(answer[..2], [4, 42], "{answer:?}");
        // A row updated within the predicate, and rows deleted.
        setup(
            session,
            &[
                &format!("UPDATE items SET v = '[90,90,90]' WHERE id = {}", before[2]),
                &format!("DELETE FROM items WHERE id IN ({}, {})", before[3], before[4]),
            ],
        );
        assert_answers(session, "items_c1", "category = 1", query);
        // 100 rows, 2 moved out, 2 in, 2 deleted; entries: 100, and the 2 moved in and the
        // new vector of a row updated within the predicate.
        assert_eq!(check_field(session, "items_c1", "rows_indexed"), "98");
        assert_eq!(check_field(session, "items_c1", "violation_count"), "0");
        assert_eq!(check_field(session, "items_c1", "node_count"), "103");
        let count = |session: &mut Session, field| -> u64 {
            check_field(session, "items_c1", field).parse().unwrap()
        };
        assert_eq!(count(session, "entries_live") + count(session, "entries_dead"), 103);
        // VACUUM purges the dead entries (the moved-out rows' too: their remaining version
        // is outside the predicate) and keeps the moved-in ones.
        run(session, "VACUUM items").unwrap();
        assert_eq!(check_field(session, "items_c1", "entries_dead"), "0");
        assert_eq!(check_field(session, "items_c1", "node_count"), "98");
        assert_eq!(check_field(session, "items_c1", "violation_count"), "0");
        assert_answers(session, "items_c1", "category = 1", query);
        // Within a transaction block that moves rows, and after its rollback.
        setup(session, &["BEGIN", "UPDATE items SET category = 3 WHERE id = 4"]);
        assert_answers(session, "items_c1", "category = 1", query);
        assert!(!ids(session, &nearest("category = 1", query, 10)).contains(&4));
        setup(session, &["ROLLBACK"]);
        assert_eq!(ids(session, &nearest("category = 1", query, 1)), vec![4]);
    });
}

#[test]
fn iterative_scans_fill_a_further_filter_over_a_partial_index() {
    with_session(|session| {
        items(session);
        setup(
            session,
            &[
                "CREATE INDEX items_c1 ON items USING hnsw (v vector_l2_ops) WHERE category = 1",
                "SET hnsw.ef_search = 10",
            ],
        );
        let filter = "category = 1 AND id % 7 = 0";
        let query = "[3,1,40]";
        let sql = nearest(filter, query, 10);
        let plan = explain(session, &sql);
        assert!(plan.contains("Index Scan using items_c1 on items"), "{plan}");
        let expected = exact(session, filter, query, 10);
        assert_eq!(expected.len(), 10);
        assert!(ids(session, &sql).len() < 10, "off: the LIMIT is not filled");
        run(session, "SET hnsw.iterative_scan = strict_order").unwrap();
        assert_eq!(ids(session, &sql), expected);
        run(session, "SET hnsw.iterative_scan = relaxed_order").unwrap();
        let mut relaxed = ids(session, &sql);
        relaxed.sort_unstable();
        let mut sorted = expected.clone();
        sorted.sort_unstable();
        assert_eq!(relaxed, sorted);
    });
}

#[test]
fn a_partial_ivfflat_index_holds_and_returns_only_its_rows() {
    with_session(|session| {
        items(session);
        setup(
            session,
            &[
                "CREATE INDEX items_c2 ON items USING ivfflat (v vector_l2_ops) WITH (lists = 4) \
                 WHERE category = 2",
                "SET ivfflat.probes = 4",
            ],
        );
        assert!(session.take_warnings().is_empty(), "100 rows for 4 lists");
        // Near row 3 (category 3): no row of category 2 is within 1 of it.
        let query = "[3,3,0]";
        assert_answers(session, "items_c2", "category = 2", query);
        let plan = explain(session, &nearest("category = 3", query, 10));
        assert!(!plan.contains("items_c2"), "{plan}");
        let before = exact(session, "category = 2", query, 10);
        setup(
            session,
            &[
                &format!("UPDATE items SET category = 0 WHERE id = {}", before[0]),
                "UPDATE items SET category = 2 WHERE id = 3",
                &format!("DELETE FROM items WHERE id = {}", before[1]),
                "VACUUM items",
            ],
        );
        assert_answers(session, "items_c2", "category = 2", query);
        let answer = ids(session, &nearest("category = 2", query, 10));
        assert!(answer[0] == 3 && !answer.contains(&before[0]), "{answer:?}");
        // The NOTICE counts the rows the predicate keeps (none here).
        run(session, "CREATE INDEX items_none ON items USING ivfflat (v) WHERE category = 9")
            .unwrap();
        let notices = session.take_warnings();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert_eq!(notices[0].message, "ivfflat index created with little data");
        assert_eq!(ids(session, &nearest("category = 9", query, 10)), Vec::<i64>::new());
    });
}

#[test]
fn definitions_drop_alter_and_refusals_follow_partial_btree_indexes() {
    with_session(|session| {
        items(session);
        setup(
            session,
            &[
                "CREATE INDEX items_c1 ON items USING hnsw (v vector_l2_ops) WHERE category = 1",
                "CREATE INDEX items_c2 ON items USING ivfflat (v) WITH (lists = 2) \
                 WHERE category = 2 AND id > 10",
            ],
        );
        let definitions = rows(
            session,
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'items' ORDER BY indexname",
        )
        .unwrap();
        let definitions: Vec<Datum> = definitions.into_iter().map(|row| row[0].clone()).collect();
        assert_eq!(
            definitions[..2],
            [
                Datum::Text(
                    "CREATE INDEX items_c1 ON public.items USING hnsw (v vector_l2_ops) \
                     WHERE (category = 1)"
                        .into()
                ),
                Datum::Text(
                    "CREATE INDEX items_c2 ON public.items USING ivfflat (v) WITH (lists='2') \
                     WHERE ((category = 2) AND (id > 10))"
                        .into()
                ),
            ]
        );
        let pretty = "SELECT pg_get_indexdef('items_c1'::regclass, 0, true)";
        assert_eq!(
            value(session, pretty).unwrap(),
            Datum::Text(
                "CREATE INDEX items_c1 ON items USING hnsw (v vector_l2_ops) WHERE category = 1"
                    .into()
            )
        );
        // ALTER TABLE that would need the predicate rewritten: refused as for B+tree.
        let (state, text) = message(session, "ALTER TABLE items DROP COLUMN category");
        assert_eq!(state, "0A000", "{text}");
        assert!(text.contains("partial index"), "{text}");
        // DROP INDEX: queries sort again; the name is free for a full index of every row.
        setup(session, &["DROP INDEX items_c1"]);
        let plan = explain(session, &nearest("category = 1", "[1,1,1]", 5));
        assert!(plan.contains("Sort") && !plan.contains("items_c1"), "{plan}");
        setup(session, &["CREATE INDEX items_c1 ON items USING hnsw (v vector_l2_ops)"]);
        assert_eq!(check_field(session, "items_c1", "node_count"), "400");
        // What stays refused: INCLUDE, expressions; a predicate gets PostgreSQL's checks.
        for (sql, state, text) in [
            (
                "CREATE INDEX ON items USING hnsw (v vector_l2_ops) INCLUDE (id)",
                "0A000",
                "access method \"hnsw\" does not support included columns",
            ),
            (
                "CREATE INDEX ON items USING ivfflat ((v + v)) WHERE category = 1",
                "0A000",
                "ivfflat index on an expression is not supported",
            ),
            (
                "CREATE INDEX ON items USING hnsw (v vector_l2_ops) WHERE random() > 0.5",
                "42P17",
                "functions in index predicate must be marked IMMUTABLE",
            ),
            (
                "CREATE INDEX ON items USING hnsw (v vector_l2_ops) WHERE no_such = 1",
                "42703",
                "column \"no_such\" does not exist",
            ),
        ] {
            assert_eq!(message(session, sql), (state, text.to_string()), "{sql}");
        }
        // A vector index named as an existing partial index: 42P07, and the existing index
        // keeps its predicate (a duplicate outside it is still allowed).
        setup(session, &["CREATE UNIQUE INDEX items_u ON items (category) WHERE id = 1"]);
        for using in ["hnsw (v vector_l2_ops)", "ivfflat (v)"] {
            let sql = format!("CREATE INDEX items_u ON items USING {using} WHERE id = 2");
            let (state, _) = message(session, &sql);
            assert_eq!(state, "42P07", "{sql}");
        }
        setup(session, &["INSERT INTO items VALUES (1000, 1, '[1,1,1]')"]);
    });
}

#[test]
fn a_partial_vector_index_keeps_its_predicate_across_a_restart() {
    std::thread::Builder::new()
        .stack_size(CONNECTION_STACK_BYTES)
        .spawn(|| {
            let directory = tempfile::tempdir().unwrap();
            let mut session = open_session(directory.path(), 1);
            items(&mut session);
            let index = "CREATE INDEX items_c1 ON items USING hnsw (v vector_l2_ops) \
                         WHERE category = 1";
            setup(&mut session, &[index]);
            drop(session);
            let mut session = open_session(directory.path(), 2);
            setup(
                &mut session,
                &[
                    "INSERT INTO items VALUES (1001, 1, '[3,1,4]'), (1002, 2, '[3,1,4]')",
                    "SET hnsw.ef_search = 400",
                ],
            );
            assert_eq!(check_field(&mut session, "items_c1", "node_count"), "101");
            assert_eq!(check_field(&mut session, "items_c1", "violation_count"), "0");
            assert_answers(&mut session, "items_c1", "category = 1", "[3,1,4]");
            assert_eq!(ids(&mut session, &nearest("category = 1", "[3,1,4]", 1)), vec![1001]);
        })
        .unwrap()
        .join()
        .expect("no panic");
}

/// A dropped partial index's predicate (DROP INDEX, DROP TABLE, a rolled-back CREATE INDEX)
/// is not applied to a later index of its name: a UNIQUE constraint's index, which registers
/// no predicate of its own, enforces uniqueness over every row.
#[test]
fn a_dropped_partial_index_leaves_no_predicate_on_its_name() {
    with_session(|session| {
        let drops = [
            "DROP INDEX p",
            "DROP TABLE items",
            "ROLLBACK", // of a block that created p
        ];
        for (round, drop) in drops.into_iter().enumerate() {
            let create = "CREATE INDEX p ON items USING hnsw (v vector_l2_ops) WHERE category = 1";
            setup(
                session,
                &["CREATE TABLE items (id integer PRIMARY KEY, category integer, v vector(3))"],
            );
            if drop == "ROLLBACK" {
                setup(session, &["BEGIN", create, drop]);
            } else {
                setup(session, &[create, drop]);
            }
            let other = format!("other{round}");
            setup(
                session,
                &[
                    &format!("CREATE TABLE {other} (id integer PRIMARY KEY, category integer)"),
                    &format!("ALTER TABLE {other} ADD CONSTRAINT p UNIQUE (category)"),
                    &format!("INSERT INTO {other} VALUES (1, 5)"),
                ],
            );
            let duplicate = format!("INSERT INTO {other} VALUES (2, 5)");
            assert_eq!(message(session, &duplicate).0, "23505", "after {drop}");
            setup(session, &[&format!("DROP TABLE {other}"), "DROP TABLE IF EXISTS items"]);
        }
    });
}
