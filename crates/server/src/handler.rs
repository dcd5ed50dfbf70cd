//! One client connection: pgwire's handler traits (startup, simple and extended query, COPY,
//! cancel) over a `tierdb_sql::Session`.
//!
//! Engine calls block (latches, fsync, object-store reads); each connection runs on a
//! thread of its own (server.rs), so statements execute inline on it, as a PostgreSQL
//! backend process does. A cancel request sets the session's cancel flag, which the
//! executor checks between pages of rows (57014).

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use futures::sink::Sink;
use futures::SinkExt;
use parking_lot::Mutex;
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
    ServerParameterProvider, StartupHandler,
};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::SimpleQueryHandler;
use pgwire::api::results::{DescribeResponse, Response};
use pgwire::api::store::PortalStore;
use pgwire::api::{
    ClientInfo, ClientPortalStore, PgWireConnectionState, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator, Type, METADATA_DATABASE, METADATA_USER,
};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::data::{FieldDescription, NoData, ParameterDescription, RowDescription};
use pgwire::messages::simplequery::Query;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tierdb_sql::{BlockState, Catalog, CommandTag, Output, Session, SqlError, StatementStats};

use crate::auth::{RoleVerifiers, ScramStartup};
use crate::hba::{self, Method, Rules};
use crate::results::{response, tag_of, user_error};
use crate::streaming::Executor;

mod extended;
pub use extended::Statement;

/// A connection's cancel key (secret bytes) and its session's cancel flag.
type CancelEntry = (Vec<u8>, Arc<AtomicBool>);

/// What every connection shares.
pub struct Shared {
    pub catalog: Arc<Catalog>,
    pub statistics: Arc<StatementStats>,
    /// Client authentication rules, checked at the startup packet.
    pub rules: Rules,
    /// The roles' SCRAM credentials.
    pub verifiers: Arc<RoleVerifiers>,
    pub max_connections: usize,
    /// Connections accepted but not yet authenticated may number this many at most; they
    /// do not count against max_connections (a silent socket must not lock clients out).
    pub max_startup_connections: usize,
    /// Sessions' default work_mem, in bytes.
    pub work_mem_bytes: u64,
    /// Sessions: connections that sent a startup packet, until they close. At most
    /// max_connections.
    pub connections: AtomicUsize,
    /// Connections accepted and not yet authenticated. At most max_startup_connections.
    pub startup_connections: AtomicUsize,
    /// Signalled when a connection leaves startup (authenticated or gone), for the accept
    /// loop waiting for a startup slot.
    startup_slot_freed: tokio::sync::Notify,
    /// (pid, secret key bytes) -> the session's cancel flag.
    cancels: Mutex<HashMap<i32, CancelEntry>>,
    pid_generator: RandomPidSecretKeyGenerator,
    /// The capacity runner's recent history, for `/dashboard` (design 015).
    pub history: crate::dashboard::History,
}

impl Shared {
    /// max_connections, lowered with elastic capacity to what max capacity's connection
    /// share holds (design 015); below that, connections make the controller grow.
    pub fn connection_limit(&self) -> usize {
        let status = self.catalog.engine().store().capacity().status();
        let share = status
            .connections_allowed()
            .map_or(usize::MAX, |allowed| usize::try_from(allowed).unwrap_or(usize::MAX));
        self.max_connections.min(share)
    }

    pub fn new(
        catalog: Arc<Catalog>,
        rules: Rules,
        verifiers: Arc<RoleVerifiers>,
        max_connections: usize,
        max_startup_connections: usize,
        work_mem_bytes: u64,
    ) -> Arc<Shared> {
        let statistics = Arc::clone(catalog.statement_stats());
        Arc::new(Shared {
            catalog,
            statistics,
            rules,
            verifiers,
            max_connections,
            max_startup_connections,
            work_mem_bytes,
            connections: AtomicUsize::new(0),
            startup_connections: AtomicUsize::new(0),
            startup_slot_freed: tokio::sync::Notify::new(),
            cancels: Mutex::new(HashMap::new()),
            pid_generator: RandomPidSecretKeyGenerator::default(),
            history: crate::dashboard::History::default(),
        })
    }
}

