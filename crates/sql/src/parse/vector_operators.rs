//! pgvector's `<+>` (L1 distance). sqlparser reads `<+` as `<` followed by a unary plus, so
//! `a <+> b` does not parse; the three characters are rewritten to `<!>` (same length: error
//! positions stay right), which sqlparser reads as one custom operator that the binder
//! treats as `<+>`. Only operator tokens are rewritten, never text inside literals,
//! identifiers or comments.

use sqlparser::tokenizer::Token;

use super::spans::located_tokens;

/// The operator the binder reads as pgvector's `<+>`.
pub const L1_OPERATOR_STAND_IN: &str = "<!>";

/// The text with every `<+>` operator rewritten; None when there is none.
pub(super) fn rewrite_l1_operator(sql: &str) -> Option<String> {
    if !sql.contains("<+>") {
        return None;
    }
    let tokens = located_tokens(sql)?;
    let mut rewritten = sql.to_string();
    let mut found = false;
    for window in tokens.windows(3) {
        let [first, second, third] = window else { continue };
        if first.token != Token::Lt || second.token != Token::Plus || third.token != Token::Gt {
            continue;
        }
        let offset = first.offset;
        if sql.get(offset..offset + 3) == Some("<+>") {
            rewritten.replace_range(offset..offset + 3, L1_OPERATOR_STAND_IN);
            found = true;
        }
    }
    found.then_some(rewritten)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_operators_only() {
        assert_eq!(
            rewrite_l1_operator("SELECT a <+> '[1,<+>]' -- <+>\n, b<+>c").as_deref(),
            Some("SELECT a <!> '[1,<+>]' -- <+>\n, b<!>c")
        );
        assert_eq!(rewrite_l1_operator("SELECT 1 < +2"), None);
        assert_eq!(rewrite_l1_operator("SELECT 'é' <+> x").as_deref(), Some("SELECT 'é' <!> x"));
    }
}
