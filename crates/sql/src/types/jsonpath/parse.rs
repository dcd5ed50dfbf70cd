//! jsonpath input: PostgreSQL 15's jsonpath_scan.l tokens and jsonpath_gram.y grammar by
//! recursive descent, with its errors (42601 `syntax error at or near "x" of jsonpath
//! input`, `at end of jsonpath input`, the root / LAST checks, LIKE_REGEX flags).

use super::{Arithmetic, Comparison, Item, JsonPath, Method, Step, Subscript};
use crate::error::{Result, SqlError};

#[derive(Clone, Debug, PartialEq)]
enum Token {
    /// An identifier or key word (key words are case-sensitive, lower case).
    Word(String),
    String(String),
    /// `$name` or `$"name"`.
    Variable(String),
    /// A number as written.
    Number(String),
    /// Punctuation and operators.
    Symbol(&'static str),
}

struct Lexed {
    token: Token,
    /// The token's text, for errors.
    text: String,
}

const SYMBOLS: [&str; 24] = [
    "**", "==", "!=", "<>", "<=", ">=", "&&", "||", "$", "@", ".", ",", "[", "]", "(", ")", "{",
    "}", "?", "*", "/", "%", "+", "-",
];

/// The most operators, parentheses and nested expressions one jsonpath may hold. It bounds
/// the depth of the parsed tree, which printing, evaluating, cloning and dropping walk
/// recursively: a path like `1+1+...+1` or `((((...))))` from a column must not overflow the
/// stack (PostgreSQL fails such input with 54001 or "memory exhausted" too, deeper).
const JSONPATH_NODES_MAX: usize = 1_000;

fn syntax_error(near: Option<&str>) -> SqlError {
    match near {
        Some(text) => {
            SqlError::syntax(format!("syntax error at or near \"{text}\" of jsonpath input"))
        }
        None => SqlError::syntax("syntax error at end of jsonpath input"),
    }
}

/// Characters that end an identifier (jsonpath_scan.l's `special` and white space).
fn is_special(character: char) -> bool {
    "?%$.[]{}()|&!=<>@#,*:-+/\\\" \t\n\r\u{c}".contains(character)
}

fn lex(text: &str) -> Result<Vec<Lexed>> {
    let mut tokens = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches([' ', '\t', '\n', '\r', '\u{c}']);
        let Some(first) = rest.chars().next() else { return Ok(tokens) };
        let (token, length) = match first {
            '"' => read_string(rest)?,
            '0'..='9' => read_number(rest)?,
            '.' if rest[1..].starts_with(|c: char| c.is_ascii_digit()) => read_number(rest)?,
            '$' if rest[1..].starts_with('"') => {
                let (token, length) = read_string(&rest[1..])?;
                let Token::String(name) = token else {
                    return Err(SqlError::internal("read_string reads a string"));
                };
                (Token::Variable(name), length + 1)
            }
            '$' if rest[1..].starts_with(|c: char| !is_special(c)) => {
                let length = 1 + word_length(&rest[1..]);
                (Token::Variable(rest[1..length].to_string()), length)
            }
            '<' if rest.starts_with("<>") => (Token::Symbol("!="), 2),
            '!' if !rest.starts_with("!=") => (Token::Symbol("!"), 1),
            '<' | '>' if !rest[1..].starts_with('=') => {
                (Token::Symbol(if first == '<' { "<" } else { ">" }), 1)
            }
            c if !is_special(c) => {
                let length = word_length(rest);
                (Token::Word(rest[..length].to_string()), length)
            }
            _ => match SYMBOLS.iter().find(|symbol| rest.starts_with(**symbol)) {
                Some(symbol) => (Token::Symbol(symbol), symbol.len()),
                None => return Err(syntax_error(Some(&rest[..first.len_utf8()]))),
            },
        };
        tokens.push(Lexed { token, text: rest[..length].to_string() });
        rest = &rest[length..];
    }
}

fn word_length(text: &str) -> usize {
    text.find(is_special).unwrap_or(text.len())
}

