//! Text functions.

use super::{check_text_bytes, count, Call};
use crate::error::{Result, SqlError};
use crate::types::{Datum, SqlType};

/// Fails with 54000 when replacing every `from` in `text` with `to` would build a text
/// over `TEXT_BYTES_MAX` (each match may grow it: checked before building it).
pub(super) fn check_replaced_bytes(text: &str, from: &str, to: &str) -> Result<()> {
    let matches = text.matches(from).count();
    let growth = to.len().saturating_sub(from.len());
    check_text_bytes(text.len().saturating_add(matches.saturating_mul(growth)))
}

/// length: characters; a bpchar argument (kept as bound) ignores its padding.
pub(super) fn length(call: Call<'_>) -> Result<Datum> {
    if let Some(Datum::Bytes(bytes)) = call.args.first() {
        return count(bytes.len());
    }
    let value = call.text(0);
    let value = match call.arg_types.first() {
        Some(SqlType::Char(_)) => value.trim_end_matches(' '),
        _ => value,
    };
    count(value.chars().count())
}

/// octet_length: bytes, a bpchar's padding included.
pub(super) fn octet_length(call: Call<'_>) -> Result<Datum> {
    if let Some(Datum::Bytes(bytes)) = call.args.first() {
        return count(bytes.len());
    }
    count(call.text(0).len())
}

pub(super) fn upper(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(call.text(0).chars().map(upper_char).collect()))
}

pub(super) fn lower(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(call.text(0).chars().map(lower_char).collect()))
}

/// A character's upper case as PostgreSQL's towupper gives it: one character for one (`ß`
/// stays `ß`, where Rust's full mapping makes `SS`).
fn upper_char(c: char) -> char {
    let mut mapped = c.to_uppercase();
    match (mapped.next(), mapped.next()) {
        (Some(single), None) => single,
        _ => c,
    }
}

/// A character's lower case, one character for one (towlower; `Σ` is always `σ`).
fn lower_char(c: char) -> char {
    let mut mapped = c.to_lowercase();
    match (mapped.next(), mapped.next()) {
        (Some(single), None) => single,
        _ => c,
    }
}

pub(super) fn reverse(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(call.text(0).chars().rev().collect()))
}

pub(super) fn initcap(call: Call<'_>) -> Result<Datum> {
    let mut out = String::new();
    let mut start = true;
    for c in call.text(0).chars() {
        if c.is_alphanumeric() {
            out.push(if start { upper_char(c) } else { lower_char(c) });
            start = false;
        } else {
            out.push(c);
            start = true;
        }
    }
    Ok(Datum::Text(out))
}

/// md5: the hex digest of the text's bytes, as PostgreSQL.
/// ascii(text): the code point of the first character (UTF8's, as PostgreSQL's in a UTF8
/// database), 0 for the empty string.
pub(super) fn ascii(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Int(call.text(0).chars().next().map_or(0, |first| i64::from(u32::from(first)))))
}

/// chr(integer): the character with that code point; PostgreSQL's errors for 0, negative
/// numbers, surrogates and numbers past Unicode.
pub(super) fn chr(call: Call<'_>) -> Result<Datum> {
    let number = call.args.first().and_then(Datum::as_int).unwrap_or(0);
    if number < 0 {
        return Err(SqlError::new("22023", "character number must be positive"));
    }
    if number == 0 {
        return Err(SqlError::new("54000", "null character not permitted"));
    }
    let character = u32::try_from(number).ok().and_then(char::from_u32);
    match character {
        Some(character) => Ok(Datum::Text(character.to_string())),
        None if (0xD800..=0xDFFF).contains(&number) => Err(SqlError::new(
            "54000",
            format!("requested character not valid for encoding: {number}"),
        )),
        None => Err(SqlError::new(
            "54000",
            format!("requested character too large for encoding: {number}"),
        )),
    }
}

