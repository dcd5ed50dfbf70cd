//! `tierdb serve`: the PostgreSQL-compatible server. Settings come from defaults, then an
//! optional TOML file (`--config`), then `TIERDB_*` environment variables and flags.

use clap::Args;
use tierdb_server::ServerConfig;

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// TOML configuration file (keys as in ServerConfig: data_dir, listen, buffer_pool_bytes, ...).
    #[arg(long, env = "TIERDB_CONFIG")]
    config: Option<std::path::PathBuf>,
    /// Data directory (WAL, local volume, tier).
    #[arg(long, env = "TIERDB_DATA_DIR")]
    data_dir: Option<std::path::PathBuf>,
    /// Address for PostgreSQL clients.
    #[arg(long, env = "TIERDB_LISTEN")]
    listen: Option<String>,
    /// Address for Prometheus /metrics ("" disables it).
    #[arg(long, env = "TIERDB_METRICS_LISTEN")]
    metrics_listen: Option<String>,
    /// DRAM buffer pool size in bytes (suffixes kB, MB, GB accepted).
    #[arg(long, env = "TIERDB_BUFFER_POOL")]
    buffer_pool: Option<String>,
    /// Local tier size in bytes (0 disables the tier; suffixes accepted).
    #[arg(long, env = "TIERDB_TIER_SIZE")]
    tier_size: Option<String>,
    /// Tier file path.
    #[arg(long, env = "TIERDB_TIER_PATH")]
    tier_path: Option<String>,
    /// Durable volume: local, local:/path, or s3://bucket/prefix.
    #[arg(long, env = "TIERDB_VOLUME")]
    volume: Option<String>,
    /// Microseconds added to every read of a local volume, to model network storage in
    /// benchmarks (default 0).
    #[arg(long, env = "TIERDB_VOLUME_READ_LATENCY_US")]
    volume_read_latency_us: Option<u64>,
    #[arg(long, env = "TIERDB_S3_ENDPOINT")]
    s3_endpoint: Option<String>,
    #[arg(long, env = "TIERDB_S3_REGION")]
    s3_region: Option<String>,
    #[arg(long, env = "TIERDB_S3_ACCESS_KEY_ID")]
    s3_access_key_id: Option<String>,
    #[arg(long, env = "TIERDB_S3_SECRET_ACCESS_KEY")]
    s3_secret_access_key: Option<String>,
    /// Keep the WAL on the volume.
    #[arg(long, env = "TIERDB_WAL_ON_VOLUME")]
    wal_on_volume: Option<bool>,
    /// Look for tables to analyze automatically this often, in milliseconds (default 60000;
    /// 0: no autoanalyze).
    #[arg(long, env = "TIERDB_AUTOANALYZE_INTERVAL_MS")]
    autoanalyze_interval_ms: Option<u64>,
    /// Checkpoint at least this often, in milliseconds (default 30000).
    #[arg(long, env = "TIERDB_CHECKPOINT_INTERVAL_MS")]
    checkpoint_interval_ms: Option<u64>,
    /// Checkpoint after this much WAL since the last one; older dirty pages are written
    /// (suffixes accepted; default 256MB).
    #[arg(long, env = "TIERDB_CHECKPOINT_WAL_SIZE")]
    checkpoint_wal_size: Option<String>,
    /// Default work_mem (suffixes accepted).
    #[arg(long, env = "TIERDB_WORK_MEM")]
    work_mem: Option<String>,
    /// Directory of temporary files: sorts, hash tables, cursors (default: temp beside the
    /// tier file). Files there are removed at start.
    #[arg(long, env = "TIERDB_TEMP_DIR")]
    temp_dir: Option<String>,
    /// Bytes all temporary files may hold together (suffixes accepted; default 64GB).
    #[arg(long, env = "TIERDB_TEMP_QUOTA")]
    temp_quota: Option<String>,
    /// Memory all sorts and hash tables of all sessions may hold together; past it they
    /// spill to temporary files sooner (suffixes accepted; default 1GB).
    #[arg(long, env = "TIERDB_OPERATOR_MEMORY")]
    operator_memory: Option<String>,
    /// DRAM each HNSW index may use for its quantized copy of layer 0 (neighbour ids and
    /// SQ8 codes, searched without page reads; suffixes accepted; default 64MB; 0: none).
    #[arg(long, env = "TIERDB_HNSW_NAVIGATION_MEMORY")]
    hnsw_navigation_memory: Option<String>,
    #[arg(long, env = "TIERDB_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Connections still authenticating, at most (they don't count against max_connections).
    #[arg(long, env = "TIERDB_MAX_STARTUP_CONNECTIONS")]
    max_startup_connections: Option<usize>,
    /// Time a client has from connecting to finishing authentication, in milliseconds.
    #[arg(long, env = "TIERDB_AUTHENTICATION_TIMEOUT_MS")]
    authentication_timeout_ms: Option<u64>,
    /// The largest message a client may send (suffixes accepted).
    #[arg(long, env = "TIERDB_MAX_MESSAGE_SIZE")]
    max_message_size: Option<String>,
    /// PEM certificate chain: with --tls-key-file, clients may use TLS (sslmode=require).
    #[arg(long, env = "TIERDB_TLS_CERT_FILE")]
    tls_cert_file: Option<String>,
    /// PEM private key for TLS.
    #[arg(long, env = "TIERDB_TLS_KEY_FILE")]
    tls_key_file: Option<String>,
    /// Shorthand for built-in authentication rules: trust-loopback (the default), scram or
    /// trust. Not with --hba-file.
    #[arg(long, env = "TIERDB_AUTH")]
    auth: Option<String>,
    /// Client authentication rules in pg_hba.conf syntax (host/hostssl/hostnossl, trust,
    /// scram-sha-256, reject); first match wins. Not with --auth.
    #[arg(long, env = "TIERDB_HBA_FILE")]
    hba_file: Option<String>,
    /// Name of the superuser created at the first start (default tierdb).
    #[arg(long, env = "TIERDB_SUPERUSER")]
    superuser: Option<String>,
    /// File whose first line is the bootstrap superuser's password (or set TIERDB_PASSWORD);
    /// set again at every start. There is no flag for the password itself: a command line is
    /// visible to every user in `ps`.
    #[arg(long, env = "TIERDB_PASSWORD_FILE")]
    password_file: Option<std::path::PathBuf>,
    /// Elastic capacity: the lowest capacity in units (0.5 steps, may be 0; needs
    /// --max-capacity).
    #[arg(long, env = "TIERDB_MIN_CAPACITY")]
    min_capacity: Option<String>,
    /// Elastic capacity: the highest capacity in units (0.5 steps). Set, a controller sizes
    /// the buffer pool and operator memory between min and max (--buffer-pool and
    /// --operator-memory are then ignored).
    #[arg(long, env = "TIERDB_MAX_CAPACITY")]
    max_capacity: Option<String>,
    /// DRAM of one capacity unit (suffixes accepted; default 1GB, at least 1MB).
    #[arg(long, env = "TIERDB_CAPACITY_UNIT")]
    capacity_unit: Option<String>,
    /// How long every signal must ask for less capacity before a shrink, in milliseconds
    /// (default 60000).
    #[arg(long, env = "TIERDB_SCALE_DOWN_DELAY_MS")]
    scale_down_delay_ms: Option<u64>,
    /// With --min-capacity 0: release the buffer pool and operator memory after this long
    /// without a statement, until the next one (milliseconds; default 50000, 0: never).
    #[arg(long, env = "TIERDB_IDLE_RELEASE_MS")]
    idle_release_ms: Option<u64>,
}

