//! Streamed results: a statement runs on the connection's executor thread and its rows
//! come to the connection's async side in batches through a bounded channel, which writes
//! them to the socket as they arrive.
//!
//! The executor is push-based and synchronous, and the socket belongs to the connection's
//! single-threaded runtime: a row sink cannot write to the socket from inside the executor
//! without stopping the runtime that drives it. So the statement runs on a second thread
//! (one per connection, started at its first statement, kept for its life) and hands
//! encoded DataRow batches over:
//!
//! ```text
//!   executor thread                          connection thread (async)
//!   session.execute_streaming ──► WireSink ──► channel (BATCHES_QUEUED_MAX) ──► socket
//!                                 (64 KiB batches)   blocks when full    writes; blocks
//!                                                                         on a slow client
//! ```
//!
//! A client that stops reading blocks the socket write, the channel fills and the
//! executor blocks in `WireSink::row`: a result holds at most about
//! (BATCHES_QUEUED_MAX + 2) x BATCH_BYTES in the server, whatever its size.

use std::sync::mpsc as job_channel;
use std::sync::Arc;

use parking_lot::Mutex;
use pgwire::api::results::{DataRowEncoder, FieldInfo};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::CopyData;
use pgwire::messages::data::DataRow;
use tierdb_sql::{
    BlockState, CopyFormat, Datum, Output, OutputColumn, RowSink, Session, SqlError, SqlType,
};
use tokio::sync::mpsc;

use crate::wire;

/// Encoded rows are handed over in batches of about this many bytes.
pub const BATCH_BYTES: usize = 64 << 10;
/// Batches waiting between the executor thread and the socket writer.
const BATCHES_QUEUED_MAX: usize = 2;
/// The executor thread's stack: as deep as a connection thread's (plans recurse).
const EXECUTOR_STACK_BYTES: usize = crate::config::CONNECTION_STACK_BYTES;

/// What the executor thread reports, in order.
pub enum Event {
    /// A streamed query's result columns (RowDescription), before its rows.
    Columns(Arc<Vec<FieldInfo>>),
    /// Rows of the streamed query, encoded.
    Rows(Vec<DataRow>),
    /// COPY TO STDOUT starts (CopyOutResponse): its column count and format.
    CopyOut(usize, CopyFormat),
    /// Lines of COPY TO STDOUT's data, one CopyData message each (as PostgreSQL sends).
    CopyData(Vec<CopyData>),
    /// A statement finished, with the session's block state after it.
    Finished(Result<Output, SqlError>, BlockState),
    /// The job is over (nothing follows). Missing when the job panicked.
    Done,
}

type Job = Box<dyn FnOnce() + Send>;

/// A connection's executor thread, started at its first statement.
#[derive(Default)]
pub struct Executor {
    jobs: Mutex<Option<job_channel::Sender<Job>>>,
}

impl Executor {
    /// Runs `job` with the session on the executor thread, its rows going to a `WireSink`
    /// whose results format is `binary`; returns the receiving end of its events.
    pub fn start(
        &self,
        session: &Arc<Mutex<Session>>,
        binary: Box<dyn Fn(usize) -> bool + Send>,
        job: impl FnOnce(&mut Session, &mut WireSink) + Send + 'static,
    ) -> PgWireResult<mpsc::Receiver<Event>> {
        let (sender, receiver) = mpsc::channel(BATCHES_QUEUED_MAX);
        let session = Arc::clone(session);
        self.submit(Box::new(move || {
            let mut sink = WireSink::new(sender, binary);
            job(&mut session.lock(), &mut sink);
            // Nobody listens any more when the client went away: nothing to report.
            let _ = sink.events.blocking_send(Event::Done);
        }))?;
        Ok(receiver)
    }

    fn submit(&self, job: Job) -> PgWireResult<()> {
        let mut jobs = self.jobs.lock();
        let job = match jobs.as_ref() {
            Some(sender) => match sender.send(job) {
                Ok(()) => return Ok(()),
                // The thread is gone (it cannot end while a sender lives; defensive).
                Err(job_channel::SendError(job)) => job,
            },
            None => job,
        };
        let (sender, receiver) = job_channel::channel::<Job>();
        std::thread::Builder::new()
            .name("tierdb-executor".into())
            .stack_size(EXECUTOR_STACK_BYTES)
            .spawn(move || run_jobs(&receiver))
            .map_err(PgWireError::IoError)?;
        sender.send(job).map_err(|_| executor_gone())?;
        *jobs = Some(sender);
        Ok(())
    }
}

/// The executor thread's loop, until the connection drops its sender. A panicking job
/// ends without `Event::Done`; the connection reports it and closes. A job that used
/// `RELEASE_AFTER_CPU` of this thread's CPU time (a large sort, join or result: its memory
/// was allocated here, not on the connection's thread) is followed by a release of what
/// this thread holds free, as a long message is on the connection's thread.
fn run_jobs(jobs: &job_channel::Receiver<Job>) {
    while let Ok(job) = jobs.recv() {
        let cpu_started = crate::memory::thread_cpu_time();
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
            tracing::error!("a statement panicked on a connection's executor thread");
        }
        crate::memory::release_after_busy_work(cpu_started);
    }
}

