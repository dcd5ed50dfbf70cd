//! Adversarial statements over the wire cannot bring the server down: deep nesting and long
//! operator chains are evaluated as PostgreSQL 15 evaluates them or refused with 54001
//! "stack depth limit exceeded", and huge values with 54000 or 22023, in both query
//! protocols; after each, the server process is alive and the connection still answers.

use crate::server_support;

use std::time::Duration;

use server_support::TestServer;
use tokio_postgres::{Client, SimpleQueryMessage};

/// How long one step may take before the test fails instead of hanging.
const STEP: Duration = Duration::from_secs(120);

fn repeated(term: &str, separator: &str, count: usize) -> String {
    vec![term; count].join(separator)
}

fn nested(open: &str, inner: &str, close: &str, depth: usize) -> String {
    format!("SELECT {}{inner}{}", open.repeat(depth), close.repeat(depth))
}

/// Statements PostgreSQL 15 evaluates, with their one-value result as text.
fn evaluated() -> Vec<(String, &'static str)> {
    let mut or_terms = vec!["1 = 0"; 9_999];
    or_terms.push("1 = 1");
    let in_list: Vec<String> = (1..=10_000).map(|index| index.to_string()).collect();
    vec![
        (format!("SELECT {}", or_terms.join(" OR ")), "t"),
        (format!("SELECT {}", repeated("1 = 1", " AND ", 10_000)), "t"),
        (format!("SELECT 9999 IN ({})", in_list.join(", ")), "t"),
        (format!("SELECT {}", repeated("1", "+", 3_000)), "3000"),
        (format!("SELECT length({})", repeated("'a'", " || ", 2_000)), "2000"),
        (
            format!("SELECT count(*) FROM ({}) AS s", repeated("SELECT 1", " UNION ALL ", 5_000)),
            "5000",
        ),
        (nested("(", "1", ")", 1_000), "1"),
        (nested("NOT ", "true", "", 1_000), "t"),
        (nested("- ", "1", "", 1_000), "1"),
        (nested("(SELECT ", "1", ")", 1_000), "1"),
    ]
}

/// Statements refused, with the SQLSTATE.
fn refused() -> Vec<(String, &'static str)> {
    vec![
        (format!("SELECT {}", repeated("1", "+", 100_000)), "54001"),
        (format!("SELECT length({})", repeated("'a'", " || ", 100_000)), "54001"),
        (nested("(", "1", ")", 100_000), "54001"),
        (nested("NOT ", "true", "", 100_000), "54001"),
        (nested("- ", "1", "", 100_000), "54001"),
        (nested("(SELECT ", "1", ")", 100_000), "54001"),
        ("SELECT cast('1' AS char(2147483647))".to_string(), "22023"),
        ("SELECT repeat('x', 2000000000)".to_string(), "54000"),
        ("SELECT lpad('x', 2000000000)".to_string(), "54000"),
        ("SELECT rpad('x', 2000000000, 'ab')".to_string(), "54000"),
    ]
}

fn simple_value(messages: &[SimpleQueryMessage]) -> String {
    let rows: Vec<String> = messages
        .iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(rows.len(), 1, "one row");
    rows[0].clone()
}

fn sqlstate(error: &tokio_postgres::Error) -> String {
    error.code().map_or_else(|| format!("<no SQLSTATE: {error:?}>"), |code| code.code().to_string())
}

/// The server process is running and the connection answers.
async fn assert_alive(server: &mut TestServer, client: &Client) {
    assert!(server.child.try_wait().expect("child status").is_none(), "the server exited");
    let messages = tokio::time::timeout(STEP, client.simple_query("SELECT 1"))
        .await
        .expect("in time")
        .expect("SELECT 1 after the probe");
    assert_eq!(simple_value(&messages), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_protocol_probes() {
    let mut server = TestServer::start(&[]);
    let client = server.connect().await;
    for (sql, expected) in evaluated() {
        let messages = tokio::time::timeout(STEP, client.simple_query(&sql))
            .await
            .expect("in time")
            .unwrap_or_else(|error| panic!("{}: {error:?}", &sql[..60.min(sql.len())]));
        assert_eq!(simple_value(&messages), expected, "{}", &sql[..60.min(sql.len())]);
        assert_alive(&mut server, &client).await;
    }
    for (sql, expected) in refused() {
        let error = tokio::time::timeout(STEP, client.simple_query(&sql))
            .await
            .expect("in time")
            .expect_err("refused");
        assert_eq!(sqlstate(&error), expected, "{}", &sql[..60.min(sql.len())]);
        assert_alive(&mut server, &client).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_protocol_probes() {
    let mut server = TestServer::start(&[]);
    let client = server.connect().await;
    for (sql, expected) in evaluated() {
        let rows = tokio::time::timeout(STEP, client.query(&sql, &[]))
            .await
            .expect("in time")
            .unwrap_or_else(|error| panic!("{}: {error:?}", &sql[..60.min(sql.len())]));
        assert_eq!(rows.len(), 1);
        let text = match rows[0].columns()[0].type_().name() {
            "bool" => {
                if rows[0].get::<_, bool>(0) {
                    "t".to_string()
                } else {
                    "f".to_string()
                }
            }
            "int4" => rows[0].get::<_, i32>(0).to_string(),
            "int8" => rows[0].get::<_, i64>(0).to_string(),
            other => panic!("unexpected type {other}"),
        };
        assert_eq!(text, expected, "{}", &sql[..60.min(sql.len())]);
        assert_alive(&mut server, &client).await;
    }
    for (sql, expected) in refused() {
        let error = tokio::time::timeout(STEP, client.query(&sql, &[]))
            .await
            .expect("in time")
            .expect_err("refused");
        assert_eq!(sqlstate(&error), expected, "{}", &sql[..60.min(sql.len())]);
        assert_alive(&mut server, &client).await;
    }
}
