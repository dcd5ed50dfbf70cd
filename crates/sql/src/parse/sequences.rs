//! CREATE, ALTER and DROP SEQUENCE as PostgreSQL 15's grammar has them (options in any
//! order, ALTER SEQUENCE's RESTART, OWNED BY, RENAME TO, SET SCHEMA): sqlparser reads
//! CREATE SEQUENCE's options in one fixed order only and has no ALTER SEQUENCE.

use crate::error::{Result, SqlError};

/// A sequence DDL statement. Names are their parts, folded as PostgreSQL folds them.
#[derive(Clone, Debug, PartialEq)]
pub enum SequenceStatement {
    Create { name: Vec<String>, temporary: bool, if_not_exists: bool, options: Vec<SequenceOption> },
    Alter { name: Vec<String>, if_exists: bool, action: AlterSequence },
    Drop { names: Vec<Vec<String>>, if_exists: bool, cascade: bool },
}

#[derive(Clone, Debug, PartialEq)]
pub enum AlterSequence {
    Options(Vec<SequenceOption>),
    RenameTo(String),
    SetSchema(String),
    /// OWNER TO, SET LOGGED / UNLOGGED and the like: named for the 0A000.
    Other(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum SequenceOption {
    /// AS type: the type's name as written.
    As(String),
    Increment(i64),
    /// MINVALUE n, NO MINVALUE (None).
    MinValue(Option<i64>),
    MaxValue(Option<i64>),
    Start(i64),
    /// RESTART [WITH n] (ALTER only).
    Restart(Option<i64>),
    Cache(i64),
    Cycle(bool),
    /// OWNED BY table.column (its parts), OWNED BY NONE (None).
    OwnedBy(Option<Vec<String>>),
    /// SEQUENCE NAME name (an identity column's options only: parse/identity.rs).
    SequenceName(Vec<String>),
}

impl SequenceOption {
    /// The option's keyword, for "conflicting or redundant options".
    pub fn keyword(&self) -> &'static str {
        match self {
            SequenceOption::As(_) => "as",
            SequenceOption::Increment(_) => "increment",
            SequenceOption::MinValue(_) => "minvalue",
            SequenceOption::MaxValue(_) => "maxvalue",
            SequenceOption::Start(_) => "start",
            SequenceOption::Restart(_) => "restart",
            SequenceOption::Cache(_) => "cache",
            SequenceOption::Cycle(_) => "cycle",
            SequenceOption::OwnedBy(_) => "owned_by",
            SequenceOption::SequenceName(_) => "sequence_name",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Token {
    /// An identifier or keyword (folded unless quoted) and whether it was quoted.
    Word(String, bool),
    Number(String),
    Symbol(char),
}

pub(super) fn tokenize(sql: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if c.is_whitespace() {
            index += 1;
        } else if c == '-' && chars.get(index + 1) == Some(&'-') {
            while index < chars.len() && chars[index] != '\n' {
                index += 1;
            }
        } else if c == '"' {
            let mut text = String::new();
            index += 1;
            loop {
                match chars.get(index) {
                    None => return Err(SqlError::syntax("unterminated quoted identifier")),
                    Some('"') if chars.get(index + 1) == Some(&'"') => {
                        text.push('"');
                        index += 2;
                    }
                    Some('"') => {
                        index += 1;
                        break;
                    }
                    Some(other) => {
                        text.push(*other);
                        index += 1;
                    }
                }
            }
            out.push(Token::Word(text, true));
        } else if c.is_ascii_digit() {
            let start = index;
            while index < chars.len()
                && (chars[index].is_ascii_alphanumeric() || chars[index] == '.')
            {
                index += 1;
            }
            out.push(Token::Number(chars[start..index].iter().collect()));
        } else if c.is_alphabetic() || c == '_' {
            let start = index;
            while index < chars.len()
                && (chars[index].is_alphanumeric() || chars[index] == '_' || chars[index] == '$')
            {
                index += 1;
            }
            let word: String = chars[start..index].iter().collect();
            out.push(Token::Word(word.to_lowercase(), false));
        } else {
            out.push(Token::Symbol(c));
            index += 1;
        }
    }
    Ok(out)
}

pub(super) struct Parser {
    pub(super) tokens: Vec<Token>,
    pub(super) at: usize,
}

impl Parser {
    pub(super) fn peek_keyword(&self, keyword: &str) -> bool {
        matches!(self.tokens.get(self.at), Some(Token::Word(word, false)) if word == keyword)
    }

    pub(super) fn keyword(&mut self, keyword: &str) -> bool {
        let found = self.peek_keyword(keyword);
        if found {
            self.at += 1;
        }
        found
    }

    pub(super) fn keywords(&mut self, keywords: &[&str]) -> bool {
        let found = keywords.iter().enumerate().all(|(offset, keyword)| {
            matches!(self.tokens.get(self.at + offset), Some(Token::Word(word, false)) if word == keyword)
        });
        if found {
            self.at += keywords.len();
        }
        found
    }

    pub(super) fn syntax_error(&self) -> SqlError {
        match self.tokens.get(self.at) {
            None => SqlError::syntax("syntax error at end of input"),
            Some(Token::Word(word, _) | Token::Number(word)) => {
                SqlError::syntax(format!("syntax error at or near \"{word}\""))
            }
            Some(Token::Symbol(symbol)) => {
                SqlError::syntax(format!("syntax error at or near \"{symbol}\""))
            }
        }
    }

    pub(super) fn identifier(&mut self) -> Result<String> {
        match self.tokens.get(self.at) {
            Some(Token::Word(word, _)) => {
                self.at += 1;
                Ok(word.clone())
            }
            _ => Err(self.syntax_error()),
        }
    }

    /// A dotted name: its parts.
    pub(super) fn name(&mut self) -> Result<Vec<String>> {
        let mut parts = vec![self.identifier()?];
        while self.tokens.get(self.at) == Some(&Token::Symbol('.')) {
            self.at += 1;
            parts.push(self.identifier()?);
        }
        Ok(parts)
    }

    /// A signed integer (PostgreSQL's NumericOnly; a fraction is 22023 as there, a number
    /// past bigint 22003).
    pub(super) fn number(&mut self) -> Result<i64> {
        let negative = match self.tokens.get(self.at) {
            Some(Token::Symbol('-')) => {
                self.at += 1;
                true
            }
            Some(Token::Symbol('+')) => {
                self.at += 1;
                false
            }
            _ => false,
        };
        let Some(Token::Number(digits)) = self.tokens.get(self.at).cloned() else {
            return Err(self.syntax_error());
        };
        self.at += 1;
        if !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(SqlError::syntax(format!("syntax error at or near \"{digits}\"")));
        }
        let text = if negative { format!("-{digits}") } else { digits };
        text.parse::<i64>().map_err(|_| {
            SqlError::new("22003", format!("value \"{text}\" is out of range for type bigint"))
        })
    }

    pub(super) fn at_end(&mut self) -> bool {
        while self.tokens.get(self.at) == Some(&Token::Symbol(';')) {
            self.at += 1;
        }
        self.at == self.tokens.len()
    }

    /// Sequence options until the end (`alter`: RESTART allowed).
    fn options(&mut self, alter: bool) -> Result<Vec<SequenceOption>> {
        let mut options: Vec<SequenceOption> = Vec::new();
        while !self.at_end() {
            let option = self.option(alter)?;
            if options.iter().any(|known| known.keyword() == option.keyword()) {
                return Err(SqlError::syntax("conflicting or redundant options"));
            }
            options.push(option);
        }
        Ok(options)
    }

    pub(super) fn option(&mut self, alter: bool) -> Result<SequenceOption> {
        if self.keyword("as") {
            let mut words = vec![self.identifier()?];
            while let Some(Token::Word(word, false)) = self.tokens.get(self.at) {
                if [
                    "increment",
                    "minvalue",
                    "maxvalue",
                    "start",
                    "restart",
                    "cache",
                    "cycle",
                    "no",
                    "owned",
                ]
                .contains(&word.as_str())
                {
                    break;
                }
                words.push(word.clone());
                self.at += 1;
            }
            return Ok(SequenceOption::As(words.join(" ")));
        }
        if self.keyword("increment") {
            self.keyword("by");
            return Ok(SequenceOption::Increment(self.number()?));
        }
        if self.keyword("minvalue") {
            return Ok(SequenceOption::MinValue(Some(self.number()?)));
        }
        if self.keyword("maxvalue") {
            return Ok(SequenceOption::MaxValue(Some(self.number()?)));
        }
        if self.keyword("start") {
            self.keyword("with");
            return Ok(SequenceOption::Start(self.number()?));
        }
        if alter && self.keyword("restart") {
            if self.keyword("with") {
                return Ok(SequenceOption::Restart(Some(self.number()?)));
            }
            let value = match self.tokens.get(self.at) {
                Some(Token::Number(_) | Token::Symbol('-' | '+')) => Some(self.number()?),
                _ => None,
            };
            return Ok(SequenceOption::Restart(value));
        }
        if self.keyword("cache") {
            return Ok(SequenceOption::Cache(self.number()?));
        }
        if self.keyword("cycle") {
            return Ok(SequenceOption::Cycle(true));
        }
        if self.keywords(&["no", "minvalue"]) {
            return Ok(SequenceOption::MinValue(None));
        }
        if self.keywords(&["no", "maxvalue"]) {
            return Ok(SequenceOption::MaxValue(None));
        }
        if self.keywords(&["no", "cycle"]) {
            return Ok(SequenceOption::Cycle(false));
        }
        if self.keywords(&["owned", "by"]) {
            let name = self.name()?;
            if name.len() == 1 && name[0] == "none" {
                return Ok(SequenceOption::OwnedBy(None));
            }
            return Ok(SequenceOption::OwnedBy(Some(name)));
        }
        Err(self.syntax_error())
    }
}

/// Parses `sql` if it is CREATE [TEMP] SEQUENCE, ALTER SEQUENCE or DROP SEQUENCE.
pub fn parse(sql: &str) -> Result<Option<SequenceStatement>> {
    let tokens = tokenize(sql)?;
    let mut parser = Parser { tokens, at: 0 };
    if parser.keyword("create") {
        let temporary = parser.keyword("temp") || parser.keyword("temporary");
        if !parser.keyword("sequence") {
            return Ok(None);
        }
        let if_not_exists = parser.keywords(&["if", "not", "exists"]);
        let name = parser.name()?;
        let options = parser.options(false)?;
        return Ok(Some(SequenceStatement::Create { name, temporary, if_not_exists, options }));
    }
    if parser.keywords(&["alter", "sequence"]) {
        let if_exists = parser.keywords(&["if", "exists"]);
        let name = parser.name()?;
        let action = if parser.keywords(&["rename", "to"]) {
            AlterSequence::RenameTo(parser.identifier()?)
        } else if parser.keywords(&["set", "schema"]) {
            AlterSequence::SetSchema(parser.identifier()?)
        } else if parser.keywords(&["owner", "to"]) {
            AlterSequence::Other("ALTER SEQUENCE ... OWNER TO".into())
        } else if parser.peek_keyword("set") || parser.peek_keyword("rename") {
            AlterSequence::Other(format!("ALTER SEQUENCE ... {}", sql_rest(&parser)))
        } else {
            AlterSequence::Options(parser.options(true)?)
        };
        if !parser.at_end() && !matches!(action, AlterSequence::Other(_)) {
            return Err(parser.syntax_error());
        }
        return Ok(Some(SequenceStatement::Alter { name, if_exists, action }));
    }
    if parser.keywords(&["drop", "sequence"]) {
        let if_exists = parser.keywords(&["if", "exists"]);
        let mut names = vec![parser.name()?];
        while parser.tokens.get(parser.at) == Some(&Token::Symbol(',')) {
            parser.at += 1;
            names.push(parser.name()?);
        }
        let cascade = parser.keyword("cascade");
        if !cascade {
            parser.keyword("restrict");
        }
        if !parser.at_end() {
            return Err(parser.syntax_error());
        }
        return Ok(Some(SequenceStatement::Drop { names, if_exists, cascade }));
    }
    Ok(None)
}

/// The words of an ALTER SEQUENCE form tierdb does not run, for its 0A000.
fn sql_rest(parser: &Parser) -> String {
    let words: Vec<String> = parser.tokens[parser.at..]
        .iter()
        .take(3)
        .map(|token| match token {
            Token::Word(word, _) | Token::Number(word) => word.to_uppercase(),
            Token::Symbol(symbol) => symbol.to_string(),
        })
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_in_any_order() {
        let parsed =
            parse("CREATE SEQUENCE public.\"S\" START WITH -5 INCREMENT BY -1 NO MAXVALUE CYCLE;")
                .unwrap()
                .unwrap();
        let SequenceStatement::Create { name, options, .. } = parsed else { panic!() };
        assert_eq!(name, vec!["public".to_string(), "S".to_string()]);
        assert_eq!(
            options,
            vec![
                SequenceOption::Start(-5),
                SequenceOption::Increment(-1),
                SequenceOption::MaxValue(None),
                SequenceOption::Cycle(true)
            ]
        );
        assert!(parse("CREATE SEQUENCE s START 1 START 2").is_err());
        assert!(parse("CREATE TABLE s (a int)").unwrap().is_none());
    }
}
