//! COPY TO STDOUT: the query's rows are formatted into lines (text, CSV) or tuples (binary,
//! between its header and trailer: copy_binary.rs) as the executor produces them and go
//! to the statement's `RowSink` (the client's socket), or are collected into
//! `Output::CopyOut` when there is none.

use super::copy_binary;
use super::stream::Collector;
use super::*;
use crate::types::Row;

impl Session {
    /// Runs COPY's bound query with its rows going out as lines of COPY data.
    pub(super) fn copy_out(
        &mut self,
        copy: &CopyStatement,
        bound: &Bound,
        sink: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        let mut collector = None;
        let sink: &mut dyn RowSink = match sink {
            Some(sink) => sink,
            None => collector.insert(Collector::default()),
        };
        let mut lines =
            CopyLines { copy, sink, columns: Vec::new(), types: Vec::new(), header: None };
        let (output, _) = self.in_transaction(|session| {
            session.run_bound_into(bound, &[], false, Some(&mut lines))
        })?;
        let rows = match output {
            Output::Command { rows, .. } => rows,
            // DML ... RETURNING collects its rows (see run_bound_into).
            Output::Rows { columns, rows, .. } => {
                lines.columns(&columns)?;
                let count = crate::types::count_u64(rows.len());
                for row in rows {
                    lines.row(row)?;
                }
                count
            }
            _ => return Err(SqlError::syntax("COPY query must return rows")),
        };
        if copy.options.format == CopyFormat::Binary {
            let mut trailer = lines.header.take().unwrap_or_default();
            trailer.extend(copy_binary::trailer());
            lines.sink.copy_data(trailer)?;
        }
        let outcome = Output::Command { tag: CommandTag::Copy, rows };
        match collector {
            None => Ok(outcome),
            Some(mut collector) => {
                collector.finished(Ok(outcome), self.state);
                collector.outputs.pop().expect("the COPY's output")
            }
        }
    }
}

/// Formats rows as COPY's text or CSV lines for the sink underneath.
struct CopyLines<'a> {
    copy: &'a CopyStatement,
    sink: &'a mut dyn RowSink,
    columns: Vec<OutputColumn>,
    /// The columns' types (binary tuples).
    types: Vec<SqlType>,
    /// The binary header not sent yet: it goes in the first row's CopyData (or the
    /// trailer's when there is no row), as PostgreSQL sends it; tokio-postgres's
    /// BinaryCopyOutStream reads the header and the first tuple from one message.
    header: Option<Vec<u8>>,
}

impl CopyLines<'_> {
    fn csv(&self) -> bool {
        self.copy.options.format == CopyFormat::Csv
    }
}

impl RowSink for CopyLines<'_> {
    fn columns(&mut self, columns: &[OutputColumn]) -> Result<()> {
        self.columns = columns.to_vec();
        self.types = columns.iter().map(|column| column.ty.clone()).collect();
        let csv = self.csv();
        self.sink.copy_out(columns.len(), self.copy.options.format)?;
        if self.copy.options.format == CopyFormat::Binary {
            self.header = Some(copy_binary::header());
        }
        if csv && self.copy.options.header {
            let options = &self.copy.options;
            let names: Vec<String> =
                columns.iter().map(|c| front::escape_csv_field(&c.name, options)).collect();
            let mut line = names.join(&options.delimiter.to_string()).into_bytes();
            line.push(b'\n');
            self.sink.copy_data(line)?;
        }
        Ok(())
    }

    fn row(&mut self, row: Row) -> Result<()> {
        if self.copy.options.format == CopyFormat::Binary {
            let mut data = self.header.take().unwrap_or_default();
            data.extend(copy_binary::tuple(&row, &self.types)?);
            return self.sink.copy_data(data);
        }
        let (options, csv) = (&self.copy.options, self.csv());
        let fields: Vec<String> = row
            .iter()
            .zip(&self.columns)
            .map(|(datum, column)| match datum.to_text(&column.ty) {
                None => options.null.clone(),
                Some(text) if csv => front::escape_csv_field(&text, options),
                Some(text) => front::escape_text_field(&text, options.delimiter),
            })
            .collect();
        let mut line = fields.join(&options.delimiter.to_string()).into_bytes();
        line.push(b'\n');
        self.sink.copy_data(line)
    }

    fn copy_out(&mut self, columns: usize, format: CopyFormat) -> Result<()> {
        self.sink.copy_out(columns, format)
    }

    fn copy_data(&mut self, line: Vec<u8>) -> Result<()> {
        self.sink.copy_data(line)
    }

    fn finished(&mut self, outcome: Result<Output>, state: BlockState) {
        self.sink.finished(outcome, state)
    }
}
