//! PostgreSQL's `interval`: months, days and microseconds kept apart, as PostgreSQL stores
//! them (a month is not a fixed number of days, nor a day a fixed number of hours across a
//! daylight saving change). Text input follows interval_in (DecodeInterval, the ISO 8601
//! `P...` form), output IntervalStyle `postgres` (EncodeInterval). Comparison, grouping and
//! ordering use PostgreSQL's normalised span (a month is 30 days, a day 24 hours), so
//! '1 mon' = '30 days' although the values print differently.

use std::cmp::Ordering;

use crate::error::{Result, SqlError};

/// pg_type's OID of interval, and of its array type `_interval`.
pub const INTERVAL_OID: u32 = 1186;
pub const INTERVAL_ARRAY_OID: u32 = 1187;

pub const MICROSECONDS_PER_SECOND: i64 = 1_000_000;
pub const MICROSECONDS_PER_HOUR: i64 = 3_600_000_000;
const MICROSECONDS_PER_DAY: i64 = 86_400_000_000;
/// interval_cmp's month: 30 days (DAYS_PER_MONTH).
pub const DAYS_PER_MONTH: i64 = 30;
const MONTHS_PER_YEAR: i64 = 12;

/// An interval as PostgreSQL stores it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

/// PostgreSQL's error for interval arithmetic that leaves the representable range.
pub fn interval_out_of_range() -> SqlError {
    SqlError::new("22008", "interval out of range")
}

impl Interval {
    pub fn new(months: i32, days: i32, micros: i64) -> Interval {
        Interval { months, days, micros }
    }

    /// interval_cmp_value: the span in microseconds with a month of 30 days.
    pub fn span_micros(&self) -> i128 {
        let days = i128::from(self.months) * i128::from(DAYS_PER_MONTH) + i128::from(self.days);
        days * i128::from(MICROSECONDS_PER_DAY) + i128::from(self.micros)
    }

    pub fn compare(&self, other: &Interval) -> Ordering {
        self.span_micros().cmp(&other.span_micros())
    }

    pub fn checked_add(&self, other: &Interval) -> Result<Interval> {
        Ok(Interval {
            months: self.months.checked_add(other.months).ok_or_else(interval_out_of_range)?,
            days: self.days.checked_add(other.days).ok_or_else(interval_out_of_range)?,
            micros: self.micros.checked_add(other.micros).ok_or_else(interval_out_of_range)?,
        })
    }

    pub fn checked_negate(&self) -> Result<Interval> {
        Ok(Interval {
            months: self.months.checked_neg().ok_or_else(interval_out_of_range)?,
            days: self.days.checked_neg().ok_or_else(interval_out_of_range)?,
            micros: self.micros.checked_neg().ok_or_else(interval_out_of_range)?,
        })
    }

    pub fn checked_sub(&self, other: &Interval) -> Result<Interval> {
        self.checked_add(&other.checked_negate()?)
    }

    /// interval_mul (PostgreSQL 15): each field scaled, the fractions of months cascaded
    /// into days and of days into time, rounded to the microsecond.
    pub fn multiply(&self, factor: f64) -> Result<Interval> {
        let months_product = f64::from(self.months) * factor;
        let days_product = f64::from(self.days) * factor;
        self.scaled(months_product, days_product, self.micros as f64 * factor)
    }

    /// interval_div: as `multiply` by the reciprocal, computed by division as PostgreSQL does.
    pub fn divide(&self, divisor: f64) -> Result<Interval> {
        if divisor == 0.0 {
            return Err(SqlError::division_by_zero());
        }
        let months_quotient = f64::from(self.months) / divisor;
        let days_quotient = f64::from(self.days) / divisor;
        self.scaled(months_quotient, days_quotient, self.micros as f64 / divisor)
    }

