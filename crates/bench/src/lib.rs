//! tierdb's benchmarks. Each prints its figures (a table, or one JSON object with `--json`);
//! none asserts on time. docs/BENCHMARKS.md records the commands and results.

mod kv;
mod latency;
mod pages;
mod volumes;
mod writes;
mod zipf;

pub use kv::{run_kv, KvArgs};
pub use latency::LatencySummary;
pub use pages::{run_pages, PagesArgs};
pub use writes::{run_writes, WritesArgs};
pub use zipf::ScrambledZipfian;