impl Shared {
    /// Waits until fewer than max_startup_connections connections are authenticating and
    /// takes a startup slot. The accept loop calls this before accepting: connections past
    /// the bound wait in the kernel's listen backlog, so a burst of clients is served in
    /// turn and silent sockets hold at most max_startup_connections threads, each for at
    /// most authentication_timeout.
    pub async fn take_startup_slot(&self) {
        let limit = self.max_startup_connections;
        loop {
            let taken = self
                .startup_connections
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                    (count < limit).then_some(count + 1)
                })
                .is_ok();
            if taken {
                return;
            }
            // notify_one keeps a permit when nobody waits, so a slot freed between the
            // check and this wait is not missed.
            self.startup_slot_freed.notified().await;
        }
    }

    fn release_startup_slot(&self) {
        let before = self.startup_connections.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(before > 0, "a startup slot released twice");
        self.startup_slot_freed.notify_one();
    }
}

fn secret_bytes(secret: &SecretKey) -> Vec<u8> {
    secret.to_bytes().to_vec()
}

/// Server parameters reported at startup (clients read server_version to pick features;
/// is_superuser and session_authorization are the connecting role's).
pub struct Parameters {
    catalog: Arc<Catalog>,
}

impl ServerParameterProvider for Parameters {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let user = client.metadata().get(METADATA_USER).cloned().unwrap_or_default();
        let superuser = self.catalog.role(&user).is_some_and(|role| role.superuser);
        let mut parameters = HashMap::new();
        parameters.insert("is_superuser".to_string(), if superuser { "on" } else { "off" }.into());
        // The client's TimeZone (checked when the startup packet came), else UTC.
        let metadata = client.metadata();
        let zone = metadata.iter().find(|(name, _)| name.eq_ignore_ascii_case("timezone"));
        let zone = zone.and_then(|(_, value)| tierdb_sql::time_zone_setting(value).ok());
        parameters.insert("TimeZone".to_string(), zone.unwrap_or_else(|| "UTC".into()));
        parameters.insert("session_authorization".to_string(), user);
        for (key, value) in [
            ("server_version", "15.0 (tierdb)"),
            ("server_encoding", "UTF8"),
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO, MDY"),
            ("IntervalStyle", "postgres"),
            ("integer_datetimes", "on"),
            ("standard_conforming_strings", "on"),
            ("application_name", ""),
            ("default_transaction_read_only", "off"),
            ("in_hot_standby", "off"),
        ] {
            parameters.insert(key.to_string(), value.to_string());
        }
        Some(parameters)
    }
}

/// A connection's handlers.
pub struct Connection {
    shared: Arc<Shared>,
    session: Arc<Mutex<Session>>,
    scram: ScramStartup<Parameters>,
    registered: AtomicBool,
    pid: Mutex<Option<i32>>,
    /// Holds one of max_connections' slots (from the startup packet on).
    holds_session_slot: AtomicBool,
    /// Still counted in startup_connections (until authenticated or closed).
    in_startup: AtomicBool,
    /// Set by the startup handler once authentication completed; the connection loop
    /// accepts queries only after it (not on pgwire's state alone).
    authenticated: AtomicBool,
    /// The method the first matching rule chose, at the startup packet.
    method: std::sync::OnceLock<Method>,
    /// Runs statements whose results stream (streaming.rs).
    executor: Executor,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if self.holds_session_slot.load(Ordering::Acquire) {
            self.shared.connections.fetch_sub(1, Ordering::AcqRel);
        }
        if self.in_startup.load(Ordering::Acquire) {
            self.shared.release_startup_slot();
        }
        if let Some(pid) = *self.pid.lock() {
            self.shared.cancels.lock().remove(&pid);
        }
        // Roll back an open transaction (on the connection's own thread).
        self.session.lock().terminate();
    }
}

impl Connection {
    /// A connection just accepted, holding the startup slot the accept loop took for it
    /// (`Shared::take_startup_slot`).
    pub fn new(shared: Arc<Shared>) -> Arc<Connection> {
        let mut session = Session::new(
            Arc::clone(&shared.catalog),
            Arc::clone(&shared.statistics),
            "tierdb",
            "tierdb",
            0,
        );
        if let Err(error) =
            session.set_default("work_mem", &format!("{}kB", shared.work_mem_bytes / 1024))
        {
            tracing::warn!(%error, "configured work_mem refused; using the default");
        }
        let parameters = Arc::new(Parameters { catalog: Arc::clone(&shared.catalog) });
        let scram = ScramStartup::new(parameters, Arc::clone(&shared.verifiers));
        Arc::new(Connection {
            shared,
            session: Arc::new(Mutex::new(session)),
            scram,
            registered: AtomicBool::new(false),
            pid: Mutex::new(None),
            holds_session_slot: AtomicBool::new(false),
            in_startup: AtomicBool::new(true),
            authenticated: AtomicBool::new(false),
            method: std::sync::OnceLock::new(),
            executor: Executor::default(),
        })
    }

