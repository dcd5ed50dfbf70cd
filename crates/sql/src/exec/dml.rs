//! INSERT, UPDATE and DELETE execution: one NOT NULL and key check per stored row,
//! READ COMMITTED rechecks of rows a concurrent transaction changed, RETURNING.

use super::on_conflict::Upsert;
use super::rows::{apply_assignments, complete_row, detached_ctx, joined_row, recheck_filter};
use super::spill::store_rows;
use super::*;
use crate::output::{CommandTag, Output};
use crate::plan::{DeletePlan, InsertPlan, UpdatePlan};
use tierdb_engine::{Value, INSERT_BATCH_ROWS_MAX};

/// Rows of an INSERT or a COPY on their way to the engine's bulk path (`insert_batch`:
/// sorted per batch, written leaf by leaf). Errors come when a batch is written: a duplicate
/// key fails the statement as it would row by row, with the same 23505.
#[derive(Default)]
pub(crate) struct InsertBatch {
    rows: Vec<Vec<Value>>,
}

impl InsertBatch {
    /// Completes a row (defaults, casts, NOT NULL) and queues it; a full batch goes to the
    /// engine. Returns the stored row.
    pub(crate) fn push(
        &mut self,
        table: &BoundTable,
        row: Vec<Option<Datum>>,
        defaults: &[Option<Expr>],
        ctx: &mut Ctx<'_>,
    ) -> Result<Row> {
        let (values, datums) = complete_row(table, row, defaults, ctx)?;
        self.rows.push(values);
        if self.rows.len() >= INSERT_BATCH_ROWS_MAX {
            self.flush(table, ctx)?;
        }
        Ok(datums)
    }

    /// Writes the queued rows.
    pub(crate) fn flush(&mut self, table: &BoundTable, ctx: &mut Ctx<'_>) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.rows);
        let transaction = ctx.txn.as_deref_mut().expect("insert runs in a transaction");
        transaction.insert_batch(&table.handle, rows)?;
        Ok(())
    }
}

pub(crate) fn returning_rows(
    returning: &Option<(Vec<Expr>, Vec<OutputColumn>)>,
    rows: Vec<Row>,
    ctx: &mut Ctx<'_>,
    tag: CommandTag,
    count: u64,
) -> Result<Output> {
    match returning {
        Some((exprs, columns)) => {
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                out.push(
                    exprs
                        .iter()
                        .map(|expr| super::eval(expr, &row, ctx))
                        .collect::<Result<Row>>()?,
                );
            }
            Ok(Output::Rows { columns: columns.clone(), rows: out, tag })
        }
        None => Ok(Output::Command { tag, rows: count }),
    }
}

pub(crate) fn run_insert(insert: &InsertPlan, ctx: &mut Ctx<'_>) -> Result<Output> {
    let mut writer = InsertWriter {
        insert,
        source_types: insert.source.columns.iter().map(|column| column.ty.clone()).collect(),
        inserted: Vec::new(),
        count: 0,
        upsert: insert.on_conflict.as_ref().map(Upsert::new),
        batch: InsertBatch::default(),
        events: ReferentialEvents::default(),
    };
    if insert.stream_source {
        run(&insert.source, ctx, &[], &mut |ctx, source| writer.row(source, ctx).map(|()| true))?;
    } else {
        // Collect the source first (in a row store: memory, then a temporary file): an
        // INSERT ... SELECT from the same table must not see its own rows.
        let mut sources = store_rows(&insert.source, ctx)?;
        while let Some(source) = sources.next_row()? {
            writer.row(source, ctx)?;
        }
    }
    let InsertWriter { mut batch, events, inserted, count, .. } = writer;
    batch.flush(&insert.table, ctx)?;
    events.finish(&insert.table, ctx)?;
    ctx.session.catalog.note_modified_rows(insert.table.oid, count);
    returning_rows(&insert.returning, inserted, ctx, CommandTag::Insert, count)
}

/// An INSERT's state while its source's rows arrive.
struct InsertWriter<'p> {
    insert: &'p InsertPlan,
    source_types: Vec<SqlType>,
    /// The stored rows, kept for RETURNING only.
    inserted: Vec<Row>,
    count: u64,
    upsert: Option<Upsert<'p>>,
    batch: InsertBatch,
    events: ReferentialEvents,
}

