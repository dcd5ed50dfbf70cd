//! The front parser: the few PostgreSQL statements `sqlparser` does not model the way
//! PostgreSQL clients send them — COPY with its option list (`WITH (FORMAT csv, FREEZE on)`,
//! legacy `CSV HEADER`), VACUUM and ANALYZE with their option lists, RESET, DISCARD and
//! CHECKPOINT.
//! Everything else goes to `sqlparser`.

use sqlparser::ast;

use super::tokens::{tokens, Token};
use crate::error::{Result, SqlError};

pub use super::copy_options::{CopyFormat, CopyOptions};

#[derive(Clone, Debug, PartialEq)]
pub enum CopySource {
    /// `schema` holds the qualifying parts before the name (`public`, or `db`, `public`).
    Table {
        schema: Vec<String>,
        name: String,
        columns: Vec<String>,
    },
    Query(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct CopyStatement {
    pub source: CopySource,
    /// FROM STDIN (true) or TO STDOUT (false).
    pub from: bool,
    pub options: CopyOptions,
}

/// What DISCARD drops from the session (PostgreSQL's discard.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscardTarget {
    All,
    Plans,
    Sequences,
    Temporary,
}

impl From<&ast::DiscardObject> for DiscardTarget {
    fn from(object: &ast::DiscardObject) -> DiscardTarget {
        match object {
            ast::DiscardObject::ALL => DiscardTarget::All,
            ast::DiscardObject::PLANS => DiscardTarget::Plans,
            ast::DiscardObject::SEQUENCES => DiscardTarget::Sequences,
            ast::DiscardObject::TEMP => DiscardTarget::Temporary,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum FrontStatement {
    Copy(CopyStatement),
    Vacuum {
        tables: Vec<String>,
        analyze: bool,
    },
    Analyze {
        tables: Vec<String>,
    },
    Reset {
        name: String,
    },
    /// DISCARD ALL | PLANS | SEQUENCES | TEMP[ORARY] (other forms go to the SQL parser,
    /// whose syntax error is PostgreSQL's answer).
    Discard(DiscardTarget),
    /// `CHECKPOINT`: every dirty page written and a checkpoint taken now.
    Checkpoint,
    /// DECLARE ... CURSOR, FETCH, MOVE, CLOSE (parse/cursor.rs).
    Cursor(super::cursor::CursorStatement),
    /// CREATE, ALTER and DROP SEQUENCE (parse/sequences.rs).
    Sequence(super::sequences::SequenceStatement),
    /// ALTER TABLE ... ALTER COLUMN ... ADD GENERATED / SET GENERATED / RESTART / DROP
    /// IDENTITY (parse/identity.rs).
    AlterIdentity(super::identity::AlterIdentity),
}

/// Whether a CREATE, ALTER or DROP statement is about a sequence (its second or, after
/// TEMP, third word).
fn names_sequence(sql: &str) -> bool {
    let mut words = sql.split_whitespace().skip(1).map(str::to_ascii_lowercase);
    match words.next().as_deref() {
        Some("sequence") => true,
        Some("temp" | "temporary") => words.next().as_deref() == Some("sequence"),
        _ => false,
    }
}

fn first_word(sql: &str) -> String {
    sql.trim_start().split(|c: char| !c.is_alphanumeric()).next().unwrap_or("").to_lowercase()
}

/// Parses `sql` if it is one of the front parser's statements.
pub fn parse(sql: &str) -> Result<Option<FrontStatement>> {
    let trimmed = sql.trim().trim_end_matches(';').trim();
    match first_word(trimmed).as_str() {
        "copy" => parse_copy(trimmed).map(|copy| Some(FrontStatement::Copy(copy))),
        "vacuum" => {
            let words = words(trimmed)?;
            let analyze = words.iter().any(|word| word == "analyze" || word == "analyse");
            let tables = words
                .into_iter()
                .skip(1)
                .filter(|word| {
                    !matches!(
                        word.as_str(),
                        "analyze"
                            | "analyse"
                            | "verbose"
                            | "full"
                            | "freeze"
                            | "true"
                            | "false"
                            | "on"
                            | "off"
                    )
                })
                .map(|word| word.rsplit('.').next().unwrap_or_default().to_string())
                .collect();
            Ok(Some(FrontStatement::Vacuum { tables, analyze }))
        }
        "analyze" | "analyse" => {
            let tables =
                words(trimmed)?.into_iter().skip(1).filter(|word| word != "verbose").collect();
            Ok(Some(FrontStatement::Analyze { tables }))
        }
        "reset" => {
            let words = words(trimmed)?;
            Ok(Some(FrontStatement::Reset { name: words.get(1).cloned().unwrap_or_default() }))
        }
        "discard" => {
            let words = words(trimmed)?;
            let target = match (words.get(1).map(|word| word.to_ascii_lowercase()), words.len()) {
                (Some(word), 2) => match word.as_str() {
                    "all" => DiscardTarget::All,
                    "plans" => DiscardTarget::Plans,
                    "sequences" => DiscardTarget::Sequences,
                    "temp" | "temporary" => DiscardTarget::Temporary,
                    _ => return Ok(None),
                },
                _ => return Ok(None),
            };
            Ok(Some(FrontStatement::Discard(target)))
        }
        "create" | "alter" | "drop" if names_sequence(trimmed) => {
            Ok(super::sequences::parse(trimmed)?.map(FrontStatement::Sequence))
        }
        "alter" => Ok(super::identity::parse(trimmed)?.map(FrontStatement::AlterIdentity)),
        "declare" | "fetch" | "move" | "close" => {
            Ok(super::cursor::parse(trimmed)?.map(FrontStatement::Cursor))
        }
        // CHECKPOINT takes no options; anything after it is left to the SQL parser, whose
        // syntax error (42601) is PostgreSQL's answer too.
        "checkpoint" if words(trimmed)?.len() == 1 => Ok(Some(FrontStatement::Checkpoint)),
        _ => Ok(None),
    }
}

fn words(sql: &str) -> Result<Vec<String>> {
    Ok(tokens(sql)?
        .into_iter()
        .filter_map(|token| match token {
            Token::Word(word) => Some(word),
            _ => None,
        })
        .collect())
}

fn parse_copy(sql: &str) -> Result<CopyStatement> {
    let tokens = tokens(sql)?;
    let mut position = 1;
    let source = if tokens.get(position) == Some(&Token::Symbol('(')) {
        // COPY (query) TO STDOUT: take the text between the outer parentheses.
        let open = sql.find('(').ok_or_else(|| SqlError::syntax("COPY query"))?;
        let mut depth = 0;
        let mut close = None;
        for (offset, c) in sql[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + offset);
                        break;
                    }
                }
                _ => {}
            }
        }
        let close = close.ok_or_else(|| SqlError::syntax("unbalanced parentheses in COPY"))?;
        let query = sql[open + 1..close].to_string();
        let rest = &sql[close + 1..];
        let tail = tokens_after(rest)?;
        return finish_copy(CopySource::Query(query), &tail, 0);
    } else {
        let Some(Token::Word(name)) = tokens.get(position) else {
            return Err(SqlError::syntax("syntax error at or near COPY"));
        };
        position += 1;
        let mut schema: Vec<String> = name.split('.').map(str::to_string).collect();
        let name = schema.pop().unwrap_or_default();
        let mut columns = Vec::new();
        if tokens.get(position) == Some(&Token::Symbol('(')) {
            position += 1;
            loop {
                match tokens.get(position) {
                    Some(Token::Word(column)) => columns.push(column.clone()),
                    Some(Token::Symbol(',')) => {}
                    Some(Token::Symbol(')')) => {
                        position += 1;
                        break;
                    }
                    _ => return Err(SqlError::syntax("syntax error in COPY column list")),
                }
                position += 1;
            }
        }
        CopySource::Table { schema, name, columns }
    };
    finish_copy(source, &tokens, position)
}

