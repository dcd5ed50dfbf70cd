//! to_date and to_timestamp(text, text): the input read by a template, as PostgreSQL 15's
//! formatting.c reads it (DCH_from_char, then do_to_timestamp).
//!
//! Reading is lenient, as PostgreSQL's is outside FX mode: spaces before a field are
//! skipped, a separator in the template matches one space or separator of the input (or
//! none), a number is read to the next non-digit when the template puts a separator (or
//! nothing) after it and is otherwise read in exactly its pattern's width. The fields read
//! then make a date in this order: the year (with CC, BC and two-digit years), a Julian day,
//! ISO weeks, the day and month, the day of the year; only a complete date's day is checked
//! against its month. A field not read keeps PostgreSQL's default: 1 BC, January, the 1st,
//! midnight.

use super::datetime_format::{compile, Piece, DAY_NAMES, MONTH_NAMES};
use super::MICROSECONDS_PER_DAY;
use crate::error::{Result, SqlError};

/// PostgreSQL's day number of 2000-01-01 (POSTGRES_EPOCH_JDATE).
pub(crate) const EPOCH_JULIAN_DAY: i64 = 2_451_545;
/// The Julian-day routines' range: 4714-11-24 BC to 5874898-06-01 (exclusive).
const JULIAN_YEAR_MIN: i64 = -4713;
const JULIAN_MONTH_MIN: i64 = 11;
const JULIAN_YEAR_MAX: i64 = 5_874_898;
const JULIAN_MONTH_MAX: i64 = 6;
/// The end of the date range as a Julian day (DATE_END_JULIAN).
pub(crate) const DATE_END_JULIAN_DAY: i64 = 2_147_483_494;
/// The largest zone displacement TZH accepts, in hours (MAX_TZDISP_HOUR).
const ZONE_HOURS_MAX: i64 = 15;

const MONTHS_SHORT: [&str; 12] =
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DAYS_SHORT: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
/// Roman months, December first (rm_months_lower): the match's index i is month 12 - i.
const ROMAN_MONTHS_DESCENDING: [&str; 12] =
    ["xii", "xi", "x", "ix", "viii", "vii", "vi", "v", "iv", "iii", "ii", "i"];
/// Even entries morning / AD, odd afternoon / BC, as PostgreSQL's arrays.
const MERIDIEMS: [&str; 4] = ["am", "pm", "AM", "PM"];
const MERIDIEMS_DOTTED: [&str; 4] = ["a.m.", "p.m.", "A.M.", "P.M."];
const ERAS: [&str; 4] = ["ad", "bc", "AD", "BC"];
const ERAS_DOTTED: [&str; 4] = ["a.d.", "b.c.", "A.D.", "B.C."];

/// What a template reads: a timestamp's wall-clock time, the zone displacement TZH / TZM
/// gave (seconds east of UTC) and the fractional precision FF1-FF6 gave.
pub struct ParsedTimestamp {
    /// Microseconds since 2000-01-01 00:00 of the wall-clock time read.
    pub local_micros: i64,
    pub offset_seconds: Option<i64>,
    pub fraction_digits: Option<u32>,
}

/// to_date(text, text): the day number since 2000-01-01.
pub fn parse_date_formatted(input: &str, template: &str) -> Result<i32> {
    let fields = read_fields(input, template)?.into_calendar(input)?;
    let out_of_range = || SqlError::new("22008", format!("date out of range: \"{input}\""));
    if !valid_julian(fields.year, fields.month) {
        return Err(out_of_range());
    }
    let days = date_to_julian(fields.year, fields.month, fields.day) - EPOCH_JULIAN_DAY;
    if !(-EPOCH_JULIAN_DAY..DATE_END_JULIAN_DAY - EPOCH_JULIAN_DAY).contains(&days) {
        return Err(out_of_range());
    }
    i32::try_from(days).map_err(|_| out_of_range())
}

/// to_timestamp(text, text): the wall-clock time read, with the zone and precision fields.
pub fn parse_timestamp_formatted(input: &str, template: &str) -> Result<ParsedTimestamp> {
    let read = read_fields(input, template)?;
    let fraction_digits = read.fraction_digits;
    // do_to_timestamp checks the date and time before the zone displacement.
    let zone = read.zone_offset_seconds(input);
    let fields = read.into_calendar(input)?;
    let zone = zone?;
    let out_of_range = || SqlError::new("22008", "timestamp out of range");
    if !valid_julian(fields.year, fields.month) {
        return Err(out_of_range());
    }
    let days = date_to_julian(fields.year, fields.month, fields.day) - EPOCH_JULIAN_DAY;
    let time = ((fields.hour * 60 + fields.minute) * 60 + fields.second) * 1_000_000
        + fields.fraction_micros;
    let local_micros = days
        .checked_mul(MICROSECONDS_PER_DAY)
        .and_then(|micros| micros.checked_add(time))
        .ok_or_else(out_of_range)?;
    Ok(ParsedTimestamp { local_micros, offset_seconds: zone, fraction_digits })
}

