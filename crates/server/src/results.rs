//! Statement outcomes to wire messages: the pgwire response of an output, and the
//! senders of streamed results (simple protocol: every statement of the string in turn;
//! extended protocol: one portal's rows as a stream read from the executor thread).

use std::fmt::Debug;
use std::sync::Arc;

use futures::sink::Sink;
use futures::{stream, SinkExt, Stream, StreamExt};
use pgwire::api::query::{send_execution_response, send_query_response, send_ready_for_query};
use pgwire::api::results::{CopyResponse, DataRowEncoder, QueryResponse, Response, Tag};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyOutResponse};
use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};
use pgwire::messages::response::EmptyQueryResponse;
use pgwire::messages::PgWireBackendMessage;
use tierdb_sql::{BlockState, CommandTag, CopyFormat, Output, SqlError, SqlType};
use tokio::sync::mpsc;

use crate::streaming::{encode_row, job_panicked, Event};
use crate::wire;

pub fn user_error(error: SqlError) -> PgWireError {
    let mut info = ErrorInfo::new("ERROR".to_string(), error.sqlstate.to_string(), error.message);
    if let Some(position) = error.position {
        info.position = Some(position.to_string());
    }
    PgWireError::UserError(Box::new(info))
}

/// The wire tag of a command: INSERT carries OID 0 and its row count, the other counting
/// commands their row count.
pub(crate) fn tag_of(tag: CommandTag, rows: u64) -> PgWireResult<Tag> {
    if !tag.counts_rows() {
        return Ok(Tag::new(tag.name()));
    }
    let rows = row_count(rows)?;
    Ok(match tag {
        CommandTag::Insert => Tag::new(tag.name()).with_oid(0).with_rows(rows),
        _ => Tag::new(tag.name()).with_rows(rows),
    })
}

/// A row count as pgwire holds it: counts of rows a statement touched fit in memory sizes.
fn row_count(rows: u64) -> PgWireResult<usize> {
    usize::try_from(rows).map_err(|_| user_error(SqlError::out_of_range("row count")))
}

/// Turns a statement's output into a pgwire response; `binary(i)` says whether result
/// column i goes out in binary.
pub(crate) fn response(
    output: Output,
    state: BlockState,
    binary: &dyn Fn(usize) -> bool,
) -> PgWireResult<Response> {
    Ok(match output {
        Output::Rows { columns, rows, tag } => {
            let fields = Arc::new(wire::fields(&columns, binary));
            let types: Vec<SqlType> = columns.iter().map(|column| column.ty.clone()).collect();
            let formats: Vec<bool> = (0..columns.len()).map(binary).collect();
            let mut encoder = DataRowEncoder::new(Arc::clone(&fields));
            let mut data_rows = Vec::with_capacity(rows.len());
            for row in &rows {
                let encoded =
                    encode_row(&mut encoder, row, &types, &formats).map_err(user_error)?;
                data_rows.push(Ok(encoded));
            }
            let mut response = QueryResponse::new(fields, stream::iter(data_rows));
            // INSERT/UPDATE/DELETE ... RETURNING keep their own command tag; pgwire appends
            // the row count.
            if tag != CommandTag::Select {
                response.set_command_tag(if tag == CommandTag::Insert {
                    "INSERT 0"
                } else {
                    tag.name()
                });
            }
            Response::Query(response)
        }
        Output::Command { tag, rows } => {
            let is_end = matches!(tag, CommandTag::Commit | CommandTag::Rollback);
            if tag == CommandTag::Begin
                || (tag == CommandTag::Rollback && state == BlockState::InBlock)
            {
                Response::TransactionStart(Tag::new(tag.name()))
            } else if is_end && state == BlockState::Idle {
                Response::TransactionEnd(Tag::new(tag.name()))
            } else {
                Response::Execution(tag_of(tag, rows)?)
            }
        }
        Output::CopyIn { statement, columns } => {
            Response::CopyIn(copy_response(statement.options.format, columns, stream::empty()))
        }
        Output::CopyOut { data, columns, format, .. } => {
            let chunks: Vec<_> = if format == CopyFormat::Binary {
                // Binary data has no lines: one message.
                vec![Ok(CopyData::new(data.into()))]
            } else {
                data.split_inclusive(|&byte| byte == b'\n')
                    .map(|line| Ok(CopyData::new(bytes::Bytes::copy_from_slice(line))))
                    .collect()
            };
            Response::CopyOut(copy_response(format, columns, stream::iter(chunks)))
        }
        Output::Empty => Response::EmptyQuery,
    })
}

