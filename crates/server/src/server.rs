//! `serve`: opens the page store, engine and catalog, then accepts PostgreSQL clients until
//! SIGTERM or SIGINT, when it stops accepting, lets running statements finish for a grace
//! period, and closes the store cleanly (flush, checkpoint, tier index).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tierdb_engine::Engine;
use tierdb_sql::Catalog;
use tierdb_storage::{PageStore, StoreConfig, TierConfig};
use tokio::net::TcpListener;

use crate::auth::RoleVerifiers;
use crate::config::ServerConfig;
use crate::connection::ConnectionLimits;
use crate::handler::{Connection, Shared};

/// How long shutdown waits for connections to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

fn store_config(config: &ServerConfig) -> Result<StoreConfig, String> {
    std::fs::create_dir_all(&config.data_dir).map_err(|error| {
        format!("cannot create data_dir={}: {error}", config.data_dir.display())
    })?;
    let local_path = if config.volume == "local" || config.volume.is_empty() {
        Some(config.data_dir.join("volume"))
    } else {
        config.volume.strip_prefix("local:").map(std::path::PathBuf::from)
    };
    if config.volume_read_latency_us > 0 && local_path.is_none() {
        return Err("volume_read_latency_us applies to a local volume only".into());
    }
    let mut store = if let Some(path) = local_path {
        // The added latency models network storage in benchmarks (tier on against off).
        let volume = tierdb_storage::LocalVolume::open(path)
            .map_err(|error| error.to_string())?
            .with_read_latency(Duration::from_micros(config.volume_read_latency_us));
        StoreConfig::with_volume(&config.data_dir, Arc::new(volume))
    } else if let Some(rest) = config.volume.strip_prefix("s3://") {
        s3_store(config, rest)?
    } else {
        return Err(format!(
            "unknown volume={} (expected local, local:/path or s3://bucket/prefix)",
            config.volume
        ));
    };
    let capacity = config.capacity_settings()?;
    store.buffer_pool_bytes = match capacity {
        Some(settings) => crate::capacity::buffer_pool_bytes(settings.initial(), settings.unit),
        None => config.buffer_pool_bytes,
    };
    let operator_memory_bytes = match capacity {
        Some(settings) => crate::capacity::operator_memory_bytes(settings.initial(), settings.unit),
        None => config.operator_memory_bytes,
    };
    store.wal_in_volume = config.wal_on_volume;
    store.checkpoint_interval = Duration::from_millis(config.checkpoint_interval_ms);
    store.checkpoint_wal_bytes = config.checkpoint_wal_bytes;
    store.tier = if config.tier_bytes == 0 {
        None
    } else {
        let path = if config.tier_path.is_empty() {
            config.data_dir.join("tier").join("tier.dat")
        } else {
            config.tier_path.clone().into()
        };
        Some(TierConfig { path, capacity_bytes: config.tier_bytes, direct_io: true })
    };
    let tier_dir = match &store.tier {
        Some(tier) => tier.path.parent().map_or_else(|| config.data_dir.clone(), Into::into),
        None => config.data_dir.join("tier"),
    };
    store.temp = tierdb_storage::TempConfig {
        dir: if config.temp_dir.is_empty() {
            tier_dir.join("temp")
        } else {
            config.temp_dir.clone().into()
        },
        quota_bytes: config.temp_quota_bytes,
        operator_memory_bytes: usize::try_from(operator_memory_bytes)
            .map_err(|_| format!("operator_memory_bytes={operator_memory_bytes} is too large"))?,
    };
    Ok(store)
}

#[cfg(feature = "s3")]
fn s3_store(config: &ServerConfig, rest: &str) -> Result<StoreConfig, String> {
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let endpoint =
        if config.s3_endpoint.is_empty() { None } else { Some(config.s3_endpoint.clone()) };
    let allow_http = endpoint.as_deref().is_some_and(|endpoint| endpoint.starts_with("http://"));
    let volume = tierdb_storage::S3Volume::open(tierdb_storage::S3Config {
        endpoint,
        bucket: bucket.to_string(),
        prefix: prefix.to_string(),
        region: config.s3_region.clone(),
        access_key_id: config.s3_access_key_id.clone(),
        secret_access_key: config.s3_secret_access_key.clone(),
        allow_http,
    })
    .map_err(|error| error.to_string())?;
    Ok(StoreConfig::with_volume(&config.data_dir, Arc::new(volume)))
}

