//! The server as an attacker or a careless client meets it, over raw sockets: no statement
//! runs before authentication, refusals are FATAL and close the connection, silent sockets
//! cannot lock clients out, broken messages get PostgreSQL's SQLSTATEs without crashing
//! anything, and idle timeouts end connections.

use crate::server_support;
use crate::wire_support;

use std::time::{Duration, Instant};

use server_support::TestServer;
use wire_support::*;

fn password_file(password: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().expect("password file");
    std::fs::write(file.path(), format!("{password}\n")).expect("write password file");
    file
}

/// Startup and a statement in one write, as an attacker pipelines them.
fn startup_then(sql: &str) -> Vec<u8> {
    let mut bytes = startup_packet();
    bytes.extend(query(sql.as_bytes()));
    bytes
}

fn assert_fatal(messages: &[Message], code: &str) {
    let error = first_error(messages).unwrap_or_else(|| panic!("no error in {messages:?}"));
    assert_eq!((error.severity.as_str(), error.code.as_str()), ("FATAL", code), "{error:?}");
    assert_nothing_executed(messages);
}

fn assert_alive(server: &mut TestServer) {
    assert!(server.child.try_wait().expect("wait").is_none(), "the server process died");
    // A session slot of a connection the test has just closed is released when the server
    // sees the close: while every slot is still taken (53300), try again.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut client = loop {
        let mut client = RawClient::connect(server.port);
        client.send(&startup_packet());
        let mut messages = Vec::new();
        while let Some(message) = client.read() {
            let ready = message.kind == b'Z';
            messages.push(message);
            if ready {
                break;
            }
        }
        if first_error(&messages).is_none_or(|error| error.code != "53300") {
            assert!(messages.last().is_some_and(|last| last.kind == b'Z'), "{messages:?}");
            break client;
        }
        assert!(Instant::now() < deadline, "the session slots were never released");
        std::thread::sleep(Duration::from_millis(50));
    };
    let messages = client.simple("SELECT 1");
    assert!(first_error(&messages).is_none(), "{messages:?}");
}

#[test]
fn no_password_configured_is_fatal_and_runs_nothing() {
    // auth=scram without a password: the path non-loopback clients take under the default
    // trust-loopback mode when no password is configured. The bootstrap superuser has no
    // password, so the exchange is a mock one that no password passes; a query sent instead
    // of the SASL response is a protocol violation.
    let server = TestServer::start(&["--auth", "scram"]);
    let mut client = RawClient::connect(server.port);
    client.send(&startup_then("CREATE TABLE bypass (a int)"));
    assert_fatal(&client.until_closed(), "08P01");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let config = format!("{} password=guess", server.connection_string());
        let error = tokio_postgres::connect(&config, tokio_postgres::NoTls)
            .await
            .err()
            .expect("no password passes");
        let error = error.as_db_error().expect("the server's refusal");
        assert_eq!((error.severity(), error.code().code()), ("FATAL", "28P01"));
        assert_eq!(error.message(), "password authentication failed for user \"tierdb\"");
    });
}

#[test]
fn messages_before_authentication_are_refused() {
    let secret = password_file("s3cret-pass");
    let path = secret.path().to_str().expect("utf-8 path");
    let server = TestServer::start(&["--auth", "scram", "--password-file", path]);
    let mut client = RawClient::connect(server.port);
    client.send(&startup_then("CREATE TABLE bypass (a int)"));
    assert_fatal(&client.until_closed(), "08P01");
    // A badly laid-out message during authentication (a Terminate with a body, a short
    // SASLInitialResponse) is FATAL too: an ERROR there would leave pgwire ready for queries.
    for bad in [typed(b'X', b"x"), typed(b'p', b"SCRAM-SHA-256\0\0")] {
        let mut client = RawClient::connect(server.port);
        let mut bytes = startup_packet();
        bytes.extend(bad);
        bytes.extend(typed(b'p', b"x"));
        bytes.extend(query(b"CREATE TABLE bypass (a int)"));
        client.send(&bytes);
        let messages = client.until_closed();
        assert_nothing_executed(&messages);
        let error = first_error(&messages).expect("an error");
        assert_eq!(error.severity, "FATAL", "{error:?}");
    }

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let config = format!("{} password=s3cret-pass", server.connection_string());
        let (client, connection) =
            tokio_postgres::connect(&config, tokio_postgres::NoTls).await.expect("log in");
        tokio::spawn(connection);
        let error = client.simple_query("SELECT * FROM bypass").await.expect_err("no table");
        assert_eq!(error.code(), Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE));
    });
}

