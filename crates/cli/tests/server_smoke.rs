//! Smoke test of `tierdb serve` with tokio-postgres: a query over each protocol.

mod server_support;

use server_support::TestServer;

#[tokio::test(flavor = "multi_thread")]
async fn simple_and_extended_queries_answer() {
    let server = TestServer::start(&[]);
    let (client, connection) =
        tokio_postgres::connect(&server.connection_string(), tokio_postgres::NoTls)
            .await
            .expect("connect");
    tokio::spawn(connection);
    let rows = client.simple_query("SELECT 1 + 1 AS two").await.expect("simple query");
    let value = rows.iter().find_map(|message| match message {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
        _ => None,
    });
    assert_eq!(value.as_deref(), Some("2"));
    let row = client.query_one("SELECT $1::int8 * 3", &[&14i64]).await.expect("extended query");
    assert_eq!(row.get::<_, i64>(0), 42);
}
