//! FOR NO KEY UPDATE and FOR KEY SHARE, PostgreSQL's weaker row locks, which sqlparser does
//! not read, are read as FOR UPDATE and FOR SHARE. tierdb's row locks have two strengths,
//! exclusive and shared, and each weaker PostgreSQL mode is taken as the stronger lock of its
//! kind. A stronger lock can only make a transaction wait where PostgreSQL would let it
//! through (an UPDATE of non-key columns waits for a FOR KEY SHARE holder; FOR NO KEY UPDATE
//! holders block FOR KEY SHARE). It never lets through what PostgreSQL blocks, so no result
//! differs; docs/SECURITY.md states the difference in waiting.
//!
//! The rewrite blanks the words NO and KEY with spaces of the same length, so the text keeps
//! its length and error positions stay where the client wrote them. It works on sqlparser's
//! tokens, so the words inside a string literal, a quoted name or a comment are never
//! touched.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use super::roles::keyword;

/// The text with FOR NO KEY UPDATE read as FOR UPDATE and FOR KEY SHARE as FOR SHARE; None
/// when it has neither.
pub(super) fn as_supported_strengths(sql: &str) -> Option<String> {
    if !sql.to_ascii_lowercase().contains("key") {
        return None;
    }
    let mut tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    // Positions of the words (not whitespace), to match the clause across any spacing.
    let words: Vec<usize> =
        (0..tokens.len()).filter(|&index| !matches!(tokens[index], Token::Whitespace(_))).collect();
    let mut blanked = Vec::new();
    for (at, &index) in words.iter().enumerate() {
        if keyword(&tokens[index]) != Some(Keyword::FOR) {
            continue;
        }
        let next = |offset: usize| words.get(at + offset).and_then(|&i| keyword(&tokens[i]));
        match (next(1), next(2), next(3)) {
            (Some(Keyword::NO), Some(Keyword::KEY), Some(Keyword::UPDATE)) => {
                blanked.extend([words[at + 1], words[at + 2]]);
            }
            (Some(Keyword::KEY), Some(Keyword::SHARE), _) => blanked.push(words[at + 1]),
            _ => {}
        }
    }
    if blanked.is_empty() {
        return None;
    }
    // From the last, so the earlier indexes stay valid as one word becomes several spaces.
    blanked.sort_unstable();
    for index in blanked.into_iter().rev() {
        let width = tokens[index].to_string().len();
        let spaces = std::iter::repeat_n(Token::Whitespace(Whitespace::Space), width);
        tokens.splice(index..=index, spaces);
    }
    Some(tokens.iter().map(ToString::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::as_supported_strengths;

    #[test]
    fn weaker_modes_read_as_the_stronger_ones_with_the_same_length() {
        let sql = "SELECT * FROM t WHERE id = 1 FOR NO KEY UPDATE";
        let read = as_supported_strengths(sql).expect("rewritten");
        assert_eq!(read.len(), sql.len());
        assert_eq!(
            read.split_whitespace().collect::<Vec<_>>().join(" "),
            "SELECT * FROM t WHERE id = 1 FOR UPDATE"
        );
        let sql = "select 1 from t for key  share of t nowait";
        let read = as_supported_strengths(sql).expect("rewritten");
        assert_eq!(read.len(), sql.len());
        assert_eq!(
            read.split_whitespace().collect::<Vec<_>>().join(" "),
            "select 1 from t for share of t nowait"
        );
    }

    #[test]
    fn literals_names_and_other_text_are_left_alone() {
        assert_eq!(as_supported_strengths("SELECT 'FOR NO KEY UPDATE'"), None);
        assert_eq!(as_supported_strengths("SELECT \"key\" FROM t FOR UPDATE"), None);
        assert_eq!(as_supported_strengths("SELECT 1 -- FOR KEY SHARE"), None);
        assert_eq!(as_supported_strengths("CREATE TABLE t (id int PRIMARY KEY)"), None);
    }
}
