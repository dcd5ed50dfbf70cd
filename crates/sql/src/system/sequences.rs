//! What a session and a statement keep of the sequences they call (exec/sequences.rs runs
//! the calls).

use std::collections::HashMap;

use crate::types::SqlType;

/// A sequence as nextval and its kin use it.
#[derive(Clone, Debug, PartialEq)]
pub struct SequenceRef {
    pub oid: u32,
    /// The catalog's name of the sequence (`Catalog::nextval`'s key).
    pub name: String,
    /// The type of the column it serves: its values stay within that type's range.
    pub ty: SqlType,
    /// A sequence made by CREATE SEQUENCE (its options in the catalog), not a serial or
    /// identity column's.
    pub standalone: bool,
    /// The sequence's MINVALUE and MAXVALUE.
    pub minimum: i64,
    pub maximum: i64,
}

/// What the session remembers of its sequence calls. Bounded by the number of sequences
/// the database has: one entry per sequence the session advanced or set.
#[derive(Debug, Default)]
pub struct SequenceValues {
    /// Sequence OID -> the value currval returns.
    pub(crate) current: HashMap<u32, i64>,
    /// The sequence nextval advanced last (lastval's).
    pub(crate) last_advanced: Option<u32>,
}

impl SequenceValues {
    /// DISCARD SEQUENCES: forgets every value.
    pub fn clear(&mut self) {
        self.current.clear();
        self.last_advanced = None;
    }
}
