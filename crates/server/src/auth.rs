//! Who may log in (docs/design/010-roles-and-privileges.md): SCRAM-SHA-256 against the
//! connecting role's stored verifier, and the role checks of trust rules.
//!
//! A SCRAM exchange must not tell a client whether a role exists: for an unknown role, a
//! NOLOGIN role or one without a password, the exchange runs against a mock verifier whose
//! salt is derived from a per-server random secret and the user name (as PostgreSQL's
//! `scram_mock_salt`), so that asking twice for one name shows the same salt, and it ends
//! with the same 28P01 as a wrong password.

use std::sync::Arc;

use async_trait::async_trait;
use pgwire::api::auth::sasl::scram::ScramSecret;
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{PgWireError, PgWireResult};
use ring::hmac;
use tierdb_sql::{Catalog, ScramVerifier, SqlError};

/// Bytes of the per-server secret behind mock salts.
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
    pub fn new(catalog: Arc<Catalog>) -> std::io::Result<RoleVerifiers> {
        let mut secret = [0u8; MOCK_SECRET_BYTES];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut secret)?;
        Ok(RoleVerifiers { catalog, mock_secret: hmac::Key::new(hmac::HMAC_SHA256, &secret) })
    }

    /// The verifier of a role that may log in with a password.
    fn verifier(&self, user: &str) -> Option<ScramVerifier> {
        let role = self.catalog.role(user).filter(|role| role.login)?;
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

/// Why a trusted client may not log in as `user`, in PostgreSQL's words (FATAL 28000).
pub fn trust_refusal(catalog: &Catalog, user: &str) -> Option<SqlError> {
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

    #[test]
    fn mock_salts_are_stable_per_name_and_differ_between_names_and_servers() {
        let directory = tempfile::tempdir().expect("tempdir");
        let config = tierdb_storage::StoreConfig::local(directory.path()).expect("config");
        let store = Arc::new(tierdb_storage::PageStore::open(config).expect("store"));
        let catalog =
            Catalog::open(tierdb_engine::Engine::open(store).expect("engine")).expect("catalog");
        let first = RoleVerifiers::new(Arc::clone(&catalog)).expect("random");
        let second = RoleVerifiers::new(catalog).expect("random");
        let alice = salt_of(&first.mock("alice"));
        assert_eq!(alice.len(), MOCK_SALT_BYTES);
        assert_eq!(alice, salt_of(&first.mock("alice")));
        assert_ne!(alice, salt_of(&first.mock("bob")));
        assert_ne!(alice, salt_of(&second.mock("alice")));
    }
}