#[cfg(not(feature = "s3"))]
fn s3_store(_config: &ServerConfig, _rest: &str) -> Result<StoreConfig, String> {
    Err("this build has no S3 support (build with the s3 feature)".into())
}

pub(crate) use crate::config::CONNECTION_STACK_BYTES;

/// Serves one connection on a thread of its own with a single-threaded runtime: statements
/// block that thread only (a PostgreSQL backend process, as a thread).
fn spawn_connection_thread(
    socket: tokio::net::TcpStream,
    connection: Arc<Connection>,
    limits: ConnectionLimits,
    tls: Option<pgwire::tokio::TlsAcceptor>,
) -> std::io::Result<()> {
    let socket = socket.into_std()?;
    std::thread::Builder::new()
        .name("tierdb-conn".into())
        .stack_size(CONNECTION_STACK_BYTES)
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(error) => {
                    tracing::warn!(%error, "cannot start a connection runtime");
                    return;
                }
            };
            runtime.block_on(async move {
                let Ok(socket) = tokio::net::TcpStream::from_std(socket) else { return };
                crate::connection::serve(socket, tls, connection, limits).await;
            });
        })?;
    Ok(())
}

/// Runs the server until SIGTERM/SIGINT. `ready` is called with the bound addresses.
pub async fn serve(
    config: ServerConfig,
    ready: impl FnOnce(std::net::SocketAddr, Option<std::net::SocketAddr>),
) -> Result<(), String> {
    let rules = config.authentication_rules()?;
    // Operators see which rules are in force (stderr, beside the address line).
    eprintln!("tierdb: client authentication rules from {}:", rules.source);
    for rule in &rules.rules {
        match rule.line_number {
            0 => eprintln!("tierdb:   {rule}"),
            line => eprintln!("tierdb:   line {line}: {rule}"),
        }
    }
    let tls = match (config.tls_cert_file.is_empty(), config.tls_key_file.is_empty()) {
        (true, true) => None,
        (false, false) => {
            Some(crate::tls::acceptor(config.tls_cert_file.as_ref(), config.tls_key_file.as_ref())?)
        }
        _ => return Err("TLS needs both tls_cert_file and tls_key_file".into()),
    };
    let store_config = store_config(&config)?;
    let bootstrap_name = config.superuser.clone();
    let password = config.password.clone();
    let (engine, catalog, superuser) = tokio::task::spawn_blocking(move || -> Result<_, String> {
        let store = Arc::new(
            PageStore::open(store_config)
                .map_err(|error| format!("cannot open the page store: {error}"))?,
        );
        let engine =
            Engine::open(store).map_err(|error| format!("cannot open the engine: {error}"))?;
        let catalog = Catalog::open(Arc::clone(&engine))
            .map_err(|error| format!("cannot open the catalog: {error}"))?;
        let superuser = catalog
            .bootstrap_superuser(&bootstrap_name, password.as_deref())
            .map_err(|error| format!("cannot set up the bootstrap superuser: {error}"))?;
        Ok((engine, catalog, superuser))
    })
    .await
    .map_err(|error| error.to_string())??;
    let password_note = if config.password.is_some() {
        "password reset from the configuration"
    } else {
        "password unchanged"
    };
    eprintln!("tierdb: bootstrap superuser {superuser} ({password_note})");
    let verifiers = Arc::new(
        RoleVerifiers::new(Arc::clone(&catalog))
            .map_err(|error| format!("cannot read the mock authentication secret: {error}"))?,
    );
    let shared = Shared::new(
        catalog,
        rules,
        verifiers,
        config.max_connections,
        config.max_startup_connections,
        config.work_mem_bytes,
    );
    // Set at shutdown: stops the capacity runner and autoanalyze.
    let capacity_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let autoanalyze = match config.autoanalyze_interval_ms {
        0 => None,
        interval_ms => {
            let stop = Arc::clone(&capacity_stop);
            Some(
                tierdb_sql::start_autoanalyze(&shared.catalog, interval_ms, stop)
                    .map_err(|error| format!("cannot start autoanalyze: {error}"))?,
            )
        }
    };
    let capacity_runner = match config.capacity_settings()? {
        Some(settings) => {
            let store = Arc::clone(shared.catalog.engine().store());
            crate::capacity::enable(store.capacity(), &settings);
            let stop = Arc::clone(&capacity_stop);
            Some(
                crate::capacity::start(store, Arc::clone(&shared), settings, stop)
                    .map_err(|error| format!("cannot start the capacity runner: {error}"))?,
            )
        }
        None => None,
    };
    if let Some(reloader) = config.reload.clone() {
        let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .map_err(|error| error.to_string())?;
        let store = Arc::clone(shared.catalog.engine().store());
        tokio::spawn(async move {
            while hangup.recv().await.is_some() {
                let store = Arc::clone(&store);
                let reloader = reloader.clone();
                let reloaded = tokio::task::spawn_blocking(move || {
                    crate::capacity::reload(store.capacity(), &reloader);
                });
                let _ = reloaded.await;
            }
        });
    }
    let limits = ConnectionLimits {
        authentication_timeout: Duration::from_millis(config.authentication_timeout_ms),
        message_bytes_max: config.max_message_bytes,
    };
    let listener = TcpListener::bind(&config.listen)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", config.listen))?;
    let metrics_address = if config.metrics_listen.is_empty() {
        None
    } else {
        let metrics = TcpListener::bind(&config.metrics_listen)
            .await
            .map_err(|error| format!("cannot listen on {}: {error}", config.metrics_listen))?;
        let address = metrics.local_addr().ok();
        tokio::spawn(crate::metrics::serve(metrics, Arc::clone(&shared)));
        address
    };
    ready(listener.local_addr().map_err(|error| error.to_string())?, metrics_address);
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|error| error.to_string())?;
    loop {
        tokio::select! {
            () = shared.take_startup_slot() => {}
            _ = terminate.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
        // The slot taken above belongs to the next connection accepted.
        let connection = Connection::new(Arc::clone(&shared));
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((socket, _)) = accepted else { continue };
                let _ = socket.set_nodelay(true);
                if let Err(error) = spawn_connection_thread(socket, connection, limits.clone(), tls.clone()) {
                    tracing::warn!(%error, "cannot start a connection thread");
                }
            }
            _ = terminate.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    tracing::info!("shutting down: no new connections");
    drop(listener);
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    while shared.connections.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let drained = shared.connections.load(Ordering::Acquire) == 0;
    capacity_stop.store(true, Ordering::Release);
    if let Some(runner) = capacity_runner {
        let _ = tokio::task::spawn_blocking(move || runner.join()).await;
    }
    // An ANALYZE under way finishes first (its transaction commits or rolls back whole).
    if let Some(autoanalyze) = autoanalyze {
        let _ = tokio::task::spawn_blocking(move || autoanalyze.join()).await;
    }
    let catalog = Arc::clone(&shared.catalog);
    drop(shared);
    tokio::task::spawn_blocking(move || {
        let store = Arc::clone(catalog.engine().store());
        drop(catalog);
        // With every session gone, finish the queued purge and record it, so that the next
        // start need not scan every table for versions to remove.
        if drained {
            match engine.close_purged() {
                Ok(recorded) => tracing::info!(recorded, "shutdown purge"),
                Err(error) => tracing::warn!(%error, "shutdown purge failed"),
            }
        }
        drop(engine);
        if let Err(error) = store.flush_all().and_then(|()| store.checkpoint()) {
            tracing::error!(%error, "shutdown flush failed");
        }
        if let Some(tier) = store.tier() {
            let _ = tier.persist();
        }
    })
    .await
    .map_err(|error| error.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_read_latency_applies_to_local_volumes_only() {
        let directory = tempfile::tempdir().expect("temp dir");
        let mut config = ServerConfig {
            data_dir: directory.path().to_path_buf(),
            volume_read_latency_us: 1000,
            ..ServerConfig::default()
        };
        let store = store_config(&config).expect("local volume");
        assert!(store.volume.describe().ends_with("(+1000 us simulated read latency)"));
        config.volume = format!("local:{}", directory.path().join("elsewhere").display());
        let store = store_config(&config).expect("local:path volume");
        assert!(store.volume.describe().contains("elsewhere (+1000 us"));
        config.volume = "s3://bucket/prefix".into();
        let error = store_config(&config).err().expect("s3 with latency refused");
        assert!(error.contains("local volume only"), "{error}");
        config.volume_read_latency_us = 0;
        config.volume = "local".into();
        let store = store_config(&config).expect("no latency");
        assert!(!store.volume.describe().contains("latency"));
    }
}
