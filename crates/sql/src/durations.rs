//! Time settings as PostgreSQL reads and shows them: `statement_timeout`, `lock_timeout`,
//! `idle_in_transaction_session_timeout` and `idle_session_timeout` are integers of
//! milliseconds, written with an optional unit (`ms`, `s`, `min`, `h`, `d`; a plain number
//! is milliseconds), 0 disables them, and SHOW prints the largest unit that divides the
//! value exactly (`1500ms`, `2s`, `1min`).

use crate::error::{Result, SqlError};

/// The timeout settings a session knows, each in milliseconds.
pub const TIMEOUT_SETTINGS: [&str; 4] = [
    "statement_timeout",
    "lock_timeout",
    "idle_in_transaction_session_timeout",
    "idle_session_timeout",
];

/// PostgreSQL's upper bound for these settings (INT_MAX milliseconds).
pub const TIMEOUT_MAX_MS: u64 = 2_147_483_647;

/// Units PostgreSQL accepts for a time setting, with their length in milliseconds, from the
/// largest: `format_duration_ms` takes the first that divides the value.
const UNITS_MS: [(&str, u64); 5] =
    [("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1_000), ("ms", 1)];

/// Parses a time setting's value into milliseconds, or fails with 22023 like PostgreSQL:
/// `invalid value for parameter "NAME": "VALUE"`, or out of range.
pub fn parse_duration_ms(name: &str, text: &str) -> Result<u64> {
    let invalid =
        || SqlError::new("22023", format!("invalid value for parameter \"{name}\": \"{text}\""));
    let trimmed = text.trim();
    let number_end = trimmed
        .find(|character: char| !(character.is_ascii_digit() || "+-.".contains(character)))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(number_end);
    let number: f64 = number.parse().map_err(|_| invalid())?;
    let unit = unit.trim();
    let unit_ms = if unit.is_empty() {
        1
    } else {
        UNITS_MS.iter().find(|(name, _)| *name == unit).map(|(_, ms)| *ms).ok_or_else(invalid)?
    };
    let milliseconds = (number * unit_ms as f64).round();
    if !(0.0..=TIMEOUT_MAX_MS as f64).contains(&milliseconds) {
        return Err(SqlError::new(
            "22023",
            format!(
                "{milliseconds} ms is outside the valid range for parameter \"{name}\" (0 .. {TIMEOUT_MAX_MS})"
            ),
        ));
    }
    // Checked above: a whole number in 0..=TIMEOUT_MAX_MS, so the conversion is exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let milliseconds = milliseconds as u64;
    debug_assert!(milliseconds <= TIMEOUT_MAX_MS);
    Ok(milliseconds)
}

/// Shows milliseconds as PostgreSQL does: `0`, or in the largest unit that divides them.
pub fn format_duration_ms(milliseconds: u64) -> String {
    if milliseconds == 0 {
        return "0".into();
    }
    let (unit, unit_ms) = UNITS_MS
        .iter()
        .find(|(_, unit_ms)| milliseconds.is_multiple_of(*unit_ms))
        .expect("every value is a whole number of milliseconds");
    format!("{}{unit}", milliseconds / unit_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_plain_milliseconds() {
        assert_eq!(parse_duration_ms("statement_timeout", "1500").unwrap(), 1500);
        assert_eq!(parse_duration_ms("statement_timeout", "2s").unwrap(), 2000);
        assert_eq!(parse_duration_ms("statement_timeout", " 1 min").unwrap(), 60_000);
        assert_eq!(parse_duration_ms("statement_timeout", "1.5s").unwrap(), 1500);
        assert_eq!(parse_duration_ms("lock_timeout", "0").unwrap(), 0);
        assert_eq!(parse_duration_ms("lock_timeout", "1d").unwrap(), 86_400_000);
    }

    #[test]
    fn rejects_bad_units_and_out_of_range_values() {
        for text in ["abc", "1 parsec", "", "s"] {
            let error = parse_duration_ms("statement_timeout", text).unwrap_err();
            assert_eq!(error.sqlstate, "22023", "{text}");
        }
        assert_eq!(parse_duration_ms("lock_timeout", "-1").unwrap_err().sqlstate, "22023");
        assert_eq!(parse_duration_ms("lock_timeout", "30d").unwrap_err().sqlstate, "22023");
    }

    #[test]
    fn shows_the_largest_exact_unit() {
        assert_eq!(format_duration_ms(0), "0");
        assert_eq!(format_duration_ms(1500), "1500ms");
        assert_eq!(format_duration_ms(2000), "2s");
        assert_eq!(format_duration_ms(60_000), "1min");
        assert_eq!(format_duration_ms(7_200_000), "2h");
    }
}
