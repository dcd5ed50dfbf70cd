//! The extended query protocol of a connection: Parse (prepare and bind the statement),
//! Bind (check it against the statement, decode the parameters), Describe, Execute (a
//! portal, streamed or run in place, with max_rows) and Close.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::sink::Sink;
use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::ExtendedQueryHandler;
use pgwire::api::results::{
    DescribePortalResponse, DescribeResponse, DescribeStatementResponse, FieldInfo, Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::Entry;
use pgwire::api::store::PortalStore;
use pgwire::api::DEFAULT_NAME;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::EmptyQueryResponse;
use pgwire::messages::PgWireBackendMessage;
use tierdb_sql::{Datum, Kept, Output, Prepared, RowSink, Session, SqlError, SqlType};

use crate::results::{response, user_error};
use crate::wire;

use super::{feed_describe, Connection};

/// Parses and binds statements for the extended protocol.
pub struct Parser {
    session: Arc<Mutex<Session>>,
}

pub type Statement = Arc<Mutex<Prepared>>;

#[async_trait]
impl QueryParser for Parser {
    type Statement = Statement;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let types: Vec<SqlType> = types
            .iter()
            .map(|ty| {
                ty.as_ref().and_then(|ty| SqlType::from_oid(ty.oid())).unwrap_or(SqlType::Unknown)
            })
            .collect();
        let mut session = self.session.lock();
        let prepared = match session.prepare(sql, &types) {
            Ok(prepared) => prepared,
            Err(error) => {
                // A statement that fails to parse or bind fails the transaction block too.
                session.note_error();
                return Err(user_error(error));
            }
        };
        Ok(Some(Arc::new(Mutex::new(prepared))))
    }

    fn get_parameter_types(&self, statement: &Statement) -> PgWireResult<Vec<Type>> {
        Ok(statement.lock().parameter_types.iter().map(wire::pg_type).collect())
    }

    fn get_result_schema(
        &self,
        statement: &Statement,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let columns = statement.lock().columns.clone();
        let binary = |index: usize| format.is_some_and(|format| format.is_binary(index));
        Ok(wire::fields(&columns, &binary))
    }
}

/// What PostgreSQL checks of a Bind against its statement (frontend.rs checked the layout):
/// one value per parameter, and no result format count other than 0, 1 or one per column.
fn check_bind(message: &Bind, name: &str, prepared: &Prepared) -> PgWireResult<()> {
    let (supplied, required) = (message.parameters.len(), prepared.parameter_types.len());
    if supplied != required {
        return Err(user_error(SqlError::new(
            "08P01",
            format!(
                "bind message supplies {supplied} parameters, but prepared statement \"{name}\" requires {required}"
            ),
        )));
    }
    let (formats, columns) = (message.result_column_format_codes.len(), prepared.columns.len());
    if formats > 1 && formats != columns {
        return Err(user_error(SqlError::new(
            "08P01",
            format!("bind message has {formats} result formats but query has {columns} columns"),
        )));
    }
    Ok(())
}