/// Sends a simple-protocol query string's results as the executor thread reports them,
/// then ReadyForQuery (unless a COPY FROM STDIN started).
pub async fn simple_query<C>(client: &mut C, mut events: mpsc::Receiver<Event>) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let mut status = client.transaction_status();
    // After COPY FROM STDIN the string's later statements are not answered (the client
    // sends data next); their events are read to the end all the same.
    let mut copying = false;
    let mut copying_out = false;
    let mut done = false;
    while let Some(event) = events.recv().await {
        match event {
            Event::Done => {
                done = true;
                break;
            }
            _ if copying => {}
            Event::Columns(fields) => {
                let fields = fields.iter().map(FieldDescription::from).collect();
                let description = RowDescription::new(fields);
                client.feed(PgWireBackendMessage::RowDescription(description)).await?;
            }
            Event::Rows(rows) => {
                for row in rows {
                    client.feed(PgWireBackendMessage::DataRow(row)).await?;
                }
                client.flush().await?;
            }
            Event::CopyOut(columns, format) => {
                let format = copy_format_code(format);
                let formats = vec![i16::from(format); columns];
                let columns = i16::try_from(columns)
                    .map_err(|_| user_error(SqlError::out_of_range("COPY column count")))?;
                let response = CopyOutResponse::new(format, columns, formats);
                client.feed(PgWireBackendMessage::CopyOutResponse(response)).await?;
                copying_out = true;
            }
            Event::CopyData(lines) => {
                for line in lines {
                    client.feed(PgWireBackendMessage::CopyData(line)).await?;
                }
                client.flush().await?;
            }
            Event::Finished(outcome, state) => {
                // A COPY TO that completed ends its data; one that failed ends with the error.
                if std::mem::take(&mut copying_out) && outcome.is_ok() {
                    client.feed(PgWireBackendMessage::CopyDone(CopyDone::new())).await?;
                }
                copying = send_outcome(client, outcome, state, &mut status).await?;
            }
        }
    }
    if !done {
        return Err(job_panicked());
    }
    if !copying {
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        send_ready_for_query(client, status).await?;
    }
    Ok(())
}

/// Sends one statement's outcome in the simple protocol; true when a COPY FROM STDIN
/// started.
async fn send_outcome<C>(
    client: &mut C,
    outcome: Result<Output, SqlError>,
    state: BlockState,
    status: &mut pgwire::messages::response::TransactionStatus,
) -> PgWireResult<bool>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let output = match outcome {
        Ok(output) => output,
        Err(error) => {
            let info = error_info(error);
            client.feed(PgWireBackendMessage::ErrorResponse(info.into())).await?;
            *status = status.to_error_state();
            return Ok(false);
        }
    };
    match response(output, state, &|_| false)? {
        Response::EmptyQuery => {
            client.feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())).await?
        }
        Response::Query(results) => send_query_response(client, results, true).await?,
        Response::Execution(tag) => send_execution_response(client, tag).await?,
        Response::TransactionStart(tag) => {
            send_execution_response(client, tag).await?;
            *status = status.to_in_transaction_state();
        }
        Response::TransactionEnd(tag) => {
            send_execution_response(client, tag).await?;
            *status = status.to_idle_state();
        }
        Response::Error(info) => {
            client.feed(PgWireBackendMessage::ErrorResponse((*info).into())).await?;
            *status = status.to_error_state();
        }
        Response::CopyIn(copy) | Response::CopyBoth(copy) => {
            pgwire::api::copy::send_copy_in_response(client, copy).await?;
            client.set_state(PgWireConnectionState::CopyInProgress(false));
            return Ok(true);
        }
        Response::CopyOut(copy) => send_copy_out_response(client, copy).await?,
    }
    Ok(false)
}

fn error_info(error: SqlError) -> ErrorInfo {
    match user_error(error) {
        PgWireError::UserError(info) => *info,
        _ => unreachable!("user_error makes user errors"),
    }
}

/// An extended-protocol Execute's response from the executor thread's events: a streamed
/// query's rows as a stream read from the thread (pgwire writes them as they come), or
/// the statement's whole output.
pub async fn extended_response(
    mut events: mpsc::Receiver<Event>,
    binary: &(dyn Fn(usize) -> bool + Sync),
) -> PgWireResult<Response> {
    match events.recv().await {
        Some(Event::Columns(fields)) => {
            let rows = batches(events).flat_map(|batch| flatten(batch, Batch::rows));
            Ok(Response::Query(QueryResponse::new(fields, rows)))
        }
        Some(Event::CopyOut(columns, format)) => {
            let lines = batches(events).flat_map(|batch| flatten(batch, Batch::lines));
            Ok(Response::CopyOut(copy_response(format, columns, lines)))
        }
        Some(Event::Finished(outcome, state)) => {
            if !matches!(events.recv().await, Some(Event::Done)) {
                return Err(job_panicked());
            }
            response(outcome.map_err(user_error)?, state, binary)
        }
        _ => Err(job_panicked()),
    }
}

/// The overall format code of CopyInResponse and CopyOutResponse: 1 binary, 0 text.
fn copy_format_code(format: CopyFormat) -> i8 {
    i8::from(format == CopyFormat::Binary)
}

