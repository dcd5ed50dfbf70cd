//! jsonpath (PostgreSQL 15, docs 9.16.2): the parsed path (`parse.rs`, PostgreSQL's
//! grammar and syntax errors), its text output as PostgreSQL's jsonpath_out normalises it
//! (this file), and its evaluation over jsonb (`eval.rs`, jsonpath_exec.c's rules for
//! lax and strict mode). A jsonpath value is stored as its normalised text and parsed
//! again where it is used.
//!
//! Not built, and 0A000 where used: the `.datetime()` method (and so the `_tz`
//! functions' difference) and `.keyvalue()` below the root (its `id` is a byte offset in
//! PostgreSQL's binary jsonb).

mod eval;
mod parse;

pub use eval::{evaluate, Outcome};
pub use parse::parse_jsonpath;

use std::fmt::Write as _;

use super::escape_json;

/// A parsed jsonpath: its mode and expression.
#[derive(Clone, Debug)]
pub struct JsonPath {
    pub lax: bool,
    pub expression: Item,
}

/// Comparison operators of predicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

/// Binary arithmetic operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arithmetic {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
}

/// Item methods (`.type()`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Type,
    Size,
    Double,
    Ceiling,
    Floor,
    Abs,
    KeyValue,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Type => "type",
            Method::Size => "size",
            Method::Double => "double",
            Method::Ceiling => "ceiling",
            Method::Floor => "floor",
            Method::Abs => "abs",
            Method::KeyValue => "keyvalue",
        }
    }
}

/// An array subscript: one index or a range `from to to`.
#[derive(Clone, Debug)]
pub struct Subscript {
    pub from: Item,
    pub to: Option<Item>,
}

/// One step applied to what the item before it yields.
#[derive(Clone, Debug)]
pub enum Step {
    Key(String),
    AnyKey,
    AnyArray,
    Subscripts(Vec<Subscript>),
    /// `.**{first to last}` (u32::MAX is `last`).
    Any {
        first: u32,
        last: u32,
    },
    Filter(Box<Item>),
    Method(Method),
    /// `.datetime([template])`: parsed and printed, 0A000 when evaluated.
    Datetime(Option<String>),
}

/// A jsonpath expression (PostgreSQL's JsonPathItem chain: a primary and its steps).
#[derive(Clone, Debug)]
pub enum Item {
    Root,
    Current,
    Last,
    Variable(String),
    Null,
    Bool(bool),
    /// A number as numeric prints it.
    Number(String),
    String(String),
    /// A primary followed by steps.
    Path(Box<Item>, Vec<Step>),
    Unary {
        negate: bool,
        operand: Box<Item>,
    },
    Binary {
        op: Arithmetic,
        left: Box<Item>,
        right: Box<Item>,
    },
    Compare {
        op: Comparison,
        left: Box<Item>,
        right: Box<Item>,
    },
    And(Box<Item>, Box<Item>),
    Or(Box<Item>, Box<Item>),
    Not(Box<Item>),
    IsUnknown(Box<Item>),
    Exists(Box<Item>),
    StartsWith(Box<Item>, Box<Item>),
    LikeRegex {
        operand: Box<Item>,
        pattern: String,
        flags: String,
    },
}

impl Item {
    /// Whether the item is a predicate (a boolean expression).
    pub fn is_predicate(&self) -> bool {
        matches!(
            self,
            Item::Compare { .. }
                | Item::And(..)
                | Item::Or(..)
                | Item::Not(_)
                | Item::IsUnknown(_)
                | Item::Exists(_)
                | Item::StartsWith(..)
                | Item::LikeRegex { .. }
        )
    }

    /// jsonpath_out's operationPriority.
    fn priority(&self) -> u8 {
        match self {
            Item::Or(..) => 0,
            Item::And(..) => 1,
            Item::Compare { .. } | Item::StartsWith(..) => 2,
            Item::Binary { op: Arithmetic::Add | Arithmetic::Subtract, .. } => 3,
            Item::Binary { .. } => 4,
            Item::Unary { .. } => 5,
            _ => 6,
        }
    }
}

impl JsonPath {
    /// jsonpath_out: `strict ` when strict, then the expression.
    pub fn output(&self) -> String {
        let mut out = String::new();
        if !self.lax {
            out.push_str("strict ");
        }
        write_item(&self.expression, &mut out, true);
        out
    }
}

fn comparison_name(op: Comparison) -> &'static str {
    match op {
        Comparison::Equal => "==",
        Comparison::NotEqual => "!=",
        Comparison::Less => "<",
        Comparison::LessOrEqual => "<=",
        Comparison::Greater => ">",
        Comparison::GreaterOrEqual => ">=",
    }
}

