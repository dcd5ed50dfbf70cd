//! Who may log in (docs/design/010-roles-and-privileges.md): SCRAM-SHA-256 against the
//! connecting role's stored verifier, and the role checks of trust rules.
//!
//! A SCRAM exchange must not tell a client whether a role exists: for an unknown role or
//! one without a password, the exchange runs against a mock verifier whose salt is derived
//! from the cluster's random secret (stored once in the catalog) and the user name (as PostgreSQL's `scram_mock_salt`),
//! so that asking twice for one name shows the same salt, and it ends with the same 28P01
//! as a wrong password. As in PostgreSQL, a NOLOGIN role is authenticated against its real
//! verifier and refused after (FATAL 28000), so only its right password reveals it.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::sink::{Sink, SinkExt};
use pgwire::api::auth::mechanism::AuthMechanismFactory;
use pgwire::api::auth::sasl::scram::{ScramAuth, ScramSecret};
use pgwire::api::auth::sasl::SaslMechanisms;
use pgwire::api::auth::{
    AuthDriver, AuthOutcome, AuthSource, LoginInfo, Password, ServerParameterProvider,
};
use pgwire::api::{ClientInfo, METADATA_USER};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use ring::hmac;
use tierdb_sql::{Catalog, ScramVerifier, SqlError, MOCK_AUTH_SECRET};

/// Bytes of the cluster's secret behind mock salts.
const MOCK_SECRET_BYTES: usize = 32;
/// Bytes of a mock salt (PostgreSQL's SCRAM_DEFAULT_SALT_LEN).
const MOCK_SALT_BYTES: usize = 16;
/// The iteration count mock verifiers announce: that of verifiers tierdb makes.
const MOCK_ITERATIONS: usize = 4096;

/// SCRAM credentials of the catalog's roles.
pub struct RoleVerifiers {
    catalog: Arc<Catalog>,
    mock_secret: hmac::Key,
}

/// pgwire's AuthSource asks for Debug; no key material is shown.
impl std::fmt::Debug for RoleVerifiers {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("RoleVerifiers")
    }
}

impl RoleVerifiers {
    /// The catalog's roles, with mock salts from the cluster's stored secret (the same
    /// across restarts, so a restart does not tell unknown roles from known ones).
    pub fn new(catalog: Arc<Catalog>) -> tierdb_sql::Result<RoleVerifiers> {
        let secret = catalog.cluster_secret(MOCK_AUTH_SECRET, MOCK_SECRET_BYTES)?;
        Ok(RoleVerifiers { catalog, mock_secret: hmac::Key::new(hmac::HMAC_SHA256, &secret) })
    }

    /// The verifier of a role with a password (NOLOGIN roles too: refused after).
    fn verifier(&self, user: &str) -> Option<ScramVerifier> {
        let role = self.catalog.role(user)?;
        ScramVerifier::parse(role.verifier.as_deref()?)
    }

    /// A verifier nobody can answer, the same for every exchange naming `user`.
    fn mock(&self, user: &str) -> ScramSecret {
        let derive = |purpose: &str| {
            let message = format!("{purpose}\0{user}");
            hmac::sign(&self.mock_secret, message.as_bytes()).as_ref().to_vec()
        };
        let mut salt = derive("salt");
        salt.truncate(MOCK_SALT_BYTES);
        ScramSecret::Verifier {
            salt,
            iterations: MOCK_ITERATIONS,
            stored_key: derive("stored key"),
            server_key: derive("server key"),
        }
    }
}

#[async_trait]
impl AuthSource for RoleVerifiers {
    /// Not used: SCRAM asks for `get_scram_secret`, and no other method uses passwords.
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        Err(password_failed(login.user().unwrap_or_default()))
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().unwrap_or_default();
        let secret = match self.verifier(user) {
            Some(verifier) => ScramSecret::Verifier {
                salt: verifier.salt,
                iterations: usize::try_from(verifier.iterations)
                    .map_err(|_| password_failed(user))?,
                stored_key: verifier.stored_key,
                server_key: verifier.server_key,
            },
            None => self.mock(user),
        };
        Ok((secret, None))
    }
}

/// PostgreSQL's FATAL for a failed password (a wrong one, or an exchange against a mock).
pub fn password_failed(user: &str) -> PgWireError {
    fatal_error(SqlError::new(
        "28P01",
        format!("password authentication failed for user \"{user}\""),
    ))
}