    fn scaled(&self, months_value: f64, days_value: f64, micros_value: f64) -> Result<Interval> {
        let months = f64_to_i32(months_value)?;
        let mut days = f64_to_i32(days_value)?;
        let month_remainder_days =
            round_to_microsecond((months_value - f64::from(months)) * DAYS_PER_MONTH as f64);
        let mut seconds_remainder = round_to_microsecond(
            (days_value - f64::from(days) + month_remainder_days - month_remainder_days.trunc())
                * 86_400.0,
        );
        if seconds_remainder.abs() >= 86_400.0 {
            let whole_days = (seconds_remainder / 86_400.0).trunc();
            days = days.checked_add(f64_to_i32(whole_days)?).ok_or_else(interval_out_of_range)?;
            seconds_remainder -= whole_days * 86_400.0;
        }
        days = days
            .checked_add(f64_to_i32(month_remainder_days.trunc())?)
            .ok_or_else(interval_out_of_range)?;
        let micros = (micros_value + seconds_remainder * 1e6).round_ties_even();
        if micros.is_nan() || !(-9.2e18..9.2e18).contains(&micros) {
            return Err(interval_out_of_range());
        }
        #[allow(clippy::cast_possible_truncation)]
        Ok(Interval { months, days, micros: micros as i64 })
    }

    /// justify_hours: whole days of the time moved into days, signs made to agree.
    pub fn justify_hours(&self) -> Result<Interval> {
        let (days, micros) = carry(i64::from(self.days), self.micros, MICROSECONDS_PER_DAY);
        let days = i32::try_from(days).map_err(|_| interval_out_of_range())?;
        Ok(Interval { months: self.months, days, micros })
    }

    /// justify_days: whole 30-day months of the days moved into months, signs made to agree.
    pub fn justify_days(&self) -> Result<Interval> {
        let (months, days) = carry(i64::from(self.months), i64::from(self.days), DAYS_PER_MONTH);
        let months = i32::try_from(months).map_err(|_| interval_out_of_range())?;
        let days = i32::try_from(days).expect("below 30 in magnitude");
        Ok(Interval { months, days, micros: self.micros })
    }

    /// justify_interval: days from the time, months from the days, one sign throughout.
    pub fn justify_interval(&self) -> Result<Interval> {
        let mut months = i64::from(self.months);
        let mut days = i64::from(self.days) + self.micros / MICROSECONDS_PER_DAY;
        let mut micros = self.micros % MICROSECONDS_PER_DAY;
        months += days / DAYS_PER_MONTH;
        days %= DAYS_PER_MONTH;
        if months > 0 && (days < 0 || (days == 0 && micros < 0)) {
            days += DAYS_PER_MONTH;
            months -= 1;
        } else if months < 0 && (days > 0 || (days == 0 && micros > 0)) {
            days -= DAYS_PER_MONTH;
            months += 1;
        }
        if days > 0 && micros < 0 {
            micros += MICROSECONDS_PER_DAY;
            days -= 1;
        } else if days < 0 && micros > 0 {
            micros -= MICROSECONDS_PER_DAY;
            days += 1;
        }
        let months = i32::try_from(months).map_err(|_| interval_out_of_range())?;
        let days = i32::try_from(days).map_err(|_| interval_out_of_range())?;
        Ok(Interval { months, days, micros })
    }

    /// The 16 bytes stored in a column: months, days, microseconds, little-endian.
    pub fn storage_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(16);
        bytes.extend_from_slice(&self.months.to_le_bytes());
        bytes.extend_from_slice(&self.days.to_le_bytes());
        bytes.extend_from_slice(&self.micros.to_le_bytes());
        bytes
    }

    pub fn from_storage(bytes: &[u8]) -> Interval {
        debug_assert_eq!(bytes.len(), 16, "a stored interval is 16 bytes");
        let field = |range: std::ops::Range<usize>| bytes.get(range).unwrap_or(&[0; 8]).to_vec();
        let months = i32::from_le_bytes(field(0..4)[..4].try_into().expect("4 bytes"));
        let days = i32::from_le_bytes(field(4..8)[..4].try_into().expect("4 bytes"));
        let micros = i64::from_le_bytes(field(8..16)[..8].try_into().expect("8 bytes"));
        Interval { months, days, micros }
    }

    /// interval_send: microseconds (i64), days (i32), months (i32), big-endian.
    pub fn send(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(16);
        bytes.extend_from_slice(&self.micros.to_be_bytes());
        bytes.extend_from_slice(&self.days.to_be_bytes());
        bytes.extend_from_slice(&self.months.to_be_bytes());
        bytes
    }

    pub fn receive(bytes: &[u8]) -> Result<Interval> {
        if bytes.len() != 16 {
            return Err(SqlError::new("22P03", "insufficient data left in message".to_string()));
        }
        Ok(Interval {
            micros: i64::from_be_bytes(bytes[0..8].try_into().expect("8 bytes")),
            days: i32::from_be_bytes(bytes[8..12].try_into().expect("4 bytes")),
            months: i32::from_be_bytes(bytes[12..16].try_into().expect("4 bytes")),
        })
    }
}

