//! A scanner over SQL text that finds what sqlparser's tokenizer would find at the level the
//! checks before parsing need (quotes, comments, parentheses, commas, operators, words,
//! whitespace), without allocating: it runs before sqlparser, whose tokens and syntax tree
//! take hundreds of bytes for each byte of some inputs, so that the checks can refuse a
//! statement (or shrink its whitespace) first.
//!
//! Text that is not tokens (quoted strings, comments) is skipped as the tokenizer skips it,
//! so that nothing can hide behind a quote the scanner misreads.

/// What a lexeme is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LexemeKind {
    /// A quoted string or identifier (`'...'`, `E'...'`'s quote part, `"..."`, `$tag$...$tag$`).
    Quoted,
    /// `-- ...` (up to the newline) or `/* ... */` (nested).
    Comment,
    OpenParen,
    CloseParen,
    Comma,
    /// A run of operator characters (`+`, `||`, `<=`, `::` ...).
    Operator,
    /// A run of letters, digits, `_` and non-ASCII characters: a key word, an identifier or
    /// a number.
    Word,
    /// A run of spaces, tabs, newlines and carriage returns (sqlparser's whitespace).
    Whitespace,
    /// Any other single byte (`;`, `.`, a `$` that opens no dollar quote).
    Other,
}

/// One lexeme: its kind and byte range in the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lexeme {
    pub kind: LexemeKind,
    pub start: usize,
    pub end: usize,
}

/// The lexemes of a text, in order; together they cover every byte of it.
pub(crate) struct Lexer<'a> {
    bytes: &'a [u8],
    index: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(sql: &'a str) -> Lexer<'a> {
        Lexer { bytes: sql.as_bytes(), index: 0 }
    }
}

impl Iterator for Lexer<'_> {
    type Item = Lexeme;

    fn next(&mut self) -> Option<Lexeme> {
        let bytes = self.bytes;
        let start = self.index;
        let &byte = bytes.get(start)?;
        let mut index = start + 1;
        let kind = match byte {
            b'\'' | b'"' => {
                index = skip_quoted(bytes, index, byte, is_escape_string(bytes, start));
                LexemeKind::Quoted
            }
            b'$' => match skip_dollar_quoted(bytes, start) {
                Some(end) => {
                    index = end;
                    LexemeKind::Quoted
                }
                None => LexemeKind::Other,
            },
            b'-' if bytes.get(index) == Some(&b'-') => {
                index = bytes[index..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |end| index + end);
                LexemeKind::Comment
            }
            b'/' if bytes.get(index) == Some(&b'*') => {
                index = skip_block_comment(bytes, index + 1);
                LexemeKind::Comment
            }
            b'(' => LexemeKind::OpenParen,
            b')' => LexemeKind::CloseParen,
            b',' => LexemeKind::Comma,
            _ if is_operator_byte(byte) => {
                index = run_end(bytes, index, is_operator_byte);
                LexemeKind::Operator
            }
            _ if is_word_byte(byte) => {
                index = run_end(bytes, index, is_word_byte);
                LexemeKind::Word
            }
            _ if is_whitespace_byte(byte) => {
                index = run_end(bytes, index, is_whitespace_byte);
                LexemeKind::Whitespace
            }
            _ => LexemeKind::Other,
        };
        let end = index.min(bytes.len());
        assert!(end > start, "every lexeme consumes at least one byte");
        self.index = end;
        Some(Lexeme { kind, start, end })
    }
}

fn run_end(bytes: &[u8], mut index: usize, belongs: fn(u8) -> bool) -> usize {
    while index < bytes.len() && belongs(bytes[index]) {
        index += 1;
    }
    index
}

/// Letters, digits, `_`, and every byte of a non-ASCII character (PostgreSQL allows them in
/// identifiers). A run of these starts and ends on character boundaries.
fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80
}