#[test]
fn full_slots_are_fatal_and_run_nothing() {
    let mut server = TestServer::start(&["--max-connections", "2"]);
    let held = [RawClient::trusted(server.port), RawClient::trusted(server.port)];
    let mut refused = RawClient::connect(server.port);
    refused.send(&startup_then("CREATE TABLE slots_full (a int)"));
    let messages = refused.until_closed();
    assert_fatal(&messages, "53300");
    assert_eq!(first_error(&messages).expect("error").message, "sorry, too many clients already");
    drop(held);
    // The slots come back when the sessions end.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut client = RawClient::connect(server.port);
        client.send(&startup_packet());
        let first = client.read().expect("an answer");
        if first.kind != b'E' {
            client.until_ready();
            let messages = client.simple("SELECT * FROM slots_full");
            assert_eq!(first_error(&messages).expect("no such table").code, "42P01");
            break;
        }
        assert!(Instant::now() < deadline, "the sessions' slots were never released");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_alive(&mut server);
}

fn thread_count(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
        .expect("Threads line")
}

#[test]
fn silent_sockets_cannot_lock_clients_out() {
    const SILENT: usize = 24;
    const STARTUP_LIMIT: usize = 8;
    let limit = STARTUP_LIMIT.to_string();
    let mut server = TestServer::start(&[
        "--max-connections",
        "4",
        "--max-startup-connections",
        &limit,
        "--authentication-timeout-ms",
        "500",
    ]);
    let pid = server.child.id();
    let mut established = RawClient::trusted(server.port);
    let threads_before = thread_count(pid);

    let mut silent: Vec<RawClient> = (0..SILENT).map(|_| RawClient::connect(server.port)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let threads_during = thread_count(pid);
    assert!(
        threads_during <= threads_before + STARTUP_LIMIT + 2,
        "{SILENT} silent sockets took {threads_during} threads (from {threads_before})"
    );
    // A session that was already in keeps working.
    assert!(first_error(&established.simple("SELECT 1")).is_none());

    // A client arriving behind the silent sockets waits in the listen backlog and is served
    // once they time out (8 at a time, 500 ms each), instead of being locked out.
    let started = Instant::now();
    let mut late = RawClient::trusted(server.port);
    assert!(first_error(&late.simple("SELECT 1")).is_none());
    assert!(started.elapsed() < Duration::from_secs(10), "the late client waited too long");

    // Every silent socket is closed by the server at the authentication timeout (a socket
    // that never sent a byte is closed without a word, as PostgreSQL does).
    for client in &mut silent {
        let messages = client.until_closed();
        assert!(messages.is_empty(), "{messages:?}");
    }

    // They never took a session slot: max_connections (4) sessions, with the two above.
    drop(late);
    let sessions: Vec<RawClient> = (0..3).map(|_| RawClient::trusted(server.port)).collect();
    assert_eq!(sessions.len(), 3);
    drop(sessions);
    assert_alive(&mut server);
}

#[test]
fn invalid_utf8_is_22021_and_the_session_goes_on() {
    let mut server = TestServer::start(&[]);
    let mut client = RawClient::trusted(server.port);
    client.send(&query(b"SELECT 'caf\xe9'"));
    let error = first_error(&client.until_ready()).expect("an error");
    assert_eq!((error.severity.as_str(), error.code.as_str()), ("ERROR", "22021"), "{error:?}");

    let mut bytes = parse("", b"SELECT '\xff\xfe'", &[]);
    bytes.extend(sync());
    client.send(&bytes);
    assert_eq!(first_error(&client.until_ready()).expect("an error").code, "22021");
    assert!(first_error(&client.simple("SELECT 1")).is_none());
    assert_alive(&mut server);
}

#[test]
fn malformed_bodies_are_08p01_errors_and_the_session_goes_on() {
    let mut server = TestServer::start(&[]);
    let mut client = RawClient::trusted(server.port);
    // Parse that promises 5 parameter types and carries none; Bind and Execute cut short;
    // Describe with a bad kind; a Sync with a body.
    let mut truncated_parse = cstring(b"");
    truncated_parse.extend(cstring(b"SELECT 1"));
    truncated_parse.extend_from_slice(&5i16.to_be_bytes());
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (typed(b'P', &truncated_parse), "insufficient data left in message"),
        (typed(b'B', &cstring(b"")), "invalid string in message"),
        (typed(b'E', &cstring(b"")), "insufficient data left in message"),
        (typed(b'D', b"X\0"), "invalid DESCRIBE message subtype 88"),
        (typed(b'S', b"junk"), "invalid message format"),
    ];
    for (message, expected) in cases {
        let mut bytes = message;
        if bytes[0] != b'S' {
            // A Sync's own error is answered with ReadyForQuery at once, as in PostgreSQL.
            bytes.extend(sync());
        }
        client.send(&bytes);
        let error = first_error(&client.until_ready()).expect("an error");
        assert_eq!((error.code.as_str(), error.message.as_str()), ("08P01", expected));
    }
    // After an extended-protocol error, messages up to Sync are discarded, bad ones too:
    // one ErrorResponse, then ReadyForQuery.
    let mut bytes = parse("", b"SELECT '\xff'", &[]);
    bytes.extend(typed(b'B', &cstring(b"")));
    bytes.extend(typed(b'E', &cstring(b"")));
    bytes.extend(sync());
    client.send(&bytes);
    let messages = client.until_ready();
    assert_eq!(messages.iter().filter(|message| message.kind == b'E').count(), 1, "{messages:?}");
    assert!(first_error(&client.simple("SELECT 1")).is_none());
    assert_alive(&mut server);
}