/// TSROUND: rounds seconds (or days) to microsecond precision.
fn round_to_microsecond(value: f64) -> f64 {
    (value * 1e6).round_ties_even() / 1e6
}

fn f64_to_i32(value: f64) -> Result<i32> {
    if value.is_nan() || value < f64::from(i32::MIN) || value > f64::from(i32::MAX) {
        return Err(interval_out_of_range());
    }
    #[allow(clippy::cast_possible_truncation)]
    Ok(value as i32)
}

/// interval_out in IntervalStyle `postgres`: `1 year 2 mons -3 days +04:05:06.5`.
pub fn format_interval(interval: &Interval) -> String {
    let mut out = String::new();
    let mut is_zero = true;
    let mut is_before = false;
    let years = interval.months / 12;
    let months = interval.months % 12;
    let mut part = |value: i64, unit: &str| {
        if value == 0 {
            return;
        }
        let separator = if is_zero { "" } else { " " };
        let plus = if is_before && value > 0 { "+" } else { "" };
        let plural = if value == 1 { "" } else { "s" };
        out.push_str(&format!("{separator}{plus}{value} {unit}{plural}"));
        is_before = value < 0;
        is_zero = false;
    };
    part(i64::from(years), "year");
    part(i64::from(months), "mon");
    part(i64::from(interval.days), "day");
    let micros = interval.micros;
    if is_zero || micros != 0 {
        let negative = micros < 0;
        let magnitude = micros.unsigned_abs();
        let hours = magnitude / 3_600_000_000;
        let minutes = magnitude / 60_000_000 % 60;
        let seconds = magnitude / 1_000_000 % 60;
        let fraction = magnitude % 1_000_000;
        let separator = if is_zero { "" } else { " " };
        let sign = if negative {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        out.push_str(&format!("{separator}{sign}{hours:02}:{minutes:02}:{seconds:02}"));
        if fraction != 0 {
            out.push('.');
            out.push_str(format!("{fraction:06}").trim_end_matches('0'));
        }
    }
    out
}

/// How interval input failed: the two SQLSTATEs interval_in raises.
#[derive(Clone, Copy, Debug, PartialEq)]
enum InputError {
    /// 22007: not an interval.
    Syntax,
    /// 22015: a field out of range.
    FieldOverflow,
}

/// interval_in: PostgreSQL's text forms (`1 day 02:03`, `@ 1 hour ago`, `1-2`, `P1Y2M`).
pub fn parse_interval(text: &str) -> Result<Interval> {
    let trimmed = text.trim();
    let parsed = match trimmed.strip_prefix('P') {
        Some(rest) => parse_iso8601(rest),
        None => parse_postgres(trimmed),
    };
    parsed.map_err(|error| match error {
        InputError::Syntax => {
            SqlError::new("22007", format!("invalid input syntax for type interval: \"{text}\""))
        }
        InputError::FieldOverflow => {
            SqlError::new("22015", format!("interval field value out of range: \"{text}\""))
        }
    })
}

/// The fields an interval is accumulated in while parsing.
#[derive(Default)]
struct Fields {
    months: i64,
    days: i64,
    micros: i64,
}

impl Fields {
    fn finish(self) -> std::result::Result<Interval, InputError> {
        Ok(Interval {
            months: i32::try_from(self.months).map_err(|_| InputError::FieldOverflow)?,
            days: i32::try_from(self.days).map_err(|_| InputError::FieldOverflow)?,
            micros: self.micros,
        })
    }

    /// Adds `whole` + `fraction` (same sign) of `unit`, cascading fractions downward as
    /// DecodeInterval does (AdjustFractDays, AdjustFractSeconds).
    fn add(
        &mut self,
        unit: Unit,
        whole: i64,
        fraction: f64,
    ) -> std::result::Result<(), InputError> {
        let overflow = || InputError::FieldOverflow;
        let add_micros = |fields: &mut Fields, value: f64| {
            let rounded = value.round_ties_even();
            if !(-9.2e18..9.2e18).contains(&rounded) {
                return Err(overflow());
            }
            #[allow(clippy::cast_possible_truncation)]
            let micros = rounded as i64;
            fields.micros = fields.micros.checked_add(micros).ok_or_else(overflow)?;
            Ok(())
        };
        let scaled = |whole: i64, factor: i64| whole.checked_mul(factor).ok_or_else(overflow);
        match unit {
            Unit::Microsecond | Unit::Millisecond | Unit::Second | Unit::Minute | Unit::Hour => {
                let factor = unit.micros();
                self.micros =
                    self.micros.checked_add(scaled(whole, factor)?).ok_or_else(overflow)?;
                add_micros(self, fraction * factor as f64)?;
            }
            Unit::Day | Unit::Week => {
                let factor = if unit == Unit::Week { 7 } else { 1 };
                self.days = self.days.checked_add(scaled(whole, factor)?).ok_or_else(overflow)?;
                let fraction_days = fraction * factor as f64;
                #[allow(clippy::cast_possible_truncation)]
                let extra_days = fraction_days.trunc() as i64;
                self.days += extra_days;
                add_micros(self, (fraction_days - extra_days as f64) * 86_400e6)?;
            }
            Unit::Month => {
                self.months = self.months.checked_add(whole).ok_or_else(overflow)?;
                let fraction_days = fraction * DAYS_PER_MONTH as f64;
                #[allow(clippy::cast_possible_truncation)]
                let extra_days = fraction_days.trunc() as i64;
                self.days += extra_days;
                add_micros(self, (fraction_days - extra_days as f64) * 86_400e6)?;
            }
            Unit::Year | Unit::Decade | Unit::Century | Unit::Millennium => {
                let factor = unit.months();
                self.months =
                    self.months.checked_add(scaled(whole, factor)?).ok_or_else(overflow)?;
                #[allow(clippy::cast_possible_truncation)]
                let extra_months = (fraction * factor as f64).round_ties_even() as i64;
                self.months += extra_months;
            }
        }
        if self.months.abs() > i64::from(i32::MAX) || self.days.abs() > i64::from(i32::MAX) {
            return Err(overflow());
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Unit {
    Microsecond,
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
    Decade,
    Century,
    Millennium,
}

impl Unit {
    fn from_name(name: &str) -> Option<Unit> {
        Some(match name {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" => {
                Unit::Microsecond
            }
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => {
                Unit::Millisecond
            }
            "second" | "seconds" | "s" | "sec" | "secs" => Unit::Second,
            "minute" | "minutes" | "m" | "min" | "mins" => Unit::Minute,
            "hour" | "hours" | "h" | "hr" | "hrs" => Unit::Hour,
            "day" | "days" | "d" => Unit::Day,
            "week" | "weeks" | "w" => Unit::Week,
            "month" | "months" | "mon" | "mons" => Unit::Month,
            "year" | "years" | "y" | "yr" | "yrs" => Unit::Year,
            "decade" | "decades" | "dec" | "decs" => Unit::Decade,
            "century" | "centuries" | "c" | "cent" => Unit::Century,
            "millennium" | "millennia" | "millenniums" | "mil" | "mils" => Unit::Millennium,
            _ => return None,
        })
    }

    fn micros(self) -> i64 {
        match self {
            Unit::Microsecond => 1,
            Unit::Millisecond => 1_000,
            Unit::Second => MICROSECONDS_PER_SECOND,
            Unit::Minute => 60 * MICROSECONDS_PER_SECOND,
            _ => MICROSECONDS_PER_HOUR,
        }
    }

    fn months(self) -> i64 {
        match self {
            Unit::Decade => 10 * MONTHS_PER_YEAR,
            Unit::Century => 100 * MONTHS_PER_YEAR,
            Unit::Millennium => 1000 * MONTHS_PER_YEAR,
            _ => MONTHS_PER_YEAR,
        }
    }

    /// The bit DecodeInterval keeps to refuse a field given twice ('1 day 1 day').
    fn mask(self) -> u32 {
        1 << (self as u32)
    }
}

/// A signed decimal number split into its whole part and its fraction (same sign).
fn split_number(text: &str) -> std::result::Result<(i64, f64), InputError> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let valid = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !valid(whole) || !valid(fraction) {
        return Err(InputError::Syntax);
    }
    let whole: i64 =
        if whole.is_empty() { 0 } else { whole.parse().map_err(|_| InputError::FieldOverflow)? };
    let fraction: f64 =
        if fraction.is_empty() { 0.0 } else { format!("0.{fraction}").parse().unwrap_or(0.0) };
    Ok(if negative { (-whole, -fraction) } else { (whole, fraction) })
}

/// The tokens of PostgreSQL's interval syntax.
#[derive(Debug, PartialEq)]
enum Token {
    /// A signed number, maybe with a fraction, maybe with ':' (a time) or '-' (year-month).
    Number(String),
    Word(String),
}

fn tokenize(text: &str) -> std::result::Result<Vec<Token>, InputError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte.is_ascii_whitespace() || (byte == b'@' && tokens.is_empty()) {
            index += 1;
        } else if byte.is_ascii_digit() || byte == b'.' || byte == b'+' || byte == b'-' {
            let start = index;
            index += 1;
            while index < bytes.len()
                && (bytes[index].is_ascii_digit() || matches!(bytes[index], b'.' | b':' | b'-'))
            {
                index += 1;
            }
            tokens.push(Token::Number(text[start..index].to_string()));
        } else if byte.is_ascii_alphabetic() {
            let start = index;
            while index < bytes.len() && bytes[index].is_ascii_alphabetic() {
                index += 1;
            }
            tokens.push(Token::Word(text[start..index].to_ascii_lowercase()));
        } else {
            return Err(InputError::Syntax);
        }
    }
    Ok(tokens)
}

