//! Frontend message framing and validation, before pgwire decodes anything.
//!
//! pgwire's decoders read message bodies with `Buf::get_*`, which panic on short input, keep
//! reading past a message's declared end into the next one, and replace invalid UTF-8 with
//! U+FFFD. So the connection loop (connection.rs) cuts each message out of the byte stream
//! here, checks its whole layout, and hands pgwire only the exact bytes of a message whose
//! layout is known to be good.
//!
//! Message layouts (protocol 3.0; all integers big-endian; `cstring` = bytes ending in 0):
//!
//! ```text
//! untyped  | length i32 (>= 8, <= 10,000, counts itself) | code i32 | ...
//!   startup  code 0x0003_0000 + minor | (cstring name, cstring value)* | 0
//!   cancel   code 80877102            | pid i32 | secret (4 to 256 bytes)
//!   ssl/gss  code 80877103 / 80877104 (answered before this module sees the stream)
//! typed    | type u8 | length i32 (>= 4, counts itself, not the type) | body
//!   'Q' Query      cstring query
//!   'P' Parse      cstring name | cstring query | n i16 | n x oid i32
//!   'B' Bind       cstring portal | cstring statement | f i16 | f x format i16
//!                  | p i16 | p x (length i32 (-1 = NULL) | bytes) | r i16 | r x format i16
//!   'E' Execute    cstring portal | max_rows i32
//!   'D' Describe   kind u8 ('S' or 'P') | cstring name
//!   'C' Close      kind u8 ('S' or 'P') | cstring name
//!   'S' Sync, 'H' Flush, 'X' Terminate, 'c' CopyDone: empty
//!   'd' CopyData   bytes
//!   'f' CopyFail   cstring message
//!   'p' password family: SASLInitialResponse (cstring mechanism | length i32 | bytes)
//!                  first, then SASLResponse (bytes)
//! ```
//!
//! Two kinds of failure, as in PostgreSQL: a broken frame (a bad length, an unknown message
//! type, a message not allowed before authentication) ends the connection with FATAL 08P01,
//! because nothing after it can be trusted to be a message boundary; a well-framed message
//! with a bad body is answered with ERROR (08P01 for the layout, 22021 for invalid UTF-8,
//! 22023 for a format code) and the session goes on.

use bytes::BytesMut;

/// The largest startup packet PostgreSQL accepts (MAX_STARTUP_PACKET_LENGTH).
pub const STARTUP_PACKET_BYTES_MAX: usize = 10_000;
/// A startup packet's smallest length: the length and the protocol code.
const STARTUP_PACKET_BYTES_MIN: usize = 8;
/// PostgreSQL's limit for messages that carry no data (PQ_SMALL_MESSAGE_LIMIT).
const SMALL_MESSAGE_BYTES_MAX: usize = 10_000;
const CANCEL_REQUEST_CODE: i32 = 80_877_102;
const PROTOCOL_MAJOR_3: i32 = 3 << 16;
/// Cancel keys: 4 bytes in protocol 3.0, up to 256 bytes from 3.2 on.
const CANCEL_SECRET_BYTES: std::ops::RangeInclusive<usize> = 4..=256;

/// Where the connection is: which messages may come next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Before the startup packet (untyped: startup or cancel request).
    Startup,
    /// Startup received, authentication exchange going on: only 'p' messages.
    /// `first_response` is true until the first 'p' (the SASLInitialResponse) arrived.
    Authentication { first_response: bool },
    /// Authenticated: queries, the extended protocol and COPY.
    Ready,
}

/// A protocol error: SQLSTATE and PostgreSQL's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub sqlstate: &'static str,
    pub message: String,
}

impl Violation {
    fn protocol(message: impl Into<String>) -> Violation {
        Violation { sqlstate: "08P01", message: message.into() }
    }
}

/// A message cut out of the stream.
#[derive(Debug)]
pub enum Frame {
    /// Layout checked: these are the exact bytes of one message, for pgwire to decode.
    Valid(BytesMut),
    /// A well-framed message whose body is wrong: answer with ERROR and go on. `type_byte`
    /// says whether it belonged to the extended protocol (skip to Sync) or not.
    Invalid { type_byte: u8, violation: Violation },
}

/// Cuts the next complete message off the front of `buffer`, or returns `Ok(None)` when
/// more bytes are needed. `Err` is a broken frame: the connection must end (FATAL).
/// Never reads past a message's declared length and never waits for more than
/// `message_bytes_max` bytes of one message.
pub fn next_frame(
    buffer: &mut BytesMut,
    phase: Phase,
    message_bytes_max: usize,
) -> Result<Option<Frame>, Violation> {
    match phase {
        Phase::Startup => next_startup_frame(buffer),
        Phase::Authentication { .. } | Phase::Ready => {
            next_typed_frame(buffer, phase, message_bytes_max)
        }
    }
}

fn read_length(bytes: &[u8]) -> i32 {
    i32::from_be_bytes(bytes[..4].try_into().expect("four bytes"))
}