impl InsertWriter<'_> {
    /// Casts one source row to the target's columns and inserts it (or hands it to ON
    /// CONFLICT).
    fn row(&mut self, source: Row, ctx: &mut Ctx<'_>) -> Result<()> {
        let insert = self.insert;
        let mut row: Vec<Option<Datum>> = vec![None; insert.table.columns.len()];
        for ((value, &target), from) in
            source.into_iter().zip(&insert.targets).zip(&self.source_types)
        {
            let column = &insert.table.columns[target];
            row[target] = Some(types::cast(value, from, &column.ty, false)?);
        }
        let stored = match &mut self.upsert {
            None => {
                let stored = self.batch.push(&insert.table, row, &insert.defaults, ctx)?;
                self.events.inserted(&insert.table, &stored, ctx)?;
                Some(stored)
            }
            Some(upsert) => {
                upsert.row(&insert.table, row, &insert.defaults, &mut self.events, ctx)?
            }
        };
        let Some(stored) = stored else { return Ok(()) };
        self.count += 1;
        if insert.returning.is_some() {
            self.inserted.push(stored);
        }
        Ok(())
    }
}

pub(crate) fn run_update(update: &UpdatePlan, ctx: &mut Ctx<'_>) -> Result<Output> {
    let table = &update.table;
    // Collect the targets first (keys and rows, in a row store), then update: a row moved by
    // the update must not be seen again by the scan.
    let mut targets = store_rows(&update.scan, ctx)?;
    let mut count = 0u64;
    let mut updated_rows = Vec::new();
    let mut events = ReferentialEvents::default();
    let referential = !table.foreign_keys.is_empty() || !table.referenced_by.is_empty();
    while let Some(mut row) = targets.next_row()? {
        // `row` is the target's columns, its key's place, then FROM's columns (`joined`).
        let key = take_row_key(&mut row, table)?;
        let joined = &row[table.columns.len()..];
        let new_row = apply_assignments(table, &update.assignments, &row, ctx)?;
        let expected: Vec<Value> = row
            .iter()
            .zip(&table.columns)
            .map(|(datum, column)| datum.to_value(&column.ty))
            .collect::<Result<_>>()?;
        let mut prepared: Vec<Value> = new_row
            .iter()
            .zip(&table.columns)
            .map(|(datum, column)| datum.to_value(&column.ty))
            .collect::<Result<_>>()?;
        let mut failure: Option<SqlError> = None;
        let mut result_row: Option<Row> = None;
        // The version updated, when it is not the one the scan read (FOREIGN KEY events).
        let mut newer: Option<Row> = None;
        // A new row with another primary key: the engine updates rows in place under their
        // key, so it becomes a delete and an insert (below).
        let mut moved: Option<(Row, Vec<Value>)> = None;
        let key_columns: &[usize] = table.clustered_key().map_or(&[], |key| &key.columns);
        let params = ctx.params;
        let session = ctx.session;
        let time = ctx.statement_time_micros;
        let budget = ctx.budget.clone();
        let mut change = |latest: &Vec<Value>| -> Option<Vec<Value>> {
            let key_changes = |values: &[Value]| {
                key_columns.iter().any(|&column| values[column] != latest[column])
            };
            if *latest == expected {
                if key_changes(&prepared) {
                    moved = Some((new_row.clone(), std::mem::take(&mut prepared)));
                    return None;
                }
                result_row = Some(new_row.clone());
                return Some(std::mem::take(&mut prepared));
            }
            // A concurrent update committed first (READ COMMITTED): re-check the predicate
            // on the latest version and recompute the new row from it.
            let mut detached = detached_ctx(params, session, time, &budget);
            let current = joined_row(table, latest, joined);
            if referential {
                newer = Some(current[..table.columns.len()].to_vec());
            }
            if let Some(filter) = &update.filter {
                match recheck_filter(filter, &current, &mut detached) {
                    Ok(true) => {}
                    Ok(false) => return None,
                    Err(error) => {
                        failure = Some(error);
                        return None;
                    }
                }
            }
            let recomputed = apply_assignments(table, &update.assignments, &current, &mut detached)
                .and_then(|new_row| {
                    let values = new_row
                        .iter()
                        .zip(&table.columns)
                        .map(|(datum, column)| datum.to_value(&column.ty))
                        .collect::<Result<Vec<Value>>>()?;
                    Ok((new_row, values))
                });
            match recomputed {
                Ok((new_row, values)) if key_changes(&values) => {
                    moved = Some((new_row, values));
                    None
                }
                Ok((new_row, values)) => {
                    result_row = Some(new_row);
                    Some(values)
                }
                Err(error) => {
                    failure = Some(error);
                    None
                }
            }
        };
        let transaction = ctx.txn.as_deref_mut().expect("update runs in a transaction");
        let mut changed = transaction.update_by_key(&table.handle, &key, &mut change)?;
        if let Some(error) = failure {
            return Err(error);
        }
        if let Some((new_row, values)) = moved {
            transaction.delete_by_key(&table.handle, &key)?;
            transaction.insert(&table.handle, values)?;
            result_row = Some(new_row);
            changed = true;
        }
        if changed {
            count += 1;
            if let (true, Some(new_row)) = (referential, &result_row) {
                let old = newer.as_deref().unwrap_or(&row[..table.columns.len()]);
                events.updated(table, old, new_row, ctx)?;
            }
            if let Some(mut new_row) = result_row {
                if update.returning.is_some() {
                    new_row.extend_from_slice(joined);
                    updated_rows.push(new_row);
                }
            }
        }
    }
    events.finish(table, ctx)?;
    ctx.session.catalog.note_modified_rows(table.oid, count);
    returning_rows(&update.returning, updated_rows, ctx, CommandTag::Update, count)
}

