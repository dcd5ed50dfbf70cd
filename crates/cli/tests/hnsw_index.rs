//! An HNSW index through a real server: built on a populated table, maintained by inserts,
//! it survives a SIGKILL and a clean restart (its definition in pg_indexes, inserts after
//! recovery extend the recovered graph, and its scans keep recall@10 >= 0.95 against the
//! exact ORDER BY on 2,000 seeded vectors), EXPLAIN shows the index scan, and it can be
//! dropped and built again.

use crate::server_support;

use server_support::TestServer;
use tierdb_common::SplitMix64;

const DIMENSIONS: usize = 8;
const BATCH_ROWS: i64 = 500;

fn vector_text(random: &mut SplitMix64) -> String {
    let values: Vec<String> =
        (0..DIMENSIONS).map(|_| format!("{:.3}", random.next_f64() * 10.0)).collect();
    format!("[{}]", values.join(","))
}

/// Inserts rows `first..first + BATCH_ROWS` with seeded vectors.
async fn insert_batch(client: &tokio_postgres::Client, random: &mut SplitMix64, first: i64) {
    let rows: Vec<String> = (first..first + BATCH_ROWS)
        .map(|id| format!("({id}, '{}')", vector_text(random)))
        .collect();
    client
        .batch_execute(&format!("INSERT INTO items VALUES {}", rows.join(", ")))
        .await
        .expect("insert batch");
}

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.expect(sql).get(0)
}

/// Mean recall@10 of the index scan against the exact order (the function form, which
/// never uses the index) over `queries` seeded query vectors.
async fn recall_at_10(
    client: &tokio_postgres::Client,
    random: &mut SplitMix64,
    queries: usize,
) -> f64 {
    let mut found = 0usize;
    for _ in 0..queries {
        let query = vector_text(random);
        let ids = |sql: String| async move {
            let rows = client.query(sql.as_str(), &[]).await.expect("nearest");
            rows.iter().map(|row| row.get::<_, i32>(0)).collect::<Vec<_>>()
        };
        let indexed = ids(format!("SELECT id FROM items ORDER BY v <-> '{query}' LIMIT 10")).await;
        let exact =
            ids(format!("SELECT id FROM items ORDER BY l2_distance(v, '{query}'), id LIMIT 10"))
                .await;
        found += indexed.iter().filter(|id| exact.contains(id)).count();
    }
    f64::from(u32::try_from(found).unwrap()) / f64::from(u32::try_from(queries * 10).unwrap())
}

async fn index_definition(client: &tokio_postgres::Client) -> Option<String> {
    let rows = client
        .query("SELECT indexdef FROM pg_indexes WHERE indexname = 'items_v_idx'", &[])
        .await
        .expect("pg_indexes");
    rows.first().map(|row| row.get(0))
}

const DEFINITION: &str =
    "CREATE INDEX items_v_idx ON public.items USING hnsw (v vector_l2_ops) WITH (m='8')";

#[tokio::test(flavor = "multi_thread")]
async fn hnsw_index_survives_sigkill_and_restart() {
    let mut random = SplitMix64::new(14);
    let server = TestServer::start(&[]);
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE items (id integer PRIMARY KEY, v vector(8))")
        .await
        .expect("create table");
    insert_batch(&client, &mut random, 0).await;
    client
        .batch_execute(
            "CREATE INDEX items_v_idx ON items USING hnsw (v vector_l2_ops) WITH (m = 8)",
        )
        .await
        .expect("create index");
    insert_batch(&client, &mut random, BATCH_ROWS).await;
    let data_dir = server.kill();

    let server = TestServer::start_in(data_dir, &[]);
    let client = server.connect().await;
    assert_eq!(index_definition(&client).await.as_deref(), Some(DEFINITION));
    // Inserts after recovery descend the recovered graph and link into it.
    insert_batch(&client, &mut random, 2 * BATCH_ROWS).await;
    client.batch_execute("INSERT INTO items VALUES (100000, '[0,0,0,0,0,0,0,0.5]')").await.unwrap();
    let nearest = "SELECT id FROM items ORDER BY v <-> '[0,0,0,0,0,0,0,0.4]' LIMIT 1";
    assert_eq!(client.query_one(nearest, &[]).await.unwrap().get::<_, i32>(0), 100000);
    let plan: Vec<String> = client
        .query(&format!("EXPLAIN {nearest}"), &[])
        .await
        .expect("explain")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert!(
        plan.iter().any(|line| line.contains("Index Scan using items_v_idx on items")),
        "{plan:?}"
    );
    let recall = recall_at_10(&client, &mut random, 20).await;
    assert!(recall >= 0.95, "recall@10 {recall} after recovery");
    let data_dir = server.stop();

    let server = TestServer::start_in(data_dir, &[]);
    let client = server.connect().await;
    assert_eq!(index_definition(&client).await.as_deref(), Some(DEFINITION));
    insert_batch(&client, &mut random, 3 * BATCH_ROWS).await;
    assert_eq!(count(&client, "SELECT count(*) FROM items").await, 4 * BATCH_ROWS + 1);
    let recall = recall_at_10(&client, &mut random, 20).await;
    assert!(recall >= 0.95, "recall@10 {recall} after a clean restart");
    client.batch_execute("DROP INDEX items_v_idx").await.expect("drop index");
    assert_eq!(index_definition(&client).await, None);
    client
        .batch_execute(
            "CREATE INDEX items_v_idx ON items USING hnsw (v vector_l2_ops) WITH (m = 8)",
        )
        .await
        .expect("rebuild");
    assert_eq!(index_definition(&client).await.as_deref(), Some(DEFINITION));
}
