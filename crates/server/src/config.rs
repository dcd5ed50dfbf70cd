//! Server configuration: defaults (the embedded single-machine setup), a TOML file, and
//! `TIERDB_*` environment variables / command-line flags layered on top by the CLI.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Deserializer};
use tierdb_storage::capacity::{
    Capacity, CapacityBounds, CapacityUnit, CAPACITY_UNIT_DEFAULT_BYTES, CAPACITY_UNIT_MIN_BYTES,
};

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
    /// Microseconds slept before every read of a local volume, to model network storage in
    /// benchmarks (default 0).
    pub volume_read_latency_us: u64,
    pub s3_endpoint: String,
    pub s3_region: String,
    pub s3_access_key_id: String,
    pub s3_secret_access_key: String,
    /// Put the WAL on the volume (survives loss of the machine; slower commits).
    pub wal_on_volume: bool,
    /// The background writer checkpoints at least this often (PostgreSQL's
    /// checkpoint_timeout; default 30 s).
    pub checkpoint_interval_ms: u64,
    /// ... and after this much WAL since the last checkpoint; pages dirty since further back
    /// are written (PostgreSQL's max_wal_size plays this part; default 256 MiB).
    pub checkpoint_wal_bytes: u64,
    /// Autoanalyze looks for tables whose rows changed enough this often (PostgreSQL's
    /// autovacuum_naptime; default 60 s); 0 turns it off.
    pub autoanalyze_interval_ms: u64,
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
    /// Elastic capacity (design 015): the lowest capacity in units (0.5 steps, may be 0).
    #[serde(deserialize_with = "capacity_value")]
    pub min_capacity: Capacity,
    /// The highest capacity in units; unset, the controller is off and buffer_pool_bytes
    /// and operator_memory_bytes are fixed.
    #[serde(deserialize_with = "optional_capacity_value")]
    pub max_capacity: Option<Capacity>,
    /// DRAM of one capacity unit: 5/8 buffer pool, 1/4 operator memory, 1/8 connections.
    pub capacity_unit_bytes: u64,
    /// How long every signal must ask for less before the controller shrinks.
    pub scale_down_delay_ms: u64,
    /// With min_capacity 0: after this long without a statement, release the buffer pool
    /// and operator memory (flushed first; the tier stays) until the next statement or
    /// connection. 0: never (the working set and the shrink delay decide alone).
    pub idle_release_ms: u64,
    /// Reads the configuration again from its sources (file, environment, flags) on
    /// SIGHUP; only min_capacity and max_capacity take effect without a restart.
    #[serde(skip)]
    pub reload: Option<ConfigReloader>,
}

/// How the binary reads its configuration again (SIGHUP).
#[derive(Clone)]
pub struct ConfigReloader(pub Arc<dyn Fn() -> Result<ServerConfig, String> + Send + Sync>);

impl std::fmt::Debug for ConfigReloader {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("ConfigReloader")
    }
}

/// A capacity in TOML: `2`, `1.5` or `"1.5"`.
fn capacity_value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Capacity, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Integer(i64),
        Float(f64),
        Text(String),
    }
    let text = match Raw::deserialize(deserializer)? {
        Raw::Integer(value) => value.to_string(),
        Raw::Float(value) => value.to_string(),
        Raw::Text(text) => text,
    };
    Capacity::parse(&text).map_err(serde::de::Error::custom)
}

fn optional_capacity_value<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Capacity>, D::Error> {
    capacity_value(deserializer).map(Some)
}

/// The controller's fixed settings, when max_capacity is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapacitySettings {
    pub unit: CapacityUnit,
    pub bounds: CapacityBounds,
    pub scale_down_delay_ms: u64,
    pub idle_release_ms: u64,
}

impl CapacitySettings {
    /// The capacity the server starts at: min, at least half a unit.
    pub fn initial(&self) -> Capacity {
        self.bounds.min.max(Capacity::STEP)
    }
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
            volume_read_latency_us: 0,
            s3_endpoint: String::new(),
            s3_region: "us-east-1".into(),
            s3_access_key_id: String::new(),
            s3_secret_access_key: String::new(),
            wal_on_volume: false,
            checkpoint_interval_ms: 30_000,
            autoanalyze_interval_ms: 60_000,
            checkpoint_wal_bytes: 256 << 20,
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
            min_capacity: Capacity::ZERO,
            max_capacity: None,
            capacity_unit_bytes: CAPACITY_UNIT_DEFAULT_BYTES,
            scale_down_delay_ms: 60_000,
            // The goal is a release within 60 s of idleness; the shrink to 0 (flush,
            // demotion to the tier) takes a few seconds more than the setting.
            idle_release_ms: 50_000,
            reload: None,
        }
    }
}

impl ServerConfig {
    pub fn from_toml(text: &str) -> Result<ServerConfig, String> {
        toml::from_str(text).map_err(|error| format!("invalid config file: {error}"))
    }

    /// The elastic capacity settings, checked: None when max_capacity is unset.
    pub fn capacity_settings(&self) -> Result<Option<CapacitySettings>, String> {
        let Some(max) = self.max_capacity else {
            if self.min_capacity != Capacity::ZERO {
                return Err(format!(
                    "min_capacity={} needs max_capacity (without it capacity is fixed)",
                    self.min_capacity
                ));
            }
            return Ok(None);
        };
        if self.capacity_unit_bytes < CAPACITY_UNIT_MIN_BYTES {
            return Err(format!(
                "capacity_unit_bytes={} is below the minimum of {CAPACITY_UNIT_MIN_BYTES}",
                self.capacity_unit_bytes
            ));
        }
        Ok(Some(CapacitySettings {
            unit: CapacityUnit::new(self.capacity_unit_bytes),
            bounds: CapacityBounds::new(self.min_capacity, max)?,
            scale_down_delay_ms: self.scale_down_delay_ms,
            idle_release_ms: self.idle_release_ms,
        }))
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

    #[test]
    fn capacity_settings_take_half_steps_and_min_at_most_max() {
        let config =
            ServerConfig::from_toml("min_capacity = 0.5\nmax_capacity = 4\n").expect("valid");
        let settings = config.capacity_settings().expect("valid").expect("enabled");
        assert_eq!((settings.bounds.min.half_units(), settings.bounds.max.half_units()), (1, 8));
        let text = ServerConfig::from_toml("max_capacity = \"1.5\"\n").expect("valid");
        assert_eq!(text.max_capacity.map(Capacity::half_units), Some(3));
        assert_eq!(ServerConfig::default().capacity_settings(), Ok(None));
        for bad in ["min_capacity = -1\n", "max_capacity = 0.25\n", "max_capacity = \"x\"\n"] {
            let error = ServerConfig::from_toml(bad).expect_err(bad);
            assert!(error.contains("invalid capacity"), "{bad}: {error}");
        }
        for (bad, wanted) in [
            ("min_capacity = 2\nmax_capacity = 1\n", "is above max_capacity"),
            ("max_capacity = 0\n", "at least 0.5"),
            ("min_capacity = 1\n", "needs max_capacity"),
            ("max_capacity = 1\ncapacity_unit_bytes = 1000\n", "below the minimum"),
        ] {
            let config = ServerConfig::from_toml(bad).expect("parses");
            let error = config.capacity_settings().expect_err(bad);
            assert!(error.contains(wanted), "{bad}: {error}");
        }
    }
}
