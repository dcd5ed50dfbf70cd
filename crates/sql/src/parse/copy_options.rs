//! COPY's option list, as PostgreSQL 15's grammar reads it: the parenthesized form
//! `WITH (FORMAT csv, DELIMITER '|', HEADER true)` and the legacy unparenthesized one
//! `[WITH] CSV HEADER DELIMITER [AS] '|' NULL [AS] '' QUOTE [AS] '"'`.
//!
//! Every option PostgreSQL accepts is either applied or refused with 0A000 naming it
//! (FORCE_QUOTE / FORCE_NOT_NULL / FORCE_NULL, HEADER MATCH, an encoding
//! other than UTF8); FREEZE is accepted (it changes no result tierdb gives). Errors follow
//! PostgreSQL's wording: 42601 for an unknown or repeated option, 0A000 for misplaced CSV
//! options.

use super::tokens::Token;
use crate::error::{Result, SqlError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyFormat {
    Text,
    Csv,
    /// PostgreSQL's binary COPY format (session/copy_binary.rs).
    Binary,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CopyOptions {
    pub format: CopyFormat,
    pub delimiter: char,
    pub null: String,
    pub header: bool,
    pub quote: char,
    pub escape: char,
}

/// The options the list set explicitly (None: the format's default applies).
#[derive(Default)]
struct Given {
    format: Option<CopyFormat>,
    delimiter: Option<char>,
    null: Option<String>,
    header: Option<bool>,
    quote: Option<char>,
    escape: Option<char>,
}

/// A cursor over the tokens after `FROM STDIN` / `TO STDOUT`.
struct Reader<'a> {
    tokens: &'a [Token],
    position: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<&'a Token> {
        self.tokens.get(self.position)
    }

    fn next(&mut self) -> Option<&'a Token> {
        let token = self.tokens.get(self.position);
        self.position += usize::from(token.is_some());
        token
    }

    fn word_is(&self, expected: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(word)) if word == expected)
    }

    /// An option's value: a word, a quoted string or a number.
    fn value(&mut self, option: &str) -> Result<String> {
        match self.next() {
            Some(Token::Word(word)) => Ok(word.clone()),
            Some(Token::String(text)) => Ok(text.clone()),
            _ => Err(SqlError::syntax(format!("syntax error in COPY option \"{option}\""))),
        }
    }

    /// The optional AS of the legacy form (`DELIMITER AS '|'`).
    fn skip_as(&mut self) {
        if self.word_is("as") {
            self.position += 1;
        }
    }
}

/// Parses the option list after `FROM STDIN` / `TO STDOUT`.
pub(super) fn copy_options(tokens: &[Token]) -> Result<CopyOptions> {
    let mut reader = Reader { tokens, position: 0 };
    if reader.word_is("with") {
        reader.position += 1;
    }
    let mut given = Given::default();
    if reader.peek() == Some(&Token::Symbol('(')) {
        reader.position += 1;
        parenthesized(&mut reader, &mut given)?;
    } else {
        legacy(&mut reader, &mut given)?;
    }
    if let Some(token) = reader.next() {
        if token != &Token::Symbol(';') || reader.peek().is_some() {
            return Err(SqlError::syntax(format!("syntax error at or near \"{}\"", text(token))));
        }
    }
    finish(given)
}

fn text(token: &Token) -> String {
    match token {
        Token::Word(word) => word.clone(),
        Token::String(string) => format!("'{string}'"),
        Token::Symbol(symbol) => symbol.to_string(),
    }
}

/// `( name [value] [, ...] )`.
fn parenthesized(reader: &mut Reader<'_>, given: &mut Given) -> Result<()> {
    loop {
        let Some(Token::Word(option)) = reader.next() else {
            return Err(SqlError::syntax("syntax error in COPY option list"));
        };
        let value = match reader.peek() {
            Some(Token::Symbol(',' | ')')) => None,
            Some(Token::Symbol('(' | '*')) => {
                return Err(refuse_option(option));
            }
            _ => Some(reader.value(option)?),
        };
        apply(given, option, value)?;
        match reader.next() {
            Some(Token::Symbol(',')) => continue,
            Some(Token::Symbol(')')) => return Ok(()),
            _ => return Err(SqlError::syntax("syntax error in COPY option list")),
        }
    }
}

