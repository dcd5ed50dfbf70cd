//! A transaction's reads: point reads, range scans and index scans.

use std::ops::Bound;

use tierdb_access::Direction;

use crate::error::{EngineError, Result};
use crate::row::{check_row_columns, Row, Value, Version, Versions};
use crate::txn::TxnId;

use super::Transaction;
use crate::engine::layout::Layout;
use crate::engine::table::{
    key_range, resume_bound, Projection, RowKey, RowPage, TableHandle, TableRef,
};

/// The most rows a scan page reserves room for before reading (larger pages grow).
const PAGE_ROWS_RESERVED_MAX: usize = 1024;

impl Transaction {
    /// The logical row (read through `layout`) of the version of `versions` this snapshot
    /// sees, if any.
    pub(super) fn visible_row(&self, layout: &Layout, versions: &[Version]) -> Result<Option<Row>> {
        for version in versions {
            if let Some(outcome) =
                self.version_outcome(layout, version.xmin, version.xmax, &version.row, None)?
            {
                return Ok(outcome);
            }
        }
        Ok(None)
    }

    /// `visible_row` over a stored value, decoding only the visible version's row.
    pub(in crate::engine) fn visible_row_stored(
        &self,
        layout: &Layout,
        stored: &[u8],
    ) -> Result<Option<Row>> {
        self.visible_row_projected(layout, stored, Projection::ALL)
    }

    /// `visible_row_stored`, decoding only `projection.columns` (the others read as NULL), or
    /// none (`projection.values` false: an empty row). A loop over `Versions` rather than a
    /// visitor: this runs for every entry of a scan.
    fn visible_row_projected(
        &self,
        layout: &Layout,
        stored: &[u8],
        projection: Projection<'_>,
    ) -> Result<Option<Row>> {
        let mut versions = Versions::new(stored);
        while let Some(version) = versions.next_version() {
            if !self.engine.txns.visible(&self.snapshot, version.xmin)? {
                continue;
            }
            if self.deleted_by(version.xmax)? {
                return Ok(None);
            }
            if !projection.values {
                check_row_columns(version.row, projection.columns)?;
                return Ok(Some(Row::new()));
            }
            return layout.decode_projected(version.row, projection.columns).map(Some);
        }
        versions.finish()?;
        Ok(None)
    }

    /// Whether a version with this `xmax` is deleted as this snapshot sees it.
    fn deleted_by(&self, xmax: TxnId) -> Result<bool> {
        Ok(xmax != 0 && (xmax == self.id || self.engine.txns.visible(&self.snapshot, xmax)?))
    }

    /// For one version, newest first: `None` if this snapshot does not see its creator (look
    /// at older versions); else the row as this snapshot sees it (`Some(None)`: deleted).
    fn version_outcome(
        &self,
        layout: &Layout,
        xmin: TxnId,
        xmax: TxnId,
        row: &[u8],
        columns: Option<&[bool]>,
    ) -> Result<Option<Option<Row>>> {
        if !self.engine.txns.visible(&self.snapshot, xmin)? {
            return Ok(None);
        }
        let deleted = self.deleted_by(xmax)?;
        Ok(Some(if deleted { None } else { Some(layout.decode_projected(row, columns)?) }))
    }

    /// The row with primary key `key` and its row key, as this transaction sees it.
    pub fn get_keyed(
        &mut self,
        table: &(impl TableRef + ?Sized),
        key: &[Value],
    ) -> Result<Option<(RowKey, Row)>> {
        self.run(|txn| {
            let table = table.resolve(txn)?.table()?;
            let encoded = table.encode_primary_key(key)?;
            match table.tree.get(&encoded)? {
                Some(bytes) => {
                    Ok(txn.visible_row_stored(&table.layout, &bytes)?.map(|row| (encoded, row)))
                }
                None => Ok(None),
            }
        })
    }

    /// The row with primary key `key` as this transaction sees it.
    pub fn get(&mut self, table: &(impl TableRef + ?Sized), key: &[Value]) -> Result<Option<Row>> {
        Ok(self.get_keyed(table, key)?.map(|(_, row)| row))
    }

    /// Rows with primary keys in the given range, in key order.
    pub fn scan(
        &mut self,
        table: &(impl TableRef + ?Sized),
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
    ) -> Result<Vec<Row>> {
        self.run(|txn| {
            let page = txn.keyed_rows(
                &*table.resolve(txn)?,
                (lower, upper),
                None,
                usize::MAX,
                Direction::Forward,
                Projection::ALL,
            )?;
            Ok(page.rows.into_iter().map(|(_, row)| row).collect())
        })
    }

