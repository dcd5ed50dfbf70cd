//! The server with its durable volume on S3 (a real MinIO): SQL works, committed data
//! survives a restart, and a buffer pool far smaller than the data reads pages back from
//! the tier and the bucket (statements run on connection threads that are inside a tokio
//! runtime; the S3 volume must serve them there).

use crate::server_support;

use server_support::TestServer;
use tierdb_testkit::{MinioServer, ACCESS_KEY, BUCKET, REGION, SECRET_KEY};
use tokio_postgres::NoTls;

#[tokio::test(flavor = "multi_thread")]
async fn sql_on_an_s3_volume_larger_than_the_pool() {
    let Some(minio) = MinioServer::start("sql_on_an_s3_volume_larger_than_the_pool") else {
        return;
    };
    let volume = format!("s3://{BUCKET}/server-test");
    let flags = [
        "--volume",
        volume.as_str(),
        "--s3-endpoint",
        minio.endpoint(),
        "--s3-region",
        REGION,
        "--s3-access-key-id",
        ACCESS_KEY,
        "--s3-secret-access-key",
        SECRET_KEY,
        "--buffer-pool",
        "4MB",
    ];
    let server = TestServer::start(&flags);
    let (client, connection) =
        tokio_postgres::connect(&server.connection_string(), NoTls).await.expect("connect");
    let task = tokio::spawn(connection);
    client
        .batch_execute(
            "CREATE TABLE big (id int PRIMARY KEY, payload text);
             INSERT INTO big SELECT g, repeat('p', 200) || g FROM generate_series(1, 40000) AS g;",
        )
        .await
        .expect("load 40,000 rows (about 9 MB) into a 4 MB pool");
    drop(client);
    let _ = task.await;
    let data_dir = server.stop();
    let server = TestServer::start_in(data_dir, &flags);
    let (client, connection) =
        tokio_postgres::connect(&server.connection_string(), NoTls).await.expect("reconnect");
    tokio::spawn(connection);
    let count = client.query_one("SELECT count(*), sum(id) FROM big", &[]).await.expect("scan");
    assert_eq!(count.get::<_, i64>(0), 40_000);
    for id in [1, 17_777, 40_000] {
        let row = client
            .query_one("SELECT payload FROM big WHERE id = $1", &[&id])
            .await
            .expect("point select");
        assert_eq!(row.get::<_, String>(0), format!("{}{id}", "p".repeat(200)));
    }
    let reads = client
        .query_one("SELECT hits + misses FROM tierdb_stat_tier_cache()", &[])
        .await
        .expect("tier statistics");
    assert!(reads.get::<_, i64>(0) > 0, "pages were read past the DRAM pool");
}