fn next_startup_frame(buffer: &mut BytesMut) -> Result<Option<Frame>, Violation> {
    if buffer.len() < 4 {
        return Ok(None);
    }
    let length = usize::try_from(read_length(buffer));
    let Some(length) = length
        .ok()
        .filter(|length| (STARTUP_PACKET_BYTES_MIN..=STARTUP_PACKET_BYTES_MAX).contains(length))
    else {
        return Err(Violation::protocol("invalid length of startup packet"));
    };
    if buffer.len() < length {
        return Ok(None);
    }
    let packet = buffer.split_to(length);
    check_startup_packet(&packet)?;
    Ok(Some(Frame::Valid(packet)))
}

/// A startup packet's layout, or a cancel request's. Every failure here is FATAL.
fn check_startup_packet(packet: &[u8]) -> Result<(), Violation> {
    let code = read_length(&packet[4..]);
    if code == CANCEL_REQUEST_CODE {
        let secret_bytes = packet.len().saturating_sub(12);
        return if packet.len() >= 12 && CANCEL_SECRET_BYTES.contains(&secret_bytes) {
            Ok(())
        } else {
            Err(Violation::protocol("invalid length of cancel request packet"))
        };
    }
    if code >> 16 != PROTOCOL_MAJOR_3 >> 16 {
        let (major, minor) = (code >> 16, code & 0xffff);
        return Err(Violation {
            sqlstate: "0A000",
            message: format!(
                "unsupported frontend protocol {major}.{minor}: server supports 3.0 to 3.2"
            ),
        });
    }
    let body = &packet[8..];
    if body.last() != Some(&0) {
        return Err(Violation::protocol(
            "invalid startup packet layout: expected terminator as last byte",
        ));
    }
    let layout_error =
        || Violation::protocol("invalid startup packet layout: expected terminator as last byte");
    // Name and value strings each end in 0; one more 0 ends the list.
    let pairs = &body[..body.len() - 1];
    let strings = match pairs.split_last() {
        None => &pairs[..0],
        Some((0, strings)) => strings,
        Some(_) => return Err(layout_error()),
    };
    let mut has_user = false;
    let mut fields = strings.split(|&byte| byte == 0).filter(|_| !strings.is_empty());
    while let Some(name) = fields.next() {
        let value = fields.next().ok_or_else(layout_error)?;
        if name.is_empty() {
            // pgwire's decoder would take the empty name for the end of the list.
            return Err(layout_error());
        }
        if std::str::from_utf8(name).is_err() || std::str::from_utf8(value).is_err() {
            return Err(Violation::protocol("invalid byte sequence in startup packet"));
        }
        has_user |= name == b"user" && !value.is_empty();
    }
    if !has_user {
        return Err(Violation {
            sqlstate: "28000",
            message: "no PostgreSQL user name specified in startup packet".into(),
        });
    }
    Ok(())
}

/// The types a frontend may send once the startup packet is in, with whether the message
/// may be large (query text, parameters, COPY data) or must be small.
fn typed_message_is_large(type_byte: u8) -> Option<bool> {
    match type_byte {
        b'Q' | b'P' | b'B' | b'd' | b'F' => Some(true),
        // Password messages are small (pgwire refuses more than 10,000 bytes): before
        // authentication nobody may make the server wait for, or hold, a large one.
        b'p' | b'E' | b'D' | b'C' | b'S' | b'H' | b'X' | b'c' | b'f' => Some(false),
        _ => None,
    }
}

fn next_typed_frame(
    buffer: &mut BytesMut,
    phase: Phase,
    message_bytes_max: usize,
) -> Result<Option<Frame>, Violation> {
    let Some(&type_byte) = buffer.first() else { return Ok(None) };
    let Some(large) = typed_message_is_large(type_byte) else {
        return Err(Violation::protocol(format!("invalid frontend message type {type_byte}")));
    };
    if matches!(phase, Phase::Authentication { .. }) && type_byte != b'p' && type_byte != b'X' {
        return Err(Violation::protocol(format!(
            "expected password response, got message type {type_byte}"
        )));
    }
    if phase == Phase::Ready && type_byte == b'p' {
        return Err(Violation::protocol(format!("invalid frontend message type {type_byte}")));
    }
    if buffer.len() < 5 {
        return Ok(None);
    }
    let limit = if large { message_bytes_max } else { SMALL_MESSAGE_BYTES_MAX };
    let length = match usize::try_from(read_length(&buffer[1..])) {
        Ok(length) if (4..=limit).contains(&length) => length,
        _ => {
            return Err(Violation::protocol(format!(
                "invalid message length (type {}, limit {limit} bytes)",
                char::from(type_byte)
            )))
        }
    };
    if buffer.len() < length + 1 {
        // The buffer grows as the bytes arrive, not by the length the header claims.
        return Ok(None);
    }
    let message = buffer.split_to(length + 1);
    match check_body(type_byte, &message[5..], phase) {
        Ok(()) => Ok(Some(Frame::Valid(message))),
        Err(violation) => Ok(Some(Frame::Invalid { type_byte, violation })),
    }
}

