//! A window frame's exclusion (`... EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS`), which
//! sqlparser does not read. The clause is blanked with spaces of its length (so error
//! positions stay where the client wrote them) and, after sqlparser has run, put back on the
//! window it ends as a mark in the window's name (`window_name`, `EXCLUSION_MARK`, the
//! exclusion, `EXCLUSION_MARK`, then the name of a window it copies, if any): the one place
//! of sqlparser's WindowSpec that can carry it. The binder reads it with `split_window_name`.
//!
//! A string constant that starts a frame offset (`RANGE BETWEEN '1 day' PRECEDING`) is read
//! by sqlparser as an INTERVAL constant, and one followed by a cast (`'1 day'::interval`)
//! fails to parse; PostgreSQL reads an untyped constant of the offset's type. It is
//! rewritten to the escape string `E'...'` (the same text, as it has no backslash), which
//! sqlparser reads as any other expression; that adds a byte, so a syntax error after it in
//! the statement reports a position one character further.
//!
//! A window belongs to the OVER clause of a function call or to a WINDOW clause definition;
//! the exclusion is given to the last of these that starts before it (the call's arguments
//! or the definition's name end before its frame does). A view keeps sqlparser's text of its
//! query, which cannot hold the mark, so CREATE VIEW with an exclusion is 0A000.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Spanned, Visit, VisitMut, Visitor, VisitorMut};
use sqlparser::keywords::Keyword;

use super::spans::{self, is_keyword, Located};
use crate::error::{Result, SqlError};

/// The exclusion a frame clause names (the binder's `plan::FrameExclusion`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FrameExclusion {
    NoOthers,
    CurrentRow,
    Group,
    Ties,
}

/// Starts and ends the exclusion inside a marked window name.
const EXCLUSION_MARK: char = '\u{1}';

/// The text with the exclusions blanked, and each exclusion's byte offset with its kind;
/// None when the text has none.
pub(super) fn blank_exclusions(sql: &str) -> Option<(String, Vec<(usize, FrameExclusion)>)> {
    let lower = sql.to_ascii_lowercase();
    let framed = ["rows", "range", "groups"].iter().any(|word| lower.contains(word));
    if !framed || !(lower.contains("exclude") || lower.contains('\'')) {
        return None;
    }
    let tokens = spans::located_tokens(sql)?;
    let mut text = sql.to_string();
    let mut exclusions = Vec::new();
    // Where an `E` goes before a string constant (the one rewrite that adds a byte).
    let mut escapes = Vec::new();
    let mut rewritten = false;
    for index in 1..tokens.len() {
        if starts_offset(&tokens, index)
            && !sql[tokens[index].offset..tokens[index].end].contains('\\')
        {
            escapes.push(tokens[index].offset);
        }
        if !is_keyword(&tokens[index].token, Keyword::EXCLUDE) {
            continue;
        }
        let after_bound = [Keyword::PRECEDING, Keyword::FOLLOWING, Keyword::ROW]
            .iter()
            .any(|&keyword| is_keyword(&tokens[index - 1].token, keyword));
        if !after_bound || !in_frame_clause(&tokens, index) {
            continue;
        }
        let Some((kind, last)) = exclusion_after(&tokens, index) else {
            // EXCLUDE then something else: blanked, so that sqlparser's syntax error names
            // the token after it, as PostgreSQL's does.
            let next = tokens.get(index + 1).map(|located| &located.token);
            if next.is_some_and(|token| *token != sqlparser::tokenizer::Token::RParen) {
                let (start, end) = (tokens[index].offset, tokens[index].end);
                text.replace_range(start..end, &" ".repeat(end - start));
                rewritten = true;
            }
            continue;
        };
        let (start, end) = (tokens[index].offset, tokens[last].end);
        text.replace_range(start..end, &" ".repeat(end - start));
        exclusions.push((start, kind));
    }
    // The escapes last, from the end, so the offsets before each stay; an exclusion after
    // them moves by their count.
    for &offset in escapes.iter().rev() {
        text.insert(offset, 'E');
    }
    for (offset, _) in &mut exclusions {
        *offset += escapes.iter().filter(|&&escape| escape < *offset).count();
    }
    rewritten |= !escapes.is_empty();
    (rewritten || !exclusions.is_empty()).then_some((text, exclusions))
}

