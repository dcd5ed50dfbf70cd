//! INSERT ... ON CONFLICT under concurrency, against a real `tierdb serve` with several
//! tokio-postgres clients. PostgreSQL guarantees that each proposed row is either inserted
//! or handled as a conflict (DO NOTHING skips it, DO UPDATE updates the row that holds the
//! value) even when other transactions insert, update or delete the same key at the same
//! time: no increment is lost, no 23505 escapes, and no row is duplicated.

use crate::server_support;

use std::time::Duration;

use server_support::{connect, TestServer};
use tokio_postgres::Client;

/// How long the whole concurrent phase may take before the test fails instead of hanging.
const PHASE: Duration = Duration::from_secs(600);
const CLIENTS: i64 = 8;
const UPSERTS_PER_CLIENT: i64 = 1_000;
/// Keys the counters are spread over: each is created by whichever client comes first.
const KEYS: i64 = 4;

async fn one_i64(client: &Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap_or_else(|error| panic!("{sql}: {error:?}")).get(0)
}

/// Runs `work(client, worker)` on CLIENTS connections at once.
async fn on_every_client<F, Fut>(server: &TestServer, work: F)
where
    F: Fn(Client, i64) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut workers = Vec::new();
    for worker in 0..CLIENTS {
        let client = connect(server).await;
        workers.push(tokio::spawn(work(client, worker)));
    }
    for worker in workers {
        tokio::time::timeout(PHASE, worker).await.expect("in time").unwrap();
    }
}

/// The counter pattern: 8 clients x 1,000 upserts over 4 keys that do not exist at the
/// start. The first upsert of a key inserts it, every later one increments it: the totals
/// are exact, and the primary key conflict never reaches a client as 23505.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_upsert_counters_are_exact() {
    let server = TestServer::start(&[]);
    connect(&server)
        .await
        .batch_execute("CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL)")
        .await
        .unwrap();
    on_every_client(&server, |client, worker| async move {
        let statement = client
            .prepare(
                "INSERT INTO counter VALUES ($1, 1) \
                 ON CONFLICT (id) DO UPDATE SET n = counter.n + 1 RETURNING n",
            )
            .await
            .unwrap();
        for step in 0..UPSERTS_PER_CLIENT {
            let key = i32::try_from((worker + step) % KEYS).unwrap();
            let rows = client.query(&statement, &[&key]).await.unwrap();
            assert_eq!(rows.len(), 1, "an upsert returns the row it stored");
            let n: i32 = rows[0].get(0);
            assert!(n >= 1);
        }
    })
    .await;
    let client = connect(&server).await;
    assert_eq!(one_i64(&client, "SELECT count(*) FROM counter").await, KEYS);
    assert_eq!(one_i64(&client, "SELECT sum(n) FROM counter").await, CLIENTS * UPSERTS_PER_CLIENT);
    let per_key = CLIENTS * UPSERTS_PER_CLIENT / KEYS;
    assert_eq!(one_i64(&client, "SELECT min(n)::bigint FROM counter").await, per_key);
    assert_eq!(one_i64(&client, "SELECT max(n)::bigint FROM counter").await, per_key);
}

/// DO NOTHING from 8 clients proposing the same 500 keys in different orders: each key is
/// inserted exactly once over all clients (the affected-row counts add up to 500).
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_do_nothing_inserts_each_key_once() {
    const PROPOSED: i64 = 500;
    let server = TestServer::start(&[]);
    connect(&server)
        .await
        .batch_execute("CREATE TABLE seen (id int PRIMARY KEY, by_worker int NOT NULL)")
        .await
        .unwrap();
    let inserted = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let total = inserted.clone();
    on_every_client(&server, move |client, worker| {
        let inserted = inserted.clone();
        async move {
            for step in 0..PROPOSED {
                // Odd workers go downwards, so clients meet on the same keys from both ends.
                let key = if worker % 2 == 0 { step } else { PROPOSED - 1 - step };
                let count = client
                    .execute(
                        "INSERT INTO seen VALUES ($1, $2) ON CONFLICT DO NOTHING",
                        &[&i32::try_from(key).unwrap(), &i32::try_from(worker).unwrap()],
                    )
                    .await
                    .unwrap();
                inserted.fetch_add(count, std::sync::atomic::Ordering::Relaxed);
            }
        }
    })
    .await;
    let client = connect(&server).await;
    assert_eq!(one_i64(&client, "SELECT count(*) FROM seen").await, PROPOSED);
    assert_eq!(total.load(std::sync::atomic::Ordering::Relaxed), u64::try_from(PROPOSED).unwrap());
}

/// The arbiter is a secondary unique index (an e-mail address) while the primary key comes
/// from a sequence; concurrent sessions also delete rows, so an upsert may find the row it
/// conflicted with gone and must insert again. Every row's count equals the upserts that
/// reached it since its last deletion: checked by the invariant that no e-mail appears twice
/// and the sum of counts plus the counts deleted equals the upserts made.
#[tokio::test(flavor = "multi_thread")]
async fn upsert_on_a_secondary_unique_index_with_concurrent_deletes() {
    const EMAILS: i64 = 6;
    let server = TestServer::start(&[]);
    connect(&server)
        .await
        .batch_execute(
            "CREATE TABLE account (id serial PRIMARY KEY, email text NOT NULL UNIQUE, n int NOT NULL);
             CREATE TABLE removed (n int NOT NULL);",
        )
        .await
        .unwrap();
    on_every_client(&server, |client, worker| async move {
        for step in 0..UPSERTS_PER_CLIENT / 2 {
            let email = format!("user{}@example.com", (worker * 7 + step) % EMAILS);
            if worker == 0 && step % 25 == 24 {
                // Deleting a row and recording its count in one transaction keeps the sum
                // checkable.
                client.batch_execute("BEGIN").await.unwrap();
                let rows = client
                    .query("DELETE FROM account WHERE email = $1 RETURNING n", &[&email])
                    .await
                    .unwrap();
                for row in rows {
                    let n: i32 = row.get(0);
                    client.execute("INSERT INTO removed VALUES ($1)", &[&n]).await.unwrap();
                }
                client.batch_execute("COMMIT").await.unwrap();
                continue;
            }
            client
                .execute(
                    "INSERT INTO account (email, n) VALUES ($1, 1) \
                     ON CONFLICT (email) DO UPDATE SET n = account.n + excluded.n",
                    &[&email],
                )
                .await
                .unwrap();
        }
    })
    .await;
    let client = connect(&server).await;
    let deletes = UPSERTS_PER_CLIENT / 2 / 25;
    let upserts = CLIENTS * UPSERTS_PER_CLIENT / 2 - deletes;
    let stored = one_i64(&client, "SELECT coalesce(sum(n), 0)::bigint FROM account").await;
    let removed = one_i64(&client, "SELECT coalesce(sum(n), 0)::bigint FROM removed").await;
    assert_eq!(stored + removed, upserts, "stored {stored}, removed {removed}");
    assert_eq!(
        one_i64(&client, "SELECT count(*) FROM account").await,
        one_i64(&client, "SELECT count(DISTINCT email) FROM account").await,
        "an e-mail is never stored twice"
    );
}
