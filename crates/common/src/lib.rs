//! Shared vocabulary of tierdb: identifiers, the 8 KiB page format, the public error kind,
//! statistics primitives and a deterministic random generator.
//!
//! Every other crate depends on this one and on nothing above it.

mod error;
mod ids;
mod page;
mod rng;
mod stats;

pub use error::ErrorKind;
pub use ids::{Lsn, PageId, SegmentId};
pub use page::{
    Page, PageCorruption, PageType, PAGE_FORMAT_VERSION, PAGE_HEADER_SIZE, PAGE_PAYLOAD_SIZE,
    PAGE_SIZE,
};
pub use rng::SplitMix64;
pub use stats::{
    elapsed_ns, op_counters_snapshot, with_op_counters, Counter, Histogram, HistogramSnapshot,
    OpCounters,
};
