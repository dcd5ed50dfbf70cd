//! Memory limits checked before parsing: parsing must take memory in proportion to the
//! statement, with a small factor, so that one client cannot exhaust the server.
//!
//! sqlparser makes a token of 88 bytes for every whitespace character and every token, and
//! a syntax tree of 300 to 800 bytes for every expression or select item (measured on
//! sqlparser 0.63: `Expr` 328 bytes, `SelectItem` 776, `TokenWithSpan` 88; vectors double
//! as they grow). So, before sqlparser sees a statement:
//! - runs of whitespace are shrunk to one character when they add up to more than
//!   `WHITESPACE_SHRINK_MIN_BYTES` (a run with a newline to a newline, since PostgreSQL joins
//!   string constants separated by one); error positions are mapped back to the text the
//!   client sent. PostgreSQL accepts any amount of whitespace, and so does tierdb.
//! - a statement of more than `STATEMENT_TOKENS_MAX` tokens fails with 54000
//!   (program_limit_exceeded): at most about 1 GB of syntax tree. PostgreSQL has no such
//!   limit; bulk loads belong in COPY (streamed) or in statements of fewer rows.
//! - a select list of more than `TARGET_LIST_ENTRIES_MAX` entries fails with PostgreSQL's
//!   54011 "target lists can have at most 1664 entries" before its 776-byte items are built.
//! - server-wide, statements of more than `PARSE_UNMETERED_TOKENS` tokens parse within one
//!   budget (`PARSE_MEMORY_MAX_BYTES` at `PARSE_BYTES_PER_TOKEN` each): a statement waits
//!   for others to finish parsing, up to `PARSE_WAIT_MAX`, then fails with 53200
//!   (out_of_memory). So many connections sending large statements at once take at most the
//!   budget plus `PARSE_UNMETERED_TOKENS` worth each.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Result, SqlError};
use crate::lexer::{is_whitespace_byte, LexemeKind, Lexer};

/// Tokens (not counting whitespace; a comment is one) a statement may have.
pub const STATEMENT_TOKENS_MAX: usize = 1_000_000;

/// PostgreSQL's limit on a target list (MaxTupleAttributeNumber).
pub const TARGET_LIST_ENTRIES_MAX: usize = 1_664;

/// An upper bound on what sqlparser allocates per token while parsing (a select item of 776
/// bytes per two tokens, in a vector that doubles, plus the tokens themselves).
pub const PARSE_BYTES_PER_TOKEN: usize = 1_000;

/// Statements of up to this many tokens parse without taking from the budget (4 MB).
pub const PARSE_UNMETERED_TOKENS: usize = 4_000;

/// What statements of more than `PARSE_UNMETERED_TOKENS` may take at once, server-wide.
pub const PARSE_MEMORY_MAX_BYTES: usize = 2 << 30;

/// How long a statement waits for the budget before failing with 53200.
pub const PARSE_WAIT_MAX: Duration = Duration::from_secs(30);

/// Whitespace beyond one character per run that is left alone: up to this, the tokens it
/// makes (88 bytes each) cost less than copying the text to shrink it.
const WHITESPACE_SHRINK_MIN_BYTES: usize = 64 << 10;

/// Words that end a select list at its own parenthesis level.
const SELECT_LIST_END_WORDS: &[&str] = &[
    "from",
    "into",
    "where",
    "group",
    "having",
    "window",
    "order",
    "limit",
    "offset",
    "fetch",
    "for",
    "union",
    "except",
    "intersect",
];

/// A statement's text as sqlparser is to see it, and how to map positions in it back.
pub(crate) struct CheckedText<'a> {
    pub text: Cow<'a, str>,
    /// The statement's share of the parse budget, held while it is parsed.
    _permit: Option<ParsePermit<'static>>,
    /// For each shrunk run: the 0-based character index just after the one whitespace
    /// character kept, and the characters removed up to and including that run.
    shrunk: Vec<(usize, usize)>,
}

impl CheckedText<'_> {
    /// The 1-based character position in the client's text of `position` in `self.text`.
    pub fn original_position(&self, position: usize) -> usize {
        let index = position.saturating_sub(1);
        let runs_before = self.shrunk.partition_point(|&(after, _)| after <= index);
        let removed = runs_before.checked_sub(1).map_or(0, |run| self.shrunk[run].1);
        position + removed
    }
}

