//! tierdb's access methods: order-preserving (memcomparable) key encoding of typed, composite
//! values, and the B+tree that stores them in pages of the page store.

mod btree;
mod compaction;
mod delta;
mod key;
mod node;
mod sort;

pub use btree::{BTree, BTreeError, DestroyProgress, Direction, RangeIter, VALUE_BYTES_MAX};
pub use compaction::compaction_of;
pub use delta::{plan_payload_change, PayloadChange, MOVE_BYTES_MIN};
pub use key::{decode_key, encode_key, KeyColumn, KeyError, KeyKind, KeyValue};
pub use node::{
    diff_ranges, internal_cell_bytes, leaf_cell_bytes, CellValue, Node, NodeCorruption, NodeMut,
    INLINE_VALUE_BYTES_MAX, KEY_BYTES_MAX,
};
/// The decimal type of `KeyValue::Numeric`, re-exported so that higher crates use the same
/// version.
pub use rust_decimal::Decimal;
pub use sort::{ExternalSort, SortRecord, SortStats, Sorted, SORT_FAN_IN_MAX, SORT_FAN_IN_MIN};
