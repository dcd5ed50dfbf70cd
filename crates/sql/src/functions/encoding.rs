//! overlay, and bytea's textual encodings: encode / decode (hex, base64, escape as
//! PostgreSQL's encode.c writes and reads them), convert_from / convert_to (UTF8 only).

use super::{check_text_bytes, Call};
use crate::error::{Result, SqlError};
use crate::types::{self, Datum};

/// PostgreSQL's base64 writes a line break after every 76 characters (pg_base64_encode).
const BASE64_LINE_CHARS: usize = 76;

const BASE64_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// overlay(string placing replacement from start [for count]): textoverlay and
/// byteaoverlay, as `substring(string, 1, start - 1) || replacement || substring(string,
/// start + count)`; count defaults to the replacement's length (in characters or bytes).
pub(super) fn overlay(call: Call<'_>) -> Result<Datum> {
    let count = call.args.get(3).map(|_| call.int(3));
    if let (Datum::Bytes(string), Datum::Bytes(replacement)) = (&call.args[0], &call.args[1]) {
        return Ok(Datum::Bytes(overlaid(string, replacement, call.int(2), count)?));
    }
    let chars: Vec<char> = call.text(0).chars().collect();
    let replacement: Vec<char> = call.text(1).chars().collect();
    let out: String = overlaid(&chars, &replacement, call.int(2), count)?.into_iter().collect();
    check_text_bytes(out.len())?;
    Ok(Datum::Text(out))
}

/// text_overlay / bytea_overlay over characters or bytes: a start below 1 is a negative
/// substring length; start + count must fit int4 (both arguments are int4).
fn overlaid<T: Clone>(
    string: &[T],
    replacement: &[T],
    start: i64,
    count: Option<i64>,
) -> Result<Vec<T>> {
    let count =
        count.unwrap_or_else(|| i64::try_from(replacement.len()).expect("a length fits i64"));
    let head_length = usize::try_from(start - 1).map_err(|_| negative_length())?;
    let tail_start =
        i32::try_from(start + count).map_err(|_| SqlError::new("22003", "integer out of range"))?;
    let tail_from = usize::try_from(tail_start.max(1) - 1).expect("not negative");
    let mut out = Vec::with_capacity(string.len() + replacement.len());
    out.extend_from_slice(&string[..head_length.min(string.len())]);
    out.extend_from_slice(replacement);
    out.extend_from_slice(&string[tail_from.min(string.len())..]);
    Ok(out)
}

fn negative_length() -> SqlError {
    SqlError::new("22011", "negative substring length not allowed")
}

fn bytes_argument<'a>(call: &'a Call<'_>) -> &'a [u8] {
    match call.args.first() {
        Some(Datum::Bytes(bytes)) => bytes,
        _ => &[],
    }
}

fn unrecognized_encoding(name: &str) -> SqlError {
    SqlError::new("22023", format!("unrecognized encoding: \"{name}\""))
}

/// encode(bytes, format).
pub(super) fn encode(call: Call<'_>) -> Result<Datum> {
    let bytes = bytes_argument(&call);
    let text = match call.text(1).to_ascii_lowercase().as_str() {
        "hex" => bytes.iter().map(|byte| format!("{byte:02x}")).collect(),
        "base64" => base64_encode(bytes),
        "escape" => escape_encode(bytes),
        _ => return Err(unrecognized_encoding(call.text(1))),
    };
    check_text_bytes(text.len())?;
    Ok(Datum::Text(text))
}

/// decode(text, format).
pub(super) fn decode(call: Call<'_>) -> Result<Datum> {
    let text = call.text(0);
    let bytes = match call.text(1).to_ascii_lowercase().as_str() {
        "hex" => types::hex_decode(text)?,
        "base64" => base64_decode(text)?,
        "escape" => types::escape_decode(text)?,
        _ => return Err(unrecognized_encoding(call.text(1))),
    };
    Ok(Datum::Bytes(bytes))
}

fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() / 3 * 4 + bytes.len() / 57 + 4);
    let mut line_chars = 0;
    for group in bytes.chunks(3) {
        let value = group
            .iter()
            .enumerate()
            .fold(0_u32, |value, (index, byte)| value | (u32::from(*byte) << (16 - 8 * index)));
        for index in 0..4 {
            let symbol = if index <= group.len() {
                let sextet = usize::try_from((value >> (18 - 6 * index)) & 0x3f).expect("6 bits");
                char::from(BASE64_ALPHABET[sextet])
            } else {
                '='
            };
            out.push(symbol);
        }
        line_chars += 4;
        // A full group that fills the line ends it, even the last one (as PostgreSQL).
        if group.len() == 3 && line_chars >= BASE64_LINE_CHARS {
            out.push('\n');
            line_chars = 0;
        }
    }
    out
}

