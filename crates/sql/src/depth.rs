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
use crate::lexer::{LexemeKind, Lexer};

/// Stack kept free for the frames between two checks (and what the functions they call
/// use without recursing).
pub const STACK_RED_ZONE_BYTES: usize = 1 << 20;

/// Stack for one level of an operator chain (`a OR b OR ...`, `1 + 1 + ...`, `... UNION ALL
/// ...`), which sqlparser builds without recursing into a tree as deep as the chain is long:
/// its deepest traversal, `Clone`, takes between 1 and 1.5 KiB a level (measured).
pub const CHAIN_STACK_BYTES: usize = 1_600;

/// Stack for one level of nesting that sqlparser's parser recurses for (a parenthesis, a
/// prefix operator such as NOT or `-`, CASE): about 6 KiB measured (1,000 levels in 6 MiB).
pub const NESTING_STACK_BYTES: usize = 8 << 10;

/// Stack for one level of nested subquery `(SELECT (SELECT ...))`, beside its parenthesis:
/// 1,000 levels take between 24 and 32 MiB to parse (measured).
pub const SUBQUERY_STACK_BYTES: usize = 32 << 10;

/// sqlparser's recursion limit (its default, 50, refuses what PostgreSQL accepts: 1,000
/// nested parentheses or subqueries). The stack bound, not this, is the effective limit.
pub const PARSER_RECURSION_LIMIT: usize = 100_000;

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

/// Called before parsing or running `sql`: refuses it (54001) when parsing it or traversing
/// its syntax tree may need more stack than is left, and otherwise sets the red zone for its
/// execution to that much plus `STACK_RED_ZONE_BYTES`, so that a sqlparser traversal
/// started from deep inside tierdb's recursion still fits.
pub fn check_statement_depth(sql: &str) -> Result<()> {
    let red_zone_bytes = syntax_stack_bound_bytes(sql).saturating_add(STACK_RED_ZONE_BYTES);
    if stacker::remaining_stack().is_some_and(|remaining| remaining < red_zone_bytes) {
        return Err(stack_depth_error());
    }
    RED_ZONE_BYTES.with(|cell| cell.set(red_zone_bytes));
    Ok(())
}

/// Key words that continue an operator chain (each can add a level to the syntax tree).
const CHAIN_WORDS: &[&str] =
    &["and", "or", "is", "in", "like", "ilike", "similar", "between", "collate", "at"];

/// Key words after which an operator is a prefix operator (the parser recurses for it).
const PREFIX_WORDS: &[&str] = &["not", "case", "when", "then", "else", "exists", "array"];

/// The stack needed at a point of a statement: the groups (parentheses) around it.
struct Groups {
    /// The open groups, innermost last.
    open: Vec<Group>,
    /// The cost of the enclosing groups' contents up to where each was opened.
    enclosing_bytes: usize,
}

#[derive(Default)]
struct Group {
    /// SELECTs and set operations so far: a query spans the commas of its lists.
    query_bytes: usize,
    /// Operators and prefix words of the current list item (an expression ends at a comma).
    item_bytes: usize,
    /// What entering the group added to `enclosing_bytes`.
    added_bytes: usize,
}

impl Group {
    fn bytes(&self) -> usize {
        self.query_bytes.saturating_add(self.item_bytes)
    }
}

impl Groups {
    fn current(&mut self) -> &mut Group {
        self.open.last_mut().expect("the outermost group stays open")
    }

    fn add_to_item(&mut self, bytes: usize) {
        let current = self.current();
        current.item_bytes = current.item_bytes.saturating_add(bytes);
    }

    fn add_to_query(&mut self, bytes: usize) {
        let current = self.current();
        current.query_bytes = current.query_bytes.saturating_add(bytes);
    }

    fn next_item(&mut self) {
        self.current().item_bytes = 0;
    }

    fn enter(&mut self) {
        let added_bytes = self.current().bytes().saturating_add(NESTING_STACK_BYTES);
        self.enclosing_bytes = self.enclosing_bytes.saturating_add(added_bytes);
        self.open.push(Group { added_bytes, ..Group::default() });
    }

    fn leave(&mut self) {
        if self.open.len() > 1 {
            let group = self.open.pop().expect("checked above");
            self.enclosing_bytes -= group.added_bytes;
        }
    }

    fn bytes(&self) -> usize {
        let current = self.open.last().expect("the outermost group stays open");
        self.enclosing_bytes.saturating_add(current.bytes())
    }
}