pub(crate) fn arithmetic_name(op: Arithmetic) -> &'static str {
    match op {
        Arithmetic::Add => "+",
        Arithmetic::Subtract => "-",
        Arithmetic::Multiply => "*",
        Arithmetic::Divide => "/",
        Arithmetic::Modulo => "%",
    }
}

/// An operand of `parent`, in parentheses when its priority is not above the parent's.
fn write_operand(operand: &Item, parent: &Item, out: &mut String) {
    write_item(operand, out, operand.priority() <= parent.priority());
}

fn write_binary(
    item: &Item,
    left: &Item,
    name: &str,
    right: &Item,
    out: &mut String,
    brackets: bool,
) {
    if brackets {
        out.push('(');
    }
    write_operand(left, item, out);
    let _ = write!(out, " {name} ");
    write_operand(right, item, out);
    if brackets {
        out.push(')');
    }
}

/// printJsonPathItem: `brackets` when the caller asks for parentheses around operators.
fn write_item(item: &Item, out: &mut String, brackets: bool) {
    match item {
        Item::Root => out.push('$'),
        Item::Current => out.push('@'),
        Item::Last => out.push_str("last"),
        Item::Variable(name) => {
            out.push('$');
            escape_json(name, out);
        }
        Item::Null => out.push_str("null"),
        Item::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Item::Number(text) => out.push_str(text),
        Item::String(text) => escape_json(text, out),
        Item::Path(primary, steps) => {
            write_item(primary, out, true);
            steps.iter().for_each(|step| write_step(step, out));
        }
        Item::Unary { negate, operand } => {
            if brackets {
                out.push('(');
            }
            out.push(if *negate { '-' } else { '+' });
            write_operand(operand, item, out);
            if brackets {
                out.push(')');
            }
        }
        Item::Binary { op, left, right } => {
            write_binary(item, left, arithmetic_name(*op), right, out, brackets)
        }
        Item::Compare { op, left, right } => {
            write_binary(item, left, comparison_name(*op), right, out, brackets)
        }
        Item::And(left, right) => write_binary(item, left, "&&", right, out, brackets),
        Item::Or(left, right) => write_binary(item, left, "||", right, out, brackets),
        Item::StartsWith(left, right) => {
            write_binary(item, left, "starts with", right, out, brackets)
        }
        Item::Not(operand) => {
            out.push_str("!(");
            write_item(operand, out, false);
            out.push(')');
        }
        Item::IsUnknown(operand) => {
            out.push('(');
            write_item(operand, out, false);
            out.push_str(") is unknown");
        }
        Item::Exists(operand) => {
            out.push_str("exists (");
            write_item(operand, out, false);
            out.push(')');
        }
        Item::LikeRegex { operand, pattern, flags } => {
            if brackets {
                out.push('(');
            }
            write_operand(operand, item, out);
            out.push_str(" like_regex ");
            escape_json(pattern, out);
            if !flags.is_empty() {
                let _ = write!(out, " flag \"{flags}\"");
            }
            if brackets {
                out.push(')');
            }
        }
    }
}

fn write_step(step: &Step, out: &mut String) {
    match step {
        Step::Key(name) => {
            out.push('.');
            escape_json(name, out);
        }
        Step::AnyKey => out.push_str(".*"),
        Step::AnyArray => out.push_str("[*]"),
        Step::Subscripts(subscripts) => {
            out.push('[');
            for (index, subscript) in subscripts.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_item(&subscript.from, out, false);
                if let Some(to) = &subscript.to {
                    out.push_str(" to ");
                    write_item(to, out, false);
                }
            }
            out.push(']');
        }
        Step::Any { first, last } => write_any(*first, *last, out),
        Step::Filter(predicate) => {
            out.push_str("?(");
            write_item(predicate, out, false);
            out.push(')');
        }
        Step::Method(method) => {
            let _ = write!(out, ".{}()", method.name());
        }
        Step::Datetime(template) => {
            out.push_str(".datetime(");
            if let Some(template) = template {
                escape_json(template, out);
            }
            out.push(')');
        }
    }
}

fn write_any(first: u32, last: u32, out: &mut String) {
    let level = |level: u32| if level == u32::MAX { "last".to_string() } else { level.to_string() };
    if first == 0 && last == u32::MAX {
        out.push_str(".**");
    } else if first == last {
        let _ = write!(out, ".**{{{}}}", level(first));
    } else {
        let _ = write!(out, ".**{{{} to {}}}", level(first), level(last));
    }
}
