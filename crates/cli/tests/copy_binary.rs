//! Binary COPY through tokio-postgres, which sends COPY in the extended protocol (asyncpg's
//! tests in tests/python cover the simple protocol): `BinaryCopyInWriter` loads rows of
//! several types (a column left out takes its DEFAULT), `BinaryCopyOutStream` reads them
//! back (an empty result too), and a stream that is not binary COPY data fails as
//! PostgreSQL's does. Every expectation here is what PostgreSQL itself answers.

use crate::server_support;

use chrono::NaiveDate;
use futures_util::{SinkExt, TryStreamExt};
use server_support::{connect, sqlstate, TestServer};
use tokio_postgres::binary_copy::{BinaryCopyInWriter, BinaryCopyOutStream};
use tokio_postgres::types::{ToSql, Type};

#[tokio::test(flavor = "multi_thread")]
async fn binary_copy_both_ways_in_the_extended_protocol() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    client
        .batch_execute(
            "CREATE TABLE cb_items (id int PRIMARY KEY, name text, amount float8, day date, \
             tags text[], flag bool DEFAULT true)",
        )
        .await
        .expect("create table");
    let types = [Type::INT4, Type::TEXT, Type::FLOAT8, Type::DATE, Type::TEXT_ARRAY];
    let sink = client
        .copy_in("COPY cb_items (id, name, amount, day, tags) FROM STDIN (FORMAT binary)")
        .await
        .expect("copy in");
    let writer = BinaryCopyInWriter::new(sink, &types);
    futures_util::pin_mut!(writer);
    let day = NaiveDate::from_ymd_opt(2024, 2, 29).expect("a date");
    for id in 1..=250i32 {
        let name = (id % 10 != 0).then(|| format!("item {id}"));
        let amount = f64::from(id) / 4.0;
        let tags = vec![format!("t{id}"), "all".to_string()];
        let row: [&(dyn ToSql + Sync); 5] = [&id, &name, &amount, &day, &tags];
        writer.as_mut().write(&row).await.expect("write a row");
    }
    let loaded = writer.finish().await.expect("finish copy in");
    assert_eq!(loaded, 250);
    let row = client
        .query_one(
            "SELECT count(*), count(name), sum(amount), min(day)::text, bool_and(flag) FROM cb_items",
            &[],
        )
        .await
        .expect("check the load");
    assert_eq!(row.get::<_, i64>(0), 250);
    assert_eq!(row.get::<_, i64>(1), 225);
    assert_eq!(row.get::<_, f64>(2), 7843.75);
    assert_eq!(row.get::<_, String>(3), "2024-02-29");
    assert!(row.get::<_, bool>(4), "the column left out took its DEFAULT");

    let stream = client
        .copy_out("COPY (SELECT id, name, tags FROM cb_items WHERE id <= 10 ORDER BY id) TO STDOUT (FORMAT binary)")
        .await
        .expect("copy out");
    let rows = BinaryCopyOutStream::new(stream, &[Type::INT4, Type::TEXT, Type::TEXT_ARRAY]);
    let rows: Vec<_> = rows.try_collect().await.expect("read binary rows");
    assert_eq!(rows.len(), 10);
    assert_eq!(rows[0].get::<i32>(0), 1);
    assert_eq!(rows[0].get::<Option<&str>>(1), Some("item 1"));
    assert_eq!(rows[9].get::<Option<&str>>(1), None);
    assert_eq!(rows[9].get::<Vec<String>>(2), vec!["t10".to_string(), "all".to_string()]);

    // An empty result is the header and the trailer.
    let stream = client
        .copy_out("COPY (SELECT id FROM cb_items WHERE false) TO STDOUT (FORMAT binary)")
        .await
        .expect("copy out nothing");
    let rows = BinaryCopyOutStream::new(stream, &[Type::INT4]);
    let rows: Vec<_> = rows.try_collect().await.expect("read no rows");
    assert!(rows.is_empty());

    // A stream that is not binary COPY data fails with PostgreSQL's 22P04 and loads nothing.
    let sink = client
        .copy_in::<_, bytes::Bytes>("COPY cb_items (id) FROM STDIN (FORMAT binary)")
        .await
        .expect("copy in");
    futures_util::pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(b"1\n2\n")).await.expect("send data");
    let error = sink.finish().await.expect_err("not binary data");
    assert_eq!(sqlstate(&error), "22P04", "{error:?}");
    let count: i64 =
        client.query_one("SELECT count(*) FROM cb_items", &[]).await.expect("count").get(0);
    assert_eq!(count, 250);
}
