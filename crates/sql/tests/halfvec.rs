//! pgvector's halfvec inside a session: values survive storage with their typmod, and the
//! halfvec operator classes of HNSW and ivfflat build indexes that `ORDER BY h <op> const
//! LIMIT k` reads (EXPLAIN shows the index scan), ordered by the same distances as the
//! exact sort, with sane recall. pgvector's own answers are in tests/slt/vector/halfvec.slt.

use crate::support;

use support::{explain, ids, run, setup, value, with_session};
use tierdb_common::SplitMix64;
use tierdb_sql::{Datum, Output, SqlType};

/// 8-dimensional vectors in three clusters, as halfvec text.
fn items(count: u64) -> Vec<String> {
    let mut random = SplitMix64::new(14);
    (1..=count)
        .map(|id| {
            let center = f64::from(u32::try_from(id % 3).unwrap()) * 4.0;
            let elements: Vec<String> = (0..8)
                .map(|_| {
                    let noise = f64::from(u32::try_from(random.below(1000)).unwrap()) / 250.0;
                    format!("{:.3}", center + noise - 2.0)
                })
                .collect();
            format!("({id}, '[{}]')", elements.join(","))
        })
        .collect()
}

#[test]
fn halfvec_values_keep_their_halves_and_typmod() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE t (id integer PRIMARY KEY, h halfvec(3))",
                "INSERT INTO t VALUES (1, '[0.1,2,65504]'), (2, '[1,2,3]'::vector)",
            ],
        );
        let text = value(session, "SELECT h::text FROM t WHERE id = 1").unwrap();
        assert_eq!(text.as_text(), Some("[0.099975586,2,65504]"));
        let typed = value(session, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 't'::regclass AND attname = 'h'").unwrap();
        assert_eq!(typed.as_text(), Some("halfvec(3)"));
        let error = run(session, "INSERT INTO t VALUES (3, '[1,2]')").unwrap_err();
        assert_eq!(
            (error.sqlstate, error.message.as_str()),
            ("22000", "expected 3 dimensions, not 2")
        );
    });
}

#[test]
fn halfvec_operator_classes_are_checked_as_pgvector_checks_them() {
    with_session(|session| {
        setup(
            session,
            &["CREATE TABLE t (id integer PRIMARY KEY, v vector(3), h halfvec(3), u halfvec, w halfvec(4001), x halfvec(2001))"],
        );
        for (sql, state, message) in [
            (
                "CREATE INDEX ON t USING hnsw (v halfvec_l2_ops)",
                "42804",
                "operator class \"halfvec_l2_ops\" does not accept data type vector",
            ),
            (
                "CREATE INDEX ON t USING hnsw (h vector_l2_ops)",
                "42804",
                "operator class \"vector_l2_ops\" does not accept data type halfvec",
            ),
            (
                "CREATE INDEX ON t USING hnsw (h)",
                "42704",
                "data type halfvec has no default operator class for access method \"hnsw\"",
            ),
            (
                "CREATE INDEX ON t USING ivfflat (h halfvec_l1_ops)",
                "42704",
                "operator class \"halfvec_l1_ops\" does not exist for access method \"ivfflat\"",
            ),
            (
                "CREATE INDEX ON t USING hnsw (u halfvec_l2_ops)",
                "22023",
                "column does not have dimensions",
            ),
            (
                "CREATE INDEX ON t USING hnsw (w halfvec_l2_ops)",
                "54000",
                "column cannot have more than 4000 dimensions for hnsw index",
            ),
            (
                "CREATE INDEX ON t USING ivfflat (x halfvec_l2_ops)",
                "0A000",
                "ivfflat indexes on halfvec columns of more than 2000 dimensions are not supported",
            ),
        ] {
            let error = run(session, sql).expect_err(sql);
            assert_eq!((error.sqlstate, error.message.as_str()), (state, message), "{sql}");
        }
        // HNSW keeps wide vectors on vector pages (design 014): pgvector's 4,000 fit.
        setup(session, &["CREATE INDEX ON t USING hnsw (x halfvec_l2_ops)"]);
    });
}

