//! Server-side cursors against a real server: a client FETCHes a large result a batch at a
//! time while the server's memory stays flat (rows past work_mem wait in a temp file), and
//! what is not built fails with 0A000 naming the feature.

use crate::server_support;
use crate::wire_support;

use server_support::TestServer;
use wire_support::*;

const MIB: u64 = 1 << 20;
const ROWS: u64 = 1_000_000;
const FETCH_ROWS: u64 = 10_000;

fn rows_and_tag(messages: &[Message]) -> (u64, String) {
    let rows = messages.iter().filter(|message| message.kind == b'D').count();
    let tag = messages.iter().find(|message| message.kind == b'C').expect("a tag");
    let tag = String::from_utf8_lossy(&tag.body).trim_end_matches('\0').to_string();
    (u64::try_from(rows).expect("fits"), tag)
}

#[test]
fn fetching_a_million_rows_in_batches_keeps_memory_flat() {
    let server = TestServer::start(&[]);
    let pid = server.child.id();
    let mut client = RawClient::trusted(server.port);
    let baseline = status_bytes(pid, "VmRSS:");
    assert!(first_error(&client.simple("BEGIN")).is_none());
    let declare = client.simple(&format!(
        "DECLARE big CURSOR FOR SELECT g, repeat('x', 100) FROM generate_series(1, {ROWS}) g"
    ));
    assert!(first_error(&declare).is_none(), "{:?}", first_error(&declare));
    let mut growth = status_bytes(pid, "VmRSS:").saturating_sub(baseline);
    let mut fetched = 0;
    loop {
        let messages = client.simple(&format!("FETCH {FETCH_ROWS} FROM big"));
        assert!(first_error(&messages).is_none(), "{:?}", first_error(&messages));
        let (rows, tag) = rows_and_tag(&messages);
        assert_eq!(tag, format!("FETCH {rows}"));
        if rows == 0 {
            break;
        }
        // The first row of the batch is the one after the last batch's.
        let first = messages.iter().find(|message| message.kind == b'D').expect("a row");
        let number = (fetched + 1).to_string();
        assert!(first.body.windows(number.len()).any(|window| window == number.as_bytes()));
        fetched += rows;
        growth = growth.max(status_bytes(pid, "VmRSS:").saturating_sub(baseline));
    }
    assert_eq!(fetched, ROWS);
    println!("cursor: RSS grew by at most {} MiB", growth >> 20);
    assert!(growth < 64 * MIB, "a 1M-row cursor cost {} MiB", growth >> 20);
    let (moved, tag) = rows_and_tag(&client.simple("MOVE ALL FROM big"));
    assert_eq!((moved, tag.as_str()), (0, "MOVE 0"));
    let closed = client.simple("CLOSE big");
    assert_eq!(rows_and_tag(&closed).1, "CLOSE CURSOR");
    assert!(first_error(&client.simple("COMMIT")).is_none());
}

#[test]
fn cursor_features_not_built_fail_with_0a000() {
    let server = TestServer::start(&[]);
    let mut client = RawClient::trusted(server.port);
    for (sql, feature) in [
        ("DECLARE c SCROLL CURSOR FOR SELECT 1", "DECLARE SCROLL CURSOR"),
        ("DECLARE c CURSOR WITH HOLD FOR SELECT 1", "DECLARE CURSOR WITH HOLD"),
        ("DECLARE c BINARY CURSOR FOR SELECT 1", "DECLARE BINARY CURSOR"),
        ("FETCH BACKWARD 1 FROM c", "FETCH BACKWARD"),
        ("FETCH PRIOR FROM c", "FETCH PRIOR"),
        ("FETCH ABSOLUTE 3 FROM c", "FETCH ABSOLUTE"),
        ("MOVE RELATIVE -1 IN c", "MOVE RELATIVE"),
        ("FETCH -2 FROM c", "FETCH BACKWARD"),
    ] {
        assert!(first_error(&client.simple("BEGIN")).is_none());
        let error = first_error(&client.simple(sql)).unwrap_or_else(|| panic!("{sql}: no error"));
        assert_eq!(error.code, "0A000", "{sql}: {error:?}");
        assert_eq!(error.message, format!("{feature} is not supported"), "{sql}");
        assert!(first_error(&client.simple("ROLLBACK")).is_none());
    }
}

/// Bind of portal "p" to the unnamed statement, without parameters.
fn bind_portal() -> Vec<u8> {
    let mut body = cstring(b"p");
    body.extend(cstring(b""));
    body.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    typed(b'B', &body)
}

/// Execute of portal "p" with a row limit.
fn execute_rows(max_rows: i32) -> Vec<u8> {
    let mut body = cstring(b"p");
    body.extend_from_slice(&max_rows.to_be_bytes());
    typed(b'E', &body)
}

#[test]
fn a_portal_read_max_rows_at_a_time_keeps_memory_flat() {
    let server = TestServer::start(&[]);
    let pid = server.child.id();
    let mut client = RawClient::trusted(server.port);
    let baseline = status_bytes(pid, "VmRSS:");
    assert!(first_error(&client.simple("BEGIN")).is_none());
    let sql = format!("SELECT g, repeat('x', 100) FROM generate_series(1, {ROWS}) g");
    let mut request = parse("", sql.as_bytes(), &[]);
    request.extend(bind_portal());
    let limit = i32::try_from(FETCH_ROWS).expect("fits");
    let (mut fetched, mut suspended, mut growth) = (0, 0, 0);
    loop {
        request.extend(execute_rows(limit));
        request.extend(sync());
        client.send(&std::mem::take(&mut request));
        let messages = client.until_ready();
        assert!(first_error(&messages).is_none(), "{:?}", first_error(&messages));
        let rows = messages.iter().filter(|message| message.kind == b'D').count();
        fetched += u64::try_from(rows).expect("fits");
        growth = growth.max(status_bytes(pid, "VmRSS:").saturating_sub(baseline));
        match messages.last().map(|message| message.kind) {
            // PortalSuspended: the next Execute continues where this one stopped.
            Some(b's') => {
                assert_eq!(u64::try_from(rows).expect("fits"), FETCH_ROWS);
                suspended += 1;
            }
            Some(b'C') => break,
            other => panic!("unexpected end {other:?}: {messages:?}"),
        }
    }
    assert_eq!(fetched, ROWS);
    assert!(suspended >= ROWS / FETCH_ROWS - 1, "{suspended} suspensions");
    println!("portal: RSS grew by at most {} MiB", growth >> 20);
    assert!(growth < 64 * MIB, "a 1M-row portal cost {} MiB", growth >> 20);
    assert!(first_error(&client.simple("COMMIT")).is_none());
}
