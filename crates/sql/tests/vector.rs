//! The vector type inside a session: values survive storage with their dimensions checked,
//! to_regtype finds the type, and keys over vector columns are refused (their stored bytes
//! do not order as pgvector's btree operator class does).

use crate::support;

use std::sync::Arc;

use support::{explain, ids, run, setup, sqlstate, value, with_session};
use tierdb_sql::{Datum, Output};

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
                "CREATE INDEX ON embeddings USING brin (n)",
                "index access method \"brin\" is not supported",
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

/// `CREATE INDEX ... USING hnsw` with pgvector 0.8.2's errors (SQLSTATE and message, taken
/// from a real server), built on a populated table and maintained by inserts; pg_indexes
/// shows pgvector's definition; `hnsw.ef_search` has pgvector's bounds and default.
#[test]
fn hnsw_indexes_are_created_with_pgvector_checks() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE t (id integer PRIMARY KEY, v vector(3), u vector, h vector(2001))",
                "INSERT INTO t VALUES (1, '[1,2,3]', NULL, NULL), (2, '[3,2,1]', NULL, NULL), (3, NULL, NULL, NULL)",
            ],
        );
        for (sql, state, message) in [
            ("CREATE INDEX ON t USING hnsw (v vector_l2_ops) WITH (m = 1)", "22023", "value 1 out of bounds for option \"m\""),
            ("CREATE INDEX ON t USING hnsw (v vector_l2_ops) WITH (m = 101)", "22023", "value 101 out of bounds for option \"m\""),
            ("CREATE INDEX ON t USING hnsw (v vector_l2_ops) WITH (ef_construction = 3)", "22023", "value 3 out of bounds for option \"ef_construction\""),
            ("CREATE INDEX ON t USING hnsw (v vector_l2_ops) WITH (m = 16, ef_construction = 31)", "22023", "ef_construction must be greater than or equal to 2 * m"),
            ("CREATE INDEX ON t USING hnsw (v vector_l2_ops) WITH (foo = 3)", "22023", "unrecognized parameter \"foo\""),
            ("CREATE INDEX ON t USING hnsw (v vector_l2_ops) WITH (m = 'x')", "22023", "invalid value for integer option \"m\": x"),
            ("CREATE INDEX ON t USING hnsw (v vector_l2_ops) WITH (m = 16, m = 8)", "22023", "parameter \"m\" specified more than once"),
            ("CREATE INDEX ON t USING hnsw (u vector_l2_ops)", "22023", "column does not have dimensions"),
            ("CREATE INDEX ON t USING hnsw (h vector_l2_ops)", "54000", "column cannot have more than 2000 dimensions for hnsw index"),
            ("CREATE INDEX ON t USING hnsw (v)", "42704", "data type vector has no default operator class for access method \"hnsw\""),
            ("CREATE INDEX ON t USING hnsw (id)", "42704", "data type integer has no default operator class for access method \"hnsw\""),
            ("CREATE INDEX ON t USING hnsw (v int4_ops)", "42704", "operator class \"int4_ops\" does not exist for access method \"hnsw\""),
            ("CREATE INDEX ON t USING hnsw (v vector_l2_ops, id)", "0A000", "access method \"hnsw\" does not support multicolumn indexes"),
            ("CREATE UNIQUE INDEX ON t USING hnsw (v vector_l2_ops)", "0A000", "access method \"hnsw\" does not support unique indexes"),
            ("CREATE INDEX ON t USING hnsw (v halfvec_l2_ops)", "42804", "operator class \"halfvec_l2_ops\" does not accept data type vector"),
            ("SET hnsw.ef_search = 0", "22023", "0 is outside the valid range for parameter \"hnsw.ef_search\" (1 .. 1000)"),
            ("SET hnsw.ef_search = 1001", "22023", "1001 is outside the valid range for parameter \"hnsw.ef_search\" (1 .. 1000)"),
            ("SET hnsw.ef_search = 'x'", "22023", "invalid value for parameter \"hnsw.ef_search\": \"x\""),
        ] {
            let error = run(session, sql).expect_err(sql);
            assert_eq!((error.sqlstate, error.message.as_str()), (state, message), "{sql}");
        }
        run(session, "CREATE INDEX tv ON t USING hnsw (v vector_cosine_ops) WITH (m = 4, ef_construction = 10)").unwrap();
        run(session, "CREATE INDEX tv2 ON t USING hnsw (v vector_ip_ops)").unwrap();
        assert_eq!(
            sqlstate(session, "CREATE INDEX tv2 ON t USING hnsw (v vector_l2_ops)"),
            "42P07"
        );
        run(session, "CREATE INDEX IF NOT EXISTS tv2 ON t USING hnsw (v vector_l2_ops)").unwrap();
        assert_eq!(
            value(session, "SELECT indexdef FROM pg_indexes WHERE indexname = 'tv'").unwrap(),
            Datum::Text("CREATE INDEX tv ON public.t USING hnsw (v vector_cosine_ops) WITH (m='4', ef_construction='10')".into())
        );
        assert_eq!(
            value(session, "SELECT indexdef FROM pg_indexes WHERE indexname = 'tv2'").unwrap(),
            Datum::Text("CREATE INDEX tv2 ON public.t USING hnsw (v vector_ip_ops)".into())
        );
        assert_eq!(
            value(session, "SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'tv'").unwrap(),
            Datum::Text("hnsw".into())
        );
        run(session, "INSERT INTO t VALUES (4, '[1,2,2]', NULL, NULL)").unwrap();
        run(session, "UPDATE t SET v = '[9,9,9]' WHERE id = 2").unwrap();
        for (offset, id) in [(0, 1), (1, 4), (2, 2)] {
            let sql = format!(
                "SELECT id FROM t WHERE v IS NOT NULL ORDER BY v <-> '[1,2,3]' LIMIT 1 OFFSET {offset}"
            );
            assert_eq!(value(session, &sql).unwrap(), Datum::Int(id), "{sql}");
        }
        assert_eq!(value(session, "SHOW hnsw.ef_search").unwrap(), Datum::Text("40".into()));
        run(session, "SET hnsw.ef_search = 100").unwrap();
        assert_eq!(value(session, "SHOW hnsw.ef_search").unwrap(), Datum::Text("100".into()));
        run(session, "RESET hnsw.ef_search").unwrap();
        assert_eq!(value(session, "SHOW hnsw.ef_search").unwrap(), Datum::Text("40".into()));
        run(session, "DROP INDEX tv").unwrap();
        run(session, "DROP INDEX tv2").unwrap();
        assert_eq!(
            value(session, "SELECT count(*) FROM pg_indexes WHERE tablename = 't'").unwrap(),
            Datum::Int(1)
        );
    });
}

