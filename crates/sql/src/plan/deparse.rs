//! A bound expression printed back as SQL text the way PostgreSQL's `ruleutils.c` prints a
//! stored expression (`pg_get_constraintdef`, `pg_get_expr`, `information_schema`): every
//! operator in parentheses, constants with their type (`'a'::text`, `'2020-01-01'::date`),
//! casts as `(column)::type`, IN lists as `= ANY (ARRAY[...])`. The pretty form
//! (`pg_get_constraintdef(oid, true)`, psql's `\d`) drops the parentheses precedence makes
//! unneeded, as PostgreSQL's PRETTYFLAG_PAREN does.

use super::{ArithmeticOp, CompareOp, Expr};
use crate::types::{Datum, SqlType};

/// `expr` as PostgreSQL prints it; `columns` names the row's columns (`Expr::Column`) and
/// `types` gives their types.
pub(crate) fn deparse(expr: &Expr, columns: &[String], types: &[SqlType], pretty: bool) -> String {
    let printer = Printer { columns, types, pretty };
    printer.expr(expr, None)
}

/// The kind of the node an expression sits under, for pretty printing's parentheses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parent {
    /// AND, OR or NOT: a comparison, IS test or call under it needs none.
    And,
    Or,
    Not,
    /// A binary operator: `Some(priority)` for `+ -` (1) and `* / %` (2), None for others.
    Operator {
        priority: Option<u8>,
        left: bool,
    },
    /// A function's argument, a CASE branch, a list item: never parenthesized.
    Argument,
}

struct Printer<'a> {
    columns: &'a [String],
    types: &'a [SqlType],
    pretty: bool,
}

