//! json and jsonb: PostgreSQL's JSON parser (RFC 8259 with PostgreSQL's errors), jsonb's
//! normalised form (object keys deduplicated keeping the last, sorted by length then
//! bytes; numbers as numeric prints them), its output, ordering and containment.
//!
//! A json value is its input text, kept exactly (`Datum::Text`; the parser only checks
//! it, and `->` returns the slice of the text it finds). A jsonb value is the parsed tree
//! (`Datum::Jsonb`), stored as its output text.

use super::*;

/// A jsonb value.
#[derive(Clone, Debug)]
pub enum Jsonb {
    Null,
    Bool(bool),
    /// A number as PostgreSQL's numeric prints it (`1.50`, `100` for `1e2`).
    Number(String),
    String(String),
    Array(Vec<Jsonb>),
    /// Keys unique and sorted by length, then bytes.
    Object(Vec<(String, Jsonb)>),
}

/// A parsed JSON value with the text it was read from (json's `->` returns that text).
#[derive(Debug)]
pub struct JsonNode<'a> {
    pub text: &'a str,
    pub kind: JsonKind<'a>,
}

impl<'a> JsonNode<'a> {
    /// json's `->`: an object's member (the last of equal keys, as PostgreSQL reads json)
    /// or an array's element (a negative index counts from the end).
    pub fn get(&self, key: &JsonKey<'_>) -> Option<&JsonNode<'a>> {
        match (&self.kind, key) {
            (JsonKind::Object(pairs), JsonKey::Field(name)) => {
                pairs.iter().rev().find(|(own, _)| own == name).map(|(_, value)| value)
            }
            (JsonKind::Array(items), JsonKey::Index(index)) => {
                items.get(array_index(*index, items.len())?)
            }
            _ => None,
        }
    }
}

#[derive(Debug)]
pub enum JsonKind<'a> {
    Null,
    Bool(bool),
    Number(&'a str),
    String(String),
    Array(Vec<JsonNode<'a>>),
    /// In input order, duplicates kept.
    Object(Vec<(String, JsonNode<'a>)>),
}

/// PostgreSQL's error for text that is not JSON.
pub fn invalid_json() -> SqlError {
    SqlError::new("22P02", "invalid input syntax for type json")
}

/// Nesting deeper than this fails as PostgreSQL's stack depth check does.
const JSON_DEPTH_MAX: usize = 6400;

struct Parser<'a> {
    text: &'a str,
    position: usize,
    /// jsonb input: `\u0000` and unpaired surrogates are errors (json only checks syntax).
    strict: bool,
}

/// Parses `text` as JSON; `strict` for jsonb's input rules.
pub fn parse_json(text: &str, strict: bool) -> Result<JsonNode<'_>> {
    let mut parser = Parser { text, position: 0, strict };
    let node = parser.value(0)?;
    parser.skip_whitespace();
    if parser.position != text.len() {
        return Err(invalid_json());
    }
    Ok(node)
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.position).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.position += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<JsonNode<'a>> {
        if depth > JSON_DEPTH_MAX {
            return Err(crate::depth::stack_depth_error());
        }
        crate::depth::check_stack_depth()?;
        self.skip_whitespace();
        let start = self.position;
        let kind = match self.peek().ok_or_else(invalid_json)? {
            b'{' => self.object(depth)?,
            b'[' => self.array(depth)?,
            b'"' => JsonKind::String(self.string()?),
            b'-' | b'0'..=b'9' => JsonKind::Number(self.number()?),
            _ => self.literal()?,
        };
        Ok(JsonNode { text: &self.text[start..self.position], kind })
    }