/// Each halfvec operator class of HNSW (and ivfflat's l2) is used by its operator, returns
/// what the exact sort returns (distinct distances, ef_search above the table), and the
/// distances the scan orders by are the operator's own values.
#[test]
fn nearest_halfvec_queries_use_the_index() {
    with_session(|session| {
        let values = items(300);
        setup(
            session,
            &[
                "CREATE TABLE items (id integer PRIMARY KEY, h halfvec(8))",
                &format!("INSERT INTO items VALUES {}", values.join(", ")),
                "CREATE INDEX items_l2 ON items USING hnsw (h halfvec_l2_ops)",
                "CREATE INDEX items_ip ON items USING hnsw (h halfvec_ip_ops)",
                "CREATE INDEX items_cosine ON items USING hnsw (h halfvec_cosine_ops)",
                "CREATE INDEX items_l1 ON items USING hnsw (h halfvec_l1_ops) WITH (m = 8)",
                "SET hnsw.ef_search = 400",
            ],
        );
        let query = "'[1.5,-0.25,3,0.5,2,1,0,-1]'";
        for (operator, index) in
            [("<->", "items_l2"), ("<#>", "items_ip"), ("<=>", "items_cosine"), ("<+>", "items_l1")]
        {
            let nearest = format!("SELECT id FROM items ORDER BY h {operator} {query} LIMIT 10");
            let plan = explain(session, &nearest);
            assert!(plan.contains(&format!("Index Scan using {index} on items")), "{plan}");
            assert!(plan.contains("::halfvec)"), "{plan}");
            assert!(!plan.contains("Sort"), "{plan}");
            // Two sort keys: the exact sort.
            let exact = format!("SELECT id FROM items ORDER BY h {operator} {query}, id LIMIT 10");
            assert!(explain(session, &exact).contains("Sort"), "{exact}");
            let found = ids(session, &nearest);
            let expected = ids(session, &exact);
            let recalled = found.iter().filter(|id| expected.contains(id)).count();
            assert!(recalled >= 9, "{operator}: recall {recalled}/10: {found:?} {expected:?}");
        }
        // A parameter typed halfvec (the extended protocol) uses the index too.
        let sql = "SELECT id FROM items ORDER BY h <-> $1 LIMIT 5";
        let mut prepared = session.prepare(sql, &[SqlType::HalfVec(None)]).unwrap();
        let elements = [1.5f32, -0.25, 3.0, 0.5, 2.0, 1.0, 0.0, -1.0];
        let halves: Vec<tierdb_sql::f16> =
            elements.iter().map(|value| tierdb_sql::f16::from_f32(*value)).collect();
        let Output::Rows { rows, .. } =
            session.execute_prepared(&mut prepared, &[Datum::HalfVec(halves.into())]).unwrap()
        else {
            panic!("rows")
        };
        let parameter_ids: Vec<i64> = rows.iter().map(|row| row[0].as_int().unwrap()).collect();
        let literal = format!("SELECT id FROM items ORDER BY h <-> {query} LIMIT 5");
        assert_eq!(parameter_ids, ids(session, &literal));
        run(
            session,
            "CREATE INDEX items_ivf ON items USING ivfflat (h halfvec_l2_ops) WITH (lists = 3)",
        )
        .unwrap();
        run(session, "DROP INDEX items_l2").unwrap();
        run(session, "SET ivfflat.probes = 3").unwrap();
        let nearest = format!("SELECT id FROM items ORDER BY h <-> {query} LIMIT 10");
        assert!(explain(session, &nearest).contains("Index Scan using items_ivf"));
        let exact = format!("SELECT id FROM items ORDER BY l2_distance(h, {query}), id LIMIT 10");
        assert_eq!(ids(session, &nearest), ids(session, &exact));
        let sql = "SELECT tierdb_check_vector_index('items_cosine') ->> 'violations'";
        assert_eq!(value(session, sql).unwrap().as_text(), Some("[]"));
    });
}