/// A COPY response in `format` over `data`, which holds everything the client gets:
/// `CopyResponse::new` would append a second binary trailer to the one the SQL layer
/// wrote.
fn copy_response<S>(format: CopyFormat, columns: usize, data: S) -> CopyResponse
where
    S: Stream<Item = PgWireResult<CopyData>> + Send + 'static,
{
    // Made as text (no trailer appended), then marked with its real format.
    let mut response = CopyResponse::new(0, columns, data);
    response.format = copy_format_code(format);
    response
}

/// Sends a COPY TO's CopyOutResponse, data, CopyDone and command tag, as pgwire's
/// `send_copy_out_response` does but counting rows only: a binary COPY's last message, its
/// trailer (with the header before it when there was no row), is not a row.
pub async fn send_copy_out_response<C>(client: &mut C, copy: CopyResponse) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let formats = copy.column_formats();
    let CopyResponse { format, columns, mut data_stream, .. } = copy;
    let columns = i16::try_from(columns)
        .map_err(|_| user_error(SqlError::out_of_range("COPY column count")))?;
    let response = CopyOutResponse::new(format, columns, formats);
    client.feed(PgWireBackendMessage::CopyOutResponse(response)).await?;
    let mut rows = 0usize;
    while let Some(data) = data_stream.next().await {
        let data = data?;
        let bytes = data.data.as_ref();
        let framing = format == 1 && bytes.ends_with(&[0xFF, 0xFF]) && {
            // A tuple ends with a field's bytes, which may be FF FF: the trailer alone, or
            // the 19-byte header and the trailer, is what is not a row.
            bytes.len() == 2 || (bytes.len() == 21 && bytes.starts_with(b"PGCOPY\n"))
        };
        rows += usize::from(!bytes.is_empty() && !framing);
        client.feed(PgWireBackendMessage::CopyData(data)).await?;
    }
    client.feed(PgWireBackendMessage::CopyDone(CopyDone::new())).await?;
    let tag = Tag::new("COPY").with_rows(rows);
    client.feed(PgWireBackendMessage::CommandComplete(tag.into())).await?;
    Ok(())
}

/// What the executor thread hands over in one event.
enum Batch {
    Rows(Vec<DataRow>),
    Lines(Vec<CopyData>),
}

impl Batch {
    fn rows(self) -> Vec<DataRow> {
        match self {
            Batch::Rows(rows) => rows,
            Batch::Lines(_) => Vec::new(),
        }
    }

    fn lines(self) -> Vec<CopyData> {
        match self {
            Batch::Lines(lines) => lines,
            Batch::Rows(_) => Vec::new(),
        }
    }
}

/// The batches of a streamed statement, then its error if it failed after some.
fn batches(
    events: mpsc::Receiver<Event>,
) -> impl Stream<Item = PgWireResult<Batch>> + Send + 'static {
    stream::unfold(Some(events), |events| async move {
        let mut events = events?;
        match events.recv().await {
            Some(Event::Rows(rows)) => Some((Ok(Batch::Rows(rows)), Some(events))),
            Some(Event::CopyData(lines)) => Some((Ok(Batch::Lines(lines)), Some(events))),
            // The outcome of a statement that streamed is its row count: pgwire counts.
            Some(Event::Finished(Ok(_), _)) => None,
            Some(Event::Finished(Err(error), _)) => Some((Err(user_error(error)), None)),
            _ => Some((Err(job_panicked()), None)),
        }
    })
}

/// A batch's items (picked by `items`) one by one, or its error.
fn flatten<T: Send + 'static>(
    batch: PgWireResult<Batch>,
    items: fn(Batch) -> Vec<T>,
) -> impl Stream<Item = PgWireResult<T>> + Send {
    match batch {
        Ok(batch) => stream::iter(items(batch).into_iter().map(Ok)).left_stream(),
        Err(error) => stream::once(async move { Err(error) }).right_stream(),
    }
}

/// A portal's response whose rows wait in a row store: pgwire keeps the stream in the
/// portal and reads max_rows rows of it per Execute.
pub fn kept_response(rows: tierdb_sql::KeptRows, format: &pgwire::api::portal::Format) -> Response {
    let fields = Arc::new(wire::fields(&rows.columns, &|index| format.is_binary(index)));
    let types: Vec<SqlType> = rows.columns.iter().map(|column| column.ty.clone()).collect();
    let formats: Vec<bool> = (0..rows.columns.len()).map(|index| format.is_binary(index)).collect();
    let encoder = DataRowEncoder::new(Arc::clone(&fields));
    let state = Some((rows, encoder, types, formats));
    let data_rows = stream::unfold(state, |state| async move {
        let (mut rows, mut encoder, types, formats) = state?;
        match rows.next_row() {
            Ok(Some(row)) => {
                let encoded = encode_row(&mut encoder, &row, &types, &formats).map_err(user_error);
                Some((encoded, Some((rows, encoder, types, formats))))
            }
            Ok(None) => None,
            Err(error) => Some((Err(user_error(error)), None)),
        }
    });
    Response::Query(QueryResponse::new(fields, data_rows))
}