/// An HNSW index the engine built but whose SQL definition was never stored (a crash
/// between the two) is dropped when the catalog opens, so the name can be used again.
#[test]
fn an_interrupted_hnsw_build_leaves_no_index() {
    std::thread::Builder::new()
        .stack_size(support::CONNECTION_STACK_BYTES)
        .spawn(|| {
            let directory = tempfile::tempdir().unwrap();
            let config = tierdb_storage::StoreConfig::local(directory.path()).unwrap();
            let store = Arc::new(tierdb_storage::PageStore::open(config).unwrap());
            let engine = tierdb_engine::Engine::open(store).unwrap();
            let catalog = tierdb_sql::Catalog::open(Arc::clone(&engine)).unwrap();
            catalog.bootstrap_superuser("tierdb", None).unwrap();
            let statistics = Arc::new(tierdb_sql::StatementStats::default());
            let mut session = tierdb_sql::Session::new(catalog, statistics, "tierdb", "tierdb", 1);
            setup(&mut session, &["CREATE TABLE t (id integer PRIMARY KEY, v vector(2))"]);
            drop(session);
            let parameters = tierdb_engine::VectorIndexParameters {
                dimensions: 2,
                metric: tierdb_engine::VectorMetric::L2,
                m: 16,
                ef_construction: 64,
            };
            let orphan = tierdb_engine::VectorIndexDef {
                name: "t_v_idx".into(),
                column: 1,
                parameters,
                method: tierdb_engine::VectorMethod::Hnsw,
            };
            engine.create_vector_index("t", orphan).unwrap();
            let catalog = tierdb_sql::Catalog::open(Arc::clone(&engine)).unwrap();
            assert!(engine.vector_index_defs("t").unwrap().is_empty(), "the orphan is dropped");
            let statistics = Arc::new(tierdb_sql::StatementStats::default());
            let mut session = tierdb_sql::Session::new(catalog, statistics, "tierdb", "tierdb", 1);
            run(&mut session, "CREATE INDEX ON t USING hnsw (v vector_l2_ops)").unwrap();
            assert_eq!(engine.vector_index_defs("t").unwrap().len(), 1);
        })
        .unwrap()
        .join()
        .unwrap();
}

