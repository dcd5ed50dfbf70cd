//! Identity columns' sequence options as PostgreSQL 15's grammar has them.
//!
//! - `CREATE TABLE ... GENERATED ... AS IDENTITY (START WITH 10 INCREMENT BY 5)`: sqlparser
//!   reads the options in one fixed order only (INCREMENT, MINVALUE, MAXVALUE, START, CACHE,
//!   CYCLE); `reorder_identity_options` puts each option's text in that order within the
//!   same parentheses (same length: error positions after them stay right).
//! - `ALTER TABLE t ALTER [COLUMN] c ADD GENERATED ... AS IDENTITY [(options)]`, `SET
//!   GENERATED ...`, `SET <option>`, `RESTART`, `DROP IDENTITY [IF EXISTS]`: sqlparser reads
//!   ADD GENERATED without SEQUENCE NAME (which pg_dump writes) and none of the others, so
//!   `parse` reads a single such action here.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token as SqlToken;

use super::sequences::{tokenize, Parser, SequenceOption, Token};
use super::spans::{is_keyword, located_tokens};
use crate::error::{Result, SqlError};

/// `ALTER TABLE [IF EXISTS] [ONLY] table ALTER [COLUMN] column <action>`.
#[derive(Clone, Debug, PartialEq)]
pub struct AlterIdentity {
    pub table: Vec<String>,
    pub if_exists: bool,
    pub column: String,
    pub action: IdentityAction,
}

#[derive(Clone, Debug, PartialEq)]
pub enum IdentityAction {
    /// ADD GENERATED { ALWAYS (true) | BY DEFAULT } AS IDENTITY [ ( options ) ].
    Add { always: bool, options: Vec<SequenceOption> },
    /// SET GENERATED { ALWAYS | BY DEFAULT }, SET <sequence option>, RESTART [[WITH] n],
    /// in any number and order.
    Alter { generated_always: Option<bool>, options: Vec<SequenceOption> },
    /// DROP IDENTITY [ IF EXISTS ].
    Drop { if_exists: bool },
}

/// Parses `sql` if it is ALTER TABLE with one identity action (else None: sqlparser reads
/// it).
pub fn parse(sql: &str) -> Result<Option<AlterIdentity>> {
    let mut parser = Parser { tokens: tokenize(sql)?, at: 0 };
    if !parser.keywords(&["alter", "table"]) {
        return Ok(None);
    }
    let if_exists = parser.keywords(&["if", "exists"]);
    parser.keyword("only");
    let Ok(table) = parser.name() else { return Ok(None) };
    if parser.tokens.get(parser.at) == Some(&Token::Symbol('*')) {
        parser.at += 1;
    }
    if !parser.keyword("alter") {
        return Ok(None);
    }
    parser.keyword("column");
    let Ok(column) = parser.identifier() else { return Ok(None) };
    let action = if parser.keywords(&["add", "generated"]) {
        let always = generated_kind(&mut parser)?;
        if !parser.keywords(&["as", "identity"]) {
            return Err(parser.syntax_error());
        }
        IdentityAction::Add { always, options: parenthesized_options(&mut parser)? }
    } else if parser.keywords(&["drop", "identity"]) {
        IdentityAction::Drop { if_exists: parser.keywords(&["if", "exists"]) }
    } else if starts_alter_option(&parser) {
        alter_options(&mut parser)?
    } else {
        return Ok(None);
    };
    if !parser.at_end() {
        return Err(parser.syntax_error());
    }
    Ok(Some(AlterIdentity { table, if_exists, column, action }))
}

/// ALWAYS (true) or BY DEFAULT (false).
fn generated_kind(parser: &mut Parser) -> Result<bool> {
    if parser.keyword("always") {
        return Ok(true);
    }
    if parser.keywords(&["by", "default"]) {
        return Ok(false);
    }
    Err(parser.syntax_error())
}

/// The options of `( ... )` after AS IDENTITY, SEQUENCE NAME among them; none without the
/// parentheses.
fn parenthesized_options(parser: &mut Parser) -> Result<Vec<SequenceOption>> {
    if parser.tokens.get(parser.at) != Some(&Token::Symbol('(')) {
        return Ok(Vec::new());
    }
    parser.at += 1;
    let mut options: Vec<SequenceOption> = Vec::new();
    while parser.tokens.get(parser.at) != Some(&Token::Symbol(')')) {
        let option = if parser.keywords(&["sequence", "name"]) {
            SequenceOption::SequenceName(parser.name()?)
        } else {
            parser.option(false)?
        };
        push_once(&mut options, option)?;
    }
    parser.at += 1;
    Ok(options)
}