/// Decodes a portal's parameters (text or binary) into values of the statement's types.
fn decode_parameters(
    portal: &Portal<Statement>,
    types: &[SqlType],
) -> Result<Vec<Datum>, SqlError> {
    let mut values = Vec::with_capacity(portal.parameters.len());
    for (index, parameter) in portal.parameters.iter().enumerate() {
        let ty = types.get(index).cloned().unwrap_or(SqlType::Text);
        let value = match parameter {
            None => Datum::Null,
            Some(bytes) if portal.parameter_format.is_binary(index) => {
                wire::decode_binary(bytes, &ty)?
            }
            Some(bytes) => {
                let text = std::str::from_utf8(bytes).map_err(|_| {
                    SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\"")
                })?;
                tierdb_sql::parse_text(text, &ty)?
            }
        };
        values.push(value);
    }
    Ok(values)
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Statement;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        Arc::new(Parser { session: Arc::clone(&self.session) })
    }

    /// As pgwire's default, and a named statement joins the session's prepared statements
    /// (SQL's EXECUTE and DEALLOCATE reach it; a name SQL's PREPARE took is 42P05), as
    /// PostgreSQL keeps one namespace per session.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.clone().unwrap_or_else(|| DEFAULT_NAME.to_owned());
        let parser = self.query_parser();
        match StoredStatement::parse(client, &message, parser).await? {
            Some(statement) => {
                // The unnamed statement is not in the namespace: each Parse replaces it.
                let named = message.name.as_deref().unwrap_or_default();
                let registered = self
                    .session
                    .lock()
                    .register_protocol_statement(named, &statement.statement.lock());
                registered.map_err(user_error)?;
                client.portal_store().put_statement(Arc::new(statement));
            }
            None => client.portal_store().put_empty_statement(&name),
        }
        client.send(PgWireBackendMessage::ParseComplete(ParseComplete::new())).await?;
        Ok(())
    }

    /// As pgwire's default; a closed statement leaves the session's prepared statements.
    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                client.portal_store().rm_statement(name);
                self.session.lock().forget_protocol_statement(name);
            }
            TARGET_TYPE_BYTE_PORTAL => client.portal_store().rm_portal(name),
            _ => {}
        }
        client.send(PgWireBackendMessage::CloseComplete(CloseComplete::new())).await?;
        Ok(())
    }

    /// As pgwire's default, but BindComplete is queued (`feed`), not flushed: the client
    /// reads nothing before Sync, and a write per message costs a syscall and a wakeup.
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
        self.check_statement_exists(client, message.statement_name.as_deref())?;
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(statement)) => {
                check_bind(&message, statement_name, &statement.statement.lock())?;
                let portal = Portal::try_new(&message, statement)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) => {
                if !message.parameters.is_empty() {
                    return Err(user_error(SqlError::new(
                        "08P01",
                        "bind message supplies parameters, but the prepared statement requires 0",
                    )));
                }
                client.portal_store().put_empty_portal(portal_name);
            }
            None => return Err(PgWireError::StatementNotFound(statement_name.to_owned())),
        }
        client.feed(PgWireBackendMessage::BindComplete(BindComplete::new())).await?;
        Ok(())
    }

    /// As pgwire's default, but the reply (ParameterDescription, RowDescription or NoData) is
    /// queued until Sync like BindComplete: libpq sends Bind, Describe, Execute and Sync in
    /// one packet, and flushing here made every statement cost two writes and two wakeups.
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                self.check_statement_exists(client, message.name.as_deref())?;
                let response = match client.portal_store().get_statement(name) {
                    Some(Entry::Value(statement)) => {
                        self.do_describe_statement(client, &statement).await?
                    }
                    Some(Entry::Empty) => DescribeStatementResponse::no_data(),
                    None => return Err(PgWireError::StatementNotFound(name.to_owned())),
                };
                feed_describe(client, &response).await
            }
            TARGET_TYPE_BYTE_PORTAL => {
                let response = match client.portal_store().get_portal(name) {
                    Some(Entry::Value(portal)) => self.do_describe_portal(client, &portal).await?,
                    Some(Entry::Empty) => DescribePortalResponse::no_data(),
                    // A cursor is a portal too (psycopg describes a DECLAREd one by name).
                    None => match self.session.lock().cursor_columns(name) {
                        Some(columns) => {
                            DescribePortalResponse::new(wire::fields(&columns, &|_| false))
                        }
                        None => return Err(PgWireError::PortalNotFound(name.to_owned())),
                    },
                };
                feed_describe(client, &response).await
            }
            other => Err(PgWireError::InvalidTargetType(other)),
        }
    }

    /// As pgwire's default for complete executions (max_rows = 0), with every message queued
    /// until Sync flushes them together; partial fetches use the default path.
    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let zone_before = self.session.lock().time_zone();
        let outcome: PgWireResult<()> = async {
            let portal_name = message.name.as_deref().unwrap_or(DEFAULT_NAME).to_string();
            let portal = match client.portal_store().get_portal(&portal_name) {
                Some(Entry::Value(portal))
                    if message.max_rows == 0
                        && matches!(
                            *portal.state().lock().await,
                            PortalExecutionState::Initial
                        ) =>
                {
                    portal
                }
                _ => return self._on_execute(client, message).await,
            };
            if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
                return Err(PgWireError::NotReadyForQuery);
            }
            let mut status = client.transaction_status();
            client.set_state(PgWireConnectionState::QueryInProgress);
            let response = ExtendedQueryHandler::do_query(self, client, portal.as_ref(), 0).await?;
            match response {
                Response::Query(mut results) => {
                    let tag = results.command_tag().to_owned();
                    let mut rows = 0usize;
                    while let Some(row) = results.data_rows().next().await {
                        client.feed(PgWireBackendMessage::DataRow(row?)).await?;
                        rows += 1;
                    }
                    client
                        .feed(PgWireBackendMessage::CommandComplete(
                            Tag::new(&tag).with_rows(rows).into(),
                        ))
                        .await?;
                }
                Response::EmptyQuery => {
                    client
                        .feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
                        .await?
                }
                Response::Execution(tag) => {
                    client.feed(PgWireBackendMessage::CommandComplete(tag.into())).await?
                }
                Response::TransactionStart(tag) => {
                    client.feed(PgWireBackendMessage::CommandComplete(tag.into())).await?;
                    status = status.to_in_transaction_state();
                }
                Response::TransactionEnd(tag) => {
                    client.feed(PgWireBackendMessage::CommandComplete(tag.into())).await?;
                    status = status.to_idle_state();
                    client.portal_store().rm_portal(DEFAULT_NAME);
                }
                Response::Error(error) => {
                    client.feed(PgWireBackendMessage::ErrorResponse((*error).into())).await?;
                    status = status.to_error_state();
                }
                Response::CopyIn(copy) => {
                    client.set_state(PgWireConnectionState::CopyInProgress(true));
                    pgwire::api::copy::send_copy_in_response(client, copy).await?;
                }
                Response::CopyOut(copy) => {
                    crate::results::send_copy_out_response(client, copy).await?
                }
                Response::CopyBoth(copy) => {
                    client.set_state(PgWireConnectionState::CopyInProgress(true));
                    pgwire::api::copy::send_copy_both_response(client, copy).await?;
                }
            }
            if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
                client.set_state(PgWireConnectionState::ReadyForQuery);
                client.set_transaction_status(status);
            }
            Ok(())
        }
        .await;
        outcome?;
        self.report_time_zone(client, &zone_before).await
    }

    async fn do_describe_statement<C>(
        &self,
        _client: &mut C,
        target: &StoredStatement<Statement>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let prepared = target.statement.lock();
        let types = prepared.parameter_types.iter().map(wire::pg_type).collect();
        let fields = wire::fields(&prepared.columns, &|_| false);
        Ok(DescribeStatementResponse::new(types, fields))
    }

    async fn do_describe_portal<C>(
        &self,
        _client: &mut C,
        portal: &Portal<Statement>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let prepared = portal.statement.statement.lock();
        let format = &portal.result_column_format;
        let fields = wire::fields(&prepared.columns, &|index| format.is_binary(index));
        Ok(DescribePortalResponse::new(fields))
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Statement>,
        max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.register(client);
        let statement = Arc::clone(&portal.statement.statement);
        let types = statement.lock().parameter_types.clone();
        let params = match decode_parameters(portal, &types) {
            Ok(params) => params,
            Err(error) => {
                self.session.lock().note_error();
                return Err(user_error(error));
            }
        };
        let format = portal.result_column_format.clone();
        let small = {
            let session = self.session.lock();
            let prepared = statement.lock();
            session.prepared_result_is_small(&prepared)
        };
        if max_rows == 0 && small {
            // Small results run here and go out whole (see on_query).
            let (outcome, state) = self
                .with_session(move |session| {
                    let mut prepared = statement.lock();
                    (session.execute_prepared(&mut prepared, &params), session.state())
                })
                .await;
            self.send_warnings(client).await?;
            return match outcome {
                Ok(output) => response(output, state, &|index| format.is_binary(index)),
                Err(error) => Err(user_error(error)),
            };
        }
        if max_rows == 0 {
            // Runs to completion now: the rows stream to the client as they are produced.
            // A portal read max_rows at a time keeps its rows (below) until it is read.
            let binary = format.clone();
            let events = self.executor.start(
                &self.session,
                Box::new(move |index| binary.is_binary(index)),
                move |session, sink| {
                    let mut prepared = statement.lock();
                    let outcome =
                        session.execute_prepared_streaming(&mut prepared, &params, Some(sink));
                    sink.finished(outcome, session.state());
                },
            )?;
            return crate::results::extended_response(events, &|index| format.is_binary(index))
                .await;
        }
        // Read max_rows at a time: the rows wait in a row store (memory up to work_mem,
        // then the temp space) that pgwire keeps in the portal between Executes.
        let (outcome, state) = self
            .with_session(move |session| {
                let mut prepared = statement.lock();
                let outcome = session.execute_prepared_kept(&mut prepared, &params);
                (outcome, session.state())
            })
            .await;
        match outcome {
            Ok(Kept::Rows(rows)) => Ok(crate::results::kept_response(rows, &format)),
            Ok(Kept::Output(Output::CopyIn { statement, columns })) => {
                response(Output::CopyIn { statement, columns }, state, &|_| false)
            }
            Ok(Kept::Output(output)) => response(output, state, &|index| format.is_binary(index)),
            Err(error) => Err(user_error(error)),
        }
    }
}
