//! SCRAM-SHA-256 verifiers in PostgreSQL's text format (RFC 5802, RFC 7677):
//! `SCRAM-SHA-256$<iterations>:<base64 salt>$<base64 StoredKey>:<base64 ServerKey>`.
//!
//! The server keeps only StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey =
//! HMAC(SaltedPassword, "Server Key"): enough to check a client's proof and to prove itself,
//! not enough to log in as the role.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ring::{digest, hmac, pbkdf2};

use crate::error::{Result, SqlError};

/// PostgreSQL's scram_iterations default.
pub const SCRAM_ITERATIONS: u32 = 4096;
/// PostgreSQL's SCRAM_DEFAULT_SALT_LEN.
pub const SCRAM_SALT_BYTES: usize = 16;
/// SHA-256's output: the length of StoredKey, ServerKey and a salted password.
const KEY_BYTES: usize = 32;
const PREFIX: &str = "SCRAM-SHA-256$";

/// A parsed verifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScramVerifier {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl ScramVerifier {
    /// The verifier of `password` with `salt` (SASLprep-normalized as libpq does; a
    /// password that does not normalize is used as it is, as PostgreSQL does).
    pub fn from_password(password: &str, salt: &[u8], iterations: u32) -> ScramVerifier {
        assert!(iterations > 0, "SCRAM needs at least one iteration");
        let normalized = stringprep::saslprep(password)
            .map_or_else(|_| password.to_string(), |text| text.into_owned());
        let mut salted_password = [0u8; KEY_BYTES];
        let rounds = std::num::NonZeroU32::new(iterations).expect("asserted above");
        pbkdf2::derive(
            pbkdf2::PBKDF2_HMAC_SHA256,
            rounds,
            salt,
            normalized.as_bytes(),
            &mut salted_password,
        );
        let key = hmac::Key::new(hmac::HMAC_SHA256, &salted_password);
        let client_key = hmac::sign(&key, b"Client Key");
        let stored_key = digest::digest(&digest::SHA256, client_key.as_ref()).as_ref().to_vec();
        let server_key = hmac::sign(&key, b"Server Key").as_ref().to_vec();
        ScramVerifier { iterations, salt: salt.to_vec(), stored_key, server_key }
    }

    /// A new verifier of `password` with a fresh salt from the kernel's random source.
    pub fn generate(password: &str) -> Result<ScramVerifier> {
        let salt = random_bytes(SCRAM_SALT_BYTES)?;
        Ok(ScramVerifier::from_password(password, &salt, SCRAM_ITERATIONS))
    }

    /// Parses PostgreSQL's text form; None if `text` is not a well-formed verifier.
    pub fn parse(text: &str) -> Option<ScramVerifier> {
        let rest = text.strip_prefix(PREFIX)?;
        let (parameters, keys) = rest.split_once('$')?;
        let (iterations, salt) = parameters.split_once(':')?;
        let (stored_key, server_key) = keys.split_once(':')?;
        let verifier = ScramVerifier {
            iterations: iterations.parse().ok().filter(|&count| count > 0)?,
            salt: STANDARD.decode(salt).ok().filter(|salt| !salt.is_empty())?,
            stored_key: STANDARD.decode(stored_key).ok()?,
            server_key: STANDARD.decode(server_key).ok()?,
        };
        let keys_fit =
            verifier.stored_key.len() == KEY_BYTES && verifier.server_key.len() == KEY_BYTES;
        keys_fit.then_some(verifier)
    }

    /// PostgreSQL's text form.
    pub fn encode(&self) -> String {
        format!(
            "{PREFIX}{}:{}${}:{}",
            self.iterations,
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.stored_key),
            STANDARD.encode(&self.server_key)
        )
    }
}

/// Whether `text` looks like a stored password hash rather than a password (PostgreSQL
/// takes such text as the hash itself).
pub fn is_scram_text(text: &str) -> bool {
    text.starts_with(PREFIX)
}

/// PostgreSQL's md5 hash form: `md5` and 32 hex digits.
pub fn is_md5_text(text: &str) -> bool {
    text.len() == 35
        && text.starts_with("md5")
        && text[3..].bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// `count` bytes from the kernel's random source.
pub fn random_bytes(count: usize) -> Result<Vec<u8>> {
    let mut bytes = vec![0u8; count];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut bytes))
        .map_err(|error| {
            SqlError::new("58000", format!("could not read the random source: {error}"))
        })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_postgresql_verifier() {
        // `SET password_encryption = 'scram-sha-256'` in PostgreSQL 15 with this salt gives
        // this verifier for the password "foobar" (RFC 7677's test uses "pencil").
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("salt");
        let verifier = ScramVerifier::from_password("pencil", &salt, 4096);
        assert_eq!(
            verifier.encode(),
            "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU="
        );
        assert_eq!(ScramVerifier::parse(&verifier.encode()), Some(verifier));
    }

    #[test]
    fn parse_refuses_malformed_text() {
        for text in [
            "",
            "SCRAM-SHA-256$",
            "SCRAM-SHA-256$0:c2FsdA==$AAAA:AAAA",
            "SCRAM-SHA-256$4096:c2FsdA==$AAAA:AAAA",
            "md5abc",
        ] {
            assert_eq!(ScramVerifier::parse(text), None, "{text}");
        }
        assert!(is_md5_text("md5d8578edf8458ce06fbc5bb76a58c5ca4"));
        assert!(!is_md5_text("md5 is a hash"));
    }

    #[test]
    fn generated_salts_differ() {
        let first = ScramVerifier::generate("same").expect("random");
        let second = ScramVerifier::generate("same").expect("random");
        assert_eq!(first.salt.len(), SCRAM_SALT_BYTES);
        assert_ne!(first.salt, second.salt);
        assert_ne!(first.stored_key, second.stored_key);
    }
}
