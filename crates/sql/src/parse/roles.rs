//! `CREATE USER`: PostgreSQL's CREATE ROLE with LOGIN by default. sqlparser reads
//! `CREATE USER` as another dialect's statement, so the text is parsed as CREATE ROLE ("user"
//! and "role" have the same length: error positions stay right) and LOGIN becomes the
//! default.

use sqlparser::ast;

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
