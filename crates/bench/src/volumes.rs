//! The durable volumes a benchmark can run on: the local directory with simulated network
//! latency on every read, and a real MinIO server on loopback (S3 API).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tierdb_storage::{LocalVolume, Volume};

/// A volume under test, and whatever must live as long as it (a MinIO server).
pub struct BenchVolume {
    pub name: String,
    pub volume: Arc<dyn Volume>,
    pub note: String,
    _server: Option<tierdb_testkit::MinioServer>,
}

pub fn open_volume(name: &str, directory: &Path, latency_us: u64) -> Result<BenchVolume, String> {
    match name {
        "local" | "local-latency" => {
            let latency =
                if name == "local" { Duration::ZERO } else { Duration::from_micros(latency_us) };
            let volume = LocalVolume::open(directory.join("volume"))
                .map_err(|error| error.to_string())?
                .with_read_latency(latency);
            let note = if latency.is_zero() {
                "local directory, no added latency".to_string()
            } else {
                format!("local directory with {latency_us} us added to every read (simulated network storage)")
            };
            Ok(BenchVolume {
                name: name.to_string(),
                volume: Arc::new(volume),
                note,
                _server: None,
            })
        }
        "minio" => open_minio(),
        other => Err(format!("unknown volume={other} (expected local, local-latency or minio)")),
    }
}

#[cfg(feature = "s3")]
fn open_minio() -> Result<BenchVolume, String> {
    use tierdb_storage::{S3Config, S3Volume};
    let server = tierdb_testkit::MinioServer::try_start()?;
    let volume = S3Volume::open(S3Config {
        endpoint: Some(server.endpoint().to_string()),
        bucket: tierdb_testkit::BUCKET.to_string(),
        prefix: "bench".to_string(),
        region: tierdb_testkit::REGION.to_string(),
        access_key_id: tierdb_testkit::ACCESS_KEY.to_string(),
        secret_access_key: tierdb_testkit::SECRET_KEY.to_string(),
        allow_http: true,
    })
    .map_err(|error| error.to_string())?;
    let note = format!("MinIO (S3 API) on loopback at {}", server.endpoint());
    Ok(BenchVolume {
        name: "minio".to_string(),
        volume: Arc::new(volume),
        note,
        _server: Some(server),
    })
}

#[cfg(not(feature = "s3"))]
fn open_minio() -> Result<BenchVolume, String> {
    Err("this build has no S3 support (build with --features s3)".to_string())
}
