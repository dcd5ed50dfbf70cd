//! The readers of single fields (DecodeDate, DecodeNumber, DecodeNumberField, DecodeTime,
//! DecodeTimezone, ParseFractionalSecond) and the final checks of the date (ValidateDate),
//! with the field masks that make a field seen twice an error.

use super::keywords::{keyword, Keyword};
use super::DateError;
use crate::types::datetime_parse::{date_to_julian, days_in_month, julian_to_date};

/// Bits of the fields seen so far (PostgreSQL's DTK_M of each field type).
pub(super) type Mask = u32;
pub(super) const RESERVED: Mask = 1 << 0;
pub(super) const MONTH: Mask = 1 << 1;
pub(super) const YEAR: Mask = 1 << 2;
pub(super) const DAY: Mask = 1 << 3;
pub(super) const ZONE: Mask = 1 << 5;
pub(super) const DAYLIGHT_ZONE: Mask = 1 << 6;
pub(super) const MERIDIEM: Mask = 1 << 9;
pub(super) const HOUR: Mask = 1 << 10;
pub(super) const MINUTE: Mask = 1 << 11;
pub(super) const SECOND: Mask = 1 << 12;
pub(super) const SECOND_PARTS: Mask = (1 << 12) | (1 << 13) | (1 << 14);
pub(super) const DAY_OF_YEAR: Mask = 1 << 15;
pub(super) const DAY_OF_WEEK: Mask = 1 << 16;
pub(super) const ERA: Mask = 1 << 18;
pub(super) const DAYLIGHT_MODIFIER: Mask = 1 << 28;
pub(super) const DATE_FIELDS: Mask = YEAR | MONTH | DAY;
pub(super) const TIME_FIELDS: Mask = HOUR | MINUTE | SECOND_PARTS;

const MICROSECONDS_PER_SECOND: i64 = 1_000_000;
const MICROSECONDS_PER_DAY: i64 = 86_400 * MICROSECONDS_PER_SECOND;
/// PostgreSQL's MAX_TZDISP_HOUR.
const ZONE_HOURS_MAX: i32 = 15;

/// PostgreSQL's struct pg_tm as the decoders fill it (years as written until ValidateDate
/// renumbers them: 1 BC is 0).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tm {
    pub year: i32,
    pub month: i32,
    pub day: i32,
    pub hour: i32,
    pub minute: i32,
    pub second: i32,
    pub fraction_micros: i64,
    pub year_day: i32,
}

impl Tm {
    pub fn time_micros(&self) -> i64 {
        ((i64::from(self.hour) * 60 + i64::from(self.minute)) * 60 + i64::from(self.second))
            * MICROSECONDS_PER_SECOND
            + self.fraction_micros
    }

    pub fn set_julian_day(&mut self, julian_day: i64) -> Result<(), DateError> {
        let (year, month, day) =
            julian_to_date(julian_day).map_err(|_| DateError::FieldOverflow)?;
        self.year = narrow(year)?;
        self.month = narrow(month)?;
        self.day = narrow(day)?;
        Ok(())
    }
}

pub(super) fn narrow(value: i64) -> Result<i32, DateError> {
    i32::try_from(value).map_err(|_| DateError::FieldOverflow)
}

/// What the readers of numbers share with the loop over fields.
pub(super) struct NumberState {
    pub have_text_month: bool,
    pub two_digit_year: bool,
}

/// strtoint: optional spaces and sign, then digits (none reads 0 and consumes nothing);
/// the value and the text after it. Overflow of an int is FieldOverflow.
pub(super) fn c_integer(text: &str) -> Result<(i32, &str), DateError> {
    let trimmed = text.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let (negative, unsigned) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let digits = unsigned.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Ok((0, text));
    }
    let magnitude: i64 = unsigned[..digits].parse().map_err(|_| DateError::FieldOverflow)?;
    let value = if negative { -magnitude } else { magnitude };
    Ok((narrow(value)?, &unsigned[digits..]))
}

