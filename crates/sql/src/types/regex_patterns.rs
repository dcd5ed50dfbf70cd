//! PostgreSQL's regular expression patterns on the `regex` crate: flag letters, the ARE
//! escapes the crate spells otherwise (`translate`), and a per-thread cache of compiled
//! patterns. The functions and operators over them are in `functions/regex.rs`; jsonpath's
//! LIKE_REGEX uses them too.

use std::cell::RefCell;
use std::sync::Arc;

use crate::error::{Result, SqlError};

/// The largest compiled pattern (the crate's size limit), as the operators had it.
const PATTERN_SIZE_MAX_BYTES: usize = 1 << 20;
/// Compiled patterns kept per thread; the oldest goes first.
const CACHE_ENTRIES_MAX: usize = 32;

/// How a pattern is compiled and applied (PostgreSQL's flag letters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Flags {
    /// `i` (and `c` back to sensitive).
    pub(crate) insensitive: bool,
    /// `n` / `m`: `.` and bracket expressions do not match a newline, `^` `$` match at
    /// line ends. `p` sets only the first, `w` only the second.
    pub(crate) dot_excludes_newline: bool,
    pub(crate) multi_line: bool,
    /// `x`: whitespace and `#` comments in the pattern are ignored.
    pub(crate) expanded: bool,
    /// `q`: the pattern is a literal string.
    pub(crate) quoted: bool,
    /// `g`: every match, for the functions that take it.
    pub(crate) global: bool,
}

/// Reads a flags argument. `function` names the call in PostgreSQL's errors; `global`
/// says whether it takes `g`.
pub(crate) fn parse_flags(function: &str, flags: &str, global: bool) -> Result<Flags> {
    let mut parsed = Flags::default();
    for flag in flags.chars() {
        match flag {
            'i' => parsed.insensitive = true,
            'c' => parsed.insensitive = false,
            'n' | 'm' => (parsed.dot_excludes_newline, parsed.multi_line) = (true, true),
            's' => (parsed.dot_excludes_newline, parsed.multi_line) = (false, false),
            'p' => (parsed.dot_excludes_newline, parsed.multi_line) = (true, false),
            'w' => (parsed.dot_excludes_newline, parsed.multi_line) = (false, true),
            'x' => parsed.expanded = true,
            't' => parsed.expanded = false,
            'q' => parsed.quoted = true,
            'g' => parsed.global = true,
            'b' | 'e' => {
                return Err(SqlError::unsupported(format!(
                    "regular expression flag \"{flag}\" (basic or extended syntax) is not supported"
                )))
            }
            other => {
                return Err(SqlError::new(
                    "22023",
                    format!("invalid regular expression option: \"{other}\""),
                ))
            }
        }
    }
    if parsed.global && !global {
        return Err(SqlError::new(
            "22023",
            format!("{function}() does not support the \"global\" option"),
        ));
    }
    Ok(parsed)
}

/// PostgreSQL's ARE escapes outside bracket expressions, written as the crate reads them.
fn translate(pattern: &str) -> Result<String> {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    let mut in_brackets = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    return Err(invalid_pattern("invalid escape \\ sequence"));
                };
                if in_brackets {
                    out.push('\\');
                    out.push(next);
                    continue;
                }
                match next {
                    'm' => out.push_str(r"\<"),
                    'M' => out.push_str(r"\>"),
                    'y' => out.push_str(r"\b"),
                    'Y' => out.push_str(r"\B"),
                    'Z' => out.push_str(r"\z"),
                    'b' => out.push_str(r"\x08"),
                    '1'..='9' => {
                        return Err(SqlError::unsupported(
                            "back references in regular expressions are not supported",
                        ))
                    }
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
            }
            '[' if !in_brackets => {
                in_brackets = true;
                out.push('[');
                // A `]` first (after an optional `^`) is a member, not the end.
                if chars.peek() == Some(&'^') {
                    out.push(chars.next().expect("peeked"));
                }
                if chars.peek() == Some(&']') {
                    chars.next();
                    out.push_str(r"\]");
                }
            }
            ']' if in_brackets => {
                in_brackets = false;
                out.push(']');
            }
            '[' if in_brackets && matches!(chars.peek(), Some(':' | '.' | '=')) => {
                // A class such as [:alpha:] inside a bracket expression: copied whole.
                out.push('[');
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == ']' {
                        break;
                    }
                }
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

pub(crate) fn invalid_pattern(detail: impl std::fmt::Display) -> SqlError {
    let detail = detail.to_string();
    // The regex crate's reasons that have PostgreSQL's wording (regerror's messages).
    let postgres = [
        ("unclosed group", "parentheses () not balanced"),
        ("unopened group", "parentheses () not balanced"),
        ("unclosed character class", "brackets [] not balanced"),
        ("repetition operator missing expression", "quantifier operand invalid"),
    ]
    .into_iter()
    .find(|(reason, _)| detail.contains(reason));
    let shown = postgres.map_or(detail.as_str(), |(_, message)| message);
    SqlError::new("2201B", format!("invalid regular expression: {shown}"))
}

thread_local! {
    static CACHE: RefCell<Vec<(String, Flags, Arc<regex::Regex>)>> =
        const { RefCell::new(Vec::new()) };
}

/// The compiled pattern, from the cache when it is there.
pub(crate) fn compile(pattern: &str, flags: Flags) -> Result<Arc<regex::Regex>> {
    let cached = CACHE.with(|cache| {
        let cache = cache.borrow();
        cache.iter().find(|(text, f, _)| text == pattern && *f == flags).map(|(.., r)| r.clone())
    });
    if let Some(regex) = cached {
        return Ok(regex);
    }
    let source = if flags.quoted { regex::escape(pattern) } else { translate(pattern)? };
    let regex = regex::RegexBuilder::new(&source)
        .case_insensitive(flags.insensitive)
        .dot_matches_new_line(!flags.dot_excludes_newline)
        .multi_line(flags.multi_line)
        .ignore_whitespace(flags.expanded && !flags.quoted)
        .size_limit(PATTERN_SIZE_MAX_BYTES)
        .build()
        .map_err(invalid_pattern)?;
    let regex = Arc::new(regex);
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() == CACHE_ENTRIES_MAX {
            cache.remove(0);
        }
        cache.push((pattern.to_string(), flags, regex.clone()));
        debug_assert!(cache.len() <= CACHE_ENTRIES_MAX);
    });
    Ok(regex)
}

/// Whether `text` matches `pattern` under PostgreSQL's flag letters `flags` (jsonpath's
/// LIKE_REGEX, which converts its own flags to these).
pub fn regex_is_match(text: &str, pattern: &str, flags: &str) -> Result<bool> {
    let flags = parse_flags("like_regex", flags, false)?;
    Ok(compile(pattern, flags)?.is_match(text))
}