    fn literal(&mut self) -> Result<JsonKind<'a>> {
        let rest = &self.text[self.position..];
        let word_end = rest.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(rest.len());
        let kind = match &rest[..word_end] {
            "true" => JsonKind::Bool(true),
            "false" => JsonKind::Bool(false),
            "null" => JsonKind::Null,
            _ => return Err(invalid_json()),
        };
        self.position += word_end;
        Ok(kind)
    }

    fn expect(&mut self, byte: u8) -> Result<()> {
        self.skip_whitespace();
        if self.peek() != Some(byte) {
            return Err(invalid_json());
        }
        self.position += 1;
        Ok(())
    }

    fn array(&mut self, depth: usize) -> Result<JsonKind<'a>> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.position += 1;
            return Ok(JsonKind::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b']') => {
                    self.position += 1;
                    return Ok(JsonKind::Array(items));
                }
                _ => return Err(invalid_json()),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<JsonKind<'a>> {
        self.expect(b'{')?;
        let mut pairs = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.position += 1;
            return Ok(JsonKind::Object(pairs));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(invalid_json());
            }
            let key = self.string()?;
            self.expect(b':')?;
            pairs.push((key, self.value(depth + 1)?));
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b'}') => {
                    self.position += 1;
                    return Ok(JsonKind::Object(pairs));
                }
                _ => return Err(invalid_json()),
            }
        }
    }

    fn number(&mut self) -> Result<&'a str> {
        let start = self.position;
        let bytes = self.text.as_bytes();
        let digits = |position: &mut usize| {
            let first = *position;
            while bytes.get(*position).is_some_and(u8::is_ascii_digit) {
                *position += 1;
            }
            *position - first
        };
        let mut position = self.position;
        if bytes.get(position) == Some(&b'-') {
            position += 1;
        }
        let integer_start = position;
        let integer = digits(&mut position);
        // No leading zeros: `01` is not JSON.
        if integer == 0 || (integer > 1 && bytes[integer_start] == b'0') {
            return Err(invalid_json());
        }
        if bytes.get(position) == Some(&b'.') {
            position += 1;
            if digits(&mut position) == 0 {
                return Err(invalid_json());
            }
        }
        if matches!(bytes.get(position), Some(b'e' | b'E')) {
            position += 1;
            if matches!(bytes.get(position), Some(b'+' | b'-')) {
                position += 1;
            }
            if digits(&mut position) == 0 {
                return Err(invalid_json());
            }
        }
        // A number runs into a word (`1x`) only as an invalid token.
        if bytes.get(position).is_some_and(|byte| byte.is_ascii_alphanumeric() || *byte == b'_') {
            return Err(invalid_json());
        }
        self.position = position;
        Ok(&self.text[start..position])
    }

    fn string(&mut self) -> Result<String> {
        self.position += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.position..];
            let stop = rest.find(['"', '\\']).ok_or_else(invalid_json)?;
            let plain = &rest[..stop];
            if plain.bytes().any(|byte| byte < 0x20) {
                return Err(invalid_json());
            }
            out.push_str(plain);
            self.position += stop + 1;
            if rest.as_bytes()[stop] == b'"' {
                return Ok(out);
            }
            self.escape(&mut out)?;
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<()> {
        let byte = self.peek().ok_or_else(invalid_json)?;
        self.position += 1;
        out.push(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode(out),
            _ => return Err(invalid_json()),
        });
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32> {
        let digits = self.text.get(self.position..self.position + 4).ok_or_else(invalid_json)?;
        let value = u32::from_str_radix(digits, 16).map_err(|_| invalid_json())?;
        if !digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(invalid_json());
        }
        self.position += 4;
        Ok(value)
    }

    /// `\uXXXX` (after `\u`), a surrogate pair as one character.
    fn unicode(&mut self, out: &mut String) -> Result<()> {
        let first = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&first) {
            let paired = self.text[self.position..].starts_with("\\u");
            let second = if paired {
                self.position += 2;
                Some(self.hex4()?)
            } else {
                None
            };
            match second {
                Some(low @ 0xDC00..0xE000) => 0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00),
                _ if self.strict => return Err(invalid_json()),
                _ => char::REPLACEMENT_CHARACTER.into(),
            }
        } else if (0xDC00..0xE000).contains(&first) {
            if self.strict {
                return Err(invalid_json());
            }
            char::REPLACEMENT_CHARACTER.into()
        } else {
            first
        };
        if code == 0 && self.strict {
            return Err(SqlError::new("22P05", "unsupported Unicode escape sequence"));
        }
        out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
        Ok(())
    }
}

/// json input: the text itself, once it parses.
pub fn parse_json_text(text: &str) -> Result<Datum> {
    parse_json(text, false)?;
    Ok(Datum::Text(text.to_string()))
}

/// jsonb input.
pub fn parse_jsonb(text: &str) -> Result<Datum> {
    Ok(Datum::Jsonb(Arc::new(Jsonb::from_node(&parse_json(text, true)?))))
}

impl Jsonb {
    pub fn from_node(node: &JsonNode<'_>) -> Jsonb {
        match &node.kind {
            JsonKind::Null => Jsonb::Null,
            JsonKind::Bool(flag) => Jsonb::Bool(*flag),
            JsonKind::Number(text) => Jsonb::Number(numeric_text(text)),
            JsonKind::String(text) => Jsonb::String(text.clone()),
            JsonKind::Array(items) => Jsonb::Array(items.iter().map(Jsonb::from_node).collect()),
            JsonKind::Object(pairs) => Jsonb::object(
                pairs.iter().map(|(key, value)| (key.clone(), Jsonb::from_node(value))).collect(),
            ),
        }
    }

