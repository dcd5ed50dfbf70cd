//! PostgreSQL's regular expressions: the `~` operators, SIMILAR TO and LIKE ... ESCAPE
//! (through similar_to_escape and like_escape, as PostgreSQL rewrites them), and the
//! regexp_* functions of PostgreSQL 15 (docs chapter 9.7.3).
//!
//! Patterns run on the `regex` crate. PostgreSQL's advanced regular expressions (ARE)
//! differ from it in a few escapes, which `translate` maps: `\m` `\M` (word start and end),
//! `\y` `\Y` (word boundary or not), `\Z` (end of string) and `\b` (a backspace in
//! PostgreSQL, a word boundary in the crate). In PostgreSQL's default mode `.` matches a
//! newline and `^` `$` match only at the ends of the string; flag `n` changes both, as here.
//! Back references (`\1` in a pattern) and basic or extended syntax (flags `b`, `e`) are
//! refused: the crate has neither.
//!
//! Compiled patterns are kept per thread in a small cache (`CACHE_ENTRIES_MAX`): a pattern
//! given as a constant is compiled once per statement's rows, not once per row.

use std::sync::Arc;

use super::typing::{mixed, texts, TEXT};
use super::{Call, Function, Signature};
use crate::error::{Result, SqlError};
use crate::types::regex_patterns::{compile, parse_flags, Flags};
use crate::types::{ArrayValue, Datum, SqlType};

/// The byte offset of 1-based character position `start` (22023 below 1), or None past the
/// end of the text.
fn start_offset(text: &str, start: i64) -> Result<Option<usize>> {
    if start < 1 {
        return Err(invalid_parameter("start", start));
    }
    let skip = usize::try_from(start - 1).unwrap_or(usize::MAX);
    if skip == 0 {
        return Ok(Some(0));
    }
    Ok(text.char_indices().map(|(offset, _)| offset).chain([text.len()]).nth(skip))
}

fn invalid_parameter(name: &str, value: i64) -> SqlError {
    SqlError::new("22023", format!("invalid value for parameter \"{name}\": {value}"))
}

/// Every match from byte `start` on, as PostgreSQL finds them: after an empty match the
/// search moves one character on. `ignore_degenerate` (regexp_split_*) drops an empty
/// match at the end of the text or right after the previous match.
fn matches<'t>(
    regex: &regex::Regex,
    text: &'t str,
    start: usize,
    ignore_degenerate: bool,
) -> Vec<regex::Captures<'t>> {
    let mut found = Vec::new();
    let (mut search, mut previous_end) = (start, start);
    while search <= text.len() {
        let Some(captures) = regex.captures_at(text, search) else { break };
        let whole = captures.get(0).expect("group 0 is the match");
        let (match_start, match_end) = (whole.start(), whole.end());
        if !ignore_degenerate || (match_start < text.len() && match_end > previous_end) {
            found.push(captures);
        }
        previous_end = match_end;
        search = match_end;
        if match_start == match_end {
            match text[search..].chars().next() {
                Some(next) => search += next.len_utf8(),
                None => break,
            }
        }
    }
    found
}

/// The 1-based character position of byte offset `offset`.
fn char_position(text: &str, offset: usize) -> i64 {
    let chars = text[..offset].chars().count();
    i64::try_from(chars).expect("a text's length fits in i64") + 1
}

/// `~`, `~*`, `!~`, `!~*`.
pub(super) fn operator(call: Call<'_>, insensitive: bool, negated: bool) -> Result<Datum> {
    let flags = Flags { insensitive, ..Flags::default() };
    let regex = compile(call.text(1), flags)?;
    Ok(Datum::Bool(regex.is_match(call.text(0)) != negated))
}

pub(super) fn regexp_like(call: Call<'_>) -> Result<Datum> {
    let flags = parse_flags("regexp_like", optional_text(&call, 2), false)?;
    let regex = compile(call.text(1), flags)?;
    Ok(Datum::Bool(regex.is_match(call.text(0))))
}

pub(super) fn regexp_match(call: Call<'_>) -> Result<Datum> {
    let flags = parse_flags("regexp_match", optional_text(&call, 2), false)?;
    let regex = compile(call.text(1), flags)?;
    Ok(regex.captures(call.text(0)).as_ref().map_or(Datum::Null, groups))
}