    /// Takes one of max_connections' slots for this connection's session (at its startup
    /// packet); false when all are taken (53300).
    pub fn reserve_session(&self) -> bool {
        if self.holds_session_slot.load(Ordering::Acquire) {
            return true;
        }
        let limit = self.shared.connection_limit();
        let reserved = self
            .shared
            .connections
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                (count < limit).then_some(count + 1)
            })
            .is_ok();
        self.holds_session_slot.store(reserved, Ordering::Release);
        reserved
    }

    /// Whether the startup handler completed authentication.
    pub fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Acquire)
    }

    /// A COPY FROM STDIN broken off (an error or a stray message): its statement fails.
    pub fn abort_copy(&self) {
        self.session.lock().copy_in_abort();
    }

    /// Authentication finished: the connection no longer counts as starting up.
    pub fn leave_startup(&self) {
        debug_assert!(self.is_authenticated());
        debug_assert!(self.holds_session_slot.load(Ordering::Acquire));
        if self.in_startup.swap(false, Ordering::AcqRel) {
            self.shared.release_startup_slot();
        }
    }

    /// The idle timeout in force for the session's state, with the FATAL error that ends the
    /// connection when it expires: idle_in_transaction_session_timeout inside a transaction
    /// block (25P03), idle_session_timeout outside one (57P05). None when it is 0.
    pub fn idle_timeout(&self) -> Option<(std::time::Duration, crate::frontend::Violation)> {
        let session = self.session.lock();
        let (name, sqlstate, message) = if session.state() == BlockState::Idle {
            ("idle_session_timeout", "57P05", "terminating connection due to idle-session timeout")
        } else {
            (
                "idle_in_transaction_session_timeout",
                "25P03",
                "terminating connection due to idle-in-transaction timeout",
            )
        };
        let milliseconds = session.timeout_ms(name);
        (milliseconds > 0).then(|| {
            let violation = crate::frontend::Violation { sqlstate, message: message.into() };
            (std::time::Duration::from_millis(milliseconds), violation)
        })
    }

    /// Runs `body` with the session. Each connection has a thread of its own (see
    /// server.rs), so blocking engine work runs inline: no hand-off between threads per
    /// statement, which cost more than a point select itself.
    async fn with_session<T: Send + 'static>(
        &self,
        body: impl FnOnce(&mut Session) -> T + Send + 'static,
    ) -> T {
        body(&mut self.session.lock())
    }

    /// Sends the warnings the session's last statements left (NoticeResponse), before
    /// their completion where the result goes out whole.
    async fn send_warnings<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let warnings = self.session.lock().take_warnings();
        for warning in warnings {
            // Class 00 (successful completion) is a NOTICE, as PostgreSQL's ereport(NOTICE)
            // without an error code (pgvector's "ivfflat index created with little data").
            let severity = if warning.sqlstate.starts_with("00") { "NOTICE" } else { "WARNING" };
            let info = pgwire::error::ErrorInfo::new(
                severity.to_string(),
                warning.sqlstate.to_string(),
                warning.message,
            );
            client.feed(PgWireBackendMessage::NoticeResponse(info.into())).await?;
        }
        Ok(())
    }

    /// PostgreSQL's ParameterStatus when a statement changed TimeZone (GUC_REPORT), so
    /// drivers that read the zone (JDBC) follow it.
    async fn report_time_zone<C>(&self, client: &mut C, before: &str) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let now = self.session.lock().time_zone();
        if now != before {
            let status = pgwire::messages::startup::ParameterStatus::new("TimeZone".into(), now);
            client.send(PgWireBackendMessage::ParameterStatus(status)).await?;
        }
        Ok(())
    }

    /// Registers the connection's cancel key and names the session after the client's
    /// user and database (once).
    fn register<C: ClientInfo>(&self, client: &C) {
        if self.registered.swap(true, Ordering::AcqRel) {
            return;
        }
        let (pid, secret) = client.pid_and_secret_key();
        let mut session = self.session.lock();
        if let Some(user) = client.metadata().get(METADATA_USER) {
            session.set_user(user);
        }
        session.database = client
            .metadata()
            .get(METADATA_DATABASE)
            .cloned()
            .unwrap_or_else(|| session.user.clone());
        session.backend_pid = pid;
        self.shared
            .cancels
            .lock()
            .insert(pid, (secret_bytes(&secret), Arc::clone(&session.cancel)));
        *self.pid.lock() = Some(pid);
    }
}

