//! Support shared by tierdb's tests and benchmarks: a private MinIO server on loopback.

mod minio;

pub use minio::{MinioServer, ACCESS_KEY, BUCKET, REGION, SECRET_KEY};