/// SCRAM-SHA-256 startup: pgwire's SASLAuthStartupHandler, plus PostgreSQL's role check
/// after authentication (InitializeSessionUserId): a NOLOGIN role (or one dropped meanwhile)
/// that proved its password gets SCRAM's final message and AuthenticationOk, then FATAL
/// 28000, as PostgreSQL sends them.
pub(crate) struct ScramStartup<P> {
    driver: AuthDriver<Arc<P>>,
    mechanisms: SaslMechanisms,
    catalog: Arc<Catalog>,
}

impl<P: ServerParameterProvider> ScramStartup<P> {
    pub(crate) fn new(parameters: Arc<P>, verifiers: Arc<RoleVerifiers>) -> ScramStartup<P> {
        let catalog = Arc::clone(&verifiers.catalog);
        let scram = ScramAuth::new(verifiers as Arc<dyn AuthSource>);
        ScramStartup {
            driver: AuthDriver::new(parameters),
            mechanisms: SaslMechanisms::new(vec![Arc::new(scram)]),
            catalog,
        }
    }

    /// One startup message: the startup packet begins the exchange, password messages
    /// continue it; after the client is verified, the role check, then AuthenticationOk,
    /// parameters and ReadyForQuery.
    pub(crate) async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let outcome = match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                pgwire::api::auth::protocol_negotiation(client, startup).await?;
                pgwire::api::auth::save_startup_parameters_to_metadata(client, startup);
                self.driver.begin_authentication(client, self.mechanisms.create()).await?
            }
            PgWireFrontendMessage::PasswordMessageFamily(message) => {
                self.driver.advance_authentication(client, message).await?
            }
            _ => return Ok(()),
        };
        let AuthOutcome::Authenticated { final_message, .. } = outcome else { return Ok(()) };
        let user = client.metadata().get(METADATA_USER).cloned().unwrap_or_default();
        if let Some(refusal) = login_refusal(&self.catalog, &user) {
            if let Some(message) = final_message {
                client.send(PgWireBackendMessage::Authentication(message)).await?;
            }
            client.send(PgWireBackendMessage::Authentication(Authentication::Ok)).await?;
            return Err(fatal_error(refusal));
        }
        self.driver.complete_authentication(client, final_message).await
    }
}

/// Why an authenticated client (or a trusted one) may not log in as `user`, in PostgreSQL's
/// words (FATAL 28000).
pub fn login_refusal(catalog: &Catalog, user: &str) -> Option<SqlError> {
    match catalog.role(user) {
        None => Some(SqlError::new("28000", format!("role \"{user}\" does not exist"))),
        Some(role) if !role.login => {
            Some(SqlError::new("28000", format!("role \"{user}\" is not permitted to log in")))
        }
        Some(_) => None,
    }
}

/// An error that ends the connection (every error before authentication completes).
pub(crate) fn fatal_error(error: SqlError) -> PgWireError {
    let info = pgwire::error::ErrorInfo::new(
        "FATAL".to_string(),
        error.sqlstate.to_string(),
        error.message,
    );
    PgWireError::UserError(Box::new(info))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn salt_of(secret: &ScramSecret) -> Vec<u8> {
        match secret {
            ScramSecret::Verifier { salt, .. } | ScramSecret::SaltedPassword { salt, .. } => {
                salt.clone()
            }
        }
    }

    fn verifiers_in(directory: &std::path::Path) -> RoleVerifiers {
        let config = tierdb_storage::StoreConfig::local(directory).expect("config");
        let store = Arc::new(tierdb_storage::PageStore::open(config).expect("store"));
        let catalog =
            Catalog::open(tierdb_engine::Engine::open(store).expect("engine")).expect("catalog");
        RoleVerifiers::new(catalog).expect("secret")
    }

    /// PostgreSQL's mock salts come from the cluster's nonce: the same across restarts
    /// (else comparing salts before and after one tells unknown roles from known ones).
    #[test]
    fn mock_salts_are_stable_per_name_and_cluster_across_restarts() {
        let directory = tempfile::tempdir().expect("tempdir");
        let first = verifiers_in(directory.path());
        let alice = salt_of(&first.mock("alice"));
        assert_eq!(alice.len(), MOCK_SALT_BYTES);
        assert_eq!(alice, salt_of(&first.mock("alice")));
        assert_ne!(alice, salt_of(&first.mock("bob")));
        drop(first);
        let restarted = verifiers_in(directory.path());
        assert_eq!(alice, salt_of(&restarted.mock("alice")));
        let other_directory = tempfile::tempdir().expect("tempdir");
        let other_cluster = verifiers_in(other_directory.path());
        assert_ne!(alice, salt_of(&other_cluster.mock("alice")));
    }
}
