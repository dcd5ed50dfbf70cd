//! A raw PostgreSQL protocol client for adversarial tests: it sends exactly the bytes a test
//! builds (including broken ones) and reads the server's messages one by one.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// How long a test waits for one message before calling the server hung.
pub const READ_TIMEOUT: Duration = Duration::from_secs(20);

pub struct RawClient {
    pub socket: TcpStream,
}

/// One backend message: its type byte and body.
#[derive(Debug)]
pub struct Message {
    pub kind: u8,
    pub body: Vec<u8>,
}

/// An ErrorResponse's fields.
#[derive(Debug)]
pub struct ServerError {
    pub severity: String,
    pub code: String,
    pub message: String,
}

impl Message {
    pub fn error(&self) -> Option<ServerError> {
        if self.kind != b'E' {
            return None;
        }
        let mut error =
            ServerError { severity: String::new(), code: String::new(), message: String::new() };
        for field in self.body.split(|&byte| byte == 0).filter(|field| !field.is_empty()) {
            let value = String::from_utf8_lossy(&field[1..]).into_owned();
            match field[0] {
                b'S' => error.severity = value,
                b'C' => error.code = value,
                b'M' => error.message = value,
                _ => {}
            }
        }
        Some(error)
    }
}

/// A typed frontend message.
pub fn typed(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut message = vec![kind];
    let length = i32::try_from(body.len() + 4).expect("message fits");
    message.extend_from_slice(&length.to_be_bytes());
    message.extend_from_slice(body);
    message
}

/// A zero-terminated string.
pub fn cstring(text: &[u8]) -> Vec<u8> {
    let mut bytes = text.to_vec();
    bytes.push(0);
    bytes
}

/// A protocol 3.0 startup packet for user and database `tierdb`.
pub fn startup_packet() -> Vec<u8> {
    startup_packet_for("tierdb", "tierdb")
}

/// A protocol 3.0 startup packet for `user` and `database`.
pub fn startup_packet_for(user: &str, database: &str) -> Vec<u8> {
    startup_packet_with(&["user", user, "database", database])
}

/// A protocol 3.0 startup packet with these parameter names and values, in turn.
pub fn startup_packet_with(parameters: &[&str]) -> Vec<u8> {
    let mut body = 196_608i32.to_be_bytes().to_vec();
    for field in parameters {
        body.extend(cstring(field.as_bytes()));
    }
    body.push(0);
    let mut packet = i32::try_from(body.len() + 4).expect("fits").to_be_bytes().to_vec();
    packet.extend(body);
    packet
}

pub fn query(sql: &[u8]) -> Vec<u8> {
    typed(b'Q', &cstring(sql))
}

pub fn parse(name: &str, sql: &[u8], types: &[i32]) -> Vec<u8> {
    let mut body = cstring(name.as_bytes());
    body.extend(cstring(sql));
    body.extend_from_slice(&i16::try_from(types.len()).expect("fits").to_be_bytes());
    for oid in types {
        body.extend_from_slice(&oid.to_be_bytes());
    }
    typed(b'P', &body)
}

/// Bind with explicit format codes and raw values (None = NULL, Some(length, bytes) lets a
/// test send a length that disagrees with the bytes).
pub fn bind(
    statement: &str,
    formats: &[i16],
    values: &[Option<(i32, Vec<u8>)>],
    result_formats: &[i16],
) -> Vec<u8> {
    let mut body = cstring(b"");
    body.extend(cstring(statement.as_bytes()));
    let count = |n: usize| i16::try_from(n).expect("fits").to_be_bytes();
    body.extend_from_slice(&count(formats.len()));
    for format in formats {
        body.extend_from_slice(&format.to_be_bytes());
    }
    body.extend_from_slice(&count(values.len()));
    for value in values {
        match value {
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            Some((length, bytes)) => {
                body.extend_from_slice(&length.to_be_bytes());
                body.extend_from_slice(bytes);
            }
        }
    }
    body.extend_from_slice(&count(result_formats.len()));
    for format in result_formats {
        body.extend_from_slice(&format.to_be_bytes());
    }
    typed(b'B', &body)
}

pub fn execute() -> Vec<u8> {
    let mut body = cstring(b"");
    body.extend_from_slice(&0i32.to_be_bytes());
    typed(b'E', &body)
}

pub fn sync() -> Vec<u8> {
    typed(b'S', &[])
}

impl RawClient {
    pub fn connect(port: u16) -> RawClient {
        let socket = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        socket.set_read_timeout(Some(READ_TIMEOUT)).expect("timeout");
        RawClient { socket }
    }

    /// Connects and completes a trusted startup (through ReadyForQuery).
    pub fn trusted(port: u16) -> RawClient {
        let mut client = RawClient::connect(port);
        client.send(&startup_packet());
        client.until_ready();
        client
    }

    pub fn send(&mut self, bytes: &[u8]) {
        // The server may already have closed the connection: a failed write is for the
        // reads that follow to report.
        let _ = self.socket.write_all(bytes);
    }

    /// The next message, or None when the server closed the connection.
    pub fn read(&mut self) -> Option<Message> {
        let mut header = [0u8; 5];
        if self.socket.read_exact(&mut header).is_err() {
            return None;
        }
        let length = i32::from_be_bytes(header[1..].try_into().expect("four bytes"));
        let mut body = vec![0u8; usize::try_from(length - 4).expect("sane length")];
        self.socket.read_exact(&mut body).ok()?;
        Some(Message { kind: header[0], body })
    }

    /// Reads through ReadyForQuery; returns every message before it.
    pub fn until_ready(&mut self) -> Vec<Message> {
        let mut messages = Vec::new();
        loop {
            let message = self.read().expect("server answered before ReadyForQuery");
            if message.kind == b'Z' {
                return messages;
            }
            messages.push(message);
        }
    }

    /// Reads until the server closes the connection; returns every message it sent.
    pub fn until_closed(&mut self) -> Vec<Message> {
        let started = Instant::now();
        let mut messages = Vec::new();
        while let Some(message) = self.read() {
            messages.push(message);
            assert!(started.elapsed() < READ_TIMEOUT, "the server kept the connection open");
        }
        messages
    }

    /// Runs one simple query and returns its messages (through ReadyForQuery).
    pub fn simple(&mut self, sql: &str) -> Vec<Message> {
        self.send(&query(sql.as_bytes()));
        self.until_ready()
    }
}

/// The first ErrorResponse among messages.
pub fn first_error(messages: &[Message]) -> Option<ServerError> {
    messages.iter().find_map(Message::error)
}

/// Asserts that the messages hold no CommandComplete or DataRow: nothing was executed.
pub fn assert_nothing_executed(messages: &[Message]) {
    for message in messages {
        assert!(
            !matches!(message.kind, b'C' | b'D' | b'T'),
            "a statement ran before authentication: {message:?}"
        );
    }
}

/// A byte count from a process's /proc status (`VmRSS:`, `VmHWM:`).
pub fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kilobytes: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} line"));
    kilobytes * 1024
}