/// The legacy list: keywords, some with a value after an optional AS.
fn legacy(reader: &mut Reader<'_>, given: &mut Given) -> Result<()> {
    while let Some(Token::Word(option)) = reader.peek() {
        reader.position += 1;
        match option.as_str() {
            "binary" => apply(given, "format", Some("binary".into()))?,
            "csv" => apply(given, "format", Some("csv".into()))?,
            "header" => apply(given, "header", None)?,
            "freeze" => apply(given, "freeze", None)?,
            "delimiter" | "null" | "quote" | "escape" | "encoding" => {
                reader.skip_as();
                let value = reader.value(option)?;
                apply(given, option, Some(value))?;
            }
            "force" => {
                let what = reader.value("force")?;
                return Err(SqlError::unsupported(format!(
                    "COPY FORCE {} is not supported",
                    what.to_uppercase()
                )));
            }
            other => return Err(SqlError::syntax(format!("syntax error at or near \"{other}\""))),
        }
    }
    Ok(())
}

fn refuse_option(option: &str) -> SqlError {
    match option {
        "force_quote" | "force_not_null" | "force_null" => {
            SqlError::unsupported(format!("COPY {} is not supported", option.to_uppercase()))
        }
        other => SqlError::syntax(format!("syntax error in COPY option \"{other}\"")),
    }
}

/// A boolean option value as PostgreSQL's `defGetBoolean` reads it (no value is true).
fn boolean(option: &str, value: Option<&str>) -> Result<bool> {
    match value.map(str::to_lowercase).as_deref() {
        None | Some("true" | "on" | "1") => Ok(true),
        Some("false" | "off" | "0") => Ok(false),
        Some(_) => Err(SqlError::new("22023", format!("{option} requires a Boolean value"))),
    }
}

fn set<T>(slot: &mut Option<T>, value: T) -> Result<()> {
    if slot.is_some() {
        return Err(SqlError::syntax("conflicting or redundant options"));
    }
    *slot = Some(value);
    Ok(())
}

fn apply(given: &mut Given, option: &str, value: Option<String>) -> Result<()> {
    let value = value.as_deref();
    match option {
        "format" => {
            let format = match value.map(str::to_lowercase).as_deref() {
                Some("csv") => CopyFormat::Csv,
                Some("text") => CopyFormat::Text,
                Some("binary") => CopyFormat::Binary,
                Some(other) => {
                    return Err(SqlError::new(
                        "22023",
                        format!("COPY format \"{other}\" not recognized"),
                    ))
                }
                None => return Err(SqlError::syntax("format requires a parameter")),
            };
            set(&mut given.format, format)
        }
        "header" => {
            if value.is_some_and(|value| value.eq_ignore_ascii_case("match")) {
                return Err(SqlError::unsupported("COPY HEADER MATCH is not supported"));
            }
            let header = boolean("header", value)?;
            set(&mut given.header, header)
        }
        // FREEZE only spares PostgreSQL a later vacuum pass (pgbench -i asks for it); tierdb's
        // copied rows become visible at commit like any insert, which is what FREEZE's
        // rows look like to every snapshot taken after the load.
        "freeze" => boolean("freeze", value).map(|_| ()),
        "delimiter" => set(&mut given.delimiter, character("delimiter", value)?),
        "quote" => set(&mut given.quote, character("quote", value)?),
        "escape" => set(&mut given.escape, character("escape", value)?),
        "null" => {
            let null = value.ok_or_else(|| SqlError::syntax("null requires a parameter"))?;
            set(&mut given.null, null.to_string())
        }
        "encoding" => match value.map(|value| value.to_uppercase().replace(['-', '_'], "")) {
            Some(name) if name == "UTF8" || name == "UNICODE" => Ok(()),
            _ => Err(SqlError::unsupported(format!(
                "COPY ENCODING {} is not supported (tierdb reads and writes UTF8)",
                value.unwrap_or_default()
            ))),
        },
        "force_quote" | "force_not_null" | "force_null" => Err(refuse_option(option)),
        other => Err(SqlError::syntax(format!("option \"{other}\" not recognized"))),
    }
}

/// A one-byte character option (delimiter, quote, escape), as PostgreSQL requires.
fn character(option: &str, value: Option<&str>) -> Result<char> {
    match value.map(str::as_bytes) {
        Some(&[byte]) if byte.is_ascii() => Ok(char::from(byte)),
        _ => {
            Err(SqlError::unsupported(format!("COPY {option} must be a single one-byte character")))
        }
    }
}

