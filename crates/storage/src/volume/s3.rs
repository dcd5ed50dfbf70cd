//! A volume on any S3-compatible object store (AWS S3, MinIO, Ceph RGW), built on the
//! `object_store` crate's `AmazonS3` client.
//!
//! Why: the durable tier of tierdb is meant to live in an object store, so that compute nodes
//! keep nothing that cannot be rebuilt from the bucket.
//!
//! The `Volume` trait is synchronous while `object_store` is async, so an `S3Volume` owns a
//! private multi-threaded tokio runtime and blocks on it for every call. Consequences for
//! callers:
//! - Call it from ordinary threads, or from a tokio `spawn_blocking` closure: both are fine.
//! - Calling it from a thread that is inside another runtime (a task, or a `block_on` future,
//!   as the server's connection threads are) works too: the request is then driven from a
//!   short-lived scoped thread, because tokio forbids blocking on a runtime from inside one.
//!
//! Object names are relative to the configured prefix: `S3Config { prefix: "db1", .. }` stores
//! `segments/0001.seg` under the key `db1/segments/0001.seg`, and `list` strips the prefix
//! again, exactly as `LocalVolume` reports names relative to its root.
//!
//! Requests use path-style addressing (`https://endpoint/bucket/key`), which MinIO and Ceph
//! on a bare address such as `127.0.0.1:9000` require and AWS still accepts. Each request is
//! retried by `object_store` with backoff (10 attempts within 3 minutes by default) before
//! an error reaches the caller.

use std::future::Future;
use std::ops::Range;

use futures::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tokio::runtime::Runtime;

use super::{ObjectInfo, Volume};
use crate::error::{Result, StorageError};

/// Worker threads of the private runtime: requests are I/O bound and callers block anyway, so
/// two threads keep the connection pool and retries progressing without competing with the
/// database's own threads.
const RUNTIME_WORKER_THREADS: usize = 2;

/// Where and how to reach the bucket.
#[derive(Clone, Debug)]
pub struct S3Config {
    /// Base URL such as `http://127.0.0.1:9000`; `None` means AWS S3 in `region`.
    pub endpoint: Option<String>,
    /// The bucket; it must already exist (`S3Volume` never creates buckets).
    pub bucket: String,
    /// Key prefix under which every object of this volume lives; may be empty. Leading and
    /// trailing `/` are ignored, so `"db1"`, `"/db1/"` and `"db1/"` are the same prefix.
    pub prefix: String,
    /// Signing region, e.g. `us-east-1` (MinIO accepts any region it was started with,
    /// `us-east-1` by default).
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    /// Permits plain `http://` endpoints; meant for a loopback MinIO, never for real data.
    pub allow_http: bool,
}

/// A `Volume` on an S3 bucket. See the module documentation for the threading contract.
pub struct S3Volume {
    store: AmazonS3,
    /// Always `Some` until `drop`, which takes it to shut it down without blocking.
    runtime: Option<Runtime>,
    bucket: String,
    /// The normalized prefix: no leading or trailing `/`, possibly empty.
    prefix: String,
    /// For error messages and `describe`: the endpoint URL, or `aws` for the default.
    endpoint: String,
}