pub(super) fn md5(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(format!("{:x}", md5::compute(call.text(0).as_bytes()))))
}

/// Which ends trim removes characters from.
#[derive(Clone, Copy)]
pub(super) enum Side {
    Both,
    Start,
    End,
}

pub(super) fn trim(call: Call<'_>, side: Side) -> Result<Datum> {
    let characters: Vec<char> =
        if call.args.len() > 1 { call.text(1).chars().collect() } else { vec![' '] };
    let value = call.text(0);
    let trimmed = match side {
        Side::Both => value.trim_matches(|c| characters.contains(&c)),
        Side::Start => value.trim_start_matches(|c| characters.contains(&c)),
        Side::End => value.trim_end_matches(|c| characters.contains(&c)),
    };
    Ok(Datum::Text(trimmed.to_string()))
}

/// A 1-based character position clamped to `0..=length` as a 0-based index.
fn clamp_position(position: i64, length: usize) -> usize {
    if position <= 0 {
        return 0;
    }
    usize::try_from(position).map_or(length, |position| position.min(length))
}

pub(super) fn substr(call: Call<'_>) -> Result<Datum> {
    let chars: Vec<char> = call.text(0).chars().collect();
    let start = call.int(1);
    let end = if call.args.len() > 2 {
        let length = call.int(2);
        if length < 0 {
            return Err(SqlError::new("22011", "negative substring length not allowed"));
        }
        start.saturating_add(length)
    } else {
        i64::MAX
    };
    let from = clamp_position(start.max(1) - 1, chars.len());
    let to = clamp_position(end.saturating_sub(1), chars.len());
    Ok(Datum::Text(if to > from { chars[from..to].iter().collect() } else { String::new() }))
}

/// How many characters left/right take from `length`: `n`, or all but `-n`.
fn taken(n: i64, length: usize) -> usize {
    if n >= 0 {
        clamp_position(n, length)
    } else {
        length.saturating_sub(crate::convert::usize_from(n.unsigned_abs()))
    }
}

pub(super) fn left(call: Call<'_>) -> Result<Datum> {
    let chars: Vec<char> = call.text(0).chars().collect();
    let take = taken(call.int(1), chars.len());
    Ok(Datum::Text(chars[..take].iter().collect()))
}

pub(super) fn right(call: Call<'_>) -> Result<Datum> {
    let chars: Vec<char> = call.text(0).chars().collect();
    let take = taken(call.int(1), chars.len());
    Ok(Datum::Text(chars[chars.len() - take..].iter().collect()))
}

/// A non-negative count argument; negative counts act as zero, as in PostgreSQL.
fn non_negative(value: i64) -> usize {
    crate::convert::usize_from_non_negative(value.max(0)).expect("clamped to non-negative")
}

pub(super) fn repeat(call: Call<'_>) -> Result<Datum> {
    let times = non_negative(call.int(1));
    check_text_bytes(call.text(0).len().saturating_mul(times))?;
    Ok(Datum::Text(call.text(0).repeat(times)))
}

pub(super) fn pad(call: Call<'_>, at_start: bool) -> Result<Datum> {
    let value: Vec<char> = call.text(0).chars().collect();
    let length = non_negative(call.int(1));
    // As PostgreSQL: room for `length` characters of up to 4 bytes (UTF-8).
    check_text_bytes(length.saturating_mul(4))?;
    let fill: Vec<char> =
        if call.args.len() > 2 { call.text(2).chars().collect() } else { vec![' '] };
    if value.len() >= length || fill.is_empty() {
        return Ok(Datum::Text(value.iter().take(length).collect()));
    }
    let padding: String = fill.iter().cycle().take(length - value.len()).collect();
    let value: String = value.iter().collect();
    Ok(Datum::Text(if at_start { padding + &value } else { value + &padding }))
}