pub(super) fn regexp_split_to_array(call: Call<'_>) -> Result<Datum> {
    let pieces =
        split("regexp_split_to_array", call.text(0), call.text(1), optional_text(&call, 2))?;
    if pieces.len() > crate::types::ARRAY_ELEMENTS_MAX {
        return Err(crate::types::array_too_large());
    }
    Ok(text_array(pieces))
}

/// regexp_split_to_table's rows (a set-returning function: exec/set_functions.rs).
pub fn regexp_split_to_table(text: &str, pattern: &str, flags: &str) -> Result<Vec<Datum>> {
    split("regexp_split_to_table", text, pattern, flags)
}

/// The pieces of `text` between the matches of `pattern` (empty matches at the ends or
/// right after a match do not split).
fn split(function: &str, text: &str, pattern: &str, flags: &str) -> Result<Vec<Datum>> {
    let regex = compile(pattern, parse_flags(function, flags, false)?)?;
    let mut pieces = Vec::new();
    let mut piece_start = 0;
    for captures in matches(&regex, text, 0, true) {
        let whole = captures.get(0).expect("group 0 is the match");
        pieces.push(Datum::Text(text[piece_start..whole.start()].into()));
        piece_start = whole.end();
    }
    pieces.push(Datum::Text(text[piece_start..].into()));
    Ok(pieces)
}

/// regexp_matches' rows: each match's groups (or the whole match) as text[]; only the
/// first match without flag `g`.
pub fn regexp_matches(text: &str, pattern: &str, flags: &str) -> Result<Vec<Datum>> {
    let flags = parse_flags("regexp_matches", flags, true)?;
    let regex = compile(pattern, flags)?;
    let mut found = matches(&regex, text, 0, false);
    if !flags.global {
        found.truncate(1);
    }
    Ok(found.iter().map(groups).collect())
}

/// A match as regexp_match returns it: its groups, or the whole match when it has none.
fn groups(captures: &regex::Captures<'_>) -> Datum {
    let groups: Vec<Datum> = if captures.len() > 1 {
        captures
            .iter()
            .skip(1)
            .map(|group| group.map_or(Datum::Null, |group| Datum::Text(group.as_str().into())))
            .collect()
    } else {
        vec![Datum::Text(captures[0].to_string())]
    };
    text_array(groups)
}

pub(super) fn regexp_count(call: Call<'_>) -> Result<Datum> {
    let flags = parse_flags("regexp_count", optional_text(&call, 3), false)?;
    let regex = compile(call.text(1), flags)?;
    let text = call.text(0);
    let Some(start) = start_offset(text, optional_int(&call, 2, 1))? else {
        return Ok(Datum::Int(0));
    };
    let count = matches(&regex, text, start, false).len();
    Ok(Datum::Int(i64::try_from(count).expect("matches in a text fit in i64")))
}

/// regexp_instr(string, pattern [, start [, N [, endoption [, flags [, subexpr]]]]]).
pub(super) fn regexp_instr(call: Call<'_>) -> Result<Datum> {
    let end_option = optional_int(&call, 4, 0);
    if !(0..=1).contains(&end_option) {
        return Err(invalid_parameter("endoption", end_option));
    }
    let found = nth_match(&call, "regexp_instr", 5, 6)?;
    Ok(Datum::Int(match found {
        Some((text, start, end)) => char_position(text, if end_option == 1 { end } else { start }),
        None => 0,
    }))
}

/// regexp_substr(string, pattern [, start [, N [, flags [, subexpr]]]]).
pub(super) fn regexp_substr(call: Call<'_>) -> Result<Datum> {
    Ok(match nth_match(&call, "regexp_substr", 4, 5)? {
        Some((text, start, end)) => Datum::Text(text[start..end].into()),
        None => Datum::Null,
    })
}