/// COPY's QUOTE and ESCAPE: one one-byte character, as PostgreSQL requires (0A000); the
/// record scanner of COPY FROM compares them with bytes.
fn tokens_after(rest: &str) -> Result<Vec<Token>> {
    tokens(rest)
}

fn finish_copy(source: CopySource, tokens: &[Token], mut position: usize) -> Result<CopyStatement> {
    let direction = match tokens.get(position) {
        Some(Token::Word(word)) if word == "from" => true,
        Some(Token::Word(word)) if word == "to" => false,
        _ => return Err(SqlError::syntax("COPY needs FROM STDIN or TO STDOUT")),
    };
    position += 1;
    match tokens.get(position) {
        Some(Token::Word(word)) if word == "stdin" || word == "stdout" => {}
        Some(Token::Word(word)) if word == "program" => {
            return Err(SqlError::new(
                "42501",
                "COPY to or from an external program is not allowed",
            ))
        }
        Some(Token::String(_)) => {
            return Err(SqlError::new(
                "42501",
                "COPY to or from a file is not allowed; use STDIN/STDOUT (psql's \\copy)",
            ))
        }
        _ => return Err(SqlError::syntax("COPY needs FROM STDIN or TO STDOUT")),
    }
    position += 1;
    if matches!(source, CopySource::Query(_)) && direction {
        return Err(SqlError::syntax("COPY (query) FROM is not valid"));
    }
    let options = super::copy_options::copy_options(&tokens[position..])?;
    Ok(CopyStatement { source, from: direction, options })
}