/// Whether the token at `index` is a string constant starting a frame bound: after ROWS,
/// RANGE or GROUPS, after their BETWEEN, or after the AND that follows the first bound.
fn starts_offset(tokens: &[Located], index: usize) -> bool {
    use sqlparser::tokenizer::Token;
    if !matches!(tokens[index].token, Token::SingleQuotedString(_)) {
        return false;
    }
    let is = |at: usize, keywords: &[Keyword]| {
        keywords.iter().any(|&keyword| is_keyword(&tokens[at].token, keyword))
    };
    let units = [Keyword::ROWS, Keyword::RANGE, Keyword::GROUPS];
    let previous = index - 1;
    if is(previous, &units) {
        return true;
    }
    if previous == 0 {
        return false;
    }
    (is(previous, &[Keyword::BETWEEN]) && is(previous - 1, &units))
        || (is(previous, &[Keyword::AND])
            && is(previous - 1, &[Keyword::PRECEDING, Keyword::FOLLOWING, Keyword::ROW]))
}

/// Whether the token at `index` is inside a window's parentheses after its ROWS, RANGE or
/// GROUPS: elsewhere EXCLUDE is a name (`SELECT preceding exclude FROM t` is the column
/// `preceding` labelled `exclude`), which must stay in the text: blanked, the query would
/// run with the column labelled `preceding`.
fn in_frame_clause(tokens: &[Located], index: usize) -> bool {
    use sqlparser::tokenizer::Token;
    let units = [Keyword::ROWS, Keyword::RANGE, Keyword::GROUPS];
    // Parentheses closed between a token and `index`; the scan stops at the window's `(`.
    let mut depth = 0usize;
    for located in tokens[..index].iter().rev() {
        match &located.token {
            Token::RParen => depth += 1,
            Token::LParen if depth == 0 => return false,
            Token::LParen => depth -= 1,
            token if depth == 0 && units.iter().any(|&unit| is_keyword(token, unit)) => {
                return true
            }
            _ => {}
        }
    }
    false
}

/// The exclusion the EXCLUDE at `index` names and the index of its last token.
fn exclusion_after(tokens: &[Located], index: usize) -> Option<(FrameExclusion, usize)> {
    let word = |offset: usize, keyword: Keyword| {
        tokens.get(index + offset).is_some_and(|located| is_keyword(&located.token, keyword))
    };
    if word(1, Keyword::CURRENT) && word(2, Keyword::ROW) {
        Some((FrameExclusion::CurrentRow, index + 2))
    } else if word(1, Keyword::GROUP) {
        Some((FrameExclusion::Group, index + 1))
    } else if word(1, Keyword::TIES) {
        Some((FrameExclusion::Ties, index + 1))
    } else if word(1, Keyword::NO) && tokens.get(index + 2).is_some_and(is_others) {
        Some((FrameExclusion::NoOthers, index + 2))
    } else {
        None
    }
}

/// Whether a token is the word OTHERS (not one of sqlparser's keywords).
fn is_others(located: &Located) -> bool {
    matches!(&located.token, sqlparser::tokenizer::Token::Word(word)
        if word.quote_style.is_none() && word.value.eq_ignore_ascii_case("others"))
}