    /// An object from pairs in input order: the last of equal keys kept, keys sorted.
    pub fn object(pairs: Vec<(String, Jsonb)>) -> Jsonb {
        let mut pairs: Vec<(String, Jsonb)> = pairs;
        // A stable sort keeps equal keys in input order; the last of each run wins.
        pairs.sort_by(|(a, _), (b, _)| compare_keys(a, b));
        let mut unique: Vec<(String, Jsonb)> = Vec::with_capacity(pairs.len());
        for pair in pairs {
            match unique.last_mut() {
                Some(last) if last.0 == pair.0 => *last = pair,
                _ => unique.push(pair),
            }
        }
        Jsonb::Object(unique)
    }

    /// PostgreSQL's jsonb output: `{"a": 1, "b": [1, 2]}`.
    pub fn output(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Jsonb::Null => out.push_str("null"),
            Jsonb::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
            Jsonb::Number(text) => out.push_str(text),
            Jsonb::String(text) => escape_json(text, out),
            Jsonb::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Jsonb::Object(pairs) => {
                out.push('{');
                for (index, (key, value)) in pairs.iter().enumerate() {
                    if index > 0 {
                        out.push_str(", ");
                    }
                    escape_json(key, out);
                    out.push_str(": ");
                    value.write(out);
                }
                out.push('}');
            }
        }
    }

    /// jsonb_pretty's layout: four spaces per level, an empty container on two lines.
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        self.write_pretty(&mut out, 0);
        out
    }

    fn write_pretty(&self, out: &mut String, level: usize) {
        let indent = |out: &mut String, level: usize| out.push_str(&"    ".repeat(level));
        let (open, close, count) = match self {
            Jsonb::Array(items) => ('[', ']', items.len()),
            Jsonb::Object(pairs) => ('{', '}', pairs.len()),
            scalar => return scalar.write(out),
        };
        out.push(open);
        out.push('\n');
        for index in 0..count {
            indent(out, level + 1);
            match self {
                Jsonb::Array(items) => items[index].write_pretty(out, level + 1),
                Jsonb::Object(pairs) => {
                    escape_json(&pairs[index].0, out);
                    out.push_str(": ");
                    pairs[index].1.write_pretty(out, level + 1);
                }
                _ => {}
            }
            out.push_str(if index + 1 < count { ",\n" } else { "\n" });
        }
        indent(out, level);
        out.push(close);
    }

    /// json_typeof / jsonb_typeof.
    pub fn type_name(&self) -> &'static str {
        match self {
            Jsonb::Null => "null",
            Jsonb::Bool(_) => "boolean",
            Jsonb::Number(_) => "number",
            Jsonb::String(_) => "string",
            Jsonb::Array(_) => "array",
            Jsonb::Object(_) => "object",
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Jsonb::Null => 0,
            Jsonb::String(_) => 1,
            Jsonb::Number(_) => 2,
            Jsonb::Bool(_) => 3,
            Jsonb::Array(_) => 4,
            Jsonb::Object(_) => 5,
        }
    }

    /// jsonb's btree order: null < string < number < boolean < array < object; containers
    /// with more members are greater, then members compare in order.
    pub fn compare(&self, other: &Jsonb) -> Ordering {
        match (self, other) {
            // PostgreSQL's quirk: an empty top-level array sorts below null.
            (Jsonb::Array(items), Jsonb::Null) if items.is_empty() => Ordering::Less,
            (Jsonb::Null, Jsonb::Array(items)) if items.is_empty() => Ordering::Greater,
            (Jsonb::Bool(a), Jsonb::Bool(b)) => a.cmp(b),
            (Jsonb::Number(a), Jsonb::Number(b)) => compare_numbers(a, b),
            (Jsonb::String(a), Jsonb::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Jsonb::Array(a), Jsonb::Array(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| x.compare(y))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            }),
            (Jsonb::Object(a), Jsonb::Object(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter()
                    .zip(b)
                    .map(|((ka, va), (kb, vb))| compare_keys(ka, kb).then_with(|| va.compare(vb)))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            }),
            _ => self.rank().cmp(&other.rank()),
        }
    }

    /// `self @> other`.
    pub fn contains(&self, other: &Jsonb) -> bool {
        match (self, other) {
            (Jsonb::Object(mine), Jsonb::Object(theirs)) => theirs.iter().all(|(key, value)| {
                mine.iter().find(|(own, _)| own == key).is_some_and(|(_, own)| own.contains(value))
            }),
            (Jsonb::Array(mine), Jsonb::Array(theirs)) => theirs.iter().all(|value| {
                mine.iter().any(|own| match (own, value) {
                    (Jsonb::Array(_) | Jsonb::Object(_), _) => own.contains(value),
                    _ => own.compare(value).is_eq(),
                })
            }),
            // A top-level array contains a scalar it has as an element.
            (Jsonb::Array(mine), scalar) if !matches!(scalar, Jsonb::Object(_)) => {
                mine.iter().any(|own| own.compare(scalar).is_eq())
            }
            (Jsonb::Array(_) | Jsonb::Object(_), _) | (_, Jsonb::Array(_) | Jsonb::Object(_)) => {
                false
            }
            _ => self.compare(other).is_eq(),
        }
    }

    /// `self ? key`: a top-level key, array string element or the string itself.
    pub fn has_key(&self, key: &str) -> bool {
        match self {
            Jsonb::Object(pairs) => pairs.iter().any(|(own, _)| own == key),
            Jsonb::Array(items) => {
                items.iter().any(|item| matches!(item, Jsonb::String(text) if text == key))
            }
            Jsonb::String(text) => text == key,
            _ => false,
        }
    }

    /// `->` with a text key or an integer index (negative: from the end).
    pub fn get(&self, key: &JsonKey<'_>) -> Option<&Jsonb> {
        match (self, key) {
            (Jsonb::Object(pairs), JsonKey::Field(name)) => {
                pairs.iter().find(|(own, _)| own == name).map(|(_, value)| value)
            }
            (Jsonb::Array(items), JsonKey::Index(index)) => {
                items.get(array_index(*index, items.len())?)
            }
            _ => None,
        }
    }

    /// `->>`'s text: a string unquoted, null as SQL NULL, anything else as output.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Jsonb::Null => None,
            Jsonb::String(text) => Some(text.clone()),
            other => Some(other.output()),
        }
    }

    /// Bytes that equal values share (1.0 and 1 alike), for grouping and hashing.
    pub fn group_key(&self, out: &mut Vec<u8>) {
        match self {
            Jsonb::Number(text) => {
                out.push(b'n');
                out.extend_from_slice(canonical_number(text).as_bytes());
                out.push(0);
            }
            Jsonb::Array(items) => {
                out.push(b'[');
                items.iter().for_each(|item| item.group_key(out));
                out.push(b']');
            }
            Jsonb::Object(pairs) => {
                out.push(b'{');
                for (key, value) in pairs {
                    out.extend_from_slice(&count_u64(key.len()).to_le_bytes());
                    out.extend_from_slice(key.as_bytes());
                    value.group_key(out);
                }
                out.push(b'}');
            }
            other => {
                out.extend_from_slice(other.output().as_bytes());
                out.push(0);
            }
        }
    }
}