#[test]
fn broken_frames_are_fatal_08p01_before_closing() {
    let mut server = TestServer::start(&["--max-message-size", "1MB"]);
    let mut oversized = typed(b'Q', b"");
    oversized[1..5].copy_from_slice(&(2i32 << 20).to_be_bytes());
    let mut short_length = typed(b'Q', b"");
    short_length[1..5].copy_from_slice(&2i32.to_be_bytes());
    for bytes in [oversized, short_length, typed(b'Z', &[]), typed(b'p', b"pw\0")] {
        let mut client = RawClient::trusted(server.port);
        client.send(&bytes);
        let messages = client.until_closed();
        let error = first_error(&messages).expect("an ErrorResponse before closing");
        assert_eq!((error.severity.as_str(), error.code.as_str()), ("FATAL", "08P01"));
    }
    // Broken startup packets: too long, no terminator, no user.
    let mut no_user = 196_608i32.to_be_bytes().to_vec();
    no_user.push(0);
    let mut no_user_packet = i32::try_from(no_user.len() + 4).expect("fits").to_be_bytes().to_vec();
    no_user_packet.extend(no_user);
    let mut unterminated = startup_packet();
    unterminated.pop();
    let length = i32::try_from(unterminated.len()).expect("fits");
    unterminated[..4].copy_from_slice(&length.to_be_bytes());
    for (bytes, code) in [
        ([20_000i32.to_be_bytes(), 196_608i32.to_be_bytes()].concat(), "08P01"),
        (unterminated, "08P01"),
        (no_user_packet, "28000"),
    ] {
        let mut client = RawClient::connect(server.port);
        client.send(&bytes);
        let messages = client.until_closed();
        assert_fatal(&messages, code);
    }
    assert_alive(&mut server);
}

/// A bad setting in the startup packet refuses the connection with SET's SQLSTATE, as
/// PostgreSQL's FATAL does (it was 08P01, a protocol violation).
#[test]
fn bad_startup_settings_are_fatal_with_sets_sqlstate() {
    let mut server = TestServer::start(&[]);
    for (parameters, code) in [
        (["TimeZone", "Nowhere/Bad"], "22023"),
        (["options", "-c TimeZone=Nowhere/Bad"], "22023"),
        (["options", "-c work_mem=lots"], "22023"),
        (["options", "-c no_such_parameter=1"], "42704"),
    ] {
        let mut client = RawClient::connect(server.port);
        let [name, value] = parameters;
        client.send(&startup_packet_with(&["user", "tierdb", "database", "tierdb", name, value]));
        let messages = client.until_closed();
        assert_fatal(&messages, code);
    }
    assert_alive(&mut server);
}

