//! The front parser's tokenizer: identifiers (lower-cased unless quoted), quoted strings
//! (`'...'` and `E'...'` with backslash escapes) and punctuation.

use crate::error::{Result, SqlError};

/// A tiny tokenizer: identifiers (lower-cased unless quoted), quoted strings, punctuation.
pub(super) fn tokens(sql: &str) -> Result<Vec<Token>> {
    let mut out = Vec::new();
    let chars: Vec<char> = sql.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if c.is_whitespace() {
            index += 1;
        } else if matches!(c, 'e' | 'E') && chars.get(index + 1) == Some(&'\'') {
            let (text, next) = quoted_string(&chars, index + 2, true)?;
            out.push(Token::String(text));
            index = next;
        } else if c == '\'' {
            let (text, next) = quoted_string(&chars, index + 1, false)?;
            out.push(Token::String(text));
            index = next;
        } else if c == '"' {
            let mut text = String::new();
            index += 1;
            while let Some(&next) = chars.get(index) {
                index += 1;
                if next == '"' {
                    break;
                }
                text.push(next);
            }
            out.push(Token::Word(text));
        } else if c.is_alphanumeric() || c == '_' || c == '.' {
            let start = index;
            while index < chars.len()
                && (chars[index].is_alphanumeric() || chars[index] == '_' || chars[index] == '.')
            {
                index += 1;
            }
            let word: String = chars[start..index].iter().collect();
            out.push(Token::Word(word.to_lowercase()));
        } else {
            out.push(Token::Symbol(c));
            index += 1;
        }
    }
    Ok(out)
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Token {
    Word(String),
    String(String),
    Symbol(char),
}

/// The body of a quoted string from `start` (after the quote), `''` read as one quote, and
/// the index after the closing quote. In an `E'...'` string (`backslash_escapes`) backslash
/// escapes are read as PostgreSQL reads them (`\t`, `\n`, `\r`, `\b`, `\f`, `\\`, `\'`).
fn quoted_string(chars: &[char], start: usize, backslash_escapes: bool) -> Result<(String, usize)> {
    let mut text = String::new();
    let mut index = start;
    loop {
        match chars.get(index) {
            None => return Err(SqlError::syntax("unterminated quoted string")),
            Some('\'') if chars.get(index + 1) == Some(&'\'') => {
                text.push('\'');
                index += 2;
            }
            Some('\'') => return Ok((text, index + 1)),
            Some('\\') if backslash_escapes => {
                let escaped = chars
                    .get(index + 1)
                    .ok_or_else(|| SqlError::syntax("unterminated quoted string"))?;
                text.push(match escaped {
                    't' => '\t',
                    'n' => '\n',
                    'r' => '\r',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    other => *other,
                });
                index += 2;
            }
            Some(other) => {
                text.push(*other);
                index += 1;
            }
        }
    }
}