impl Printer<'_> {
    fn expr(&self, expr: &Expr, parent: Option<Parent>) -> String {
        match expr {
            Expr::Column(index) => self.column(*index),
            Expr::Outer { index, .. } => format!("outer.{index}"),
            Expr::Literal(datum) => constant(datum, None),
            Expr::Parameter(index) => format!("${}", index + 1),
            Expr::Arithmetic { op, left, right, .. } => {
                let (symbol, priority) = arithmetic_symbol(*op);
                self.binary(symbol, priority, left, right, parent)
            }
            Expr::Negate { expr, .. } => {
                let inner = self.expr(expr, Some(Parent::Operator { priority: None, left: false }));
                self.wrap(format!("- {inner}"), self.operator_is_simple(None, parent))
            }
            Expr::Compare { op, left, right, .. } => {
                self.binary(CompareOp::symbol(*op), None, left, right, parent)
            }
            Expr::Concat(left, right) => self.binary("||", None, left, right, parent),
            Expr::And(..) => self.boolean(expr, "AND", Parent::And, parent),
            Expr::Or(..) => self.boolean(expr, "OR", Parent::Or, parent),
            Expr::Not(inner) => {
                let text = format!("NOT {}", self.expr(inner, Some(Parent::Not)));
                self.wrap(text, matches!(parent, Some(Parent::And | Parent::Or | Parent::Argument)))
            }
            Expr::IsNull { expr, negated } => {
                let test = if *negated { "IS NOT NULL" } else { "IS NULL" };
                self.test(expr, test, parent)
            }
            Expr::IsBool { expr, value, negated } => {
                let test = match (*value, *negated) {
                    (true, false) => "IS TRUE",
                    (true, true) => "IS NOT TRUE",
                    (false, false) => "IS FALSE",
                    (false, true) => "IS NOT FALSE",
                };
                self.test(expr, test, parent)
            }
            Expr::IsDistinct { left, right, negated } => {
                let operator = if *negated { "IS NOT DISTINCT FROM" } else { "IS DISTINCT FROM" };
                self.binary(operator, None, left, right, parent)
            }
            Expr::Cast { expr, to, .. } => self.cast(expr, to),
            Expr::Case { operand, branches, otherwise } => {
                self.case(operand.as_deref(), branches, otherwise.as_deref())
            }
            Expr::InList { expr, list, negated } => self.in_list(expr, list, *negated, parent),
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                let operator = match (*negated, *case_insensitive) {
                    (false, false) => "~~",
                    (true, false) => "!~~",
                    (false, true) => "~~*",
                    (true, true) => "!~~*",
                };
                self.binary(operator, None, expr, pattern, parent)
            }
            Expr::Function(call) if json_operator(call.function.names[0]).is_some() => {
                let operator = json_operator(call.function.names[0]).unwrap_or_default();
                self.binary(operator, None, &call.args[0], &call.args[1], parent)
            }
            Expr::Function(call) => {
                let arguments: Vec<String> = call
                    .args
                    .iter()
                    .map(|argument| self.expr(argument, Some(Parent::Argument)))
                    .collect();
                format!("{}({})", call.function.names[0], arguments.join(", "))
            }
            Expr::InSubquery { .. }
            | Expr::Exists { .. }
            | Expr::ScalarSubquery { .. }
            | Expr::ArraySubquery { .. } => "(SubPlan)".to_string(),
            Expr::MakeArray(elements) => {
                let items: Vec<String> =
                    elements.iter().map(|item| self.expr(item, Some(Parent::Argument))).collect();
                format!("ARRAY[{}]", items.join(", "))
            }
            Expr::Subscript { array, lower, upper, slice } => {
                let bound = |bound: &Option<Box<Expr>>| {
                    bound
                        .as_ref()
                        .map_or(String::new(), |bound| self.expr(bound, Some(Parent::Argument)))
                };
                let inner = self.expr(array, Some(Parent::Operator { priority: None, left: true }));
                if *slice {
                    format!("{inner}[{}:{}]", bound(lower), bound(upper))
                } else {
                    format!("{inner}[{}]", bound(lower))
                }
            }
            Expr::AnyAll { op, left, array, all } => {
                let left = self.expr(left, Some(Parent::Operator { priority: None, left: true }));
                let array = self.expr(array, Some(Parent::Argument));
                let quantifier = if *all { "ALL" } else { "ANY" };
                let text = format!("{left} {} {quantifier} ({array})", CompareOp::symbol(*op));
                self.wrap(text, self.operator_is_simple(None, parent))
            }
        }
    }

    fn column(&self, index: usize) -> String {
        match self.columns.get(index) {
            Some(name) => quote_identifier(name),
            None => format!("column{}", index + 1),
        }
    }

    /// `(text)` unless pretty printing finds the parentheses unneeded (`simple`).
    fn wrap(&self, text: String, simple: bool) -> String {
        if self.pretty && simple {
            text
        } else {
            format!("({text})")
        }
    }

    /// Whether a binary operator of `priority` needs no parentheses under `parent` in the
    /// pretty form (PostgreSQL's isSimpleNode for an OpExpr).
    fn operator_is_simple(&self, priority: Option<u8>, parent: Option<Parent>) -> bool {
        match parent {
            None | Some(Parent::And | Parent::Or | Parent::Not | Parent::Argument) => true,
            Some(Parent::Operator { priority: parent_priority, left }) => {
                match (priority, parent_priority) {
                    (Some(own), Some(parent_priority)) => {
                        own > parent_priority || (own == parent_priority && left)
                    }
                    _ => false,
                }
            }
        }
    }

    fn binary(
        &self,
        operator: &str,
        priority: Option<u8>,
        left: &Expr,
        right: &Expr,
        parent: Option<Parent>,
    ) -> String {
        let left_text = self.operand(left, right, Parent::Operator { priority, left: true });
        let right_text = self.operand(right, left, Parent::Operator { priority, left: false });
        self.wrap(
            format!("{left_text} {operator} {right_text}"),
            self.operator_is_simple(priority, parent),
        )
    }

    /// One operand of a binary operator, with the casts PostgreSQL's parser adds: an integer
    /// constant beside a numeric or floating point operand (`(0)::numeric`, pretty
    /// `0::numeric`), a varchar operand to text (`(code)::text`).
    fn operand(&self, expr: &Expr, other: &Expr, parent: Parent) -> String {
        if let Expr::Literal(datum @ Datum::Int(_)) = expr {
            if let Some(to) = self.static_type(other).filter(is_inexact) {
                // The cast is to the type without its typmod: `numeric`, not `numeric(10,2)`.
                let to =
                    if matches!(to, SqlType::Numeric { .. }) { SqlType::numeric() } else { to };
                let inner = constant(datum, None);
                return if self.pretty {
                    format!("{inner}::{}", to.display_name())
                } else {
                    format!("({inner})::{}", to.display_name())
                };
            }
        }
        // varchar has no operators of its own: PostgreSQL's parser casts it to text.
        let varchar = matches!(self.static_type(expr), Some(SqlType::Varchar(_)));
        if varchar && !matches!(expr, Expr::Cast { .. }) {
            return self.cast(expr, &SqlType::Text);
        }
        self.expr(expr, Some(parent))
    }

    /// The type of an expression where the printer can tell it without the binder.
    fn static_type(&self, expr: &Expr) -> Option<SqlType> {
        match expr {
            Expr::Column(index) => self.types.get(*index).cloned(),
            Expr::Cast { to, .. } => Some(to.clone()),
            Expr::Arithmetic { ty, .. } => Some(ty.clone()),
            Expr::Negate { expr, .. } => self.static_type(expr),
            Expr::Literal(Datum::Numeric(_)) => Some(SqlType::numeric()),
            Expr::Literal(Datum::Float(_)) => Some(SqlType::Float8),
            _ => None,
        }
    }

    /// An AND or OR chain, flattened as PostgreSQL's parser makes it one n-ary node.
    fn boolean(&self, expr: &Expr, word: &str, own: Parent, parent: Option<Parent>) -> String {
        let mut operands = Vec::new();
        flatten(expr, own, &mut operands);
        let parts: Vec<String> =
            operands.into_iter().map(|operand| self.expr(operand, Some(own))).collect();
        let simple = matches!(
            (own, parent),
            (_, None | Some(Parent::Argument))
                | (Parent::And, Some(Parent::And | Parent::Or))
                | (Parent::Or, Some(Parent::Or))
        );
        self.wrap(parts.join(&format!(" {word} ")), simple)
    }

    fn test(&self, expr: &Expr, test: &str, parent: Option<Parent>) -> String {
        let inner = self.expr(expr, Some(Parent::Operator { priority: None, left: true }));
        let simple = matches!(parent, None | Some(Parent::And | Parent::Or | Parent::Argument));
        self.wrap(format!("{inner} {test}"), simple)
    }

    /// A cast: a constant as `'text'::type`, anything else as `(expr)::type` (`expr::type`
    /// when pretty).
    fn cast(&self, expr: &Expr, to: &SqlType) -> String {
        if let Expr::Literal(datum) = expr {
            return constant(datum, Some(to));
        }
        let inner = self.expr(expr, Some(Parent::Operator { priority: None, left: true }));
        if self.pretty {
            format!("{inner}::{}", to.display_name())
        } else {
            format!("({inner})::{}", to.display_name())
        }
    }

    fn case(
        &self,
        operand: Option<&Expr>,
        branches: &[(Expr, Expr)],
        otherwise: Option<&Expr>,
    ) -> String {
        let mut text = "CASE".to_string();
        if let Some(operand) = operand {
            text.push(' ');
            text.push_str(&self.expr(operand, Some(Parent::Argument)));
        }
        for (condition, result) in branches {
            text.push_str(&format!(
                " WHEN {} THEN {}",
                self.expr(condition, Some(Parent::Argument)),
                self.expr(result, Some(Parent::Argument))
            ));
        }
        if let Some(otherwise) = otherwise {
            text.push_str(&format!(" ELSE {}", self.expr(otherwise, Some(Parent::Argument))));
        }
        text.push_str(" END");
        text
    }

    /// `x IN (a, b)` as PostgreSQL stores it: `x = ANY (ARRAY[a, b])` (NOT IN: `<> ALL`).
    fn in_list(&self, expr: &Expr, list: &[Expr], negated: bool, parent: Option<Parent>) -> String {
        let left = self.expr(expr, Some(Parent::Operator { priority: None, left: true }));
        let operator = if negated { "<> ALL" } else { "= ANY" };
        // A varchar column compared with strings: PostgreSQL types the list as varchar and
        // casts the array to text[] for text's operator.
        let varchar =
            matches!(expr, Expr::Cast { from: SqlType::Varchar(_), to: SqlType::Text, .. })
                && list.iter().all(|item| matches!(item, Expr::Literal(Datum::Text(_))));
        let array = if varchar {
            let items: Vec<String> = list
                .iter()
                .map(|item| match item {
                    Expr::Literal(datum) => constant(datum, Some(&SqlType::Varchar(None))),
                    other => self.expr(other, Some(Parent::Argument)),
                })
                .collect();
            let array = format!("ARRAY[{}]", items.join(", "));
            if self.pretty {
                format!("{array}::text[]")
            } else {
                format!("({array})::text[]")
            }
        } else {
            let items: Vec<String> =
                list.iter().map(|item| self.expr(item, Some(Parent::Argument))).collect();
            format!("ARRAY[{}]", items.join(", "))
        };
        let text = format!("{left} {operator} ({array})");
        self.wrap(text, self.operator_is_simple(None, parent))
    }
}

