//! Values fixed once per database cluster, kept in the engine table `tierdb_cluster` (one row
//! per name, the value as base64): drawn from the kernel's random source the first time
//! they are asked for, then read back unchanged at every start.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use super::*;

pub(super) const CLUSTER_TABLE: &str = "tierdb_cluster";
/// The name of the secret behind the mock SCRAM salts of unknown roles (PostgreSQL derives
/// them from the cluster's mock authentication nonce, made by initdb).
pub const MOCK_AUTH_SECRET: &str = "mock_auth_secret";

impl Catalog {
    /// The cluster's secret `name` of `bytes` bytes, created (durably) on first use.
    pub fn cluster_secret(&self, name: &str, bytes: usize) -> Result<Vec<u8>> {
        assert!(bytes > 0, "a secret has at least one byte");
        let _guard = self.lock_ddl();
        for row in self.scan_internal(CLUSTER_TABLE)? {
            let (Some(Value::Text(key)), Some(Value::Text(text))) = (row.first(), row.get(1))
            else {
                return Err(SqlError::new("XX001", "corrupt cluster row"));
            };
            if key == name {
                let secret = STANDARD.decode(text).ok().filter(|secret| secret.len() == bytes);
                return secret.ok_or_else(|| {
                    SqlError::new("XX001", format!("corrupt cluster value {name}"))
                });
            }
        }
        let secret = random_bytes(bytes)?;
        self.upsert_text(CLUSTER_TABLE, name, STANDARD.encode(&secret))?;
        Ok(secret)
    }
}
