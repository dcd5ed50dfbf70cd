//! `INSERT ... OVERRIDING { SYSTEM | USER } VALUE` (identity columns; pg_dump --inserts
//! writes it for GENERATED ALWAYS columns), which sqlparser 0.63 does not read. The three
//! words are blanked with spaces of their length (error positions stay where the client
//! wrote them), and after sqlparser has run, the INSERT they followed carries an optimizer
//! hint with the prefix `OVERRIDING_MARK`: sqlparser never makes that prefix itself (its
//! hint prefixes are ASCII letters and digits), and prints it back as a comment.

use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitMut, VisitorMut};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use super::spans::{self, is_keyword, Located};
use crate::error::{Result, SqlError};

/// The hint prefix marking an INSERT with OVERRIDING; the hint's text is SYSTEM or USER.
const OVERRIDING_MARK: &str = "tierdb:overriding";

/// Which value an INSERT writes to the identity columns it gives values for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overriding {
    /// The given value, also for a GENERATED ALWAYS column.
    System,
    /// The column's sequence value, the given one ignored.
    User,
}

/// A text with its OVERRIDING clauses blanked, and the INSERTs they belonged to.
type Blanked = (String, Vec<(usize, Overriding)>);

/// The text with each `OVERRIDING ... VALUE` blanked, and the byte offsets of the INSERT
/// keywords they belong to with their kind; None when the text has none.
pub(super) fn blank_overriding(sql: &str) -> Result<Option<Blanked>> {
    if !sql.to_ascii_lowercase().contains("overriding") {
        return Ok(None);
    }
    let Some(tokens) = spans::located_tokens(sql) else { return Ok(None) };
    let mut text = sql.to_string();
    let mut inserts = Vec::new();
    // The offset of the last INSERT at each parenthesis depth.
    let mut owners: Vec<Option<usize>> = vec![None];
    for (index, located) in tokens.iter().enumerate() {
        match &located.token {
            Token::LParen => owners.push(None),
            Token::RParen if owners.len() > 1 => {
                owners.pop();
            }
            token if is_keyword(token, Keyword::INSERT) => {
                *owners.last_mut().expect("the outermost depth stays") = Some(located.offset);
            }
            _ => {
                let Some((kind, end)) = clause_at(&tokens, index) else { continue };
                // PostgreSQL's grammar has no OVERRIDING before DEFAULT VALUES.
                if let Some(next) = tokens.iter().find(|next| next.offset >= end) {
                    if is_keyword(&next.token, Keyword::DEFAULT) {
                        let mut error = SqlError::syntax("syntax error at or near \"DEFAULT\"");
                        error.position = Some(sql[..next.offset].chars().count() + 1);
                        return Err(error);
                    }
                }
                let Some(insert) = *owners.last().expect("the outermost depth stays") else {
                    continue;
                };
                let width = end - located.offset;
                text.replace_range(located.offset..end, &" ".repeat(width));
                inserts.push((insert, kind));
            }
        }
    }
    Ok((!inserts.is_empty()).then_some((text, inserts)))
}

/// `OVERRIDING SYSTEM VALUE` or `OVERRIDING USER VALUE` starting at `index`: its kind and
/// the byte offset just past it.
fn clause_at(tokens: &[Located], index: usize) -> Option<(Overriding, usize)> {
    let [overriding, kind, value, ..] = tokens.get(index..)? else { return None };
    let is_word = |token: &Token, word: &str| matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
    if !is_word(&overriding.token, "overriding") || !is_keyword(&value.token, Keyword::VALUE) {
        return None;
    }
    let kind = if is_keyword(&kind.token, Keyword::SYSTEM) {
        Overriding::System
    } else if is_keyword(&kind.token, Keyword::USER) {
        Overriding::User
    } else {
        return None;
    };
    Some((kind, value.end))
}

/// Marks the INSERTs at `inserts` (byte offsets in `sql`, the text sqlparser read),
/// PREPAREd ones too.
pub(super) fn mark_inserts(
    statement: &mut ast::Statement,
    sql: &str,
    inserts: &[(usize, Overriding)],
) {
    if inserts.is_empty() {
        return;
    }
    let mut marker = Marker { sql, line_starts: spans::line_starts(sql), inserts };
    let _ = statement.visit(&mut marker);
}

struct Marker<'a> {
    sql: &'a str,
    line_starts: Vec<usize>,
    inserts: &'a [(usize, Overriding)],
}

impl VisitorMut for Marker<'_> {
    type Break = ();

    fn pre_visit_statement(&mut self, statement: &mut ast::Statement) -> ControlFlow<()> {
        let ast::Statement::Insert(insert) = statement else { return ControlFlow::Continue(()) };
        let start = insert.insert_token.0.span.start;
        let Some(offset) = spans::byte_offset(self.sql, &self.line_starts, start) else {
            return ControlFlow::Continue(());
        };
        let Some(&(_, kind)) = self.inserts.iter().find(|(insert, _)| *insert == offset) else {
            return ControlFlow::Continue(());
        };
        insert.optimizer_hints.push(ast::OptimizerHint {
            prefix: OVERRIDING_MARK.to_string(),
            text: if kind == Overriding::System { "SYSTEM" } else { "USER" }.to_string(),
            style: ast::OptimizerHintStyle::MultiLine,
        });
        ControlFlow::Continue(())
    }
}

/// The OVERRIDING clause an INSERT was written with.
pub(crate) fn overriding(insert: &ast::Insert) -> Option<Overriding> {
    let hint = insert.optimizer_hints.iter().find(|hint| hint.prefix == OVERRIDING_MARK)?;
    Some(if hint.text == "SYSTEM" { Overriding::System } else { Overriding::User })
}

#[cfg(test)]
mod tests {
    use super::{blank_overriding, Overriding};

    #[test]
    fn the_clause_is_blanked_with_the_same_length() {
        let sql = "INSERT INTO t (id, a) OVERRIDING SYSTEM VALUE VALUES (1, 'x')";
        let (text, inserts) = blank_overriding(sql).expect("no error").expect("rewritten");
        assert_eq!(text.len(), sql.len());
        assert_eq!(
            text.split_whitespace().collect::<Vec<_>>().join(" "),
            "INSERT INTO t (id, a) VALUES (1, 'x')"
        );
        assert_eq!(inserts, vec![(0, Overriding::System)]);
        let sql = "prepare p as insert into t overriding user value select * from u";
        let (text, inserts) = blank_overriding(sql).expect("no error").expect("rewritten");
        assert!(!text.contains("overriding"));
        assert_eq!(inserts, vec![(sql.find("insert").expect("insert"), Overriding::User)]);
    }

    #[test]
    fn literals_names_and_other_text_are_left_alone() {
        let untouched = |sql: &str| blank_overriding(sql).expect("no error").is_none();
        assert!(untouched("INSERT INTO t VALUES ('overriding system value')"));
        assert!(untouched("SELECT overriding FROM t"));
        assert!(untouched("INSERT INTO t SELECT \"overriding\" system FROM u"));
        let error = blank_overriding("INSERT INTO t OVERRIDING USER VALUE DEFAULT VALUES")
            .expect_err("no OVERRIDING before DEFAULT VALUES");
        assert_eq!(error.position, Some(37));
    }
}