/// The whitespace of sqlparser's tokenizer.
pub(crate) fn is_whitespace_byte(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_operator_byte(byte: u8) -> bool {
    matches!(
        byte,
        b'+' | b'-'
            | b'*'
            | b'/'
            | b'%'
            | b'^'
            | b'<'
            | b'>'
            | b'='
            | b'~'
            | b'!'
            | b'@'
            | b'#'
            | b'&'
            | b'|'
            | b'`'
            | b'?'
            | b':'
            | b'['
    )
}

/// Whether the quote at `quote` opens an escape string (`E'...'`, where `\'` is a quote).
fn is_escape_string(bytes: &[u8], quote: usize) -> bool {
    let is_word = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_';
    quote >= 1
        && matches!(bytes[quote - 1], b'e' | b'E')
        && (quote == 1 || !is_word(bytes[quote - 2]))
}

/// The index after a dollar-quoted string (`$$...$$`, `$tag$...$tag$`) starting at `start`,
/// or None when the `$` starts none (a parameter such as `$1`).
fn skip_dollar_quoted(bytes: &[u8], start: usize) -> Option<usize> {
    let tag_length = bytes[start + 1..]
        .iter()
        .position(|&byte| !(byte.is_ascii_alphanumeric() || byte == b'_'))?;
    let tag_end = start + 1 + tag_length;
    if bytes[tag_end] != b'$' || bytes.get(start + 1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let tag = &bytes[start..=tag_end];
    let body = tag_end + 1;
    Some(
        bytes[body..]
            .windows(tag.len())
            .position(|window| window == tag)
            .map_or(bytes.len(), |end| body + end + tag.len()),
    )
}

/// The index after the block comment whose body starts at `index` (block comments nest).
fn skip_block_comment(bytes: &[u8], mut index: usize) -> usize {
    let mut depth = 1;
    while index < bytes.len() && depth > 0 {
        match (bytes[index], bytes.get(index + 1)) {
            (b'/', Some(b'*')) => {
                depth += 1;
                index += 2;
            }
            (b'*', Some(b'/')) => {
                depth -= 1;
                index += 2;
            }
            _ => index += 1,
        }
    }
    index
}

/// The index after the quote closing the one before `index` (a doubled quote is part of
/// the text, and so is a backslash-escaped one in an escape string).
fn skip_quoted(bytes: &[u8], mut index: usize, quote: u8, backslash_escapes: bool) -> usize {
    while index < bytes.len() {
        if backslash_escapes && bytes[index] == b'\\' {
            index += 2;
            continue;
        }
        if bytes[index] == quote {
            if bytes.get(index + 1) == Some(&quote) {
                index += 2;
                continue;
            }
            return index + 1;
        }
        index += 1;
    }
    index.min(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(sql: &str) -> Vec<(LexemeKind, &str)> {
        Lexer::new(sql).map(|lexeme| (lexeme.kind, &sql[lexeme.start..lexeme.end])).collect()
    }

    #[test]
    fn lexemes_cover_the_text_and_skip_quotes_and_comments() {
        use LexemeKind::*;
        assert_eq!(
            kinds("SELECT  a+1, 'x,y' -- c\n(\"q\")$1$$ $$é"),
            vec![
                (Word, "SELECT"),
                (Whitespace, "  "),
                (Word, "a"),
                (Operator, "+"),
                (Word, "1"),
                (Comma, ","),
                (Whitespace, " "),
                (Quoted, "'x,y'"),
                (Whitespace, " "),
                (Comment, "-- c"),
                (Whitespace, "\n"),
                (OpenParen, "("),
                (Quoted, "\"q\""),
                (CloseParen, ")"),
                (Other, "$"),
                (Word, "1"),
                (Quoted, "$$ $$"),
                (Word, "é"),
            ]
        );
        assert_eq!(
            kinds("E'\\'', 1"),
            vec![(Word, "E"), (Quoted, "'\\''"), (Comma, ","), (Whitespace, " "), (Word, "1")]
        );
        assert_eq!(kinds("/* a /* b */ c */x"), vec![(Comment, "/* a /* b */ c */"), (Word, "x")]);
        assert_eq!(kinds("'open"), vec![(Quoted, "'open")]);
    }
}
