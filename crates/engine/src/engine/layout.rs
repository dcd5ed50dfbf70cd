//! A table's column layout (docs/design/016-column-layout-changes.md): the logical columns
//! the engine API reads and writes, over the physical slots of a stored row. Slots are
//! never reused, so a value an aborted transaction, another session or a dropped column
//! left in a slot is never read as another column's. A stored row holds a prefix of the
//! slots (rows written before an ADD COLUMN are shorter); a slot past the stored values
//! reads as its column's missing value (PostgreSQL's attmissingval).

use tierdb_access::KeyKind;

use crate::error::{EngineError, Result};
use crate::row::{decode_row_columns, encode_values, Row, Value};

/// The layout of one table version. Immutable: a change makes a new one (`changed`).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Layout {
    /// The slot of each logical column, in column order.
    slots: Vec<usize>,
    /// The value of each logical column in a row stored before its slot existed.
    missing: Vec<Value>,
    /// The kind of every slot ever made (its length is the slot count): a slot keeps its
    /// kind, so a slot handed back by a rollback reads values of the type it was made for.
    slot_kinds: Vec<KeyKind>,
    /// Whether column `i` is slot `i` for every column and there is no other slot: a row
    /// is stored as the engine API sees it.
    identity: bool,
}

impl Layout {
    /// The layout of a table never altered: column `i` in slot `i`, no missing values.
    /// `kinds`: the columns' kinds, in order.
    pub(super) fn identity(kinds: Vec<KeyKind>) -> Layout {
        Layout::build((0..kinds.len()).collect(), vec![Value::Null; kinds.len()], kinds)
    }

    /// A layout from its parts, as checked by `changed` or by the catalog's decoder.
    pub(super) fn build(
        slots: Vec<usize>,
        missing: Vec<Value>,
        slot_kinds: Vec<KeyKind>,
    ) -> Layout {
        assert_eq!(slots.len(), missing.len(), "one missing value per column");
        assert!(slots.iter().all(|&slot| slot < slot_kinds.len()), "slots below the slot count");
        let identity = slots.len() == slot_kinds.len()
            && slots.iter().enumerate().all(|(column, &slot)| column == slot);
        Layout { slots, missing, slot_kinds, identity }
    }

    pub(super) fn slots(&self) -> &[usize] {
        &self.slots
    }

    pub(super) fn missing(&self) -> &[Value] {
        &self.missing
    }

    pub(super) fn slot_kinds(&self) -> &[KeyKind] {
        &self.slot_kinds
    }

    /// Whether the catalog entry needs its layout section: tables never altered keep
    /// entries byte-identical to those written before layouts existed.
    pub(super) fn is_plain(&self) -> bool {
        self.identity && self.missing.iter().all(|value| matches!(value, Value::Null))
    }

    /// The logical position of the column stored in `slot`, if one is.
    pub(super) fn position_of_slot(&self, slot: usize) -> Option<usize> {
        self.slots.iter().position(|&known| known == slot)
    }

    /// The logical row of a stored row.
    pub(super) fn decode(&self, bytes: &[u8]) -> Result<Row> {
        self.decode_projected(bytes, None)
    }

    /// The logical row of a stored row, decoding only the logical `columns` marked (None:
    /// all; the others read as NULL). With the identity layout and a full row this is the
    /// stored row as decoded, without a copy.
    pub(super) fn decode_projected(&self, bytes: &[u8], columns: Option<&[bool]>) -> Result<Row> {
        if self.identity {
            let mut row = decode_row_columns(bytes, columns)?;
            if row.len() == self.slots.len() {
                return Ok(row);
            }
            // A row stored before a column was added (shorter), or by a handle that knew
            // slots this (older) handle does not (longer: those slots are not ours).
            row.truncate(self.slots.len());
            let wanted = |column: usize| {
                columns.is_none_or(|marks| marks.get(column).copied().unwrap_or(true))
            };
            for column in row.len()..self.slots.len() {
                row.push(if wanted(column) { self.missing[column].clone() } else { Value::Null });
            }
            return Ok(row);
        }
        let slot_marks = columns.map(|marks| self.slot_marks(marks));
        let mut stored = decode_row_columns(bytes, slot_marks.as_deref())?;
        let row = self
            .slots
            .iter()
            .zip(&self.missing)
            .map(|(&slot, missing)| match stored.get_mut(slot) {
                Some(value) => std::mem::replace(value, Value::Null),
                None => missing.clone(),
            })
            .collect();
        Ok(row)
    }