/// ParseFractionalSecond: `.ddd` (nothing after it) as microseconds, rounded to even.
pub(super) fn fraction_micros(text: &str) -> Result<i64, DateError> {
    let digits = text.strip_prefix('.').ok_or(DateError::BadFormat)?;
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(DateError::BadFormat);
    }
    Ok(micros_of_fraction(&format!("0.{digits}")))
}

/// rint(fraction * 1e6) of a fraction below one, as C computes it in doubles.
fn micros_of_fraction(text: &str) -> i64 {
    let fraction: f64 = text.parse().unwrap_or(0.0);
    debug_assert!((0.0..1.0).contains(&fraction), "a fraction of a second");
    #[allow(clippy::cast_possible_truncation)]
    let micros = (fraction * 1e6).round_ties_even() as i64;
    micros
}

/// DecodeDate: a date field with separators (`2024-02-29`, `feb-29-2024`); names of
/// months first, then the numbers in the order DecodeNumber decides.
pub(super) fn decode_date(
    text: &str,
    mut seen: Mask,
    state: &mut NumberState,
    tm: &mut Tm,
) -> Result<Mask, DateError> {
    let parts = date_parts(text)?;
    // DecodeDate's own haveTextMonth starts false for each date field (a month word earlier
    // in the input must not make this field's first number a year); is2digits is shared.
    let mut local = NumberState { have_text_month: false, two_digit_year: state.two_digit_year };
    let found = decode_date_parts(parts, &mut seen, &mut local, tm)?;
    state.two_digit_year = local.two_digit_year;
    if seen & !(DAY_OF_YEAR | ZONE) != DATE_FIELDS {
        return Err(DateError::BadFormat);
    }
    Ok(found)
}

/// `decode_date`'s fields: month names first, then the numbers.
fn decode_date_parts(
    parts: Vec<&str>,
    seen: &mut Mask,
    state: &mut NumberState,
    tm: &mut Tm,
) -> Result<Mask, DateError> {
    let mut found = 0;
    let mut numbers = Vec::new();
    for part in parts {
        if !part.as_bytes()[0].is_ascii_alphabetic() {
            numbers.push(part);
            continue;
        }
        match keyword(part) {
            Some(Keyword::Ignored) => continue,
            Some(Keyword::Month(month)) => {
                tm.month = month;
                state.have_text_month = true;
            }
            _ => return Err(DateError::BadFormat),
        }
        found = add_mask(seen, found, MONTH)?;
    }
    for number in numbers {
        let mask = decode_number(number, *seen, state, tm)?;
        found = add_mask(seen, found, mask)?;
    }
    Ok(found)
}

/// Adds a field's mask to those seen, BadFormat if one was seen already.
fn add_mask(seen: &mut Mask, found: Mask, mask: Mask) -> Result<Mask, DateError> {
    if *seen & mask != 0 {
        return Err(DateError::BadFormat);
    }
    *seen |= mask;
    Ok(found | mask)
}

/// A date field's runs of digits or of letters; the one character after each run is
/// dropped, whatever it is (PostgreSQL overwrites it), and other characters separate.
fn date_parts(text: &str) -> Result<Vec<&str>, DateError> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let mut position = 0;
    while position < bytes.len() && parts.len() < 25 {
        while position < bytes.len() && !bytes[position].is_ascii_alphanumeric() {
            position += 1;
        }
        if position == bytes.len() {
            return Err(DateError::BadFormat);
        }
        let start = position;
        let digit = bytes[position].is_ascii_digit();
        while position < bytes.len()
            && (if digit {
                bytes[position].is_ascii_digit()
            } else {
                bytes[position].is_ascii_alphabetic()
            })
        {
            position += 1;
        }
        parts.push(&text[start..position]);
        position = (position + 1).min(bytes.len());
    }
    Ok(parts)
}