/// A timestamp rounded to `digits` fractional digits (AdjustTimestampForTypmod).
pub fn round_timestamp_to_digits(micros: i64, digits: u32) -> i64 {
    assert!(digits <= 6, "at most six fractional digits");
    let scale = 10i64.pow(6 - digits);
    let half = scale / 2;
    if micros >= 0 {
        (micros + half) / scale * scale
    } else {
        -((-micros + half) / scale * scale)
    }
}

/// PostgreSQL's date conventions: a template mixes no Gregorian and ISO week fields.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum DateMode {
    #[default]
    None,
    Gregorian,
    IsoWeek,
}

/// The fields a template read (TmFromChar); 0 is "not read", as in PostgreSQL, so a
/// second pattern for a field conflicts only with a different non-zero value.
#[derive(Default)]
struct ReadFields {
    mode: DateMode,
    hour: i64,
    afternoon: i64,
    twelve_hour_clock: bool,
    minute: i64,
    second: i64,
    seconds_of_day: i64,
    day_of_week: i64,
    day: i64,
    day_of_year: i64,
    month: i64,
    millisecond: i64,
    microsecond: i64,
    fraction_digits: Option<u32>,
    year: i64,
    year_digits: u32,
    before_christ: i64,
    week: i64,
    week_of_month: i64,
    century: i64,
    julian_day: i64,
    zone_sign: i64,
    zone_hours: i64,
    zone_minutes: i64,
}

/// The date and time the fields make (a struct pg_tm and its fractional seconds).
struct Calendar {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    fraction_micros: i64,
}

/// One template node (FormatNode): a pattern, or a character of the template's text.
enum Node {
    Pattern {
        keyword: &'static str,
        name: &'static str,
        fill_mode: bool,
        ordinal: bool,
    },
    /// A space of the template.
    Space,
    /// A printable ASCII character that is neither a letter nor a digit, outside quotes.
    Separator,
    /// Any other character (quoted text, letters that are no pattern, digits).
    Character(char),
}

fn nodes(template: &str) -> Result<Vec<Node>> {
    let mut nodes = Vec::new();
    for piece in compile(template)? {
        match piece {
            Piece::Pattern { keyword, name, fill_mode, ordinal, .. } => {
                nodes.push(Node::Pattern { keyword, name, fill_mode, ordinal: ordinal.is_some() })
            }
            Piece::Literal(text) => nodes.extend(text.chars().map(|character| {
                if is_separator(character) {
                    Node::Separator
                } else if is_c_space(character) {
                    Node::Space
                } else {
                    Node::Character(character)
                }
            })),
            Piece::Quoted(text) => nodes.extend(text.chars().map(Node::Character)),
        }
    }
    Ok(nodes)
}

/// is_separator_char: printable ASCII but no letter or digit (a space is not one).
fn is_separator(character: char) -> bool {
    character.is_ascii_graphic() && !character.is_ascii_alphanumeric()
}

/// C's isspace.
fn is_c_space(character: char) -> bool {
    matches!(character, ' ' | '\t' | '\n' | '\u{b}' | '\u{c}' | '\r')
}

/// Whether a pattern reads digits (the keyword table's is_digit).
fn reads_digits(name: &str) -> bool {
    matches!(
        name,
        "CC" | "DDD"
            | "DD"
            | "D"
            | "FF1"
            | "FF2"
            | "FF3"
            | "FF4"
            | "FF5"
            | "FF6"
            | "HH24"
            | "HH12"
            | "HH"
            | "IDDD"
            | "ID"
            | "IW"
            | "IYYY"
            | "IYY"
            | "IY"
            | "I"
            | "J"
            | "MI"
            | "MM"
            | "MS"
            | "Q"
            | "SSSS"
            | "SS"
            | "TZM"
            | "US"
            | "WW"
            | "W"
            | "Y,YYY"
            | "YYYY"
            | "YYY"
            | "YY"
            | "Y"
    )
}