/// A number: digits with an optional fraction and exponent; a letter or digit right after
/// it is PostgreSQL's "trailing junk".
fn read_number(text: &str) -> Result<(Token, usize)> {
    let bytes = text.as_bytes();
    let digits = |mut at: usize| {
        while bytes.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        at
    };
    let integer_end = digits(0);
    let mut end = integer_end;
    if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
        end = digits(end + 1);
    } else if bytes.get(end) == Some(&b'.') && integer_end > 0 && !is_word_start(bytes.get(end + 1))
    {
        end += 1;
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
        if bytes.get(end + 1 + sign).is_some_and(u8::is_ascii_digit) {
            end = digits(end + 1 + sign);
        }
    }
    let leading_zero = integer_end > 1 && bytes[0] == b'0';
    let junk = bytes.get(end).is_some_and(|byte| byte.is_ascii_alphanumeric() || *byte == b'_');
    let dotted_word = bytes.get(end) == Some(&b'.') && is_word_start(bytes.get(end + 1));
    if leading_zero || junk || dotted_word {
        let shown = text.char_indices().nth(end + 1).map_or(text.len(), |(at, _)| at);
        let shown = if leading_zero { &text[..end.max(2)] } else { &text[..shown] };
        return Err(SqlError::syntax(format!(
            "trailing junk after numeric literal at or near \"{shown}\" of jsonpath input"
        )));
    }
    Ok((Token::Number(text[..end].to_string()), end))
}

fn is_word_start(byte: Option<&u8>) -> bool {
    byte.is_some_and(|byte| byte.is_ascii_alphabetic() || *byte == b'_')
}

/// A double-quoted string with JSON's escapes and PostgreSQL's `\v`, `\xNN`, `\u{...}`.
fn read_string(text: &str) -> Result<(Token, usize)> {
    let mut out = String::new();
    let mut characters = text.char_indices().skip(1);
    while let Some((at, character)) = characters.next() {
        match character {
            '"' => return Ok((Token::String(out), at + 1)),
            '\\' => {
                let (_, escaped) = characters.next().ok_or_else(|| syntax_error(None))?;
                out.push(match escaped {
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'v' => '\u{b}',
                    'u' | 'x' => {
                        return Err(SqlError::unsupported(
                            "jsonpath string escapes \\u and \\x are not supported",
                        ))
                    }
                    other => other,
                });
            }
            other => out.push(other),
        }
    }
    Err(syntax_error(None))
}

/// Parses jsonpath text (jsonpath_in), checking `@` and `last` placement.
pub fn parse_jsonpath(text: &str) -> Result<JsonPath> {
    let tokens = lex(text)?;
    if tokens.is_empty() {
        return Err(SqlError::new(
            "22P02",
            format!("invalid input syntax for type jsonpath: \"{text}\""),
        ));
    }
    let mut parser = Parser { tokens, position: 0, filter_depth: 0, subscript_depth: 0, nodes: 0 };
    let lax = match parser.peek_word() {
        Some("strict") => {
            parser.position += 1;
            false
        }
        Some("lax") => {
            parser.position += 1;
            true
        }
        _ => true,
    };
    let expression = parser.or_level()?;
    if let Some(lexed) = parser.tokens.get(parser.position) {
        return Err(syntax_error(Some(&lexed.text)));
    }
    Ok(JsonPath { lax, expression })
}