impl S3Volume {
    /// Builds the client and its runtime. Sends no request: a wrong endpoint, missing bucket
    /// or bad credentials surface as `StorageError::VolumeIo` on the first call.
    ///
    /// Fails with `StorageError::InvalidConfig` when the bucket is empty or the prefix is not
    /// a valid key prefix, and with `StorageError::VolumeIo` when the runtime cannot start.
    pub fn open(config: S3Config) -> Result<S3Volume> {
        if config.bucket.is_empty() {
            return Err(StorageError::InvalidConfig { detail: "s3 bucket is empty".to_string() });
        }
        let prefix = config.prefix.trim_matches('/').to_string();
        if !prefix.is_empty() && !is_valid_name(&prefix) {
            return Err(StorageError::InvalidConfig {
                detail: format!("bad s3 prefix prefix={}", config.prefix),
            });
        }
        let endpoint = config.endpoint.clone().unwrap_or_else(|| "aws".to_string());

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_WORKER_THREADS)
            .thread_name("tierdb-s3")
            .enable_all()
            .build()
            .map_err(|error| StorageError::VolumeIo {
                op: "open",
                object: "*".to_string(),
                detail: format!("endpoint={endpoint} error=cannot start runtime: {error}"),
            })?;

        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&config.bucket)
            .with_region(&config.region)
            .with_access_key_id(&config.access_key_id)
            .with_secret_access_key(&config.secret_access_key)
            .with_allow_http(config.allow_http)
            .with_virtual_hosted_style_request(false)
            // One plain DELETE per object: supported by every S3-compatible store, unlike the
            // bulk `POST /?delete` API.
            .with_disable_bulk_delete(true);
        if let Some(url) = &config.endpoint {
            builder = builder.with_endpoint(url);
        }
        // The HTTP client is built inside the runtime so that anything it sets up belongs to
        // the runtime that will drive its requests.
        let store = {
            let _guard = runtime.enter();
            builder.build()
        }
        .map_err(|error| StorageError::InvalidConfig {
            detail: format!(
                "bad s3 configuration endpoint={endpoint} bucket={} error={error}",
                config.bucket
            ),
        })?;

        Ok(S3Volume { store, runtime: Some(runtime), bucket: config.bucket, prefix, endpoint })
    }

    /// The bucket this volume stores into.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The normalized key prefix (no leading or trailing `/`), possibly empty.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Runs a request on the private runtime and waits for it. A thread that is itself
    /// inside a tokio runtime (the server's connection threads run statements inside one)
    /// must not block on another runtime, so there the request is driven from a short-lived
    /// scoped thread; its cost (tens of microseconds) is small next to an object-store
    /// round trip.
    fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        let runtime = self.runtime.as_ref().expect("runtime lives until drop");
        if tokio::runtime::Handle::try_current().is_err() {
            return runtime.block_on(future);
        }
        std::thread::scope(|scope| {
            scope
                .spawn(|| runtime.block_on(future))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// The full key of object `name`, after checking that `name` is a valid object name.
    fn key_of(&self, name: &str) -> Result<Path> {
        if !is_valid_name(name) {
            return Err(StorageError::InvalidConfig { detail: format!("bad object name={name}") });
        }
        let key = if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.prefix)
        };
        Path::parse(&key).map_err(|error| StorageError::InvalidConfig {
            detail: format!("bad object name={name} error={error}"),
        })
    }

    /// Maps a client error: a missing object on a read becomes `NotFound`, anything else
    /// (including a missing bucket, which S3 also answers with 404) becomes `VolumeIo`.
    fn error(
        &self,
        op: &'static str,
        name: &str,
        detail: &str,
        error: object_store::Error,
    ) -> StorageError {
        if is_missing_object(&error) && matches!(op, "get" | "read_range") {
            return StorageError::NotFound { object: name.to_string() };
        }
        StorageError::VolumeIo {
            op,
            object: name.to_string(),
            detail: format!(
                "endpoint={} bucket={} {detail}error={error}",
                self.endpoint, self.bucket
            ),
        }
    }

    /// The key directory to list for `prefix`: `Some(None)` is the whole bucket, and `None`
    /// means no valid object name can start with `prefix`. `object_store` lists whole
    /// directories while `Volume::list` matches any string prefix, so `list` lists the deepest
    /// directory that contains `prefix` and filters the names.
    fn directory_of(&self, prefix: &str) -> Option<Option<Path>> {
        let directory = prefix.rfind('/').map_or("", |slash| &prefix[..slash]);
        if !directory.is_empty() && !is_valid_name(directory) {
            return None;
        }
        let key = match (self.prefix.is_empty(), directory.is_empty()) {
            (true, true) => return Some(None),
            (true, false) => directory.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{directory}", self.prefix),
        };
        Path::parse(key).ok().map(Some)
    }

    /// The name of `key` relative to the volume prefix, or `None` if it lies outside it.
    fn name_of<'k>(&self, key: &'k str) -> Option<&'k str> {
        if self.prefix.is_empty() {
            Some(key)
        } else {
            key.strip_prefix(self.prefix.as_str())?.strip_prefix('/')
        }
    }
}