/// `ORDER BY col <op> const LIMIT k` reads the HNSW index of that operator (EXPLAIN shows
/// PostgreSQL's lines), returns what the exact sort returns on a small table, skips deleted
/// and updated rows' stale entries, returns at most hnsw.ef_search rows as pgvector does, and
/// the function form, other operators and DESC keep the sort.
#[test]
fn nearest_neighbour_queries_use_the_hnsw_index() {
    with_session(|session| {
        let values: Vec<String> = (1..=200)
            .map(|id| {
                // Distinct distances: no ties, whose order an index leaves open.
                let offset = f64::from(id) / 997.0;
                format!("({id}, '[{},{},{}]')", f64::from(id % 17) + offset, id % 5, id / 10)
            })
            .collect();
        setup(
            session,
            &[
                "CREATE TABLE items (id integer PRIMARY KEY, v vector(3))",
                &format!("INSERT INTO items VALUES {}", values.join(", ")),
                "CREATE INDEX items_l2 ON items USING hnsw (v vector_l2_ops)",
                "CREATE INDEX items_cosine ON items USING hnsw (v vector_cosine_ops)",
                "SET hnsw.ef_search = 300",
            ],
        );
        let nearest = "SELECT id FROM items ORDER BY v <-> '[3,1,4]' LIMIT 7";
        let plan = explain(session, nearest);
        assert!(plan.contains("Index Scan using items_l2 on items"), "{plan}");
        assert!(plan.contains("Order By: (v <-> '[3,1,4]'::vector)"), "{plan}");
        assert!(!plan.contains("Sort"), "{plan}");
        let exact = "SELECT id FROM items ORDER BY l2_distance(v, '[3,1,4]'), id LIMIT 7";
        assert!(explain(session, exact).contains("Sort"), "the function form sorts");
        assert_eq!(ids(session, nearest), ids(session, exact));
        // A parameter (the extended protocol) uses the index too.
        let sql = "SELECT id FROM items ORDER BY v <-> $1 LIMIT 7";
        let mut prepared = session.prepare(sql, &[tierdb_sql::SqlType::Vector(None)]).unwrap();
        let query = Datum::Vector(vec![3.0f32, 1.0, 4.0].into());
        let Output::Rows { rows, .. } = session.execute_prepared(&mut prepared, &[query]).unwrap()
        else {
            panic!("rows")
        };
        let parameter_ids: Vec<Datum> = rows.into_iter().map(|row| row[0].clone()).collect();
        let literal_ids: Vec<Datum> = ids(session, nearest).into_iter().map(Datum::Int).collect();
        assert_eq!(parameter_ids, literal_ids);
        let plan = explain(session, "SELECT id FROM items ORDER BY v <-> $1::vector LIMIT 7");
        assert!(plan.contains("Index Scan using items_l2"), "{plan}");
        let cosine = "SELECT id, v <=> '[1,1,1]' FROM items ORDER BY v <=> '[1,1,1]' LIMIT 3";
        assert!(explain(session, cosine).contains("Index Scan using items_cosine"));
        for sql in [
            "SELECT id FROM items ORDER BY v <+> '[3,1,4]' LIMIT 7",
            "SELECT id FROM items ORDER BY v <-> '[3,1,4]' DESC LIMIT 7",
            "SELECT id FROM items ORDER BY v <-> '[3,1,4]'",
        ] {
            assert!(!explain(session, sql).contains("Order By"), "{sql}");
        }
        // Stale entries: the nearest row deleted, the next moved away.
        let before = ids(session, nearest);
        run(session, &format!("DELETE FROM items WHERE id = {}", before[0])).unwrap();
        run(session, &format!("UPDATE items SET v = '[100,100,100]' WHERE id = {}", before[1]))
            .unwrap();
        let after = ids(session, nearest);
        assert_eq!(after, ids(session, exact));
        assert!(!after.contains(&before[0]) && !after.contains(&before[1]));
        // pgvector without iterative scans: at most ef_search rows, and stale entries take
        // their slots (here the two nearest entries are the deleted and the moved row's).
        run(session, "SET hnsw.ef_search = 2").unwrap();
        assert!(ids(session, nearest).is_empty());
        let elsewhere = "SELECT id FROM items ORDER BY v <-> '[16,4,19]' LIMIT 7";
        assert_eq!(ids(session, elsewhere).len(), 2);
        // VACUUM purges the graph: the stale entries are gone, so the ef_search = 2 nearest
        // entries are the two nearest rows again, and the check finds no dead entry.
        run(session, "VACUUM items").unwrap();
        let two = "SELECT id FROM items ORDER BY v <-> '[3,1,4]' LIMIT 2";
        let exact_two = "SELECT id FROM items ORDER BY l2_distance(v, '[3,1,4]'), id LIMIT 2";
        assert_eq!(ids(session, two), ids(session, exact_two));
        let check = "SELECT tierdb_check_vector_index('items_l2') ->> 'entries_dead'";
        assert_eq!(value(session, check).unwrap(), Datum::Text("0".into()));
        let check = "SELECT tierdb_check_vector_index('items_l2') ->> 'violation_count'";
        assert_eq!(value(session, check).unwrap(), Datum::Text("0".into()));
    });
}

