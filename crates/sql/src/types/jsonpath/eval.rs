//! jsonpath evaluation as PostgreSQL 15's jsonpath_exec.c does it: lax mode unwraps arrays
//! for member accessors and wraps scalars for array accessors and ignores structural
//! errors; strict mode raises them; predicates yield true, false or unknown; `silent`
//! turns the errors it may suppress into an empty result.

use std::cmp::Ordering;

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};

use super::{arithmetic_name, Arithmetic, Comparison, Item, JsonPath, Method, Step};
use crate::error::{Result, SqlError};
use crate::types::{arithmetic, parse_numeric, ArithmeticOp, Datum, Jsonb, SqlType};

/// What an evaluation found: the items (when asked for) or only whether there are any.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Found,
    NotFound,
    /// An error the caller asked to suppress (`silent`).
    Suppressed,
}

/// A failure: one PostgreSQL suppresses when errors are not thrown (jperError), or one it
/// always raises.
enum Failure {
    Suppressed,
    Raised(SqlError),
}

impl From<SqlError> for Failure {
    fn from(error: SqlError) -> Failure {
        Failure::Raised(error)
    }
}

type Exec = std::result::Result<bool, Failure>;

/// A predicate's value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Truth {
    True,
    False,
    Unknown,
}

struct Context<'a> {
    root: &'a Jsonb,
    vars: Option<&'a Jsonb>,
    lax: bool,
    ignore_structural: bool,
    throw: bool,
    innermost_array_size: i64,
}

/// The items a path yields, or None when only existence is asked.
type Found<'f> = Option<&'f mut Vec<Jsonb>>;

/// Evaluates `path` over `target` (executeJsonPath). `found` collects the items; without
/// it the evaluation stops at the first item where PostgreSQL's does.
pub fn evaluate(
    path: &JsonPath,
    target: &Jsonb,
    vars: Option<&Jsonb>,
    throw: bool,
    found: Option<&mut Vec<Jsonb>>,
) -> Result<Outcome> {
    if let Some(vars) = vars {
        if !matches!(vars, Jsonb::Object(_)) {
            return Err(SqlError::new("22023", "\"vars\" argument is not an object"));
        }
    }
    let mut context = Context {
        root: target,
        vars,
        lax: path.lax,
        ignore_structural: path.lax,
        throw,
        innermost_array_size: -1,
    };
    let result = match found {
        // Strict mode needs every item to know there was no error.
        None if !path.lax => {
            let mut all = Vec::new();
            context
                .item(&path.expression, &[], target, target, Some(&mut all), path.lax)
                .map(|_| !all.is_empty())
        }
        found => context.item(&path.expression, &[], target, target, found, path.lax),
    };
    match result {
        Ok(true) => Ok(Outcome::Found),
        Ok(false) => Ok(Outcome::NotFound),
        Err(Failure::Suppressed) => Ok(Outcome::Suppressed),
        Err(Failure::Raised(error)) => Err(error),
    }
}

/// A jsonpath number literal as numeric prints it.
pub fn number_literal(text: &str) -> Result<String> {
    let text = if text.starts_with('.') { format!("0{text}") } else { text.to_string() };
    let text = text.strip_suffix('.').map_or(text.clone(), str::to_string);
    Ok(crate::types::numeric_text(&text))
}

/// The LIKE_REGEX pattern is checked when the path is read, as PostgreSQL compiles it.
pub fn check_regex(pattern: &str, flags: &str) -> Result<()> {
    crate::types::regex_is_match("", pattern, &regex_flags(flags)).map(|_| ())
}

/// jspConvertRegexFlags as tierdb's regex flags: `.` stops at a newline unless `s`, `^`
/// and `$` match at line ends with `m`, `q` a literal.
fn regex_flags(flags: &str) -> String {
    let mut out = String::new();
    if flags.contains('i') {
        out.push('i');
    }
    out.push(match (flags.contains('s'), flags.contains('m')) {
        (false, false) => 'p',
        (true, false) => 's',
        (false, true) => 'n',
        (true, true) => 'w',
    });
    if flags.contains('q') {
        out.push('q');
    }
    out
}

fn error(sqlstate: &'static str, message: impl Into<String>) -> SqlError {
    SqlError::new(sqlstate, message)
}

fn decimal(text: &str) -> Result<Decimal> {
    parse_numeric(text)
}

