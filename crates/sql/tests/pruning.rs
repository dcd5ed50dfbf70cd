//! Column pruning (`optimize::prune_columns`): a scan returns only the columns read above
//! it, so operators hold narrow rows, and every query shape still reads the right columns
//! after the renumbering. Runs without a server.

use crate::support;

use support::{rows, setup, value, with_session};
use tierdb_sql::{Datum, Session};

/// Rows of `w`; each `pad` is `PAD_BYTES` long.
const ROWS: i64 = 2_000;
const PAD_BYTES: usize = 1_000;

fn wide_table(session: &mut Session) {
    setup(
        session,
        &[
            "CREATE TABLE w (id int PRIMARY KEY, k int, label text, pad text)",
            &format!(
                "INSERT INTO w SELECT i, i % 100, 'l' || i, repeat('x', {PAD_BYTES}) \
                 FROM generate_series(1, {ROWS}) i"
            ),
            "CREATE TABLE d (id int PRIMARY KEY, name text, note text)",
            "INSERT INTO d SELECT i, 'd' || i, repeat('y', 500) FROM generate_series(0, 49) i",
        ],
    );
}

fn int(session: &mut Session, sql: &str) -> i64 {
    match value(session, sql).unwrap_or_else(|error| panic!("{sql}: {error}")) {
        Datum::Int(number) => number,
        other => panic!("{sql}: expected an integer, got {other:?}"),
    }
}

fn text_rows(session: &mut Session, sql: &str) -> Vec<Vec<String>> {
    rows(session, sql)
        .unwrap_or_else(|error| panic!("{sql}: {error}"))
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|datum| match datum {
                    Datum::Null => "NULL".to_string(),
                    Datum::Int(number) => number.to_string(),
                    Datum::Text(text) => text,
                    other => format!("{other:?}"),
                })
                .collect()
        })
        .collect()
}

/// The `Memory Usage: NkB` figure of the first plan line that has one.
fn memory_usage_kilobytes(session: &mut Session, sql: &str) -> u64 {
    let lines = text_rows(session, &format!("EXPLAIN ANALYZE {sql}"));
    for line in lines.iter().map(|row| &row[0]) {
        if let Some(rest) = line.split("Memory Usage: ").nth(1) {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            return digits.parse().expect("a memory figure");
        }
    }
    panic!("no Memory Usage line in {lines:#?}");
}

#[test]
fn a_hash_join_holds_only_the_columns_read_above_it() {
    with_session(|session| {
        wide_table(session);
        setup(session, &["SET work_mem = '64MB'"]);
        let sql = "SELECT count(*) FROM w a JOIN w b ON a.k = b.k";
        // Each k has ROWS / 100 rows on each side.
        assert_eq!(int(session, sql), ROWS * (ROWS / 100));
        let pads_kilobytes = u64::try_from(ROWS).expect("positive") * 1_000 / 1_024;
        let used = memory_usage_kilobytes(session, sql);
        assert!(
            used * 4 < pads_kilobytes,
            "join held {used} kB; the pads alone are {pads_kilobytes} kB"
        );
        // The same join reading the pad keeps it.
        let with_pad = "SELECT count(*), sum(length(b.pad)) FROM w a JOIN w b ON a.k = b.k";
        let used_with_pad = memory_usage_kilobytes(session, with_pad);
        assert!(used_with_pad >= pads_kilobytes, "join held {used_with_pad} kB with the pad");
    });
}

#[test]
fn pruned_scans_feed_every_operator_the_right_columns() {
    with_session(|session| {
        wide_table(session);
        // Derived tables are pruned when bound and again by the enclosing query.
        assert_eq!(
            text_rows(
                session,
                "SELECT s.k, s.n FROM (SELECT k, label, count(*) AS n FROM w GROUP BY k, label) s \
                 WHERE s.label = 'l7'"
            ),
            vec![vec!["7".to_string(), "1".to_string()]]
        );
        assert_eq!(int(session, "SELECT count(*) FROM (SELECT k FROM w GROUP BY k) s"), 100);
        // A filter on a column that is not returned, a sort on one that is.
        assert_eq!(
            text_rows(
                session,
                "SELECT label FROM w WHERE pad LIKE 'x%' AND k = 3 ORDER BY id DESC LIMIT 2"
            ),
            vec![vec!["l1903".to_string()], vec!["l1803".to_string()]]
        );
        // Left join padding and a join condition over both narrowed sides.
        assert_eq!(
            text_rows(
                session,
                "SELECT d.name, count(w.id) FROM d LEFT JOIN w ON w.k = d.id + 60 AND w.label <> 'l61' \
                 WHERE d.id IN (0, 1, 45) GROUP BY d.name ORDER BY d.name"
            ),
            vec![
                vec!["d0".to_string(), "20".to_string()],
                vec!["d1".to_string(), "19".to_string()],
                vec!["d45".to_string(), "0".to_string()],
            ]
        );
        // A correlated subquery reads the outer row by position: the outer scan keeps it.
        assert_eq!(
            text_rows(
                session,
                "SELECT a.label, (SELECT count(*) FROM w b WHERE b.k = a.k AND b.id < a.id) \
                 FROM w a WHERE a.id IN (5, 305) ORDER BY a.id"
            ),
            vec![
                vec!["l5".to_string(), "0".to_string()],
                vec!["l305".to_string(), "3".to_string()],
            ]
        );
        // DISTINCT and set operations compare whole rows of what is selected.
        assert_eq!(int(session, "SELECT count(*) FROM (SELECT DISTINCT k FROM w) s"), 100);
        assert_eq!(
            int(session, "SELECT count(*) FROM (SELECT k FROM w EXCEPT SELECT id FROM d) s"),
            50
        );
        // UPDATE and DELETE scans keep every column: the rows are written back whole.
        setup(
            session,
            &["UPDATE w SET k = k + 1000 WHERE id <= 10", "DELETE FROM w WHERE id = 11"],
        );
        assert_eq!(
            text_rows(
                session,
                "SELECT k, label, length(pad) FROM w WHERE id IN (1, 12) ORDER BY id"
            ),
            vec![
                vec!["1001".to_string(), "l1".to_string(), PAD_BYTES.to_string()],
                vec!["12".to_string(), "l12".to_string(), PAD_BYTES.to_string()],
            ]
        );
    });
}
