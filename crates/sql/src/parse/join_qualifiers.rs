//! PostgreSQL's grammar requires ON or USING after `JOIN`, `INNER JOIN`, `LEFT / RIGHT /
//! FULL [OUTER] JOIN` (only CROSS and NATURAL joins go without); sqlparser accepts the join
//! without one, which tierdb would run as a cross join. A missing qualifier is PostgreSQL's
//! syntax error at the token after the join chain: PostgreSQL reads the relations that follow
//! as nested joins of the unqualified one, so its parser fails where the chain ends.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Spanned, Visit, Visitor};

use super::spans::{byte_offset, line_starts, located_tokens};
use crate::error::{Result, SqlError};

/// The 42601 syntax error for the first join in `statement` without ON / USING, with the
/// position of the token after its join chain in `sql` (the text sqlparser read).
pub(super) fn check_join_qualifiers(sql: &str, statement: &ast::Statement) -> Result<()> {
    let mut finder = UnqualifiedJoin::default();
    let _ = statement.visit(&mut finder);
    match finder.chain_end {
        Some(end) => Err(syntax_error_after(sql, end)),
        None => Ok(()),
    }
}

#[derive(Default)]
struct UnqualifiedJoin {
    /// Where the join chain holding the first unqualified join ends.
    chain_end: Option<sqlparser::tokenizer::Location>,
}

impl UnqualifiedJoin {
    fn check(&mut self, from: &[ast::TableWithJoins]) -> ControlFlow<()> {
        for item in from {
            if item.joins.iter().any(|join| lacks_qualifier(&join.join_operator)) {
                self.chain_end = Some(item.span().end);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}

impl Visitor for UnqualifiedJoin {
    type Break = ();

    fn pre_visit_select(&mut self, select: &ast::Select) -> ControlFlow<()> {
        self.check(&select.from)
    }

    fn pre_visit_table_factor(&mut self, factor: &ast::TableFactor) -> ControlFlow<()> {
        match factor {
            ast::TableFactor::NestedJoin { table_with_joins, .. } => {
                self.check(std::slice::from_ref(table_with_joins))
            }
            _ => ControlFlow::Continue(()),
        }
    }

    fn pre_visit_statement(&mut self, statement: &ast::Statement) -> ControlFlow<()> {
        match statement {
            ast::Statement::Update(update) => {
                self.check(std::slice::from_ref(&update.table))?;
                match &update.from {
                    Some(
                        ast::UpdateTableFromKind::BeforeSet(from)
                        | ast::UpdateTableFromKind::AfterSet(from),
                    ) => self.check(from),
                    None => ControlFlow::Continue(()),
                }
            }
            ast::Statement::Delete(delete) => {
                let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                    &delete.from;
                self.check(from)?;
                self.check(delete.using.as_deref().unwrap_or_default())
            }
            _ => ControlFlow::Continue(()),
        }
    }
}

/// Whether a join PostgreSQL's grammar requires ON or USING for has neither.
fn lacks_qualifier(operator: &ast::JoinOperator) -> bool {
    match operator {
        ast::JoinOperator::Join(constraint)
        | ast::JoinOperator::Inner(constraint)
        | ast::JoinOperator::Left(constraint)
        | ast::JoinOperator::LeftOuter(constraint)
        | ast::JoinOperator::Right(constraint)
        | ast::JoinOperator::RightOuter(constraint)
        | ast::JoinOperator::FullOuter(constraint) => {
            matches!(constraint, ast::JoinConstraint::None)
        }
        _ => false,
    }
}

/// `syntax error at or near "token"` for the first token at or after `end`, or `syntax
/// error at end of input`, with PostgreSQL's 1-based character position.
fn syntax_error_after(sql: &str, end: sqlparser::tokenizer::Location) -> SqlError {
    let end_offset = byte_offset(sql, &line_starts(sql), end).unwrap_or(sql.len());
    let next = located_tokens(sql)
        .unwrap_or_default()
        .into_iter()
        .find(|located| located.offset >= end_offset && located.token != EOF_TOKEN);
    let mut error = match &next {
        Some(located) => SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            &sql[located.offset..located.end]
        )),
        None => SqlError::syntax("syntax error at end of input"),
    };
    let offset = next.map_or(sql.len(), |located| located.offset);
    error.position = Some(sql[..offset].chars().count() + 1);
    error
}

const EOF_TOKEN: sqlparser::tokenizer::Token = sqlparser::tokenizer::Token::EOF;