/// Puts the exclusions found at `exclusions` (byte offsets in `sql`, the text sqlparser
/// read) back on the windows of `statements` (all those of the text).
pub(super) fn mark_exclusions(
    statements: &mut [ast::Statement],
    sql: &str,
    exclusions: &[(usize, FrameExclusion)],
) -> Result<()> {
    if exclusions.is_empty() {
        return Ok(());
    }
    let line_starts = spans::line_starts(sql);
    let mut finder = Anchors { sql, line_starts: &line_starts, found: Vec::new() };
    // The statement of each anchor, by the anchors' count after it.
    let mut statement_ends = Vec::with_capacity(statements.len());
    for statement in statements.iter() {
        let _ = statement.visit(&mut finder);
        statement_ends.push(finder.found.len());
    }
    let mut assigned: Vec<Option<FrameExclusion>> = vec![None; finder.found.len()];
    for &(offset, exclusion) in exclusions {
        let owner = finder
            .found
            .iter()
            .enumerate()
            .filter(|(_, anchor)| anchor.is_some_and(|anchor| anchor <= offset))
            .max_by_key(|(_, anchor)| anchor.unwrap_or(0))
            .map(|(index, _)| index)
            .ok_or_else(|| SqlError::syntax("syntax error at or near \"EXCLUDE\""))?;
        let statement = statement_ends.iter().position(|&end| owner < end).unwrap_or(0);
        if matches!(statements[statement], ast::Statement::CreateView(_)) {
            return Err(SqlError::unsupported(
                "EXCLUDE in a window frame of a view is not supported",
            ));
        }
        assigned[owner] = Some(exclusion);
    }
    let mut marker = Marker { assigned: &assigned, next: 0 };
    for statement in statements.iter_mut() {
        let _ = statement.visit(&mut marker);
    }
    Ok(())
}

/// The window name and exclusion a (possibly marked) window carries.
pub(crate) fn split_window_name(spec: &ast::WindowSpec) -> (Option<ast::Ident>, FrameExclusion) {
    let Some(name) = &spec.window_name else { return (None, FrameExclusion::NoOthers) };
    let Some(marked) = name.value.strip_prefix(EXCLUSION_MARK) else {
        return (Some(name.clone()), FrameExclusion::NoOthers);
    };
    let Some((kind, rest)) = marked.split_once(EXCLUSION_MARK) else {
        return (Some(name.clone()), FrameExclusion::NoOthers);
    };
    let exclusion = match kind {
        "CURRENT ROW" => FrameExclusion::CurrentRow,
        "GROUP" => FrameExclusion::Group,
        "TIES" => FrameExclusion::Ties,
        _ => FrameExclusion::NoOthers,
    };
    let base = (!rest.is_empty()).then(|| ast::Ident {
        value: rest.to_string(),
        quote_style: name.quote_style,
        span: name.span,
    });
    (base, exclusion)
}

/// A window name carrying `exclusion` (None when there is neither).
pub(crate) fn marked_window_name(
    base: Option<ast::Ident>,
    exclusion: FrameExclusion,
) -> Option<ast::Ident> {
    let kind = match exclusion {
        FrameExclusion::NoOthers => return base,
        FrameExclusion::CurrentRow => "CURRENT ROW",
        FrameExclusion::Group => "GROUP",
        FrameExclusion::Ties => "TIES",
    };
    let (rest, quote_style, span) = match base {
        Some(base) => (base.value, base.quote_style, base.span),
        None => (String::new(), None, sqlparser::tokenizer::Span::empty()),
    };
    Some(ast::Ident {
        value: format!("{EXCLUSION_MARK}{kind}{EXCLUSION_MARK}{rest}"),
        quote_style,
        span,
    })
}

/// Where each window with a frame starts, in the order the statement is visited (None when
/// sqlparser kept no position).
struct Anchors<'a> {
    sql: &'a str,
    line_starts: &'a [usize],
    found: Vec<Option<usize>>,
}

impl Anchors<'_> {
    fn offset(&self, span: sqlparser::tokenizer::Span) -> Option<usize> {
        spans::byte_offset(self.sql, self.line_starts, span.end)
    }
}