/// DecodeInterval for the `postgres` forms.
fn parse_postgres(text: &str) -> std::result::Result<Interval, InputError> {
    let tokens = tokenize(text)?;
    if tokens.is_empty() {
        return Err(InputError::Syntax);
    }
    let mut fields = Fields::default();
    let mut seen = 0u32;
    let mut pending: Option<&str> = None;
    let mut ago = false;
    for (position, token) in tokens.iter().enumerate() {
        match token {
            Token::Number(number) if number[1..].contains(':') => {
                if let Some(days) = pending.take() {
                    // '1 02:03': a bare number before a time is days.
                    mark(&mut seen, Unit::Day.mask())?;
                    let (whole, fraction) = split_number(days)?;
                    fields.add(Unit::Day, whole, fraction)?;
                }
                mark(&mut seen, Unit::Hour.mask() | Unit::Minute.mask() | Unit::Second.mask())?;
                fields.micros = fields
                    .micros
                    .checked_add(parse_time_field(number)?)
                    .ok_or(InputError::FieldOverflow)?;
            }
            Token::Number(number) if number[1..].contains('-') => {
                if pending.is_some() {
                    return Err(InputError::Syntax);
                }
                mark(&mut seen, Unit::Year.mask() | Unit::Month.mask())?;
                fields.months = fields
                    .months
                    .checked_add(parse_year_month(number)?)
                    .ok_or(InputError::FieldOverflow)?;
            }
            Token::Number(number) => {
                if pending.is_some() {
                    return Err(InputError::Syntax);
                }
                pending = Some(number);
            }
            Token::Word(word) if word == "ago" && position == tokens.len() - 1 => {
                if pending.is_some() {
                    return Err(InputError::Syntax);
                }
                ago = true;
            }
            Token::Word(word) => {
                let unit = Unit::from_name(word).ok_or(InputError::Syntax)?;
                let number = pending.take().ok_or(InputError::Syntax)?;
                mark(&mut seen, unit.mask())?;
                let (whole, fraction) = split_number(number)?;
                fields.add(unit, whole, fraction)?;
            }
        }
    }
    if let Some(number) = pending {
        // A trailing number without a unit is seconds.
        mark(&mut seen, Unit::Second.mask())?;
        let (whole, fraction) = split_number(number)?;
        fields.add(Unit::Second, whole, fraction)?;
    }
    let interval = fields.finish()?;
    if ago {
        return interval.checked_negate().map_err(|_| InputError::FieldOverflow);
    }
    Ok(interval)
}