fn push_once(options: &mut Vec<SequenceOption>, option: SequenceOption) -> Result<()> {
    if options.iter().any(|known| known.keyword() == option.keyword()) {
        return Err(SqlError::syntax("conflicting or redundant options"));
    }
    options.push(option);
    Ok(())
}

/// Whether the action is SET GENERATED, SET <sequence option> or RESTART (not SET DEFAULT,
/// SET NOT NULL, SET DATA TYPE and the like, which sqlparser reads).
fn starts_alter_option(parser: &Parser) -> bool {
    const SET_OPTIONS: [&str; 8] =
        ["generated", "increment", "minvalue", "maxvalue", "start", "cache", "cycle", "no"];
    let word = |offset: usize| match parser.tokens.get(parser.at + offset) {
        Some(Token::Word(word, false)) => word.as_str(),
        _ => "",
    };
    word(0) == "restart" || (word(0) == "set" && SET_OPTIONS.contains(&word(1)))
}

/// `{ SET GENERATED ... | SET <option> | RESTART [[WITH] n] } ...`.
fn alter_options(parser: &mut Parser) -> Result<IdentityAction> {
    let mut generated_always = None;
    let mut options: Vec<SequenceOption> = Vec::new();
    while !parser.at_end() {
        if parser.peek_keyword("restart") {
            let option = parser.option(true)?;
            push_once(&mut options, option)?;
            continue;
        }
        if !parser.keyword("set") {
            return Err(parser.syntax_error());
        }
        if parser.keyword("generated") {
            if generated_always.is_some() {
                return Err(SqlError::syntax("conflicting or redundant options"));
            }
            generated_always = Some(generated_kind(parser)?);
        } else {
            let option = parser.option(false)?;
            if matches!(option, SequenceOption::As(_) | SequenceOption::OwnedBy(_)) {
                return Err(SqlError::syntax(format!(
                    "option \"{}\" not recognized",
                    option.keyword()
                )));
            }
            push_once(&mut options, option)?;
        }
    }
    Ok(IdentityAction::Alter { generated_always, options })
}

/// sqlparser's order of identity options: each option's rank by its first keyword(s).
fn option_rank(first: &SqlToken, second: Option<&SqlToken>) -> Option<u8> {
    let keyword = |token: &SqlToken| match token {
        SqlToken::Word(word) if word.quote_style.is_none() => Some(word.keyword),
        _ => None,
    };
    let rank = match (keyword(first)?, second.and_then(keyword)) {
        (Keyword::INCREMENT, _) => 0,
        (Keyword::MINVALUE, _) | (Keyword::NO, Some(Keyword::MINVALUE)) => 1,
        (Keyword::MAXVALUE, _) | (Keyword::NO, Some(Keyword::MAXVALUE)) => 2,
        (Keyword::START, _) => 3,
        (Keyword::CACHE, _) => 4,
        (Keyword::CYCLE, _) | (Keyword::NO, Some(Keyword::CYCLE)) => 5,
        _ => return None,
    };
    Some(rank)
}

