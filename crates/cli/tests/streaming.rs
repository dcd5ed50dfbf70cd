//! Streamed results against a real server: rows reach the client as the executor produces
//! them, so the server's memory stays flat whatever the result's size, a client that stops
//! reading makes the server wait (not buffer), and an error after some rows arrives after
//! them (PostgreSQL's behaviour).

use crate::server_support;
use crate::wire_support;

use std::time::{Duration, Instant};

use server_support::TestServer;
use wire_support::*;

const MIB: u64 = 1 << 20;
/// The most a streamed result may add to the server's resident memory.
const RSS_GROWTH_MAX: u64 = 64 * MIB;
/// About 300 MB if it were materialized.
const WIDE_ROWS_SQL: &str = "SELECT g, repeat('x', 100) FROM generate_series(1, 3000000) g";
const WIDE_ROWS: u64 = 3_000_000;
/// Rows read between two samples of the server's memory.
const SAMPLE_EVERY_ROWS: u64 = 100_000;

/// What reading a result found: its rows, its CommandComplete tag, its first error, and
/// the largest growth of the server's RSS seen while reading.
struct Read {
    rows: u64,
    tag: Option<String>,
    error: Option<ServerError>,
    rss_growth: u64,
}

/// Reads messages through ReadyForQuery, counting DataRows (not keeping them) and sampling
/// the server's RSS against `baseline`.
fn read_counting(client: &mut RawClient, pid: u32, baseline: u64) -> Read {
    let mut read = Read { rows: 0, tag: None, error: None, rss_growth: 0 };
    loop {
        let message = client.read().expect("server answered before ReadyForQuery");
        match message.kind {
            // DataRow, or CopyData of COPY TO STDOUT.
            b'D' | b'd' => {
                read.rows += 1;
                if read.rows.is_multiple_of(SAMPLE_EVERY_ROWS) {
                    let growth = status_bytes(pid, "VmRSS:").saturating_sub(baseline);
                    read.rss_growth = read.rss_growth.max(growth);
                }
            }
            b'C' => {
                let text = String::from_utf8_lossy(&message.body);
                read.tag = Some(text.trim_end_matches('\0').to_string());
            }
            b'E' => read.error = read.error.take().or(message.error()),
            b'Z' => return read,
            _ => {}
        }
    }
}

fn extended(sql: &str) -> Vec<u8> {
    let mut bytes = parse("", sql.as_bytes(), &[]);
    bytes.extend(bind("", &[], &[], &[]));
    bytes.extend(execute());
    bytes.extend(sync());
    bytes
}

#[test]
fn a_large_result_streams_with_flat_memory() {
    let server = TestServer::start(&[]);
    let pid = server.child.id();
    let mut client = RawClient::trusted(server.port);
    for (protocol, request) in
        [("simple", query(WIDE_ROWS_SQL.as_bytes())), ("extended", extended(WIDE_ROWS_SQL))]
    {
        let baseline = status_bytes(pid, "VmRSS:");
        client.send(&request);
        let read = read_counting(&mut client, pid, baseline);
        assert!(read.error.is_none(), "{protocol}: {:?}", read.error.map(|e| e.message));
        assert_eq!(read.rows, WIDE_ROWS, "{protocol}");
        assert_eq!(read.tag.as_deref(), Some("SELECT 3000000"), "{protocol}");
        println!("{protocol}: RSS grew by at most {} MiB while reading", read.rss_growth >> 20);
        assert!(
            read.rss_growth < RSS_GROWTH_MAX,
            "{protocol}: the server's RSS grew by {} MiB",
            read.rss_growth >> 20
        );
    }
    // A 2,000 x 2,000 cross join (4 million rows).
    let baseline = status_bytes(pid, "VmRSS:");
    client.send(&query(
        b"SELECT a.g, b.g, repeat('y', 50) FROM generate_series(1, 2000) a(g), generate_series(1, 2000) b(g)",
    ));
    let read = read_counting(&mut client, pid, baseline);
    assert!(read.error.is_none(), "cross join: {:?}", read.error.map(|e| e.message));
    assert_eq!((read.rows, read.tag.as_deref()), (4_000_000, Some("SELECT 4000000")));
    println!("cross join: RSS grew by at most {} MiB while reading", read.rss_growth >> 20);
    assert!(read.rss_growth < RSS_GROWTH_MAX, "cross join: {} MiB", read.rss_growth >> 20);
}

