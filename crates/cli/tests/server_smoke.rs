//! Smoke test of `tierdb serve` with tokio-postgres: a query over each protocol.

use crate::server_support;

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

#[test]
fn ssl_request_is_answered_no() {
    use std::io::{Read, Write};
    let server = TestServer::start(&[]);
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
    // SSLRequest: length 8, code 80877103.
    let mut request = Vec::new();
    request.extend_from_slice(&8i32.to_be_bytes());
    request.extend_from_slice(&80_877_103i32.to_be_bytes());
    socket.write_all(&request).expect("send SSLRequest");
    let mut answer = [0u8; 1];
    socket.read_exact(&mut answer).expect("answer");
    assert_eq!(
        answer[0], b'N',
        "no TLS configured: the server answers N and the client may continue in plain text"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn scram_sha_256_authentication() {
    let password_file = tempfile::NamedTempFile::new().expect("password file");
    std::fs::write(password_file.path(), "s3cret-pass\n").expect("write password file");
    let path = password_file.path().to_str().expect("utf-8 path");
    let server = TestServer::start(&["--auth", "scram", "--password-file", path]);
    let base = server.connection_string();
    let wrong =
        tokio_postgres::connect(&format!("{base} password=wrong"), tokio_postgres::NoTls).await;
    let error = wrong.err().expect("a wrong password is refused");
    assert_eq!(error.code(), Some(&tokio_postgres::error::SqlState::INVALID_PASSWORD), "{error}");
    let missing = tokio_postgres::connect(&base, tokio_postgres::NoTls).await;
    assert!(missing.is_err(), "a password is required");
    let (client, connection) =
        tokio_postgres::connect(&format!("{base} password=s3cret-pass"), tokio_postgres::NoTls)
            .await
            .expect("the right password is accepted");
    tokio::spawn(connection);
    let row = client.query_one("SELECT 40 + 2", &[]).await.expect("query");
    assert_eq!(row.get::<_, i32>(0), 42);
}
