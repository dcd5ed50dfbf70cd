//! The front of the pipeline: SQL text to statements (sqlparser, plus tierdb's own parser
//! for COPY and a few utility commands), with PostgreSQL's syntax errors and positions.

mod copy_options;
pub mod cursor;
pub(crate) mod frame_exclusion;
pub mod front;
pub(crate) mod group_by_quantifier;
pub mod identity;
mod join_qualifiers;
pub mod limits;
mod lock_strengths;
pub mod names;
pub(crate) mod overriding;
mod qualified_operators;
mod roles;
mod select_into;
pub mod sequences;
mod spans;
mod substring_similar;
mod tokens;
mod vector_operators;

pub use vector_operators::L1_OPERATOR_STAND_IN;

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};

use crate::depth;
use crate::error::{Result, SqlError};
use front::FrontStatement;

/// A parsed statement.
#[derive(Clone, Debug)]
pub enum Statement {
    Sql(Box<ast::Statement>),
    Front(FrontStatement),
}

/// Parses SQL text into statements (front parser first, then sqlparser).
pub fn parse_sql(sql: &str) -> Result<Vec<Statement>> {
    if let Some(front) = front::parse(sql)? {
        return Ok(vec![Statement::Front(front)]);
    }
    let checked = limits::check_statement_size(sql)?;
    let text = &*checked.text;
    depth::check_statement_depth(text)?;
    // CREATE USER is read as CREATE ROLE: a text of the same length, so positions stay.
    let create_user = roles::create_user_as_role(text);
    // `TO PUBLIC, role` read as `TO role, PUBLIC` (sqlparser reads only the latter).
    let grantees = roles::public_grantee_last(create_user.as_deref().unwrap_or(text));
    let before_locks = grantees.as_deref().or(create_user.as_deref()).unwrap_or(text);
    // FOR NO KEY UPDATE / FOR KEY SHARE read as FOR UPDATE / FOR SHARE (same length).
    let locks = lock_strengths::as_supported_strengths(before_locks);
    let before_l1 = locks.as_deref().unwrap_or(before_locks);
    let l1_operator = vector_operators::rewrite_l1_operator(before_l1);
    let before_qualified = l1_operator.as_deref().unwrap_or(before_l1);
    // `k OPERATOR(pg_catalog.=) ANY (...)` read as `k = ANY (...)` (same length).
    let qualified = qualified_operators::rewrite_qualified_comparisons(before_qualified);
    let before_similar = qualified.as_deref().unwrap_or(before_qualified);
    // substring(x SIMILAR p ESCAPE e) read as substring(x, p, e) (same length).
    let similar = substring_similar::rewrite_substring_similar(before_similar);
    let before_identity = similar.as_deref().unwrap_or(before_similar);
    // `AS IDENTITY (START 10 INCREMENT 5)` read in sqlparser's order of options.
    let identity = identity::reorder_identity_options(before_identity)
        .map_err(|error| map_position(error, &checked))?;
    let before_quantifiers = identity.as_deref().unwrap_or(before_identity);
    // GROUP BY DISTINCT / ALL: the word blanked, DISTINCT marked again after parsing.
    let quantifiers = group_by_quantifier::blank_quantifiers(before_quantifiers);
    let (before_overriding, distinct_selects) = match &quantifiers {
        Some((text, selects)) => (text.as_str(), selects.as_slice()),
        None => (before_quantifiers, &[][..]),
    };
    // INSERT ... OVERRIDING SYSTEM / USER VALUE: blanked, the INSERT marked after parsing.
    let overriding = overriding::blank_overriding(before_overriding)
        .map_err(|error| map_position(error, &checked))?;
    let (before_exclusions, overriding_inserts) = match &overriding {
        Some((text, inserts)) => (text.as_str(), inserts.as_slice()),
        None => (before_overriding, &[][..]),
    };
    // A window frame's EXCLUDE clause: blanked, the window marked after parsing.
    let exclusions = frame_exclusion::blank_exclusions(before_exclusions);
    let (parsed_text, frame_exclusions) = match &exclusions {
        Some((text, found)) => (text.as_str(), found.as_slice()),
        None => (before_exclusions, &[][..]),
    };
    let mut statements = Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(depth::PARSER_RECURSION_LIMIT)
        .try_with_sql(parsed_text)
        .and_then(|mut parser| parser.parse_statements())
        .map_err(|error| match error {
            ParserError::RecursionLimitExceeded => depth::stack_depth_error(),
            _ if names_search_or_cycle(text) => SqlError::unsupported(
                "the SEARCH and CYCLE clauses of WITH RECURSIVE are not supported",
            ),
            _ if let Some(feature) = unsupported_view_clause(text) => {
                SqlError::unsupported(format!("{feature} is not supported"))
            }
            error => syntax_error(text, &error.to_string()),
        })
        .map_err(|error| map_position(error, &checked))?;
    if create_user.is_some() {
        // Only the first statement was CREATE USER (`CREATE USER a; CREATE ROLE b` keeps b
        // NOLOGIN).
        statements.first_mut().into_iter().for_each(roles::default_to_login);
    }
    for statement in &mut statements {
        group_by_quantifier::mark_distinct(statement, parsed_text, distinct_selects);
        overriding::mark_inserts(statement, parsed_text, overriding_inserts);
    }
    frame_exclusion::mark_exclusions(&mut statements, parsed_text, frame_exclusions)
        .map_err(|error| map_position(error, &checked))?;
    for statement in &statements {
        check_reserved_names(text, statement).map_err(|error| map_position(error, &checked))?;
        join_qualifiers::check_join_qualifiers(parsed_text, statement)
            .map_err(|error| map_position(error, &checked))?;
    }
    statements
        .into_iter()
        .map(|statement| Ok(Statement::Sql(Box::new(select_into::as_create_table(statement)?))))
        .collect()
}