/// The key of `->`: a field name or an array position.
pub enum JsonKey<'a> {
    Field(&'a str),
    Index(i64),
}

/// A 0-based position from `->`'s index (negative counts from the end).
pub fn array_index(index: i64, length: usize) -> Option<usize> {
    let length = i64::try_from(length).ok()?;
    let position = if index < 0 { length + index } else { index };
    usize::try_from(position).ok().filter(|_| position < length)
}

/// jsonb's key order: shorter keys first, then bytes.
fn compare_keys(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// Two numbers' order by value (`1.0` = `1`).
fn compare_numbers(a: &str, b: &str) -> Ordering {
    match (Decimal::from_str(a), Decimal::from_str(b)) {
        (Ok(a), Ok(b)) => a.cmp(&b),
        _ => {
            let (a, b) = (a.parse::<f64>().unwrap_or(0.0), b.parse::<f64>().unwrap_or(0.0));
            compare_floats(a, b)
        }
    }
}

/// A number without trailing fraction zeros (`1.50` as `1.5`, `1.0` as `1`).
fn canonical_number(text: &str) -> String {
    if !text.contains('.') {
        return text.to_string();
    }
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A JSON number as PostgreSQL's numeric input and output make it: the exponent applied
/// (`1e2` is `100`, `2.5e-1` is `0.25`), the scale kept (`1.50`), no negative zero.
pub fn numeric_text(source: &str) -> String {
    let (negative, unsigned) = match source.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, source),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], unsigned[at + 1..].parse::<i64>().unwrap_or(0)),
        None => (unsigned, 0),
    };
    let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{integer}{fraction}");
    let fraction_digits = i64::try_from(fraction.len()).unwrap_or(i64::MAX);
    let scale = fraction_digits.saturating_sub(exponent).max(0);
    // The digits times 10^(exponent - fraction digits), written with `scale` decimals.
    let shift = exponent.saturating_sub(fraction_digits);
    let mut all = digits;
    if shift > 0 {
        all.push_str(&"0".repeat(usize::try_from(shift).unwrap_or(0)));
    }
    let scale_digits = usize::try_from(scale).unwrap_or(0);
    if all.len() <= scale_digits {
        all = format!("{}{all}", "0".repeat(scale_digits - all.len() + 1));
    }
    let (whole, decimals) = all.split_at(all.len() - scale_digits);
    let whole = whole.trim_start_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    let zero = whole == "0" && decimals.bytes().all(|byte| byte == b'0');
    let sign = if negative && !zero { "-" } else { "" };
    if decimals.is_empty() {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{decimals}")
    }
}

