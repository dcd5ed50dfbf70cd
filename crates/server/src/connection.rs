//! One client connection's message loop, in place of pgwire's `process_socket`.
//!
//! pgwire's loop executes whatever arrives once a startup error has been answered (its
//! errors during startup are not FATAL, and an error sets the state to ReadyForQuery), lets a
//! silent socket hold a thread for 60 s, and decodes messages with functions that panic on
//! short input. This loop keeps pgwire's handlers but owns the reading:
//!
//! ```text
//!   accept ──► negotiate TLS (bounded by the authentication deadline)
//!      │
//!      ▼
//!   Startup ──startup packet──► reserve a session slot (53300 FATAL when full)
//!      │                           │
//!      │                           ▼
//!      │                     Authentication ──'p' messages──► (pgwire SASL)
//!      │                           │                              │ AuthenticationOk
//!      ▼                           ▼                              ▼
//!   any failure or the deadline: FATAL, close           Ready ──► queries, extended, COPY
//!                                                                 │ idle timeouts: FATAL
//! ```
//!
//! Every message is cut out and its layout checked by frontend.rs before pgwire decodes
//! it; in Startup and Authentication nothing but the startup packet, a cancel request and
//! password messages is accepted, and every error there is FATAL and closes the connection
//! (PostgreSQL's behaviour). A panic while handling a message ends this connection only,
//! with FATAL XX000; the session's transaction is rolled back when the connection drops.

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, SinkExt};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::{DecodeContext, PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{
    negotiate_tls, process_error, process_message, MaybeTls, PgWireMessageServerCodec,
};
use pgwire::tokio::TlsAcceptor;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;
use tokio_util::codec::Framed;

use crate::frontend::{self, Frame, Phase, Violation};
use crate::handler::{Connection, Statement};

type Socket = Framed<MaybeTls, PgWireMessageServerCodec<Statement>>;

/// Bytes read from the socket at a time.
const READ_CHUNK_BYTES: usize = 16 << 10;
/// The largest read buffer an idle connection keeps (a large message grows it).
const INBOX_KEPT_BYTES_MAX: usize = 1 << 20;

/// What bounds one connection.
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// From accept to the end of authentication (PostgreSQL's authentication_timeout).
    pub authentication_timeout: Duration,
    /// The largest Query, Parse, Bind or CopyData message.
    pub message_bytes_max: usize,
}

/// How waiting for the next message ended.
enum Wait {
    Data,
    Closed,
    /// The deadline passed; the FATAL error to send, if any (none before the startup
    /// packet: PostgreSQL closes such a connection without a word).
    TimedOut(Option<Violation>),
}

/// Serves one accepted socket until the client leaves or the connection fails.
pub async fn serve(
    tcp: tokio::net::TcpStream,
    tls: Option<TlsAcceptor>,
    connection: Arc<Connection>,
    limits: ConnectionLimits,
) {
    let deadline = Instant::now() + limits.authentication_timeout;
    let negotiated = tokio::time::timeout_at(deadline, negotiate_tls::<Statement>(tcp, tls)).await;
    let Ok(Ok(Some(mut socket))) = negotiated else { return };
    // Bytes read while looking for an SSLRequest (the startup packet) stay in pgwire's
    // buffer: take them, and read everything else ourselves.
    let mut inbox = socket.read_buffer_mut().split();
    if socket.is_secure() && !inbox.is_empty() {
        // Sent in plain text after the SSLRequest, before the handshake: anyone on the path
        // could have appended them (PostgreSQL's CVE-2021-23214).
        let violation = Violation {
            sqlstate: "08P01",
            message: "received unencrypted data after SSL request".into(),
        };
        return fatal(&mut socket, violation).await;
    }
    let mut phase = Phase::Startup;
    // ReadyForQuery was the last thing sent: the client owes the next command, and the idle
    // timeouts run (PostgreSQL arms them there only: not mid-COPY, not before a Sync).
    let mut at_ready = false;
    loop {
        let frame = match frontend::next_frame(&mut inbox, phase, limits.message_bytes_max) {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                let idle = phase == Phase::Ready && at_ready;
                match wait_for_data(&mut socket, &mut inbox, idle, phase, deadline, &connection)
                    .await
                {
                    Wait::Data => continue,
                    Wait::Closed => return,
                    Wait::TimedOut(Some(violation)) => return fatal(&mut socket, violation).await,
                    Wait::TimedOut(None) => return,
                }
            }
            Err(violation) => return fatal(&mut socket, violation).await,
        };
        let (type_byte, bytes) = match frame {
            Frame::Valid(bytes) => (bytes[0], bytes),
            Frame::Invalid { violation, .. } if phase != Phase::Ready => {
                return fatal(&mut socket, violation).await;
            }
            Frame::Invalid { type_byte, violation } => {
                if !reject(&mut socket, type_byte, &violation, &connection).await {
                    return;
                }
                at_ready = answered_with_ready(&socket, type_byte);
                continue;
            }
        };
        match handle(&mut socket, bytes, phase, &connection).await {
            Handled::Continue => {}
            Handled::Close => return,
        }
        if inbox.is_empty() && inbox.capacity() > INBOX_KEPT_BYTES_MAX {
            // A large message grew the buffer: do not keep it for the life of the connection.
            inbox = bytes::BytesMut::with_capacity(READ_CHUNK_BYTES);
        }
        let Some(next) = next_phase(&socket, phase, &connection) else {
            let violation = Violation {
                sqlstate: "XX000",
                message: "internal error: ready for queries without authentication".into(),
            };
            return fatal(&mut socket, violation).await;
        };
        // Authentication just completed, or the message was answered with ReadyForQuery.
        at_ready = next == Phase::Ready
            && (phase != Phase::Ready || answered_with_ready(&socket, type_byte));
        phase = next;
    }
}