/// A WHERE filter over the HNSW index scan (pgvector's iterative scans): without
/// hnsw.iterative_scan the filter sees only the ef_search nearest entries, so the LIMIT goes
/// unfilled; relaxed_order fills it with the rows of the exact answer, strict_order in their
/// exact order; hnsw.max_scan_tuples stops the search. The settings are read when the
/// query runs (a prepared statement follows SET), with pgvector's checks.
#[test]
fn filtered_nearest_queries_fill_the_limit_with_iterative_scans() {
    with_session(|session| {
        let values: Vec<String> = (1..=600)
            .map(|id| {
                let offset = f64::from(id) / 997.0;
                let v = format!("[{},{},{}]", f64::from(id % 17) + offset, id % 5, id / 10);
                format!("({id}, {}, '{v}')", id % 10)
            })
            .collect();
        setup(
            session,
            &[
                "CREATE TABLE items (id integer PRIMARY KEY, f integer, v vector(3))",
                &format!("INSERT INTO items VALUES {}", values.join(", ")),
                "CREATE INDEX items_l2 ON items USING hnsw (v vector_l2_ops)",
                "SET hnsw.ef_search = 10",
            ],
        );
        let filtered = "SELECT id FROM items WHERE f = 3 ORDER BY v <-> '[3,1,40]' LIMIT 10";
        let exact = "SELECT id FROM items WHERE f = 3 ORDER BY l2_distance(v, '[3,1,40]') LIMIT 10";
        let plan = explain(session, filtered);
        assert!(plan.contains("Index Scan using items_l2 on items"), "{plan}");
        assert!(plan.contains("Filter:"), "{plan}");
        let expected = ids(session, exact);
        assert_eq!(expected.len(), 10);
        assert!(ids(session, filtered).len() < 10, "off: the LIMIT is not filled");
        let mut prepared = session.prepare(filtered, &[]).unwrap();
        let mut prepared_ids = |session: &mut tierdb_sql::Session| {
            let Output::Rows { rows, .. } = session.execute_prepared(&mut prepared, &[]).unwrap()
            else {
                panic!("rows")
            };
            rows.len()
        };
        assert!(prepared_ids(session) < 10);
        run(session, "SET hnsw.iterative_scan = relaxed_order").unwrap();
        assert_eq!(prepared_ids(session), 10, "the prepared plan reads the setting");
        let mut relaxed = ids(session, filtered);
        relaxed.sort_unstable();
        let mut sorted = expected.clone();
        sorted.sort_unstable();
        assert_eq!(relaxed, sorted);
        run(session, "SET hnsw.iterative_scan = 'Strict_Order'").unwrap();
        assert_eq!(ids(session, filtered), expected, "strict: exact order");
        run(session, "SET hnsw.max_scan_tuples = 1").unwrap();
        assert!(ids(session, filtered).len() < 10, "the search stops");
        for (setting, shown) in [
            ("hnsw.iterative_scan", "strict_order"),
            ("hnsw.max_scan_tuples", "1"),
            ("hnsw.scan_mem_multiplier", "1"),
        ] {
            assert_eq!(
                value(session, &format!("SHOW {setting}")).unwrap(),
                Datum::Text(shown.into())
            );
        }
        for sql in [
            "SET hnsw.iterative_scan = on",
            "SET hnsw.max_scan_tuples = 0",
            "SET hnsw.max_scan_tuples = 2147483648",
            "SET hnsw.scan_mem_multiplier = 0.5",
        ] {
            assert_eq!(sqlstate(session, sql), "22023", "{sql}");
        }
        run(session, "SET hnsw.max_scan_tuples = 2.5").unwrap();
        assert_eq!(value(session, "SHOW hnsw.max_scan_tuples").unwrap(), Datum::Text("2".into()));
    });
}

