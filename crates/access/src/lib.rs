//! tierdb's access methods: order-preserving (memcomparable) key encoding of typed, composite
//! values, and (next) the B+tree that stores them in pages of the page store.

mod key;

pub use key::{decode_key, encode_key, KeyColumn, KeyError, KeyKind, KeyValue};