/// Records a field as given, refusing one given twice ('1 day 1 day').
fn mark(seen: &mut u32, mask: u32) -> std::result::Result<(), InputError> {
    if *seen & mask != 0 {
        return Err(InputError::Syntax);
    }
    *seen |= mask;
    Ok(())
}

/// `[-]h:m[:s[.f]]` or `[-]m:s.f` in microseconds.
fn parse_time_field(text: &str) -> std::result::Result<i64, InputError> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let parts: Vec<&str> = body.split(':').collect();
    let integer = |part: &str| -> std::result::Result<i64, InputError> {
        if part.is_empty() || !part.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(InputError::Syntax);
        }
        part.parse().map_err(|_| InputError::FieldOverflow)
    };
    let (hours, minutes, seconds) = match parts.as_slice() {
        [minutes, seconds] if seconds.contains('.') => (0, integer(minutes)?, *seconds),
        [hours, minutes] => (integer(hours)?, integer(minutes)?, "0"),
        [hours, minutes, seconds] => (integer(hours)?, integer(minutes)?, *seconds),
        _ => return Err(InputError::Syntax),
    };
    let (whole_seconds, fraction) = split_number(seconds)?;
    if seconds.starts_with(['-', '+']) || minutes > 59 || whole_seconds > 59 {
        return Err(InputError::FieldOverflow);
    }
    let micros = hours
        .checked_mul(MICROSECONDS_PER_HOUR)
        .and_then(|micros| micros.checked_add(minutes * 60 * MICROSECONDS_PER_SECOND))
        .and_then(|micros| micros.checked_add(whole_seconds * MICROSECONDS_PER_SECOND))
        .ok_or(InputError::FieldOverflow)?;
    #[allow(clippy::cast_possible_truncation)]
    let micros = micros + (fraction * 1e6).round_ties_even() as i64;
    Ok(if negative { -micros } else { micros })
}

