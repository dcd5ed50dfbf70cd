//! `CREATE USER`: PostgreSQL's CREATE ROLE with LOGIN by default. sqlparser reads
//! `CREATE USER` as another dialect's statement, so the text is parsed as CREATE ROLE ("user"
//! and "role" have the same length: error positions stay right) and LOGIN becomes the
//! default. And GRANT/REVOKE grantee lists with PUBLIC before a role, which sqlparser
//! cannot read (every grantee after PUBLIC is taken for PUBLIC), are read with PUBLIC last.

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

/// The text of a `CREATE USER` statement with USER read as ROLE; None for other statements.
pub(super) fn create_user_as_role(sql: &str) -> Option<String> {
    let start = sql.len() - sql.trim_start().len();
    let mut words = sql[start..].splitn(3, char::is_whitespace);
    let create = words.next()?;
    if !create.eq_ignore_ascii_case("create") {
        return None;
    }
    let after_create = start + create.len();
    let gap = sql[after_create..].len() - sql[after_create..].trim_start().len();
    let user_start = after_create + gap;
    let rest = &sql[user_start..];
    let is_user = rest.len() >= 4
        && rest[..4].eq_ignore_ascii_case("user")
        && rest[4..].chars().next().is_none_or(|next| !next.is_alphanumeric() && next != '_');
    if gap == 0 || !is_user {
        return None;
    }
    Some(format!("{}ROLE{}", &sql[..user_start], &rest[4..]))
}

/// The text with each GRANT's or REVOKE's PUBLIC grantees moved after the others (`TO
/// PUBLIC, alice` read as `TO alice, PUBLIC`: the same grant); None when no statement
/// needs it.
pub(super) fn public_grantee_last(sql: &str) -> Option<String> {
    if !sql.to_ascii_lowercase().contains("public") {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let mut changed = false;
    let mut rewritten: Vec<Token> = Vec::with_capacity(tokens.len());
    for statement in tokens.split_inclusive(|token| *token == Token::SemiColon) {
        match public_last_in(statement) {
            Some(reordered) => {
                changed = true;
                rewritten.extend(reordered);
            }
            None => rewritten.extend_from_slice(statement),
        }
    }
    changed.then(|| rewritten.iter().map(ToString::to_string).collect())
}

/// An unquoted word's keyword.
pub(super) fn keyword(token: &Token) -> Option<Keyword> {
    match token {
        Token::Word(word) if word.quote_style.is_none() => Some(word.keyword),
        _ => None,
    }
}

/// Whether a grantee (its tokens between commas) is PUBLIC.
fn is_public(grantee: &[Token]) -> bool {
    let mut words = grantee.iter().filter(|token| !matches!(token, Token::Whitespace(_)));
    words.next().is_some_and(|word| keyword(word) == Some(Keyword::PUBLIC))
        && words.next().is_none()
}

/// One statement's tokens with PUBLIC grantees last; None if it is not a GRANT or REVOKE
/// with PUBLIC before another grantee.
fn public_last_in(statement: &[Token]) -> Option<Vec<Token>> {
    let first = statement.iter().find(|token| !matches!(token, Token::Whitespace(_)))?;
    let target = match keyword(first)? {
        Keyword::GRANT => Keyword::TO,
        Keyword::REVOKE => Keyword::FROM,
        _ => return None,
    };
    let start = statement.iter().position(|token| keyword(token) == Some(target))? + 1;
    let end = statement[start..]
        .iter()
        .position(|token| {
            *token == Token::SemiColon
                || matches!(
                    keyword(token),
                    Some(Keyword::WITH | Keyword::GRANTED | Keyword::CASCADE | Keyword::RESTRICT)
                )
        })
        .map_or(statement.len(), |offset| start + offset);
    let grantees: Vec<&[Token]> =
        statement[start..end].split(|token| *token == Token::Comma).collect();
    let last_role = grantees.iter().rposition(|grantee| !is_public(grantee))?;
    if !grantees[..last_role].iter().any(|grantee| is_public(grantee)) {
        return None;
    }
    let (publics, roles): (Vec<&[Token]>, Vec<&[Token]>) =
        grantees.into_iter().partition(|grantee| is_public(grantee));
    let mut reordered = statement[..start].to_vec();
    for (index, grantee) in roles.into_iter().chain(publics).enumerate() {
        if index > 0 {
            reordered.push(Token::Comma);
        }
        reordered.extend_from_slice(grantee);
    }
    reordered.extend_from_slice(&statement[end..]);
    Some(reordered)
}

/// Makes LOGIN the default of a CREATE ROLE parsed from CREATE USER.
pub(super) fn default_to_login(statement: &mut ast::Statement) {
    if let ast::Statement::CreateRole(create) = statement {
        create.login.get_or_insert(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_create_user_is_rewritten() {
        assert_eq!(
            create_user_as_role("  Create\tUSER alice").as_deref(),
            Some("  Create\tROLE alice")
        );
        assert_eq!(create_user_as_role("create users").as_deref(), None);
        assert_eq!(create_user_as_role("create table user_x (a int)").as_deref(), None);
        assert_eq!(create_user_as_role("createuser x").as_deref(), None);
    }
}
