//! Row locks, READ ONLY, SERIALIZABLE, the READ COMMITTED re-check and the timeouts against a
//! real `tierdb serve`, with several tokio-postgres clients: every expectation is what
//! PostgreSQL 15 answers (except SERIALIZABLE, which tierdb refuses with 0A000 instead of
//! running it as something weaker).

use crate::server_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use server_support::{connect, sqlstate, TestServer};
use tokio_postgres::{Client, NoTls};

/// How long one step may take before the test fails instead of hanging.
const STEP: Duration = Duration::from_secs(60);
const CLIENTS: i64 = 8;
const INCREMENTS_PER_CLIENT: i64 = 1_000;

/// Runs `sql` (simple protocol) and expects SQLSTATE `expected`; returns the message.
async fn expect_error(client: &Client, sql: &str, expected: &str) -> String {
    match client.simple_query(sql).await {
        Ok(_) => panic!("{sql}: succeeded, expected SQLSTATE {expected}"),
        Err(error) => {
            assert_eq!(sqlstate(&error), expected, "{sql}: {error:?}");
            error.as_db_error().map(|db| db.message().to_string()).unwrap_or_default()
        }
    }
}

async fn one_int(client: &Client, sql: &str) -> i32 {
    client.query_one(sql, &[]).await.unwrap_or_else(|error| panic!("{sql}: {error:?}")).get(0)
}

async fn counter_table(client: &Client) {
    client
        .batch_execute(
            "CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL);
             INSERT INTO counter VALUES (1, 0), (2, 0), (3, 0);",
        )
        .await
        .unwrap();
}

/// The pessimistic pattern: read under FOR UPDATE, write the incremented value. Without
/// row locks increments are lost; with them 8 clients x 1,000 end at exactly 8,000.
#[tokio::test(flavor = "multi_thread")]
async fn for_update_increments_are_never_lost() {
    let server = TestServer::start(&[]);
    counter_table(&connect(&server).await).await;
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..CLIENTS {
        let client = connect(&server).await;
        workers.push(tokio::spawn(async move {
            for _ in 0..INCREMENTS_PER_CLIENT {
                client.batch_execute("BEGIN").await.unwrap();
                let row = client
                    .query_one("SELECT n FROM counter WHERE id = 1 FOR UPDATE", &[])
                    .await
                    .unwrap();
                let n: i32 = row.get(0);
                client
                    .execute("UPDATE counter SET n = $1 WHERE id = 1", &[&(n + 1)])
                    .await
                    .unwrap();
                client.batch_execute("COMMIT").await.unwrap();
            }
        }));
    }
    for worker in workers {
        tokio::time::timeout(Duration::from_secs(600), worker).await.expect("in time").unwrap();
    }
    let client = connect(&server).await;
    let total = one_int(&client, "SELECT n FROM counter WHERE id = 1").await;
    assert_eq!(i64::from(total), CLIENTS * INCREMENTS_PER_CLIENT, "after {:?}", started.elapsed());
}

/// NOWAIT fails with 55P03 naming the relation; SKIP LOCKED leaves locked rows out (the
/// queue pattern); FOR SHARE holders do not block each other but block an UPDATE; locks go
/// at COMMIT and at ROLLBACK TO SAVEPOINT.
#[tokio::test(flavor = "multi_thread")]
async fn nowait_skip_locked_and_shared_locks() {
    let server = TestServer::start(&[]);
    let (first, second) = (connect(&server).await, connect(&server).await);
    counter_table(&first).await;
    first.batch_execute("BEGIN; SELECT * FROM counter WHERE id = 1 FOR UPDATE").await.unwrap();
    second.batch_execute("BEGIN").await.unwrap();
    let message =
        expect_error(&second, "SELECT * FROM counter WHERE id = 1 FOR UPDATE NOWAIT", "55P03")
            .await;
    assert_eq!(message, "could not obtain lock on row in relation \"counter\"");
    second.batch_execute("ROLLBACK").await.unwrap();
    let rows = second
        .query("SELECT id FROM counter ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED", &[])
        .await
        .unwrap();
    assert_eq!(rows.iter().map(|row| row.get::<_, i32>(0)).collect::<Vec<_>>(), vec![2]);
    first.batch_execute("COMMIT").await.unwrap();
    // Released at COMMIT.
    let rows = second.query("SELECT id FROM counter FOR UPDATE NOWAIT", &[]).await.unwrap();
    assert_eq!(rows.len(), 3);

    first.batch_execute("BEGIN; SELECT * FROM counter WHERE id = 2 FOR SHARE").await.unwrap();
    second
        .batch_execute("BEGIN; SELECT * FROM counter WHERE id = 2 FOR SHARE NOWAIT")
        .await
        .unwrap();
    second.batch_execute("SET LOCAL lock_timeout = '200ms'").await.unwrap();
    expect_error(&second, "UPDATE counter SET n = 9 WHERE id = 2", "55P03").await;
    second.batch_execute("ROLLBACK").await.unwrap();
    // Taken after a savepoint: released by ROLLBACK TO SAVEPOINT.
    first
        .batch_execute("SAVEPOINT s; SELECT * FROM counter WHERE id = 3 FOR UPDATE")
        .await
        .unwrap();
    expect_error(&second, "SELECT * FROM counter WHERE id = 3 FOR UPDATE NOWAIT", "55P03").await;
    first.batch_execute("ROLLBACK TO SAVEPOINT s").await.unwrap();
    assert_eq!(
        second
            .query("SELECT * FROM counter WHERE id = 3 FOR UPDATE NOWAIT", &[])
            .await
            .unwrap()
            .len(),
        1
    );
    expect_error(&second, "SELECT * FROM counter WHERE id = 2 FOR UPDATE NOWAIT", "55P03").await;
    first.batch_execute("ROLLBACK").await.unwrap();
}