/// An upper bound on the stack that parsing `sql` and traversing its syntax tree take, from
/// the text alone: at any point, what its enclosing parentheses, subqueries, prefix
/// operators and operator chains cost (a comma list such as VALUES rows or an IN list adds
/// no depth and costs nothing).
fn syntax_stack_bound_bytes(sql: &str) -> usize {
    let mut groups = Groups { open: vec![Group::default()], enclosing_bytes: 0 };
    let mut bound = 0;
    // Whether the last token ends an operand (an operator after it is infix).
    let mut after_operand = false;
    // Whether the last words are UNION, EXCEPT or INTERSECT (and ALL or DISTINCT).
    let mut after_set_operator = false;
    for lexeme in Lexer::new(sql) {
        match lexeme.kind {
            LexemeKind::Quoted => after_operand = true,
            LexemeKind::OpenParen => {
                groups.enter();
                after_operand = false;
            }
            LexemeKind::CloseParen => {
                groups.leave();
                after_operand = true;
            }
            LexemeKind::Comma => {
                groups.next_item();
                after_operand = false;
            }
            LexemeKind::Operator => {
                groups.add_to_item(if after_operand {
                    CHAIN_STACK_BYTES
                } else {
                    NESTING_STACK_BYTES
                });
                after_operand = false;
            }
            LexemeKind::Word => {
                let word = sql[lexeme.start..lexeme.end].to_ascii_lowercase();
                after_operand = false;
                let set_operand = after_set_operator;
                after_set_operator = matches!(word.as_str(), "union" | "except" | "intersect")
                    || (set_operand && matches!(word.as_str(), "all" | "distinct"));
                if word == "select" {
                    // A UNION branch is a chain link, not a nested subquery.
                    groups.add_to_query(if set_operand {
                        NESTING_STACK_BYTES
                    } else {
                        SUBQUERY_STACK_BYTES
                    });
                } else if matches!(word.as_str(), "union" | "except" | "intersect") {
                    groups.add_to_query(CHAIN_STACK_BYTES);
                } else if PREFIX_WORDS.contains(&word.as_str()) {
                    groups.add_to_item(NESTING_STACK_BYTES);
                } else if CHAIN_WORDS.contains(&word.as_str()) {
                    groups.add_to_item(CHAIN_STACK_BYTES);
                } else {
                    after_operand = true;
                }
            }
            LexemeKind::Comment | LexemeKind::Whitespace | LexemeKind::Other => {}
        }
        bound = bound.max(groups.bytes());
    }
    bound
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAIN: usize = CHAIN_STACK_BYTES;
    const NESTING: usize = NESTING_STACK_BYTES;
    const SELECT: usize = SUBQUERY_STACK_BYTES;

    #[test]
    fn chains_nesting_and_subqueries_cost_and_comma_lists_do_not() {
        assert_eq!(syntax_stack_bound_bytes("SELECT 1"), SELECT);
        assert_eq!(syntax_stack_bound_bytes("SELECT 1+1+1"), SELECT + 2 * CHAIN);
        assert_eq!(syntax_stack_bound_bytes("SELECT ((1))"), SELECT + 2 * NESTING);
        assert_eq!(syntax_stack_bound_bytes("SELECT - - 1"), SELECT + 2 * NESTING);
        assert_eq!(syntax_stack_bound_bytes("SELECT NOT NOT true"), SELECT + 2 * NESTING);
        assert_eq!(syntax_stack_bound_bytes("SELECT a OR (b OR c)"), SELECT + 2 * CHAIN + NESTING);
        assert_eq!(
            syntax_stack_bound_bytes("SELECT (SELECT (SELECT 1))"),
            3 * SELECT + 2 * NESTING
        );
        assert_eq!(
            syntax_stack_bound_bytes("INSERT INTO t VALUES (1, -2), (3, 4), (5, 6)"),
            2 * NESTING
        );
        assert_eq!(syntax_stack_bound_bytes("SELECT 'a+b+c' || \"x+y\" -- + + +"), SELECT + CHAIN);
        assert_eq!(syntax_stack_bound_bytes("SELECT 1 IN (1, 2, 3)"), SELECT + CHAIN + NESTING);
        // Quotes inside skipped text do not hide what follows.
        for hiding in ["E'\\''", "$$'$$", "$x$'$x$", "/* ' /* ' */ */", "'it''s'"] {
            assert_eq!(
                syntax_stack_bound_bytes(&format!("SELECT {hiding}, 1+1+1")),
                SELECT + 2 * CHAIN,
                "{hiding}"
            );
        }
        assert_eq!(syntax_stack_bound_bytes("SELECT $1 + $2"), SELECT + CHAIN);
        // List items are siblings; a query's set operations span its lists' commas.
        assert_eq!(
            syntax_stack_bound_bytes("SELECT 1 IN (-1, -2, -3)"),
            SELECT + CHAIN + 2 * NESTING
        );
        assert_eq!(
            syntax_stack_bound_bytes("SELECT 1, 2 UNION SELECT 3, 4 UNION SELECT 5, 6"),
            SELECT + 2 * CHAIN + 2 * NESTING
        );
        assert_eq!(
            syntax_stack_bound_bytes("SELECT 1 UNION ALL SELECT 2 UNION SELECT 3"),
            SELECT + 2 * CHAIN + 2 * NESTING
        );
    }
}
