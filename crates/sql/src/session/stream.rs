//! Streamed results: a query string's statements run in order and a query's rows go to a
//! `RowSink` as the executor produces them; `Session::execute` collects them instead.

use super::*;
use crate::types::Row;

impl Session {
    /// Runs a simple-protocol query string: every statement in order, stopping at the
    /// first error (as PostgreSQL does). A query's rows go to `sink` as they are produced;
    /// each statement's outcome goes to `sink.finished`, in order.
    pub fn execute_streaming(&mut self, sql: &str, sink: &mut dyn RowSink) {
        // A statement while a COPY still expected data (the client broke off): the COPY fails.
        self.copy_in_abort();
        let statements = match self.take_checked_simple(sql) {
            Some(prepared) => vec![prepared],
            None => match parse_statements(sql) {
                Ok(statements) => statements,
                Err(error) => {
                    self.fail_block();
                    sink.finished(Err(error), self.state);
                    return;
                }
            },
        };
        // Several statements outside a block run in one implicit transaction, as in
        // PostgreSQL, unless they control transactions themselves.
        let implicit = statements.len() > 1
            && self.state == BlockState::Idle
            && statements.iter().all(|prepared| {
                prepared
                    .statement
                    .as_deref()
                    .is_none_or(|statement| !controls_transactions(statement))
            });
        if implicit {
            self.state = BlockState::InBlock;
            self.implicit_block = true;
            self.block_settings = Some(self.settings.clone());
        }
        let mut failed = false;
        for mut prepared in statements {
            let outcome = self.execute_prepared_streaming(&mut prepared, &[], Some(&mut *sink));
            // Unused when the statement never reached run_statement (transaction control).
            self.checked_statement_time = None;
            failed = outcome.is_err();
            sink.finished(outcome, self.state);
            if failed {
                break;
            }
        }
        if implicit {
            self.state = BlockState::Idle;
            self.implicit_block = false;
            self.cursors.clear();
            let committed = match self.transaction.take() {
                Some(transaction) if failed => {
                    let _ = transaction.rollback();
                    false
                }
                Some(transaction) => match transaction.commit() {
                    Ok(()) => true,
                    Err(error) => {
                        sink.finished(Err(error.into()), self.state);
                        false
                    }
                },
                None => !failed,
            };
            let saved_settings = self.block_settings.take();
            if !committed {
                if let Some(settings) = saved_settings {
                    self.settings = settings;
                }
            }
            self.end_local_settings(committed);
            if committed {
                self.after_commit();
                if let Err(error) = self.finish_pending_drops() {
                    sink.finished(Err(error), self.state);
                }
            } else {
                self.forget_pending_drops();
            }
            self.end_transaction_ddl(committed);
        }
    }
}

/// The statements of a simple-protocol string, each with the text of its piece. The whole
/// string is parsed first: a syntax error anywhere runs nothing.
fn parse_statements(sql: &str) -> Result<Vec<Prepared>> {
    let pieces = if sql.contains(';') { split_statements(sql) } else { vec![sql.to_string()] };
    let mut statements = Vec::new();
    for piece in pieces {
        for statement in parse_sql(&piece)? {
            statements.push(Prepared::of_statement(piece.clone(), statement));
        }
    }
    Ok(statements)
}

/// Runs a query with its rows going to `sink`; the outcome is SELECT and the row count.
pub(super) fn rows_into(plan: &Plan, ctx: &mut Ctx<'_>, sink: &mut dyn RowSink) -> Result<Output> {
    sink.columns(&plan.columns)?;
    let mut rows = 0u64;
    exec::run(plan, ctx, &[], &mut |_, row| {
        sink.row(row)?;
        rows += 1;
        Ok(true)
    })?;
    Ok(Output::Command { tag: CommandTag::Select, rows })
}

/// A sink that keeps everything: `Session::execute`'s outputs, with a streamed query's
/// rows put back into `Output::Rows`.
#[derive(Default)]
pub(super) struct Collector {
    pub(super) outputs: Vec<Result<Output>>,
    /// The columns and rows of the query streaming now.
    streaming: Option<(Vec<OutputColumn>, Vec<Row>)>,
    /// The column count, format and data of the COPY TO STDOUT running now.
    copying: Option<(usize, CopyFormat, Vec<u8>)>,
}

impl RowSink for Collector {
    fn columns(&mut self, columns: &[OutputColumn]) -> Result<()> {
        debug_assert!(self.streaming.is_none(), "a query's columns come once");
        self.streaming = Some((columns.to_vec(), Vec::new()));
        Ok(())
    }

    fn row(&mut self, row: Row) -> Result<()> {
        let (_, rows) = self.streaming.as_mut().expect("columns come before rows");
        rows.push(row);
        Ok(())
    }

    fn copy_out(&mut self, columns: usize, format: CopyFormat) -> Result<()> {
        debug_assert!(self.copying.is_none(), "one COPY at a time");
        self.copying = Some((columns, format, Vec::new()));
        Ok(())
    }

    fn copy_data(&mut self, line: Vec<u8>) -> Result<()> {
        let (_, _, data) = self.copying.as_mut().expect("copy_out comes before the data");
        data.extend_from_slice(&line);
        Ok(())
    }

    fn finished(&mut self, outcome: Result<Output>, _state: BlockState) {
        let streamed = self.streaming.take();
        if let (
            Ok(Output::Command { tag: CommandTag::Copy, rows }),
            Some((columns, format, data)),
        ) = (&outcome, self.copying.take())
        {
            let rows = *rows;
            self.outputs.push(Ok(Output::CopyOut { data, columns, rows, format }));
            return;
        }
        let outcome = match (outcome, streamed) {
            (
                Ok(Output::Command { tag: CommandTag::Select, rows: count }),
                Some((columns, rows)),
            ) => {
                debug_assert_eq!(crate::types::count_u64(rows.len()), count);
                Ok(Output::Rows { columns, rows, tag: CommandTag::Select })
            }
            (outcome, _) => outcome,
        };
        self.outputs.push(outcome);
    }
}