/// `[-]y-m` in months.
fn parse_year_month(text: &str) -> std::result::Result<i64, InputError> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (years, months) = body.split_once('-').ok_or(InputError::Syntax)?;
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit());
    if !digits(years) || !digits(months) {
        return Err(InputError::Syntax);
    }
    let years: i64 = years.parse().map_err(|_| InputError::FieldOverflow)?;
    let months: i64 = months.parse().map_err(|_| InputError::FieldOverflow)?;
    if months > 11 {
        return Err(InputError::FieldOverflow);
    }
    let total = years
        .checked_mul(MONTHS_PER_YEAR)
        .and_then(|total| total.checked_add(months))
        .ok_or(InputError::FieldOverflow)?;
    Ok(if negative { -total } else { total })
}

/// ISO 8601's format with designators: `P1Y2M3W4DT5H6M7.5S` (after the `P`).
fn parse_iso8601(text: &str) -> std::result::Result<Interval, InputError> {
    if text.is_empty() {
        return Err(InputError::Syntax);
    }
    let mut fields = Fields::default();
    let mut in_time = false;
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('T') {
            if in_time {
                return Err(InputError::Syntax);
            }
            in_time = true;
            rest = after;
            continue;
        }
        let end = rest
            .find(|character: char| !(character.is_ascii_digit() || "+-.".contains(character)))
            .ok_or(InputError::Syntax)?;
        let (number, after) = rest.split_at(end);
        let designator = after.chars().next().ok_or(InputError::Syntax)?;
        let unit = match (in_time, designator) {
            (false, 'Y') => Unit::Year,
            (false, 'M') => Unit::Month,
            (false, 'W') => Unit::Week,
            (false, 'D') => Unit::Day,
            (true, 'H') => Unit::Hour,
            (true, 'M') => Unit::Minute,
            (true, 'S') => Unit::Second,
            _ => return Err(InputError::Syntax),
        };
        let (whole, fraction) = split_number(number)?;
        fields.add(unit, whole, fraction)?;
        rest = &after[1..];
    }
    fields.finish()
}

