//! DECLARE ... CURSOR, FETCH, MOVE and CLOSE (PostgreSQL's forms), read by the front
//! parser: sqlparser knows no MOVE and reads the others in other dialects' shapes.
//!
//! Cursors are forward-only (NO SCROLL) and end with their transaction: SCROLL, WITH HOLD,
//! BINARY and the backward or absolute directions fail with 0A000 naming the feature.

use crate::error::{Result, SqlError};

/// How many rows a FETCH or MOVE goes forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchCount {
    Rows(u64),
    All,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CursorStatement {
    /// DECLARE name CURSOR FOR query (the query's text).
    Declare { name: String, query: String },
    /// FETCH, or MOVE (`fetch_rows` false: rows are skipped, not returned).
    Fetch { name: String, count: FetchCount, fetch_rows: bool },
    /// CLOSE name, or CLOSE ALL (None).
    Close { name: Option<String> },
}

/// A word of the statement and the byte offset just past it.
struct Word {
    text: String,
    end: usize,
}

/// Whitespace-separated words: lower-cased, or as written without quotes when quoted.
fn words(sql: &str) -> Vec<Word> {
    let mut words = Vec::new();
    let mut start = None;
    for (offset, c) in sql.char_indices().chain(std::iter::once((sql.len(), ' '))) {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(offset),
            (true, Some(begin)) => {
                let raw = &sql[begin..offset];
                let text = match raw.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')) {
                    Some(quoted) => quoted.replace("\"\"", "\""),
                    None => raw.to_lowercase(),
                };
                words.push(Word { text, end: offset });
                start = None;
            }
            _ => {}
        }
    }
    words
}

fn syntax_error(near: Option<&Word>) -> SqlError {
    match near {
        Some(word) => SqlError::syntax(format!("syntax error at or near \"{}\"", word.text)),
        None => SqlError::syntax("syntax error at end of input"),
    }
}

fn unsupported(feature: &str) -> SqlError {
    SqlError::unsupported(format!("{feature} is not supported"))
}

/// Parses a cursor statement; None when `sql` is not one.
pub fn parse(sql: &str) -> Result<Option<CursorStatement>> {
    let words = words(sql);
    let Some(first) = words.first() else { return Ok(None) };
    match first.text.as_str() {
        "declare" => declare(sql, &words).map(Some),
        "fetch" => fetch(&words, true).map(Some),
        "move" => fetch(&words, false).map(Some),
        "close" => match &words[1..] {
            [all] if all.text == "all" => Ok(Some(CursorStatement::Close { name: None })),
            [name] => Ok(Some(CursorStatement::Close { name: Some(name.text.clone()) })),
            rest => Err(syntax_error(rest.get(1))),
        },
        _ => Ok(None),
    }
}

fn declare(sql: &str, words: &[Word]) -> Result<CursorStatement> {
    let name = words.get(1).ok_or_else(|| syntax_error(None))?.text.clone();
    let mut index = 2;
    let mut next = |expected: &[&str]| -> Option<String> {
        let word = words.get(index).filter(|word| expected.contains(&word.text.as_str()))?;
        index += 1;
        Some(word.text.clone())
    };
    if next(&["binary"]).is_some() {
        return Err(unsupported("DECLARE BINARY CURSOR"));
    }
    next(&["insensitive", "asensitive"]);
    match next(&["scroll", "no"]).as_deref() {
        Some("scroll") => return Err(unsupported("DECLARE SCROLL CURSOR")),
        Some(_) if next(&["scroll"]).is_none() => return Err(syntax_error(words.get(index))),
        _ => {}
    }
    if next(&["cursor"]).is_none() {
        return Err(syntax_error(words.get(index)));
    }
    match next(&["with", "without"]).as_deref() {
        Some("with") if next(&["hold"]).is_some() => {
            return Err(unsupported("DECLARE CURSOR WITH HOLD"))
        }
        Some(_) if next(&["hold"]).is_none() => return Err(syntax_error(words.get(index))),
        _ => {}
    }
    let Some(for_word) = words.get(index).filter(|word| word.text == "for") else {
        return Err(syntax_error(words.get(index)));
    };
    let query = sql[for_word.end..].trim().to_string();
    if query.is_empty() {
        return Err(syntax_error(None));
    }
    Ok(CursorStatement::Declare { name, query })
}