/// 1,536-d embeddings (OpenAI's size, wider than a node page holds with codes): the HNSW
/// index keeps each vector on a vector page (design 014), is used by the query, and answers
/// what the exact sort answers; the check passes.
#[test]
fn wide_embeddings_use_the_hnsw_index() {
    fn vector(id: u32) -> String {
        let values: Vec<String> = (0..1536u32)
            .map(|dimension| format!("{}", f64::from((id * 37 + dimension * 11) % 97) / 97.0))
            .collect();
        format!("[{}]", values.join(","))
    }
    with_session(|session| {
        setup(session, &["CREATE TABLE docs (id integer PRIMARY KEY, embedding vector(1536))"]);
        for id in 1..=60 {
            run(session, &format!("INSERT INTO docs VALUES ({id}, '{}')", vector(id))).unwrap();
        }
        run(
            session,
            "CREATE INDEX docs_embedding ON docs USING hnsw (embedding vector_cosine_ops)",
        )
        .unwrap();
        for id in 61..=80 {
            run(session, &format!("INSERT INTO docs VALUES ({id}, '{}')", vector(id))).unwrap();
        }
        let query = vector(1000);
        let nearest = format!("SELECT id FROM docs ORDER BY embedding <=> '{query}' LIMIT 5");
        let plan = explain(session, &nearest);
        assert!(plan.contains("Index Scan using docs_embedding on docs"), "{plan}");
        let exact = format!(
            "SELECT id FROM docs ORDER BY cosine_distance(embedding, '{query}'), id LIMIT 5"
        );
        assert_eq!(ids(session, &nearest), ids(session, &exact));
        let check = "SELECT tierdb_check_vector_index('docs_embedding') ->> 'violation_count'";
        assert_eq!(value(session, check).unwrap(), Datum::Text("0".into()));
    });
}
