//! bytea's text input (byteain): the hex format (`\x`, then pairs of hexadecimal digits,
//! white space between pairs) and the escape format (`\ooo` with a first digit 0-3, `\\`,
//! every other byte as it is). decode(text, 'hex' / 'escape') reads the same forms without
//! the `\x` (encode.c's hex_decode and esc_decode, which byteain calls too), so the errors
//! are the same.

use crate::error::{Result, SqlError};

/// byteain: `\x` (lower case only, as PostgreSQL) starts the hex format; anything else is
/// the escape format.
pub fn parse_bytea(text: &str) -> Result<Vec<u8>> {
    match text.strip_prefix("\\x") {
        Some(hex) => hex_decode(hex),
        None => escape_decode(text),
    }
}

/// The white space hex_decode (between pairs; an error inside one) and pg_b64_decode skip.
pub fn is_decode_space(c: char) -> bool {
    matches!(c, ' ' | '\n' | '\t' | '\r')
}

/// hex_decode: pairs of hexadecimal digits (either case), white space between pairs
/// skipped; 22023 for another character (shown whole) or a digit without its pair.
pub fn hex_decode(text: &str) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 2);
    let mut chars = text.chars();
    while let Some(high) = chars.next() {
        if is_decode_space(high) {
            continue;
        }
        let high = hex_digit(high)?;
        let low = chars.next().ok_or_else(|| {
            SqlError::new("22023", "invalid hexadecimal data: odd number of digits")
        })?;
        out.push(high << 4 | hex_digit(low)?);
    }
    Ok(out)
}

fn hex_digit(c: char) -> Result<u8> {
    c.to_digit(16)
        .map(|digit| u8::try_from(digit).expect("a hexadecimal digit fits u8"))
        .ok_or_else(|| SqlError::new("22023", format!("invalid hexadecimal digit: \"{c}\"")))
}

/// esc_decode: `\\` is one backslash, `\ooo` (first digit 0-3, so at most 0o377) one byte;
/// any other backslash is 22P02. Other bytes (multibyte characters too) are kept as they
/// are.
pub fn escape_decode(text: &str) -> Result<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] != b'\\' {
            out.push(bytes[index]);
            index += 1;
        } else if bytes.get(index + 1) == Some(&b'\\') {
            out.push(b'\\');
            index += 2;
        } else {
            let digits = bytes.get(index + 1..index + 4).filter(|digits| {
                matches!(digits[0], b'0'..=b'3')
                    && digits[1..].iter().all(|digit| matches!(digit, b'0'..=b'7'))
            });
            let Some(digits) = digits else {
                return Err(SqlError::new("22P02", "invalid input syntax for type bytea"));
            };
            out.push(digits.iter().fold(0, |value, digit| (value << 3) | (digit - b'0')));
            index += 4;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_format() {
        assert_eq!(parse_bytea("\\000").unwrap(), vec![0]);
        assert_eq!(parse_bytea("a\\\\b").unwrap(), b"a\\b".to_vec());
        assert_eq!(parse_bytea("\\1411").unwrap(), b"a1".to_vec());
        assert_eq!(parse_bytea("\\377").unwrap(), vec![0xff]);
        assert_eq!(parse_bytea("é").unwrap(), "é".as_bytes().to_vec());
        assert_eq!(parse_bytea("\\X41").unwrap_err().sqlstate, "22P02");
        for bad in ["\\", "a\\", "\\9", "\\400", "\\14", "\\18x", "\\\\\\"] {
            let error = parse_bytea(bad).unwrap_err();
            assert_eq!(
                (error.sqlstate, error.message.as_str()),
                ("22P02", "invalid input syntax for type bytea"),
                "{bad}"
            );
        }
    }

    #[test]
    fn hex_format() {
        assert_eq!(parse_bytea("\\x").unwrap(), Vec::<u8>::new());
        assert_eq!(parse_bytea("\\x 41\n4a\t\r ").unwrap(), vec![0x41, 0x4a]);
        assert_eq!(parse_bytea("\\xAbCd").unwrap(), vec![0xab, 0xcd]);
        let message = |text: &str| parse_bytea(text).unwrap_err().message;
        assert_eq!(message("\\x414"), "invalid hexadecimal data: odd number of digits");
        assert_eq!(message("\\x4 1"), "invalid hexadecimal digit: \" \"");
        assert_eq!(message("\\x+1"), "invalid hexadecimal digit: \"+\"");
        // A multibyte character is shown whole (it was sliced inside: a panic).
        assert_eq!(message("\\xaé1"), "invalid hexadecimal digit: \"é\"");
        assert_eq!(parse_bytea("\\xzz").unwrap_err().sqlstate, "22023");
    }
}