#[test]
fn bind_is_checked_against_its_statement() {
    let mut server = TestServer::start(&[]);
    let mut client = RawClient::trusted(server.port);
    let value = |text: &str| Some((i32::try_from(text.len()).expect("fits"), text.into()));
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (bind("s", &[], &[value("1"), value("2")], &[]), "08P01"),
        (bind("s", &[7], &[value("1")], &[]), "22023"),
        (bind("s", &[0, 0], &[value("1")], &[]), "08P01"),
        (bind("s", &[], &[Some((-5, Vec::new()))], &[]), "08P01"),
        (bind("s", &[], &[Some((100, b"1".to_vec()))], &[]), "08P01"),
        (bind("s", &[], &[value("1")], &[0, 0]), "08P01"),
    ];
    let mut prepare = parse("s", b"SELECT $1::int4 + 1", &[23]);
    prepare.extend(sync());
    client.send(&prepare);
    assert!(first_error(&client.until_ready()).is_none());
    for (message, code) in cases {
        let mut bytes = message;
        bytes.extend(execute());
        bytes.extend(sync());
        client.send(&bytes);
        let error = first_error(&client.until_ready()).expect("an error");
        assert_eq!(error.code, code, "{error:?}");
    }
    let mut good = bind("s", &[], &[value("41")], &[]);
    good.extend(execute());
    good.extend(sync());
    client.send(&good);
    let messages = client.until_ready();
    let row = messages.iter().find(|message| message.kind == b'D').expect("a row");
    assert!(row.body.ends_with(b"42"), "{row:?}");
    assert_alive(&mut server);
}

#[test]
fn copy_fail_is_57014_and_loads_nothing() {
    let server = TestServer::start(&[]);
    let mut client = RawClient::trusted(server.port);
    assert!(first_error(&client.simple("CREATE TABLE c (a int)")).is_none());
    client.send(&query(b"COPY c FROM STDIN"));
    assert_eq!(client.read().expect("CopyInResponse").kind, b'G');
    let mut bytes = typed(b'd', b"1\n2\n");
    bytes.extend(typed(b'f', &cstring(b"client gave up")));
    client.send(&bytes);
    let error = first_error(&client.until_ready()).expect("an error");
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        ("57014", "COPY from stdin failed: client gave up")
    );
    let messages = client.simple("SELECT count(*) FROM c");
    let row = messages.iter().find(|message| message.kind == b'D').expect("a row");
    assert!(row.body.ends_with(b"0"), "{row:?}");
}

#[test]
fn idle_timeouts_end_the_connection() {
    let server = TestServer::start(&[]);
    let mut in_transaction = RawClient::trusted(server.port);
    in_transaction.simple("SET idle_in_transaction_session_timeout = '300ms'");
    in_transaction.simple("BEGIN");
    let started = Instant::now();
    assert_fatal(&in_transaction.until_closed(), "25P03");
    assert!(started.elapsed() >= Duration::from_millis(250));

    let mut idle = RawClient::trusted(server.port);
    idle.simple("SET idle_session_timeout = '300ms'");
    assert_fatal(&idle.until_closed(), "57P05");

    // Outside a transaction block idle_in_transaction_session_timeout does not apply.
    let mut outside = RawClient::trusted(server.port);
    outside.simple("SET idle_in_transaction_session_timeout = '200ms'");
    std::thread::sleep(Duration::from_millis(500));
    assert!(first_error(&outside.simple("SELECT 1")).is_none());
}

/// A size field (`VmHWM:`, `VmRSS:`) of the process's status, in bytes.
fn peak_rss_bytes(pid: u32) -> u64 {
    status_bytes(pid, "VmHWM:")
}

