//! PostgreSQL's template patterns for date and time formatting (to_char) and parsing
//! (to_date, to_timestamp): the common patterns, the FM and TH modifiers and quoted text.
//! A pattern tierdb does not implement is an error (0A000), never printed as it is.

use chrono::{Datelike, NaiveDate};

use super::{decompose, Interval, MICROSECONDS_PER_DAY};
use crate::error::{Result, SqlError};

pub(super) const MONTH_NAMES: [&str; 12] = [
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
pub(super) const DAY_NAMES: [&str; 7] =
    ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/// PostgreSQL's date and time keywords in its order (within a first letter, the longer
/// first), each with the name this file handles it by: the lowercase form of a numeric
/// pattern is the uppercase one; names whose case shapes the text (month and day names,
/// AM, AD, TZ, RM) keep their own.
const KEYWORDS: &[(&str, &str)] = &[
    ("A.D.", "A.D."),
    ("A.M.", "A.M."),
    ("AD", "AD"),
    ("AM", "AM"),
    ("B.C.", "B.C."),
    ("BC", "BC"),
    ("CC", "CC"),
    ("DAY", "DAY"),
    ("DDD", "DDD"),
    ("DD", "DD"),
    ("DY", "DY"),
    ("Day", "Day"),
    ("Dy", "Dy"),
    ("D", "D"),
    ("FF1", "FF1"),
    ("FF2", "FF2"),
    ("FF3", "FF3"),
    ("FF4", "FF4"),
    ("FF5", "FF5"),
    ("FF6", "FF6"),
    ("FX", "FX"),
    ("HH24", "HH24"),
    ("HH12", "HH12"),
    ("HH", "HH"),
    ("IDDD", "IDDD"),
    ("ID", "ID"),
    ("IW", "IW"),
    ("IYYY", "IYYY"),
    ("IYY", "IYY"),
    ("IY", "IY"),
    ("I", "I"),
    ("J", "J"),
    ("MI", "MI"),
    ("MM", "MM"),
    ("MONTH", "MONTH"),
    ("MON", "MON"),
    ("MS", "MS"),
    ("Month", "Month"),
    ("Mon", "Mon"),
    ("OF", "OF"),
    ("P.M.", "P.M."),
    ("PM", "PM"),
    ("Q", "Q"),
    ("RM", "RM"),
    ("SSSSS", "SSSS"),
    ("SSSS", "SSSS"),
    ("SS", "SS"),
    ("TZH", "TZH"),
    ("TZM", "TZM"),
    ("TZ", "TZ"),
    ("US", "US"),
    ("WW", "WW"),
    ("W", "W"),
    ("Y,YYY", "Y,YYY"),
    ("YYYY", "YYYY"),
    ("YYY", "YYY"),
    ("YY", "YY"),
    ("Y", "Y"),
    ("a.d.", "a.d."),
    ("a.m.", "a.m."),
    ("ad", "ad"),
    ("am", "am"),
    ("b.c.", "b.c."),
    ("bc", "bc"),
    ("cc", "CC"),
    ("day", "day"),
    ("ddd", "DDD"),
    ("dd", "DD"),
    ("dy", "dy"),
    ("d", "D"),
    ("ff1", "FF1"),
    ("ff2", "FF2"),
    ("ff3", "FF3"),
    ("ff4", "FF4"),
    ("ff5", "FF5"),
    ("ff6", "FF6"),
    ("fx", "FX"),
    ("hh24", "HH24"),
    ("hh12", "HH12"),
    ("hh", "HH"),
    ("iddd", "IDDD"),
    ("id", "ID"),
    ("iw", "IW"),
    ("iyyy", "IYYY"),
    ("iyy", "IYY"),
    ("iy", "IY"),
    ("i", "I"),
    ("j", "J"),
    ("mi", "MI"),
    ("mm", "MM"),
    ("month", "month"),
    ("mon", "mon"),
    ("ms", "MS"),
    ("of", "OF"),
    ("p.m.", "p.m."),
    ("pm", "pm"),
    ("q", "Q"),
    ("rm", "rm"),
    ("sssss", "SSSS"),
    ("ssss", "SSSS"),
    ("ss", "SS"),
    ("tzh", "TZH"),
    ("tzm", "TZM"),
    ("tz", "tz"),
    ("us", "US"),
    ("ww", "WW"),
    ("w", "W"),
    ("y,yyy", "Y,YYY"),
    ("yyyy", "YYYY"),
    ("yyy", "YYY"),
    ("yy", "YY"),
    ("y", "Y"),
];

/// Roman numerals of the months, January first.
const ROMAN_MONTHS: [&str; 12] =
    ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];

