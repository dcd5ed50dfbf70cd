//! `GROUP BY DISTINCT` and `GROUP BY ALL` (PostgreSQL's set quantifier of a GROUP BY
//! list), which sqlparser does not read. The word is blanked with spaces of its length (so
//! error positions stay where the client wrote them), and after sqlparser has run, the
//! first item of each DISTINCT list is wrapped in `Expr::Prefixed` with the prefix
//! `DISTINCT` (`DISTINCT_MARK`): sqlparser prints it back as `GROUP BY DISTINCT ...`, so a
//! view's stored text keeps it, and sqlparser never makes that prefix itself (its prefixes
//! are `_charset` introducers). The binder removes the duplicate grouping sets of a marked
//! list (bind/grouping_sets.rs). ALL is the default and needs no mark.

use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitMut, VisitorMut};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use super::spans::{self, is_keyword, Located};

/// The prefix marking a GROUP BY DISTINCT list's first item.
pub(crate) const DISTINCT_MARK: &str = "DISTINCT";

/// The text with the quantifiers blanked, and the byte offsets of the SELECT keywords whose
/// GROUP BY lists were DISTINCT; None when the text has no quantified GROUP BY.
pub(super) fn blank_quantifiers(sql: &str) -> Option<(String, Vec<usize>)> {
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("group") || !(lower.contains("distinct") || lower.contains("all")) {
        return None;
    }
    let tokens = spans::located_tokens(sql)?;
    let mut text = sql.to_string();
    let mut distinct_selects = Vec::new();
    let mut blanked = false;
    // The offset of the last SELECT at each parenthesis depth: the one a GROUP BY belongs to.
    let mut selects: Vec<Option<usize>> = vec![None];
    for (index, located) in tokens.iter().enumerate() {
        match &located.token {
            Token::LParen => selects.push(None),
            Token::RParen if selects.len() > 1 => {
                selects.pop();
            }
            token if is_keyword(token, Keyword::SELECT) => {
                *selects.last_mut().expect("the outermost depth stays") = Some(located.offset);
            }
            token if is_keyword(token, Keyword::GROUP) => {
                let Some(quantifier) = quantifier_after(&tokens, index) else { continue };
                if is_keyword(&quantifier.token, Keyword::DISTINCT) {
                    let Some(select) = *selects.last().expect("the outermost depth stays") else {
                        continue;
                    };
                    distinct_selects.push(select);
                }
                let width = quantifier.end - quantifier.offset;
                text.replace_range(quantifier.offset..quantifier.end, &" ".repeat(width));
                blanked = true;
            }
            _ => {}
        }
    }
    blanked.then_some((text, distinct_selects))
}

/// The DISTINCT or ALL after `GROUP BY` at `index`. One followed by no list is blanked too:
/// sqlparser then reports PostgreSQL's syntax error at what follows.
fn quantifier_after(tokens: &[Located], index: usize) -> Option<&Located> {
    let [_, by, quantifier, ..] = tokens.get(index..)? else { return None };
    let quantified = is_keyword(&quantifier.token, Keyword::DISTINCT)
        || is_keyword(&quantifier.token, Keyword::ALL);
    (is_keyword(&by.token, Keyword::BY) && quantified).then_some(quantifier)
}

/// Marks the GROUP BY lists of the SELECTs at `distinct_selects` (byte offsets in `sql`,
/// the text sqlparser read).
pub(super) fn mark_distinct(statement: &mut ast::Statement, sql: &str, distinct_selects: &[usize]) {
    if distinct_selects.is_empty() {
        return;
    }
    let mut marker = Marker { sql, line_starts: spans::line_starts(sql), distinct_selects };
    let _ = statement.visit(&mut marker);
}

struct Marker<'a> {
    sql: &'a str,
    line_starts: Vec<usize>,
    distinct_selects: &'a [usize],
}

impl VisitorMut for Marker<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        self.mark_set_expression(&mut query.body);
        ControlFlow::Continue(())
    }
}

impl Marker<'_> {
    /// The SELECTs of a query body (the operands of set operations; a parenthesized query
    /// is visited as a query of its own).
    fn mark_set_expression(&self, body: &mut ast::SetExpr) {
        match body {
            ast::SetExpr::Select(select) => self.mark_select(select),
            ast::SetExpr::SetOperation { left, right, .. } => {
                self.mark_set_expression(left);
                self.mark_set_expression(right);
            }
            _ => {}
        }
    }

    fn mark_select(&self, select: &mut ast::Select) {
        let start = select.select_token.0.span.start;
        let Some(offset) = spans::byte_offset(self.sql, &self.line_starts, start) else {
            return;
        };
        if !self.distinct_selects.contains(&offset) {
            return;
        }
        let ast::GroupByExpr::Expressions(items, _) = &mut select.group_by else { return };
        let Some(first) = items.first_mut() else { return };
        if is_distinct_mark(first).is_some() {
            return;
        }
        let value = Box::new(std::mem::replace(first, ast::Expr::Tuple(Vec::new())));
        *first = ast::Expr::Prefixed { prefix: ast::Ident::new(DISTINCT_MARK), value };
    }
}

/// The item inside a GROUP BY DISTINCT mark, or None when `item` is not marked.
pub(crate) fn is_distinct_mark(item: &ast::Expr) -> Option<&ast::Expr> {
    match item {
        ast::Expr::Prefixed { prefix, value }
            if prefix.value == DISTINCT_MARK && prefix.quote_style.is_none() =>
        {
            Some(value)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::blank_quantifiers;

    #[test]
    fn quantifiers_are_blanked_with_the_same_length() {
        let sql = "SELECT a FROM t GROUP BY DISTINCT ROLLUP (a), b";
        let (text, selects) = blank_quantifiers(sql).expect("rewritten");
        assert_eq!(text.len(), sql.len());
        assert_eq!(
            text.split_whitespace().collect::<Vec<_>>().join(" "),
            "SELECT a FROM t GROUP BY ROLLUP (a), b"
        );
        assert_eq!(selects, vec![0]);
        let sql =
            "select (select 1 group by all 1), x from (select a from t group by distinct a) s";
        let (text, selects) = blank_quantifiers(sql).expect("rewritten");
        assert_eq!(text.len(), sql.len());
        assert!(!text.contains("all") && !text.contains("distinct"));
        assert_eq!(selects, vec![sql.find("select a").expect("inner select")]);
    }

    #[test]
    fn literals_names_and_other_text_are_left_alone() {
        assert!(blank_quantifiers("SELECT 'group by distinct a' FROM t").is_none());
        assert!(blank_quantifiers("SELECT DISTINCT a FROM t GROUP BY a").is_none());
        assert!(blank_quantifiers("SELECT \"group\" FROM t").is_none());
    }
}
