//! COPY FROM, INSERT ... SELECT and CREATE TABLE AS through the engine's bulk path: PostgreSQL's
//! 23505 and 23502 messages, rows and index entries of loads larger than one batch, and the
//! statement's atomicity (a failed load leaves nothing, a rolled-back one neither).

use crate::support;

use support::{rows, run, setup, value, with_session};
use tierdb_sql::{Datum, Output, Session};

/// Runs COPY ... FROM STDIN with `data`; the error as "SQLSTATE message".
fn copy(session: &mut Session, sql: &str, data: &str) -> Result<u64, String> {
    let statement = match run(session, sql) {
        Ok(Output::CopyIn { statement, .. }) => statement,
        other => panic!("{sql}: expected CopyIn, got {other:?}"),
    };
    session
        .copy_in(&statement, data.as_bytes())
        .map_err(|error| format!("{} {}", error.sqlstate, error.message))
}

fn csv_rows(ids: impl Iterator<Item = i64>) -> String {
    ids.map(|id| format!("{id},{},label-{id:08}\n", id % 97)).collect()
}

fn failure(session: &mut Session, sql: &str) -> String {
    match run(session, sql) {
        Ok(output) => panic!("{sql} succeeded: {output:?}"),
        Err(error) => format!("{} {}", error.sqlstate, error.message),
    }
}

const DUPLICATE: &str = "23505 duplicate key value violates unique constraint \"t_pkey\"";

#[test]
fn copy_loads_many_batches_in_any_order_with_index_entries() {
    with_session(|session| {
        setup(session, &["CREATE TABLE t (id bigint PRIMARY KEY, v int, s text)"]);
        setup(session, &["CREATE INDEX t_v ON t (v)"]);
        let data = csv_rows((0..20_000).rev());
        assert_eq!(copy(session, "COPY t FROM STDIN WITH (FORMAT csv)", &data), Ok(20_000));
        assert_eq!(value(session, "SELECT count(*) FROM t").unwrap(), Datum::Int(20_000));
        let first = rows(session, "SELECT id, v, s FROM t ORDER BY id LIMIT 1").unwrap();
        let expected = vec![Datum::Int(0), Datum::Int(0), Datum::Text("label-00000000".into())];
        assert_eq!(first, vec![expected]);
        let by_index = value(session, "SELECT count(*) FROM t WHERE v = 5").unwrap();
        let expected = (0..20_000i64).filter(|id| id % 97 == 5).count();
        assert_eq!(by_index, Datum::Int(i64::try_from(expected).unwrap()));
    });
}

#[test]
fn copy_with_a_duplicate_key_is_23505_and_loads_nothing() {
    with_session(|session| {
        setup(session, &["CREATE TABLE t (id bigint PRIMARY KEY, v int, s text)"]);
        let mut data = csv_rows(0..9000);
        data.push_str("4500,1,again\n");
        let outcome = copy(session, "COPY t FROM STDIN WITH (FORMAT csv)", &data);
        assert_eq!(outcome, Err(DUPLICATE.to_string()));
        assert_eq!(value(session, "SELECT count(*) FROM t").unwrap(), Datum::Int(0));
        // Against a committed row.
        setup(session, &["INSERT INTO t VALUES (77, 1, 'kept')"]);
        let outcome = copy(session, "COPY t FROM STDIN WITH (FORMAT csv)", &csv_rows(0..100));
        assert_eq!(outcome, Err(DUPLICATE.to_string()));
        let kept = rows(session, "SELECT id, s FROM t").unwrap();
        assert_eq!(kept, vec![vec![Datum::Int(77), Datum::Text("kept".into())]]);
    });
}

#[test]
fn copy_of_a_null_into_not_null_is_23502() {
    with_session(|session| {
        setup(session, &["CREATE TABLE t (id bigint PRIMARY KEY, v int NOT NULL, s text)"]);
        let outcome = copy(session, "COPY t FROM STDIN WITH (FORMAT csv)", "1,1,a\n2,,b\n");
        let violation =
            "23502 null value in column \"v\" of relation \"t\" violates not-null constraint";
        assert_eq!(outcome, Err(violation.to_string()));
        assert_eq!(value(session, "SELECT count(*) FROM t").unwrap(), Datum::Int(0));
    });
}

#[test]
fn insert_select_and_create_table_as_load_and_stay_atomic() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE t (id bigint PRIMARY KEY, v int, s text)",
                "CREATE TABLE t2 (id bigint PRIMARY KEY, v int, s text)",
                "INSERT INTO t SELECT i, i % 97, 'row ' || i FROM generate_series(1, 12000) AS i",
            ],
        );
        setup(session, &["INSERT INTO t2 SELECT * FROM t"]);
        assert_eq!(value(session, "SELECT count(*) FROM t2").unwrap(), Datum::Int(12_000));
        // Every id twice: the second copy of each collides.
        let sql = "INSERT INTO t2 SELECT id + 12000, v, s FROM t UNION ALL SELECT id + 12000, v, s FROM t";
        assert_eq!(failure(session, sql), DUPLICATE.replace("t_pkey", "t2_pkey"));
        assert_eq!(value(session, "SELECT count(*) FROM t2").unwrap(), Datum::Int(12_000));
        setup(session, &["CREATE TABLE t3 AS SELECT * FROM t WHERE id % 2 = 0"]);
        assert_eq!(value(session, "SELECT count(*) FROM t3").unwrap(), Datum::Int(6000));
        // A rolled-back load leaves nothing.
        setup(session, &["BEGIN", "INSERT INTO t2 SELECT id + 50000, v, s FROM t", "ROLLBACK"]);
        assert_eq!(value(session, "SELECT count(*) FROM t2").unwrap(), Datum::Int(12_000));
    });
}

#[test]
fn copy_checks_check_constraints_and_loads_nothing_on_a_violation() {
    with_session(|session| {
        setup(session, &["CREATE TABLE t (id bigint PRIMARY KEY, v int CHECK (v < 90), s text)"]);
        let data = csv_rows(0..9000);
        let outcome = copy(session, "COPY t FROM STDIN WITH (FORMAT csv)", &data);
        let violation = "23514 new row for relation \"t\" violates check constraint \"t_v_check\"";
        assert_eq!(outcome, Err(violation.to_string()));
        assert_eq!(value(session, "SELECT count(*) FROM t").unwrap(), Datum::Int(0));
        let data: String = (0..9000).map(|id| format!("{id},{},x\n", id % 90)).collect();
        assert_eq!(copy(session, "COPY t FROM STDIN WITH (FORMAT csv)", &data), Ok(9000));
    });
}