/// Checks the limits above and shrinks long whitespace (see the module comment).
pub(crate) fn check_statement_size(sql: &str) -> Result<CheckedText<'_>> {
    let mut tokens = 0usize;
    let mut excess_whitespace_bytes = 0usize;
    // Per open parenthesis level (outermost first): the entries of a select list being read.
    let mut select_lists: Vec<Option<usize>> = vec![None];
    for lexeme in Lexer::new(sql) {
        if lexeme.kind == LexemeKind::Whitespace {
            excess_whitespace_bytes += lexeme.end - lexeme.start - 1;
            continue;
        }
        tokens += 1;
        if tokens > STATEMENT_TOKENS_MAX {
            return Err(SqlError::new(
                "54000",
                format!(
                    "statement has more than {STATEMENT_TOKENS_MAX} tokens (tierdb's limit: \
                     load bulk data with COPY or in smaller statements)"
                ),
            ));
        }
        match lexeme.kind {
            LexemeKind::OpenParen => select_lists.push(None),
            LexemeKind::CloseParen if select_lists.len() > 1 => {
                select_lists.pop();
            }
            LexemeKind::Comma => {
                if let Some(Some(entries)) = select_lists.last_mut() {
                    *entries += 1;
                    if *entries > TARGET_LIST_ENTRIES_MAX {
                        return Err(target_list_error());
                    }
                }
            }
            LexemeKind::Word => {
                let current = select_lists.last_mut().expect("the outermost level stays");
                let word = &sql[lexeme.start..lexeme.end];
                if word.eq_ignore_ascii_case("select") {
                    *current = Some(1);
                } else if SELECT_LIST_END_WORDS.iter().any(|end| word.eq_ignore_ascii_case(end)) {
                    *current = None;
                }
            }
            _ => {}
        }
    }
    let permit = match tokens > PARSE_UNMETERED_TOKENS {
        true => Some(PARSE_BUDGET.acquire(tokens * PARSE_BYTES_PER_TOKEN, PARSE_WAIT_MAX)?),
        false => None,
    };
    if excess_whitespace_bytes <= WHITESPACE_SHRINK_MIN_BYTES {
        return Ok(CheckedText { text: Cow::Borrowed(sql), _permit: permit, shrunk: Vec::new() });
    }
    let (text, shrunk) = shrink_whitespace(sql);
    Ok(CheckedText { text: Cow::Owned(text), _permit: permit, shrunk })
}

/// Memory shared by the statements being parsed (see the module comment).
pub struct ParseBudget {
    capacity_bytes: usize,
    in_use_bytes: Mutex<usize>,
    released: Condvar,
}

static PARSE_BUDGET: ParseBudget = ParseBudget::new(PARSE_MEMORY_MAX_BYTES);

impl ParseBudget {
    pub const fn new(capacity_bytes: usize) -> ParseBudget {
        ParseBudget { capacity_bytes, in_use_bytes: Mutex::new(0), released: Condvar::new() }
    }

    /// Takes `bytes` (at most the capacity) once they are free, waiting up to `wait`.
    pub fn acquire(&self, bytes: usize, wait: Duration) -> Result<ParsePermit<'_>> {
        assert!(bytes <= self.capacity_bytes, "a statement's estimate is within the budget");
        let deadline = Instant::now() + wait;
        let mut in_use = self.in_use_bytes.lock();
        while *in_use + bytes > self.capacity_bytes {
            if self.released.wait_until(&mut in_use, deadline).timed_out()
                && *in_use + bytes > self.capacity_bytes
            {
                return Err(SqlError::new(
                    "53200",
                    format!(
                        "out of memory: other statements being parsed hold the server's parse \
                         memory ({} MB); this one needs {} MB",
                        self.capacity_bytes >> 20,
                        bytes >> 20
                    ),
                ));
            }
        }
        *in_use += bytes;
        Ok(ParsePermit { budget: self, bytes })
    }

    #[cfg(test)]
    fn in_use_bytes(&self) -> usize {
        *self.in_use_bytes.lock()
    }
}

/// A share of a `ParseBudget`, given back on drop.
pub struct ParsePermit<'a> {
    budget: &'a ParseBudget,
    bytes: usize,
}

impl Drop for ParsePermit<'_> {
    fn drop(&mut self) {
        let mut in_use = self.budget.in_use_bytes.lock();
        assert!(*in_use >= self.bytes, "a permit gives back what it took");
        *in_use -= self.bytes;
        drop(in_use);
        self.budget.released.notify_all();
    }
}