/// Whether handling a message of this type left the connection at ReadyForQuery: a Query,
/// a Sync, or the end of a simple-protocol COPY.
fn answered_with_ready(socket: &Socket, type_byte: u8) -> bool {
    matches!(socket.state(), PgWireConnectionState::ReadyForQuery)
        && matches!(type_byte, b'Q' | b'S' | b'c' | b'f')
}

/// Answers a well-framed message with a bad body (after authentication) as PostgreSQL
/// does; false when the connection is gone.
async fn reject(
    socket: &mut Socket,
    type_byte: u8,
    violation: &Violation,
    connection: &Connection,
) -> bool {
    let error = user_error("ERROR", violation);
    let extended = match socket.state() {
        // After an error in the extended protocol everything up to Sync is discarded.
        PgWireConnectionState::AwaitingSync if type_byte != b'S' => return true,
        PgWireConnectionState::CopyInProgress(extended) => {
            connection.abort_copy();
            extended
        }
        _ => frontend::is_extended(type_byte),
    };
    process_error(socket, error, extended).await.is_ok()
}

enum Handled {
    Continue,
    Close,
}

/// Decodes one checked message with pgwire and runs it through pgwire's dispatch and our
/// handlers, turning errors into ErrorResponses (FATAL before authentication).
async fn handle(
    socket: &mut Socket,
    mut bytes: bytes::BytesMut,
    phase: Phase,
    connection: &Arc<Connection>,
) -> Handled {
    let message = match decode(socket, &mut bytes, phase) {
        Ok(message) => message,
        Err(violation) => {
            fatal(socket, violation).await;
            return Handled::Close;
        }
    };
    match &message {
        PgWireFrontendMessage::Terminate(_) => return Handled::Close,
        PgWireFrontendMessage::Startup(_) if !connection.reserve_session() => {
            let violation =
                Violation { sqlstate: "53300", message: "sorry, too many clients already".into() };
            fatal(socket, violation).await;
            return Handled::Close;
        }
        _ => {}
    }
    let is_cancel = matches!(message, PgWireFrontendMessage::CancelRequest(_));
    let (copying, extended) = match socket.state() {
        PgWireConnectionState::CopyInProgress(extended) => (true, extended),
        _ => (false, message.is_extended_query()),
    };
    let cpu_started = crate::memory::thread_cpu_time();
    // Connection implements every handler trait (Handlers only wraps it for pgwire).
    let outcome = std::panic::AssertUnwindSafe(process_message(
        message,
        socket,
        Arc::clone(connection),
        Arc::clone(connection),
        Arc::clone(connection),
        Arc::clone(connection),
        Arc::clone(connection),
    ))
    .catch_unwind()
    .await;
    crate::memory::release_after_busy_work(cpu_started);
    match outcome {
        Ok(Ok(())) if is_cancel => Handled::Close,
        Ok(Ok(())) => Handled::Continue,
        Ok(Err(error)) if phase != Phase::Ready || is_fatal(&error) => {
            let info: ErrorInfo = error.into();
            let violation = Violation { sqlstate: sqlstate_of(&info.code), message: info.message };
            fatal(socket, violation).await;
            Handled::Close
        }
        Ok(Err(error)) => {
            if copying {
                // A message that does not belong in a COPY (or a failed CopyData): the COPY
                // statement fails now, not when the next statement starts.
                connection.abort_copy();
            }
            match process_error(socket, error, extended).await {
                Ok(()) => Handled::Continue,
                Err(_) => Handled::Close,
            }
        }
        Err(_panic) => {
            tracing::error!("a connection's handler panicked; the connection is closed");
            let violation = Violation {
                sqlstate: "XX000",
                message: "internal error: the connection was terminated".into(),
            };
            fatal(socket, violation).await;
            Handled::Close
        }
    }
}