/// The date convention a pattern belongs to (the keyword table's date_mode).
fn date_mode(name: &str) -> DateMode {
    match name {
        "IDDD" | "ID" | "IW" | "IYYY" | "IYY" | "IY" | "I" => DateMode::IsoWeek,
        "DDD" | "DD" | "D" | "MM" | "MONTH" | "Month" | "month" | "MON" | "Mon" | "mon" | "RM"
        | "rm" | "WW" | "W" | "Y,YYY" | "YYYY" | "YYY" | "YY" | "Y" => DateMode::Gregorian,
        _ => DateMode::None,
    }
}

/// is_next_separator: whether the number at `nodes[index]` may be read to its first
/// non-digit, because what follows it in the template cannot be a digit.
fn next_is_separator(nodes: &[Node], index: usize) -> bool {
    if let Node::Pattern { ordinal: true, .. } = nodes[index] {
        return true;
    }
    match nodes.get(index + 1) {
        None => true,
        Some(Node::Pattern { name, .. }) => !reads_digits(name),
        Some(Node::Character(character)) => !character.is_ascii_digit(),
        Some(Node::Space | Node::Separator) => true,
    }
}

/// The reader's place in the input (DCH_from_char's `s`, `fx_mode` and `extra_skip`).
struct Reader<'a> {
    input: &'a str,
    position: usize,
    fixed_format: bool,
    /// Characters skipped beyond those the template's text accounts for.
    extra_skip: i64,
}

impl Reader<'_> {
    fn rest(&self) -> &str {
        &self.input[self.position..]
    }

    fn first(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn advance_character(&mut self) {
        if let Some(character) = self.first() {
            self.position += character.len_utf8();
        }
    }

    fn skip_spaces(&mut self) {
        while self.first().is_some_and(is_c_space) {
            self.position += 1;
            self.extra_skip += 1;
        }
    }
}

fn read_fields(input: &str, template: &str) -> Result<ReadFields> {
    let nodes = nodes(template)?;
    let mut reader = Reader { input, position: 0, fixed_format: false, extra_skip: 0 };
    let mut fields = ReadFields::default();
    for (index, node) in nodes.iter().enumerate() {
        if reader.rest().is_empty() {
            break;
        }
        let is_fixed_format = matches!(node, Node::Pattern { name: "FX", .. });
        let is_pattern = matches!(node, Node::Pattern { .. });
        if !reader.fixed_format && !is_fixed_format && (is_pattern || index == 0) {
            reader.skip_spaces();
        }
        match node {
            Node::Space | Node::Separator => {
                if reader.fixed_format {
                    reader.advance_character();
                } else {
                    reader.extra_skip -= 1;
                    if reader.first().is_some_and(|c| is_c_space(c) || is_separator(c)) {
                        reader.advance_character();
                        reader.extra_skip += 1;
                    }
                }
            }
            Node::Character(_) => {
                if !reader.fixed_format && reader.extra_skip > 0 {
                    reader.extra_skip -= 1;
                } else {
                    reader.advance_character();
                }
            }
            Node::Pattern { name, .. } => {
                fields.set_mode(date_mode(name))?;
                read_pattern(&mut fields, &mut reader, &nodes, index)?;
                if !reader.fixed_format {
                    reader.extra_skip = 0;
                    reader.skip_spaces();
                }
            }
        }
    }
    Ok(fields)
}

