//! One check each, with PostgreSQL's SQLSTATEs: NOT NULL on every write path, work_mem's
//! and maintenance_work_mem's units and range (and index builds that spill), COPY's one-byte
//! QUOTE and ESCAPE, the column limit of CREATE TABLE.

use crate::support;

use support::{rows, setup, sqlstate, with_session};
use tierdb_sql::{Datum, Session};

fn message(session: &mut Session, sql: &str) -> String {
    match support::run(session, sql) {
        Ok(output) => panic!("{sql} succeeded: {output:?}"),
        Err(error) => format!("{} {}", error.sqlstate, error.message),
    }
}

#[test]
fn not_null_is_checked_on_insert_update_and_when_a_key_is_added() {
    with_session(|session| {
        setup(
            session,
            &["CREATE TABLE t (id int NOT NULL, v int)", "INSERT INTO t VALUES (1, NULL)"],
        );
        let violation =
            "23502 null value in column \"id\" of relation \"t\" violates not-null constraint";
        assert_eq!(message(session, "INSERT INTO t VALUES (NULL, 1)"), violation);
        assert_eq!(message(session, "INSERT INTO t (v) VALUES (1)"), violation);
        assert_eq!(message(session, "UPDATE t SET id = NULL"), violation);
        assert_eq!(
            message(session, "ALTER TABLE t ADD PRIMARY KEY (v)"),
            "23502 column \"v\" of relation \"t\" contains null values"
        );
        let stored = rows(session, "SELECT id, v FROM t").unwrap();
        assert_eq!(stored, vec![vec![Datum::Int(1), Datum::Null]], "nothing was written");
    });
}

#[test]
fn work_mem_takes_postgres_units_and_range() {
    with_session(|session| {
        setup(session, &["SET work_mem = 64"]);
        assert_eq!(rows(session, "SHOW work_mem").unwrap(), vec![vec![Datum::Text("64kB".into())]]);
        setup(session, &["SET work_mem = '2GB'"]);
        assert_eq!(rows(session, "SHOW work_mem").unwrap(), vec![vec![Datum::Text("2GB".into())]]);
        assert_eq!(sqlstate(session, "SET work_mem = '4m'"), "22023");
        assert_eq!(sqlstate(session, "SET work_mem = 63"), "22023");
        assert_eq!(
            message(session, "SET work_mem = '3TB'"),
            "22023 3221225472 kB is outside the valid range for parameter \"work_mem\" (64 .. 2147483647)"
        );
        assert_eq!(sqlstate(session, "SET work_mem = '99999999999999999999'"), "22023");
    });
}

#[test]
fn maintenance_work_mem_takes_postgres_units_and_range() {
    with_session(|session| {
        let show = "SHOW maintenance_work_mem";
        assert_eq!(rows(session, show).unwrap(), vec![vec![Datum::Text("64MB".into())]]);
        setup(session, &["SET maintenance_work_mem = 1024"]);
        assert_eq!(rows(session, show).unwrap(), vec![vec![Datum::Text("1MB".into())]]);
        assert_eq!(
            message(session, "SET maintenance_work_mem = '1000kB'"),
            "22023 1000 kB is outside the valid range for parameter \"maintenance_work_mem\" (1024 .. 2147483647)"
        );
        assert_eq!(sqlstate(session, "SET maintenance_work_mem = 'lots'"), "22023");
        // A build at the minimum spills (several thousand entries) and gives the same rows.
        setup(
            session,
            &[
                "CREATE TABLE t (id int PRIMARY KEY, grp int, label text)",
                "INSERT INTO t SELECT g, g % 10, 'label ' || g FROM generate_series(1, 20000) g",
                "CREATE INDEX t_grp ON t (grp)",
                "CREATE UNIQUE INDEX t_label ON t (label)",
            ],
        );
        let count = "SELECT count(*) FROM t WHERE grp = 3";
        assert_eq!(rows(session, count).unwrap(), vec![vec![Datum::Int(2000)]]);
        assert_eq!(
            message(session, "CREATE UNIQUE INDEX t_grp_key ON t (grp)"),
            "23505 could not create unique index \"t_grp_key\""
        );
        assert_eq!(
            message(session, "CREATE INDEX CONCURRENTLY t_id ON t (id)"),
            "0A000 CREATE INDEX CONCURRENTLY is not supported"
        );
    });
}

#[test]
fn copy_quote_and_escape_are_one_byte() {
    with_session(|session| {
        setup(session, &["CREATE TABLE t (a text)"]);
        let sql = "COPY t FROM STDIN WITH (FORMAT csv, QUOTE 'ab')";
        assert_eq!(message(session, sql), "0A000 COPY quote must be a single one-byte character");
        let sql = "COPY t FROM STDIN WITH (FORMAT csv, ESCAPE 'é')";
        assert_eq!(message(session, sql), "0A000 COPY escape must be a single one-byte character");
    });
}

#[test]
fn tables_have_at_most_1600_columns() {
    with_session(|session| {
        let columns: Vec<String> = (0..1601).map(|index| format!("c{index} int")).collect();
        let sql = format!("CREATE TABLE wide ({})", columns.join(", "));
        assert_eq!(message(session, &sql), "54011 tables can have at most 1600 columns");
        let sql = format!("CREATE TABLE wide ({})", columns[..1600].join(", "));
        setup(session, &[&sql]);
    });
}