fn number(value: Decimal) -> Jsonb {
    Jsonb::Number(crate::types::numeric_text(&value.to_string()))
}

impl Context<'_> {
    /// RETURN_ERROR: raised when errors are thrown, else suppressed.
    fn fail(&self, error: SqlError) -> Failure {
        if self.throw {
            Failure::Raised(error)
        } else {
            Failure::Suppressed
        }
    }

    /// Appends `value` or runs the remaining steps on it (executeNextItem).
    fn next(&mut self, next: &[Step], value: &Jsonb, current: &Jsonb, found: Found<'_>) -> Exec {
        match next.split_first() {
            None => {
                if let Some(found) = found {
                    found.push(value.clone());
                }
                Ok(true)
            }
            Some((step, rest)) => self.step(step, rest, value, current, found, self.lax),
        }
    }

    /// Evaluates `item` on `value`, then `next` on each item it yields.
    fn item(
        &mut self,
        item: &Item,
        next: &[Step],
        value: &Jsonb,
        current: &Jsonb,
        found: Found<'_>,
        unwrap: bool,
    ) -> Exec {
        let _ = unwrap;
        crate::depth::check_stack_depth()?;
        match item {
            Item::Root => {
                let root = self.root;
                self.next(next, root, current, found)
            }
            Item::Current => self.next(next, current, current, found),
            Item::Null => self.next(next, &Jsonb::Null, current, found),
            Item::Bool(flag) => self.next(next, &Jsonb::Bool(*flag), current, found),
            Item::Number(text) => self.next(next, &Jsonb::Number(text.clone()), current, found),
            Item::String(text) => self.next(next, &Jsonb::String(text.clone()), current, found),
            Item::Variable(name) => {
                let value = self.variable(name)?;
                self.next(next, &value, current, found)
            }
            Item::Last => {
                let last = self.innermost_array_size - 1;
                self.next(next, &number(Decimal::from(last)), current, found)
            }
            Item::Path(primary, steps) => {
                let chained: Vec<Step> = steps.iter().chain(next).cloned().collect();
                self.item(primary, &chained, value, current, found, unwrap)
            }
            Item::Binary { op, left, right } => {
                self.binary(*op, left, right, next, value, current, found)
            }
            Item::Unary { negate, operand } => {
                self.unary(*negate, operand, next, value, current, found)
            }
            predicate => {
                let truth = self.truth(predicate, value, current)?;
                if next.is_empty() && found.is_none() {
                    return Ok(true);
                }
                let result = match truth {
                    Truth::True => Jsonb::Bool(true),
                    Truth::False => Jsonb::Bool(false),
                    Truth::Unknown => Jsonb::Null,
                };
                self.next(next, &result, current, found)
            }
        }
    }

    fn variable(&self, name: &str) -> std::result::Result<Jsonb, Failure> {
        let value = match self.vars {
            Some(Jsonb::Object(pairs)) => {
                pairs.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone())
            }
            _ => None,
        };
        value.ok_or_else(|| {
            Failure::Raised(error("42704", format!("could not find jsonpath variable \"{name}\"")))
        })
    }

    /// The items of `item` on `value`; arrays among them unwrapped in lax mode when
    /// `unwrap` (executeItemOptUnwrapResult).
    fn sequence(
        &mut self,
        item: &Item,
        value: &Jsonb,
        current: &Jsonb,
        unwrap: bool,
    ) -> std::result::Result<Vec<Jsonb>, Failure> {
        let mut items = Vec::new();
        self.item(item, &[], value, current, Some(&mut items), self.lax)?;
        if !(unwrap && self.lax) {
            return Ok(items);
        }
        let mut unwrapped = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Jsonb::Array(elements) => unwrapped.extend(elements),
                other => unwrapped.push(other),
            }
        }
        Ok(unwrapped)
    }

    /// The same, with errors never raised (executeItemOptUnwrapResultNoThrow).
    fn sequence_quietly(
        &mut self,
        item: &Item,
        value: &Jsonb,
        current: &Jsonb,
        unwrap: bool,
    ) -> std::result::Result<Option<Vec<Jsonb>>, Failure> {
        let throw = std::mem::replace(&mut self.throw, false);
        let result = self.sequence(item, value, current, unwrap);
        self.throw = throw;
        match result {
            Ok(items) => Ok(Some(items)),
            Err(Failure::Suppressed) => Ok(None),
            Err(raised) => Err(raised),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn binary(
        &mut self,
        op: Arithmetic,
        left: &Item,
        right: &Item,
        next: &[Step],
        value: &Jsonb,
        current: &Jsonb,
        found: Found<'_>,
    ) -> Exec {
        let left_items = self.sequence(left, value, current, true)?;
        let right_items = self.sequence(right, value, current, true)?;
        let name = arithmetic_name(op);
        let single = |items: &[Jsonb]| match items {
            [Jsonb::Number(text)] => Some(text.clone()),
            _ => None,
        };
        let Some(left_number) = single(&left_items) else {
            return Err(self.fail(error(
                "22038",
                format!("left operand of jsonpath operator {name} is not a single numeric value"),
            )));
        };
        let Some(right_number) = single(&right_items) else {
            return Err(self.fail(error(
                "22038",
                format!("right operand of jsonpath operator {name} is not a single numeric value"),
            )));
        };
        let op = match op {
            Arithmetic::Add => ArithmeticOp::Add,
            Arithmetic::Subtract => ArithmeticOp::Subtract,
            Arithmetic::Multiply => ArithmeticOp::Multiply,
            Arithmetic::Divide => ArithmeticOp::Divide,
            Arithmetic::Modulo => ArithmeticOp::Modulo,
        };
        let numbers = (decimal(&left_number), decimal(&right_number));
        let (Ok(left_value), Ok(right_value)) = numbers else {
            return Err(Failure::Raised(SqlError::unsupported(
                "jsonpath arithmetic beyond numeric's 28 digits is not supported",
            )));
        };
        let result = arithmetic(
            op,
            &Datum::Numeric(left_value),
            &Datum::Numeric(right_value),
            &SqlType::numeric(),
        );
        let result = match result {
            Ok(Datum::Numeric(result)) => result,
            Ok(_) => {
                return Err(Failure::Raised(SqlError::internal(
                    "numeric arithmetic gives a numeric",
                )))
            }
            // Division by zero is jsonpath's own error (silent mode suppresses it); anything
            // else is numeric's 28-digit range, where PostgreSQL would give a value.
            Err(failure) if failure.sqlstate == "22012" => return Err(self.fail(failure)),
            Err(_) => {
                return Err(Failure::Raised(SqlError::unsupported(
                    "jsonpath arithmetic beyond numeric's 28 digits is not supported",
                )))
            }
        };
        if next.is_empty() && found.is_none() {
            return Ok(true);
        }
        self.next(next, &number(result), current, found)
    }

    fn unary(
        &mut self,
        negate: bool,
        operand: &Item,
        next: &[Step],
        value: &Jsonb,
        current: &Jsonb,
        mut found: Found<'_>,
    ) -> Exec {
        let items = self.sequence(operand, value, current, true)?;
        let mut any = false;
        for item in items {
            let Jsonb::Number(text) = &item else {
                if found.is_none() && next.is_empty() {
                    continue;
                }
                let name = if negate { "-" } else { "+" };
                return Err(self.fail(error(
                    "2203B",
                    format!("operand of unary jsonpath operator {name} is not a numeric value"),
                )));
            };
            if found.is_none() && next.is_empty() {
                return Ok(true);
            }
            let result = if negate { number(-decimal(text)?) } else { item.clone() };
            if self.next(next, &result, current, found.as_deref_mut())? {
                if found.is_none() {
                    return Ok(true);
                }
                any = true;
            }
        }
        Ok(any)
    }

    /// One accessor step on `value` (executeItemOptUnwrapTarget for accessor items).
    fn step(
        &mut self,
        step: &Step,
        next: &[Step],
        value: &Jsonb,
        current: &Jsonb,
        found: Found<'_>,
        unwrap: bool,
    ) -> Exec {
        crate::depth::check_stack_depth()?;
        match step {
            Step::Key(key) => self.key(step, key, next, value, current, found, unwrap),
            Step::AnyKey => match value {
                Jsonb::Object(pairs) => {
                    let values: Vec<&Jsonb> = pairs.iter().map(|(_, value)| value).collect();
                    self.each(&values, next, current, found, self.lax)
                }
                Jsonb::Array(_) if unwrap => self.unwrap_array(step, next, value, current, found),
                _ if self.ignore_structural => Ok(false),
                _ => Err(self.fail(error(
                    "2203C",
                    "jsonpath wildcard member accessor can only be applied to an object",
                ))),
            },
            Step::AnyArray => match value {
                Jsonb::Array(items) => {
                    let items: Vec<&Jsonb> = items.iter().collect();
                    self.each(&items, next, current, found, self.lax)
                }
                _ if self.lax => self.next(next, value, current, found),
                _ if self.ignore_structural => Ok(false),
                _ => Err(self.fail(error(
                    "22039",
                    "jsonpath wildcard array accessor can only be applied to an array",
                ))),
            },
            Step::Subscripts(subscripts) => {
                self.subscripts(subscripts, next, value, current, found)
            }
            Step::Any { first, last } => self.any(*first, *last, next, value, current, found),
            Step::Filter(predicate) => {
                if unwrap && matches!(value, Jsonb::Array(_)) {
                    return self.unwrap_array(step, next, value, current, found);
                }
                if self.truth(predicate, value, value)? != Truth::True {
                    return Ok(false);
                }
                self.next(next, value, current, found)
            }
            Step::Method(method) => self.method(*method, step, next, value, current, found, unwrap),
            Step::Datetime(_) => Err(Failure::Raised(SqlError::unsupported(
                "jsonpath item method .datetime() is not supported",
            ))),
        }
    }

    /// `step` on each element of the array `value` (executeItemUnwrapTargetArray).
    fn unwrap_array(
        &mut self,
        step: &Step,
        next: &[Step],
        value: &Jsonb,
        current: &Jsonb,
        mut found: Found<'_>,
    ) -> Exec {
        let Jsonb::Array(items) = value else { return Ok(false) };
        let mut any = false;
        for item in items {
            if self.step(step, next, item, current, found.as_deref_mut(), false)? {
                any = true;
                if found.is_none() {
                    return Ok(true);
                }
            }
        }
        Ok(any)
    }

    /// `next` on each of `values` (executeAnyItem at one level).
    fn each(
        &mut self,
        values: &[&Jsonb],
        next: &[Step],
        current: &Jsonb,
        mut found: Found<'_>,
        unwrap: bool,
    ) -> Exec {
        let mut any = false;
        for value in values {
            let result = match next.split_first() {
                None => {
                    if let Some(found) = found.as_deref_mut() {
                        found.push((*value).clone());
                    }
                    true
                }
                Some((step, rest)) => {
                    self.step(step, rest, value, current, found.as_deref_mut(), unwrap)?
                }
            };
            if result {
                any = true;
                if found.is_none() {
                    return Ok(true);
                }
            }
        }
        Ok(any)
    }

    #[allow(clippy::too_many_arguments)]
    fn key(
        &mut self,
        step: &Step,
        key: &str,
        next: &[Step],
        value: &Jsonb,
        current: &Jsonb,
        found: Found<'_>,
        unwrap: bool,
    ) -> Exec {
        match value {
            Jsonb::Object(pairs) => match pairs.iter().find(|(own, _)| own == key) {
                Some((_, member)) => self.next(next, member, current, found),
                None if self.ignore_structural => Ok(false),
                None => Err(self
                    .fail(error("2203A", format!("JSON object does not contain key \"{key}\"")))),
            },
            Jsonb::Array(_) if unwrap => self.unwrap_array(step, next, value, current, found),
            _ if self.ignore_structural => Ok(false),
            _ => Err(self
                .fail(error("2203A", "jsonpath member accessor can only be applied to an object"))),
        }
    }

    fn subscripts(
        &mut self,
        subscripts: &[super::Subscript],
        next: &[Step],
        value: &Jsonb,
        current: &Jsonb,
        found: Found<'_>,
    ) -> Exec {
        let items = match value {
            Jsonb::Array(items) => items.iter().collect::<Vec<_>>(),
            _ if self.lax => vec![value],
            _ if self.ignore_structural => return Ok(false),
            _ => {
                return Err(self.fail(error(
                    "22039",
                    "jsonpath array accessor can only be applied to an array",
                )))
            }
        };
        let size = i64::try_from(items.len())
            .map_err(|_| SqlError::internal("an array's size fits i64"))?;
        let saved = std::mem::replace(&mut self.innermost_array_size, size);
        let result = self.each_subscript(subscripts, &items, size, next, value, current, found);
        self.innermost_array_size = saved;
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn each_subscript(
        &mut self,
        subscripts: &[super::Subscript],
        items: &[&Jsonb],
        size: i64,
        next: &[Step],
        value: &Jsonb,
        current: &Jsonb,
        mut found: Found<'_>,
    ) -> Exec {
        let mut any = false;
        for subscript in subscripts {
            let from = self.index(&subscript.from, value, current)?;
            let to = match &subscript.to {
                Some(to) => self.index(to, value, current)?,
                None => from,
            };
            if !self.ignore_structural && (from < 0 || from > to || to >= size) {
                return Err(self.fail(error("22033", "jsonpath array subscript is out of bounds")));
            }
            let (from, to) = (from.max(0), to.min(size - 1));
            let mut index = from;
            while index <= to {
                let item = items[usize::try_from(index)
                    .map_err(|_| SqlError::internal("an index in bounds"))?];
                if self.next(next, item, current, found.as_deref_mut())? {
                    any = true;
                    if found.is_none() {
                        return Ok(true);
                    }
                }
                index += 1;
            }
        }
        Ok(any)
    }

    /// A subscript's value: one number, truncated to an integer (getArrayIndex).
    fn index(
        &mut self,
        item: &Item,
        value: &Jsonb,
        current: &Jsonb,
    ) -> std::result::Result<i64, Failure> {
        let items = self.sequence(item, value, current, false)?;
        let [Jsonb::Number(text)] = items.as_slice() else {
            return Err(
                self.fail(error("22033", "jsonpath array subscript is not a single numeric value"))
            );
        };
        let truncated = decimal(text)?.trunc().to_i32();
        match truncated {
            Some(index) => Ok(i64::from(index)),
            None => {
                Err(self.fail(error("22033", "jsonpath array subscript is out of integer range")))
            }
        }
    }

    /// `.**{first to last}` (executeAnyItem over levels).
    fn any(
        &mut self,
        first: u32,
        last: u32,
        next: &[Step],
        value: &Jsonb,
        current: &Jsonb,
        mut found: Found<'_>,
    ) -> Exec {
        let mut any = false;
        if first == 0 {
            let saved = std::mem::replace(&mut self.ignore_structural, true);
            let result = self.next(next, value, current, found.as_deref_mut());
            self.ignore_structural = saved;
            if result? {
                any = true;
                if found.is_none() {
                    return Ok(true);
                }
            }
        }
        if matches!(value, Jsonb::Array(_) | Jsonb::Object(_)) {
            any |= self.levels(value, 1, first, last, next, current, found)?;
        }
        Ok(any)
    }

    #[allow(clippy::too_many_arguments)]
    fn levels(
        &mut self,
        container: &Jsonb,
        level: u32,
        first: u32,
        last: u32,
        next: &[Step],
        current: &Jsonb,
        mut found: Found<'_>,
    ) -> Exec {
        crate::depth::check_stack_depth()?;
        if level > last {
            return Ok(false);
        }
        let children: Vec<&Jsonb> = match container {
            Jsonb::Array(items) => items.iter().collect(),
            Jsonb::Object(pairs) => pairs.iter().map(|(_, value)| value).collect(),
            _ => Vec::new(),
        };
        let mut any = false;
        for child in children {
            let container_child = matches!(child, Jsonb::Array(_) | Jsonb::Object(_));
            if level >= first || (first == u32::MAX && last == u32::MAX && !container_child) {
                let saved = std::mem::replace(&mut self.ignore_structural, true);
                let result = match next.split_first() {
                    None => {
                        if let Some(found) = found.as_deref_mut() {
                            found.push(child.clone());
                        }
                        Ok(true)
                    }
                    Some((step, rest)) => {
                        self.step(step, rest, child, current, found.as_deref_mut(), self.lax)
                    }
                };
                self.ignore_structural = saved;
                if result? {
                    any = true;
                    if found.is_none() {
                        return Ok(true);
                    }
                }
            }
            if level < last
                && container_child
                && self.levels(
                    child,
                    level + 1,
                    first,
                    last,
                    next,
                    current,
                    found.as_deref_mut(),
                )?
            {
                any = true;
                if found.is_none() {
                    return Ok(true);
                }
            }
        }
        Ok(any)
    }

    #[allow(clippy::too_many_arguments)]
    fn method(
        &mut self,
        method: Method,
        step: &Step,
        next: &[Step],
        value: &Jsonb,
        current: &Jsonb,
        found: Found<'_>,
        unwrap: bool,
    ) -> Exec {
        let name = method.name();
        let result = match (method, value) {
            (Method::Type, value) => Jsonb::String(value.type_name().to_string()),
            (Method::Size, Jsonb::Array(items)) => number(Decimal::from(items.len())),
            (Method::Size, _) if self.lax => number(Decimal::ONE),
            (Method::Size, _) if self.ignore_structural => return Ok(false),
            (Method::Size, _) => {
                return Err(self.fail(error(
                    "22039",
                    "jsonpath item method .size() can only be applied to an array",
                )))
            }
            (_, Jsonb::Array(_)) if unwrap => {
                return self.unwrap_array(step, next, value, current, found)
            }
            (Method::KeyValue, _) => {
                return Err(Failure::Raised(SqlError::unsupported(
                    "jsonpath item method .keyvalue() is not supported",
                )))
            }
            (Method::Double, value) => self.double(value)?,
            (Method::Abs | Method::Floor | Method::Ceiling, Jsonb::Number(text)) => {
                let value = decimal(text)?;
                number(match method {
                    Method::Abs => value.abs(),
                    Method::Floor => {
                        value.round_dp_with_strategy(0, RoundingStrategy::ToNegativeInfinity)
                    }
                    _ => value.round_dp_with_strategy(0, RoundingStrategy::ToPositiveInfinity),
                })
            }
            _ => {
                return Err(self.fail(error(
                    "22036",
                    format!(
                        "jsonpath item method .{name}() can only be applied to a numeric value"
                    ),
                )))
            }
        };
        self.next(next, &result, current, found)
    }

    /// `.double()`: a number unchanged, a string read as double precision.
    fn double(&self, value: &Jsonb) -> std::result::Result<Jsonb, Failure> {
        match value {
            Jsonb::Number(text) => {
                let finite = text.parse::<f64>().is_ok_and(f64::is_finite);
                if !finite {
                    return Err(self.fail(error("22036", "numeric argument of jsonpath item method .double() is out of range for type double precision")));
                }
                Ok(value.clone())
            }
            Jsonb::String(text) => {
                let parsed = crate::types::parse_float(text, &SqlType::Float8).ok();
                match parsed.filter(|value| value.is_finite()) {
                    Some(parsed) => Ok(Jsonb::Number(crate::types::numeric_text(&format_double(parsed)))),
                    None => Err(self.fail(error("22036", "string argument of jsonpath item method .double() is not a valid representation of a double precision number"))),
                }
            }
            _ => Err(self.fail(error(
                "22036",
                "jsonpath item method .double() can only be applied to a string or numeric value",
            ))),
        }
    }

    /// A predicate's truth (executeBoolItem).
    fn truth(
        &mut self,
        item: &Item,
        value: &Jsonb,
        current: &Jsonb,
    ) -> std::result::Result<Truth, Failure> {
        crate::depth::check_stack_depth()?;
        Ok(match item {
            Item::And(left, right) => {
                let first = self.truth(left, value, current)?;
                if first == Truth::False {
                    return Ok(Truth::False);
                }
                let second = self.truth(right, value, current)?;
                if second == Truth::True {
                    first
                } else {
                    second
                }
            }
            Item::Or(left, right) => {
                let first = self.truth(left, value, current)?;
                if first == Truth::True {
                    return Ok(Truth::True);
                }
                let second = self.truth(right, value, current)?;
                if second == Truth::False {
                    first
                } else {
                    second
                }
            }
            Item::Not(operand) => match self.truth(operand, value, current)? {
                Truth::True => Truth::False,
                Truth::False => Truth::True,
                Truth::Unknown => Truth::Unknown,
            },
            Item::IsUnknown(operand) => {
                if self.truth(operand, value, current)? == Truth::Unknown {
                    Truth::True
                } else {
                    Truth::False
                }
            }
            // Lax mode stops at the first item (an error after it is never reached); strict
            // mode gathers every item, so that an error anywhere makes it unknown.
            Item::Exists(operand) if self.lax => {
                let throw = std::mem::replace(&mut self.throw, false);
                let result = self.item(operand, &[], value, current, None, false);
                self.throw = throw;
                match result {
                    Ok(true) => Truth::True,
                    Ok(false) => Truth::False,
                    Err(Failure::Suppressed) => Truth::Unknown,
                    Err(raised) => return Err(raised),
                }
            }
            Item::Exists(operand) => match self.sequence_quietly(operand, value, current, false)? {
                None => Truth::Unknown,
                Some(items) if items.is_empty() => Truth::False,
                Some(_) => Truth::True,
            },
            Item::Compare { op, left, right } => {
                let op = *op;
                self.predicate(left, Some((right, true)), value, current, |left, right| {
                    compare(op, left, right.unwrap_or(&Jsonb::Null))
                })?
            }
            Item::StartsWith(whole, initial) => {
                self.predicate(whole, Some((initial, false)), value, current, |whole, initial| {
                    match (whole, initial) {
                        (Jsonb::String(whole), Some(Jsonb::String(initial))) => {
                            if whole.starts_with(initial.as_str()) {
                                Truth::True
                            } else {
                                Truth::False
                            }
                        }
                        _ => Truth::Unknown,
                    }
                })?
            }
            Item::LikeRegex { operand, pattern, flags } => {
                let flags = regex_flags(flags);
                let mut failure = None;
                let truth =
                    self.predicate(operand, None, value, current, |text, _| match text {
                        Jsonb::String(text) => {
                            match crate::types::regex_is_match(text, pattern, &flags) {
                                Ok(true) => Truth::True,
                                Ok(false) => Truth::False,
                                Err(error) => {
                                    failure = Some(error);
                                    Truth::Unknown
                                }
                            }
                        }
                        _ => Truth::Unknown,
                    })?;
                if let Some(error) = failure {
                    return Err(Failure::Raised(error));
                }
                truth
            }
            _ => return Err(Failure::Raised(SqlError::internal("a jsonpath predicate"))),
        })
    }

    /// executePredicate: the left items (unwrapped) against the right ones; lax mode
    /// answers true at the first true pair, strict mode unknown at the first unknown.
    fn predicate(
        &mut self,
        left: &Item,
        right: Option<(&Item, bool)>,
        value: &Jsonb,
        current: &Jsonb,
        mut test: impl FnMut(&Jsonb, Option<&Jsonb>) -> Truth,
    ) -> std::result::Result<Truth, Failure> {
        let Some(left_items) = self.sequence_quietly(left, value, current, true)? else {
            return Ok(Truth::Unknown);
        };
        let right_items = match right {
            Some((right, unwrap)) => match self.sequence_quietly(right, value, current, unwrap)? {
                Some(items) => Some(items),
                None => return Ok(Truth::Unknown),
            },
            None => None,
        };
        let (mut found, mut unknown) = (false, false);
        for left_item in &left_items {
            let rights: Vec<Option<&Jsonb>> = match &right_items {
                Some(items) => items.iter().map(Some).collect(),
                None => vec![None],
            };
            for right_item in rights {
                match test(left_item, right_item) {
                    Truth::Unknown if !self.lax => return Ok(Truth::Unknown),
                    Truth::Unknown => unknown = true,
                    Truth::True if self.lax => return Ok(Truth::True),
                    Truth::True => found = true,
                    Truth::False => {}
                }
            }
        }
        Ok(if found {
            Truth::True
        } else if unknown {
            Truth::Unknown
        } else {
            Truth::False
        })
    }
}

/// float8_numeric's digits: 15 significant digits.
fn format_double(value: f64) -> String {
    let text = format!("{value:.14e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
    format!("{mantissa}e{exponent}")
}

/// compareItems: values of different kinds are unknown (null against another value is
/// false, or true for `!=`); containers are never comparable.
fn compare(op: Comparison, left: &Jsonb, right: &Jsonb) -> Truth {
    let order = match (left, right) {
        (Jsonb::Null, Jsonb::Null) => Ordering::Equal,
        (Jsonb::Null, _) | (_, Jsonb::Null) => {
            return if op == Comparison::NotEqual { Truth::True } else { Truth::False };
        }
        (Jsonb::Bool(a), Jsonb::Bool(b)) => a.cmp(b),
        (Jsonb::Number(a), Jsonb::Number(b)) => {
            Jsonb::Number(a.clone()).compare(&Jsonb::Number(b.clone()))
        }
        (Jsonb::String(a), Jsonb::String(b)) => a.as_bytes().cmp(b.as_bytes()),
        _ => return Truth::Unknown,
    };
    let holds = match op {
        Comparison::Equal => order.is_eq(),
        Comparison::NotEqual => order.is_ne(),
        Comparison::Less => order.is_lt(),
        Comparison::LessOrEqual => order.is_le(),
        Comparison::Greater => order.is_gt(),
        Comparison::GreaterOrEqual => order.is_ge(),
    };
    if holds {
        Truth::True
    } else {
        Truth::False
    }
}