#[async_trait]
impl SimpleQueryHandler for Connection {
    /// Runs the query string on the executor thread and sends each statement's rows as
    /// they are produced (results.rs), in place of pgwire's default, which collects every
    /// statement's whole result first (`do_query`, kept for the trait).
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let zone_before = self.session.lock().time_zone();
        let outcome: PgWireResult<()> = async {
            if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
                return Err(PgWireError::NotReadyForQuery);
            }
            if query.query.chars().all(|c| c == ';' || c.is_whitespace()) {
                return self._on_query(client, query).await;
            }
            // A small result (a point read, an aggregate, DML without RETURNING, BEGIN, SET ...)
            // runs here and goes out whole: the executor thread's hand-off would cost more
            // than the statement (measured: point selects at half the rate).
            if self.session.lock().simple_result_is_small(&query.query) {
                return self._on_query(client, query).await;
            }
            self.register(client);
            client.set_state(PgWireConnectionState::QueryInProgress);
            let sql = query.query;
            let events =
                self.executor.start(&self.session, Box::new(|_| false), move |session, sink| {
                    session.execute_streaming(&sql, sink)
                })?;
            crate::results::simple_query(client, events).await?;
            // Late (after the statements' completions), but not lost.
            self.send_warnings(client).await?;
            client.flush().await?;
            Ok(())
        }
        .await;
        outcome?;
        self.report_time_zone(client, &zone_before).await
    }

    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.register(client);
        let sql = query.to_string();
        let (outputs, state) = self
            .with_session(move |session| {
                let outputs = session.execute(&sql);
                let state = session.state();
                (outputs, state)
            })
            .await;
        self.send_warnings(client).await?;
        let mut responses = Vec::with_capacity(outputs.len());
        for output in outputs {
            match output {
                Ok(Output::CopyIn { statement, columns }) => {
                    responses.push(response(
                        Output::CopyIn { statement, columns },
                        state,
                        &|_| false,
                    )?);
                    break;
                }
                Ok(output) => responses.push(response(output, state, &|_| false)?),
                Err(error) => {
                    let info = match user_error(error) {
                        PgWireError::UserError(info) => info,
                        _ => unreachable!("user_error makes user errors"),
                    };
                    responses.push(Response::Error(info));
                    break;
                }
            }
        }
        Ok(responses)
    }
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, _client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // Parsed and inserted as it arrives: the session holds one chunk at most.
        self.session.lock().copy_in_data(&copy_data.data).map_err(user_error)
    }

    /// The client gave up the COPY (PostgreSQL: 57014, and the transaction block fails).
    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.session.lock().copy_in_abort();
        user_error(SqlError::new("57014", format!("COPY from stdin failed: {}", fail.message)))
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let outcome = self.with_session(move |session| session.copy_in_end()).await;
        let rows = outcome.map_err(user_error)?;
        let tag = tag_of(CommandTag::Copy, rows)?;
        client.send(PgWireBackendMessage::CommandComplete(tag.into())).await?;
        Ok(())
    }
}

#[async_trait]
impl CancelHandler for Connection {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let cancels = self.shared.cancels.lock();
        if let Some((secret, flag)) = cancels.get(&request.pid) {
            if *secret == secret_bytes(&request.secret_key) {
                flag.store(true, Ordering::Relaxed);
            }
        }
    }
}

#[async_trait]
impl StartupHandler for Connection {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            let method = self.choose_method(client, startup)?;
            self.apply_startup_options(startup)?;
            if self.method.set(method).is_err() {
                return Err(crate::auth::fatal_error(SqlError::new(
                    "08P01",
                    "duplicate startup packet",
                )));
            }
            if method == Method::Trust {
                let user = startup.parameters.get("user").map_or("", String::as_str);
                if let Some(refusal) = crate::auth::login_refusal(&self.shared.catalog, user) {
                    return Err(crate::auth::fatal_error(refusal));
                }
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                let (pid, secret) = self.shared.pid_generator.generate(client);
                client.set_pid_and_secret_key(pid, secret);
                let parameters = Parameters { catalog: Arc::clone(&self.shared.catalog) };
                finish_authentication(client, &parameters).await?;
                self.authenticated.store(true, Ordering::Release);
                return Ok(());
            }
        }
        match self.method.get() {
            Some(Method::ScramSha256) => {
                self.scram.on_startup(client, message).await.map_err(|error| match error {
                    PgWireError::InvalidPassword(_) => crate::auth::password_failed(
                        client.metadata().get(METADATA_USER).map_or("", String::as_str),
                    ),
                    other => other,
                })?;
                // The SASL handler finishes authentication itself (AuthenticationOk, then
                // ReadyForQuery) after a verified client-final message.
                if matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
                    self.authenticated.store(true, Ordering::Release);
                }
                Ok(())
            }
            // Only password messages follow the startup packet, and only for SCRAM.
            _ => Err(crate::auth::fatal_error(SqlError::new(
                "08P01",
                "unexpected message during authentication",
            ))),
        }
    }
}

