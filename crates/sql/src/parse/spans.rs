//! sqlparser's tokens of a text with their byte offsets: the same-length rewrites before
//! sqlparser runs (`<+>`, qualified comparisons, identity options) edit the text at tokens,
//! never inside literals, quoted identifiers or comments.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// A token, the byte offset in the text where it starts and the one just past it.
pub(super) struct Located {
    pub token: Token,
    pub offset: usize,
    pub end: usize,
}

/// The text's tokens but whitespace and comments, with their byte offsets; None when the
/// text does not tokenize (sqlparser then reports the error).
pub(super) fn located_tokens(sql: &str) -> Option<Vec<Located>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().ok()?;
    let line_starts = line_starts(sql);
    let mut located = Vec::with_capacity(tokens.len());
    for token in tokens {
        if matches!(token.token, Token::Whitespace(_)) {
            continue;
        }
        let offset = byte_offset(sql, &line_starts, token.span.start)?;
        let end = byte_offset(sql, &line_starts, token.span.end)?;
        located.push(Located { token: token.token, offset, end });
    }
    Some(located)
}

/// The byte offsets where the text's lines start.
pub(super) fn line_starts(sql: &str) -> Vec<usize> {
    std::iter::once(0).chain(sql.match_indices('\n').map(|(index, _)| index + 1)).collect()
}

/// The byte offset of a 1-based (line, column) location; the text's length just past its
/// last character.
pub(super) fn byte_offset(
    sql: &str,
    line_starts: &[usize],
    location: sqlparser::tokenizer::Location,
) -> Option<usize> {
    let line = usize::try_from(location.line).ok()?.checked_sub(1)?;
    let column = usize::try_from(location.column).ok()?.checked_sub(1)?;
    let line_start = *line_starts.get(line)?;
    let mut characters = sql[line_start..].char_indices().map(|(index, _)| index);
    Some(line_start + characters.nth(column).unwrap_or(sql.len() - line_start))
}

/// Whether `token` is the (unquoted) keyword `keyword`.
pub(super) fn is_keyword(token: &Token, keyword: sqlparser::keywords::Keyword) -> bool {
    matches!(token, Token::Word(word) if word.keyword == keyword && word.quote_style.is_none())
}