pub(crate) fn run_delete(delete: &DeletePlan, ctx: &mut Ctx<'_>) -> Result<Output> {
    let mut targets = store_rows(&delete.scan, ctx)?;
    let mut count = 0u64;
    let mut deleted = Vec::new();
    let mut events = ReferentialEvents::default();
    while let Some(mut row) = targets.next_row()? {
        // `row` is the target's columns, its key's place, then USING's columns (`joined`).
        let key = take_row_key(&mut row, &delete.table)?;
        let joined = &row[delete.table.columns.len()..];
        // READ COMMITTED: a concurrent update that committed first may have moved the row
        // out of the WHERE clause; the DELETE re-checks it on the latest version.
        let mut failure: Option<SqlError> = None;
        let (params, session, time) = (ctx.params, ctx.session, ctx.statement_time_micros);
        let budget = ctx.budget.clone();
        let expected: Vec<Value> = row
            .iter()
            .zip(&delete.table.columns)
            .map(|(datum, column)| datum.to_value(&column.ty))
            .collect::<Result<_>>()?;
        // The version deleted, when it is not the one the scan read: RETURNING shows it.
        let mut newer: Option<Vec<Value>> = None;
        let mut recheck = |latest: &Vec<Value>| match &delete.filter {
            _ if *latest == expected => true,
            None => {
                newer = Some(latest.clone());
                true
            }
            Some(filter) => {
                let mut detached = detached_ctx(params, session, time, &budget);
                let current = joined_row(&delete.table, latest, joined);
                match recheck_filter(filter, &current, &mut detached) {
                    Ok(matches) => {
                        newer = Some(latest.clone());
                        matches
                    }
                    Err(error) => {
                        failure = Some(error);
                        false
                    }
                }
            }
        };
        let transaction = ctx.txn.as_deref_mut().expect("delete runs in a transaction");
        let removed = transaction.delete_by_key_if(&delete.table.handle, &key, &mut recheck)?;
        if let Some(error) = failure {
            return Err(error);
        }
        if removed {
            count += 1;
            if !delete.table.referenced_by.is_empty() {
                let old = match &newer {
                    Some(latest) => super::rows::table_row(&delete.table, latest),
                    None => row[..delete.table.columns.len()].to_vec(),
                };
                events.deleted(&delete.table, &old, ctx)?;
            }
            if delete.returning.is_some() {
                deleted.push(match newer {
                    Some(latest) => joined_row(&delete.table, &latest, joined),
                    None => row,
                });
            }
        }
    }
    events.finish(&delete.table, ctx)?;
    ctx.session.catalog.note_modified_rows(delete.table.oid, count);
    returning_rows(&delete.returning, deleted, ctx, CommandTag::Delete, count)
}

/// The engine row key of a row UPDATE or DELETE read: the column after the table's (see
/// `bind_target_rows`). Left in the row as NULL: no expression reads it.
fn take_row_key(row: &mut [Datum], table: &BoundTable) -> Result<Vec<u8>> {
    match row.get_mut(table.columns.len()).map(|key| std::mem::replace(key, Datum::Null)) {
        Some(Datum::Bytes(key)) => Ok(key),
        _ => Err(SqlError::internal("an UPDATE or DELETE scan lost the row key")),
    }
}