pub(super) fn replace(call: Call<'_>) -> Result<Datum> {
    let (value, from, to) = (call.text(0), call.text(1), call.text(2));
    if from.is_empty() {
        return Ok(Datum::Text(value.to_string()));
    }
    check_replaced_bytes(value, from, to)?;
    Ok(Datum::Text(value.replace(from, to)))
}

pub(super) fn translate(call: Call<'_>) -> Result<Datum> {
    let from: Vec<char> = call.text(1).chars().collect();
    let to: Vec<char> = call.text(2).chars().collect();
    Ok(Datum::Text(
        call.text(0)
            .chars()
            .filter_map(|c| match from.iter().position(|&f| f == c) {
                Some(i) => to.get(i).copied(),
                None => Some(c),
            })
            .collect(),
    ))
}

pub(super) fn strpos(call: Call<'_>) -> Result<Datum> {
    let haystack = call.text(0);
    match haystack.find(call.text(1)) {
        Some(byte) => count(haystack[..byte].chars().count() + 1),
        None => Ok(Datum::Int(0)),
    }
}

pub(super) fn starts_with(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Bool(call.text(0).starts_with(call.text(1))))
}

pub(super) fn split_part(call: Call<'_>) -> Result<Datum> {
    let field = call.int(2);
    if field == 0 {
        return Err(SqlError::new("22023", "field position must not be zero"));
    }
    let parts: Vec<&str> = if call.text(1).is_empty() {
        vec![call.text(0)]
    } else {
        call.text(0).split(call.text(1)).collect()
    };
    let from_end = crate::convert::usize_from(field.unsigned_abs());
    let index = if field > 0 { Some(from_end - 1) } else { parts.len().checked_sub(from_end) };
    Ok(Datum::Text(index.and_then(|i| parts.get(i)).map_or(String::new(), |part| part.to_string())))
}

/// Output-function text of each argument (bpchar keeps its padding, booleans print t/f).
fn output_texts(call: &Call<'_>) -> Vec<Option<String>> {
    call.args
        .iter()
        .zip(call.arg_types.iter().chain(std::iter::repeat(&SqlType::Text)))
        .map(|(arg, ty)| arg.to_text(ty))
        .collect()
}

pub(super) fn concat(call: Call<'_>) -> Result<Datum> {
    let texts = output_texts(&call);
    check_text_bytes(texts.iter().flatten().map(String::len).fold(0, usize::saturating_add))?;
    Ok(Datum::Text(texts.into_iter().flatten().collect()))
}

pub(super) fn concat_ws(call: Call<'_>) -> Result<Datum> {
    let texts = output_texts(&call);
    let Some(Some(separator)) = texts.first() else { return Ok(Datum::Null) };
    let separators = separator.len().saturating_mul(texts.len());
    check_text_bytes(
        texts.iter().flatten().map(String::len).fold(separators, usize::saturating_add),
    )?;
    let parts: Vec<String> = texts[1..].iter().flatten().cloned().collect();
    Ok(Datum::Text(parts.join(separator)))
}

/// PostgreSQL's quote_literal: quotes and backslashes doubled, an E prefix when there is a
/// backslash.
pub(super) fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 3);
    if text.contains('\\') {
        out.push('E');
    }
    out.push('\'');
    for c in text.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

pub(super) fn quote_literal(call: Call<'_>) -> Result<Datum> {
    let text = call.text(0);
    check_text_bytes(text.len().saturating_mul(2).saturating_add(3))?;
    Ok(Datum::Text(literal(text)))
}

/// quote_literal, or the word NULL for a NULL.
pub(super) fn quote_nullable(call: Call<'_>) -> Result<Datum> {
    match call.args[0].as_text() {
        None => Ok(Datum::Text("NULL".into())),
        Some(text) => {
            check_text_bytes(text.len().saturating_mul(2).saturating_add(3))?;
            Ok(Datum::Text(literal(text)))
        }
    }
}

pub(super) fn quote_ident(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(crate::identifiers::quote_identifier(call.text(0))))
}