fn fetch(words: &[Word], fetch_rows: bool) -> Result<CursorStatement> {
    let command = if fetch_rows { "FETCH" } else { "MOVE" };
    let mut rest = &words[1..];
    let take = |rest: &mut &[Word]| -> Option<String> {
        let (word, tail) = rest.split_first()?;
        *rest = tail;
        Some(word.text.clone())
    };
    let count = |text: &str| -> Result<FetchCount> {
        match text.parse::<i64>() {
            Ok(rows) if rows > 0 => Ok(FetchCount::Rows(rows.unsigned_abs())),
            Ok(0) => Err(unsupported(&format!("{command} 0 (RELATIVE 0)"))),
            Ok(_) => Err(unsupported(&format!("{command} BACKWARD"))),
            Err(_) => Err(SqlError::syntax(format!("syntax error at or near \"{text}\""))),
        }
    };
    let direction = rest.first().map(|word| word.text.clone());
    let count = match direction.as_deref() {
        Some("next") => {
            take(&mut rest);
            FetchCount::Rows(1)
        }
        Some("all") => {
            take(&mut rest);
            FetchCount::All
        }
        Some("forward") => {
            take(&mut rest);
            match rest.first().map(|word| word.text.as_str()) {
                Some("all") => {
                    take(&mut rest);
                    FetchCount::All
                }
                Some(text) if text.starts_with(|c: char| c.is_ascii_digit() || c == '-') => {
                    count(&take(&mut rest).expect("a word"))?
                }
                _ => FetchCount::Rows(1),
            }
        }
        Some(keyword @ ("prior" | "first" | "last" | "absolute" | "relative" | "backward")) => {
            return Err(unsupported(&format!("{command} {}", keyword.to_uppercase())));
        }
        Some(text) if text.starts_with(|c: char| c.is_ascii_digit() || c == '-') => {
            count(&take(&mut rest).expect("a word"))?
        }
        _ => FetchCount::Rows(1),
    };
    if matches!(rest.first().map(|word| word.text.as_str()), Some("from" | "in")) {
        take(&mut rest);
    }
    match rest {
        [name] => Ok(CursorStatement::Fetch { name: name.text.clone(), count, fetch_rows }),
        [] => Err(syntax_error(None)),
        [_, extra, ..] => Err(syntax_error(Some(extra))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_statements_parse_as_postgresql_writes_them() {
        let declare = parse("DECLARE c NO SCROLL CURSOR WITHOUT HOLD FOR SELECT 1").unwrap();
        let expected = CursorStatement::Declare { name: "c".into(), query: "SELECT 1".into() };
        assert_eq!(declare, Some(expected));
        let fetch = |sql: &str| match parse(sql).unwrap() {
            Some(CursorStatement::Fetch { name, count, .. }) => (name, count),
            other => panic!("{sql}: {other:?}"),
        };
        assert_eq!(fetch("FETCH c"), ("c".into(), FetchCount::Rows(1)));
        assert_eq!(fetch("FETCH 5 FROM \"C\""), ("C".into(), FetchCount::Rows(5)));
        assert_eq!(fetch("FETCH FORWARD ALL IN c"), ("c".into(), FetchCount::All));
        assert_eq!(fetch("MOVE FORWARD 3 c"), ("c".into(), FetchCount::Rows(3)));
        let code = |sql: &str| parse(sql).unwrap_err().sqlstate;
        assert_eq!(code("FETCH BACKWARD 2 FROM c"), "0A000");
        assert_eq!(code("FETCH -1 FROM c"), "0A000");
        assert_eq!(code("DECLARE c SCROLL CURSOR FOR SELECT 1"), "0A000");
        assert_eq!(code("DECLARE c CURSOR WITH HOLD FOR SELECT 1"), "0A000");
        assert_eq!(code("FETCH 2 FROM c d"), "42601");
        assert_eq!(parse("CLOSE ALL").unwrap(), Some(CursorStatement::Close { name: None }));
    }
}
