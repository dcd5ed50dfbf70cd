//! pgvector's ivfflat index inside a session: tierdb's own refusals (0A000 naming the
//! operator class or clause; partial indexes are in vector_partial.rs), the NOTICE of a
//! build with little data, the index scan in EXPLAIN, ivfflat.probes deciding how many lists
//! a query reads, iterative scans filling a filtered LIMIT, and the index surviving a reopen
//! of the catalog. pgvector's own errors and answers are in tests/slt/vector/ivfflat.slt.

use crate::support;

use support::{explain, ids, run, setup, with_session};

#[test]
fn ivfflat_refusals_name_what_is_not_supported() {
    with_session(|session| {
        setup(session, &["CREATE TABLE t (id integer PRIMARY KEY, n integer, v vector(3))"]);
        for (sql, message) in [
            ("CREATE INDEX ON t USING ivfflat (v) INCLUDE (n)", "included columns"),
            ("CREATE INDEX ON t USING ivfflat ((v + v))", "expression"),
        ] {
            let error = run(session, sql).expect_err(sql);
            assert_eq!(error.sqlstate, "0A000", "{sql}: {}", error.message);
            assert!(error.message.contains(message), "{sql}: {}", error.message);
        }
        run(session, "CREATE INDEX t_v ON t USING ivfflat (v)").unwrap();
        let error = run(session, "SELECT tierdb_check_vector_index('t_v')").unwrap_err();
        assert_eq!(error.sqlstate, "42809");
    });
}

#[test]
fn ivfflat_index_scans_follow_probes_and_fill_a_filtered_limit() {
    with_session(|session| {
        let values: Vec<String> = (1..=400)
            .map(|id| {
                let offset = f64::from(id) / 997.0;
                format!(
                    "({id}, {}, '[{},{},{}]')",
                    id % 10,
                    f64::from(id % 17) + offset,
                    id % 5,
                    id / 10
                )
            })
            .collect();
        setup(
            session,
            &[
                "CREATE TABLE items (id integer PRIMARY KEY, n integer, v vector(3))",
                "CREATE TABLE little (id integer PRIMARY KEY, v vector(3))",
            ],
        );
        run(session, "CREATE INDEX little_v ON little USING ivfflat (v) WITH (lists = 4)").unwrap();
        let notices = session.take_warnings();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert_eq!(notices[0].sqlstate, "00000");
        assert_eq!(notices[0].message, "ivfflat index created with little data");
        run(session, &format!("INSERT INTO items VALUES {}", values.join(", "))).unwrap();
        run(session, "CREATE INDEX items_l2 ON items USING ivfflat (v) WITH (lists = 8)").unwrap();
        assert!(session.take_warnings().is_empty(), "enough rows: no NOTICE");
        let nearest = "SELECT id FROM items ORDER BY v <-> '[3,1,4]' LIMIT 7";
        let plan = explain(session, nearest);
        assert!(plan.contains("Index Scan using items_l2 on items"), "{plan}");
        assert!(plan.contains("Order By: (v <-> '[3,1,4]'::vector)"), "{plan}");
        let exact = "SELECT id FROM items ORDER BY l2_distance(v, '[3,1,4]'), id LIMIT 7";
        let all = "SELECT id FROM items ORDER BY v <-> '[3,1,4]' LIMIT 1000";
        // One probe reads one of 8 lists; all 8 read every row, exactly ordered.
        let one_list = ids(session, all).len();
        assert!(one_list > 0 && one_list < 400, "{one_list}");
        run(session, "SET ivfflat.probes = 8").unwrap();
        assert_eq!(ids(session, all).len(), 400);
        assert_eq!(ids(session, nearest), ids(session, exact));
        // A filter keeping 10% of rows: one list rarely fills the LIMIT; iterative scans do.
        run(session, "SET ivfflat.probes = 1").unwrap();
        let filtered = "SELECT id FROM items WHERE n = 3 ORDER BY v <-> '[3,1,4]' LIMIT 20";
        assert!(explain(session, filtered).contains("Index Scan using items_l2"));
        run(session, "SET ivfflat.iterative_scan = relaxed_order").unwrap();
        assert_eq!(ids(session, filtered).len(), 20);
        run(session, "SET ivfflat.max_probes = 1").unwrap();
        let bounded = ids(session, filtered).len();
        assert!(bounded < 20, "max_probes bounds the lists read: {bounded}");
    });
}