struct Parser {
    tokens: Vec<Lexed>,
    position: usize,
    /// Inside a filter `@` is allowed; inside a subscript `last`.
    filter_depth: usize,
    subscript_depth: usize,
    /// Composite nodes and nested expressions so far, bounded by `JSONPATH_NODES_MAX`.
    nodes: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.position).map(|lexed| &lexed.token)
    }

    fn peek_word(&self) -> Option<&str> {
        match self.peek() {
            Some(Token::Word(word)) => Some(word),
            _ => None,
        }
    }

    fn at_symbol(&self, symbol: &str) -> bool {
        matches!(self.peek(), Some(Token::Symbol(own)) if *own == symbol)
    }

    fn error_here(&self) -> SqlError {
        syntax_error(self.tokens.get(self.position).map(|lexed| lexed.text.as_str()))
    }

    fn expect(&mut self, symbol: &str) -> Result<()> {
        if !self.at_symbol(symbol) {
            return Err(self.error_here());
        }
        self.position += 1;
        Ok(())
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if self.peek_word() == Some(word) {
            self.position += 1;
            return true;
        }
        false
    }

    fn predicate(&self, item: Item, at: usize) -> Result<Item> {
        if !item.is_predicate() {
            return Err(syntax_error(self.tokens.get(at).map(|lexed| lexed.text.as_str())));
        }
        Ok(item)
    }

    /// Counts one more composite node or nested expression (`JSONPATH_NODES_MAX`).
    fn grow(&mut self) -> Result<()> {
        self.nodes += 1;
        if self.nodes > JSONPATH_NODES_MAX {
            return Err(SqlError::new("54001", "stack depth limit exceeded"));
        }
        Ok(())
    }

    fn or_level(&mut self) -> Result<Item> {
        self.grow()?;
        let mut left = self.and_level()?;
        while self.at_symbol("||") {
            self.grow()?;
            let at = self.position;
            left = self.predicate(left, at)?;
            self.position += 1;
            let right = self.and_level()?;
            let right = self.predicate(right, self.position)?;
            left = Item::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and_level(&mut self) -> Result<Item> {
        let mut left = self.not_level()?;
        while self.at_symbol("&&") {
            self.grow()?;
            let at = self.position;
            left = self.predicate(left, at)?;
            self.position += 1;
            let right = self.not_level()?;
            let right = self.predicate(right, self.position)?;
            left = Item::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    /// `! delimited_predicate`, or a comparison / predicate over expressions.
    fn not_level(&mut self) -> Result<Item> {
        if self.at_symbol("!") {
            self.grow()?;
            self.position += 1;
            if !self.at_symbol("(") && self.peek_word() != Some("exists") {
                return Err(self.error_here());
            }
            let operand = self.primary_predicate()?;
            return Ok(Item::Not(Box::new(operand)));
        }
        self.comparison_level()
    }

    /// A delimited predicate: `( predicate )` [is unknown] or `exists ( expr )`.
    fn primary_predicate(&mut self) -> Result<Item> {
        let at = self.position;
        let item = self.additive()?;
        self.predicate(item, at)
    }

    fn comparison_level(&mut self) -> Result<Item> {
        let left = self.additive()?;
        let op = match self.peek() {
            Some(Token::Symbol("==")) => Comparison::Equal,
            Some(Token::Symbol("!=")) => Comparison::NotEqual,
            Some(Token::Symbol("<")) => Comparison::Less,
            Some(Token::Symbol("<=")) => Comparison::LessOrEqual,
            Some(Token::Symbol(">")) => Comparison::Greater,
            Some(Token::Symbol(">=")) => Comparison::GreaterOrEqual,
            Some(Token::Word(word)) if word == "starts" => return self.starts_with(left),
            Some(Token::Word(word)) if word == "like_regex" => return self.like_regex(left),
            _ => return Ok(left),
        };
        if left.is_predicate() {
            return Err(self.error_here());
        }
        self.position += 1;
        let right = self.additive()?;
        if right.is_predicate() {
            return Err(self.error_here());
        }
        Ok(Item::Compare { op, left: Box::new(left), right: Box::new(right) })
    }

    fn starts_with(&mut self, left: Item) -> Result<Item> {
        if left.is_predicate() {
            return Err(self.error_here());
        }
        self.position += 1;
        if !self.eat_word("with") {
            return Err(self.error_here());
        }
        let initial = match self.peek().cloned() {
            Some(Token::String(text)) => Item::String(text),
            Some(Token::Variable(name)) => Item::Variable(name),
            _ => return Err(self.error_here()),
        };
        self.position += 1;
        Ok(Item::StartsWith(Box::new(left), Box::new(initial)))
    }

    fn like_regex(&mut self, operand: Item) -> Result<Item> {
        if operand.is_predicate() {
            return Err(self.error_here());
        }
        self.position += 1;
        let Some(Token::String(pattern)) = self.peek().cloned() else {
            return Err(self.error_here());
        };
        self.position += 1;
        let mut flags = String::new();
        if self.eat_word("flag") {
            let Some(Token::String(given)) = self.peek().cloned() else {
                return Err(self.error_here());
            };
            self.position += 1;
            flags = regex_flags(&given)?;
        }
        super::eval::check_regex(&pattern, &flags)?;
        Ok(Item::LikeRegex { operand: Box::new(operand), pattern, flags })
    }

    fn additive(&mut self) -> Result<Item> {
        let mut left = self.multiplicative()?;
        loop {
            let op = match self.peek() {
                Some(Token::Symbol("+")) => Arithmetic::Add,
                Some(Token::Symbol("-")) => Arithmetic::Subtract,
                _ => return Ok(left),
            };
            left = self.arithmetic(left, op, Parser::multiplicative)?;
        }
    }

    fn multiplicative(&mut self) -> Result<Item> {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Token::Symbol("*")) => Arithmetic::Multiply,
                Some(Token::Symbol("/")) => Arithmetic::Divide,
                Some(Token::Symbol("%")) => Arithmetic::Modulo,
                _ => return Ok(left),
            };
            left = self.arithmetic(left, op, Parser::unary)?;
        }
    }

    fn arithmetic(
        &mut self,
        left: Item,
        op: Arithmetic,
        operand: fn(&mut Parser) -> Result<Item>,
    ) -> Result<Item> {
        if left.is_predicate() {
            return Err(self.error_here());
        }
        self.grow()?;
        self.position += 1;
        let right = operand(self)?;
        if right.is_predicate() {
            return Err(self.error_here());
        }
        Ok(Item::Binary { op, left: Box::new(left), right: Box::new(right) })
    }

    /// Unary `+` / `-` (a number literal is negated in place, as makeItemUnary does).
    fn unary(&mut self) -> Result<Item> {
        let negate = match self.peek() {
            Some(Token::Symbol("-")) => true,
            Some(Token::Symbol("+")) => false,
            _ => return self.accessor(),
        };
        self.grow()?;
        self.position += 1;
        let operand = self.unary()?;
        if operand.is_predicate() {
            return Err(self.error_here());
        }
        Ok(match operand {
            Item::Number(text) if !negate => Item::Number(text),
            Item::Number(text) if negate => Item::Number(negate_number(&text)),
            operand => Item::Unary { negate, operand: Box::new(operand) },
        })
    }

    /// A primary and its accessor steps.
    fn accessor(&mut self) -> Result<Item> {
        let (primary, parenthesized) = self.primary()?;
        let mut steps = Vec::new();
        while let Some(step) = self.step()? {
            steps.push(step);
        }
        if steps.is_empty() {
            return Ok(primary);
        }
        if primary.is_predicate() && !parenthesized {
            return Err(self.error_here());
        }
        Ok(Item::Path(Box::new(primary), steps))
    }

    fn primary(&mut self) -> Result<(Item, bool)> {
        let Some(lexed) = self.tokens.get(self.position) else { return Err(syntax_error(None)) };
        let item = match lexed.token.clone() {
            Token::Symbol("$") => Item::Root,
            Token::Symbol("@") if self.filter_depth == 0 => {
                return Err(SqlError::syntax("@ is not allowed in root expressions"))
            }
            Token::Symbol("@") => Item::Current,
            Token::Symbol("(") => return self.parenthesized(),
            Token::Variable(name) => Item::Variable(name),
            Token::String(text) => Item::String(text),
            Token::Number(text) => Item::Number(super::eval::number_literal(&text)?),
            Token::Word(word) => match word.as_str() {
                "null" => Item::Null,
                "true" => Item::Bool(true),
                "false" => Item::Bool(false),
                "last" if self.subscript_depth == 0 => {
                    return Err(SqlError::syntax("LAST is allowed only in array subscripts"))
                }
                "last" => Item::Last,
                "exists" => return self.exists().map(|item| (item, true)),
                _ => return Err(self.error_here()),
            },
            Token::Symbol(_) => return Err(self.error_here()),
        };
        self.position += 1;
        Ok((item, false))
    }

    fn parenthesized(&mut self) -> Result<(Item, bool)> {
        self.position += 1;
        let inner = self.or_level()?;
        self.expect(")")?;
        if inner.is_predicate() && self.peek_word() == Some("is") {
            self.position += 1;
            if !self.eat_word("unknown") {
                return Err(self.error_here());
            }
            return Ok((Item::IsUnknown(Box::new(inner)), true));
        }
        Ok((inner, true))
    }

    fn exists(&mut self) -> Result<Item> {
        self.position += 1;
        self.expect("(")?;
        let operand = self.additive()?;
        if operand.is_predicate() {
            return Err(self.error_here());
        }
        self.expect(")")?;
        Ok(Item::Exists(Box::new(operand)))
    }

    /// The next accessor step, if any.
    fn step(&mut self) -> Result<Option<Step>> {
        if self.at_symbol("[") {
            return self.subscripts().map(Some);
        }
        if self.at_symbol("?") {
            self.position += 1;
            self.expect("(")?;
            self.filter_depth += 1;
            let predicate = self.or_level();
            self.filter_depth -= 1;
            let predicate = predicate?;
            if !predicate.is_predicate() {
                return Err(self.error_here());
            }
            self.expect(")")?;
            return Ok(Some(Step::Filter(Box::new(predicate))));
        }
        if !self.at_symbol(".") {
            return Ok(None);
        }
        self.position += 1;
        self.dotted().map(Some)
    }

    /// What follows a `.`: a key, `*`, `**`, or a method call.
    fn dotted(&mut self) -> Result<Step> {
        let Some(lexed) = self.tokens.get(self.position) else { return Err(syntax_error(None)) };
        let token = lexed.token.clone();
        self.position += 1;
        match token {
            Token::Symbol("*") => Ok(Step::AnyKey),
            Token::Symbol("**") => self.any_levels(),
            Token::String(key) => Ok(Step::Key(key)),
            Token::Word(word) if self.at_symbol("(") => self.method(&word),
            Token::Word(word) => Ok(Step::Key(word)),
            _ => {
                self.position -= 1;
                Err(self.error_here())
            }
        }
    }

    fn method(&mut self, word: &str) -> Result<Step> {
        let method = match word {
            "type" => Method::Type,
            "size" => Method::Size,
            "double" => Method::Double,
            "ceiling" => Method::Ceiling,
            "floor" => Method::Floor,
            "abs" => Method::Abs,
            "keyvalue" => Method::KeyValue,
            "datetime" => {
                self.position += 1;
                let template = match self.peek().cloned() {
                    Some(Token::String(text)) => {
                        self.position += 1;
                        Some(text)
                    }
                    _ => None,
                };
                self.expect(")")?;
                return Ok(Step::Datetime(template));
            }
            _ => return Err(self.error_here()),
        };
        self.position += 1;
        self.expect(")")?;
        Ok(Step::Method(method))
    }

    /// `**`, `**{n}`, `**{n to m}` (levels are integers or `last`).
    fn any_levels(&mut self) -> Result<Step> {
        if !self.at_symbol("{") {
            return Ok(Step::Any { first: 0, last: u32::MAX });
        }
        self.position += 1;
        let first = self.level()?;
        let last = if self.eat_word("to") { self.level()? } else { first };
        self.expect("}")?;
        Ok(Step::Any { first, last })
    }

    fn level(&mut self) -> Result<u32> {
        let level = match self.peek() {
            Some(Token::Word(word)) if word == "last" => u32::MAX,
            Some(Token::Number(text)) if text.bytes().all(|byte| byte.is_ascii_digit()) => {
                text.parse::<u32>().map_err(|_| self.error_here())?
            }
            _ => return Err(self.error_here()),
        };
        self.position += 1;
        Ok(level)
    }

    fn subscripts(&mut self) -> Result<Step> {
        self.position += 1;
        if self.at_symbol("*") {
            self.position += 1;
            self.expect("]")?;
            return Ok(Step::AnyArray);
        }
        self.subscript_depth += 1;
        let list = self.subscript_list();
        self.subscript_depth -= 1;
        Ok(Step::Subscripts(list?))
    }

    fn subscript_list(&mut self) -> Result<Vec<Subscript>> {
        let mut list = Vec::new();
        loop {
            let from = self.subscript_expression()?;
            let to = if self.eat_word("to") { Some(self.subscript_expression()?) } else { None };
            list.push(Subscript { from, to });
            if self.at_symbol("]") {
                self.position += 1;
                return Ok(list);
            }
            self.expect(",")?;
        }
    }

    fn subscript_expression(&mut self) -> Result<Item> {
        let item = self.additive()?;
        if item.is_predicate() {
            return Err(self.error_here());
        }
        Ok(item)
    }
}

/// LIKE_REGEX flags in jsonpath_out's order (i s m x q), PostgreSQL's error for others.
fn regex_flags(given: &str) -> Result<String> {
    for character in given.chars() {
        if !"ismxq".contains(character) {
            return Err(SqlError::syntax("invalid input syntax for type jsonpath"));
        }
    }
    if given.contains('x') {
        return Err(SqlError::unsupported(
            "XQuery \"x\" flag (expanded regular expressions) is not implemented",
        ));
    }
    Ok("ismxq".chars().filter(|flag| given.contains(*flag)).collect())
}

fn negate_number(text: &str) -> String {
    match text.strip_prefix('-') {
        Some(positive) => positive.to_string(),
        None if text.bytes().all(|byte| matches!(byte, b'0' | b'.')) => text.to_string(),
        None => format!("-{text}"),
    }
}