impl Visitor for Anchors<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &ast::Query) -> ControlFlow<()> {
        for definition in named_windows(&query.body) {
            let ast::NamedWindowExpr::WindowSpec(spec) = &definition.1 else { continue };
            if spec.window_frame.is_some() {
                let anchor = self.offset(definition.0.span);
                self.found.push(anchor);
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &ast::Expr) -> ControlFlow<()> {
        if let ast::Expr::Function(function) = expr {
            if let Some(ast::WindowType::WindowSpec(spec)) = &function.over {
                if spec.window_frame.is_some() {
                    let anchor = self.offset(function.span());
                    self.found.push(anchor);
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// The WINDOW clause definitions of a query body's SELECTs.
fn named_windows(body: &ast::SetExpr) -> Vec<&ast::NamedWindowDefinition> {
    match body {
        ast::SetExpr::Select(select) => select.named_window.iter().collect(),
        ast::SetExpr::SetOperation { left, right, .. } => {
            let mut found = named_windows(left);
            found.extend(named_windows(right));
            found
        }
        _ => Vec::new(),
    }
}

/// Marks the windows `Anchors` found, in the same visiting order.
struct Marker<'a> {
    assigned: &'a [Option<FrameExclusion>],
    next: usize,
}

impl Marker<'_> {
    fn mark(&mut self, spec: &mut ast::WindowSpec) {
        if let Some(Some(exclusion)) = self.assigned.get(self.next) {
            spec.window_name = marked_window_name(spec.window_name.take(), *exclusion);
        }
        self.next += 1;
    }
}

impl VisitorMut for Marker<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        for definition in named_windows_mut(&mut query.body) {
            let ast::NamedWindowExpr::WindowSpec(spec) = &mut definition.1 else { continue };
            if spec.window_frame.is_some() {
                self.mark(spec);
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if let ast::Expr::Function(function) = expr {
            if let Some(ast::WindowType::WindowSpec(spec)) = &mut function.over {
                if spec.window_frame.is_some() {
                    self.mark(spec);
                }
            }
        }
        ControlFlow::Continue(())
    }
}

fn named_windows_mut(body: &mut ast::SetExpr) -> Vec<&mut ast::NamedWindowDefinition> {
    match body {
        ast::SetExpr::Select(select) => select.named_window.iter_mut().collect(),
        ast::SetExpr::SetOperation { left, right, .. } => {
            let mut found = named_windows_mut(left);
            found.extend(named_windows_mut(right));
            found
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusions_are_blanked_with_the_same_length() {
        let sql = "SELECT sum(v) OVER (ORDER BY v ROWS 1 PRECEDING EXCLUDE CURRENT ROW) FROM t";
        let (text, exclusions) = blank_exclusions(sql).expect("rewritten");
        assert_eq!(text.len(), sql.len());
        assert!(!text.contains("EXCLUDE") && !text.contains("CURRENT ROW"));
        assert_eq!(
            exclusions,
            vec![(sql.find("EXCLUDE").expect("there"), FrameExclusion::CurrentRow)]
        );
        assert!(blank_exclusions("SELECT 'rows 1 preceding exclude ties' FROM t").is_none());
        // A column label named exclude stays.
        let label = "SELECT preceding exclude FROM ranges";
        assert!(blank_exclusions(label).is_none());
        let nested = "SELECT sum(v) OVER (ROWS (1) PRECEDING EXCLUDE GROUP) FROM t";
        assert_eq!(blank_exclusions(nested).expect("rewritten").1.len(), 1);
    }

    #[test]
    fn marks_round_trip() {
        let base = Some(ast::Ident::new("w"));
        let name = marked_window_name(base, FrameExclusion::Ties);
        let spec = ast::WindowSpec {
            window_name: name,
            partition_by: Vec::new(),
            order_by: Vec::new(),
            window_frame: None,
        };
        let (base, exclusion) = split_window_name(&spec);
        assert_eq!(base.map(|ident| ident.value), Some("w".to_string()));
        assert_eq!(exclusion, FrameExclusion::Ties);
    }
}