impl Connection {
    /// A named statement DEALLOCATE or DISCARD ALL ended is gone, as in PostgreSQL (26000),
    /// though pgwire's store still holds it: it is dropped there too.
    fn check_statement_exists<C>(&self, client: &mut C, name: Option<&str>) -> PgWireResult<()>
    where
        C: ClientPortalStore,
        C::PortalStore: PortalStore<Statement = Statement>,
    {
        let Some(name) = name.filter(|name| !name.is_empty()) else { return Ok(()) };
        if self.session.lock().has_named_statement(name) {
            return Ok(());
        }
        client.portal_store().rm_statement(name);
        Err(user_error(SqlError::new(
            "26000",
            format!("prepared statement \"{name}\" does not exist"),
        )))
    }

    /// The startup packet's `options` (`-c name=value`, libpq's PGOPTIONS), applied to the
    /// session as the user named there; a bad one refuses the connection (FATAL), as in
    /// PostgreSQL.
    fn apply_startup_options(
        &self,
        startup: &pgwire::messages::startup::Startup,
    ) -> PgWireResult<()> {
        let mut session = self.session.lock();
        // A client's TimeZone (JDBC and others send it): the session's, and RESET's.
        if let Some(zone) = startup_time_zone(startup) {
            session.set_default("timezone", zone).map_err(crate::auth::fatal_error)?;
        }
        let Some(options) = startup.parameters.get("options") else { return Ok(()) };
        if let Some(user) = startup.parameters.get("user") {
            session.set_user(user);
        }
        session.apply_startup_options(options).map_err(crate::auth::fatal_error)
    }

    /// The method of the first rule matching the client, or the FATAL 28000 refusal (no
    /// matching rule, a reject rule, no user name).
    fn choose_method<C: ClientInfo>(
        &self,
        client: &C,
        startup: &pgwire::messages::startup::Startup,
    ) -> PgWireResult<Method> {
        let refuse = |message: String| crate::auth::fatal_error(SqlError::new("28000", message));
        let Some(user) = startup.parameters.get("user").filter(|user| !user.is_empty()) else {
            return Err(refuse("no PostgreSQL user name specified in startup packet".into()));
        };
        // As in PostgreSQL, the database defaults to the user name (absent or empty).
        let database = startup
            .parameters
            .get("database")
            .filter(|database| !database.is_empty())
            .unwrap_or(user);
        let facts = hba::Client {
            address: client.socket_addr().ip(),
            tls: client.is_secure(),
            database,
            user,
        };
        hba::decide(&self.shared.rules, &facts).map_err(refuse)
    }
}

/// The TimeZone a startup packet names (the parameter's name in any case).
fn startup_time_zone(startup: &pgwire::messages::startup::Startup) -> Option<&str> {
    let mut parameters = startup.parameters.iter();
    let found = parameters.find(|(name, _)| name.eq_ignore_ascii_case("timezone"));
    found.map(|(_, value)| value.as_str())
}

/// Queues a Describe reply: ParameterDescription for a statement, then RowDescription, or
/// NoData when there are no result columns (as PostgreSQL answers for INSERT and the like).
async fn feed_describe<C, R>(client: &mut C, response: &R) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    R: DescribeResponse,
{
    if let Some(types) = response.parameters() {
        let oids = types.iter().map(Type::oid).collect();
        client
            .feed(PgWireBackendMessage::ParameterDescription(ParameterDescription::new(oids)))
            .await?;
    }
    let fields = response.fields();
    if fields.is_empty() {
        client.feed(PgWireBackendMessage::NoData(NoData::new())).await?;
    } else {
        let fields = fields.iter().map(FieldDescription::from).collect();
        client.feed(PgWireBackendMessage::RowDescription(RowDescription::new(fields))).await?;
    }
    Ok(())
}