/// DecodeNumber: one number of a date or time; which field it is depends on the fields
/// seen before it and on its length (MDY order: DateStyle's only order in tierdb).
pub(super) fn decode_number(
    text: &str,
    seen: Mask,
    state: &mut NumberState,
    tm: &mut Tm,
) -> Result<Mask, DateError> {
    let (value, rest) = c_integer(text)?;
    if rest.len() == text.len() {
        return Err(DateError::BadFormat);
    }
    if rest.starts_with('.') {
        // More than two digits before the point: a date or a run-together time.
        if text.len() - rest.len() > 2 {
            return decode_number_field(text, seen | DATE_FIELDS, state, tm);
        }
        tm.fraction_micros = fraction_micros(rest)?;
    } else if !rest.is_empty() {
        return Err(DateError::BadFormat);
    }
    let length = text.len();
    if length == 3 && seen & DATE_FIELDS == YEAR && (1..=366).contains(&value) {
        tm.year_day = value;
        return Ok(DAY_OF_YEAR | MONTH | DAY);
    }
    let mask = match seen & DATE_FIELDS {
        0 if length >= 3 => set(&mut tm.year, value, YEAR),
        0 => set(&mut tm.month, value, MONTH),
        YEAR => set(&mut tm.month, value, MONTH),
        MONTH if state.have_text_month && length >= 3 => set(&mut tm.year, value, YEAR),
        MONTH => set(&mut tm.day, value, DAY),
        mask if mask == YEAR | MONTH => {
            if state.have_text_month && length >= 3 && state.two_digit_year {
                // DD-MON-YYYY: the first number was the day, not a year.
                tm.day = tm.year;
                tm.year = value;
                state.two_digit_year = false;
                DAY
            } else {
                set(&mut tm.day, value, DAY)
            }
        }
        DAY => set(&mut tm.month, value, MONTH),
        mask if mask == MONTH | DAY => set(&mut tm.year, value, YEAR),
        DATE_FIELDS => return decode_number_field(text, seen, state, tm),
        _ => return Err(DateError::BadFormat),
    };
    if mask == YEAR {
        state.two_digit_year = length <= 2;
    }
    Ok(mask)
}

fn set(field: &mut i32, value: i32, mask: Mask) -> Mask {
    *field = value;
    mask
}

/// DecodeNumberField: a run-together date (`20240229`, `240229`) or time (`134500`,
/// `1345`, `134500.25`).
pub(super) fn decode_number_field(
    text: &str,
    seen: Mask,
    state: &mut NumberState,
    tm: &mut Tm,
) -> Result<Mask, DateError> {
    let mut digits = text;
    if let Some(point) = text.find('.') {
        let fraction = &text[point..];
        // strtod reads the digits after the point and ignores what follows them.
        let fraction_digits: String =
            fraction[1..].chars().take_while(char::is_ascii_digit).collect();
        tm.fraction_micros = micros_of_fraction(&format!("0.{fraction_digits}0"));
        digits = &text[..point];
    } else if seen & DATE_FIELDS != DATE_FIELDS && digits.len() >= 6 {
        let length = digits.len();
        tm.day = leading_int(&digits[length - 2..])?;
        tm.month = leading_int(&digits[length - 4..length - 2])?;
        tm.year = leading_int(&digits[..length - 4])?;
        if length - 4 == 2 {
            state.two_digit_year = true;
        }
        return Ok(DATE_FIELDS);
    }
    if seen & TIME_FIELDS != TIME_FIELDS && (digits.len() == 6 || digits.len() == 4) {
        tm.hour = leading_int(&digits[..2])?;
        tm.minute = leading_int(&digits[2..4])?;
        tm.second = if digits.len() == 6 { leading_int(&digits[4..])? } else { 0 };
        return Ok(TIME_FIELDS);
    }
    Err(DateError::BadFormat)
}

/// atoi: the leading integer of a run of digits.
fn leading_int(digits: &str) -> Result<i32, DateError> {
    Ok(c_integer(digits)?.0)
}

/// DecodeTime: `hh:mm`, `hh:mm:ss[.f]`, or `mm:ss.f` (a fraction after two fields makes
/// them minutes and seconds).
pub(super) fn decode_time(text: &str, tm: &mut Tm) -> Result<Mask, DateError> {
    let (hour, rest) = c_integer(text)?;
    let rest = rest.strip_prefix(':').ok_or(DateError::BadFormat)?;
    let (minute, rest) = c_integer(rest)?;
    let (mut hour, mut minute, mut second, mut fraction) = (hour, minute, 0, 0);
    if rest.starts_with('.') {
        fraction = fraction_micros(rest)?;
        (hour, minute, second) = (0, hour, minute);
    } else if let Some(seconds) = rest.strip_prefix(':') {
        let (value, rest) = c_integer(seconds)?;
        second = value;
        if !rest.is_empty() {
            fraction = fraction_micros(rest)?;
        }
    } else if !rest.is_empty() {
        return Err(DateError::BadFormat);
    }
    if hour < 0 || !(0..60).contains(&minute) || !(0..=60).contains(&second) {
        return Err(DateError::FieldOverflow);
    }
    (tm.hour, tm.minute, tm.second, tm.fraction_micros) = (hour, minute, second, fraction);
    Ok(TIME_FIELDS)
}