/// Reads one pattern's field at the reader's place.
fn read_pattern(
    fields: &mut ReadFields,
    reader: &mut Reader<'_>,
    nodes: &[Node],
    index: usize,
) -> Result<()> {
    let Node::Pattern { keyword, name, ordinal, .. } = nodes[index] else {
        unreachable!("read_pattern reads patterns")
    };
    let field = Field { keyword, nodes, index };
    match name {
        "FX" => reader.fixed_format = true,
        "A.M." | "P.M." | "a.m." | "p.m." | "AM" | "PM" | "am" | "pm" => {
            let words: &[&str] = if name.contains('.') { &MERIDIEMS_DOTTED } else { &MERIDIEMS };
            let found = field.search(reader, words)?;
            set(&mut fields.afternoon, found % 2, keyword)?;
            fields.twelve_hour_clock = true;
        }
        "A.D." | "B.C." | "a.d." | "b.c." | "AD" | "BC" | "ad" | "bc" => {
            let words: &[&str] = if name.contains('.') { &ERAS_DOTTED } else { &ERAS };
            let found = field.search(reader, words)?;
            set(&mut fields.before_christ, found % 2, keyword)?;
        }
        "MONTH" | "Month" | "month" => {
            let found = field.search(reader, &MONTH_NAMES)?;
            set(&mut fields.month, found + 1, keyword)?;
        }
        "MON" | "Mon" | "mon" => {
            let found = field.search(reader, &MONTHS_SHORT)?;
            set(&mut fields.month, found + 1, keyword)?;
        }
        "DAY" | "Day" | "day" | "DY" | "Dy" | "dy" => {
            let words: &[&str] = if name.len() == 3 { &DAY_NAMES } else { &DAYS_SHORT };
            let found = field.search(reader, words)?;
            set(&mut fields.day_of_week, found, keyword)?;
            fields.day_of_week += 1;
        }
        "RM" | "rm" => {
            let found = field.search(reader, &ROMAN_MONTHS_DESCENDING)?;
            set(&mut fields.month, 12 - found, keyword)?;
        }
        "TZ" | "tz" | "OF" => {
            return Err(SqlError::unsupported(format!(
                "formatting field \"{keyword}\" is only supported in to_char"
            )))
        }
        "TZH" => read_zone_hours(fields, reader, &field)?,
        "TZM" => {
            if fields.zone_sign == 0 {
                fields.zone_sign = 1;
            }
            field.integer(reader, 2, Some(&mut fields.zone_minutes))?;
        }
        "Y,YYY" => read_year_with_comma(fields, reader, keyword)?,
        _ => read_number_pattern(fields, reader, &field, name)?,
    }
    if ordinal {
        // SKIP_THth: the ordinal suffix's two characters.
        reader.advance_character();
        reader.advance_character();
    }
    Ok(())
}

/// The patterns that read a number into one field.
fn read_number_pattern(
    fields: &mut ReadFields,
    reader: &mut Reader<'_>,
    field: &Field<'_>,
    name: &str,
) -> Result<()> {
    let key_width = field.keyword.len();
    let (target, width) = match name {
        "HH" | "HH12" => {
            fields.twelve_hour_clock = true;
            (Some(&mut fields.hour), 2)
        }
        "HH24" => (Some(&mut fields.hour), 2),
        "MI" => (Some(&mut fields.minute), key_width),
        "SS" => (Some(&mut fields.second), key_width),
        "SSSS" => (Some(&mut fields.seconds_of_day), key_width),
        "MS" => {
            // "25" is 0.25 s and "250" too; "025" is 0.025 s.
            let length = field.integer(reader, 3, Some(&mut fields.millisecond))?;
            fields.millisecond *= [100, 10].get(length.wrapping_sub(1)).copied().unwrap_or(1);
            return Ok(());
        }
        "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" | "US" => {
            return read_fraction(fields, reader, field, name);
        }
        "MM" => (Some(&mut fields.month), key_width),
        "DDD" => (Some(&mut fields.day_of_year), key_width),
        "IDDD" => (Some(&mut fields.day_of_year), 3),
        "DD" => (Some(&mut fields.day), key_width),
        "D" => (Some(&mut fields.day_of_week), key_width),
        "ID" => {
            field.integer(reader, 1, Some(&mut fields.day_of_week))?;
            // ISO's Monday 1 to Sunday 7 as Sunday 1 to Saturday 7.
            fields.day_of_week += 1;
            if fields.day_of_week > 7 {
                fields.day_of_week = 1;
            }
            return Ok(());
        }
        "WW" | "IW" => (Some(&mut fields.week), key_width),
        "W" => (Some(&mut fields.week_of_month), key_width),
        // The quarter is read and ignored: which of its days would be unclear.
        "Q" => (None, key_width),
        "CC" => (Some(&mut fields.century), key_width),
        "J" => (Some(&mut fields.julian_day), key_width),
        "YYYY" | "IYYY" | "YYY" | "IYY" | "YY" | "IY" | "Y" | "I" => {
            let length = field.integer(reader, key_width, Some(&mut fields.year))?;
            fields.year_digits = u32::try_from(key_width).expect("a short keyword");
            if key_width < 4 && length < 4 {
                fields.year = year_toward_2020(fields.year);
            }
            return Ok(());
        }
        other => unreachable!("the keyword table has no pattern {other}"),
    };
    field.integer(reader, width, target)?;
    Ok(())
}

