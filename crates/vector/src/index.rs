//! What the vector indexes share (docs/design/014-vector-indexes.md): the metric of an
//! operator class, a search result, the distance order of heaps and the error type.

use std::cmp::Ordering;

use tierdb_common::{ErrorKind, PageId};
use tierdb_storage::StorageError;

/// The HNSW module's name for the shared error type.
pub type HnswError = IndexError;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("corrupt vector index page page_id={page_id}: {detail}")]
    Corrupt { page_id: PageId, detail: String },
    #[error("{0}")]
    InvalidArgument(String),
}

impl IndexError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            IndexError::Storage(error) => error.kind(),
            IndexError::Corrupt { .. } => ErrorKind::Corruption,
            IndexError::InvalidArgument(_) => ErrorKind::InvalidArgument,
        }
    }
}

pub type Result<T, E = IndexError> = std::result::Result<T, E>;

/// The distance an index orders by: the SQL operator of its operator class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// `<->`, vector_l2_ops.
    L2,
    /// `<#>` (the negated inner product), vector_ip_ops.
    InnerProduct,
    /// `<=>`, vector_cosine_ops.
    Cosine,
    /// `<+>`, vector_l1_ops.
    L1,
}

impl Metric {
    /// The metric's code in the meta page and in catalogs.
    pub fn code(self) -> u8 {
        match self {
            Metric::L2 => 1,
            Metric::InnerProduct => 2,
            Metric::Cosine => 3,
            Metric::L1 => 4,
        }
    }

    pub fn from_code(code: u8) -> Option<Metric> {
        Some(match code {
            1 => Metric::L2,
            2 => Metric::InnerProduct,
            3 => Metric::Cosine,
            4 => Metric::L1,
            _ => return None,
        })
    }

    /// The value of the SQL operator, computed by the same kernels, so an index scan orders
    /// rows as a sort on the operator does.
    pub fn distance(self, a: &[f32], b: &[f32]) -> f64 {
        match self {
            Metric::L2 => f64::from(crate::l2_squared_distance(a, b)).sqrt(),
            Metric::InnerProduct => f64::from(-crate::inner_product(a, b)),
            Metric::Cosine => crate::cosine_distance(a, b),
            Metric::L1 => f64::from(crate::l1_distance(a, b)),
        }
    }

    /// Whether a vector has a defined distance under this metric (a zero vector has no
    /// cosine distance; pgvector does not index it).
    pub fn indexable(self, vector: &[f32]) -> bool {
        self != Metric::Cosine || vector.iter().any(|&value| value != 0.0)
    }
}

/// One result of a search: the operator's value and the row key of the entry.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchResult {
    pub distance: f64,
    pub key: Vec<u8>,
}

/// A distance for heaps: ordered by `total_cmp` (a NaN cosine distance sorts last).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Distance(pub f64);

impl Eq for Distance {}

impl PartialOrd for Distance {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Distance {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}