    /// The slots to decode for the logical `columns` marked: the others are skipped.
    fn slot_marks(&self, columns: &[bool]) -> Vec<bool> {
        let mut marks = vec![false; self.slot_kinds.len()];
        for (column, &slot) in self.slots.iter().enumerate() {
            marks[slot] = columns.get(column).copied().unwrap_or(true);
        }
        marks
    }

    /// The stored form of logical row `row`: every slot, NULL in the orphaned ones.
    pub(super) fn encode(&self, row: &[Value]) -> Vec<u8> {
        assert_eq!(row.len(), self.slots.len(), "rows are checked before they are encoded");
        let mut out = Vec::new();
        if self.identity {
            encode_values(row.iter(), &mut out);
            return out;
        }
        let mut stored: Vec<&Value> = vec![&Value::Null; self.slot_kinds.len()];
        for (value, &slot) in row.iter().zip(&self.slots) {
            stored[slot] = value;
        }
        encode_values(stored.into_iter(), &mut out);
        out
    }

    /// The layout after `Engine::set_layout(columns, slots, missing)`, checked: one slot per
    /// column, slots distinct, each an existing slot of the same kind or the next new one
    /// (at most one new slot per change), a kept column keeps its missing value, and the
    /// missing values are NULL or of their column's kind.
    pub(super) fn changed(
        &self,
        table: &str,
        kinds: &[KeyKind],
        slots: Vec<usize>,
        missing: Vec<Value>,
    ) -> Result<Layout> {
        let invalid =
            |detail: String| EngineError::InvalidRow { detail: format!("table={table}: {detail}") };
        if slots.len() != kinds.len() || missing.len() != kinds.len() {
            return Err(invalid("one slot and one missing value per column".to_string()));
        }
        let mut slot_kinds = self.slot_kinds.clone();
        for (position, (&kind, &slot)) in kinds.iter().zip(&slots).enumerate() {
            if slots[..position].contains(&slot) {
                return Err(invalid(format!("slot={slot} named twice")));
            }
            if slot == slot_kinds.len() && slot == self.slot_kinds.len() {
                slot_kinds.push(kind);
            } else if slot_kinds.get(slot) != Some(&kind) {
                return Err(invalid(format!("slot={slot} is not a slot of kind={:?}", kind)));
            }
            if let Some(kept) = self.position_of_slot(slot) {
                if self.missing[kept] != missing[position] {
                    return Err(invalid(format!("slot={slot} keeps its missing value")));
                }
            }
            if !value_fits(&missing[position], kind) {
                return Err(invalid(format!("missing value of slot={slot} is not a {:?}", kind)));
            }
        }
        Ok(Layout::build(slots, missing, slot_kinds))
    }
}

/// Whether `value` can be stored in a column of `kind`.
pub(super) fn value_fits(value: &Value, kind: KeyKind) -> bool {
    matches!(
        (value, kind),
        (Value::Null, _)
            | (Value::Bool(_), KeyKind::Bool)
            | (Value::Int(_), KeyKind::Int)
            | (Value::Float(_), KeyKind::Float)
            | (Value::Text(_), KeyKind::Text)
            | (Value::Bytes(_), KeyKind::Bytes)
            | (Value::Numeric(_), KeyKind::Numeric)
    )
}
