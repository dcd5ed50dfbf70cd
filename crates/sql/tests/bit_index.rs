//! Vector indexes over bit(n) inside a session (docs/design/014-vector-indexes.md, "bit"):
//! HNSW with bit_hamming_ops and bit_jaccard_ops, ivfflat with bit_hamming_ops, answering
//! `ORDER BY b <~> q LIMIT k` / `<%>` as the exact sort does, maintained by INSERT / UPDATE
//! / DELETE; pgvector's errors and tierdb's own limit. pgvector's own answers are in
//! tests/slt/vector/bit_index.slt.

use crate::support;

use support::{explain, message, rows, run, setup, with_session};
use tierdb_sql::Datum;

const BITS: usize = 48;

/// Row `id`'s bits: a few clusters of a seeded pattern (deterministic, some ties).
fn bits_of(id: u64) -> String {
    let mut state = (id % 5).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x1234_5678;
    let mut flip = id.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (0..BITS)
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            flip = flip
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let bit = (state >> 63) ^ u64::from(flip >> 59 == 0);
            if bit == 1 {
                '1'
            } else {
                '0'
            }
        })
        .collect()
}

fn populate(session: &mut tierdb_sql::Session) {
    setup(session, &[&format!("CREATE TABLE t (id integer PRIMARY KEY, b bit({BITS}))")]);
    let values: Vec<String> = (1..=300).map(|id| format!("({id}, '{}')", bits_of(id))).collect();
    run(session, &format!("INSERT INTO t VALUES {}", values.join(", "))).unwrap();
}

/// The distances `sql` returns (its first column).
fn distances(session: &mut tierdb_sql::Session, sql: &str) -> Vec<f64> {
    rows(session, sql)
        .unwrap()
        .into_iter()
        .map(|row| match row[0] {
            Datum::Float(distance) => distance,
            ref other => panic!("distance {other:?}"),
        })
        .collect()
}

/// The index scan's distances equal the exact sort's (`hamming_distance(..)` is a function,
/// not the operator, so it keeps the sort, as in pgvector).
fn assert_index_answers(session: &mut tierdb_sql::Session, operator: &str, function: &str) {
    for query_id in [7, 150, 299] {
        let query = bits_of(query_id + 1_000);
        let indexed = format!(
            "SELECT b {operator} '{query}' FROM t ORDER BY b {operator} '{query}' LIMIT 10"
        );
        let plan = explain(session, &indexed);
        assert!(plan.contains("Index Scan using"), "{plan}");
        assert!(plan.contains(&format!("Order By: (b {operator} '{query}'::\"bit\")")), "{plan}");
        let exact = format!("SELECT {function}(b, '{query}') AS d FROM t ORDER BY d LIMIT 10");
        assert!(!explain(session, &exact).contains("Index Scan"));
        assert_eq!(distances(session, &indexed), distances(session, &exact), "{indexed}");
    }
}

