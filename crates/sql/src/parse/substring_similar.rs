//! `substring(x SIMILAR pattern ESCAPE escape)`: PostgreSQL's grammar makes it the call
//! substring(x, pattern, escape), a form sqlparser does not parse. SIMILAR and ESCAPE at the
//! call's own level are rewritten to commas padded with spaces to the same length (error
//! positions stay right); `x SIMILAR TO y` inside the call is left as written.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use super::spans::{is_keyword, located_tokens, Located};

/// The text with each `substring(... SIMILAR ... ESCAPE ...)` written with commas; None
/// when there is none.
pub(super) fn rewrite_substring_similar(sql: &str) -> Option<String> {
    if !sql.to_ascii_lowercase().contains("similar") {
        return None;
    }
    let tokens = located_tokens(sql)?;
    let mut rewritten = sql.to_string();
    let mut found = false;
    for index in 0..tokens.len() {
        let Some((similar, escape)) = similar_call(&tokens, index) else { continue };
        for at in [similar, escape] {
            let (start, end) = (tokens[at].offset, tokens[at].end);
            rewritten.replace_range(start..end, &format!("{:<width$}", ",", width = end - start));
        }
        found = true;
    }
    found.then_some(rewritten)
}

/// At `tokens[index]`: `SUBSTRING (` with SIMILAR (not SIMILAR TO) and then ESCAPE at the
/// call's own parenthesis level: the indexes of those two keywords.
fn similar_call(tokens: &[Located], index: usize) -> Option<(usize, usize)> {
    if !is_keyword(&tokens.get(index)?.token, Keyword::SUBSTRING)
        || tokens.get(index + 1)?.token != Token::LParen
    {
        return None;
    }
    let (mut depth, mut similar, mut escape) = (0usize, None, None);
    for (at, located) in tokens.iter().enumerate().skip(index + 1) {
        match &located.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            token if depth == 1 && similar.is_none() && is_keyword(token, Keyword::SIMILAR) => {
                let followed_by_to =
                    tokens.get(at + 1).is_some_and(|next| is_keyword(&next.token, Keyword::TO));
                if !followed_by_to {
                    similar = Some(at);
                }
            }
            token if depth == 1 && similar.is_some() && is_keyword(token, Keyword::ESCAPE) => {
                escape.get_or_insert(at);
            }
            _ => {}
        }
    }
    Some((similar?, escape?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_similar_and_escape_of_substring_only() {
        assert_eq!(
            rewrite_substring_similar("SELECT substring('ab' similar '%#\"b#\"' escape '#')")
                .as_deref(),
            Some("SELECT substring('ab' ,       '%#\"b#\"' ,      '#')")
        );
        assert_eq!(rewrite_substring_similar("SELECT 'a' SIMILAR TO 'a' ESCAPE '#'"), None);
        assert_eq!(
            rewrite_substring_similar("SELECT substring(x, 'similar')").as_deref(),
            None,
            "a literal is not a keyword"
        );
    }
}