/// Numeric and floating point types: an integer constant beside one is cast to it.
fn is_inexact(ty: &SqlType) -> bool {
    matches!(ty, SqlType::Numeric { .. } | SqlType::Float4 | SqlType::Float8)
}

fn flatten<'e>(expr: &'e Expr, kind: Parent, out: &mut Vec<&'e Expr>) {
    match (expr, kind) {
        (Expr::And(left, right), Parent::And) | (Expr::Or(left, right), Parent::Or) => {
            flatten(left, kind, out);
            flatten(right, kind, out);
        }
        _ => out.push(expr),
    }
}

fn arithmetic_symbol(op: ArithmeticOp) -> (&'static str, Option<u8>) {
    match op {
        ArithmeticOp::Add => ("+", Some(1)),
        ArithmeticOp::Subtract => ("-", Some(1)),
        ArithmeticOp::Multiply => ("*", Some(2)),
        ArithmeticOp::Divide => ("/", Some(2)),
        ArithmeticOp::Modulo => ("%", Some(2)),
        ArithmeticOp::Power => ("^", None),
    }
}

/// A constant as PostgreSQL's get_const_expr prints it: integers and numerics with a
/// decimal point bare, booleans as `true`/`false`, anything else quoted with its type.
fn constant(datum: &Datum, ty: Option<&SqlType>) -> String {
    let ty = match (datum, ty) {
        (_, Some(ty)) if *ty != SqlType::Unknown => ty.clone(),
        (Datum::Int(value), _) if i32::try_from(*value).is_ok() => SqlType::Int4,
        (Datum::Int(_), _) => SqlType::Int8,
        (Datum::Float(_), _) => SqlType::Float8,
        (Datum::Numeric(_), _) => SqlType::numeric(),
        (Datum::Bool(_), _) => SqlType::Bool,
        (Datum::Bytes(_), _) => SqlType::Bytea,
        (Datum::Date(_), _) => SqlType::Date,
        (Datum::Timestamp(_), _) => SqlType::Timestamp,
        (Datum::TimestampTz(_), _) => SqlType::TimestampTz,
        (Datum::Vector(_), _) => SqlType::Vector(None),
        (Datum::HalfVec(_), _) => SqlType::HalfVec(None),
        (Datum::SparseVec(_), _) => SqlType::SparseVec(None),
        // Elements print by their own values; text[] only decides the quoting.
        (Datum::Array(_), _) => SqlType::Array(Box::new(SqlType::Text)),
        (Datum::Object(_), _) => SqlType::Oid,
        (Datum::Jsonb(_), _) => SqlType::Jsonb,
        (Datum::Uuid(_), _) => SqlType::Uuid,
        (Datum::Bit(_), _) => SqlType::Bit(None),
        (Datum::Interval(_), _) => SqlType::Interval,
        (Datum::Time(_), _) => SqlType::Time,
        (Datum::Text(_) | Datum::Null, _) => SqlType::Text,
    };
    let Some(text) = datum.to_text(&ty) else {
        return if ty == SqlType::Text {
            "NULL".to_string()
        } else {
            format!("NULL::{}", ty.display_name())
        };
    };
    match ty {
        SqlType::Int4 if !text.starts_with('-') => text,
        SqlType::Numeric { precision: None, .. }
            if text.starts_with(|c: char| c.is_ascii_digit()) && text.contains('.') =>
        {
            text
        }
        SqlType::Bool => if text == "t" { "true" } else { "false" }.to_string(),
        _ => format!("{}::{}", quote_literal(&text), ty.display_name()),
    }
}

fn quote_literal(text: &str) -> String {
    let escaped = text.replace('\'', "''");
    if text.contains('\\') {
        format!("E'{}'", escaped.replace('\\', "\\\\"))
    } else {
        format!("'{escaped}'")
    }
}

pub(crate) use crate::identifiers::quote_identifier;

/// The operator a json operator's function is written as (`json_get` is `->`).
fn json_operator(function: &str) -> Option<&'static str> {
    Some(match function {
        "json_get" => "->",
        "json_get_text" => "->>",
        "jsonb_contains" => "@>",
        "jsonb_contained" => "<@",
        "jsonb_exists" => "?",
        "jsonb_concat" => "||",
        _ => return None,
    })
}