/// Reads a message body front to back, failing as PostgreSQL's pq_getmsg* functions do.
struct Body<'a> {
    bytes: &'a [u8],
}

impl<'a> Body<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], Violation> {
        if count > self.bytes.len() {
            return Err(Violation::protocol("insufficient data left in message"));
        }
        let (taken, rest) = self.bytes.split_at(count);
        self.bytes = rest;
        Ok(taken)
    }

    fn u8(&mut self) -> Result<u8, Violation> {
        Ok(self.take(1)?[0])
    }

    fn i16(&mut self) -> Result<i16, Violation> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().expect("two bytes")))
    }

    fn i32(&mut self) -> Result<i32, Violation> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    /// A count (i16) of following items; negative counts are layout errors.
    fn count(&mut self) -> Result<usize, Violation> {
        usize::try_from(self.i16()?).map_err(|_| Violation::protocol("invalid message format"))
    }

    /// A zero-terminated string, which must be valid UTF-8 (22021 otherwise).
    fn cstring(&mut self) -> Result<&'a str, Violation> {
        let end = self
            .bytes
            .iter()
            .position(|&byte| byte == 0)
            .ok_or_else(|| Violation::protocol("invalid string in message"))?;
        let text = self.take(end + 1)?;
        utf8(&text[..end])
    }

    fn finish(&self) -> Result<(), Violation> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(Violation::protocol("invalid message format"))
        }
    }
}

/// Checks UTF-8 as PostgreSQL reports it: 22021 with the offending bytes in hex.
pub fn utf8(bytes: &[u8]) -> Result<&str, Violation> {
    std::str::from_utf8(bytes).map_err(|error| {
        let start = error.valid_up_to();
        let end = (start + error.error_len().unwrap_or(bytes.len() - start)).min(start + 4);
        let shown: Vec<String> =
            bytes[start..end].iter().map(|byte| format!("0x{byte:02x}")).collect();
        Violation {
            sqlstate: "22021",
            message: format!("invalid byte sequence for encoding \"UTF8\": {}", shown.join(" ")),
        }
    })
}

fn check_format_code(code: i16) -> Result<(), Violation> {
    if code == 0 || code == 1 {
        Ok(())
    } else {
        Err(Violation { sqlstate: "22023", message: format!("unsupported format code: {code}") })
    }
}

fn check_body(type_byte: u8, bytes: &[u8], phase: Phase) -> Result<(), Violation> {
    let mut body = Body { bytes };
    match type_byte {
        b'Q' | b'f' => {
            body.cstring()?;
        }
        b'P' => {
            body.cstring()?;
            body.cstring()?;
            let types = body.count()?;
            body.take(types * 4)?;
        }
        b'B' => check_bind(&mut body)?,
        b'E' => {
            body.cstring()?;
            body.i32()?;
        }
        b'D' | b'C' => {
            let kind = body.u8()?;
            if kind != b'S' && kind != b'P' {
                let command = if type_byte == b'D' { "DESCRIBE" } else { "CLOSE" };
                return Err(Violation::protocol(format!(
                    "invalid {command} message subtype {kind}"
                )));
            }
            body.cstring()?;
        }
        b'd' | b'F' => return Ok(()),
        b'p' if phase == (Phase::Authentication { first_response: true }) => {
            body.cstring()?;
            let length = body.i32()?;
            if length != -1 {
                let length = usize::try_from(length)
                    .map_err(|_| Violation::protocol("insufficient data left in message"))?;
                body.take(length)?;
            }
        }
        b'p' => return Ok(()),
        _ => {}
    }
    body.finish()
}

/// Bind: names, parameter formats (0, 1 or one per parameter), parameter values (length -1
/// for NULL, never another negative length), result formats; every format code 0 or 1.
fn check_bind(body: &mut Body) -> Result<(), Violation> {
    body.cstring()?;
    body.cstring()?;
    let formats = body.count()?;
    for _ in 0..formats {
        check_format_code(body.i16()?)?;
    }
    let parameters = body.count()?;
    if formats > 1 && formats != parameters {
        return Err(Violation::protocol(format!(
            "bind message has {formats} parameter formats but {parameters} parameters"
        )));
    }
    for _ in 0..parameters {
        let length = body.i32()?;
        if length != -1 {
            let length = usize::try_from(length)
                .map_err(|_| Violation::protocol("insufficient data left in message"))?;
            body.take(length)?;
        }
    }
    let results = body.count()?;
    for _ in 0..results {
        check_format_code(body.i16()?)?;
    }
    Ok(())
}

/// Whether a message type belongs to the extended protocol: after its error the server
/// skips messages until Sync, as PostgreSQL does. Sync itself is not: an error in it is
/// answered with ReadyForQuery at once.
pub fn is_extended(type_byte: u8) -> bool {
    matches!(type_byte, b'P' | b'B' | b'E' | b'D' | b'C' | b'H')
}