fn executor_gone() -> PgWireError {
    crate::auth::fatal_error(SqlError::new(
        "XX000",
        "internal error: the connection was terminated",
    ))
}

/// The FATAL error for a job that ended without `Event::Done` (it panicked).
pub fn job_panicked() -> PgWireError {
    tracing::error!("a connection's statement panicked; the connection is closed");
    executor_gone()
}

/// Encodes a row's values in their fields' formats.
pub fn encode_row(
    encoder: &mut DataRowEncoder,
    row: &[Datum],
    types: &[SqlType],
    formats: &[bool],
) -> Result<DataRow, SqlError> {
    debug_assert_eq!(row.len(), types.len());
    for (index, datum) in row.iter().enumerate() {
        let encoded = wire::encode(datum, &types[index], formats[index])?;
        encoder.encode_field(&encoded).map_err(|error| {
            SqlError::new("XX000", format!("internal error: cannot encode a value: {error}"))
        })?;
    }
    Ok(encoder.take_row())
}

/// The result being streamed: its encoder and its columns' types and formats.
struct Streaming {
    encoder: DataRowEncoder,
    types: Vec<SqlType>,
    formats: Vec<bool>,
}

/// A `RowSink` that encodes rows to DataRows and hands them over in batches.
pub struct WireSink {
    events: mpsc::Sender<Event>,
    binary: Box<dyn Fn(usize) -> bool + Send>,
    streaming: Option<Streaming>,
    batch: Vec<DataRow>,
    copy_batch: Vec<CopyData>,
    batch_bytes: usize,
}

impl WireSink {
    fn new(events: mpsc::Sender<Event>, binary: Box<dyn Fn(usize) -> bool + Send>) -> WireSink {
        WireSink {
            events,
            binary,
            streaming: None,
            batch: Vec::new(),
            copy_batch: Vec::new(),
            batch_bytes: 0,
        }
    }

    /// Hands an event to the socket writer, waiting while its queue is full.
    fn send(&self, event: Event) -> Result<(), SqlError> {
        self.events
            .blocking_send(event)
            .map_err(|_| SqlError::new("08006", "connection to client lost"))
    }

    /// Hands over the rows or COPY lines gathered so far (one of them is empty).
    fn send_batch(&mut self) -> Result<(), SqlError> {
        debug_assert!(self.batch.is_empty() || self.copy_batch.is_empty());
        self.batch_bytes = 0;
        if !self.batch.is_empty() {
            let rows = std::mem::take(&mut self.batch);
            return self.send(Event::Rows(rows));
        }
        if !self.copy_batch.is_empty() {
            let lines = std::mem::take(&mut self.copy_batch);
            return self.send(Event::CopyData(lines));
        }
        Ok(())
    }

    /// Counts a row's or line's bytes into the batch, handing it over when full.
    fn added(&mut self, bytes: usize) -> Result<(), SqlError> {
        self.batch_bytes += bytes;
        if self.batch_bytes >= BATCH_BYTES {
            self.send_batch()?;
        }
        Ok(())
    }
}

impl RowSink for WireSink {
    fn columns(&mut self, columns: &[OutputColumn]) -> Result<(), SqlError> {
        debug_assert!(self.streaming.is_none(), "a query's columns come once");
        let fields = Arc::new(wire::fields(columns, &*self.binary));
        let types = columns.iter().map(|column| column.ty.clone()).collect();
        let formats = (0..columns.len()).map(|index| (self.binary)(index)).collect();
        let encoder = DataRowEncoder::new(Arc::clone(&fields));
        self.streaming = Some(Streaming { encoder, types, formats });
        self.send(Event::Columns(fields))
    }

    fn row(&mut self, row: Vec<Datum>) -> Result<(), SqlError> {
        let streaming = self.streaming.as_mut().expect("columns come before rows");
        let encoded =
            encode_row(&mut streaming.encoder, &row, &streaming.types, &streaming.formats)?;
        let bytes = encoded.data.len();
        self.batch.push(encoded);
        self.added(bytes)
    }

    fn copy_out(&mut self, columns: usize, format: CopyFormat) -> Result<(), SqlError> {
        self.send(Event::CopyOut(columns, format))
    }

    fn copy_data(&mut self, line: Vec<u8>) -> Result<(), SqlError> {
        let bytes = line.len();
        self.copy_batch.push(CopyData::new(line.into()));
        self.added(bytes)
    }

    fn finished(&mut self, outcome: Result<Output, SqlError>, state: BlockState) {
        self.streaming = None;
        // The rows sent first, then the outcome; the client being gone ends both.
        let _ = self.send_batch().and_then(|()| self.send(Event::Finished(outcome, state)));
    }
}
