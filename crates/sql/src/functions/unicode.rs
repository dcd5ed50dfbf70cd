//! unistr, normalize and IS [NOT] [form] NORMALIZED (is_normalized), as PostgreSQL's
//! varlena.c runs them in a UTF8 database.

use unicode_normalization::{is_nfc, is_nfd, is_nfkc, is_nfkd, UnicodeNormalization};

use super::Call;
use crate::error::{Result, SqlError};
use crate::types::Datum;

/// The Unicode normalization forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Nfc,
    Nfd,
    Nfkc,
    Nfkd,
}

/// The form the optional argument `index` names (NFC when absent), case-insensitively as
/// unicode_norm_form_from_string; 22023 for another name.
fn form_argument(call: &Call<'_>, index: usize) -> Result<Form> {
    if call.args.len() <= index {
        return Ok(Form::Nfc);
    }
    let name = call.text(index);
    match name.to_ascii_uppercase().as_str() {
        "NFC" => Ok(Form::Nfc),
        "NFD" => Ok(Form::Nfd),
        "NFKC" => Ok(Form::Nfkc),
        "NFKD" => Ok(Form::Nfkd),
        _ => Err(SqlError::new("22023", format!("invalid normalization form: {name}"))),
    }
}

/// normalize(text [, form]).
pub(super) fn normalize(call: Call<'_>) -> Result<Datum> {
    let text = call.text(0);
    let normalized: String = match form_argument(&call, 1)? {
        Form::Nfc => text.nfc().collect(),
        Form::Nfd => text.nfd().collect(),
        Form::Nfkc => text.nfkc().collect(),
        Form::Nfkd => text.nfkd().collect(),
    };
    super::check_text_bytes(normalized.len())?;
    Ok(Datum::Text(normalized))
}

/// is_normalized(text [, form]): `text IS [form] NORMALIZED`.
pub(super) fn is_normalized(call: Call<'_>) -> Result<Datum> {
    let text = call.text(0);
    let normalized = match form_argument(&call, 1)? {
        Form::Nfc => is_nfc(text),
        Form::Nfd => is_nfd(text),
        Form::Nfkc => is_nfkc(text),
        Form::Nfkd => is_nfkd(text),
    };
    Ok(Datum::Bool(normalized))
}

/// The escapes unistr reads after a backslash: the character introducing the digits (none
/// for `\XXXX`) and how many hexadecimal digits follow.
const ESCAPES: [(Option<char>, usize); 4] =
    [(None, 4), (Some('u'), 4), (Some('+'), 6), (Some('U'), 8)];

/// unistr(text): the text with its Unicode escapes `\XXXX`, `\+XXXXXX`, `\uXXXX` and
/// `\UXXXXXXXX` (UTF-16 surrogate pairs combined) and `\\` replaced.
pub(super) fn unistr(call: Call<'_>) -> Result<Datum> {
    let input: Vec<char> = call.text(0).chars().collect();
    let mut out = String::with_capacity(input.len());
    let mut pair_first: Option<u32> = None;
    let mut at = 0;
    while let Some(&c) = input.get(at) {
        if c != '\\' {
            if pair_first.is_some() {
                return Err(invalid_surrogate_pair());
            }
            out.push(c);
            at += 1;
            continue;
        }
        let rest = &input[at + 1..];
        if rest.first() == Some(&'\\') {
            // An escaped backslash between the halves of a surrogate pair breaks it
            // (PostgreSQL 15: 42601 invalid Unicode surrogate pair).
            if pair_first.is_some() {
                return Err(invalid_surrogate_pair());
            }
            out.push('\\');
            at += 2;
            continue;
        }
        let (code, length) = escape(rest)?;
        if let Some(character) = code_point(code, &mut pair_first)? {
            out.push(character);
        }
        at += 1 + length;
    }
    if pair_first.is_some() {
        return Err(invalid_surrogate_pair());
    }
    super::check_text_bytes(out.len())?;
    Ok(Datum::Text(out))
}

/// The code point of the escape `rest` starts with (the characters after the backslash) and
/// the characters it takes; 42601 when it is none of `ESCAPES`.
fn escape(rest: &[char]) -> Result<(u32, usize)> {
    for (introducer, digits) in ESCAPES {
        let skip = usize::from(introducer.is_some());
        if introducer.is_some() && rest.first().copied() != introducer {
            continue;
        }
        let Some(hex) = rest.get(skip..skip + digits) else { continue };
        if !hex.iter().all(char::is_ascii_hexdigit) {
            continue;
        }
        let code = hex.iter().fold(0u32, |value, digit| {
            (value << 4) | digit.to_digit(16).expect("checked to be a hexadecimal digit")
        });
        return Ok((code, skip + digits));
    }
    Err(SqlError::new("42601", "invalid Unicode escape"))
}

/// The character an escaped code point adds, combining a UTF-16 surrogate pair through
/// `pair_first` (None while the first half waits for its second).
fn code_point(code: u32, pair_first: &mut Option<u32>) -> Result<Option<char>> {
    if code == 0 || code > 0x10_FFFF {
        return Err(SqlError::new("22023", format!("invalid Unicode code point: {code:04X}")));
    }
    let is_second = (0xDC00..=0xDFFF).contains(&code);
    let code = match (pair_first.take(), is_second) {
        (Some(first), true) => 0x1_0000 + ((first & 0x3FF) << 10) + (code & 0x3FF),
        (Some(_), false) | (None, true) => return Err(invalid_surrogate_pair()),
        (None, false) => code,
    };
    if (0xD800..=0xDBFF).contains(&code) {
        *pair_first = Some(code);
        return Ok(None);
    }
    let character = char::from_u32(code).expect("a code point up to U+10FFFF, not a surrogate");
    Ok(Some(character))
}

fn invalid_surrogate_pair() -> SqlError {
    SqlError::new("42601", "invalid Unicode surrogate pair")
}
