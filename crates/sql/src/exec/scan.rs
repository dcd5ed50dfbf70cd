//! Table scans (key ranges, index lookups, page-at-a-time) and generate_series.

use super::scan_keys::{key_datum, listed_keys};
use super::*;

pub(crate) fn bound_values(
    bound: &Bound<Vec<Expr>>,
    columns: &[usize],
    table: &crate::catalog::TableMeta,
    probe: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Option<Bound<Vec<Value>>>> {
    let exprs = match bound {
        Bound::Unbounded => return Ok(Some(Bound::Unbounded)),
        Bound::Included(exprs) | Bound::Excluded(exprs) => exprs,
    };
    let mut values = Vec::with_capacity(exprs.len());
    for (expr, &column) in exprs.iter().zip(columns) {
        let datum = eval(expr, probe, ctx)?;
        if datum.is_null() {
            // Comparisons with NULL match nothing.
            return Ok(None);
        }
        let ty = &table.columns[column].ty;
        values.push(key_datum(datum, ty)?.to_value(ty)?);
    }
    Ok(Some(match bound {
        Bound::Included(_) => Bound::Included(values),
        Bound::Excluded(_) => Bound::Excluded(values),
        Bound::Unbounded => Bound::Unbounded,
    }))
}

pub(crate) fn as_ref_bound(bound: &Bound<Vec<Value>>) -> Bound<&[Value]> {
    match bound {
        Bound::Included(values) => Bound::Included(values.as_slice()),
        Bound::Excluded(values) => Bound::Excluded(values.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Turns an engine row into datums, moving its strings (no copy per value).
pub(crate) fn decode_row(table: &crate::catalog::TableMeta, values: Vec<Value>) -> Row {
    table
        .columns
        .iter()
        .zip(values)
        .map(|(column, value)| Datum::from_owned_value(value, &column.ty))
        .collect()
}

/// Turns a scan's engine rows into output rows. A filtered row is decoded into `scratch`,
/// a table-wide row reused from row to row, and only the columns the projection marks are
/// converted: a rejected row costs no vector, and columns nobody reads cost nothing.
struct RowDecoder<'p> {
    table: &'p crate::catalog::TableMeta,
    projection: Option<&'p ScanProjection>,
    /// The table column positions converted per row (ascending).
    decoded: Vec<usize>,
    /// Table-wide; the positions not in `decoded` stay NULL.
    scratch: Row,
}

impl<'p> RowDecoder<'p> {
    fn new(table: &'p crate::catalog::TableMeta, projection: Option<&'p ScanProjection>) -> Self {
        let width = table.columns.len();
        let decoded = match projection {
            Some(projection) => {
                (0..width).filter(|&column| projection.decode.get(column) == Some(&true)).collect()
            }
            None => (0..width).collect(),
        };
        RowDecoder { table, projection, decoded, scratch: vec![Datum::Null; width] }
    }

    /// The row the filter reads: the decoded columns at their table positions.
    fn filter_row(&mut self, mut values: Vec<Value>) -> &[Datum] {
        debug_assert_eq!(values.len(), self.scratch.len(), "the engine returns table-wide rows");
        for &column in &self.decoded {
            let value = values
                .get_mut(column)
                .map_or(Value::Null, |value| std::mem::replace(value, Value::Null));
            self.scratch[column] = Datum::from_owned_value(value, &self.table.columns[column].ty);
        }
        &self.scratch
    }

    /// The output row of the row `filter_row` last decoded, which passed the filter.
    fn take_output(&mut self) -> Row {
        match self.projection {
            // Moved out: each output column is decoded again for the next row.
            Some(projection) => projection
                .output
                .iter()
                .map(|&column| std::mem::replace(&mut self.scratch[column], Datum::Null))
                .collect(),
            None => std::mem::replace(&mut self.scratch, vec![Datum::Null; self.decoded.len()]),
        }
    }

    /// The output row of an unfiltered engine row.
    fn output(&self, values: Vec<Value>) -> Row {
        let Some(projection) = self.projection else { return decode_row(self.table, values) };
        let mut wanted = projection.output.iter().copied().peekable();
        let mut row = Vec::with_capacity(projection.output.len());
        for (position, value) in values.into_iter().enumerate() {
            if wanted.next_if_eq(&position).is_some() {
                row.push(Datum::from_owned_value(value, &self.table.columns[position].ty));
            }
        }
        debug_assert_eq!(row.len(), projection.output.len(), "every output column is stored");
        row
    }
}

/// How a scan returns its rows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScanOptions<'p> {
    /// Append the row's engine key as a last (bytea) column.
    pub emit_key: bool,
    /// Read in descending key order.
    pub backward: bool,
    /// The columns decoded and returned (None: all).
    pub projection: Option<&'p ScanProjection>,
}

pub(crate) fn scan(
    table: &BoundTable,
    access: &Access,
    filter: Option<&Expr>,
    options: ScanOptions<'_>,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let ScanOptions { emit_key, backward, projection } = options;
    let mut decoder = RowDecoder::new(table, projection);
    let mut emit = |ctx: &mut Ctx<'_>, key: Vec<u8>, values: Vec<Value>| -> Result<bool> {
        let mut row = match filter {
            Some(filter) => {
                if !holds(filter, decoder.filter_row(values), ctx)? {
                    return Ok(true);
                }
                decoder.take_output()
            }
            None => decoder.output(values),
        };
        if emit_key {
            row.push(Datum::Bytes(key));
        }
        sink(ctx, row)
    };
    match access {
        Access::Full | Access::Primary { .. } => {
            let reading = (projection, emit_key, filter.is_some());
            scan_clustered(table, access, backward, reading, ctx, probe, &mut emit)
        }
        Access::Nearest { name, query, .. } => {
            scan_nearest(table, name, query, ctx, probe, &mut emit)
        }
        Access::Index { name, lower, upper } => {
            scan_index(table, name, (lower, upper), ctx, probe, &mut emit)
        }
        Access::Keys { name, keys, array } => {
            let reading = (projection, emit_key, filter.is_some());
            let list = (keys.as_slice(), array.as_deref());
            scan_keys(table, name.as_deref(), list, (backward, reading), ctx, probe, &mut emit)
        }
    }
}

/// A scan of the clustered tree: a point lookup on the whole key, else pages of a range.
fn scan_clustered<'s>(
    table: &BoundTable,
    access: &Access,
    backward: bool,
    (projection, emit_key, has_filter): (Option<&ScanProjection>, bool, bool),
    ctx: &mut Ctx<'s>,
    probe: &[Datum],
    emit: &mut impl FnMut(&mut Ctx<'s>, Vec<u8>, Vec<Value>) -> Result<bool>,
) -> Result<bool> {
    let (lower, upper) = match access {
        Access::Primary { lower, upper } => {
            let columns = &table.clustered_key().expect("primary access has a key").columns;
            let lower = bound_values(lower, columns, table, probe, ctx)?;
            let upper = bound_values(upper, columns, table, probe, ctx)?;
            match (lower, upper) {
                (Some(lower), Some(upper)) => (lower, upper),
                _ => return Ok(true),
            }
        }
        _ => (Bound::Unbounded, Bound::Unbounded),
    };
    // A point lookup on the whole key.
    if let (Bound::Included(low), Bound::Included(high), Some(key)) =
        (&lower, &upper, table.clustered_key())
    {
        if low.len() == key.columns.len() && low == high {
            let found = ctx.txn()?.get_keyed(&table.handle, low)?;
            return match found {
                Some((key, values)) => emit(ctx, key, values),
                None => Ok(true),
            };
        }
    }
    let direction = if backward {
        tierdb_engine::Direction::Backward
    } else {
        tierdb_engine::Direction::Forward
    };
    // Without a filter, a projection that outputs nothing (count(*)) reads no values.
    let reads_values = projection.is_none_or(|projection| !projection.output.is_empty());
    let projection = tierdb_engine::Projection {
        columns: projection.map(|projection| projection.decode.as_slice()),
        keys: emit_key,
        values: reads_values || has_filter,
    };
    let mut resume: Option<Vec<u8>> = None;
    loop {
        ctx.check_cancel()?;
        let page = ctx.txn()?.scan_page_projected(
            &table.handle,
            direction,
            (as_ref_bound(&lower), as_ref_bound(&upper)),
            resume.as_deref(),
            SCAN_PAGE_ROWS,
            projection,
        )?;
        for (key, values) in page.rows {
            if !emit(ctx, key, values)? {
                return Ok(false);
            }
        }
        match page.resume_after {
            Some(key) => resume = Some(key),
            None => return Ok(true),
        }
    }
}

/// Reads the rows of each distinct key of a key list (`Access::Keys`) as a one-key range of
/// the clustered tree (`name` None) or of the index `name`; false when `emit` asked to stop.
fn scan_keys<'s>(
    table: &BoundTable,
    name: Option<&str>,
    list: (&[Vec<Expr>], Option<&Expr>),
    (backward, reading): (bool, (Option<&ScanProjection>, bool, bool)),
    ctx: &mut Ctx<'s>,
    probe: &[Datum],
    emit: &mut impl FnMut(&mut Ctx<'s>, Vec<u8>, Vec<Value>) -> Result<bool>,
) -> Result<bool> {
    let columns: &[usize] = match name {
        None => &table.clustered_key().expect("a key list on the clustering key").columns,
        Some(name) => {
            let index = table.indexes.iter().find(|index| index.name == name);
            &index.expect("planned index exists").columns
        }
    };
    for key in listed_keys(table, columns, list, backward, ctx, probe)? {
        ctx.check_cancel()?;
        let bound = Bound::Included(key.into_iter().map(Expr::Literal).collect::<Vec<_>>());
        let more = match name {
            None => {
                let access = Access::Primary { lower: bound.clone(), upper: bound };
                scan_clustered(table, &access, backward, reading, ctx, probe, emit)?
            }
            Some(name) => scan_index(table, name, (&bound, &bound), ctx, probe, emit)?,
        };
        if !more {
            return Ok(false);
        }
    }
    Ok(true)
}

/// pgvector's nearest-neighbour index scan: rows nearest first, up to hnsw.ef_search of
/// them, or with hnsw.iterative_scan batch after batch until the consumer stops (a LIMIT
/// above it filled) or hnsw.max_scan_tuples nodes were evaluated.
fn scan_nearest<'s>(
    table: &BoundTable,
    name: &str,
    query: &Expr,
    ctx: &mut Ctx<'s>,
    probe: &[Datum],
    emit: &mut impl FnMut(&mut Ctx<'s>, Vec<u8>, Vec<Value>) -> Result<bool>,
) -> Result<bool> {
    let query = match eval(query, probe, ctx)? {
        Datum::Vector(elements) => elements,
        // The index holds halves widened to f32 (exact); its metric narrows them back.
        Datum::HalfVec(elements) => crate::types::halves_to_floats(&elements).into(),
        Datum::Bit(bits) => bit_query(table, name, &bits)?.into(),
        // NULL is nearest to nothing: pgvector's index scan returns no rows.
        _ => return Ok(true),
    };
    let options = ctx.session.vector_scan;
    let mut nearest = ctx.txn()?.nearest_scan(&table.handle, name, &query, options)?;
    // One row at a time: the LIMIT above stops the scan (`emit` returns false), so only the
    // rows it returns are read and checked, and a filter's rejects cost no LIMIT slot.
    while let Some((_, key, values)) = ctx.txn()?.nearest_next(&mut nearest)? {
        if !emit(ctx, key, values)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A bit index's query in words (`tierdb_vector::bits_to_words`), after pgvector's check of
/// its length against the column's bit(n): 22000 in the argument order of the distance
/// pgvector computes first (HNSW: the query's to an element; ivfflat: a center's to it).
fn bit_query(table: &BoundTable, name: &str, bits: &crate::types::BitString) -> Result<Vec<f32>> {
    let index = table.meta.indexes.iter().find(|index| index.name == name);
    let index = index.expect("a planned index exists");
    let column = &table.meta.columns[index.columns[0]];
    // A bit index is created on bit(n) only; the engine checks the words in any case.
    let length = match column.ty {
        crate::types::SqlType::Bit(Some(length)) => usize::try_from(length).ok(),
        _ => None,
    };
    if let Some(length) = length.filter(|length| bits.len() != *length) {
        let ivfflat =
            matches!(index.kind, crate::catalog::IndexKind::Hnsw(options) if options.ivfflat);
        let (first, second) = if ivfflat { (length, bits.len()) } else { (bits.len(), length) };
        return Err(SqlError::new("22000", format!("different bit lengths {first} and {second}")));
    }
    Ok(tierdb_vector::bits_to_words(bits.bytes()))
}

/// A secondary-index range scan, a page of entries at a time.
fn scan_index<'s>(
    table: &BoundTable,
    name: &str,
    (lower, upper): (&Bound<Vec<Expr>>, &Bound<Vec<Expr>>),
    ctx: &mut Ctx<'s>,
    probe: &[Datum],
    emit: &mut impl FnMut(&mut Ctx<'s>, Vec<u8>, Vec<Value>) -> Result<bool>,
) -> Result<bool> {
    let index =
        table.indexes.iter().find(|index| index.name == *name).expect("planned index exists");
    let lower = bound_values(lower, &index.columns, table, probe, ctx)?;
    let upper = bound_values(upper, &index.columns, table, probe, ctx)?;
    let (Some(lower), Some(upper)) = (lower, upper) else { return Ok(true) };
    let mut resume: Option<Vec<u8>> = None;
    loop {
        ctx.check_cancel()?;
        let page = ctx.txn()?.index_scan_page(
            &table.handle,
            name,
            as_ref_bound(&lower),
            as_ref_bound(&upper),
            resume.as_deref(),
            SCAN_PAGE_ROWS,
        )?;
        let complete = page.len() < SCAN_PAGE_ROWS;
        if !complete {
            resume = page.last().map(|(entry, _, _)| entry.clone());
        }
        for (_, key, values) in page {
            if !emit(ctx, key, values)? {
                return Ok(false);
            }
        }
        if complete {
            return Ok(true);
        }
    }
}

/// The generate_series FROM item: its arguments evaluated once, its values streamed
/// (exec/set_functions.rs steps them).
pub(crate) fn series(
    start: &Expr,
    stop: &Expr,
    step: Option<&Expr>,
    ty: &SqlType,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut args = vec![eval(start, probe, ctx)?, eval(stop, probe, ctx)?];
    if let Some(step) = step {
        args.push(eval(step, probe, ctx)?);
    }
    if args.iter().any(Datum::is_null) {
        return Ok(true);
    }
    let mut values = super::set_functions::series(ty, &args)?;
    let mut count = 0u64;
    while let Some(value) = values.next()? {
        count += 1;
        if count.is_multiple_of(4096) {
            ctx.check_cancel()?;
        }
        if !sink(ctx, vec![value])? {
            return Ok(false);
        }
    }
    Ok(true)
}