/// One piece of a template. A pattern may have one prefix (FM: no padding; TM: names in
/// the locale, here C's, without padding) and a suffix (TH / th: an ordinal; SP: nothing,
/// as in PostgreSQL).
#[derive(Debug)]
pub(super) enum Piece {
    Pattern {
        /// The keyword as the template spells it (`yyyy`), which parse errors name.
        keyword: &'static str,
        name: &'static str,
        fill_mode: bool,
        translate: bool,
        ordinal: Option<bool>,
    },
    /// One character outside quotes.
    Literal(String),
    /// The text of a double-quoted literal.
    Quoted(String),
}

pub(super) fn compile(template: &str) -> Result<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        // A prefix is consumed even when no pattern follows it, as in PostgreSQL.
        let prefix = ["FM", "fm", "TM", "tm"].iter().find(|prefix| rest.starts_with(*prefix));
        if let Some(prefix) = prefix {
            rest = &rest[prefix.len()..];
        }
        let fill_mode = prefix.is_some_and(|prefix| prefix.eq_ignore_ascii_case("FM"));
        let translate = prefix.is_some_and(|prefix| prefix.eq_ignore_ascii_case("TM"));
        if let Some(&(keyword, name)) =
            KEYWORDS.iter().find(|(keyword, _)| rest.starts_with(keyword))
        {
            let after = &rest[keyword.len()..];
            let (ordinal, after) = match after.get(..2) {
                Some("TH") => (Some(true), &after[2..]),
                Some("th") => (Some(false), &after[2..]),
                Some("SP") => (None, &after[2..]),
                _ => (None, after),
            };
            pieces.push(Piece::Pattern { keyword, name, fill_mode, translate, ordinal });
            rest = after;
        } else if let Some(quoted) = rest.strip_prefix('"') {
            rest = quoted_literal(quoted, &mut pieces);
        } else if let Some(character) = rest.chars().next() {
            // Outside quotes a backslash only quotes a double quote.
            let skip = usize::from(character == '\\' && rest[1..].starts_with('"'));
            let character = rest[skip..].chars().next().expect("a character follows");
            pieces.push(Piece::Literal(character.to_string()));
            rest = &rest[skip + character.len_utf8()..];
        }
    }
    Ok(pieces)
}

/// Pushes a double-quoted literal (a backslash quotes the next character) and returns the
/// text after its closing quote.
fn quoted_literal<'a>(text: &'a str, pieces: &mut Vec<Piece>) -> &'a str {
    let mut literal = String::new();
    let mut characters = text.char_indices();
    let mut rest = "";
    while let Some((index, character)) = characters.next() {
        match character {
            '"' => {
                rest = &text[index + 1..];
                break;
            }
            '\\' => literal.push(characters.next().map_or('\\', |(_, quoted)| quoted)),
            other => literal.push(other),
        }
    }
    pieces.push(Piece::Quoted(literal));
    rest
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
    /// A year at or before 1 BC (`year` holds its number counted back, as written).
    before_christ: bool,
}

pub(super) fn ordinal_suffix(number: i64, upper: bool) -> &'static str {
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

/// PostgreSQL's error for a pattern that names a calendar date in to_char of an interval.
fn invalid_for_interval() -> SqlError {
    SqlError::new(
        "22007",
        "invalid format specification for an interval value: Intervals are not tied to specific calendar dates.",
    )
}

fn needs_calendar(values: &Values) -> Result<NaiveDate> {
    values.date.ok_or_else(invalid_for_interval)
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
            Ok((None, 0, marker(name, afternoon, ["AM", "PM", "A.M.", "P.M."])))
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
            needs_calendar(values)?;
            let full = MONTH_NAMES[usize::try_from(values.month - 1).unwrap_or(0)];
            let (text, width) = if name.len() == 3 { (&full[..3], 3) } else { (full, 9) };
            Ok((None, 0, cased(text, name, fill_mode, width)))
        }
        "DAY" | "Day" | "day" | "DY" | "Dy" | "dy" => {
            let date = needs_calendar(values)?;
            let full = DAY_NAMES[date.weekday().num_days_from_sunday() as usize];
            let (text, width) = if name.len() == 2 { (&full[..3], 3) } else { (full, 9) };
            Ok((None, 0, cased(text, name, fill_mode, width)))
        }
        "DDD" => number(i64::from(needs_date(values, name)?.ordinal()), 3),
        "D" => number(i64::from(needs_calendar(values)?.weekday().number_from_sunday()), 1),
        "ID" => number(i64::from(needs_calendar(values)?.weekday().number_from_monday()), 1),
        "IW" => number(i64::from(needs_date(values, name)?.iso_week().week()), 2),
        "WW" => number(i64::from((needs_date(values, name)?.ordinal() - 1) / 7 + 1), 2),
        "J" => number(super::days_of_date(needs_date(values, name)?) + 2_451_545, 1),
        "TZ" => Ok((None, 0, values.abbreviation.clone())),
        "tz" => Ok((None, 0, values.abbreviation.to_lowercase())),
        "TZH" | "TZM" | "OF" => Ok((None, 0, offset_text(values.offset_seconds, name))),
        other => more_pattern_value(values, other, fill_mode),
    }
}