#[test]
fn a_client_that_stops_reading_makes_the_server_wait() {
    let mut server = TestServer::start(&[]);
    let pid = server.child.id();
    let mut client = RawClient::trusted(server.port);
    let baseline = status_bytes(pid, "VmRSS:");
    client.send(&query(WIDE_ROWS_SQL.as_bytes()));
    // The first row arrives, then the client reads nothing for a while: the server fills
    // the socket's buffers and waits.
    assert_eq!(client.read().expect("RowDescription").kind, b'T');
    assert_eq!(client.read().expect("a first row").kind, b'D');
    let mut growth = 0;
    let stalled = Instant::now();
    while stalled.elapsed() < Duration::from_secs(3) {
        growth = growth.max(status_bytes(pid, "VmRSS:").saturating_sub(baseline));
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("stalled client: RSS grew by at most {} MiB", growth >> 20);
    assert!(growth < RSS_GROWTH_MAX, "a stalled client cost {} MiB", growth >> 20);
    // Then the client reads on and gets every row.
    let read = read_counting(&mut client, pid, baseline);
    assert!(read.error.is_none(), "{:?}", read.error.map(|e| e.message));
    assert_eq!(read.rows + 1, WIDE_ROWS);
    // A client that leaves in the middle of a result ends its statement, not the server.
    client.send(&query(WIDE_ROWS_SQL.as_bytes()));
    assert_eq!(client.read().expect("RowDescription").kind, b'T');
    drop(client);
    let mut next = RawClient::trusted(server.port);
    assert!(first_error(&next.simple("SELECT 1")).is_none());
    assert!(server.child.try_wait().expect("wait").is_none(), "the server died");
}

#[test]
fn an_error_after_some_rows_follows_them() {
    let server = TestServer::start(&[]);
    let pid = server.child.id();
    let mut client = RawClient::trusted(server.port);
    for (protocol, request) in [
        ("simple", query(b"SELECT 1 / (g - 100000) FROM generate_series(1, 200000) g")),
        ("extended", extended("SELECT 1 / (g - 100000) FROM generate_series(1, 200000) g")),
    ] {
        client.send(&request);
        let read = read_counting(&mut client, pid, 0);
        let error = read.error.unwrap_or_else(|| panic!("{protocol}: no error"));
        assert_eq!(error.code, "22012", "{protocol}: {error:?}");
        // Rows produced before the failing one were sent; the tag was not.
        assert!(read.rows > 0 && read.rows < 100_000, "{protocol}: {} rows", read.rows);
        assert_eq!(read.tag, None, "{protocol}");
        assert!(first_error(&client.simple("SELECT 1")).is_none(), "{protocol}: session");
    }
    // statement_timeout ends a long stream (57014), after the rows sent so far.
    let messages = client.simple("SET statement_timeout = '300ms'");
    assert!(first_error(&messages).is_none());
    client.send(&query(b"SELECT g FROM generate_series(1, 1000000000) g"));
    let read = read_counting(&mut client, pid, 0);
    let error = read.error.expect("statement_timeout fired");
    assert_eq!(error.code, "57014", "{error:?}");
    assert!(read.rows > 0, "rows came before the timeout");
    // Several statements in one string: each result in turn, then the next statement.
    client.send(&query(b"SELECT 1; SELECT g FROM generate_series(1, 3) g; SELECT 'z'"));
    let messages = client.until_ready();
    let kinds: Vec<u8> = messages.iter().map(|message| message.kind).collect();
    assert_eq!(kinds, b"TDCTDDDCTDC".to_vec(), "{messages:?}");
}

#[test]
fn copy_to_stdout_streams_with_flat_memory() {
    let server = TestServer::start(&[]);
    let pid = server.child.id();
    let mut client = RawClient::trusted(server.port);
    let baseline = status_bytes(pid, "VmRSS:");
    let copy = format!("COPY ({WIDE_ROWS_SQL}) TO STDOUT");
    client.send(&query(copy.as_bytes()));
    let read = read_counting(&mut client, pid, baseline);
    assert!(read.error.is_none(), "{:?}", read.error.map(|e| e.message));
    assert_eq!((read.rows, read.tag.as_deref()), (WIDE_ROWS, Some("COPY 3000000")));
    println!("COPY TO: RSS grew by at most {} MiB while reading", read.rss_growth >> 20);
    assert!(read.rss_growth < RSS_GROWTH_MAX, "COPY TO: {} MiB", read.rss_growth >> 20);

    // Every message in order: CopyOutResponse, the header and one CopyData per row,
    // CopyDone, then the tag (the header is not counted).
    client.send(&query(
        b"COPY (SELECT g AS n FROM generate_series(1, 2) g) TO STDOUT WITH (FORMAT csv, HEADER true)",
    ));
    let messages = client.until_ready();
    let kinds: Vec<u8> = messages.iter().map(|message| message.kind).collect();
    assert_eq!(kinds, b"HdddcC".to_vec(), "{messages:?}");
    let lines: Vec<&[u8]> = messages[1..4].iter().map(|message| &message.body[..]).collect();
    assert_eq!(lines, [&b"n\n"[..], b"1\n", b"2\n"]);
    assert_eq!(messages[5].body, b"COPY 2\0");

    // An error in the middle: the lines sent so far, then the error (no CopyDone, no tag).
    client
        .send(&query(b"COPY (SELECT 1 / (g - 50000) FROM generate_series(1, 100000) g) TO STDOUT"));
    let messages = client.until_ready();
    let error = first_error(&messages).expect("division by zero");
    assert_eq!(error.code, "22012", "{error:?}");
    assert!(messages.iter().any(|message| message.kind == b'd'), "lines came first");
    assert!(!messages.iter().any(|message| matches!(message.kind, b'c' | b'C')));
    assert!(first_error(&client.simple("SELECT 1")).is_none(), "session usable");
}