/// The byte range of match N's group `subexpr` (start and N at arguments 2 and 3), for
/// regexp_instr and regexp_substr; None when there is no such match or group.
fn nth_match<'c>(
    call: &'c Call<'_>,
    function: &str,
    flags_index: usize,
    subexpr_index: usize,
) -> Result<Option<(&'c str, usize, usize)>> {
    let n = optional_int(call, 3, 1);
    if n < 1 {
        return Err(invalid_parameter("n", n));
    }
    let subexpr = optional_int(call, subexpr_index, 0);
    if subexpr < 0 {
        return Err(invalid_parameter("subexpr", subexpr));
    }
    let flags = parse_flags(function, optional_text(call, flags_index), false)?;
    let regex = compile(call.text(1), flags)?;
    let text = call.text(0);
    let Some(start) = start_offset(text, optional_int(call, 2, 1))? else { return Ok(None) };
    let found = matches(&regex, text, start, false);
    let index = usize::try_from(n - 1).unwrap_or(usize::MAX);
    let group = usize::try_from(subexpr).unwrap_or(usize::MAX);
    Ok(found
        .get(index)
        .and_then(|captures| captures.get(group))
        .map(|group| (text, group.start(), group.end())))
}

/// regexp_replace(source, pattern, replacement [, start [, N]] [, flags]).
pub(super) fn regexp_replace(call: Call<'_>) -> Result<Datum> {
    let integer_fourth = call.arg_types.get(3).is_some_and(is_integer);
    let (start, n, flags_index) = match call.args.len() {
        4 if integer_fourth => (call.int(3), None, None),
        4 => (1, None, Some(3)),
        5 => (call.int(3), Some(call.int(4)), None),
        6 => (call.int(3), Some(call.int(4)), Some(5)),
        _ => (1, None, None),
    };
    if let Some(n) = n.filter(|n| *n < 0) {
        return Err(invalid_parameter("n", n));
    }
    let flags_text = flags_index.map_or("", |index| call.text(index));
    let flags = parse_flags("regexp_replace", flags_text, true)?;
    let regex = compile(call.text(1), flags)?;
    let (text, replacement) = (call.text(0), call.text(2));
    let Some(start) = start_offset(text, start)? else { return Ok(Datum::Text(text.into())) };
    // N = 0 (or absent with `g`) replaces every match; otherwise only match N.
    let chosen = match n {
        Some(0) => None,
        Some(n) => Some(n),
        None if flags.global => None,
        None => Some(1),
    };
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (index, captures) in matches(&regex, text, start, false).iter().enumerate() {
        let number = i64::try_from(index).expect("matches fit in i64") + 1;
        if chosen.is_some_and(|chosen| chosen != number) {
            continue;
        }
        let whole = captures.get(0).expect("group 0 is the match");
        out.push_str(&text[copied..whole.start()]);
        expand(replacement, captures, &mut out);
        copied = whole.end();
        super::check_text_bytes(out.len())?;
    }
    out.push_str(&text[copied..]);
    super::check_text_bytes(out.len())?;
    Ok(Datum::Text(out))
}

/// A replacement string: `\1`..`\9` a group (empty when absent), `\&` the match, `\\` a
/// backslash; any other backslash is kept as it is, as PostgreSQL does.
fn expand(replacement: &str, captures: &regex::Captures<'_>, out: &mut String) {
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some(digit @ '1'..='9') => {
                chars.next();
                let group = digit.to_digit(10).expect("a digit") as usize;
                out.push_str(captures.get(group).map_or("", |group| group.as_str()));
            }
            Some('&') => {
                chars.next();
                out.push_str(&captures[0]);
            }
            Some('\\') => {
                chars.next();
                out.push('\\');
            }
            _ => out.push('\\'),
        }
    }
}

/// similar_to_escape(pattern [, escape]): the SQL regular expression of SIMILAR TO as a
/// POSIX one (PostgreSQL's similar_escape_internal), anchored at both ends.
pub(super) fn similar_to_escape(call: Call<'_>) -> Result<Datum> {
    let escape = match call.args.len() {
        1 => Some('\\'),
        _ => single_escape(call.text(1))?,
    };
    similar_pattern(call.text(0), escape).map(Datum::Text)
}