/// escape: NUL and bytes with the high bit as `\ooo`, a backslash doubled.
fn escape_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &byte in bytes {
        if byte == 0 || byte >= 0x80 {
            out.push_str(&format!("\\{byte:03o}"));
        } else if byte == b'\\' {
            out.push_str("\\\\");
        } else {
            out.push(char::from(byte));
        }
    }
    out
}

/// pg_base64_decode: white space skipped; after a `=` the group's other symbols count as
/// padding.
fn base64_decode(text: &str) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut buffer, mut position, mut end) = (0_u32, 0_u32, 0_u32);
    for c in text.chars() {
        if types::is_decode_space(c) {
            continue;
        }
        let value = if c == '=' {
            if end == 0 {
                end = match position {
                    2 => 1,
                    3 => 2,
                    _ => {
                        return Err(SqlError::new(
                            "22023",
                            "unexpected \"=\" while decoding base64 sequence",
                        ))
                    }
                };
            }
            0
        } else {
            let symbol = BASE64_ALPHABET.iter().position(|&b| char::from(b) == c);
            let Some(symbol) = symbol else {
                return Err(SqlError::new(
                    "22023",
                    format!("invalid symbol \"{c}\" found while decoding base64 sequence"),
                ));
            };
            u32::try_from(symbol).expect("an alphabet index fits u32")
        };
        buffer = (buffer << 6) + value;
        position += 1;
        if position == 4 {
            let [_, first, second, third] = buffer.to_be_bytes();
            out.push(first);
            if end == 0 || end > 1 {
                out.push(second);
            }
            if end == 0 || end > 2 {
                out.push(third);
            }
            (buffer, position) = (0, 0);
        }
    }
    if position != 0 {
        return Err(base64_end());
    }
    Ok(out)
}

fn base64_end() -> SqlError {
    SqlError::new("22023", "invalid base64 end sequence")
}

/// An encoding name as PostgreSQL's clean_encoding_name compares it: letters and digits,
/// lower case.
fn clean_encoding_name(name: &str) -> String {
    name.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// The database encoding is UTF8: converting from or to it (or SQL_ASCII's no conversion)
/// is checking UTF8; another encoding PostgreSQL knows is a gap.
fn check_encoding(name: &str, direction: &str) -> Result<()> {
    match clean_encoding_name(name).as_str() {
        "utf8" | "unicode" => Ok(()),
        "sqlascii" | "latin1" | "iso88591" | "win1252" | "latin2" | "euckr" | "eucjp" | "sjis"
        | "gbk" | "big5" | "koi8r" | "win1251" => Err(SqlError::unsupported(format!(
            "conversion {direction} encoding \"{name}\" is not supported"
        ))),
        _ => Err(SqlError::new("22023", format!("invalid {direction} encoding name \"{name}\""))),
    }
}

/// convert_from(bytes, encoding): the bytes as text, checked as UTF8.
pub(super) fn convert_from(call: Call<'_>) -> Result<Datum> {
    check_encoding(call.text(1), "source")?;
    let bytes = bytes_argument(&call);
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => Ok(Datum::Text(text.to_string())),
        Ok(text) => Err(invalid_utf8(&bytes[text.find('\0').expect("contains NUL")..])),
        Err(error) => Err(invalid_utf8(&bytes[error.valid_up_to()..])),
    }
}

/// PostgreSQL's report_invalid_encoding: the bytes of the bad character (as many as its
/// first byte announces, pg_utf_mblen).
fn invalid_utf8(from: &[u8]) -> SqlError {
    let announced = match from.first() {
        Some(byte) if byte & 0xe0 == 0xc0 => 2,
        Some(byte) if byte & 0xf0 == 0xe0 => 3,
        Some(byte) if byte & 0xf8 == 0xf0 => 4,
        _ => 1,
    };
    let shown: Vec<String> =
        from.iter().take(announced).map(|byte| format!("0x{byte:02x}")).collect();
    SqlError::new(
        "22021",
        format!("invalid byte sequence for encoding \"UTF8\": {}", shown.join(" ")),
    )
}

/// convert_to(text, encoding): the text's UTF8 bytes.
pub(super) fn convert_to(call: Call<'_>) -> Result<Datum> {
    check_encoding(call.text(1), "destination")?;
    Ok(Datum::Bytes(call.text(0).as_bytes().to_vec()))
}