/// The text with the options of each `AS IDENTITY ( ... )` in sqlparser's order; None when
/// nothing moved. SEQUENCE NAME there is 0A000 (tierdb names the sequence
/// `<table>_<column>_seq`; ALTER TABLE ... ADD GENERATED takes it).
pub(super) fn reorder_identity_options(sql: &str) -> Result<Option<String>> {
    if !sql.to_ascii_lowercase().contains("identity") {
        return Ok(None);
    }
    let Some(tokens) = located_tokens(sql) else { return Ok(None) };
    let mut rewritten = sql.to_string();
    let mut moved = false;
    for index in 0..tokens.len() {
        let opens = is_keyword(&tokens[index].token, Keyword::IDENTITY)
            && tokens.get(index + 1).is_some_and(|next| next.token == SqlToken::LParen);
        if !opens {
            continue;
        }
        let Some(close) =
            (index + 2..tokens.len()).find(|&at| tokens[at].token == SqlToken::RParen)
        else {
            continue;
        };
        // Each option: its rank and the token range it spans.
        let mut options: Vec<(u8, usize, usize)> = Vec::new();
        for at in index + 2..close {
            let (first, second) = (&tokens[at].token, tokens.get(at + 1).map(|next| &next.token));
            if is_keyword(first, Keyword::SEQUENCE)
                && second.is_some_and(|token| is_keyword(token, Keyword::NAME))
            {
                return Err(SqlError::unsupported(
                    "SEQUENCE NAME in CREATE TABLE's identity options (ALTER TABLE ... ADD GENERATED takes it)",
                ));
            }
            let after_no = at > index + 2 && is_keyword(&tokens[at - 1].token, Keyword::NO);
            match option_rank(first, second) {
                Some(rank) if !after_no => options.push((rank, at, at)),
                _ => {
                    let Some(last) = options.last_mut() else { return Ok(None) };
                    last.2 = at;
                }
            }
        }
        if options.windows(2).all(|pair| pair[0].0 < pair[1].0) {
            continue;
        }
        let mut ranks: Vec<u8> = options.iter().map(|option| option.0).collect();
        ranks.sort_unstable();
        if ranks.windows(2).any(|pair| pair[0] == pair[1]) {
            return Err(SqlError::syntax("conflicting or redundant options"));
        }
        let (start, end) = (tokens[index + 2].offset, tokens[close].offset);
        // An option's tokens as written, without a comment after it (comments are
        // whitespace to PostgreSQL's grammar).
        let text_of = |from: usize, to: usize| sql[tokens[from].offset..tokens[to].end].to_string();
        let mut sorted = options.clone();
        sorted.sort_by_key(|option| option.0);
        let joined: Vec<String> = sorted.iter().map(|&(_, from, to)| text_of(from, to)).collect();
        let joined = joined.join(" ");
        if joined.len() > end - start {
            // Only a comma between options makes them longer: PostgreSQL's list has none.
            return Err(SqlError::syntax("syntax error at or near \",\""));
        }
        rewritten.replace_range(start..end, &format!("{joined:<width$}", width = end - start));
        moved = true;
    }
    Ok(moved.then_some(rewritten))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reorders_create_table_identity_options() {
        let sql = "CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5 NO CYCLE), v text)";
        assert_eq!(
            reorder_identity_options(sql).unwrap().as_deref(),
            Some("CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (INCREMENT BY 5 START WITH 10 NO CYCLE), v text)")
        );
        assert_eq!(reorder_identity_options("CREATE TABLE t (a int)").unwrap(), None);
        assert!(reorder_identity_options(
            "CREATE TABLE t (a int GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME s))"
        )
        .is_err());
        // A comment between options is whitespace; a comma is an error, never a panic.
        assert_eq!(
            reorder_identity_options(
                "CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (START 10/**/INCREMENT 5))"
            )
            .unwrap()
            .as_deref(),
            Some("CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (INCREMENT 5 START 10   ))")
        );
        assert!(reorder_identity_options(
            "CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (START 10,INCREMENT 5))"
        )
        .is_err());
    }

    #[test]
    fn parses_identity_actions() {
        let parsed = parse(
            "ALTER TABLE public.t ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (\n SEQUENCE NAME public.t_id_seq\n START WITH 1\n INCREMENT BY 1\n NO MINVALUE\n NO MAXVALUE\n CACHE 1\n);",
        )
        .unwrap()
        .unwrap();
        assert_eq!(parsed.table, vec!["public".to_string(), "t".to_string()]);
        let IdentityAction::Add { always: true, options } = parsed.action else { panic!() };
        assert_eq!(options.len(), 6);
        let parsed = parse("ALTER TABLE t ALTER id SET GENERATED BY DEFAULT RESTART WITH 7")
            .unwrap()
            .unwrap();
        assert_eq!(
            parsed.action,
            IdentityAction::Alter {
                generated_always: Some(false),
                options: vec![SequenceOption::Restart(Some(7))]
            }
        );
        assert_eq!(parse("ALTER TABLE t ALTER id SET DEFAULT 1").unwrap(), None);
        assert_eq!(parse("ALTER TABLE t ADD COLUMN b int").unwrap(), None);
    }
}