/// A string as a JSON string literal, PostgreSQL's escape_json.
pub fn escape_json(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A value of type `ty` as json text, as PostgreSQL's to_json writes it: numbers and
/// booleans bare, json as it is, dates and timestamps in ISO 8601, anything else as the
/// JSON string of its text output.
pub fn to_json_text(datum: &Datum, ty: &SqlType) -> String {
    let mut out = String::new();
    match (datum, ty) {
        (Datum::Null, _) => out.push_str("null"),
        (Datum::Bool(flag), _) => out.push_str(if *flag { "true" } else { "false" }),
        (Datum::Int(number), ty) if ty.is_integer() => {
            let _ = write!(out, "{number}");
        }
        (Datum::Numeric(number), _) => {
            let _ = write!(out, "{number}");
        }
        (Datum::Float(number), _) if number.is_finite() => {
            out.push_str(&datum.to_text(ty).unwrap_or_default());
        }
        (Datum::Text(text), SqlType::Json) => out.push_str(text),
        (Datum::Jsonb(value), _) => value.write(&mut out),
        // An array is a JSON array of its elements (PostgreSQL's array_to_json), not the
        // string of its text form.
        (Datum::Array(array), SqlType::Array(element)) => {
            out.push('[');
            for (index, item) in array.elements.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&to_json_text(item, element));
            }
            out.push(']');
        }
        (Datum::Timestamp(micros), _) => {
            escape_json(&format_timestamp(*micros).replacen(' ', "T", 1), &mut out)
        }
        (Datum::TimestampTz(micros), _) => {
            // JSON's timestamptz is ISO 8601 in the session zone, the offset with minutes.
            let (local, offset) = super::with_session_zone(|zone| {
                let offset_seconds = zone.offset_at_utc(*micros);
                (zone.utc_to_local(*micros), super::format_offset(offset_seconds, true))
            });
            let text = format!("{}{offset}", format_timestamp(local).replacen(' ', "T", 1));
            escape_json(&text, &mut out);
        }
        (other, ty) => escape_json(&other.to_text(ty).unwrap_or_default(), &mut out),
    }
    out
}

/// PostgreSQL's casts of jsonb to boolean and the numeric types (jsonb_bool, jsonb_int4,
/// ...): a jsonb boolean or number of that kind, else 22023 naming the value's kind. None
/// for a target these casts do not cover.
pub fn jsonb_scalar_cast(value: &Jsonb, to: &SqlType) -> Option<Result<Datum>> {
    let numeric = to.is_numeric_family() && *to != SqlType::Oid;
    if !numeric && *to != SqlType::Bool {
        return None;
    }
    Some(match value {
        Jsonb::Bool(flag) if *to == SqlType::Bool => Ok(Datum::Bool(*flag)),
        // The number is a numeric first (integers round half away from zero from it).
        Jsonb::Number(text) if matches!(to, SqlType::Float4 | SqlType::Float8) => {
            cast(Datum::Text(text.clone()), &SqlType::Text, to, true)
        }
        Jsonb::Number(text) if numeric => parse_numeric(text)
            .and_then(|number| cast(Datum::Numeric(number), &SqlType::numeric(), to, true)),
        other => {
            let kind = match other {
                Jsonb::Number(_) => "numeric",
                other => other.type_name(),
            };
            let target = match to {
                SqlType::Numeric { .. } => "numeric".to_string(),
                other => other.display_name(),
            };
            Err(SqlError::new("22023", format!("cannot cast jsonb {kind} to type {target}")))
        }
    })
}

/// A value of type `ty` as jsonb (to_jsonb).
pub fn to_jsonb(datum: &Datum, ty: &SqlType) -> Result<Jsonb> {
    if let Datum::Jsonb(value) = datum {
        return Ok((**value).clone());
    }
    Ok(Jsonb::from_node(&parse_json(&to_json_text(datum, ty), true)?))
}
