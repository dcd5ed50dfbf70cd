//! tierdb's PostgreSQL wire-protocol server (pgwire): one `Session` per connection, pg_hba-like
//! rules choosing trust, SCRAM-SHA-256 or reject, simple and extended query, COPY, cancel,
//! Prometheus metrics and clean shutdown. docs/design/009-sql-server.md describes it.

mod auth;
mod capacity;
mod config;
mod connection;
mod dashboard;
mod frontend;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod handler;
mod hba;
mod memory;
mod metrics;
mod results;
mod server;
mod streaming;
mod tls;
mod wire;

pub use config::{ConfigReloader, ServerConfig};
pub use memory::set_release_hook as set_memory_release_hook;
pub use metrics::render as render_metrics;
pub use server::serve;
