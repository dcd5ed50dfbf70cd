//! The rows of a cursor: written whole when it is declared (the executor is push-based),
//! then read forward by FETCH. They go to the executor's `RowStore`: in memory under a
//! work_mem grant from the server's operator memory pool, past it in a file of the temp
//! space (counted against temp_file_limit), removed when the cursor is dropped.

use crate::error::Result;
use crate::exec::spill::{RowStore, SpillTarget, StoredRows};
use crate::types::Row;

/// Rows handed out in the order they were pushed; every push comes before the first read.
pub(crate) trait CursorRows: Send {
    fn push(&mut self, row: Row) -> Result<()>;
    fn next(&mut self) -> Result<Option<Row>>;
}

/// The store a new cursor uses.
pub(crate) fn new(target: SpillTarget, work_mem_bytes: usize) -> Box<dyn CursorRows> {
    Box::new(Stored::Filling(Some(RowStore::with_target(target, work_mem_bytes))))
}

enum Stored {
    /// Being written (None only while turning into `Reading`).
    Filling(Option<RowStore>),
    Reading(StoredRows),
}

impl CursorRows for Stored {
    fn push(&mut self, row: Row) -> Result<()> {
        match self {
            Stored::Filling(Some(store)) => store.push(row),
            _ => unreachable!("a cursor's rows are all pushed before the first read"),
        }
    }

    fn next(&mut self) -> Result<Option<Row>> {
        if let Stored::Filling(store) = self {
            let store = store.take().expect("a store being filled");
            *self = Stored::Reading(store.into_rows()?);
        }
        match self {
            Stored::Reading(rows) => rows.next_row(),
            Stored::Filling(_) => unreachable!("turned into Reading above"),
        }
    }
}
