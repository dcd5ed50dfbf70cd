//! Stack depth limits: no statement can overflow a connection thread's stack.
//!
//! As PostgreSQL's `check_stack_depth()`, every recursive function of the SQL layer (bind,
//! evaluate, run a plan) calls [`check_stack_depth`] first, which fails with 54001 "stack
//! depth limit exceeded" while a red zone of the stack is still free. Recursion that tierdb
//! does not control (sqlparser's parser, its visitors, `Clone`, `Display` and `Drop` of its
//! syntax tree) is bounded before parsing: [`check_statement_depth`] bounds the depth of the
//! statement's syntax tree from its text, refuses the statement when a traversal that deep
//! would not fit in the stack left, and widens the red zone for the statement's execution
//! by that traversal's size, so that one started from deep inside tierdb's recursion fits.

use std::cell::Cell;

use crate::error::{Result, SqlError};

/// Stack kept free for the frames between two checks (and what the functions they call
/// use without recursing).
pub const STACK_RED_ZONE_BYTES: usize = 1 << 20;

/// Stack one level of a sqlparser syntax tree takes in its deepest traversal (`Clone` of an
/// expression chain, measured: 4,000 levels take between 4 and 6 MiB).
pub const SYNTAX_STACK_BYTES_PER_LEVEL: usize = 1_600;

/// sqlparser's recursion limit (its default, 50, refuses what PostgreSQL accepts: 1,000
/// nested parentheses or subqueries); the depth bound also counts this nesting.
pub const PARSER_RECURSION_LIMIT: usize = 10_000;

thread_local! {
    /// The red zone for the statement running on this thread (see `check_statement_depth`).
    static RED_ZONE_BYTES: Cell<usize> = const { Cell::new(STACK_RED_ZONE_BYTES) };
}

/// PostgreSQL's error when a statement is too deep for its stack.
pub fn stack_depth_error() -> SqlError {
    SqlError::new("54001", "stack depth limit exceeded")
}

/// Fails with 54001 when less than the red zone of the current thread's stack is left.
pub fn check_stack_depth() -> Result<()> {
    let red_zone_bytes = RED_ZONE_BYTES.with(Cell::get);
    match stacker::remaining_stack() {
        Some(remaining) if remaining < red_zone_bytes => Err(stack_depth_error()),
        _ => Ok(()),
    }
}

/// Called before parsing or running `sql`: refuses it (54001) when a traversal of a syntax
/// tree as deep as its text allows would not fit in the stack left, and otherwise sets the
/// red zone for its execution to that traversal's size plus `STACK_RED_ZONE_BYTES`.
pub fn check_statement_depth(sql: &str) -> Result<()> {
    let red_zone_bytes = syntax_depth_bound(sql)
        .saturating_mul(SYNTAX_STACK_BYTES_PER_LEVEL)
        .saturating_add(STACK_RED_ZONE_BYTES);
    if stacker::remaining_stack().is_some_and(|remaining| remaining < red_zone_bytes) {
        return Err(stack_depth_error());
    }
    RED_ZONE_BYTES.with(|cell| cell.set(red_zone_bytes));
    Ok(())
}

/// Key words that continue an operator chain (each one can add a level to the tree).
const CHAIN_WORDS: &[&str] = &[
    "and",
    "or",
    "not",
    "is",
    "in",
    "like",
    "ilike",
    "similar",
    "between",
    "collate",
    "at",
    "union",
    "except",
    "intersect",
];

/// An upper bound on the depth of the syntax tree sqlparser builds for `sql`, from the text
/// alone: at any point, the parenthesis depth plus the operators and chain key words in each
/// enclosing parenthesis group (sqlparser builds `a OR b OR ...` into a tree as deep as the
/// chain is long; a comma list such as VALUES rows or an IN list adds no depth and is not
/// counted).
fn syntax_depth_bound(sql: &str) -> usize {
    let bytes = sql.as_bytes();
    let mut bound = 0;
    let mut depth = 0;
    // Operators counted in the enclosing groups (outermost first) and in the current one.
    let mut enclosing_operators = 0;
    let mut group_operators: Vec<usize> = vec![0];
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        let start = index;
        index += 1;
        match byte {
            b'\'' | b'"' => index = skip_quoted(bytes, index, byte),
            b'-' if bytes.get(index) == Some(&b'-') => {
                index = bytes[index..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |end| index + end);
            }
            b'(' => {
                let current = *group_operators.last().expect("the outermost group stays");
                enclosing_operators += current;
                group_operators.push(0);
                depth += 1;
            }
            b')' if group_operators.len() > 1 => {
                group_operators.pop();
                let current = *group_operators.last().expect("the outermost group stays");
                enclosing_operators -= current;
                depth -= 1;
            }
            _ if is_operator_byte(byte) => {
                while index < bytes.len() && is_operator_byte(bytes[index]) {
                    index += 1;
                }
                *group_operators.last_mut().expect("the outermost group stays") += 1;
            }
            _ if byte.is_ascii_alphabetic() || byte == b'_' => {
                while index < bytes.len()
                    && (bytes[index].is_ascii_alphanumeric() || bytes[index] == b'_')
                {
                    index += 1;
                }
                let word = sql[start..index].to_ascii_lowercase();
                if CHAIN_WORDS.contains(&word.as_str()) {
                    *group_operators.last_mut().expect("the outermost group stays") += 1;
                }
            }
            _ => {}
        }
        let current = *group_operators.last().expect("the outermost group stays");
        bound = bound.max(depth + enclosing_operators + current);
    }
    bound
}

fn is_operator_byte(byte: u8) -> bool {
    matches!(
        byte,
        b'+' | b'-'
            | b'*'
            | b'/'
            | b'%'
            | b'^'
            | b'<'
            | b'>'
            | b'='
            | b'~'
            | b'!'
            | b'@'
            | b'#'
            | b'&'
            | b'|'
            | b'`'
            | b'?'
            | b':'
            | b'['
    )
}

/// The index after the quote closing the one before `index` (a doubled quote is part of
/// the text).
fn skip_quoted(bytes: &[u8], mut index: usize, quote: u8) -> usize {
    while index < bytes.len() {
        if bytes[index] == quote {
            if bytes.get(index + 1) == Some(&quote) {
                index += 2;
                continue;
            }
            return index + 1;
        }
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_count_and_comma_lists_do_not() {
        assert_eq!(syntax_depth_bound("SELECT 1"), 0);
        assert_eq!(syntax_depth_bound("SELECT 1+1+1"), 2);
        assert_eq!(syntax_depth_bound("SELECT ((1))"), 2);
        assert_eq!(syntax_depth_bound("SELECT a OR (b OR c)"), 3);
        assert_eq!(syntax_depth_bound("INSERT INTO t VALUES (1, 2), (3, 4), (5, 6)"), 1);
        assert_eq!(syntax_depth_bound("SELECT 'a+b+c' || \"x+y\" -- + + +"), 1);
        assert_eq!(syntax_depth_bound("SELECT 1 IN (1, 2, 3)"), 2);
    }
}