/// Whether a text that failed to parse has WITH RECURSIVE's SEARCH or CYCLE clause after a
/// CTE (`) SEARCH DEPTH FIRST BY ...`, `) CYCLE col SET ...`): sqlparser has no grammar for
/// them, and a clause not built is 0A000 naming it rather than a syntax error.
fn names_search_or_cycle(text: &str) -> bool {
    static CLAUSE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let clause = CLAUSE.get_or_init(|| {
        regex::Regex::new(
            r"(?is)^\s*with\s+recursive\b.*\)\s*(search\s+(depth|breadth)\s+first\s+by\b|cycle\s+.+\bset\b)",
        )
        .expect("a valid pattern")
    });
    clause.is_match(text)
}

/// The view feature a text that failed to parse uses, for which sqlparser has no grammar:
/// CREATE RECURSIVE VIEW and WITH [CASCADED | LOCAL] CHECK OPTION (0A000 naming them
/// rather than a syntax error).
fn unsupported_view_clause(text: &str) -> Option<&'static str> {
    static RECURSIVE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    static CHECK_OPTION: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let recursive = RECURSIVE.get_or_init(|| {
        regex::Regex::new(
            r"(?is)^\s*create\s+(or\s+replace\s+)?((temp|temporary)\s+)?recursive\s+view\b",
        )
        .expect("a valid pattern")
    });
    let check_option = CHECK_OPTION.get_or_init(|| {
        regex::Regex::new(
            r"(?is)^\s*create\s.*\bview\b.*\bwith\s+((cascaded|local)\s+)?check\s+option\s*;?\s*$",
        )
        .expect("a valid pattern")
    });
    if recursive.is_match(text) {
        Some("CREATE RECURSIVE VIEW")
    } else if text
        .trim_start()
        .get(..10)
        .is_some_and(|start| start.eq_ignore_ascii_case("alter view"))
    {
        Some("ALTER VIEW")
    } else if check_option.is_match(text) {
        Some("WITH CHECK OPTION")
    } else {
        None
    }
}

/// An error's position in the text the client sent (parsing saw it with whitespace shrunk).
fn map_position(mut error: SqlError, checked: &limits::CheckedText<'_>) -> SqlError {
    error.position = error.position.map(|position| checked.original_position(position));
    error
}

/// The 1-based character position of sqlparser's 1-based line and column in `sql`.
/// Parses an expression tierdb stored as SQL text (a CHECK constraint's), with the limit the
/// statement that made it was parsed with.
pub(crate) fn parse_stored_expression(text: &str) -> Result<ast::Expr> {
    Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(depth::PARSER_RECURSION_LIMIT)
        .try_with_sql(text)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|error| SqlError::internal(format!("stored expression does not parse: {error}")))
}

/// A view's stored query parsed again (it was parsed from this text at CREATE VIEW).
pub(crate) fn parse_view_query(text: &str) -> Result<ast::Query> {
    let statements = parse_sql(text)?;
    match statements.into_iter().next() {
        Some(Statement::Sql(statement)) => match *statement {
            ast::Statement::Query(query) => Ok(*query),
            _ => Err(SqlError::internal("a view's stored query is not a query")),
        },
        _ => Err(SqlError::internal("a view's stored query is not a query")),
    }
}