/// Month and day names, which TM writes in the locale (C's: English) without padding.
fn is_name(name: &str) -> bool {
    matches!(
        name,
        "MONTH"
            | "Month"
            | "month"
            | "MON"
            | "Mon"
            | "mon"
            | "DAY"
            | "Day"
            | "day"
            | "DY"
            | "Dy"
            | "dy"
    )
}

/// A two-valued marker (AM / PM, AD / BC) in the pattern's form: with periods when the
/// pattern has them, lowercase when it is.
fn marker(name: &str, second: bool, forms: [&'static str; 4]) -> String {
    let text = forms[usize::from(name.len() > 2) * 2 + usize::from(second)];
    if name.starts_with(|character: char| character.is_ascii_lowercase()) {
        text.to_lowercase()
    } else {
        text.to_string()
    }
}

/// RM's numeral: the month's; for an interval, a month counted back from December when
/// negative, and December (or January when negative) for whole years; nothing for none.
fn roman_month(values: &Values) -> Option<&'static str> {
    let index = match values.month {
        0 if values.year == 0 => return None,
        0 if values.year > 0 => 11,
        0 => 0,
        month if month > 0 => month - 1,
        month => 12 + month,
    };
    usize::try_from(index).ok().and_then(|index| ROMAN_MONTHS.get(index)).copied()
}

/// The patterns PostgreSQL added to Oracle's common ones: ISO years and days, the week of
/// the month, Roman months, fractions of a second, eras, FX (nothing when printing).
fn more_pattern_value(
    values: &Values,
    name: &str,
    fill_mode: bool,
) -> Result<(Option<i64>, usize, String)> {
    let number = |value: i64, width: usize| Ok((Some(value), width, String::new()));
    let iso_year = || -> Result<i64> { Ok(i64::from(needs_date(values, name)?.iso_week().year())) };
    match name {
        "Y,YYY" => Ok((None, 0, format!("{},{:03}", values.year / 1000, values.year % 1000))),
        "IYY" => number(iso_year()? % 1000, 3),
        "IY" => number(iso_year()? % 100, 2),
        "I" => number(iso_year()? % 10, 1),
        "IDDD" => {
            let date = needs_date(values, name)?;
            let week = i64::from(date.iso_week().week());
            number((week - 1) * 7 + i64::from(date.weekday().number_from_monday()), 3)
        }
        "W" => number((values.day - 1) / 7 + 1, 1),
        "RM" | "rm" => {
            let Some(numeral) = roman_month(values) else {
                return Ok((None, 0, String::new()));
            };
            let numeral = if name == "rm" { numeral.to_lowercase() } else { numeral.to_string() };
            Ok((None, 0, if fill_mode { numeral } else { format!("{numeral:<4}") }))
        }
        "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => {
            let digits = usize::from(name.as_bytes()[2] - b'0');
            let divisor = 10i64.pow(u32::try_from(6 - digits).expect("at most 5"));
            number(values.microsecond / divisor, digits)
        }
        "FX" => Ok((None, 0, String::new())),
        "AD" | "BC" | "A.D." | "B.C." | "ad" | "bc" | "a.d." | "b.c." => {
            needs_calendar(values)?;
            Ok((None, 0, marker(name, values.before_christ, ["AD", "BC", "A.D.", "B.C."])))
        }
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
            Piece::Literal(text) | Piece::Quoted(text) => out.push_str(&text),
            Piece::Pattern { name, fill_mode, translate, ordinal, .. } => {
                // TM writes month and day names without padding, as FM does; numbers and
                // Roman months keep theirs.
                let unpadded = fill_mode || (translate && is_name(name));
                let (number, width, text) = pattern_value(values, name, unpadded)?;
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
        before_christ: fields.year <= 0,
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
        before_christ: false,
    };
    render(&values, template)
}