#[test]
fn hnsw_bit_indexes_answer_as_the_exact_sort() {
    with_session(|session| {
        populate(session);
        setup(
            session,
            &[
                "CREATE INDEX t_hamming ON t USING hnsw (b bit_hamming_ops)",
                "CREATE INDEX t_jaccard ON t USING hnsw (b bit_jaccard_ops) WITH (m = 8)",
                "SET hnsw.ef_search = 300",
            ],
        );
        assert_index_answers(session, "<~>", "hamming_distance");
        assert_index_answers(session, "<%>", "jaccard_distance");
        // Maintained by writes: a new row is its own nearest, a deleted one is gone.
        let new_bits = "1".repeat(BITS);
        run(session, &format!("INSERT INTO t VALUES (1000, '{new_bits}')")).unwrap();
        let nearest = format!("SELECT id FROM t ORDER BY b <~> '{new_bits}' LIMIT 1");
        assert_eq!(rows(session, &nearest).unwrap(), vec![vec![Datum::Int(1000)]]);
        run(session, "DELETE FROM t WHERE id = 1000").unwrap();
        assert_ne!(rows(session, &nearest).unwrap(), vec![vec![Datum::Int(1000)]]);
        run(session, &format!("UPDATE t SET b = '{new_bits}' WHERE id = 5")).unwrap();
        assert_eq!(rows(session, &nearest).unwrap(), vec![vec![Datum::Int(5)]]);
        let definition = rows(session, "SELECT pg_get_indexdef('t_jaccard'::regclass)").unwrap();
        assert_eq!(
            definition,
            vec![vec![Datum::Text(
                "CREATE INDEX t_jaccard ON public.t USING hnsw (b bit_jaccard_ops) WITH (m='8')"
                    .into()
            )]]
        );
        let (state, text) = message(session, "SELECT id FROM t ORDER BY b <~> '101' LIMIT 1");
        assert_eq!((state, text.as_str()), ("22000", "different bit lengths 3 and 48"));
        let checked = rows(session, "SELECT tierdb_check_vector_index('t_hamming')").unwrap();
        let report = format!("{checked:?}");
        assert!(report.contains(r#"("violation_count", Number("0"))"#), "{report}");
        assert!(report.contains(r#"("rows_missing", Number("0"))"#), "{report}");
    });
}

#[test]
fn ivfflat_bit_hamming_index_answers_as_the_exact_sort() {
    with_session(|session| {
        populate(session);
        setup(
            session,
            &[
                "CREATE INDEX t_lists ON t USING ivfflat (b bit_hamming_ops) WITH (lists = 4)",
                "SET ivfflat.probes = 4",
            ],
        );
        assert_index_answers(session, "<~>", "hamming_distance");
        let (state, text) = message(session, "SELECT id FROM t ORDER BY b <~> '101' LIMIT 1");
        assert_eq!((state, text.as_str()), ("22000", "different bit lengths 48 and 3"));
        let definition = rows(session, "SELECT pg_get_indexdef('t_lists'::regclass)").unwrap();
        assert_eq!(
            definition,
            vec![vec![Datum::Text(
                "CREATE INDEX t_lists ON public.t USING ivfflat (b bit_hamming_ops) WITH \
                 (lists='4')"
                    .into()
            )]]
        );
    });
}

#[test]
fn bit_index_errors_are_pgvectors() {
    with_session(|session| {
        setup(
            session,
            &["CREATE TABLE e (id integer PRIMARY KEY, v varbit(8), b bit(64001), c bit(60000), \
               w vector(3), h bit(8))"],
        );
        for (sql, expected_state, expected) in [
            (
                "CREATE INDEX ON e USING hnsw (v bit_hamming_ops)",
                "0A000",
                "type not supported for hnsw index",
            ),
            (
                "CREATE INDEX ON e USING ivfflat (v bit_hamming_ops)",
                "0A000",
                "type not supported for ivfflat index",
            ),
            (
                "CREATE INDEX ON e USING hnsw (b bit_jaccard_ops)",
                "54000",
                "column cannot have more than 64000 dimensions for hnsw index",
            ),
            (
                "CREATE INDEX ON e USING ivfflat (b bit_hamming_ops)",
                "54000",
                "column cannot have more than 64000 dimensions for ivfflat index",
            ),
            (
                "CREATE INDEX ON e USING ivfflat (h bit_jaccard_ops)",
                "42704",
                "operator class \"bit_jaccard_ops\" does not exist for access method \"ivfflat\"",
            ),
            (
                "CREATE INDEX ON e USING hnsw (w bit_hamming_ops)",
                "42804",
                "operator class \"bit_hamming_ops\" does not accept data type vector",
            ),
            (
                "CREATE INDEX ON e USING hnsw (h vector_l2_ops)",
                "42804",
                "operator class \"vector_l2_ops\" does not accept data type bit",
            ),
            (
                "CREATE INDEX ON e USING hnsw (h)",
                "42704",
                "data type bit has no default operator class for access method \"hnsw\"",
            ),
        ] {
            let (state, text) = message(session, sql);
            assert_eq!((state, text.as_str()), (expected_state, expected), "{sql}");
        }
        setup(session, &["CREATE INDEX ON e USING ivfflat (c bit_hamming_ops) WITH (lists = 1)"]);
        // Wide bit strings go on vector pages (design 014): pgvector's 64,000 bits fit.
        setup(session, &["CREATE INDEX e_c_hnsw ON e USING hnsw (c bit_hamming_ops)"]);
        // A failed DDL reloads the catalog: bit(n) keeps its length through it (it was lost).
        let (state, text) = message(session, "INSERT INTO e (id, h) VALUES (1, '101')");
        assert_eq!(
            (state, text.as_str()),
            ("22026", "bit string length 3 does not match type bit(8)")
        );
    });
}