/// Splits text-format COPY data into rows of fields (None = NULL), undoing backslash escapes.
pub fn parse_text_rows(data: &str, options: &CopyOptions) -> Result<Vec<Vec<Option<String>>>> {
    let mut rows = Vec::new();
    for line in data.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line == "\\." {
            continue;
        }
        let mut fields = Vec::new();
        for raw in line.split(options.delimiter) {
            if raw == options.null {
                fields.push(None);
                continue;
            }
            let mut value = String::with_capacity(raw.len());
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                if c != '\\' {
                    value.push(c);
                    continue;
                }
                match chars.next() {
                    Some('n') => value.push('\n'),
                    Some('t') => value.push('\t'),
                    Some('r') => value.push('\r'),
                    Some('b') => value.push('\u{8}'),
                    Some('f') => value.push('\u{c}'),
                    Some('v') => value.push('\u{b}'),
                    Some(other) => value.push(other),
                    None => value.push('\\'),
                }
            }
            fields.push(Some(value));
        }
        rows.push(fields);
    }
    Ok(rows)
}

/// Splits CSV COPY data into rows of fields (None = NULL: an unquoted field equal to NULL).
pub fn parse_csv_rows(data: &str, options: &CopyOptions) -> Result<Vec<Vec<Option<String>>>> {
    let mut rows = Vec::new();
    let mut fields: Vec<Option<String>> = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut in_quotes = false;
    let mut chars = data.chars().peekable();
    let mut any = false;
    let finish_field = |field: &mut String, quoted: &mut bool, fields: &mut Vec<Option<String>>| {
        let value = std::mem::take(field);
        if !*quoted && value == options.null {
            fields.push(None);
        } else {
            fields.push(Some(value));
        }
        *quoted = false;
    };
    while let Some(c) = chars.next() {
        any = true;
        if in_quotes {
            if c == options.escape && chars.peek() == Some(&options.quote) {
                field.push(options.quote);
                chars.next();
            } else if c == options.quote {
                in_quotes = false;
            } else {
                field.push(c);
            }
            continue;
        }
        if c == options.quote {
            in_quotes = true;
            quoted = true;
        } else if c == options.delimiter {
            finish_field(&mut field, &mut quoted, &mut fields);
        } else if c == '\n' || c == '\r' {
            if c == '\r' && chars.peek() == Some(&'\n') {
                chars.next();
            }
            if field == "\\." && fields.is_empty() {
                field.clear();
                any = false;
                continue;
            }
            finish_field(&mut field, &mut quoted, &mut fields);
            rows.push(std::mem::take(&mut fields));
            any = false;
        } else {
            field.push(c);
        }
    }
    if in_quotes {
        return Err(SqlError::new("22P04", "unterminated CSV quoted field"));
    }
    if any && !(field == "\\." && fields.is_empty()) {
        finish_field(&mut field, &mut quoted, &mut fields);
        rows.push(fields);
    }
    if options.header && !rows.is_empty() {
        rows.remove(0);
    }
    Ok(rows)
}

/// Formats one field for text-format COPY output.
pub fn escape_text_field(value: &str, delimiter: char) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' if delimiter == '\t' => out.push_str("\\t"),
            c if c == delimiter => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Formats one field for CSV COPY output.
pub fn escape_csv_field(value: &str, options: &CopyOptions) -> String {
    let needs_quotes = value.is_empty()
        || value.contains(options.delimiter)
        || value.contains(options.quote)
        || value.contains('\n')
        || value.contains('\r')
        || value == options.null;
    if !needs_quotes {
        return value.to_string();
    }
    let mut out = String::with_capacity(value.len() + 2);
    out.push(options.quote);
    for c in value.chars() {
        if c == options.quote || c == options.escape {
            out.push(options.escape);
        }
        out.push(c);
    }
    out.push(options.quote);
    out
}