fn is_fatal(error: &PgWireError) -> bool {
    match error {
        PgWireError::UserError(info) => info.is_fatal(),
        _ => false,
    }
}

/// SQLSTATEs are static in our errors; pgwire's come as Strings. Keep the ones a refused
/// connection can carry (authentication, limits, and the startup packet's settings: a bad
/// TimeZone or `-c name=value` is 22023, 42704, 42501 or 55P02 as SET's) and map anything
/// else to a protocol violation, which is what pgwire's own errors are.
fn sqlstate_of(code: &str) -> &'static str {
    const KNOWN: [&str; 12] = [
        "28000", "28P01", "53300", "08P01", "0A000", "57P01", "XX000", "3D000", "22023", "42704",
        "42501", "55P02",
    ];
    KNOWN.iter().find(|known| **known == code).copied().unwrap_or("08P01")
}

/// Decodes a checked message with pgwire's decoder, on exactly its bytes.
fn decode(
    socket: &Socket,
    bytes: &mut bytes::BytesMut,
    phase: Phase,
) -> Result<PgWireFrontendMessage, Violation> {
    let mut context = DecodeContext::new(socket.protocol_version());
    context.awaiting_frontend_ssl = false;
    context.awaiting_frontend_startup = phase == Phase::Startup;
    match PgWireFrontendMessage::decode(bytes, &context) {
        Ok(Some(message)) => Ok(message),
        Ok(None) => Err(Violation {
            sqlstate: "08P01",
            message: "incomplete message after its layout was checked".into(),
        }),
        Err(error) => {
            let info: ErrorInfo = error.into();
            Err(Violation { sqlstate: "08P01", message: info.message })
        }
    }
}

/// Reads more bytes, bounded in time by the phase: the authentication deadline before
/// authentication, the session's idle timeouts after it (when `idle`: at ReadyForQuery).
async fn wait_for_data(
    socket: &mut Socket,
    inbox: &mut bytes::BytesMut,
    idle: bool,
    phase: Phase,
    authentication_deadline: Instant,
    connection: &Connection,
) -> Wait {
    // The deadline and the error its expiry sends, decided once for this wait.
    let (deadline, expired) = match phase {
        Phase::Startup => (Some(authentication_deadline), None),
        Phase::Authentication { .. } => {
            let violation = Violation {
                sqlstate: "57014",
                message: "canceling authentication due to timeout".into(),
            };
            (Some(authentication_deadline), Some(violation))
        }
        Phase::Ready if idle => match connection.idle_timeout() {
            Some((timeout, violation)) => (Some(Instant::now() + timeout), Some(violation)),
            None => (None, None),
        },
        Phase::Ready => (None, None),
    };
    inbox.reserve(READ_CHUNK_BYTES);
    let read = socket.get_mut().read_buf(inbox);
    let outcome = match deadline {
        Some(deadline) => match tokio::time::timeout_at(deadline, read).await {
            Ok(outcome) => outcome,
            Err(_) => return Wait::TimedOut(expired),
        },
        None => read.await,
    };
    match outcome {
        Ok(0) | Err(_) => Wait::Closed,
        Ok(_) => Wait::Data,
    }
}

/// The phase after a message, from pgwire's connection state; Ready only once our startup
/// handler saw authentication complete (None if pgwire's state says otherwise).
fn next_phase(socket: &Socket, phase: Phase, connection: &Connection) -> Option<Phase> {
    Some(match socket.state() {
        PgWireConnectionState::AwaitingSslRequest | PgWireConnectionState::AwaitingStartup => {
            Phase::Startup
        }
        PgWireConnectionState::AuthenticationInProgress => {
            Phase::Authentication { first_response: phase == Phase::Startup }
        }
        _ if !connection.is_authenticated() => return None,
        _ => {
            if phase != Phase::Ready {
                connection.leave_startup();
            }
            Phase::Ready
        }
    })
}

fn user_error(severity: &str, violation: &Violation) -> PgWireError {
    let info = ErrorInfo::new(
        severity.to_string(),
        violation.sqlstate.to_string(),
        violation.message.clone(),
    );
    PgWireError::UserError(Box::new(info))
}

/// Sends a FATAL ErrorResponse and closes the connection.
async fn fatal(socket: &mut Socket, violation: Violation) {
    tracing::debug!(sqlstate = violation.sqlstate, message = %violation.message, "connection ended");
    let info = ErrorInfo::new("FATAL".into(), violation.sqlstate.into(), violation.message);
    let _ = socket.send(PgWireBackendMessage::ErrorResponse(info.into())).await;
    let _ = socket.close().await;
}