/// Whether S3 said the object does not exist. A 404 whose body names `NoSuchBucket` is a
/// missing bucket, a configuration error that must not pass for a missing object (a HEAD
/// response has no body, so there the two cannot be told apart).
fn is_missing_object(error: &object_store::Error) -> bool {
    matches!(error, object_store::Error::NotFound { .. })
        && !error.to_string().contains("<Code>NoSuchBucket</Code>")
}

/// The same rule as `LocalVolume`: non-empty, relative, and no empty, `.` or `..` segment.
fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && name.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
}

fn range_of(name: &str, offset: u64, length: usize) -> Result<Range<u64>> {
    let too_far = || StorageError::VolumeIo {
        op: "read_range",
        object: name.to_string(),
        detail: format!("offset={offset} length={length} error=range exceeds u64"),
    };
    let length = u64::try_from(length).map_err(|_| too_far())?;
    let end = offset.checked_add(length).ok_or_else(too_far)?;
    Ok(offset..end)
}

impl Volume for S3Volume {
    /// One PUT request; S3 makes the object visible atomically, and durably, once it answers.
    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        let key = self.key_of(name)?;
        let payload = PutPayload::from(bytes::Bytes::copy_from_slice(data));
        self.block_on(self.store.put(&key, payload))
            .map(|_| ())
            .map_err(|error| self.error("put", name, &format!("length={} ", data.len()), error))
    }

    /// One GET request; `NotFound` if the object does not exist.
    fn get(&self, name: &str) -> Result<Vec<u8>> {
        let key = self.key_of(name)?;
        let data = self
            .block_on(async { self.store.get(&key).await?.bytes().await })
            .map_err(|error| self.error("get", name, "", error))?;
        Ok(data.to_vec())
    }

    /// One ranged GET request (a HEAD for an empty buffer, to report a missing object).
    /// Fewer bytes than requested, including a range past the end, is `VolumeIo`.
    fn read_range(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<()> {
        let key = self.key_of(name)?;
        let range = range_of(name, offset, buffer.len())?;
        let detail = format!("offset={offset} length={} ", buffer.len());
        if buffer.is_empty() {
            return self
                .block_on(self.store.head(&key))
                .map(|_| ())
                .map_err(|error| self.error("read_range", name, &detail, error));
        }
        let data = self
            .block_on(self.store.get_range(&key, range))
            .map_err(|error| self.error("read_range", name, &detail, error))?;
        if data.len() != buffer.len() {
            return Err(StorageError::VolumeIo {
                op: "read_range",
                object: name.to_string(),
                detail: format!(
                    "endpoint={} bucket={} {detail}received={} error=short read",
                    self.endpoint,
                    self.bucket,
                    data.len()
                ),
            });
        }
        buffer.copy_from_slice(&data);
        Ok(())
    }

    /// One or more LIST requests (S3 pages by 1000 keys). Names are relative to the prefix.
    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let Some(directory) = self.directory_of(prefix) else {
            return Ok(Vec::new());
        };
        let listed: Vec<_> = self
            .block_on(self.store.list(directory.as_ref()).try_collect())
            .map_err(|error| self.error("list", prefix, "", error))?;
        Ok(listed
            .into_iter()
            .filter_map(|meta| {
                let name = self.name_of(meta.location.as_ref())?;
                name.starts_with(prefix)
                    .then(|| ObjectInfo { name: name.to_string(), size: meta.size })
            })
            .collect())
    }

    /// One DELETE request; S3 answers success for a missing key.
    fn delete(&self, name: &str) -> Result<()> {
        let key = self.key_of(name)?;
        match self.block_on(self.store.delete(&key)) {
            Ok(()) => Ok(()),
            Err(error) if is_missing_object(&error) => Ok(()),
            Err(error) => Err(self.error("delete", name, "", error)),
        }
    }

    fn describe(&self) -> String {
        if self.prefix.is_empty() {
            format!("s3://{} (endpoint={})", self.bucket, self.endpoint)
        } else {
            format!("s3://{}/{} (endpoint={})", self.bucket, self.prefix, self.endpoint)
        }
    }
}

impl Drop for S3Volume {
    /// Shuts the runtime down without waiting for its threads, so that dropping the volume
    /// from inside another runtime (where blocking is forbidden) does not panic.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
