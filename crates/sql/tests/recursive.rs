//! WITH RECURSIVE beyond what tests/slt/recursive.slt shows: the working table and the UNION
//! set spill to temporary files past work_mem (and the results stay right), statement_timeout
//! and cancel stop an endless recursion, EXPLAIN's nodes; and PREPARE / EXECUTE bound again
//! after DDL. Runs without a server.

use crate::support;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use support::{message, rows, setup, value, with_session};
use tierdb_sql::{Datum, Session};

fn int(session: &mut Session, sql: &str) -> i64 {
    match value(session, sql).unwrap() {
        Datum::Int(number) => number,
        other => panic!("expected an integer from {sql}, got {other:?}"),
    }
}

fn plan_lines(session: &mut Session, sql: &str) -> Vec<String> {
    rows(session, &format!("EXPLAIN ANALYZE {sql}"))
        .unwrap()
        .into_iter()
        .map(|row| match &row[0] {
            Datum::Text(line) => line.to_string(),
            other => panic!("a plan line, got {other:?}"),
        })
        .collect()
}

fn temp_files(session: &mut Session) -> i64 {
    int(session, "SELECT sum(temp_files)::bigint FROM pg_stat_database")
}

#[test]
fn a_union_recursion_past_work_mem_spills_its_set_and_stays_exact() {
    with_session(|session| {
        setup(session, &["SET work_mem = '64kB'"]);
        let before = temp_files(session);
        // 40,000 distinct rows of 100-byte pads over about 40 rounds, half of each round's
        // rows seen before: about 5 MB of keys against a 128 kB hash_mem.
        let sql = "WITH RECURSIVE t(n, pad) AS (SELECT g, repeat('x', 100) \
                   FROM generate_series(1, 2000) g UNION \
                   SELECT n + d, pad FROM t, (VALUES (1000), (2000)) AS step(d) \
                   WHERE n + d <= 40000) SELECT count(*), sum(n), count(DISTINCT n) FROM t";
        let counted = rows(session, sql).unwrap();
        let expected = vec![Datum::Int(40_000), Datum::Int(800_020_000), Datum::Int(40_000)];
        assert_eq!(counted[0], expected);
        assert!(temp_files(session) > before, "the UNION set went to temporary files");
        let plan = plan_lines(session, sql);
        let union = plan.iter().find(|line| line.contains("Recursive Union")).expect("node");
        assert!(plan.iter().any(|line| line.contains("WorkTable Scan on t")), "{plan:#?}");
        let batches = plan
            .iter()
            .skip_while(|line| !line.contains("Recursive Union"))
            .find_map(|line| line.split("Batches: ").nth(1))
            .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect::<String>())
            .unwrap_or_else(|| panic!("no Batches under {union}: {plan:#?}"));
        assert!(batches.parse::<u64>().unwrap() > 1, "{plan:#?}");
    });
}

#[test]
fn a_long_union_all_recursion_keeps_its_working_tables_on_disk() {
    with_session(|session| {
        setup(session, &["SET work_mem = '64kB'"]);
        let before = temp_files(session);
        // Each round's working table holds 20,000 rows of 200 bytes (4 MB): a file each.
        let sql = "WITH RECURSIVE t(round, n, pad) AS (SELECT 0, g, repeat('y', 200) \
                   FROM generate_series(1, 20000) g UNION ALL \
                   SELECT round + 1, n, pad FROM t WHERE round < 9) \
                   SELECT count(*), sum(round), max(length(pad)) FROM t";
        let counted = rows(session, sql).unwrap();
        assert_eq!(counted[0], vec![Datum::Int(200_000), Datum::Int(900_000), Datum::Int(200)]);
        assert!(temp_files(session) > before, "the working tables went to temporary files");
    });
}

#[test]
fn statement_timeout_stops_an_endless_recursion() {
    with_session(|session| {
        setup(session, &["SET statement_timeout = '300ms'"]);
        let endless = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) \
                       SELECT count(*) FROM t";
        let (code, text) = message(session, endless);
        assert_eq!(
            (code, text.as_str()),
            ("57014", "canceling statement due to statement timeout")
        );
        // UNION, each round one new row: the check is per round, not only per page.
        let narrow = "WITH RECURSIVE t(n) AS (SELECT 1 UNION SELECT n + 1 FROM t) \
                      SELECT count(*) FROM t";
        assert_eq!(message(session, narrow).0, "57014");
        setup(session, &["RESET statement_timeout"]);
        assert_eq!(int(session, "SELECT 1::bigint"), 1, "the session goes on");
    });
}

#[test]
fn cancel_stops_an_endless_recursion() {
    with_session(|session| {
        let flag = Arc::clone(&session.cancel);
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            flag.store(true, Ordering::Relaxed);
        });
        let endless = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) \
                       SELECT max(n) FROM t";
        let (code, text) = message(session, endless);
        canceller.join().unwrap();
        assert_eq!((code, text.as_str()), ("57014", "canceling statement due to user request"));
    });
}

#[test]
fn a_limit_ends_an_endless_recursion_and_explain_names_the_nodes() {
    with_session(|session| {
        let sql = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) \
                   SELECT n FROM t LIMIT 10";
        assert_eq!(rows(session, sql).unwrap().len(), 10);
        let plan = plan_lines(session, sql);
        assert!(plan[0].starts_with("Limit"), "{plan:#?}");
        assert!(plan.iter().any(|line| line.contains("Recursive Union")), "{plan:#?}");
        assert!(plan.iter().any(|line| line.contains("WorkTable Scan on t")), "{plan:#?}");
    });
}

#[test]
fn execute_binds_again_after_ddl() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE t_pre (id integer PRIMARY KEY, v text)",
                "INSERT INTO t_pre VALUES (1, 'a'), (2, 'b')",
                "PREPARE p_count(int) AS SELECT count(*)::bigint FROM t_pre WHERE id >= $1",
            ],
        );
        assert_eq!(int(session, "EXECUTE p_count(1)"), 2);
        setup(
            session,
            &[
                "DROP TABLE t_pre",
                "CREATE TABLE t_pre (id integer PRIMARY KEY, other integer)",
                "INSERT INTO t_pre VALUES (5, 0), (6, 0), (7, 0)",
            ],
        );
        assert_eq!(int(session, "EXECUTE p_count(6)"), 2, "bound against the new table");
        setup(session, &["DROP TABLE t_pre"]);
        assert_eq!(message(session, "EXECUTE p_count(1)").0, "42P01");
    });
}