/// The options with each format's defaults, checked as PostgreSQL's `ProcessCopyOptions`.
fn finish(given: Given) -> Result<CopyOptions> {
    let format = given.format.unwrap_or(CopyFormat::Text);
    let csv = format == CopyFormat::Csv;
    if format == CopyFormat::Binary {
        // Checked before the defaults are filled in, as PostgreSQL does.
        if given.delimiter.is_some() {
            return Err(SqlError::syntax("cannot specify DELIMITER in BINARY mode"));
        }
        if given.null.is_some() {
            return Err(SqlError::syntax("cannot specify NULL in BINARY mode"));
        }
        if given.header.is_some_and(|header| header) {
            return Err(SqlError::unsupported("cannot specify HEADER in BINARY mode"));
        }
    }
    if !csv && given.quote.is_some() {
        return Err(SqlError::unsupported("COPY quote available only in CSV mode"));
    }
    if !csv && given.escape.is_some() {
        return Err(SqlError::unsupported("COPY escape available only in CSV mode"));
    }
    let delimiter = given.delimiter.unwrap_or(if csv { ',' } else { '\t' });
    if matches!(delimiter, '\n' | '\r') {
        return Err(SqlError::new("22023", "COPY delimiter cannot be newline or carriage return"));
    }
    let null = given.null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() });
    if null.contains(['\n', '\r']) {
        return Err(SqlError::new(
            "22023",
            "COPY null representation cannot use newline or carriage return",
        ));
    }
    let quote = given.quote.unwrap_or('"');
    if csv && delimiter == quote {
        return Err(SqlError::unsupported("COPY delimiter and quote must be different"));
    }
    if null.contains(delimiter) {
        return Err(SqlError::unsupported(
            "COPY delimiter must not appear in the NULL specification",
        ));
    }
    Ok(CopyOptions {
        format,
        delimiter,
        null,
        header: given.header.unwrap_or(false),
        quote,
        escape: given.escape.unwrap_or(quote),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(text: &str) -> Result<CopyOptions> {
        copy_options(&super::super::tokens::tokens(text)?)
    }

    #[test]
    fn legacy_options_take_their_values_after_as() {
        let parsed = options("WITH DELIMITER AS '|' NULL AS 'nil'").unwrap();
        assert_eq!((parsed.delimiter, parsed.null.as_str()), ('|', "nil"));
        let parsed = options("CSV HEADER QUOTE AS '''' ESCAPE '\\'").unwrap();
        assert_eq!(parsed.format, CopyFormat::Csv);
        assert!(parsed.header);
        assert_eq!((parsed.quote, parsed.escape, parsed.delimiter), ('\'', '\\', ','));
        assert_eq!(options("DELIMITER ';'").unwrap().delimiter, ';');
    }

    #[test]
    fn parenthesized_options_are_checked_as_postgresql_checks_them() {
        let parsed = options("WITH (FORMAT csv, DELIMITER '|', HEADER false)").unwrap();
        assert_eq!((parsed.format, parsed.delimiter, parsed.header), (CopyFormat::Csv, '|', false));
        let error = |text: &str| options(text).unwrap_err().sqlstate;
        assert_eq!(error("WITH (FORMAT csv, FORMAT text)"), "42601");
        assert_eq!(error("WITH (bogus 1)"), "42601");
        assert_eq!(error("WITH (FORCE_QUOTE *)"), "0A000");
        assert_eq!(error("CSV FORCE QUOTE a"), "0A000");
        assert!(options("WITH (FREEZE)").is_ok(), "pgbench -i loads WITH (FREEZE on)");
        assert_eq!(error("WITH (FREEZE maybe)"), "22023");
        assert_eq!(error("WITH (HEADER match)"), "0A000");
        assert_eq!(error("WITH (QUOTE '''')"), "0A000");
        assert_eq!(error("WITH (ENCODING 'LATIN1')"), "0A000");
        assert_eq!(error("WITH (FORMAT csv, DELIMITER '\"')"), "0A000");
        assert_eq!(error("WITH (HEADER maybe)"), "22023");
        assert!(options("WITH (FREEZE false, ENCODING 'utf-8')").is_ok());
    }

    #[test]
    fn binary_format_refuses_the_text_options_as_postgresql() {
        assert_eq!(options("WITH (FORMAT binary)").unwrap().format, CopyFormat::Binary);
        assert_eq!(options("BINARY").unwrap().format, CopyFormat::Binary);
        let error = |text: &str| options(text).unwrap_err();
        let delimiter = error("WITH (FORMAT binary, DELIMITER ',')");
        assert_eq!(
            (delimiter.sqlstate, delimiter.message.as_str()),
            ("42601", "cannot specify DELIMITER in BINARY mode")
        );
        assert_eq!(error("WITH (FORMAT binary, NULL 'x')").sqlstate, "42601");
        assert_eq!(error("WITH (FORMAT binary, HEADER)").sqlstate, "0A000");
        assert_eq!(error("WITH (FORMAT binary, QUOTE '\"')").sqlstate, "0A000");
        assert!(options("WITH (FORMAT binary, HEADER false, FREEZE)").is_ok());
    }
}
