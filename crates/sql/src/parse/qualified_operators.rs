//! `x OPERATOR(pg_catalog.=) ANY (array)`: pg_dump's `-t` pattern query and psql's
//! describe queries qualify the comparison operators they apply with ANY / ALL, which
//! sqlparser does not parse (it reads `OPERATOR(...)` only as a plain binary operator).
//! Every operator is pg_catalog's in tierdb (no CREATE OPERATOR), so `OPERATOR(pg_catalog.=)`
//! before ANY, ALL or SOME is rewritten to `=` padded with spaces to the same length (error
//! positions stay right). Only operator tokens are rewritten, never text inside literals,
//! identifiers or comments; another schema is left as written (its error is the binder's).

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use super::spans::{is_keyword, located_tokens, Located};

/// The comparison operators sqlparser accepts before ANY / ALL.
const COMPARISONS: [&str; 7] = ["=", "<>", "!=", "<", "<=", ">", ">="];

/// The text with each qualified comparison before ANY / ALL / SOME made plain; None when
/// there is none.
pub(super) fn rewrite_qualified_comparisons(sql: &str) -> Option<String> {
    if !sql.to_ascii_lowercase().contains("operator") {
        return None;
    }
    let tokens = located_tokens(sql)?;
    let mut rewritten = sql.to_string();
    let mut found = false;
    for index in 0..tokens.len() {
        let Some((operator, close)) = qualified_comparison(&tokens, index) else { continue };
        let followed_by_quantifier = tokens.get(close + 1).is_some_and(|next| {
            [Keyword::ANY, Keyword::ALL, Keyword::SOME]
                .into_iter()
                .any(|keyword| is_keyword(&next.token, keyword))
        });
        if !followed_by_quantifier {
            continue;
        }
        let (start, end) = (tokens[index].offset, tokens[close].offset + 1);
        assert!(end > start + operator.len(), "OPERATOR(...) is longer than its operator");
        let padded = format!("{operator:<width$}", width = end - start);
        rewritten.replace_range(start..end, &padded);
        found = true;
    }
    found.then_some(rewritten)
}

/// At `tokens[index]`: `OPERATOR ( [pg_catalog .] op )` with a comparison `op`: the operator
/// and the index of the closing parenthesis.
fn qualified_comparison(tokens: &[Located], index: usize) -> Option<(String, usize)> {
    if !is_keyword(&tokens.get(index)?.token, Keyword::OPERATOR)
        || tokens.get(index + 1)?.token != Token::LParen
    {
        return None;
    }
    let mut at = index + 2;
    if let Token::Word(word) = &tokens.get(at)?.token {
        let schema = match word.quote_style {
            Some(_) => word.value.clone(),
            None => word.value.to_lowercase(),
        };
        if schema != "pg_catalog" || tokens.get(at + 1)?.token != Token::Period {
            return None;
        }
        at += 2;
    }
    let operator = tokens.get(at)?.token.to_string();
    if !COMPARISONS.contains(&operator.as_str()) || tokens.get(at + 1)?.token != Token::RParen {
        return None;
    }
    Some((operator, at + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_qualified_comparisons_before_quantifiers_only() {
        assert_eq!(
            rewrite_qualified_comparisons("SELECT 1 WHERE k OPERATOR(pg_catalog.=) ANY (a)")
                .as_deref(),
            Some("SELECT 1 WHERE k =                      ANY (a)")
        );
        assert_eq!(
            rewrite_qualified_comparisons("WHERE k OPERATOR( <> )\n all (a)").as_deref(),
            Some("WHERE k <>            \n all (a)")
        );
        // A plain binary use, another schema, a literal: left as written.
        assert_eq!(rewrite_qualified_comparisons("WHERE k OPERATOR(pg_catalog.=) 1"), None);
        assert_eq!(rewrite_qualified_comparisons("WHERE k OPERATOR(s.=) ANY (a)"), None);
        assert_eq!(rewrite_qualified_comparisons("SELECT 'OPERATOR(=) ANY'"), None);
    }
}