/// PostgreSQL's error for a select list longer than `TARGET_LIST_ENTRIES_MAX`.
pub fn target_list_error() -> SqlError {
    SqlError::new(
        "54011",
        format!("target lists can have at most {TARGET_LIST_ENTRIES_MAX} entries"),
    )
}

/// `sql` with each run of whitespace longer than one character replaced by one character
/// (a newline if the run has one).
fn shrink_whitespace(sql: &str) -> (String, Vec<(usize, usize)>) {
    let mut text = String::with_capacity(sql.len());
    let mut shrunk = Vec::new();
    let mut characters = 0usize;
    let mut removed = 0usize;
    for lexeme in Lexer::new(sql) {
        let piece = &sql[lexeme.start..lexeme.end];
        if lexeme.kind == LexemeKind::Whitespace && piece.len() > 1 {
            debug_assert!(piece.bytes().all(is_whitespace_byte));
            text.push(if piece.contains('\n') { '\n' } else { ' ' });
            characters += 1;
            removed += piece.len() - 1;
            shrunk.push((characters, removed));
        } else {
            text.push_str(piece);
            characters += piece.chars().count();
        }
    }
    assert_eq!(text.len() + removed, sql.len(), "only whitespace was removed");
    (text, shrunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_whitespace_is_shrunk_and_positions_map_back() {
        let gap = " ".repeat(WHITESPACE_SHRINK_MIN_BYTES);
        let sql = format!("SELECT{gap}'a'\n{gap}\n'b', é{gap}x");
        let checked = check_statement_size(&sql).unwrap();
        assert_eq!(checked.text, "SELECT 'a'\n'b', é x");
        // Every character of the shrunk text maps to the same character of the original.
        let original: Vec<char> = sql.chars().collect();
        for (index, character) in checked.text.chars().enumerate() {
            let position = checked.original_position(index + 1);
            assert_eq!(original[position - 1], character, "position {}", index + 1);
        }
        let short = "SELECT  1,\n\n 2";
        assert!(matches!(check_statement_size(short).unwrap().text, Cow::Borrowed(_)));
    }

    #[test]
    fn the_parse_budget_makes_statements_wait_and_then_fail() {
        let budget = ParseBudget::new(100);
        let first = budget.acquire(60, Duration::ZERO).unwrap();
        let second = budget.acquire(40, Duration::ZERO).unwrap();
        let refused = budget.acquire(1, Duration::from_millis(20)).err().unwrap();
        assert_eq!(refused.sqlstate, "53200");
        drop(second);
        assert_eq!(budget.in_use_bytes(), 60);
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| budget.acquire(80, Duration::from_secs(30)).map(|_| ()));
            std::thread::sleep(Duration::from_millis(20));
            drop(first);
            assert!(waiter.join().unwrap().is_ok(), "the waiter got the budget once it was free");
        });
        assert_eq!(budget.in_use_bytes(), 0);
    }

    #[test]
    fn select_lists_and_tokens_are_bounded() {
        let list = |entries: usize| vec!["1"; entries].join(",");
        let at_limit = format!("SELECT {} FROM t", list(TARGET_LIST_ENTRIES_MAX));
        assert!(check_statement_size(&at_limit).is_ok());
        let over = format!("SELECT {}", list(TARGET_LIST_ENTRIES_MAX + 1));
        assert_eq!(check_statement_size(&over).err().unwrap().sqlstate, "54011");
        let nested = format!("SELECT (SELECT {}) FROM t", list(TARGET_LIST_ENTRIES_MAX + 1));
        assert_eq!(check_statement_size(&nested).err().unwrap().sqlstate, "54011");
        // Lists that are not select lists are not limited by it.
        let values = format!("INSERT INTO t VALUES {}", vec!["(1)"; 5_000].join(","));
        assert!(check_statement_size(&values).is_ok());
        let in_list = format!("SELECT 1 FROM t WHERE a IN ({})", list(5_000));
        assert!(check_statement_size(&in_list).is_ok());
        let huge = format!("INSERT INTO t VALUES ({})", list(STATEMENT_TOKENS_MAX / 2 + 1));
        assert_eq!(check_statement_size(&huge).err().unwrap().sqlstate, "54000");
    }
}
