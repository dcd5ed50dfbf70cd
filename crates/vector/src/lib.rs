//! Vector values as pgvector defines them and the distance kernels over them.
//!
//! The kernels reproduce pgvector 0.8.2's float results bit for bit (the differential
//! tests compare them): see `dense` for the summation order and why it is fixed. The SQL
//! layer binds types and operators to these; the vector indexes (issue 14) will call the same
//! kernels so an index scan orders rows exactly as a sort over the SQL operator does.

mod bits;
mod dense;
mod half_precision;
pub mod hnsw;
mod index;
pub mod ivfflat;
mod sparse;

pub use bits::{
    bit_words, bits_to_words, hamming_distance, hamming_distance_words, jaccard_distance,
    jaccard_distance_words, words_to_bits, BITS_PER_WORD,
};
pub use dense::{
    cosine_distance, inner_product, l1_distance, l2_squared_distance, norm, portable,
    simd_path_name,
};
/// The half-precision element type of `halfvec` values (the `half` crate's).
pub use half::f16;
pub use half_precision::{
    halfvec_cosine_distance, halfvec_inner_product, halfvec_l1_distance,
    halfvec_l2_squared_distance, halfvec_norm,
};
pub use index::{IndexError, Metric, SearchResult};
pub use sparse::{
    sparse_cosine_distance, sparse_inner_product, sparse_l1_distance, sparse_l2_squared_distance,
    SparseSlice,
};

/// pgvector's largest dimension count of a stored `vector` and `halfvec` value.
pub const VECTOR_DIMENSIONS_MAX: usize = 16_000;
