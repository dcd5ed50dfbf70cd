//! PostgreSQL's `uuid`: 16 bytes, read and written as PostgreSQL's uuid_in / uuid_out do,
//! ordered byte by byte (uuid_cmp is a memcmp), sent on the wire as the 16 bytes.
//!
//! Text input accepts 32 hexadecimal digits in either case, optionally inside one pair of
//! braces, with an optional hyphen after any group of four digits but the last
//! (`a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`, `{A0EEBC99...}`, `a0ee-bc99-...`). No white
//! space is skipped. Output is always lower case, grouped 8-4-4-4-12.

use ring::rand::SecureRandom;

use super::Datum;
use crate::error::{Result, SqlError};

/// pg_type's OID of uuid, and of its array type `_uuid`.
pub const UUID_OID: u32 = 2950;
pub const UUID_ARRAY_OID: u32 = 2951;
/// A uuid's size in bytes (PostgreSQL's UUID_LEN).
pub const UUID_LENGTH: usize = 16;

/// Reads a uuid's text form; 22P02 with PostgreSQL's message when it is not one.
pub fn parse_uuid(text: &str) -> Result<Datum> {
    parse_uuid_bytes(text.as_bytes()).map(Datum::Uuid).ok_or_else(|| {
        SqlError::new("22P02", format!("invalid input syntax for type uuid: \"{text}\""))
    })
}

/// PostgreSQL's string_to_uuid: `None` when `source` is not a uuid.
fn parse_uuid_bytes(source: &[u8]) -> Option<[u8; UUID_LENGTH]> {
    let (braces, mut rest) = match source.split_first() {
        Some((b'{', rest)) => (true, rest),
        _ => (false, source),
    };
    let mut bytes = [0u8; UUID_LENGTH];
    for (index, byte) in bytes.iter_mut().enumerate() {
        let (high, low) = match rest {
            [high, low, ..] => (hex_digit(*high)?, hex_digit(*low)?),
            _ => return None,
        };
        *byte = (high << 4) | low;
        rest = &rest[2..];
        // A hyphen may follow each group of four digits (two bytes), but not the last.
        if index % 2 == 1 && index < UUID_LENGTH - 1 {
            if let Some((b'-', after)) = rest.split_first() {
                rest = after;
            }
        }
    }
    if braces {
        rest = rest.strip_prefix(b"}")?;
    }
    rest.is_empty().then_some(bytes)
}

fn hex_digit(digit: u8) -> Option<u8> {
    char::from(digit).to_digit(16).and_then(|value| u8::try_from(value).ok())
}

/// uuid_out: lower-case hexadecimal grouped 8-4-4-4-12.
pub fn format_uuid(bytes: &[u8; UUID_LENGTH]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(36);
    for (index, byte) in bytes.iter().enumerate() {
        if matches!(index, 4 | 6 | 8 | 10) {
            text.push('-');
        }
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text
}

/// The datum of a uuid column's stored 16 bytes (written by `Datum::to_value`).
pub(super) fn uuid_from_storage(bytes: &[u8]) -> Datum {
    let stored = <[u8; UUID_LENGTH]>::try_from(bytes);
    debug_assert!(stored.is_ok(), "a stored uuid is {UUID_LENGTH} bytes, not {}", bytes.len());
    stored.map_or(Datum::Null, Datum::Uuid)
}

/// A uuid's binary wire form (uuid_recv): exactly 16 bytes.
pub fn uuid_from_binary(bytes: &[u8]) -> Result<Datum> {
    <[u8; UUID_LENGTH]>::try_from(bytes)
        .map(Datum::Uuid)
        .map_err(|_| SqlError::new("22P03", "invalid uuid binary length"))
}

/// gen_random_uuid(): a version 4 uuid from the operating system's secure random source,
/// as PostgreSQL's (pg_strong_random) is.
pub fn random_uuid() -> Result<Datum> {
    let mut bytes = [0u8; UUID_LENGTH];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| SqlError::new("XX000", "could not generate random values"))?;
    // RFC 4122: version 4 in the high nibble of byte 6, variant 10 in the top bits of byte 8.
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    Ok(Datum::Uuid(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> Option<String> {
        parse_uuid_bytes(text.as_bytes()).map(|bytes| format_uuid(&bytes))
    }

    #[test]
    fn reads_postgres_input_forms_and_writes_the_canonical_one() {
        let canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        for text in [
            canonical,
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc999c0b4ef8bb6d6bb9bd380a11}",
        ] {
            assert_eq!(round_trip(text).as_deref(), Some(canonical), "{text}");
        }
    }

    #[test]
    fn refuses_what_postgres_refuses() {
        for text in [
            "",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
            " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            "a0eeb-c99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            assert_eq!(round_trip(text), None, "{text:?}");
        }
    }

    #[test]
    fn random_uuids_are_version_4_and_differ() {
        let Ok(Datum::Uuid(first)) = random_uuid() else { panic!("a uuid") };
        let Ok(Datum::Uuid(second)) = random_uuid() else { panic!("a uuid") };
        assert_ne!(first, second);
        for bytes in [first, second] {
            assert_eq!(bytes[6] >> 4, 4);
            assert_eq!(bytes[8] >> 6, 0b10);
        }
    }
}