/// A FOR UPDATE that waited for a concurrent committed update returns the new version under
/// READ COMMITTED (re-checked against its WHERE), and fails with 40001 under REPEATABLE READ.
#[tokio::test(flavor = "multi_thread")]
async fn waiting_for_update_sees_the_new_version() {
    let server = TestServer::start(&[]);
    let (first, second) = (Arc::new(connect(&server).await), connect(&server).await);
    counter_table(&first).await;
    for (isolation, expected) in [("READ COMMITTED", Some(vec![(1, 5)])), ("REPEATABLE READ", None)]
    {
        second.batch_execute("BEGIN; UPDATE counter SET n = n + 5 WHERE id = 1").await.unwrap();
        first.batch_execute(&format!("BEGIN ISOLATION LEVEL {isolation}; SELECT 1")).await.unwrap();
        let waiting = {
            let first = Arc::clone(&first);
            tokio::spawn(async move {
                first.query("SELECT id, n FROM counter WHERE id = 1 FOR UPDATE", &[]).await
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "waits for the writer");
        second.batch_execute("COMMIT").await.unwrap();
        let outcome = tokio::time::timeout(STEP, waiting).await.expect("in time").unwrap();
        match expected {
            Some(rows) => {
                let got: Vec<(i32, i32)> =
                    outcome.unwrap().iter().map(|row| (row.get(0), row.get(1))).collect();
                assert_eq!(got, rows);
            }
            None => assert_eq!(sqlstate(&outcome.unwrap_err()), "40001"),
        }
        first.batch_execute("ROLLBACK").await.unwrap();
        second.batch_execute("UPDATE counter SET n = 0 WHERE id = 1").await.unwrap();
    }
    // The re-check: the concurrent update moved the row out of the WHERE clause.
    second.batch_execute("BEGIN; UPDATE counter SET n = 7 WHERE id = 1").await.unwrap();
    let waiting = {
        let first = Arc::clone(&first);
        tokio::spawn(async move {
            first.query("SELECT id FROM counter WHERE n = 0 FOR UPDATE", &[]).await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    second.batch_execute("COMMIT").await.unwrap();
    let rows = tokio::time::timeout(STEP, waiting).await.expect("in time").unwrap().unwrap();
    let ids: Vec<i32> = rows.iter().map(|row| row.get(0)).collect();
    assert_eq!(ids, vec![2, 3], "row 1 no longer matches n = 0");
}

/// READ COMMITTED DELETE after waiting for an update that moved the row out of its WHERE
/// clause deletes nothing (PostgreSQL re-evaluates the WHERE on the new version).
#[tokio::test(flavor = "multi_thread")]
async fn read_committed_delete_rechecks_its_where() {
    let server = TestServer::start(&[]);
    let (first, second) = (Arc::new(connect(&server).await), connect(&server).await);
    counter_table(&first).await;
    second.batch_execute("BEGIN; UPDATE counter SET n = 1 WHERE id = 1").await.unwrap();
    let deleting = {
        let first = Arc::clone(&first);
        tokio::spawn(async move { first.execute("DELETE FROM counter WHERE n = 0", &[]).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!deleting.is_finished(), "the DELETE waits for the update");
    second.batch_execute("COMMIT").await.unwrap();
    let deleted = tokio::time::timeout(STEP, deleting).await.expect("in time").unwrap().unwrap();
    assert_eq!(deleted, 2, "rows 2 and 3 only");
    assert_eq!(one_int(&first, "SELECT n FROM counter WHERE id = 1").await, 1);
}

/// DELETE ... RETURNING that waited for a concurrent update returns the version it deleted,
/// the updated one (as PostgreSQL): a stale RETURNING loses the update for whoever archives
/// the deleted rows.
#[tokio::test(flavor = "multi_thread")]
async fn read_committed_delete_returns_the_version_it_deleted() {
    let server = TestServer::start(&[]);
    let (first, second) = (Arc::new(connect(&server).await), connect(&server).await);
    counter_table(&first).await;
    second.batch_execute("BEGIN; UPDATE counter SET n = n + 100 WHERE id < 3").await.unwrap();
    let deleting = {
        let first = Arc::clone(&first);
        tokio::spawn(async move {
            let with_filter = "DELETE FROM counter WHERE id = 1 RETURNING n";
            let rows = first.query(with_filter, &[]).await?;
            let without_filter = first.query("DELETE FROM counter RETURNING id, n", &[]).await?;
            Ok::<_, tokio_postgres::Error>((rows, without_filter))
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!deleting.is_finished(), "the DELETE waits for the update");
    second.batch_execute("COMMIT").await.unwrap();
    let (rows, rest) =
        tokio::time::timeout(STEP, deleting).await.expect("in time").unwrap().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, i32>(0), 100, "the updated version");
    let mut rest: Vec<(i32, i32)> = rest.iter().map(|row| (row.get(0), row.get(1))).collect();
    rest.sort_unstable();
    assert_eq!(rest, vec![(2, 100), (3, 0)]);
}
/// SERIALIZABLE is refused (0A000) in every form, so write skew can never commit under a
/// level that promises to prevent it; the session keeps its level and stays usable.
#[tokio::test(flavor = "multi_thread")]
async fn serializable_is_refused() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    counter_table(&client).await;
    for sql in [
        "BEGIN ISOLATION LEVEL SERIALIZABLE",
        "START TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        "SET default_transaction_isolation = 'serializable'",
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE",
    ] {
        let message = expect_error(&client, sql, "0A000").await;
        assert!(message.starts_with("SERIALIZABLE isolation level is not supported"), "{message}");
    }
    client.batch_execute("BEGIN").await.unwrap();
    expect_error(&client, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "0A000").await;
    client.batch_execute("ROLLBACK").await.unwrap();
    client.batch_execute("BEGIN").await.unwrap();
    expect_error(&client, "SET transaction_isolation = 'serializable'", "0A000").await;
    client.batch_execute("ROLLBACK").await.unwrap();
    let level = client.query_one("SHOW transaction_isolation", &[]).await.unwrap();
    assert_eq!(level.get::<_, String>(0), "read committed");
    assert_eq!(one_int(&client, "SELECT 1").await, 1);
}

/// READ ONLY in each of its forms refuses INSERT, UPDATE, DELETE, DDL and locking reads with
/// 25006 and PostgreSQL's wording; plain reads work.
#[tokio::test(flavor = "multi_thread")]
async fn read_only_transactions_refuse_writes() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    counter_table(&client).await;
    let writes = [
        ("INSERT INTO counter VALUES (9, 9)", "INSERT"),
        ("UPDATE counter SET n = 1", "UPDATE"),
        ("DELETE FROM counter", "DELETE"),
        ("CREATE TABLE other (a int)", "CREATE TABLE"),
        ("SELECT * FROM counter FOR UPDATE", "SELECT FOR UPDATE"),
    ];
    for begin in
        ["BEGIN READ ONLY", "START TRANSACTION READ ONLY", "BEGIN; SET TRANSACTION READ ONLY"]
    {
        for (sql, command) in writes {
            client.batch_execute(begin).await.unwrap();
            assert_eq!(one_int(&client, "SELECT count(*)::int FROM counter").await, 3);
            let message = expect_error(&client, sql, "25006").await;
            assert_eq!(message, format!("cannot execute {command} in a read-only transaction"));
            client.batch_execute("ROLLBACK").await.unwrap();
        }
    }
    client.batch_execute("SET default_transaction_read_only = on").await.unwrap();
    expect_error(&client, "INSERT INTO counter VALUES (9, 9)", "25006").await;
    assert_eq!(one_int(&client, "SELECT count(*)::int FROM counter").await, 3);
    client
        .batch_execute("BEGIN READ WRITE; INSERT INTO counter VALUES (9, 9); COMMIT")
        .await
        .unwrap();
    client.batch_execute("SET default_transaction_read_only = off").await.unwrap();
    client.batch_execute("DELETE FROM counter WHERE id = 9").await.unwrap();
}

/// statement_timeout cancels a long query and a lock wait (57014), lock_timeout a lock wait
/// (55P03), a cancel request a lock wait (57014); the session is usable after each.
#[tokio::test(flavor = "multi_thread")]
async fn timeouts_and_cancel_end_waits() {
    let server = TestServer::start(&[]);
    let (holder, waiter) = (connect(&server).await, Arc::new(connect(&server).await));
    counter_table(&holder).await;
    waiter.batch_execute("SET statement_timeout = '300ms'").await.unwrap();
    let started = Instant::now();
    let message =
        expect_error(&waiter, "SELECT count(*) FROM generate_series(1, 100000000)", "57014").await;
    assert_eq!(message, "canceling statement due to statement timeout");
    assert!(started.elapsed() < STEP);
    assert_eq!(one_int(&waiter, "SELECT 1").await, 1);

    holder.batch_execute("BEGIN; SELECT * FROM counter WHERE id = 1 FOR UPDATE").await.unwrap();
    let message =
        expect_error(&waiter, "SELECT * FROM counter WHERE id = 1 FOR UPDATE", "57014").await;
    assert_eq!(message, "canceling statement due to statement timeout");
    let message = expect_error(&waiter, "UPDATE counter SET n = 2 WHERE id = 1", "57014").await;
    assert_eq!(message, "canceling statement due to statement timeout");
    waiter.batch_execute("SET statement_timeout = 0; SET lock_timeout = '200ms'").await.unwrap();
    let message = expect_error(&waiter, "DELETE FROM counter WHERE id = 1", "55P03").await;
    assert_eq!(message, "canceling statement due to lock timeout");
    assert_eq!(one_int(&waiter, "SELECT 2").await, 2);

    waiter.batch_execute("SET lock_timeout = 0").await.unwrap();
    let token = waiter.cancel_token();
    let waiting = {
        let waiter = Arc::clone(&waiter);
        tokio::spawn(async move {
            waiter.query("SELECT * FROM counter WHERE id = 1 FOR SHARE", &[]).await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "waits for the FOR UPDATE holder");
    token.cancel_query(NoTls).await.expect("send cancel request");
    let outcome = tokio::time::timeout(STEP, waiting).await.expect("in time").unwrap();
    assert_eq!(sqlstate(&outcome.unwrap_err()), "57014");
    holder.batch_execute("COMMIT").await.unwrap();
    assert_eq!(one_int(&waiter, "SELECT 3").await, 3);
    assert_eq!(
        waiter.query("SELECT * FROM counter FOR UPDATE NOWAIT", &[]).await.unwrap().len(),
        3
    );
}

/// FOR NO KEY UPDATE and FOR KEY SHARE are read (were syntax errors) and taken as FOR UPDATE
/// and FOR SHARE: every conflict PostgreSQL has between them is there (checked with NOWAIT,
/// 55P03), two KEY SHARE holders share the row, and the locks go at COMMIT.
#[tokio::test(flavor = "multi_thread")]
async fn no_key_update_and_key_share_lock_rows() {
    let server = TestServer::start(&[]);
    let (first, second) = (connect(&server).await, connect(&server).await);
    counter_table(&first).await;
    first
        .batch_execute("BEGIN; SELECT * FROM counter WHERE id = 1 FOR NO KEY UPDATE")
        .await
        .unwrap();
    for conflicting in ["FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE"] {
        second.batch_execute("BEGIN").await.unwrap();
        let sql = format!("SELECT * FROM counter WHERE id = 1 {conflicting} NOWAIT");
        expect_error(&second, &sql, "55P03").await;
        second.batch_execute("ROLLBACK").await.unwrap();
    }
    first.batch_execute("COMMIT").await.unwrap();
    first.batch_execute("BEGIN; SELECT n FROM counter WHERE id = 2 FOR KEY SHARE").await.unwrap();
    second.batch_execute("BEGIN").await.unwrap();
    let shared =
        second.query("SELECT n FROM counter WHERE id = 2 FOR KEY SHARE NOWAIT", &[]).await.unwrap();
    assert_eq!(shared.len(), 1, "KEY SHARE holders share the row");
    second.batch_execute("ROLLBACK; BEGIN").await.unwrap();
    expect_error(&second, "SELECT * FROM counter WHERE id = 2 FOR UPDATE NOWAIT", "55P03").await;
    second.batch_execute("ROLLBACK").await.unwrap();
    first.batch_execute("COMMIT").await.unwrap();
    let free = second.query("SELECT id FROM counter FOR NO KEY UPDATE NOWAIT", &[]).await.unwrap();
    assert_eq!(free.len(), 3, "released at COMMIT");
}