/// time_overflows: a field out of its range or a time past 24:00:00.
pub(super) fn time_overflows(tm: &Tm) -> bool {
    !(0..=24).contains(&tm.hour)
        || !(0..60).contains(&tm.minute)
        || !(0..=60).contains(&tm.second)
        || !(0..=MICROSECONDS_PER_SECOND).contains(&tm.fraction_micros)
        || tm.time_micros() > MICROSECONDS_PER_DAY
}

/// DecodeTimezone: `+h`, `-hh`, `+hh:mm[:ss]`, `-hhmm`, as seconds east of UTC.
pub(super) fn decode_zone_offset(text: &str) -> Result<i32, DateError> {
    let negative = match text.as_bytes().first() {
        Some(b'-') => true,
        Some(b'+') => false,
        _ => return Err(DateError::BadFormat),
    };
    let overflow = |_| DateError::ZoneOverflow;
    let (mut hour, mut rest) = c_integer(&text[1..]).map_err(overflow)?;
    let (mut minute, mut second) = (0, 0);
    if let Some(after) = rest.strip_prefix(':') {
        (minute, rest) = c_integer(after).map_err(overflow)?;
        if let Some(after) = rest.strip_prefix(':') {
            (second, rest) = c_integer(after).map_err(overflow)?;
        }
    } else if rest.is_empty() && text.len() > 3 {
        (hour, minute) = (hour / 100, hour % 100);
    }
    if !(0..=ZONE_HOURS_MAX).contains(&hour)
        || !(0..60).contains(&minute)
        || !(0..60).contains(&second)
    {
        return Err(DateError::ZoneOverflow);
    }
    if !rest.is_empty() {
        return Err(DateError::BadFormat);
    }
    let east = (hour * 60 + minute) * 60 + second;
    Ok(if negative { -east } else { east })
}

/// What ValidateDate needs besides the fields.
pub(super) struct Era {
    pub julian: bool,
    pub two_digit_year: bool,
    pub before_christ: bool,
}

/// ValidateDate: the year renumbered (BC, two-digit years), a day of the year made a
/// date, and the month and day checked.
pub(super) fn validate_date(seen: Mask, era: &Era, tm: &mut Tm) -> Result<(), DateError> {
    if seen & YEAR != 0 && !era.julian {
        if era.before_christ {
            if tm.year <= 0 {
                return Err(DateError::FieldOverflow);
            }
            tm.year = 1 - tm.year;
        } else if era.two_digit_year {
            if tm.year < 0 {
                return Err(DateError::FieldOverflow);
            }
            tm.year += if tm.year < 70 {
                2000
            } else if tm.year < 100 {
                1900
            } else {
                0
            };
        } else if tm.year <= 0 {
            return Err(DateError::FieldOverflow);
        }
    }
    if seen & DAY_OF_YEAR != 0 {
        let first = date_to_julian(i64::from(tm.year), 1, 1);
        tm.set_julian_day(first + i64::from(tm.year_day) - 1)?;
    }
    if seen & MONTH != 0 && !(1..=12).contains(&tm.month) {
        return Err(DateError::MonthDayOverflow);
    }
    if seen & DAY != 0 && !(1..=31).contains(&tm.day) {
        return Err(DateError::MonthDayOverflow);
    }
    if seen & DATE_FIELDS == DATE_FIELDS
        && i64::from(tm.day) > days_in_month(i64::from(tm.year), i64::from(tm.month))
    {
        return Err(DateError::FieldOverflow);
    }
    Ok(())
}
