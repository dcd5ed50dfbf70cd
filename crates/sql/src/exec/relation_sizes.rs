//! pg_relation_size, pg_table_size, pg_indexes_size and pg_total_relation_size: the bytes
//! of the pages a table's or an index's B+tree holds in the page store (its meta and
//! free-list pages, nodes, overflow pages and free list; the engine counts them as the tree
//! takes them: `BTree::page_count`). A primary key has no pages of its own: the table's
//! tree is ordered by it (clustered), so its pages count as the table's. A view has no pages (0, as in PostgreSQL), nor has a
//! sequence (its state is a row of a catalog table). A vector index's pages are not counted
//! yet: asking for its size is 0A000 rather than a made-up figure.

use crate::catalog::TableMeta;
use crate::error::{Result, SqlError};
use crate::functions::RelationSize;
use crate::system::SessionInfo;

/// The bytes of one page.
const PAGE_BYTES: u64 = tierdb_common::PAGE_SIZE as u64;

/// The size `kind` of the relation with OID `oid`; None when it names no table, index or
/// sequence the session sees.
pub(crate) fn relation_size(
    oid: i64,
    kind: RelationSize,
    session: &SessionInfo<'_>,
) -> Result<Option<i64>> {
    let Ok(oid) = u32::try_from(oid) else { return Ok(None) };
    let visible = |table: &TableMeta| !session.hidden_tables.contains(&table.name);
    if session
        .catalog
        .sequence_objects()
        .iter()
        .any(|sequence| sequence.oid == oid && visible(sequence))
    {
        return Ok(Some(0));
    }
    for table in session.catalog.tables().iter().filter(|table| visible(table)) {
        if table.oid == oid {
            return table_size(table, kind, session).map(Some);
        }
        if let Some(index) = table.indexes.iter().find(|index| index.oid == oid) {
            let pages = match kind {
                // An index has no indexes of its own, and a primary key is the table's
                // own tree (tables are clustered on it): its pages are the table's.
                RelationSize::Indexes => 0,
                _ if index.primary => 0,
                _ => index_pages(table, &index.name, session)?,
            };
            return bytes(pages).map(Some);
        }
    }
    Ok(None)
}

fn table_size(table: &TableMeta, kind: RelationSize, session: &SessionInfo<'_>) -> Result<i64> {
    if table.is_view() {
        return Ok(0);
    }
    let pages = session.catalog.engine().table_handle(&table.name)?.relation_pages()?;
    let own = pages.table.ok_or_else(|| uncounted(&table.name))?;
    let indexes = || -> Result<u64> {
        pages.indexes.iter().try_fold(0_u64, |sum, (name, pages)| {
            let pages = pages.ok_or_else(|| uncounted(name))?;
            Ok(sum.saturating_add(pages))
        })
    };
    bytes(match kind {
        RelationSize::Relation | RelationSize::Table => own,
        RelationSize::Indexes => indexes()?,
        RelationSize::Total => own.saturating_add(indexes()?),
    })
}

fn index_pages(table: &TableMeta, index: &str, session: &SessionInfo<'_>) -> Result<u64> {
    let pages = session.catalog.engine().table_handle(&table.name)?.relation_pages()?;
    let (_, pages) = pages
        .indexes
        .iter()
        .find(|(name, _)| name == index)
        .ok_or_else(|| SqlError::internal(format!("index \"{index}\" is not in the engine")))?;
    pages.ok_or_else(|| uncounted(index))
}

/// A tree whose pages are not counted: a vector index, or a tree from before the count.
fn uncounted(name: &str) -> SqlError {
    SqlError::unsupported(format!(
        "the size of relation \"{name}\" is not known (vector indexes and trees created \
         before tierdb counted their pages are not measured)"
    ))
}

fn bytes(pages: u64) -> Result<i64> {
    i64::try_from(pages.saturating_mul(PAGE_BYTES)).map_err(|_| SqlError::out_of_range("bigint"))
}