    /// Up to `limit` visible rows with primary keys in the given range, in ascending key
    /// order, with their row keys; after `resume_after` (the last row key of the previous
    /// page) when given. Each page is an operation: outside statement mode, READ COMMITTED
    /// pages see different snapshots, but a row committed before the first page and not
    /// changed since is returned exactly once. For a table without a primary key the bounds
    /// are on the hidden row id (use `Unbounded`).
    pub fn scan_page(
        &mut self,
        table: &(impl TableRef + ?Sized),
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        resume_after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(RowKey, Row)>> {
        self.scan_page_ordered(table, Direction::Forward, (lower, upper), resume_after, limit)
    }

    /// `scan_page` in either direction, decided at run time (`Direction::Backward`: descending
    /// key order). `bounds` are (lower, upper) in either order; `resume_after` is the last row
    /// key of the previous page in `direction`.
    pub fn scan_page_ordered(
        &mut self,
        table: &(impl TableRef + ?Sized),
        direction: Direction,
        bounds: (Bound<&[Value]>, Bound<&[Value]>),
        resume_after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(RowKey, Row)>> {
        let page = self.scan_page_projected(
            table,
            direction,
            bounds,
            resume_after,
            limit,
            Projection::ALL,
        )?;
        Ok(page.rows)
    }

    /// `scan_page_ordered` returning only what `projection` asks for, and the key to resume
    /// after (`RowPage::resume_after`, the last row's key, whether or not keys are returned).
    pub fn scan_page_projected(
        &mut self,
        table: &(impl TableRef + ?Sized),
        direction: Direction,
        (lower, upper): (Bound<&[Value]>, Bound<&[Value]>),
        resume_after: Option<&[u8]>,
        limit: usize,
        projection: Projection<'_>,
    ) -> Result<RowPage> {
        self.run(|txn| {
            let table = table.resolve(txn)?;
            txn.keyed_rows(&table, (lower, upper), resume_after, limit, direction, projection)
        })
    }

    fn keyed_rows(
        &self,
        table: &TableHandle,
        (lower, upper): (Bound<&[Value]>, Bound<&[Value]>),
        resume_after: Option<&[u8]>,
        limit: usize,
        direction: Direction,
        projection: Projection<'_>,
    ) -> Result<RowPage> {
        let table = table.table()?;
        let (mut lower, mut upper) = key_range(&table.key_columns, &table.def.name, lower, upper)?;
        match direction {
            Direction::Forward => lower = resume_bound(lower, resume_after, direction),
            Direction::Backward => upper = resume_bound(upper, resume_after, direction),
        }
        // Reserved up front: growing by doubling moved the page's rows up to 8 times.
        let reserved = limit.min(PAGE_ROWS_RESERVED_MAX);
        let mut page = RowPage { rows: Vec::with_capacity(reserved), resume_after: None };
        if limit == 0 {
            return Ok(page);
        }
        let mut entries = table.tree.range(
            lower.as_ref().map(Vec::as_slice),
            upper.as_ref().map(Vec::as_slice),
            direction,
        );
        while let Some(entry) = entries.next_entry() {
            let (key, bytes) = entry?;
            if let Some(row) = self.visible_row_projected(&table.layout, bytes, projection)? {
                // Without keys, only the page's last key is copied (to resume after it).
                let row_key = if projection.keys { key.to_vec() } else { RowKey::new() };
                page.rows.push((row_key, row));
                if page.rows.len() == limit {
                    page.resume_after = Some(key.to_vec());
                    break;
                }
            }
        }
        Ok(page)
    }

    /// Rows found through a secondary index with index values in the given range, in index
    /// order. Each entry is checked against the row's visible version.
    pub fn index_scan(
        &mut self,
        table: &(impl TableRef + ?Sized),
        index: &str,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
    ) -> Result<Vec<Row>> {
        self.run(|txn| {
            let entries =
                txn.index_rows(&*table.resolve(txn)?, index, lower, upper, None, usize::MAX)?;
            Ok(entries.into_iter().map(|(_, _, row)| row).collect())
        })
    }

    /// Up to `limit` rows found through a secondary index with index values in the given
    /// range, in index order, as (index entry key, row key, row); after the entry key
    /// `resume_after` (the last of the previous page) when given. Entries are checked against
    /// the row's visible version as in `index_scan`.
    pub fn index_scan_page(
        &mut self,
        table: &(impl TableRef + ?Sized),
        index: &str,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        resume_after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, RowKey, Row)>> {
        self.run(|txn| {
            let table = table.resolve(txn)?;
            txn.index_rows(&table, index, lower, upper, resume_after, limit)
        })
    }

    fn index_rows(
        &self,
        table: &TableHandle,
        index: &str,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        resume_after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, RowKey, Row)>> {
        let table = table.table()?;
        let Some(index) = table.indexes.iter().find(|candidate| candidate.def.name == index) else {
            return Err(EngineError::UndefinedTable { name: index.to_string() });
        };
        let (lower, upper) = key_range(&index.columns, &index.def.name, lower, upper)?;
        let lower = resume_bound(lower, resume_after, Direction::Forward);
        let mut rows = Vec::new();
        if limit == 0 {
            return Ok(rows);
        }
        let entries = index.tree.range(
            lower.as_ref().map(Vec::as_slice),
            upper.as_ref().map(Vec::as_slice),
            Direction::Forward,
        );
        for entry in entries {
            let (entry_key, row_key) = entry?;
            let Some(bytes) = table.tree.get(&row_key)? else { continue };
            let Some(row) = self.visible_row_stored(&table.layout, &bytes)? else { continue };
            // Stale entry: the visible version has other index values.
            let mut expected = index.prefix(&row)?;
            expected.extend_from_slice(&row_key);
            if expected == entry_key {
                rows.push((entry_key, row_key, row));
                if rows.len() == limit {
                    break;
                }
            }
        }
        Ok(rows)
    }
}