fn capacity(name: &str, text: &str) -> Result<tierdb_storage::capacity::Capacity, String> {
    tierdb_storage::capacity::Capacity::parse(text).map_err(|error| format!("{name}: {error}"))
}

/// A size flag: bytes, or a number with a unit (PostgreSQL's kB, MB, GB, TB, or k, m, g),
/// read by the SQL layer's one size parser.
fn bytes(text: &str) -> Result<u64, String> {
    tierdb_sql::parse_size_bytes(text, tierdb_sql::SizeSyntax::FLAG).ok_or_else(|| {
        format!("invalid size {text}: bytes, or a number with a unit (kB, MB, GB, TB, k, m, g) within 64 bits")
    })
}

pub fn config(args: &ServeArgs) -> Result<ServerConfig, String> {
    let mut config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|error| format!("cannot read config={}: {error}", path.display()))?;
            ServerConfig::from_toml(&text)?
        }
        None => ServerConfig::default(),
    };
    if let Some(value) = &args.data_dir {
        config.data_dir = value.clone();
    }
    if let Some(value) = &args.listen {
        config.listen = value.clone();
    }
    if let Some(value) = &args.metrics_listen {
        config.metrics_listen = value.clone();
    }
    if let Some(value) = &args.buffer_pool {
        config.buffer_pool_bytes = bytes(value)?;
    }
    if let Some(value) = &args.tier_size {
        config.tier_bytes = bytes(value)?;
    }
    if let Some(value) = &args.tier_path {
        config.tier_path = value.clone();
    }
    if let Some(value) = &args.volume {
        config.volume = value.clone();
    }
    if let Some(value) = args.volume_read_latency_us {
        config.volume_read_latency_us = value;
    }
    if let Some(value) = &args.s3_endpoint {
        config.s3_endpoint = value.clone();
    }
    if let Some(value) = &args.s3_region {
        config.s3_region = value.clone();
    }
    if let Some(value) = &args.s3_access_key_id {
        config.s3_access_key_id = value.clone();
    }
    if let Some(value) = &args.s3_secret_access_key {
        config.s3_secret_access_key = value.clone();
    }
    if let Some(value) = args.wal_on_volume {
        config.wal_on_volume = value;
    }
    if let Some(value) = args.autoanalyze_interval_ms {
        config.autoanalyze_interval_ms = value;
    }
    if let Some(value) = args.checkpoint_interval_ms {
        config.checkpoint_interval_ms = value;
    }
    if let Some(value) = &args.checkpoint_wal_size {
        config.checkpoint_wal_bytes = bytes(value)?;
    }
    if let Some(value) = &args.work_mem {
        config.work_mem_bytes = bytes(value)?;
    }
    if let Some(value) = &args.temp_dir {
        config.temp_dir = value.clone();
    }
    if let Some(value) = &args.temp_quota {
        config.temp_quota_bytes = bytes(value)?;
    }
    if let Some(value) = &args.operator_memory {
        config.operator_memory_bytes = bytes(value)?;
    }
    if let Some(value) = args.max_connections {
        config.max_connections = value;
    }
    if let Some(value) = args.max_startup_connections {
        config.max_startup_connections = value;
    }
    if let Some(value) = args.authentication_timeout_ms {
        config.authentication_timeout_ms = value;
    }
    if let Some(value) = &args.max_message_size {
        config.max_message_bytes = usize::try_from(bytes(value)?)
            .map_err(|_| format!("max_message_size {value} is too large"))?;
    }
    if let Some(value) = &args.tls_cert_file {
        config.tls_cert_file = value.clone();
    }
    if let Some(value) = &args.tls_key_file {
        config.tls_key_file = value.clone();
    }
    if let Some(value) = &args.auth {
        config.auth = value.clone();
    }
    if let Some(value) = &args.hba_file {
        config.hba_file = value.clone();
    }
    if let Some(value) = &args.superuser {
        config.superuser = value.clone();
    }
    if let Some(value) = &args.min_capacity {
        config.min_capacity = capacity("min_capacity", value)?;
    }
    if let Some(value) = &args.max_capacity {
        config.max_capacity = Some(capacity("max_capacity", value)?);
    }
    if let Some(value) = &args.capacity_unit {
        config.capacity_unit_bytes = bytes(value)?;
    }
    if let Some(value) = args.scale_down_delay_ms {
        config.scale_down_delay_ms = value;
    }
    if let Some(value) = args.idle_release_ms {
        config.idle_release_ms = value;
    }
    config.capacity_settings()?;
    if let Some(path) = &args.password_file {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read password_file={}: {error}", path.display()))?;
        let password = text.lines().next().unwrap_or("").to_string();
        if password.is_empty() {
            return Err(format!("password_file={} is empty", path.display()));
        }
        config.password = Some(password);
    } else if let Ok(password) = std::env::var("TIERDB_PASSWORD") {
        // An empty password would be a real one (any SCRAM client can prove it), where
        // PostgreSQL treats an empty password as none: refused, as an empty file is.
        if password.is_empty() {
            return Err("TIERDB_PASSWORD is set but empty".to_string());
        }
        config.password = Some(password);
    }
    Ok(config)
}

pub fn run(args: &ServeArgs) -> Result<(), String> {
    let mut config = config(args)?;
    if let Some(value) = &args.hnsw_navigation_memory {
        let bytes = usize::try_from(bytes(value)?).map_err(|error| error.to_string())?;
        // Process-wide, read as each index is opened: set before the engine opens any.
        tierdb_engine::set_hnsw_navigation_memory_bytes(bytes);
    }
    // SIGHUP reads the same sources again (the file anew; flags and environment as given).
    let sources = args.clone();
    config.reload =
        Some(tierdb_server::ConfigReloader(std::sync::Arc::new(move || self::config(&sources))));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(config.max_connections.max(16) + 16)
        .build()
        .map_err(|error| error.to_string())?;
    runtime.block_on(tierdb_server::serve(config, |address, metrics| match metrics {
        Some(metrics) => {
            eprintln!("tierdb: listening on {address} (metrics on http://{metrics}/metrics)")
        }
        None => eprintln!("tierdb: listening on {address}"),
    }))
}
