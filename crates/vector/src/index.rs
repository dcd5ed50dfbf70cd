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
    /// `<->` over halfvec, halfvec_l2_ops: the index holds the halves widened to f32
    /// (exactly), distances are pgvector's halfvec kernels.
    HalfL2,
    /// `<#>` over halfvec, halfvec_ip_ops.
    HalfInnerProduct,
    /// `<=>` over halfvec, halfvec_cosine_ops.
    HalfCosine,
    /// `<+>` over halfvec, halfvec_l1_ops.
    HalfL1,
    /// `<~>` over bit, bit_hamming_ops: the index holds the packed bits in 32-bit words
    /// (`crate::bits_to_words`), distances are popcounts over them.
    BitHamming,
    /// `<%>` over bit, bit_jaccard_ops.
    BitJaccard,
}

impl Metric {
    /// The metric's code in the meta page and in catalogs.
    pub fn code(self) -> u8 {
        match self {
            Metric::L2 => 1,
            Metric::InnerProduct => 2,
            Metric::Cosine => 3,
            Metric::L1 => 4,
            Metric::HalfL2 => 5,
            Metric::HalfInnerProduct => 6,
            Metric::HalfCosine => 7,
            Metric::HalfL1 => 8,
            Metric::BitHamming => 9,
            Metric::BitJaccard => 10,
        }
    }

    pub fn from_code(code: u8) -> Option<Metric> {
        Some(match code {
            1 => Metric::L2,
            2 => Metric::InnerProduct,
            3 => Metric::Cosine,
            4 => Metric::L1,
            5 => Metric::HalfL2,
            6 => Metric::HalfInnerProduct,
            7 => Metric::HalfCosine,
            8 => Metric::HalfL1,
            9 => Metric::BitHamming,
            10 => Metric::BitJaccard,
            _ => return None,
        })
    }

    /// The float metric of the same geometry (what k-means, the probes and the checks
    /// go by; a halfvec metric differs only in the kernels of `distance`). A bit metric is
    /// its own.
    pub fn base(self) -> Metric {
        match self {
            Metric::BitHamming | Metric::BitJaccard => self,
            Metric::L2 | Metric::HalfL2 => Metric::L2,
            Metric::InnerProduct | Metric::HalfInnerProduct => Metric::InnerProduct,
            Metric::Cosine | Metric::HalfCosine => Metric::Cosine,
            Metric::L1 | Metric::HalfL1 => Metric::L1,
        }
    }

    /// Whether the indexed column is a halfvec (its stored elements are halves).
    pub fn is_half(self) -> bool {
        self != self.base()
    }

    /// The halfvec metric of the same geometry (a bit metric has none: itself).
    pub fn half(self) -> Metric {
        match self.base() {
            Metric::L2 => Metric::HalfL2,
            Metric::InnerProduct => Metric::HalfInnerProduct,
            Metric::Cosine => Metric::HalfCosine,
            Metric::L1 => Metric::HalfL1,
            other => other,
        }
    }

    /// Whether the indexed column is a bit string (its index vectors are words of bits).
    pub fn is_bits(self) -> bool {
        matches!(self, Metric::BitHamming | Metric::BitJaccard)
    }

    /// The f32 slots an index stores per vector of `dimensions` (a bit metric's dimensions
    /// are bits, 32 to a slot; the others' one each).
    pub fn elements(self, dimensions: usize) -> usize {
        if self.is_bits() {
            crate::bit_words(dimensions)
        } else {
            dimensions
        }
    }

    /// The value of the SQL operator, computed by the same kernels, so an index scan orders
    /// rows as a sort on the operator does.
    pub fn distance(self, a: &[f32], b: &[f32]) -> f64 {
        match self {
            Metric::L2 => f64::from(crate::l2_squared_distance(a, b)).sqrt(),
            Metric::InnerProduct => f64::from(-crate::inner_product(a, b)),
            Metric::Cosine => crate::cosine_distance(a, b),
            Metric::L1 => f64::from(crate::l1_distance(a, b)),
            Metric::HalfL2 | Metric::HalfInnerProduct | Metric::HalfCosine | Metric::HalfL1 => {
                half_distance(self, a, b)
            }
            // A count of bits, far below 2^53: exact in f64, as pgvector's float8 result.
            #[allow(clippy::cast_precision_loss)]
            Metric::BitHamming => crate::hamming_distance_words(a, b) as f64,
            Metric::BitJaccard => crate::jaccard_distance_words(a, b),
        }
    }

    /// Whether a vector has a defined distance under this metric (a zero vector has no
    /// cosine distance; pgvector does not index it).
    pub fn indexable(self, vector: &[f32]) -> bool {
        self.base() != Metric::Cosine || vector.iter().any(|&value| value != 0.0)
    }
}

/// A halfvec metric's distance over widened halves: narrowed back (exactly, they were
/// halves; a quantized navigation value rounds) and summed by pgvector's halfvec kernels.
fn half_distance(metric: Metric, a: &[f32], b: &[f32]) -> f64 {
    let halves = |values: &[f32]| -> Vec<half::f16> {
        values.iter().map(|value| half::f16::from_f32(*value)).collect()
    };
    let (a, b) = (halves(a), halves(b));
    match metric.base() {
        Metric::L2 => f64::from(crate::halfvec_l2_squared_distance(&a, &b)).sqrt(),
        Metric::InnerProduct => f64::from(-crate::halfvec_inner_product(&a, &b)),
        Metric::Cosine => crate::halfvec_cosine_distance(&a, &b),
        _ => f64::from(crate::halfvec_l1_distance(&a, &b)),
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