/// substring(text, pattern) (textregexsubstr: the first parenthesized subexpression's match
/// when the pattern has one, else the whole match; NULL without a match) and
/// substring(text, pattern, escape), the same over the SIMILAR pattern's regular expression
/// (its part between the escape-double-quote separators).
pub(super) fn substring(call: &Call<'_>) -> Result<Datum> {
    let pattern = match call.args.len() {
        // PostgreSQL's regex engine makes the part before the first separator as short and
        // the marked part as long as possible; the regex crate's lazy `{1,1}?` does not, so
        // the marked part would differ (`'foobar'` with `%#"o%#"%` gives `obar`, not
        // `oobar`). Refused until it is matched as PostgreSQL does.
        3 => {
            // PostgreSQL's errors about the pattern and the escape come first.
            similar_pattern(call.text(1), single_escape(call.text(2))?)?;
            return Err(SqlError::unsupported(
                "substring with a SQL regular expression (SIMILAR ... ESCAPE) is not supported",
            ));
        }
        _ => call.text(1).to_string(),
    };
    let regex = compile(&pattern, Flags::default())?;
    let Some(captures) = regex.captures(call.text(0)) else { return Ok(Datum::Null) };
    let group = if regex.captures_len() > 1 { captures.get(1) } else { captures.get(0) };
    Ok(group.map_or(Datum::Null, |found| Datum::Text(found.as_str().to_string())))
}

/// The SQL regular expression of SIMILAR TO as a POSIX one (similar_escape_internal).
fn similar_pattern(pattern: &str, escape: Option<char>) -> Result<String> {
    let mut out = String::from("^(?:");
    let (mut after_escape, mut in_class, mut quotes) = (false, false, 0);
    // 1 right after `[`, 2 after `[^`, 3 later (PostgreSQL's charclass_start).
    let mut class_position = 0;
    for c in pattern.chars() {
        if after_escape {
            after_escape = false;
            if c == '"' && !in_class {
                quotes += 1;
                match quotes {
                    1 => out.push_str("){1,1}?("),
                    2 => out.push_str("){1,1}(?:"),
                    _ => {
                        return Err(SqlError::new(
                            "2200C",
                            "SQL regular expression may not contain more than two \
                             escape-double-quote separators",
                        ))
                    }
                }
            } else {
                out.push('\\');
                out.push(c);
            }
        } else if Some(c) == escape {
            after_escape = true;
        } else if in_class {
            if c == '\\' {
                out.push('\\');
            }
            out.push(c);
            // A `]` right after `[` or `[^` is a member; a later one ends the class.
            if c == ']' && class_position > 2 {
                in_class = false;
            } else if c == '^' {
                class_position += 1;
            } else {
                class_position = 3;
            }
        } else {
            match c {
                '[' => {
                    out.push('[');
                    in_class = true;
                    class_position = 1;
                }
                '%' => out.push_str(".*"),
                '_' => out.push('.'),
                '(' => out.push_str("(?:"),
                '\\' | '.' | '^' | '$' => {
                    out.push('\\');
                    out.push(c);
                }
                other => out.push(other),
            }
        }
    }
    out.push_str(")$");
    Ok(out)
}

/// like_escape(pattern, escape): the LIKE pattern with `escape` as its escape character,
/// rewritten to the backslash escapes LIKE reads (PostgreSQL's do_like_escape).
pub(super) fn like_escape(call: Call<'_>) -> Result<Datum> {
    let pattern = call.text(0);
    let mut out = String::with_capacity(pattern.len() + 4);
    match single_escape(call.text(1))? {
        None => {
            for c in pattern.chars() {
                if c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
        }
        Some('\\') => out.push_str(pattern),
        Some(escape) => {
            let mut after_escape = false;
            for c in pattern.chars() {
                if c == escape && !after_escape {
                    out.push('\\');
                    after_escape = true;
                } else if c == '\\' {
                    out.push('\\');
                    if !after_escape {
                        out.push('\\');
                    }
                    after_escape = false;
                } else {
                    out.push(c);
                    after_escape = false;
                }
            }
        }
    }
    Ok(Datum::Text(out))
}

/// An escape string: empty (no escape character) or one character (22025 otherwise).
fn single_escape(escape: &str) -> Result<Option<char>> {
    let mut chars = escape.chars();
    match (chars.next(), chars.next()) {
        (None, _) => Ok(None),
        (Some(c), None) => Ok(Some(c)),
        _ => Err(SqlError::new("22025", "invalid escape string")),
    }
}

fn optional_text<'c>(call: &'c Call<'_>, index: usize) -> &'c str {
    if index < call.args.len() {
        call.text(index)
    } else {
        ""
    }
}

fn optional_int(call: &Call<'_>, index: usize, default: i64) -> i64 {
    if index < call.args.len() {
        call.int(index)
    } else {
        default
    }
}

fn is_integer(ty: &SqlType) -> bool {
    matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
}

fn text_array(elements: Vec<Datum>) -> Datum {
    Datum::Array(Arc::new(ArrayValue { lower: 1, elements }))
}

/// Arguments as PostgreSQL declares them: text in the `T` positions, integer in the `I`
/// ones, for the prefix the call gives.
fn shaped(name: &str, types: &[SqlType], shape: &str, output: SqlType) -> Result<Signature> {
    let kinds: Vec<Option<SqlType>> =
        shape.chars().map(|kind| (kind == 'I').then_some(SqlType::Int4)).collect();
    if types.len() > kinds.len() {
        return Err(super::no_function(name, types));
    }
    mixed(name, types, &kinds, output)
}

/// regexp_replace's two 4-argument forms: an integer fourth is `start`, text `flags`.
fn replace_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let shape = match types.get(3) {
        Some(fourth) if types.len() == 4 && is_integer(fourth) => "TTTI",
        _ if types.len() == 4 => "TTTT",
        _ => "TTTIIT",
    };
    shaped(name, types, shape, TEXT)
}

