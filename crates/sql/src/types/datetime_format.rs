//! PostgreSQL's template patterns for date and time formatting (to_char) and parsing
//! (to_date, to_timestamp): the common patterns, the FM and TH modifiers and quoted text.
//! A pattern tierdb does not implement is an error (0A000), never printed as it is.

use chrono::{Datelike, NaiveDate};

use super::{decompose, Interval, MICROSECONDS_PER_DAY};
use crate::error::{Result, SqlError};

const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAY_NAMES: [&str; 7] =
    ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/// The patterns, longest first where one is a prefix of another.
const PATTERNS: &[&str] = &[
    "HH24", "HH12", "HH", "MI", "SSSS", "SS", "MS", "US", "A.M.", "a.m.", "P.M.", "p.m.", "AM",
    "am", "PM", "pm", "IYYY", "YYYY", "YYY", "YY", "Y", "MONTH", "Month", "month", "MON", "Mon",
    "mon", "MM", "DAY", "Day", "day", "DY", "Dy", "dy", "DDD", "DD", "D", "ID", "IW", "WW", "Q",
    "J", "CC", "TZH", "TZM", "TZ", "tz", "OF",
];

/// The patterns that are PostgreSQL's but not implemented here.
const UNSUPPORTED_PATTERNS: &[&str] = &[
    "Y,YYY", "IYY", "IY", "I", "IDDD", "RM", "rm", "W", "FF", "SSSSS", "BC", "AD", "B.C.", "A.D.",
    "bc", "ad",
];

