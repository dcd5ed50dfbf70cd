//! Server configuration: defaults (the embedded single-machine setup), a TOML file, and
//! `TIERDB_*` environment variables / command-line flags layered on top by the CLI.

use std::path::PathBuf;

use serde::Deserialize;

use crate::hba::Rules;

/// Stack of a connection thread and of its executor thread (deep plans recurse). The SQL
/// layer refuses statements too deep for it with 54001; 64 MiB (reserved, touched only as
/// used) lets it evaluate what PostgreSQL 15 evaluates (a 1,000-deep WITH chain takes about
/// 15 MiB).
pub(crate) const CONNECTION_STACK_BYTES: usize = 64 << 20;

/// Everything `serve` needs. Sizes in bytes.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    /// `host:port` for PostgreSQL clients.
    pub listen: String,
    /// `host:port` for Prometheus `/metrics`; empty to disable.
    pub metrics_listen: String,
    pub buffer_pool_bytes: u64,
    /// Tier file location (default: `<data_dir>/tier/tier.dat`); empty to use the default.
    pub tier_path: String,
    /// 0 disables the tier.
    pub tier_bytes: u64,
    /// `local` (default: `<data_dir>/volume`), `local:/path`, or `s3://bucket/prefix`.
    pub volume: String,
    pub s3_endpoint: String,
    pub s3_region: String,
    pub s3_access_key_id: String,
    pub s3_secret_access_key: String,
    /// Put the WAL on the volume (survives loss of the machine; slower commits).
    pub wal_on_volume: bool,
    /// Per-operator memory budget of sorts, hash joins and aggregations.
    pub work_mem_bytes: u64,
    /// Directory of temporary files (default: `temp` beside the tier file).
    pub temp_dir: String,
    /// Bytes all temporary files together may hold (53100 past it).
    pub temp_quota_bytes: u64,
    /// Bytes all sorts and hash tables of all sessions may hold together; past it they
    /// spill sooner.
    pub operator_memory_bytes: u64,
    pub max_connections: usize,
    /// Connections accepted but not yet authenticated, at most; more are refused (53300).
    /// They do not count against max_connections.
    pub max_startup_connections: usize,
    /// Time from accept to the end of authentication (PostgreSQL's authentication_timeout).
    pub authentication_timeout_ms: u64,
    /// The largest message a client may send (a query, a Bind with its values, a COPY
    /// chunk); larger ones end the connection with 08P01.
    pub max_message_bytes: usize,
    /// PEM certificate chain for TLS; TLS is offered when this and tls_key_file are set.
    pub tls_cert_file: String,
    /// PEM private key for TLS.
    pub tls_key_file: String,
    /// Shorthand for built-in rules: `trust-loopback` (the default when neither this nor
    /// hba_file is set), `scram`, or `trust`. Empty: not set.
    pub auth: String,
    /// A file of client authentication rules in pg_hba.conf syntax (host, hostssl,
    /// hostnossl; trust, scram-sha-256, reject). Excludes auth. Empty: not set.
    pub hba_file: String,
    /// The bootstrap superuser's name, created when the catalog has no role yet.
    pub superuser: String,
    /// The bootstrap superuser's password (from password_file or TIERDB_PASSWORD, never a
    /// flag); when given, it is set again at every start.
    pub password: Option<String>,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            data_dir: PathBuf::from("tierdb-data"),
            listen: "127.0.0.1:5432".into(),
            metrics_listen: "127.0.0.1:9187".into(),
            buffer_pool_bytes: 256 << 20,
            tier_path: String::new(),
            tier_bytes: 1 << 30,
            volume: "local".into(),
            s3_endpoint: String::new(),
            s3_region: "us-east-1".into(),
            s3_access_key_id: String::new(),
            s3_secret_access_key: String::new(),
            wal_on_volume: false,
            work_mem_bytes: 4 << 20,
            temp_dir: String::new(),
            temp_quota_bytes: 64 << 30,
            operator_memory_bytes: 1 << 30,
            max_connections: 500,
            max_startup_connections: 64,
            authentication_timeout_ms: 10_000,
            max_message_bytes: 256 << 20,
            tls_cert_file: String::new(),
            tls_key_file: String::new(),
            auth: String::new(),
            hba_file: String::new(),
            superuser: "tierdb".into(),
            password: None,
        }
    }
}

impl ServerConfig {
    pub fn from_toml(text: &str) -> Result<ServerConfig, String> {
        toml::from_str(text).map_err(|error| format!("invalid config file: {error}"))
    }

    /// The authentication rules in force: hba_file's, or those auth stands for.
    pub fn authentication_rules(&self) -> Result<Rules, String> {
        match (self.auth.is_empty(), self.hba_file.is_empty()) {
            (false, false) => Err(format!(
                "auth={} and hba_file={} both given: auth is a shorthand for built-in rules, give one or the other",
                self.auth, self.hba_file
            )),
            (_, false) => {
                let text = std::fs::read_to_string(&self.hba_file)
                    .map_err(|error| format!("cannot read hba_file={}: {error}", self.hba_file))?;
                Rules::parse(&text, &self.hba_file)
            }
            (true, true) => Rules::shorthand("trust-loopback"),
            (false, true) => Rules::shorthand(&self.auth),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_and_hba_file_exclude_each_other() {
        let file = tempfile::NamedTempFile::new().expect("hba file");
        std::fs::write(file.path(), "hostssl all all all reject\n").expect("write");
        let path = file.path().to_str().expect("utf-8 path");
        let config = ServerConfig::from_toml(&format!("hba_file = {path:?}\n")).expect("valid");
        let rules = config.authentication_rules().expect("rules");
        assert_eq!(rules.rules.len(), 1);
        assert_eq!(rules.source, format!("hba_file={path}"));
        let both = format!("hba_file = {path:?}\nauth = \"trust\"\n");
        let error = ServerConfig::from_toml(&both)
            .expect("valid")
            .authentication_rules()
            .expect_err("both given");
        assert!(error.contains("give one or the other"), "{error}");
        let default = ServerConfig::default().authentication_rules().expect("rules");
        assert_eq!(default.source, "auth=trust-loopback");
        let scram = ServerConfig::from_toml("auth = \"scram\"\n").expect("valid");
        assert_eq!(scram.authentication_rules().expect("rules").rules.len(), 1);
    }
}