fn text_array_type() -> SqlType {
    SqlType::Array(Box::new(TEXT))
}

/// The regular-expression entries of the registry.
pub(super) static REGEX: &[Function] = &[
    // The regular-expression operators (`~`, `~*`, `!~`, `!~*`) bind to these.
    function!(
        &["regex_match"],
        2..=2,
        |n, t| texts(n, t, SqlType::Bool),
        |c| operator(c, false, false),
        "'abc', 'b'"
    ),
    function!(
        &["regex_imatch"],
        2..=2,
        |n, t| texts(n, t, SqlType::Bool),
        |c| operator(c, true, false),
        "'abc', 'B'"
    ),
    function!(
        &["regex_not_match"],
        2..=2,
        |n, t| texts(n, t, SqlType::Bool),
        |c| operator(c, false, true),
        "'abc', 'b'"
    ),
    function!(
        &["regex_not_imatch"],
        2..=2,
        |n, t| texts(n, t, SqlType::Bool),
        |c| operator(c, true, true),
        "'abc', 'B'"
    ),
    function!(
        &["regexp_like"],
        2..=3,
        |n, t| texts(n, t, SqlType::Bool),
        regexp_like,
        "'a', 'A', 'i'"
    ),
    function!(
        &["regexp_match"],
        2..=3,
        |n, t| texts(n, t, text_array_type()),
        regexp_match,
        "'ab', '(a)(b)'"
    ),
    function!(
        &["regexp_split_to_array"],
        2..=3,
        |n, t| texts(n, t, text_array_type()),
        regexp_split_to_array,
        "'a b', ' '"
    ),
    function!(
        &["regexp_count"],
        2..=4,
        |n, t| shaped(n, t, "TTIT", SqlType::Int4),
        regexp_count,
        "'aa', 'a'"
    ),
    function!(
        &["regexp_instr"],
        2..=7,
        |n, t| shaped(n, t, "TTIIITI", SqlType::Int4),
        regexp_instr,
        "'abc', 'b', 1, 1, 0, '', 0"
    ),
    function!(
        &["regexp_substr"],
        2..=6,
        |n, t| shaped(n, t, "TTIITI", TEXT),
        regexp_substr,
        "'abc', 'b', 1, 1, '', 0"
    ),
    function!(
        &["regexp_replace"],
        3..=6,
        replace_signature,
        regexp_replace,
        "'abc', 'b', 'x', 'g'"
    ),
    // SIMILAR TO and LIKE ... ESCAPE bind through these, as PostgreSQL's parser rewrites them.
    function!(
        &["similar_to_escape"],
        1..=2,
        |n, t| texts(n, t, TEXT),
        similar_to_escape,
        "'a%', '#'"
    ),
    function!(&["like_escape"], 2..=2, |n, t| texts(n, t, TEXT), like_escape, "'a#%', '#'"),
];