/// One piece of a template.
#[derive(Debug)]
enum Piece {
    Pattern { name: &'static str, fill_mode: bool, ordinal: Option<bool> },
    Literal(String),
}

fn compile(template: &str) -> Result<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('"') {
            let end = after.find('"').unwrap_or(after.len());
            pieces.push(Piece::Literal(after[..end].replace("\\\"", "\"")));
            rest = after.get(end + 1..).unwrap_or("");
            continue;
        }
        let (fill_mode, body) = match rest.strip_prefix("FM").or_else(|| rest.strip_prefix("fm")) {
            Some(after) => (true, after),
            None => (false, rest),
        };
        if let Some(unsupported) = UNSUPPORTED_PATTERNS.iter().find(|name| body.starts_with(*name))
        {
            let longer = PATTERNS
                .iter()
                .any(|name| body.starts_with(name) && name.len() >= unsupported.len());
            if !longer {
                return Err(SqlError::unsupported(format!(
                    "template pattern \"{unsupported}\" is not supported"
                )));
            }
        }
        if let Some(name) = PATTERNS.iter().find(|name| body.starts_with(*name)) {
            let after = &body[name.len()..];
            let (ordinal, after) = match after.get(..2) {
                Some("TH") => (Some(true), &after[2..]),
                Some("th") => (Some(false), &after[2..]),
                _ => (None, after),
            };
            pieces.push(Piece::Pattern { name, fill_mode, ordinal });
            rest = after;
            continue;
        }
        let mut characters = rest.chars();
        let character = characters.next().expect("rest is not empty");
        // A backslash escapes only a double quote; otherwise it is printed.
        if character == '\\' && characters.next() == Some('"') {
            pieces.push(Piece::Literal("\"".to_string()));
            rest = &rest[2..];
            continue;
        }
        let literal = character.to_string();
        rest = &rest[character.len_utf8()..];
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

/// The values a template prints.
struct Values {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    microsecond: i64,
    /// The calendar date, None for an interval (names and week numbers need one).
    date: Option<NaiveDate>,
    /// A timestamptz's offset east of UTC (seconds) and zone abbreviation in the session
    /// zone; a timestamp's offset is 0 and its abbreviation empty, as in PostgreSQL.
    offset_seconds: i32,
    abbreviation: String,
}

fn ordinal_suffix(number: i64, upper: bool) -> &'static str {
    let suffix = match (number % 100, number % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    if upper {
        match suffix {
            "st" => "ST",
            "nd" => "ND",
            "rd" => "RD",
            _ => "TH",
        }
    } else {
        suffix
    }
}

fn cased(name: &str, pattern: &str, fill_mode: bool, width: usize) -> String {
    let text = if pattern.chars().all(|c| c.is_ascii_uppercase()) {
        name.to_uppercase()
    } else if pattern.chars().all(|c| c.is_ascii_lowercase()) {
        name.to_lowercase()
    } else {
        name.to_string()
    };
    if fill_mode {
        text
    } else {
        format!("{text:<width$}")
    }
}

fn needs_date(values: &Values, pattern: &str) -> Result<NaiveDate> {
    values.date.ok_or_else(|| {
        SqlError::unsupported(format!(
            "template pattern \"{pattern}\" is not supported for type interval"
        ))
    })
}

/// One pattern's text (numbers without their TH suffix and padding, which `render` adds).
fn pattern_value(
    values: &Values,
    name: &str,
    fill_mode: bool,
) -> Result<(Option<i64>, usize, String)> {
    let number = |value: i64, width: usize| Ok((Some(value), width, String::new()));
    let hour12 = if values.hour % 12 == 0 { 12 } else { values.hour % 12 };
    match name {
        "HH24" => number(values.hour, 2),
        "HH12" | "HH" => {
            number(if values.date.is_none() && values.hour == 0 { 0 } else { hour12 }, 2)
        }
        "MI" => number(values.minute, 2),
        "SS" => number(values.second, 2),
        "SSSS" => number((values.hour * 60 + values.minute) * 60 + values.second, 1),
        "MS" => number(values.microsecond / 1000, 3),
        "US" => number(values.microsecond, 6),
        "AM" | "PM" | "am" | "pm" | "A.M." | "P.M." | "a.m." | "p.m." => {
            let afternoon = values.hour % 24 >= 12;
            let text = match (name.len() > 2, afternoon) {
                (false, false) => "AM",
                (false, true) => "PM",
                (true, false) => "A.M.",
                (true, true) => "P.M.",
            };
            let lower = name.starts_with(['a', 'p']);
            Ok((None, 0, if lower { text.to_lowercase() } else { text.to_string() }))
        }
        "YYYY" => number(values.year, 4),
        "YYY" => number(values.year % 1000, 3),
        "YY" => number(values.year % 100, 2),
        "Y" => number(values.year % 10, 1),
        "IYYY" => number(i64::from(needs_date(values, name)?.iso_week().year()), 4),
        "CC" => {
            number(if values.year > 0 { (values.year + 99) / 100 } else { values.year / 100 }, 2)
        }
        "MM" => number(values.month, 2),
        "DD" => number(values.day, 2),
        "Q" => number((values.month - 1) / 3 + 1, 1),
        "MONTH" | "Month" | "month" | "MON" | "Mon" | "mon" => {
            needs_date(values, name)?;
            let full = MONTH_NAMES[usize::try_from(values.month - 1).unwrap_or(0)];
            let (text, width) = if name.len() == 3 { (&full[..3], 3) } else { (full, 9) };
            Ok((None, 0, cased(text, name, fill_mode, width)))
        }
        "DAY" | "Day" | "day" | "DY" | "Dy" | "dy" => {
            let date = needs_date(values, name)?;
            let full = DAY_NAMES[date.weekday().num_days_from_sunday() as usize];
            let (text, width) = if name.len() == 2 { (&full[..3], 3) } else { (full, 9) };
            Ok((None, 0, cased(text, name, fill_mode, width)))
        }
        "DDD" => number(i64::from(needs_date(values, name)?.ordinal()), 3),
        "D" => number(i64::from(needs_date(values, name)?.weekday().number_from_sunday()), 1),
        "ID" => number(i64::from(needs_date(values, name)?.weekday().number_from_monday()), 1),
        "IW" => number(i64::from(needs_date(values, name)?.iso_week().week()), 2),
        "WW" => number(i64::from((needs_date(values, name)?.ordinal() - 1) / 7 + 1), 2),
        "J" => number(super::days_of_date(needs_date(values, name)?) + 2_451_545, 1),
        "TZ" => Ok((None, 0, values.abbreviation.clone())),
        "tz" => Ok((None, 0, values.abbreviation.to_lowercase())),
        "TZH" | "TZM" | "OF" => Ok((None, 0, offset_text(values.offset_seconds, name))),
        other => {
            Err(SqlError::unsupported(format!("template pattern \"{other}\" is not supported")))
        }
    }
}

/// to_char's TZH (`-05`), TZM (`30`) and OF (`-05`, `+05:30`; seconds are not written).
fn offset_text(offset_seconds: i32, name: &str) -> String {
    let sign = if offset_seconds < 0 { '-' } else { '+' };
    let magnitude = offset_seconds.unsigned_abs();
    let (hours, minutes) = (magnitude / 3600, magnitude / 60 % 60);
    match name {
        "TZH" => format!("{sign}{hours:02}"),
        "TZM" => format!("{minutes:02}"),
        _ if minutes == 0 => format!("{sign}{hours:02}"),
        _ => format!("{sign}{hours:02}:{minutes:02}"),
    }
}

fn render(values: &Values, template: &str) -> Result<String> {
    let mut out = String::new();
    for piece in compile(template)? {
        match piece {
            Piece::Literal(text) => out.push_str(&text),
            Piece::Pattern { name, fill_mode, ordinal } => {
                let (number, width, text) = pattern_value(values, name, fill_mode)?;
                match number {
                    Some(value) => {
                        let digits = value.unsigned_abs().to_string();
                        let sign = if value < 0 { "-" } else { "" };
                        if fill_mode {
                            out.push_str(&format!("{sign}{digits}"));
                        } else {
                            out.push_str(&format!("{sign}{digits:0>width$}"));
                        }
                        if let Some(upper) = ordinal {
                            out.push_str(ordinal_suffix(value.abs(), upper));
                        }
                    }
                    None => out.push_str(&text),
                }
            }
        }
    }
    Ok(out)
}

/// to_char(timestamp[tz], text); a timestamptz (`zoned`) is written in the session zone.
pub fn format_timestamp_pattern(micros: i64, template: &str, zoned: bool) -> Result<String> {
    let (offset_seconds, abbreviation) = if zoned {
        super::with_session_zone(|zone| {
            (zone.offset_at_utc(micros), zone.abbreviation_at_utc(micros))
        })
    } else {
        (0, String::new())
    };
    let micros = micros.saturating_add(i64::from(offset_seconds) * 1_000_000);
    let fields = decompose(micros)?;
    let date = super::date_of_days(micros.div_euclid(MICROSECONDS_PER_DAY))?;
    let values = Values {
        year: i64::from(if fields.year > 0 { fields.year } else { 1 - fields.year }),
        month: i64::from(fields.month),
        day: i64::from(fields.day),
        hour: fields.hour,
        minute: fields.minute,
        second: fields.second,
        microsecond: fields.microsecond,
        date: Some(date),
        offset_seconds,
        abbreviation,
    };
    render(&values, template)
}

/// to_char(interval, text): the interval's fields (hours are not reduced to a day).
pub fn format_interval_pattern(interval: &Interval, template: &str) -> Result<String> {
    let time = interval.micros;
    let values = Values {
        year: i64::from(interval.months / 12),
        month: i64::from(interval.months % 12),
        day: i64::from(interval.days),
        hour: time / 3_600_000_000,
        minute: time / 60_000_000 % 60,
        second: time / 1_000_000 % 60,
        microsecond: time % 1_000_000,
        date: None,
        offset_seconds: 0,
        abbreviation: String::new(),
    };
    render(&values, template)
}

/// to_date and to_timestamp(text, text): the input read by the template; microseconds
/// since 2000-01-01 of the wall-clock time read (to_timestamp places it in the session zone).
pub fn parse_formatted(input: &str, template: &str, with_time: bool) -> Result<i64> {
    let mut fields = ParsedFields { year: 1, month: 1, day: 1, ..ParsedFields::default() };
    let mut rest = input;
    for piece in compile(template)? {
        match piece {
            Piece::Literal(text) => {
                // A separator in the template skips one non-alphanumeric character.
                for _ in text.chars() {
                    if let Some(first) = rest.chars().next() {
                        if !first.is_ascii_alphanumeric() {
                            rest = &rest[first.len_utf8()..];
                        }
                    }
                }
            }
            Piece::Pattern { name, .. } => {
                rest = rest.trim_start_matches(' ');
                rest = parse_pattern(&mut fields, name, rest)?;
            }
        }
    }
    fields.finish(input, with_time)
}

#[derive(Default)]
struct ParsedFields {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    microsecond: i64,
    afternoon: Option<bool>,
}

impl ParsedFields {
    fn finish(self, input: &str, with_time: bool) -> Result<i64> {
        let out_of_range =
            || SqlError::new("22008", format!("date/time field value out of range: \"{input}\""));
        let mut hour = self.hour;
        if let Some(afternoon) = self.afternoon {
            if !(1..=12).contains(&hour) {
                return Err(SqlError::new(
                    "22008",
                    format!("hour \"{hour}\" is invalid for the 12-hour clock"),
                ));
            }
            hour = hour % 12 + if afternoon { 12 } else { 0 };
        }
        let year = i32::try_from(self.year).map_err(|_| out_of_range())?;
        let month = u32::try_from(self.month).map_err(|_| out_of_range())?;
        let day = u32::try_from(self.day).map_err(|_| out_of_range())?;
        let date = NaiveDate::from_ymd_opt(year, month, day).ok_or_else(out_of_range)?;
        let days = super::days_of_date(date);
        if !with_time {
            return Ok(days * MICROSECONDS_PER_DAY);
        }
        if hour > 24 || self.minute > 59 || self.second > 60 {
            return Err(out_of_range());
        }
        let time = ((hour * 60 + self.minute) * 60 + self.second) * 1_000_000 + self.microsecond;
        Ok(days * MICROSECONDS_PER_DAY + time)
    }
}

/// Reads one pattern's value from the front of `input`; the rest after it.
fn parse_pattern<'a>(fields: &mut ParsedFields, name: &str, input: &'a str) -> Result<&'a str> {
    let width = match name {
        "YYYY" | "IYYY" => 4,
        "US" => 6,
        "MS" | "DDD" => 3,
        "YYY" => 3,
        "Y" | "D" | "Q" | "ID" => 1,
        _ => 2,
    };
    let take_number = || -> Result<(i64, &'a str)> {
        let end = input
            .char_indices()
            .take_while(|(index, c)| c.is_ascii_digit() && *index < width)
            .count();
        if end == 0 {
            return Err(SqlError::new(
                "22007",
                format!(
                    "invalid value \"{}\" for \"{name}\"",
                    input.chars().take(width).collect::<String>()
                ),
            ));
        }
        let value = input[..end].parse::<i64>().map_err(|_| SqlError::out_of_range("integer"))?;
        Ok((value, &input[end..]))
    };
    let (value, rest) = match name {
        "MONTH" | "Month" | "month" | "MON" | "Mon" | "mon" => {
            let lowered = input.to_ascii_lowercase();
            let found = MONTH_NAMES.iter().enumerate().find_map(|(index, month)| {
                let month = month.to_ascii_lowercase();
                if name.len() > 3 && lowered.starts_with(&month) {
                    Some((index, month.len()))
                } else if lowered.starts_with(&month[..3]) {
                    Some((index, 3))
                } else {
                    None
                }
            });
            let (index, length) = found.ok_or_else(|| {
                SqlError::new("22007", format!("invalid value \"{input}\" for \"{name}\""))
            })?;
            fields.month = i64::try_from(index).expect("below 12") + 1;
            return Ok(&input[length..]);
        }
        "AM" | "PM" | "am" | "pm" => {
            let marker = input.get(..2).unwrap_or("").to_ascii_uppercase();
            fields.afternoon = match marker.as_str() {
                "AM" => Some(false),
                "PM" => Some(true),
                _ => {
                    return Err(SqlError::new(
                        "22007",
                        format!("invalid value \"{input}\" for \"{name}\""),
                    ))
                }
            };
            return Ok(&input[2..]);
        }
        "YYYY" | "YYY" | "YY" | "Y" | "MM" | "DD" | "HH24" | "HH12" | "HH" | "MI" | "SS" | "MS"
        | "US" | "DDD" => take_number()?,
        other => {
            return Err(SqlError::unsupported(format!(
                "template pattern \"{other}\" is not supported in to_date and to_timestamp"
            )))
        }
    };
    match name {
        "YYYY" => fields.year = value,
        "YYY" => fields.year = value + if value < 100 { 2000 } else { 1000 },
        "YY" => fields.year = value + if value < 70 { 2000 } else { 1900 },
        "Y" => fields.year = value + 2000,
        "MM" => fields.month = value,
        "DD" => fields.day = value,
        "HH24" | "HH12" | "HH" => fields.hour = value,
        "MI" => fields.minute = value,
        "SS" => fields.second = value,
        "MS" => fields.microsecond = value * 1000,
        "US" => fields.microsecond = value,
        _ => {
            return Err(SqlError::unsupported(format!(
                "template pattern \"{name}\" is not supported in to_date and to_timestamp"
            )))
        }
    }
    Ok(rest)
}