/// US and FF1-FF6: microseconds from up to six (or n) digits, scaled by the digits read.
fn read_fraction(
    fields: &mut ReadFields,
    reader: &mut Reader<'_>,
    field: &Field<'_>,
    name: &str,
) -> Result<()> {
    let digits = match name.strip_prefix("FF") {
        Some(digit) => {
            let digits = digit.parse::<u32>().expect("FF1 to FF6");
            fields.fraction_digits = Some(digits);
            digits
        }
        None => 6,
    };
    let width = usize::try_from(digits).expect("at most six");
    let length = field.integer(reader, width, Some(&mut fields.microsecond))?;
    let scale = [100_000, 10_000, 1_000, 100, 10];
    fields.microsecond *= scale.get(length.wrapping_sub(1)).copied().unwrap_or(1);
    Ok(())
}

/// TZH: a sign (or a minus the reader skipped as a separator) and two digits.
fn read_zone_hours(
    fields: &mut ReadFields,
    reader: &mut Reader<'_>,
    field: &Field<'_>,
) -> Result<()> {
    match reader.first() {
        Some(sign @ ('+' | '-' | ' ')) => {
            fields.zone_sign = if sign == '-' { -1 } else { 1 };
            reader.advance_character();
        }
        _ => {
            let skipped_minus = reader.input[..reader.position].ends_with('-');
            fields.zone_sign = if reader.extra_skip > 0 && skipped_minus { -1 } else { 1 };
        }
    }
    field.integer(reader, 2, Some(&mut fields.zone_hours))?;
    Ok(())
}

/// Y,YYY: thousands, a comma and three digits, as sscanf("%d,%03d") reads them.
fn read_year_with_comma(
    fields: &mut ReadFields,
    reader: &mut Reader<'_>,
    keyword: &str,
) -> Result<()> {
    let invalid = || SqlError::new("22007", format!("invalid input string for \"{keyword}\""));
    let rest = reader.rest();
    let (thousands, after_thousands) = c_strtol(rest, usize::MAX).ok_or_else(invalid)?;
    let after_comma = rest[after_thousands..].strip_prefix(',').ok_or_else(invalid)?;
    let spaces = after_comma.len() - after_comma.trim_start_matches(is_c_space).len();
    let (years, length) = c_strtol(&after_comma[spaces..], 3).ok_or_else(invalid)?;
    let year = thousands
        .checked_mul(1000)
        .and_then(|value| value.checked_add(years))
        .filter(|value| i32::try_from(*value).is_ok())
        .ok_or_else(invalid)?;
    set(&mut fields.year, year, keyword)?;
    fields.year_digits = 4;
    reader.position += rest.len() - after_comma.len() + spaces + length;
    Ok(())
}

/// adjust_partial_year_to_2020: '70' is 1970 and '69' is 2069.
fn year_toward_2020(year: i64) -> i64 {
    match year {
        ..=69 => year + 2000,
        70..=99 => year + 1900,
        100..=519 => year + 2000,
        520..=999 => year + 1000,
        _ => year,
    }
}

/// from_char_set_int: a field set twice must get one value.
fn set(field: &mut i64, value: i64, keyword: &str) -> Result<()> {
    if *field != 0 && *field != value {
        return Err(SqlError::new(
            "22007",
            format!("conflicting values for \"{keyword}\" field in formatting string"),
        ));
    }
    *field = value;
    Ok(())
}

/// C's strtol over at most `width` bytes of `text`: leading spaces, a sign and digits. The
/// value and the bytes read, or `None` when no digit is read.
fn c_strtol(text: &str, width: usize) -> Option<(i64, usize)> {
    let bytes = &text.as_bytes()[..text.len().min(width)];
    let mut index = bytes.iter().take_while(|byte| is_c_space(char::from(**byte))).count();
    let negative = bytes.get(index) == Some(&b'-');
    if matches!(bytes.get(index), Some(b'+' | b'-')) {
        index += 1;
    }
    let digits = bytes[index..].iter().take_while(|byte| byte.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    // Saturating: a value this long is out of every field's range and reported as such.
    let magnitude = bytes[index..index + digits].iter().fold(0i64, |value, digit| {
        value.saturating_mul(10).saturating_add(i64::from(digit - b'0'))
    });
    Some((if negative { -magnitude } else { magnitude }, index + digits))
}

/// One pattern node being read, for its numbers, name searches and errors.
struct Field<'a> {
    keyword: &'static str,
    nodes: &'a [Node],
    index: usize,
}