/// Parses one statement tierdb writes itself (FOREIGN KEY checks and actions).
pub(crate) fn parse_internal_statement(sql: &str) -> Result<ast::Statement> {
    Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(depth::PARSER_RECURSION_LIMIT)
        .try_with_sql(sql)
        .and_then(|mut parser| parser.parse_statement())
        .map_err(|error| SqlError::internal(format!("internal statement {sql}: {error}")))
}

/// The column names an expression reads (a qualified name's last part), folded as
/// PostgreSQL folds identifiers, each once, in the order they first appear.
pub(crate) fn column_names(expr: &ast::Expr) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let _ = ast::visit_expressions(expr, |inner| {
        let name = match inner {
            ast::Expr::Identifier(name) => Some(names::ident(name)),
            ast::Expr::CompoundIdentifier(parts) => parts.last().map(names::ident),
            _ => None,
        };
        if let Some(name) = name.filter(|name| !names.contains(name)) {
            names.push(name);
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    names
}

pub(crate) fn char_position(sql: &str, line: usize, column: usize) -> usize {
    let mut position = 0;
    for (index, text) in sql.split('\n').enumerate() {
        if index + 1 == line {
            return position + column.min(text.chars().count() + 1);
        }
        position += text.chars().count() + 1;
    }
    position.max(1)
}

/// PostgreSQL's syntax error for a sqlparser error: `syntax error at or near "token"`,
/// `syntax error at end of input`, `unterminated quoted string at or near "'abc"`, with the
/// position of the offending token.
pub(crate) fn syntax_error(sql: &str, error: &str) -> SqlError {
    let message = error
        .strip_prefix("sql parser error: ")
        .or_else(|| error.strip_prefix("sql tokenizer error: "))
        .unwrap_or(error);
    let (body, location) = match message.rsplit_once(" at Line: ") {
        Some((body, location)) => {
            let mut parts = location.split(", Column: ");
            let line = parts.next().and_then(|line| line.trim().parse::<usize>().ok());
            let column = parts.next().and_then(|column| column.trim().parse::<usize>().ok());
            match (line, column) {
                (Some(line), Some(column)) => (body, Some(char_position(sql, line, column))),
                _ => (message, None),
            }
        }
        None => (message, None),
    };
    let mut error = if body.starts_with("Unterminated string literal") {
        let rest: String = sql.chars().skip(location.map_or(0, |position| position - 1)).collect();
        SqlError::syntax(format!("unterminated quoted string at or near \"{rest}\""))
    } else if body.ends_with("found: EOF") {
        SqlError::syntax("syntax error at end of input")
    } else if let Some((_, token)) = body.rsplit_once("found: ") {
        SqlError::syntax(format!("syntax error at or near \"{token}\""))
    } else {
        SqlError::syntax(format!("syntax error: {body}"))
    };
    error.position =
        if body.ends_with("found: EOF") { Some(sql.chars().count() + 1) } else { location };
    error
}

pub(crate) fn check_reserved_names(sql: &str, statement: &ast::Statement) -> Result<()> {
    let mut found = None;
    let _ = ast::visit_relations(statement, |name| {
        for part in &name.0 {
            if let ast::ObjectNamePart::Identifier(ident) = part {
                if ident.quote_style.is_none()
                    && crate::identifiers::RESERVED_WORDS
                        .contains(&ident.value.to_ascii_lowercase().as_str())
                {
                    found = Some(ident.clone());
                    return std::ops::ControlFlow::Break(());
                }
            }
        }
        std::ops::ControlFlow::Continue(())
    });
    match found {
        Some(ident) => {
            let mut error =
                SqlError::syntax(format!("syntax error at or near \"{}\"", ident.value));
            let start = ident.span.start;
            if start.line > 0 {
                let line = crate::convert::usize_from(start.line);
                let column = crate::convert::usize_from(start.column);
                error.position = Some(char_position(sql, line, column));
            }
            Err(error)
        }
        None => Ok(()),
    }
}

/// Splits a multi-statement string where the front parser must see pieces (COPY, VACUUM)
/// separately: on semicolons outside quotes.
pub fn split_statements(sql: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in sql.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == ';' => {
                if !current.trim().is_empty() {
                    pieces.push(std::mem::take(&mut current));
                }
                current.clear();
                continue;
            }
            None => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        pieces.push(current);
    }
    pieces
}