/// The whole `unit`s of `part` carried into `whole`, then the two made to agree in sign
/// (PostgreSQL's justify_hours and justify_days): returns (whole, part).
fn carry(whole: i64, part: i64, unit: i64) -> (i64, i64) {
    let (mut whole, mut part) = (whole + part / unit, part % unit);
    if whole > 0 && part < 0 {
        part += unit;
        whole -= 1;
    } else if whole < 0 && part > 0 {
        part -= unit;
        whole += 1;
    }
    (whole, part)
}

/// A field of an interval qualifier (`INTERVAL '90' DAY`, `INTERVAL '1-2' YEAR TO MONTH`),
/// in PostgreSQL's order from the largest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum IntervalField {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

impl IntervalField {
    fn unit(self) -> &'static str {
        match self {
            IntervalField::Year => "year",
            IntervalField::Month => "month",
            IntervalField::Day => "day",
            IntervalField::Hour => "hour",
            IntervalField::Minute => "minute",
            IntervalField::Second => "second",
        }
    }
}

/// interval_in with a qualifier, as PostgreSQL reads `INTERVAL 'text' leading [TO last]`:
/// a bare number counts units of the last field (`'90' DAY` is 90 days), `'m:s'` is minutes
/// and seconds under MINUTE TO SECOND, and the fields below the last one are dropped
/// (AdjustIntervalForTypmod: `'1 day 02:00' DAY` is 1 day). The ranges PostgreSQL's grammar
/// does not have are 42601.
pub fn parse_qualified_interval(
    text: &str,
    leading: IntervalField,
    last: Option<IntervalField>,
) -> Result<Interval> {
    use IntervalField::{Day, Hour, Minute, Month, Second, Year};
    let range_allowed = match last {
        None => true,
        Some(last) => matches!(
            (leading, last),
            (Year, Month)
                | (Day, Hour)
                | (Day, Minute)
                | (Day, Second)
                | (Hour, Minute)
                | (Hour, Second)
                | (Minute, Second)
        ),
    };
    if let (false, Some(last)) = (range_allowed, last) {
        return Err(SqlError::syntax(format!("syntax error at or near \"{}\"", last.unit())));
    }
    let last = last.unwrap_or(leading);
    let trimmed = text.trim();
    let bare_number = !trimmed.is_empty()
        && trimmed.trim_start_matches(['+', '-']).chars().all(|c| c.is_ascii_digit() || c == '.');
    let minutes_seconds = leading == Minute
        && last == Second
        && trimmed.matches(':').count() == 1
        && !trimmed.contains(' ');
    let parsed = if bare_number {
        parse_interval(&format!("{trimmed} {}", last.unit()))
    } else if minutes_seconds {
        let (sign, rest) = match trimmed.strip_prefix('-') {
            Some(rest) => ("-", rest),
            None => ("", trimmed.trim_start_matches('+')),
        };
        parse_interval(&format!("{sign}0:{rest}"))
    } else {
        parse_interval(text)
    }
    .map_err(|error| match error.sqlstate {
        "22007" => {
            SqlError::new("22007", format!("invalid input syntax for type interval: \"{text}\""))
        }
        _ => error,
    })?;
    Ok(truncate_to_field(parsed, last))
}

/// The interval with the fields below `last` dropped (toward zero, as PostgreSQL's C
/// division does).
fn truncate_to_field(interval: Interval, last: IntervalField) -> Interval {
    let months_per_year = i32::try_from(MONTHS_PER_YEAR).expect("12 fits in i32");
    let micros_to = |unit: i64| interval.micros / unit * unit;
    match last {
        IntervalField::Year => {
            Interval::new(interval.months / months_per_year * months_per_year, 0, 0)
        }
        IntervalField::Month => Interval::new(interval.months, 0, 0),
        IntervalField::Day => Interval::new(interval.months, interval.days, 0),
        IntervalField::Hour => {
            Interval::new(interval.months, interval.days, micros_to(MICROSECONDS_PER_HOUR))
        }
        IntervalField::Minute => {
            Interval::new(interval.months, interval.days, micros_to(MICROSECONDS_PER_HOUR / 60))
        }
        IntervalField::Second => interval,
    }
}