impl Field<'_> {
    /// from_char_parse_int_len: a number of exactly `width` characters, or up to the next
    /// non-digit in fill mode or before a separator; stored through `set` when `target`
    /// is given. The characters read, counting the spaces skipped before it.
    fn integer(
        &self,
        reader: &mut Reader<'_>,
        width: usize,
        target: Option<&mut i64>,
    ) -> Result<usize> {
        let start = reader.position;
        let spaces = reader.rest().len() - reader.rest().trim_start_matches(is_c_space).len();
        let after_spaces = &reader.input[start + spaces..];
        let copy = prefix_of_bytes(after_spaces, width);
        let Node::Pattern { fill_mode, .. } = self.nodes[self.index] else {
            unreachable!("a pattern node")
        };
        let invalid =
            || SqlError::new("22007", format!("invalid value \"{copy}\" for \"{}\"", self.keyword));
        let value = if fill_mode || next_is_separator(self.nodes, self.index) {
            let (value, length) = c_strtol(&reader.input[start..], usize::MAX).unwrap_or((0, 0));
            reader.position = start + length;
            value
        } else {
            // strlcpy's length: the rest of the input, not the bytes copied.
            if after_spaces.len() < width {
                return Err(SqlError::new(
                    "22007",
                    format!("source string too short for \"{}\" formatting field", self.keyword),
                ));
            }
            let (value, length) = c_strtol(copy, usize::MAX).unwrap_or((0, 0));
            if length > 0 && length < width {
                return Err(invalid());
            }
            reader.position = start + spaces + length;
            value
        };
        if reader.position == start {
            return Err(invalid());
        }
        if i32::try_from(value).is_err() {
            return Err(SqlError::new(
                "22008",
                format!("value for \"{}\" in source string is out of range", self.keyword),
            ));
        }
        if let Some(target) = target {
            set(target, value, self.keyword)?;
        }
        Ok(reader.position - start)
    }

    /// from_char_seq_search: the index of the first word the input starts with, ignoring
    /// ASCII case.
    fn search(&self, reader: &mut Reader<'_>, words: &[&str]) -> Result<i64> {
        let rest = reader.rest();
        for (index, word) in words.iter().enumerate() {
            let matches =
                rest.get(..word.len()).is_some_and(|start| start.eq_ignore_ascii_case(word));
            if matches {
                reader.position += word.len();
                return Ok(i64::try_from(index).expect("a short list"));
            }
        }
        let shown = rest.split([' ', '\t', '\n', '\r', '\u{c}']).next();
        Err(SqlError::new(
            "22007",
            format!("invalid value \"{}\" for \"{}\"", shown.unwrap_or(""), self.keyword),
        ))
    }
}