#[test]
fn copy_data_is_streamed_not_buffered() {
    const MIB: usize = 1 << 20;
    let mut server = TestServer::start(&[]);
    let pid = server.child.id();
    let mut client = RawClient::trusted(server.port);
    assert!(first_error(&client.simple("CREATE TABLE s (id int8 PRIMARY KEY, v text)")).is_none());

    // 20,000 rows in 16 KiB messages: loaded as they arrive, counted once.
    client.send(&query(b"COPY s FROM STDIN WITH (FORMAT csv, HEADER true)"));
    assert_eq!(client.read().expect("CopyInResponse").kind, b'G');
    let mut data = b"id,v\n".to_vec();
    for id in 0..20_000 {
        data.extend(format!("{id},\"row {id}, with a comma\"\n").bytes());
    }
    for piece in data.chunks(16 << 10) {
        client.send(&typed(b'd', piece));
    }
    client.send(&typed(b'c', &[]));
    let messages = client.until_ready();
    assert!(first_error(&messages).is_none(), "{messages:?}");
    let complete = messages.iter().find(|message| message.kind == b'C').expect("CommandComplete");
    assert_eq!(complete.body, b"COPY 20000\0");

    // 512 MiB without a newline: refused once a record passes 64 MiB, without buffering
    // the rest (the server's peak memory grows by well under the half of what was sent
    // that a buffered stream would take); the data after the error is discarded and the
    // session goes on.
    let before = peak_rss_bytes(pid);
    client.send(&query(b"COPY s FROM STDIN"));
    assert_eq!(client.read().expect("CopyInResponse").kind, b'G');
    let piece = typed(b'd', &vec![b'x'; MIB]);
    for _ in 0..512 {
        client.send(&piece);
    }
    client.send(&typed(b'c', &[]));
    let error = first_error(&client.until_ready()).expect("an error");
    assert_eq!(error.code, "54000", "{error:?}");
    let growth = peak_rss_bytes(pid).saturating_sub(before);
    assert!(growth < 256 * MIB as u64, "peak RSS grew by {} MiB", growth >> 20);
    let messages = client.simple("SELECT count(*) FROM s");
    let row = messages.iter().find(|message| message.kind == b'D').expect("a row");
    assert!(row.body.ends_with(b"20000"), "{row:?}");

    // A stray query in the middle of a COPY fails the COPY at once: nothing it read stays,
    // and no transaction is left open behind an idle session.
    client.send(&query(b"COPY s FROM STDIN"));
    assert_eq!(client.read().expect("CopyInResponse").kind, b'G');
    client.send(&typed(b'd', b"900001\tlost\n"));
    client.send(&query(b"SELECT 1"));
    assert_eq!(first_error(&client.until_ready()).expect("an error").code, "08P01");
    let messages = client.simple("SELECT count(*) FROM s");
    let row = messages.iter().find(|message| message.kind == b'D').expect("a row");
    assert!(row.body.ends_with(b"20000"), "{row:?}");
    assert_alive(&mut server);
}

/// Parsing takes memory in proportion to the statement, with a small factor: sqlparser alone
/// took 6 GB for 50 MB of whitespace and 7 GB for a 10 MB select list. Each probe's peak
/// (measured from the resident size before it to the peak after it, an overestimate once an
/// earlier probe peaked higher) stays under `RSS_GROWTH_MAX`, the session goes on, and
/// afterwards less than `RSS_KEPT_MAX` more than before stays resident.
#[test]
fn parser_memory_is_proportional_to_the_statement() {
    const MIB: u64 = 1 << 20;
    const RSS_GROWTH_MAX: u64 = 512 * MIB;
    const RSS_KEPT_MAX: u64 = 64 * MIB;
    let server = TestServer::start(&[]);
    let pid = server.child.id();
    let mut client = RawClient::trusted(server.port);
    let probes: [(&str, String, Option<&str>); 4] = [
        ("50 MB of whitespace", format!("SELECT{}1", " ".repeat(50_000_000)), None),
        (
            "a 10 MB select list",
            format!("SELECT {}", vec!["1"; 5_000_000].join(",")),
            Some("54011"),
        ),
        (
            "an 8 MB IN list",
            format!("SELECT 1 IN ({})", vec!["1"; 4_000_000].join(",")),
            Some("54000"),
        ),
        (
            "a 2 MB IN list (under the token limit)",
            format!("SELECT 1 IN ({})", vec!["1"; 400_000].join(",")),
            None,
        ),
    ];
    for (name, sql, expected) in probes {
        let before = status_bytes(pid, "VmRSS:");
        let messages = client.simple(&sql);
        let growth = peak_rss_bytes(pid).saturating_sub(before);
        match expected {
            None => {
                assert!(first_error(&messages).is_none(), "{name}: {:?}", first_error(&messages));
                let row = messages.iter().find(|message| message.kind == b'D').expect("a row");
                assert!(row.body.ends_with(b"1") || row.body.ends_with(b"t"), "{name}: {row:?}");
            }
            Some(code) => {
                let error = first_error(&messages).unwrap_or_else(|| panic!("{name}: no error"));
                assert_eq!(error.code, code, "{name}: {error:?}");
            }
        }
        assert!(growth < RSS_GROWTH_MAX, "{name}: peak RSS grew by {} MiB", growth >> 20);
        assert!(first_error(&client.simple("SELECT 1")).is_none(), "{name}: session unusable");
        // The memory goes back to the system once the statement is over.
        let kept = status_bytes(pid, "VmRSS:").saturating_sub(before);
        println!("{name}: peak RSS growth {} MiB, kept {} MiB", growth >> 20, kept >> 20);
        assert!(kept < RSS_KEPT_MAX, "{name}: {} MiB still resident afterwards", kept >> 20);
    }
}