#[test]
fn table_kinds_tierdb_does_not_build_are_refused_not_created_as_ordinary_tables() {
    with_session(|session| {
        setup(session, &["CREATE TABLE base (id int PRIMARY KEY)"]);
        let refused = [
            ("CREATE GLOBAL TEMPORARY TABLE tt (a int)", "GLOBAL TEMPORARY tables"),
            ("CREATE UNLOGGED TABLE tt (a int)", "unlogged tables"),
            ("CREATE TABLE tt (LIKE base)", "LIKE"),
            ("CREATE TABLE tt (a int) INHERITS (base)", "INHERITS"),
            ("CREATE TABLE tt (a int) PARTITION BY RANGE (a)", "PARTITION BY"),
            ("CREATE TABLE tt (a int2vector)", "int2vector"),
        ];
        for (sql, feature) in refused {
            let error = message(session, sql);
            assert!(error.starts_with("0A000 ") && error.contains(feature), "{sql}: {error}");
        }
        let tables =
            rows(session, "SELECT count(*) FROM pg_tables WHERE tablename = 'tt'").unwrap();
        assert_eq!(tables, vec![vec![Datum::Int(0)]], "no table was created");
    });
}

/// Aggregate clauses tierdb does not evaluate are refused: they were read and ignored, so
/// `count(*) FILTER (WHERE ...)` counted every row. An aggregate's own ORDER BY is
/// evaluated (string_agg in that order), except in a window aggregate.
#[test]
fn aggregate_clauses_are_evaluated_or_refused_never_ignored() {
    with_session(|session| {
        setup(
            session,
            &["CREATE TABLE g (id int PRIMARY KEY)", "INSERT INTO g VALUES (1), (2), (3)"],
        );
        let sql = "SELECT string_agg(id::text, ',' ORDER BY id DESC) OVER () FROM g";
        let error = message(session, sql);
        assert!(error.starts_with("0A000 ") && error.contains("ORDER BY"), "{sql}: {error}");
        // An array of fractions is evaluated (it was refused): one value per fraction.
        let fractions = "SELECT percentile_cont(ARRAY[0, 0.5]) WITHIN GROUP (ORDER BY id) FROM g";
        let values = vec![Datum::Float(1.0), Datum::Float(2.0)];
        let expected = Datum::Array(std::sync::Arc::new(tierdb_sql::ArrayValue::new(values)));
        assert_eq!(rows(session, fractions).unwrap(), vec![vec![expected]]);
        assert_eq!(rows(session, "SELECT count(*) FROM g").unwrap(), vec![vec![Datum::Int(3)]]);
        // FILTER is evaluated (it was refused): only the rows it accepts are counted.
        let filtered =
            "SELECT count(*) FILTER (WHERE id > 1), sum(id) FILTER (WHERE id < 3) FROM g";
        assert_eq!(rows(session, filtered).unwrap(), vec![vec![Datum::Int(2), Datum::Int(3)]]);
        let ordered = "SELECT string_agg(id::text, ',' ORDER BY id DESC) FROM g";
        assert_eq!(rows(session, ordered).unwrap(), vec![vec![Datum::Text("3,2,1".into())]]);
        // WITHIN GROUP is evaluated (it was refused): the ordered-set aggregate's result.
        let within = "SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY id DESC) FROM g";
        assert_eq!(rows(session, within).unwrap(), vec![vec![Datum::Float(2.5)]]);
    });
}

/// Column options tierdb does not implement are 0A000 naming them, never accepted and
/// ignored (an ignored GENERATED ... AS IDENTITY left the column NULL): generated columns,
/// identity sequence options, collations other than C. OVERRIDING SYSTEM VALUE is honoured:
/// the given id is stored, as PostgreSQL stores it.
#[test]
fn column_options_tierdb_lacks_are_refused() {
    with_session(|session| {
        for (sql, feature) in [
            (
                "CREATE TABLE g (a int, b int GENERATED ALWAYS AS (a * 2) STORED)",
                "generated columns",
            ),
            (
                "CREATE TABLE g (id int GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME s))",
                "SEQUENCE NAME",
            ),
            ("CREATE TABLE g (a text COLLATE \"en_US\")", "collation \"en_US\""),
        ] {
            let message = message(session, sql);
            assert!(message.starts_with("0A000") && message.contains(feature), "{sql}: {message}");
        }
        assert!(rows(session, "SELECT 1 FROM pg_class WHERE relname = 'g'").unwrap().is_empty());
        setup(
            session,
            &[
                "CREATE TABLE g (id int GENERATED ALWAYS AS IDENTITY, a text COLLATE \"C\")",
                "INSERT INTO g (a) VALUES ('x'), ('y')",
            ],
        );
        setup(session, &["INSERT INTO g (id, a) OVERRIDING SYSTEM VALUE VALUES (7, 'z')"]);
        assert_eq!(
            rows(session, "SELECT id FROM g ORDER BY id").unwrap(),
            vec![vec![Datum::Int(1)], vec![Datum::Int(2)], vec![Datum::Int(7)]]
        );
    });
}