/// The longest prefix of `text` of at most `width` bytes that ends on a character boundary.
fn prefix_of_bytes(text: &str, width: usize) -> &str {
    let mut end = text.len().min(width);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl ReadFields {
    /// from_char_set_mode: the first dated pattern fixes the template's convention.
    fn set_mode(&mut self, mode: DateMode) -> Result<()> {
        if mode == DateMode::None {
            return Ok(());
        }
        if self.mode == DateMode::None {
            self.mode = mode;
        } else if self.mode != mode {
            return Err(SqlError::new("22007", "invalid combination of date conventions"));
        }
        Ok(())
    }

    /// TZH / TZM as seconds east of UTC, if the template read them.
    fn zone_offset_seconds(&self, input: &str) -> Result<Option<i64>> {
        if self.zone_sign == 0 {
            return Ok(None);
        }
        if !(0..=ZONE_HOURS_MAX).contains(&self.zone_hours) || !(0..60).contains(&self.zone_minutes)
        {
            return Err(SqlError::new(
                "22009",
                format!("time zone displacement out of range: \"{input}\""),
            ));
        }
        Ok(Some(self.zone_sign * (self.zone_hours * 3600 + self.zone_minutes * 60)))
    }

    /// do_to_timestamp: the date and time the fields make, range-checked.
    fn into_calendar(mut self, input: &str) -> Result<Calendar> {
        let field_overflow =
            || SqlError::new("22008", format!("date/time field value out of range: \"{input}\""));
        let mut calendar = self.time_of_day()?;
        let (mut year_known, mut month_known, mut day_known) = (false, false, false);
        if let Some(year) = self.calendar_year() {
            calendar.year = year;
            year_known = true;
        }
        if self.julian_day != 0 {
            (calendar.year, calendar.month, calendar.day) = julian_to_date_wrapping(
                i32::try_from(self.julian_day).expect("J is read as an int"),
            );
            (year_known, month_known, day_known) = (true, true, true);
        }
        if self.week != 0 {
            if self.mode == DateMode::IsoWeek {
                let first_day = iso_week_to_julian(calendar.year, self.week);
                // Without a day, the ISO week's Monday; Sunday (1), and any day below it that
                // ID read as a negative number, is its seventh day (isoweekdate2date).
                let offset = match self.day_of_week {
                    0 => 0,
                    day if day > 1 => day - 2,
                    _ => 6,
                };
                (calendar.year, calendar.month, calendar.day) = julian_to_date(first_day + offset)?;
                (year_known, month_known, day_known) = (true, true, true);
            } else {
                self.day_of_year = (self.week - 1) * 7 + 1;
            }
        }
        if self.week_of_month != 0 {
            self.day = (self.week_of_month - 1) * 7 + 1;
        }
        if self.day != 0 {
            calendar.day = self.day;
            day_known = true;
        }
        if self.month != 0 {
            calendar.month = self.month;
            month_known = true;
        }
        if self.day_of_year != 0 && (calendar.month <= 1 || calendar.day <= 1) {
            if calendar.year == 0 && self.before_christ == 0 {
                return Err(SqlError::new(
                    "22007",
                    "cannot calculate day of year without year information",
                ));
            }
            if self.mode == DateMode::IsoWeek {
                let day_zero = iso_week_to_julian(calendar.year, 1) - 1;
                (calendar.year, calendar.month, calendar.day) =
                    julian_to_date(day_zero + self.day_of_year)?;
                (year_known, month_known, day_known) = (true, true, true);
            } else {
                self.place_day_of_year(&mut calendar);
                (month_known, day_known) = (true, true);
            }
        }
        calendar.fraction_micros = self.millisecond * 1000 + self.microsecond;
        let month_valid = !month_known || (1..=12).contains(&calendar.month);
        let day_valid = !day_known || (1..=31).contains(&calendar.day);
        let complete = year_known && month_known && day_known;
        if !month_valid
            || !day_valid
            || (complete && calendar.day > days_in_month(calendar.year, calendar.month))
        {
            return Err(field_overflow());
        }
        let time_valid = (0..24).contains(&calendar.hour)
            && (0..60).contains(&calendar.minute)
            && (0..60).contains(&calendar.second)
            && (0..1_000_000).contains(&calendar.fraction_micros);
        if !time_valid {
            return Err(field_overflow());
        }
        Ok(calendar)
    }

    /// The time of day on 1 BC-01-01 (the date fields come after).
    fn time_of_day(&self) -> Result<Calendar> {
        let mut calendar = Calendar {
            year: 0,
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            fraction_micros: 0,
        };
        if self.seconds_of_day != 0 {
            calendar.hour = self.seconds_of_day / 3600;
            calendar.minute = self.seconds_of_day % 3600 / 60;
            calendar.second = self.seconds_of_day % 60;
        }
        if self.second != 0 {
            calendar.second = self.second;
        }
        if self.minute != 0 {
            calendar.minute = self.minute;
        }
        if self.hour != 0 {
            calendar.hour = self.hour;
        }
        if self.twelve_hour_clock {
            if !(1..=12).contains(&calendar.hour) {
                return Err(SqlError::new(
                    "22007",
                    format!("hour \"{}\" is invalid for the 12-hour clock", calendar.hour),
                ));
            }
            if self.afternoon != 0 && calendar.hour < 12 {
                calendar.hour += 12;
            } else if self.afternoon == 0 && calendar.hour == 12 {
                calendar.hour = 0;
            }
        }
        Ok(calendar)
    }

    /// The year in PostgreSQL's numbering (1 BC is 0) from YYYY / YY, CC and BC, if any.
    fn calendar_year(&self) -> Option<i64> {
        let century = if self.before_christ != 0 { -self.century } else { self.century };
        if self.year != 0 {
            if self.century != 0 && self.year_digits <= 2 {
                // YY within the century CC: the 21st century runs from 2001 to 2100.
                let low = self.year % 100;
                return Some(match (low, century >= 0) {
                    (0, true) => century * 100,
                    (0, false) => century * 100 + 1,
                    (_, true) => low + (century - 1) * 100,
                    (_, false) => (century + 1) * 100 - low + 1,
                });
            }
            let year = if self.before_christ != 0 { -self.year } else { self.year };
            return Some(if year < 0 { year + 1 } else { year });
        }
        if self.century != 0 {
            // The century's first year; 600 BC (-599) starts the 6th century BC.
            return Some(if century >= 0 { (century - 1) * 100 + 1 } else { century * 100 + 1 });
        }
        None
    }

    /// DDD: the month and day of a day of the Gregorian year, where they were not read.
    fn place_day_of_year(&self, calendar: &mut Calendar) {
        let leap = usize::from(is_leap_year(calendar.year));
        const DAYS_BEFORE_MONTH: [[i64; 13]; 2] = [
            [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365],
            [0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366],
        ];
        let sums = &DAYS_BEFORE_MONTH[leap];
        let month = (1..=12).find(|month| self.day_of_year <= sums[*month]).unwrap_or(13);
        if calendar.month <= 1 {
            calendar.month = i64::try_from(month).expect("at most 13");
        }
        if calendar.day <= 1 {
            calendar.day = self.day_of_year - sums[month - 1];
        }
    }
}

/// isleap, over PostgreSQL's year numbering (1 BC is 0, a leap year).
fn is_leap_year(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

pub(crate) fn days_in_month(year: i64, month: i64) -> i64 {
    const DAYS: [i64; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let index = usize::try_from(month - 1).expect("a month checked to be 1 to 12");
    DAYS[index] + i64::from(month == 2 && is_leap_year(year))
}

/// IS_VALID_JULIAN: whether the Julian-day routines handle the year and month.
pub(crate) fn valid_julian(year: i64, month: i64) -> bool {
    (year > JULIAN_YEAR_MIN || (year == JULIAN_YEAR_MIN && month >= JULIAN_MONTH_MIN))
        && (year < JULIAN_YEAR_MAX || (year == JULIAN_YEAR_MAX && month < JULIAN_MONTH_MAX))
}

/// date2j: the Julian day of a date; days past a month's end run into the next month.
pub(crate) fn date_to_julian(year: i64, month: i64, day: i64) -> i64 {
    let (year, month) =
        if month > 2 { (year + 4800, month + 1) } else { (year + 4799, month + 13) };
    let century = year / 100;
    let mut julian = year * 365 - 32167;
    julian += year / 4 - century + century / 4;
    julian + 7834 * month / 256 + day
}

/// j2date: the date of a Julian day (a day before the routines' range is out of range).
pub(crate) fn julian_to_date(julian_day: i64) -> Result<(i64, i64, i64)> {
    let mut julian = julian_day + 32044;
    if !(0..=i64::from(u32::MAX)).contains(&julian) {
        return Err(SqlError::new("22008", "date out of range"));
    }
    let mut quad = julian / 146_097;
    let extra = (julian - quad * 146_097) * 4 + 3;
    julian += 60 + quad * 3 + extra / 146_097;
    quad = julian / 1461;
    julian -= quad * 1461;
    let mut year = julian * 4 / 1461;
    julian = if year != 0 { (julian + 305) % 365 } else { (julian + 306) % 366 } + 123;
    year += quad * 4;
    let quad = julian * 2141 / 65536;
    Ok((year - 4800, (quad + 10) % 12 + 1, julian - 7834 * quad / 256))
}

/// j2date over the int a template's J reads, in C's unsigned arithmetic as PostgreSQL
/// computes it: a day before the routines' range wraps to some date (which the callers'
/// range checks then take or reject, as PostgreSQL's do) instead of failing here.
fn julian_to_date_wrapping(julian_day: i32) -> (i64, i64, i64) {
    let mut julian = u32::from_ne_bytes(julian_day.to_ne_bytes()).wrapping_add(32_044);
    let mut quad = julian / 146_097;
    let extra = (julian - quad * 146_097) * 4 + 3;
    julian = julian.wrapping_add(60 + quad * 3 + extra / 146_097);
    quad = julian / 1461;
    julian -= quad * 1461;
    let year = julian * 4 / 1461;
    julian = if year != 0 { (julian + 305) % 365 } else { (julian + 306) % 366 } + 123;
    let year = year.wrapping_add(quad.wrapping_mul(4));
    let year = i32::from_ne_bytes(year.to_ne_bytes()).wrapping_sub(4800);
    let quad = julian * 2141 / 65_536;
    let day = julian - 7834 * quad / 256;
    (i64::from(year), i64::from((quad + 10) % 12 + 1), i64::from(day))
}

/// isoweek2j: the Julian day of the Monday of ISO week `week` of ISO year `year`.
fn iso_week_to_julian(year: i64, week: i64) -> i64 {
    let fourth_of_january = date_to_julian(year, 1, 4);
    // j2day: 0 is Sunday; the days since the Monday on or before January 4th.
    let since_monday = fourth_of_january.rem_euclid(7);
    (week - 1) * 7 + (fourth_of_january - since_monday)
}
